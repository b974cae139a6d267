"""Runs in: stream reader Lambda.

The stream reader's counters in the state store: the write units the records of a
table's stream stood for, per dimension and counting window
(`WINDOW_SECONDS`), summed over the stream's shards. A Lambda
invocation sees one shard's records, so each adds its own with an atomic ``ADD`` and reads
back the sum of every shard's so far in the same call.

The counters are a ring: `SLOTS` items per dimension (``pk`` = the table, ``sk`` =
``stream:<slot>:<table|index/NAME>:write``), each holding the start of the window it
counts (``w``) and its units (``u``). A window takes its slot over from an older one with
a conditional write, so the store never holds more than `SLOTS` items per dimension
and needs no expiry. A window older than the ring is too late to count. The state store's
other readers skip these items: their sort key names no dimension.

Each counter also keeps the ids of the batches it counted (``b``, a string set; a batch's
id: its records' event ids, hashed, per window, a record without a usable event id known by
its content: ``fast_path.stream_reader.batch_id``): a batch Lambda delivers again (after a
timeout or a crash: event source mappings deliver at least once) finds its id there and adds
nothing, in the same conditional write (`add`'s ``batch``). A counter keeps at most
`MAX_BATCH_IDS` ids, so an item stays small (an add costs a few write units) and far below
DynamoDB's 400 KB item limit whatever the stream's shard count; a batch that finds its
window's ids full is added without its id (`Added.unguarded`), and a replay of it would be
added again.

The items are untrusted input: a sum that is not a number within bounds reads as unknown,
and the caller then goes by its own records alone, and counts it as a failure.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from ..core.errors import shown
from ..core.stream import WINDOW_SECONDS
from ..core.surge_report import CLOCK_SKEW_SECONDS, MAX_UNITS_PER_SECOND
from .combiner import conditional_update

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

COUNTER = "stream:"
"""The sort key prefix of a counter item."""
SLOTS = 7
"""Windows kept per dimension: 70 seconds of them, so that a record as old as the event source
keeps one (its maximum record age, a minute) still finds its window, whichever second of a
window the newest record is in."""
MAX_BATCH_IDS = 250
"""The most batch ids (32 characters each) a counter keeps: about 8.5 KB, so an add to the
fullest counter costs at most 9 write units."""
MAX_WINDOW_UNITS = MAX_UNITS_PER_SECOND * WINDOW_SECONDS
"""The most units a window's sum may hold: no dimension serves more per second."""


def counter_key(table: str, sort_key: str, start: int) -> dict[str, Any]:
    """The key of the counter of ``table``'s dimension ``sort_key``
    (``<table|index/NAME>:write``) for the window starting at ``start``."""
    slot = (start // WINDOW_SECONDS) % SLOTS
    return {"pk": {"S": table}, "sk": {"S": f"{COUNTER}{slot}:{sort_key}"}}


@dataclass(frozen=True)
class Added:
    """What `add` answers: the window's sum over every shard so far, or, when the counter
    was not sound (its sum read back out of bounds, or its slot held a window that cannot
    be), ``units`` alone and ``unsound``, what was wrong; ``replayed``: the window has
    counted the batch already, and nothing was added; ``unguarded``: the batch was added
    without its id, its window's ids being full (`MAX_BATCH_IDS`), so a replay of it would
    be added again."""

    total: float
    unsound: str | None = None
    replayed: bool = False
    unguarded: bool = False


REPLAYED = Added(0.0, replayed=True)
"""What `add` answers for a batch its window has counted already (a replay): nothing added."""


def add(
    dynamodb: DynamoDBClient,
    store: str,
    table: str,
    sort_key: str,
    start: int,
    units: int,
    batch: str | None = None,
    now: float | None = None,
) -> Added | None:
    """Add ``units`` to the window starting at ``start`` of ``table``'s dimension
    ``sort_key``, once for the batch ``batch`` (its id; None: not known, always added);
    the window's sum over every shard so far (`Added`: ``units`` alone when the counter
    was not sound), `REPLAYED` when the window has counted ``batch`` already, or None
    when the window is older than its slot's: too late. ``now``: the reader's clock (POSIX
    seconds; default the machine's), past which no sound window starts."""
    key = counter_key(table, sort_key, start)
    # the batch's own values: none for a batch of no id (always added, never guarded)
    cap = {} if batch is None else {":id": {"S": batch}, ":cap": {"N": str(MAX_BATCH_IDS)}}
    ids = {} if batch is None else {":b": {"SS": [batch]}, **cap}
    once = " AND NOT contains(#b, :id)" if batch is not None else ""
    room = " AND (attribute_not_exists(#b) OR size(#b) < :cap)" if batch is not None else ""
    take = partial(_take, dynamodb, store, key, start, units, batch)
    for attempt in range(3):
        added = _update(
            dynamodb,
            store,
            key,
            "ADD #u :u" + (", #b :b" if batch is not None else ""),
            "#w = :w" + once + room,
            {":u": {"N": str(units)}, **ids},
            start,
        )
        if added is not None:
            return _sum(added, units)
        taken = take("attribute_not_exists(#w) OR #w < :w")
        if taken is not None:
            return Added(float(units))
        held = None if batch is None else _held(dynamodb, store, key, start, batch)
        if held == "counted":
            return REPLAYED
        if held == "full":
            # added without its id, while the ids are still full and hold none of this batch
            full = "#w = :w" + once + " AND size(#b) >= :cap"
            unguarded = _update(
                dynamodb, store, key, "ADD #u :u", full, {":u": {"N": str(units)}, **cap}, start
            )
            if unguarded is not None:
                return replace(_sum(unguarded, units), unguarded=True)
        # another shard took the slot over meanwhile (try the ADD again), it counts a
        # later window (this one is too late), or a window that cannot be (taken over;
        # losing that take to another shard, the ADD is tried again)
        if attempt == 1:
            clock = time.time() if now is None else now
            unsound = _take_unsound(dynamodb, store, key, clock, take)
            if unsound is not None:
                return unsound
    return None


def _take_unsound(
    dynamodb: DynamoDBClient,
    store: str,
    key: Mapping[str, Any],
    now: float,
    take: Callable[..., Mapping[str, Any] | None],
) -> Added | None:
    """The slot taken over from a window that cannot be (a start that is not a number, or
    later than ``now`` by more than `CLOCK_SKEW_SECONDS`: no record is from the future),
    which would keep every later window out of it for good; None when its window may be
    a sound later one, or another shard changed the slot meanwhile."""
    item = dynamodb.get_item(TableName=store, Key=dict(key), ConsistentRead=True).get("Item", {})
    raw = item.get("w")
    window = _number(raw)
    if raw is None or (window is not None and window <= now + CLOCK_SKEW_SECONDS):
        return None
    taken = take("#w = :bad", {":bad": raw})
    if taken is None:
        return None
    units = float(taken["u"]["N"])  # the batch's own, as written
    held = next(iter(raw.values())) if isinstance(raw, Mapping) and len(raw) == 1 else raw
    return Added(units, unsound=f"its slot counted a window that cannot be ({shown(held)})")


def _held(
    dynamodb: DynamoDBClient, store: str, key: Mapping[str, Any], start: int, batch: str
) -> str | None:
    """What the counter at ``key`` (read consistently) holds of ``batch`` when it counts the
    window ``start``: ``"counted"`` (its id is there), ``"full"`` (it is not, and the ids
    are `MAX_BATCH_IDS` or more); None otherwise."""
    item = dynamodb.get_item(TableName=store, Key=dict(key), ConsistentRead=True).get("Item", {})
    window = _number(item.get("w"))
    ids = item.get("b", {}).get("SS") if isinstance(item.get("b"), Mapping) else None
    if window != start or not isinstance(ids, list):
        return None
    if batch in ids:
        return "counted"
    return "full" if len(ids) >= MAX_BATCH_IDS else None


def _take(
    dynamodb: DynamoDBClient,
    store: str,
    key: Mapping[str, Any],
    start: int,
    units: int,
    batch: str | None,
    condition: str,
    values: Mapping[str, Any] | None = None,
) -> Mapping[str, Any] | None:
    """The slot taken over for the window starting at ``start``, with ``units`` (and the
    batch ``batch``) alone, when ``condition`` holds; None when it does not."""
    ids = {":b": {"SS": [batch]}} if batch is not None else {}
    return _update(
        dynamodb,
        store,
        key,
        "SET #u = :u, #w = :w" + (", #b = :b" if batch is not None else " REMOVE #b"),
        condition,
        {":u": {"N": str(units)}, **ids, **(values or {})},
        start,
    )


def _update(
    dynamodb: DynamoDBClient,
    store: str,
    key: Mapping[str, Any],
    update: str,
    condition: str,
    values: Mapping[str, Any],
    start: int,
) -> Mapping[str, Any] | None:
    """One conditional UpdateItem on the window starting at ``start`` (``:w``); the
    item after it (None: the condition failed)."""
    return conditional_update(
        dynamodb,
        store,
        key,
        update,
        condition,
        {**values, ":w": {"N": str(start)}},
        {"#u": "u", "#w": "w", **({"#b": "b"} if "#b" in update or "#b" in condition else {})},
        all_new=True,
    )


def _sum(attributes: Mapping[str, Any], units: int) -> Added:
    """The window's sum read back, within bounds; ``units`` (ours alone) and the value
    read otherwise."""
    value = _number(attributes.get("u"))
    if value is None or not units <= value <= MAX_WINDOW_UNITS:
        why = f"its sum is {shown(attributes.get('u'), 80)}, not a number from the batch's"
        return Added(float(units), unsound=f"{why} {units:,} units to {MAX_WINDOW_UNITS:,}")
    return Added(value)


def _number(value: object) -> float | None:
    """A DynamoDB number attribute's value, finite; None for anything else."""
    text = value.get("N") if isinstance(value, Mapping) else None
    if not isinstance(text, str) or len(text) > 40:
        return None
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None
