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
again. A hot-key throttle (the exception's ``ThrottlingReasons`` all say
``KeyRangeThroughputExceeded``) leaves the rate and its growth alone: only that batch waits, a
jittered backoff, and is sent again before the items after it. An item that is still unwritten
after ``max_attempts`` sends, whatever the cause, or that DynamoDB rejects as invalid, is
returned in ``failed``, never dropped. After `MAX_SILENT_CALLS` failed calls in a row the
write stops: the items taken and not sent are returned in ``failed``, the rest are not read
(``result.stopped``, ``result.taken``). ``rng`` (a ``random.Random``) is the jitter's source,
for tests; ``result.throttled_by_cause`` counts throttles by cause.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from boto3.dynamodb.types import TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

from ..aws import items as table_items
from ..aws.error_codes import describe_error, error_code, http_status
from ..core.call_limits import most_written_units
from ..core.errors import WriteError as WriteError
from ..core.errors import shown
from ..core.validators import is_number, is_whole
from ..events import log_event
from .arguments import check_client, check_table
from .pacing import (
    CAUSES,
    HOT_KEY,
    ITEM_KB,
    PacingError,
    ThrottleCause,
    TokenBucket,
    item_bytes,
    jittered,
    reported_units,
    strongest,
    throttle_cause,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


BATCH = 25
_END = object()
"""The end of the items (an item may be None: it is returned in ``failed``)."""
Entry = tuple[Mapping[str, Any], dict[str, Any], int]
"""An item to write: as given, serialized, and how often it was sent already."""


@dataclass(frozen=True)
class Failed:
    """An item that was not written, as it was given (a mapping, or what was given in its
    place), and why."""

    item: Any
    reason: str


@dataclass
class WriteResult:
    written: int = 0
    consumed: float = 0.0
    """the units DynamoDB reported consumed, where believed (a batch's report below a unit an
    item written, or above their most, is not: that batch is paced on its estimate, and
    counts nothing here)"""
    throttled: int = 0
    """throttled sends, of every cause"""
    batches: int = 0
    failed: list[Failed] = field(default_factory=list)
    rates: list[float] = field(default_factory=list)  # the rate after each change
    throttled_by_cause: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CAUSES, 0))
    """``throttled`` by cause (see ``pacing.CAUSES``): every cause, 0 if none"""
    taken: int = 0
    """the items taken from those given, written or not (each one not written is in
    ``failed``)"""
    stopped: str | None = None
    """why the write stopped before the end of the items (`MAX_SILENT_CALLS` calls in a row
    failed), None when it took them all: the items after the ``taken`` first were not read,
    an iterator given is left where it stopped"""


ITEM_ERRORS = frozenset({"ValidationException", "ItemCollectionSizeLimitExceededException"})
"""Error codes that refuse an item of a batch, not the call: the batch is sent again an
item at a time, so the others are still written, and none of them stops a ``write``
(an item collection of a local secondary index that is full refuses only its own items)."""


MAX_SILENT_CALLS = 3
"""Calls in a row that failed (no answer, or an error answer other than a throttle or an
item's own invalidity, after the SDK's retries) that stop a ``write``: the items taken and
not yet sent are returned in ``failed``, the others are not read (``WriteResult.stopped``),
none sent into an endpoint that is down or refuses them."""


def _units(entry: Entry) -> float:
    """The write units ``entry``'s item is estimated to cost, from its serialized size: 1
    a kilobyte started, as DynamoDB counts them (overestimated, never under)."""
    return float(max(1, math.ceil(item_bytes(entry[1]) / ITEM_KB)))


def _unprocessed(response: object, table: str) -> list[dict[str, Any]] | None:
    """The serialized items BatchWriteItem's answer returns unprocessed; None when the
    answer is not one (whether the batch's items were written is then not known)."""
    answer = response.get("UnprocessedItems", {}) if isinstance(response, Mapping) else None
    listed = answer.get(table, []) if isinstance(answer, Mapping) else None
    if not isinstance(listed, list):
        return None
    puts = [r.get("PutRequest") if isinstance(r, Mapping) else None for r in listed]
    items = [p.get("Item") if isinstance(p, Mapping) else None for p in puts]
    return (
        None if any(not isinstance(i, dict) for i in items) else cast(list[dict[str, Any]], items)
    )


def _check_items(items: object) -> None:
    """Refuse ``items`` that are not a collection of items: one item (a mapping, whose keys
    would be read as items), a string (its characters), or nothing to iterate."""
    if isinstance(items, Mapping | str | bytes) or not isinstance(items, Iterable):
        kind = "one item" if isinstance(items, Mapping) else f"a {type(items).__name__}"
        raise WriteError(
            f"items: got {shown(items)}; expected an iterable of items (mappings: a list, a "
            f"generator), not {kind}"
        )


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
        rng: random.Random | None = None,
    ) -> None:
        for name, value in (
            ("start_rate", start_rate),
            ("max_rate", max_rate),
            ("step_seconds", step_seconds),
        ):
            if not (is_number(value, 0) and value > 0):
                raise PacingError(f"{name}: got {value!r}; expected a number > 0")
        if max_rate < start_rate:
            raise PacingError(
                f"max_rate: got {max_rate!r}; expected at least start_rate ({start_rate!r})"
            )
        if not is_number(step_factor, 1):
            raise PacingError(f"step_factor: got {step_factor!r}; expected a number >= 1")
        if not is_whole(max_attempts, 1):
            raise PacingError(f"max_attempts: got {max_attempts!r}; expected a whole number >= 1")
        check_client(WriteError, dynamodb, ("batch_write_item",))
        check_table(WriteError, "table", table)
        self.dynamodb = dynamodb
        self.table = table
        self.start_rate, self.max_rate = float(start_rate), float(max_rate)
        self.step_seconds, self.step_factor = float(step_seconds), float(step_factor)
        self.max_attempts = max_attempts
        self.clock, self.sleep = clock, sleep
        if rng is not None and not isinstance(rng, random.Random):
            raise PacingError(f"rng: got {rng!r}; expected a random.Random, or None for its own")
        self.rng = rng or random.Random()  # noqa: S311 (jitter, not secrets)
        self.bucket = TokenBucket(self.start_rate, clock=clock, sleep=sleep)
        self._serializer = TypeSerializer()
        self._stepped = clock()
        self._last_sent: float | None = None
        """when the last batch was sent (None: never)"""
        self._no_answer: str | None = None
        """why the last call failed: no answer, or an error answer other than a throttle or
        an item's own invalidity (None: it did not)"""

    def _grow(self, now: float, result: WriteResult) -> None:
        if self._last_sent is not None and now - self._last_sent >= self.step_seconds:
            # idle for a step (the source paused): the table's auto scaling may have scaled
            # in meanwhile, so it starts slow again, and the pause is no step of growth
            if self.bucket.rate != self.start_rate:
                self.bucket.set_rate(self.start_rate)
                result.rates.append(self.start_rate)
            self._stepped = now
            return
        if now - self._stepped >= self.step_seconds and self.bucket.rate < self.max_rate:
            self.bucket.set_rate(min(self.max_rate, self.bucket.rate * self.step_factor))
            self._stepped = now
            result.rates.append(self.bucket.rate)

    def _back_off(self, result: WriteResult, cause: ThrottleCause) -> None:
        result.throttled += 1
        result.throttled_by_cause[cause] += 1
        if cause == HOT_KEY:
            return  # one partition's limit: a slower job would not cool it
        slower = max(self.start_rate, self.bucket.rate / 2)
        if slower != self.bucket.rate:
            self.bucket.set_rate(slower)
            result.rates.append(slower)
        self._stepped = self.clock()  # growth waits a full step

    def _retry(
        self, retry: Sequence[Entry], cause: ThrottleCause, result: WriteResult
    ) -> list[Entry]:
        """After a throttle: back off, return in ``failed`` the entries out of attempts, wait,
        and return the others to send again."""
        self._back_off(result, cause)
        again = []
        for original, serialized, attempts in retry:
            if attempts + 1 >= self.max_attempts:
                result.failed.append(
                    Failed(original, f"still unprocessed after {attempts + 1} attempts")
                )
            else:
                again.append((original, serialized, attempts + 1))
        delay = min(10.0, 0.05 * 2 ** min(again[0][2], 8)) if again else 0.0
        if cause == HOT_KEY:
            delay = jittered(delay, self.rng)
        log_event(
            "write-throttled",
            cause=cause,
            items=len(again),
            failed=len(retry) - len(again),
            rate=self.bucket.rate,
            retry_in_seconds=delay if again else None,
        )
        if again:
            self.sleep(delay)
        return again

    def _serialize(self, item: Mapping[str, Any]) -> dict[str, Any]:
        return {k: self._serializer.serialize(v) for k, v in item.items()}

    def write(self, items: Iterable[Mapping[str, Any]]) -> WriteResult:
        """Write ``items``; each one not written is returned in ``failed`` with the reason.
        A writer idle for a step (`step_seconds`) or more, between two writes or within one
        (a source that paused), starts again at ``start_rate``: the table's auto scaling may
        have scaled in meanwhile. ``items`` one mapping, or a string, is refused
        ([`WriteError`][ddb_capacity_runtime.core.errors.WriteError]): a list of one item
        is ``[item]``."""
        _check_items(items)
        now = self.clock()
        if self._last_sent is not None and now - self._last_sent >= self.step_seconds:
            self.bucket.set_rate(self.start_rate)
        result = WriteResult(rates=[self.bucket.rate])
        self._stepped = now
        pending: list[Entry] = []
        source = iter(items)
        exhausted, silent = False, 0
        while pending or not exhausted:
            while len(pending) < BATCH and not exhausted:
                item = next(source, _END)
                if item is _END:
                    exhausted = True
                    break
                result.taken += 1
                if not isinstance(item, Mapping):
                    kind = type(item).__name__
                    result.failed.append(Failed(item, f"not an item: a {kind}, not a mapping"))
                    continue
                try:
                    pending.append((item, self._serialize(item), 0))
                except (TypeError, ValueError) as exc:
                    result.failed.append(Failed(item, f"not serializable: {exc}"))
                except ArithmeticError:  # decimal.Rounded, Inexact
                    reason = "not serializable: a number of more than 38 digits"
                    result.failed.append(Failed(item, reason))
            if not pending:
                break
            batch, pending = pending[:BATCH], pending[BATCH:]
            self._grow(self.clock(), result)
            sizes = [_units(e) for e in batch]
            self.bucket.acquire(sum(sizes))
            retry, reported, cause = self._send(batch, result)
            self._last_sent = self.clock()
            # unknown: each item not sent again charged as estimated (it may be written)
            known = sum(u for e, u in zip(batch, sizes, strict=True) if e not in retry)
            self.bucket.settle((known if reported is None else reported) - sum(sizes))
            silent = silent + 1 if self._no_answer else 0
            if silent >= MAX_SILENT_CALLS:
                return self._stopped(result, pending, silent)
            if retry:
                pending = self._retry(retry, cause or "unknown", result) + pending
        return result

    def _stopped(self, result: WriteResult, pending: list[Entry], silent: int) -> WriteResult:
        """``result``, the items taken but not sent (``pending``) returned in ``failed``:
        `MAX_SILENT_CALLS` calls in a row failed. The items not taken yet are not read."""
        result.stopped = f"{silent} calls in a row failed ({self._no_answer})"
        reason = f"not sent: {result.stopped}"
        result.failed.extend(Failed(o, reason) for o, _, _ in pending)
        log_event(
            "write-stopped",
            level=logging.ERROR,
            reason=result.stopped,
            failed=len(result.failed),
            taken=result.taken,
        )
        return result

    def _send(
        self, batch: Sequence[Entry], result: WriteResult
    ) -> tuple[list[Entry], float | None, ThrottleCause | None]:
        """One BatchWriteItem; returns the entries to send again, the units consumed (None:
        the answer does not say), and why DynamoDB throttled them (None: it did not).
        UnprocessedItems carry no reasons: their cause is ``"unknown"``."""
        result.batches += 1
        self._no_answer = None
        try:
            response = table_items.write_batch(self.dynamodb, self.table, [s for _, s, _ in batch])
        except ClientError as exc:
            return self._refused(batch, result, exc)
        except BotoCoreError as exc:  # no answer (after the SDK's retries): none is dropped
            self._no_answer = describe_error(exc)
            result.failed.extend(Failed(o, self._no_answer) for o, _, _ in batch)
            return [], None, None
        keys = _unprocessed(response, self.table)
        sent = [s for _, s, _ in batch]
        if keys is None or any(k not in sent for k in keys):
            # not a list of the puts sent: none dropped, none sent twice, the caller decides
            reason = "the answer's UnprocessedItems is not a list of the puts sent: written or not"
            result.failed.extend(Failed(o, reason) for o, _, _ in batch)
            return [], None, None
        retry = [e for e in batch if e[1] in keys]
        written = len(batch) - len(retry)
        # an item written costs a unit at least, and `most_written_units` at most; an
        # answer outside that is unknown
        most = most_written_units(written)
        units = reported_units(response.get("ConsumedCapacity"), written, most)
        result.written += written
        result.consumed += units or 0.0
        return retry, units, "unknown" if retry else None

    def _refused(
        self, batch: Sequence[Entry], result: WriteResult, exc: ClientError
    ) -> tuple[list[Entry], float | None, ThrottleCause | None]:
        """`_send`'s answer to an error answer: a throttle sends the batch again; an item's
        own fault (`ITEM_ERRORS`) sends each item alone; anything else fails the batch and
        counts toward the write's stop, its estimate given back only for a refusal (a 4xx:
        nothing written), else charged (a server error: written or not)."""
        cause = throttle_cause(exc)
        if cause is not None:
            return list(batch), 0.0, cause
        if error_code(exc) in ITEM_ERRORS:
            if len(batch) > 1:
                return self._send_each(batch, result)
            result.failed.extend(Failed(o, describe_error(exc)) for o, _, _ in batch)
            return [], 0.0, None  # the item's own fault: nothing written
        self._no_answer = describe_error(exc)
        if error_code(exc) == "ResourceNotFoundException":
            region = getattr(getattr(self.dynamodb, "meta", None), "region_name", None)
            where = f" ({region})" if isinstance(region, str) and region else ""
            self._no_answer = (
                f"table {self.table!r}: no such table in this account and Region{where}: "
                f"{self._no_answer}"
            )
        result.failed.extend(Failed(o, self._no_answer) for o, _, _ in batch)
        status = http_status(exc)
        refused = status is not None and 400 <= status < 500
        return [], 0.0 if refused else None, None

    def _send_each(
        self, batch: Sequence[Entry], result: WriteResult
    ) -> tuple[list[Entry], float | None, ThrottleCause | None]:
        """One bad item fails the whole batch: send each alone to find it. Of the throttles
        among them, the strongest cause stands for all; the units are unknown (None) if one
        answer did not say."""
        retry: list[Entry] = []
        units: float | None = 0.0
        causes: list[ThrottleCause] = []
        for entry in batch:
            r, u, c = self._send([entry], result)
            retry.extend(r)
            units = None if units is None or u is None else units + u
            causes.extend([c] if c is not None else [])
        return retry, units, strongest(causes) if causes else None
