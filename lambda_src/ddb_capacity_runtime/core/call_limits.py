"""Runs in: workers (the user's own jobs, and the fast path's client hook in the user's
processes).

The most capacity one DynamoDB call can consume, from DynamoDB's own limits: an answer's
``ConsumedCapacity`` is untrusted input, and a figure above these is not believed (the
caller counts the bound instead, or its own estimate). Generous on purpose: they exist to
refuse ``1e308``, never to cut a real answer short.
"""

from __future__ import annotations

from collections.abc import Mapping

from .validators import is_whole

__all__ = [
    "BATCH_GET_ITEMS",
    "BATCH_WRITE_ITEMS",
    "GSI_QUOTA",
    "ITEM_READ_UNITS",
    "ITEM_WRITE_UNITS",
    "KEY_MOVE",
    "LSI_QUOTA",
    "MOST_PAGE_ITEMS",
    "PAGE_READ_UNITS",
    "WRITE_OPERATIONS",
    "most_page_units",
    "most_units",
    "most_written_units",
    "page_items",
]

ITEM_READ_UNITS = 100.0
"""Read units of one item of 400 KB (DynamoDB's largest), strongly consistent (4 KB a
unit)."""
ITEM_WRITE_UNITS = 400.0
"""Write units of one item of 400 KB (1 KB a unit)."""
PAGE_READ_UNITS = 256.0 + ITEM_READ_UNITS
"""Read units of the largest page a Query or Scan reads from a table or index: 1 MB,
strongly consistent, and the item it ends on, which may run past the megabyte."""
MOST_PAGE_ITEMS = 1024 * 1024
"""The most items one page can read (a megabyte of items of a byte or more): the bound on an
answer's untrusted ``ScannedCount``."""
GSI_QUOTA = 20
"""Global secondary indexes a table may have (DynamoDB's default quota)."""
LSI_QUOTA = 5
"""Local secondary indexes a table may have. They share the table's capacity: what a call
consumes on them counts on the table."""
KEY_MOVE = 2
"""Writes an index takes for one item written: a write that moves the item's key there
deletes one entry and puts another."""
BATCH_GET_ITEMS = 100
"""Items one BatchGetItem or transaction may name."""
BATCH_WRITE_ITEMS = 25
"""Items one BatchWriteItem may write."""

_READS: Mapping[str, float] = {
    "GetItem": ITEM_READ_UNITS,
    "Query": PAGE_READ_UNITS,
    "Scan": PAGE_READ_UNITS,
    # every item read whole, whatever a projection returns of it
    "BatchGetItem": BATCH_GET_ITEMS * ITEM_READ_UNITS,
    "TransactGetItems": 2 * BATCH_GET_ITEMS * ITEM_READ_UNITS,  # a transaction costs twice
}
_WRITES: Mapping[str, float] = {
    "PutItem": ITEM_WRITE_UNITS,
    "UpdateItem": ITEM_WRITE_UNITS,
    "DeleteItem": ITEM_WRITE_UNITS,
    "BatchWriteItem": BATCH_WRITE_ITEMS * ITEM_WRITE_UNITS,
    # an update or a delete costs the item's size, not the request's
    "TransactWriteItems": 2 * BATCH_GET_ITEMS * ITEM_WRITE_UNITS,
}
WRITE_OPERATIONS = frozenset(_WRITES)
"""The operations that consume write capacity; every other of `most_units` reads."""
_EVERY_INDEX = 1 + KEY_MOVE * (GSI_QUOTA + LSI_QUOTA)
"""What one item written can cost, in items' writes: the table's, and a key moved in each
of its indexes."""


def most_units(operation: str, *, on_gsi: bool, items: int = 0) -> float:
    """The most units one call of ``operation`` (a DynamoDB operation that consumes
    capacity) can consume on one GSI (``on_gsi``), or on its table: with its local indexes,
    and with its GSIs where an answer gives no breakdown by index (a write may move the
    item's key in each index), and for a Query or Scan the ``items`` it read (an answer's
    ``ScannedCount``, see `page_items`), each of which a local index may fetch from the
    table. Raises KeyError for any other operation."""
    if operation in _WRITES:
        return _WRITES[operation] * (KEY_MOVE if on_gsi else _EVERY_INDEX)
    if operation in ("Query", "Scan"):
        return most_page_units(0 if on_gsi else items, index=not on_gsi)
    return _READS[operation]


def page_items(returned: object, scanned: object) -> int:
    """How many items a Query or Scan answer read, from what it returned (``Items``, a
    list) and what it says it read (``ScannedCount``, untrusted: a whole number up to
    `MOST_PAGE_ITEMS`, else nothing); a filter or ``Select=COUNT`` returns fewer or
    none."""
    count = len(returned) if isinstance(returned, list) else 0
    if is_whole(scanned, 0, MOST_PAGE_ITEMS):
        count = max(count, int(scanned))
    return count


def most_page_units(items: int, index: bool) -> float:
    """The most read units one Query or Scan page of ``items`` items read can consume in
    all: a page, and on an ``index`` (a local one may fetch each item from the table) an
    item's more each."""
    return PAGE_READ_UNITS + (max(0, items) * ITEM_READ_UNITS if index else 0.0)


def most_written_units(items: int) -> float:
    """The most write units ``items`` items written can consume in all, the table's and
    every index's (each may move its key in every one)."""
    return max(0, items) * ITEM_WRITE_UNITS * _EVERY_INDEX
