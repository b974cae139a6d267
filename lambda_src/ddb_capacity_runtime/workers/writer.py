"""Runs in: workers (the user's own jobs).

A batch writer that starts slow and speeds up in steps, paced by consumed write capacity,
backing off when throttled, and never losing an item.

    writer = SlowStartWriter(dynamodb, "Orders", start_rate=100, max_rate=5_000,
                             step_seconds=120, step_factor=2)
    result = writer.write(items)          # plain Python dicts
    retry_later(result.failed)            # items that could not be written, with the reason

The rate starts at ``start_rate`` units per second and is multiplied by ``step_factor`` every
``step_seconds`` up to ``max_rate`` (design 5 of "Handle traffic spikes with Amazon DynamoDB
provisioned capacity": auto scaling gets time to follow).
When DynamoDB throttles (UnprocessedItems, ProvisionedThroughputExceededException) the rate is
halved (not below ``start_rate``) and growth waits a full step; unprocessed items are sent
again. An item that is still unwritten after ``max_attempts`` sends, or that DynamoDB rejects
as invalid, is returned in ``failed``, never dropped.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import TypeSerializer
from botocore.exceptions import ClientError

from ..aws import items as table_items
from .pacing import PacingError, TokenBucket
from .scan import THROTTLED

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


BATCH = 25


@dataclass(frozen=True)
class Failed:
    item: Mapping[str, Any]
    reason: str


@dataclass
class WriteResult:
    written: int = 0
    consumed: float = 0.0
    throttled: int = 0
    batches: int = 0
    failed: list[Failed] = field(default_factory=list)
    rates: list[float] = field(default_factory=list)  # the rate after each change


class SlowStartWriter:
    def __init__(
        self,
        dynamodb: DynamoDBClient,
        table: str,
        *,
        start_rate: float,
        max_rate: float,
        step_seconds: float = 120.0,
        step_factor: float = 2.0,
        max_attempts: int = 8,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        for name, value in (
            ("start_rate", start_rate),
            ("max_rate", max_rate),
            ("step_seconds", step_seconds),
        ):
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not (math.isfinite(value) and value > 0)
            ):
                raise PacingError(f"{name}: got {value!r}; expected a number > 0")
        if max_rate < start_rate:
            raise PacingError(
                f"max_rate: got {max_rate!r}; expected at least start_rate ({start_rate!r})"
            )
        if (
            isinstance(step_factor, bool)
            or not isinstance(step_factor, int | float)
            or not (math.isfinite(step_factor) and step_factor >= 1)
        ):
            raise PacingError(f"step_factor: got {step_factor!r}; expected a number >= 1")
        if (
            isinstance(max_attempts, bool)
            or not isinstance(max_attempts, int)
            or (max_attempts < 1)
        ):
            raise PacingError(f"max_attempts: got {max_attempts!r}; expected a whole number >= 1")
        self.dynamodb = dynamodb
        self.table = table
        self.start_rate, self.max_rate = float(start_rate), float(max_rate)
        self.step_seconds, self.step_factor = float(step_seconds), float(step_factor)
        self.max_attempts = max_attempts
        self.clock, self.sleep = clock, sleep
        self.bucket = TokenBucket(self.start_rate, clock=clock, sleep=sleep)
        self._serializer = TypeSerializer()
        self._stepped = clock()

    def _grow(self, now: float, result: WriteResult) -> None:
        if now - self._stepped >= self.step_seconds and self.bucket.rate < self.max_rate:
            self.bucket.set_rate(min(self.max_rate, self.bucket.rate * self.step_factor))
            self._stepped = now
            result.rates.append(self.bucket.rate)

    def _back_off(self, result: WriteResult) -> None:
        result.throttled += 1
        slower = max(self.start_rate, self.bucket.rate / 2)
        if slower != self.bucket.rate:
            self.bucket.set_rate(slower)
            result.rates.append(slower)
        self._stepped = self.clock()  # growth waits a full step

    def _serialize(self, item: Mapping[str, Any]) -> dict[str, Any]:
        return {k: self._serializer.serialize(v) for k, v in item.items()}

    def write(self, items: Iterable[Mapping[str, Any]]) -> WriteResult:
        result = WriteResult(rates=[self.bucket.rate])
        self._stepped = self.clock()
        per_item = 1.0  # units per item, learned from ConsumedCapacity
        pending: list[tuple[Mapping[str, Any], dict[str, Any], int]] = []
        source = iter(items)
        exhausted = False
        while pending or not exhausted:
            while len(pending) < BATCH and not exhausted:
                item = next(source, None)
                if item is None:
                    exhausted = True
                    break
                try:
                    pending.append((item, self._serialize(item), 0))
                except (TypeError, ValueError) as exc:
                    result.failed.append(Failed(item, f"not serializable: {exc}"))
            if not pending:
                break
            batch, pending = pending[:BATCH], pending[BATCH:]
            self._grow(self.clock(), result)
            estimate = per_item * len(batch)
            self.bucket.acquire(estimate)
            retry, units = self._send(batch, result)
            self.bucket.settle(units - estimate)
            written = len(batch) - len(retry)
            if written > 0 and units > 0:
                per_item = units / written
            if retry:
                self._back_off(result)
                again = []
                for original, serialized, attempts in retry:
                    if attempts + 1 >= self.max_attempts:
                        result.failed.append(
                            Failed(original, f"still unprocessed after {attempts + 1} attempts")
                        )
                    else:
                        again.append((original, serialized, attempts + 1))
                if again:
                    self.sleep(min(10.0, 0.05 * 2 ** min(again[0][2], 8)))
                pending = again + pending
        return result

    def _send(
        self, batch: Sequence[tuple[Mapping[str, Any], dict[str, Any], int]], result: WriteResult
    ) -> tuple[list[tuple[Mapping[str, Any], dict[str, Any], int]], float]:
        """One BatchWriteItem; returns the entries to send again and the units consumed."""
        result.batches += 1
        try:
            response = table_items.write_batch(self.dynamodb, self.table, [s for _, s, _ in batch])
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in THROTTLED:
                return list(batch), 0.0
            if code == "ValidationException" and len(batch) > 1:
                # One bad item fails the whole batch: send each alone to find it.
                retry: list[tuple[Mapping[str, Any], dict[str, Any], int]] = []
                units = 0.0
                for entry in batch:
                    r, u = self._send([entry], result)
                    retry.extend(r)
                    units += u
                return retry, units
            message = exc.response.get("Error", {}).get("Message", "")
            result.failed.extend(Failed(o, f"{code}: {message}") for o, _, _ in batch)
            return [], 0.0
        units = sum(
            float(c.get("CapacityUnits", 0.0)) for c in response.get("ConsumedCapacity", [])
        )
        unprocessed = response.get("UnprocessedItems", {}).get(self.table, [])
        keys = [r["PutRequest"]["Item"] for r in unprocessed]
        retry = [e for e in batch if e[1] in keys]
        result.written += len(batch) - len(retry)
        result.consumed += units
        return retry, units
