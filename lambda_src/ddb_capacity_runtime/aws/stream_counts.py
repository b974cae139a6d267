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

The items are untrusted input: a sum that is not a number within bounds reads as unknown,
and the caller then goes by its own records alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..core.stream import WINDOW_SECONDS
from ..core.surge import MAX_UNITS_PER_SECOND
from .combiner import conditional_update

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

COUNTER = "stream:"
"""The sort key prefix of a counter item."""
SLOTS = 6
"""Windows kept per dimension: a minute of them, as long as the event source keeps a record (its
maximum record age)."""
MAX_WINDOW_UNITS = MAX_UNITS_PER_SECOND * WINDOW_SECONDS
"""The most units a window's sum may hold: no dimension serves more per second."""


def counter_key(table: str, sort_key: str, start: int) -> dict[str, Any]:
    """The key of the counter of ``table``'s dimension ``sort_key``
    (``<table|index/NAME>:write``) for the window starting at ``start``."""
    slot = (start // WINDOW_SECONDS) % SLOTS
    return {"pk": {"S": table}, "sk": {"S": f"{COUNTER}{slot}:{sort_key}"}}


def add(
    dynamodb: DynamoDBClient, store: str, table: str, sort_key: str, start: int, units: int
) -> float | None:
    """Add ``units`` to the window starting at ``start`` of ``table``'s dimension
    ``sort_key``; the window's sum over every shard so far (``units`` when the sum read
    back is not one), or None when the window is older than its slot's: too late."""
    key = counter_key(table, sort_key, start)
    for _ in range(2):
        added = _update(
            dynamodb, store, key, "ADD #u :u", "#w = :w", {":u": {"N": str(units)}}, start
        )
        if added is not None:
            return _sum(added, units)
        taken = _update(
            dynamodb,
            store,
            key,
            "SET #u = :u, #w = :w",
            "attribute_not_exists(#w) OR #w < :w",
            {":u": {"N": str(units)}},
            start,
        )
        if taken is not None:
            return float(units)
        # another shard took the slot over meanwhile (try the ADD again), or it counts a
        # later window: this one is too late
    return None


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
        {"#u": "u", "#w": "w"},
        all_new=True,
    )


def _sum(attributes: Mapping[str, Any], units: int) -> float:
    """The window's sum read back, within bounds; ``units`` (ours alone) otherwise."""
    value = _number(attributes.get("u"))
    if value is None or not units <= value <= MAX_WINDOW_UNITS:
        return float(units)
    return value


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
