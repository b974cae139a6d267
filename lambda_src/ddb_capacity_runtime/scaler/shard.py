"""Runs in: scaler Lambda (the scheduled function and the batch function), workstation
(tests, benchmarks).

A sharded tick, for more tables than one invocation can tick within the interval. The
scheduled invocation (`coordinate`) finds the managed tables; above
``shard_above_tables`` it cuts them into batches of ``tables_per_batch`` (in name order)
and sends each to the batch queue as one SQS message (`Batch`: the table names
alone; a batch reads their tags itself, as it reads everything else); at or below, it
ticks them itself, as an unsharded scaler does. The batch function takes one message at a
time (SQS to Lambda, at most the event source's maximum concurrency at once) and runs the
same tick (`tick.tick` with ``batch``) on the batch's tables alone: its own
GetMetricData calls, its own reads of their scalable targets and state-store items, its own
failures. A batch is its own fault domain, as each table is within it.

A message is untrusted input: `parse_batch` checks every field (a tick in the
future, or a deadline further than one tick after it, included), and a message it refuses
is a failure of the batch function, never a tick of anything. A batch keeps to its tick:
no table of it is acted on after its ``deadline`` (the next scheduled tick, less
`core.deadline.MARGIN`), so two ticks never act on one table at once; tables left when the
deadline passes are failures, decided again by the next tick.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from ..aws.error_codes import describe_error
from ..aws.queue import why_unsent
from ..core.deadline import MARGIN as MARGIN
from ..core.errors import BatchError as BatchError
from ..core.errors import shown
from ..core.names import BATCH_QUEUE_ENV as BATCH_QUEUE_ENV
from ..core.names import MAX_TABLE_QUOTA, is_table_name
from ..core.reservation import MAX_RESERVED_UNITS
from ..core.settings import MAX_TABLES_PER_BATCH
from ..core.untrusted import UntrustedJSONError, parse_json

VERSION = 1
"""The message format's version."""
SEND_BATCH = 10
"""SendMessageBatch takes at most 10 messages a call, and 256 KiB in all."""
SEND_BYTES = 256 * 1024
MAX_TABLES = MAX_TABLES_PER_BATCH
"""The most tables a message may name: the most ``tables_per_batch``."""
SKEW = timedelta(minutes=1)
"""A tick time later than the receiving clock by more than this is refused."""


@dataclass(frozen=True)
class Batch:
    """One batch of a sharded tick: its tables' names, the tick's time, the deadline after
    which none of them is acted on, and its place (``number`` of ``of``, from 1)."""

    tick: datetime
    deadline: datetime
    number: int
    of: int
    tables: tuple[str, ...]
    quotas: tuple[int, int] | None = None
    """The per-table read and write quotas the tick read once (DescribeLimits, which
    DynamoDB throttles past one call a minute), for every batch; None: the batch reads them
    itself (a message of an earlier version; one with a single ``table_quota`` gives it to
    both)."""
    reserved: tuple[int, int] | None = None
    """The batch's share of the reserved read and write units (`reserved_shares`); None:
    the whole reservation."""

    @property
    def label(self) -> str:
        return f"batch {self.number} of {self.of} of the tick of {self.tick:%Y-%m-%dT%H:%MZ}"

    def to_message(self) -> str:
        return json.dumps(
            {
                "version": VERSION,
                "tick": self.tick.isoformat(),
                "deadline": self.deadline.isoformat(),
                "number": self.number,
                "of": self.of,
                "tables": list(self.tables),
                **({} if self.quotas is None else {"quotas": self.quotas}),
                **({} if self.reserved is None else {"reserved": self.reserved}),
            },
            separators=(",", ":"),
        )


def shard(
    names: Iterable[str],
    per_batch: int,
    tick: datetime,
    deadline: datetime,
    quotas: tuple[int, int] | None = None,
) -> list[Batch]:
    """The tables ``names`` in batches of ``per_batch``, in name order (a table keeps its
    batch from tick to tick while the set of tables stays the same), each carrying
    ``quotas``."""
    ordered = sorted(names)
    chunks = [tuple(ordered[i : i + per_batch]) for i in range(0, len(ordered), per_batch)]
    return [Batch(tick, deadline, n, len(chunks), c, quotas) for n, c in enumerate(chunks, start=1)]


def reserved_shares(reserved: int, covered: Sequence[int]) -> list[int]:
    """``reserved`` units cut into shares in proportion to ``covered`` (each batch's units
    reserved capacity covers), adding up to ``reserved`` exactly (the largest remainders
    get the units rounding left over); with nothing covered, each batch the whole."""
    total = sum(covered)
    if not total:
        return [reserved] * len(covered)
    shares = [reserved * c // total for c in covered]
    by_remainder = sorted(range(len(covered)), key=lambda i: -(reserved * covered[i] % total))
    for i in by_remainder[: reserved - sum(shares)]:
        shares[i] += 1
    return shares


def send(
    sqs: Any,
    queue_url: str,
    batches: Sequence[Batch],
) -> list[str]:
    """Send each batch as one message (SendMessageBatch, 10 and 256 KiB a call at most).
    Returns one line per batch not sent; the others are sent."""
    failed: list[str] = []
    for pairs in _groups(batches):
        group = [b for b, _ in pairs]
        entries = [{"Id": str(b.number), "MessageBody": body} for b, body in pairs]
        try:
            answer = sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)
        except Exception as exc:
            failed += [f"{b.label}: not sent: {describe_error(exc)}" for b in group]
            continue
        for ident, why in why_unsent(answer, [e["Id"] for e in entries]).items():
            why = why or "the answer does not list it as sent"
            failed.append(f"batch {ident} of {len(batches)}: not sent: {why}")
    return failed


def _groups(batches: Sequence[Batch]) -> list[list[tuple[Batch, str]]]:
    """``batches`` in order, each with its message, in groups SendMessageBatch takes: 10
    messages and 256 KiB."""
    groups: list[list[tuple[Batch, str]]] = []
    size = 0
    for b in batches:
        body = b.to_message()
        length = len(body.encode())
        if not groups or len(groups[-1]) == SEND_BATCH or size + length > SEND_BYTES:
            groups.append([])
            size = 0
        groups[-1].append((b, body))
        size += length
    return groups


def parse_batch(body: object, received: datetime, tick_minutes: int) -> Batch:
    """The batch a message body says, every field checked against a receiving clock of
    ``received`` and a tick of ``tick_minutes``; raises `BatchError` naming the
    field, the value and what is allowed."""
    try:
        raw = parse_json(body, "batch message", max_chars=SEND_BYTES)
    except UntrustedJSONError as exc:
        raise BatchError(str(exc)) from None
    try:
        return _parse(raw, received, timedelta(minutes=tick_minutes))
    except OverflowError as exc:  # a year out of range
        raise BatchError(f"batch message: not a batch (OverflowError: {exc})"[:300]) from None


def _parse(raw: object, received: datetime, span: timedelta) -> Batch:
    if not isinstance(raw, dict):
        raise BatchError(f"batch message: must be a JSON object; got {shown(raw)}")
    version = raw.get("version")
    if type(version) is not int or version != VERSION:
        raise BatchError(f"batch message: version must be {VERSION}; got {shown(version)}")
    tick, deadline = _time(raw, "tick"), _time(raw, "deadline")
    if tick > received + SKEW:
        raise BatchError(
            f"batch message: tick must not be later than now ({received.isoformat()}); "
            f"got {tick.isoformat()}"
        )
    if not tick < deadline <= tick + span:
        raise BatchError(
            f"batch message: deadline must be after tick and at most one tick ({span}) "
            f"after it; got tick {tick.isoformat()}, deadline {deadline.isoformat()}"
        )
    of = _whole(raw, "of", 1, 1_000_000)
    number = _whole(raw, "number", 1, of)
    quotas = _pair(raw, "quotas", 1, MAX_TABLE_QUOTA)
    if "table_quota" in raw and quotas is None:  # a message of an earlier scheduled function
        quotas = (_whole(raw, "table_quota", 1, MAX_TABLE_QUOTA),) * 2
    reserved = _pair(raw, "reserved", 0, MAX_RESERVED_UNITS)
    return Batch(tick, deadline, number, of, _tables(raw.get("tables")), quotas, reserved)


def _pair(raw: Mapping[str, Any], key: str, low: int, high: int) -> tuple[int, int] | None:
    """The field ``key``: a read and a write value, each a whole number from ``low`` to
    ``high``; None when the message has none."""
    if key not in raw:
        return None
    pair = raw[key]
    if not (isinstance(pair, list) and len(pair) == 2):
        raise BatchError(
            f"batch message: {key} must be a list of a read and a write value; got {shown(pair)}"
        )
    read, write = (_whole({key: v}, key, low, high) for v in pair)
    return read, write


def _time(raw: Mapping[str, Any], key: str) -> datetime:
    value = raw.get(key)
    try:
        parsed = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise BatchError(
            f"batch message: {key} must be an ISO 8601 time with its UTC offset; got {shown(value)}"
        )
    return parsed.astimezone(UTC)


def _whole(raw: Mapping[str, Any], key: str, low: int, high: int) -> int:
    value = raw.get(key)
    if type(value) is not int or not low <= value <= high:
        raise BatchError(
            f"batch message: {key} must be a whole number from {low} to {high}; got {shown(value)}"
        )
    return value


def _tables(value: object) -> tuple[str, ...]:
    """The ``tables`` field: a list of 1 to MAX_TABLES distinct table names."""
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_TABLES:
        raise BatchError(
            f"batch message: tables must be a list of 1 to {MAX_TABLES} table names; "
            f"got {shown(value)}"
        )
    for name in value:
        if not is_table_name(name):
            raise BatchError(
                "batch message: a table name must be 3 to 255 letters, digits, '_', '-' "
                f"or '.'; got {shown(name)}"
            )
    if len(set(value)) != len(value):
        raise BatchError(f"batch message: tables must not repeat a name; got {shown(value)}")
    return tuple(value)
