"""Runs in: workers (the user's own jobs, and the fast path's client hook in the user's
processes).

The most capacity one DynamoDB call can consume, from DynamoDB's own limits: an answer's
``ConsumedCapacity`` is untrusted input, and a figure above these is not believed (the
caller counts the bound instead, or its own estimate). Generous on purpose: they exist to
refuse ``1e308``, never to cut a real answer short.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "GSI_QUOTA",
    "ITEM_READ_UNITS",
    "ITEM_WRITE_UNITS",
    "KEY_MOVE",
    "LSI_QUOTA",
    "PAGE_READ_UNITS",
    "WRITE_OPERATIONS",
    "most_page_units",
    "most_units",
    "most_written_units",
]

ITEM_READ_UNITS = 100.0
"""Read units of one item of 400 KB (DynamoDB's largest), strongly consistent (4 KB a
unit)."""
ITEM_WRITE_UNITS = 400.0
"""Write units of one item of 400 KB (1 KB a unit)."""
PAGE_READ_UNITS = 256.0
"""Read units of the largest page a Query or Scan reads from a table or index (1 MB,
strongly consistent)."""
GSI_QUOTA = 20
"""Global secondary indexes a table may have (DynamoDB's default quota)."""
LSI_QUOTA = 5
"""Local secondary indexes a table may have. They share the table's capacity: what a call
consumes on them counts on the table."""
KEY_MOVE = 2
"""Writes an index takes for one item written: a write that moves the item's key there
deletes one entry and puts another."""

_READS: Mapping[str, float] = {
    "GetItem": ITEM_READ_UNITS,
    "Query": PAGE_READ_UNITS,
    "Scan": PAGE_READ_UNITS,
    "BatchGetItem": 16 * PAGE_READ_UNITS,  # 16 MB
    "TransactGetItems": 2 * 4 * PAGE_READ_UNITS,  # 4 MB, a transaction costs twice
}
_WRITES: Mapping[str, float] = {
    "PutItem": ITEM_WRITE_UNITS,
    "UpdateItem": ITEM_WRITE_UNITS,
    "DeleteItem": ITEM_WRITE_UNITS,
    "BatchWriteItem": 25 * ITEM_WRITE_UNITS,  # 25 items
    "TransactWriteItems": 2 * 4 * 1024.0,  # 4 MB, a transaction costs twice
}
WRITE_OPERATIONS = frozenset(_WRITES)
"""The operations that consume write capacity; every other of `most_units` reads."""


def most_units(operation: str, *, on_gsi: bool, items: int = 0) -> float:
    """The most units one call of ``operation`` (a DynamoDB operation that consumes
    capacity) can consume on one GSI (``on_gsi``), or on its table with the table's local
    indexes: a write may move the item's key in each index, and a Query or Scan of a local
    index may fetch each of the ``items`` it returned from the table. Raises KeyError for
    any other operation."""
    if operation in _WRITES:
        indexes = 0 if on_gsi else LSI_QUOTA
        return _WRITES[operation] * (KEY_MOVE if on_gsi else 1 + KEY_MOVE * indexes)
    fetched = max(0, items) * ITEM_READ_UNITS if operation in ("Query", "Scan") else 0.0
    return _READS[operation] + (0.0 if on_gsi else fetched)


def most_page_units(items: int, index: bool) -> float:
    """The most read units one Scan page of ``items`` items can consume in all: a page, and
    on an ``index`` (a local one may fetch each item from the table) an item's more each."""
    return PAGE_READ_UNITS + (max(0, items) * ITEM_READ_UNITS if index else 0.0)


def most_written_units(items: int) -> float:
    """The most write units ``items`` items written can consume in all, the table's and
    every index's (each may move its key in every one)."""
    return max(0, items) * ITEM_WRITE_UNITS * (1 + KEY_MOVE * (GSI_QUOTA + LSI_QUOTA))
