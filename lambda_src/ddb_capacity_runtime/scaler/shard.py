"""Runs in: scaler Lambda (the scheduled function and the batch function), workstation
(tests, benchmarks).

A sharded tick, for more tables than one invocation can tick within the interval. The
scheduled invocation (:func:`coordinate`) finds the managed tables; above
``shard_above_tables`` it cuts them into batches of ``tables_per_batch`` (in name order)
and sends each to the batch queue as one SQS message (:class:`Batch`); at or below, it
ticks them itself, as an unsharded scaler does. The batch function takes one message at a
time (SQS to Lambda, at most the event source's maximum concurrency at once) and runs the
same tick (:func:`.tick.tick` with ``batch``) on the batch's tables alone: its own
GetMetricData calls, its own reads of their scalable targets and state-store items, its own
failures. A batch is its own fault domain, as each table is within it.

A message is untrusted input: :func:`parse_batch` checks every field, and a message it
refuses is a failure of the batch function, never a tick of anything. A batch keeps to its
tick: no table of it is acted on after its ``deadline`` (the next tick's time), so two
ticks never act on one table at once; tables left when the deadline passes are failures,
decided again by the next tick.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from ..aws.retry import describe_error
from ..core.errors import CapacityConfigError, shown
from ..core.names import is_table_name

#: The batch function's queue (the construct sets it; without it, a tick is never sharded).
BATCH_QUEUE_ENV = "CAPACITY_BATCH_QUEUE_URL"
#: The message format's version.
VERSION = 1
#: SendMessageBatch takes at most 10 messages a call.
SEND_BATCH = 10
#: The most tables a message may name (a batch's own limit is ``tables_per_batch``).
MAX_TABLES = 1_000
#: The most tags a resource carries in AWS.
MAX_TAGS = 50
#: A deadline at most this long after its tick.
MAX_SPAN = timedelta(hours=1)


class BatchError(CapacityConfigError):
    """A batch message that does not say what a batch is."""


@dataclass(frozen=True)
class Batch:
    """One batch of a sharded tick: its tables (with the tags discovery saw, or None), the
    tick's time, the deadline after which none of them is acted on, and its place
    (``number`` of ``of``, from 1)."""

    tick: datetime
    deadline: datetime
    number: int
    of: int
    tables: Mapping[str, Mapping[str, str] | None]

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
                "tables": {n: None if t is None else dict(t) for n, t in self.tables.items()},
            },
            separators=(",", ":"),
        )


def shard(
    found: Mapping[str, Mapping[str, str] | None],
    per_batch: int,
    tick: datetime,
    deadline: datetime,
) -> list[Batch]:
    """``found`` in batches of ``per_batch`` tables, in name order (a table keeps its
    batch from tick to tick while the set of tables stays the same)."""
    names = sorted(found)
    chunks = [names[i : i + per_batch] for i in range(0, len(names), per_batch)]
    return [
        Batch(tick, deadline, n, len(chunks), {name: found[name] for name in chunk})
        for n, chunk in enumerate(chunks, start=1)
    ]


def send(
    sqs: Any,
    queue_url: str,
    batches: Sequence[Batch],
    call: Callable[[Callable[[], Any]], Any],
) -> list[str]:
    """Send each batch as one message (SendMessageBatch, 10 a call, each call through
    ``call``: retries). Returns one line per batch not sent; the others are sent."""
    failed: list[str] = []
    for offset in range(0, len(batches), SEND_BATCH):
        group = batches[offset : offset + SEND_BATCH]
        entries = [{"Id": str(b.number), "MessageBody": b.to_message()} for b in group]
        try:
            answer = call(partial(sqs.send_message_batch, QueueUrl=queue_url, Entries=entries))
        except Exception as exc:
            failed += [f"{b.label}: not sent: {describe_error(exc)}" for b in group]
            continue
        for entry in answer.get("Failed", []):
            failed.append(
                f"batch {entry.get('Id')} of {len(batches)}: not sent: "
                f"{entry.get('Code')}: {entry.get('Message')}"
            )
    return failed


def parse_batch(body: object) -> Batch:
    """The batch a message body says, every field checked; raises :class:`BatchError`
    naming the field, the value and what is allowed."""
    if not isinstance(body, str):
        raise BatchError(f"batch message: the body must be a JSON text; got {shown(body)}")
    try:
        raw = json.loads(body)
    except json.JSONDecodeError as exc:
        raise BatchError(f"batch message: not JSON ({exc.msg}); got {shown(body)}") from None
    if not isinstance(raw, dict):
        raise BatchError(f"batch message: must be a JSON object; got {shown(raw)}")
    if raw.get("version") != VERSION:
        got = shown(raw.get("version"))
        raise BatchError(f"batch message: version must be {VERSION}; got {got}")
    tick, deadline = _time(raw, "tick"), _time(raw, "deadline")
    if not tick < deadline <= tick + MAX_SPAN:
        raise BatchError(
            f"batch message: deadline must be after tick and at most {MAX_SPAN} after it; "
            f"got tick {tick.isoformat()}, deadline {deadline.isoformat()}"
        )
    of = _whole(raw, "of", 1, 1_000_000)
    number = _whole(raw, "number", 1, of)
    return Batch(tick, deadline, number, of, _tables(raw.get("tables")))


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
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BatchError(
            f"batch message: {key} must be a whole number from {low} to {high}; got {shown(value)}"
        )
    return value


def _tables(value: object) -> dict[str, Mapping[str, str] | None]:
    """The ``tables`` field: an object of 1 to MAX_TABLES table names, each to null or
    an object of at most 50 string tags (the tags themselves are checked as discovery's
    are, by the tick)."""
    if not isinstance(value, dict) or not 1 <= len(value) <= MAX_TABLES:
        raise BatchError(
            f"batch message: tables must be an object of 1 to {MAX_TABLES} table names; "
            f"got {shown(value)}"
        )
    out: dict[str, Mapping[str, str] | None] = {}
    for name, tags in value.items():
        if not is_table_name(name):
            raise BatchError(
                "batch message: a table name must be 3 to 255 letters, digits, '_', '-' "
                f"or '.'; got {shown(name)}"
            )
        if tags is not None and not (
            isinstance(tags, dict)
            and len(tags) <= MAX_TAGS
            and all(isinstance(k, str) and isinstance(v, str) for k, v in tags.items())
        ):
            raise BatchError(
                f"batch message: the tags of table {name} must be null or an object of at "
                f"most {MAX_TAGS} strings; got {shown(tags)}"
            )
        out[name] = tags
    return out
