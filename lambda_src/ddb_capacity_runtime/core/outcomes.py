"""Runs in: scaler Lambda, broker Lambda, workers (the user's own jobs, in direct mode),
workstation (``ddb-capacity``, examples).

What became of a change: its status, and the row that events, the tick's summary and
capacity requests' answers give of it. Pure."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .plan import Change


class Status(StrEnum):
    """The status of one dimension's change, as a row reports it."""

    APPLIED = "applied"
    DRY_RUN = "dry-run"
    #: Another update was in flight, or the capacity moved since it was read: the next
    #: tick decides again.
    RETRY_NEXT_TICK = "retry-next-tick"
    QUOTA_EXCEEDED = "quota-exceeded"
    INVALID = "invalid"
    ACCESS_DENIED = "access-denied"
    NOT_FOUND = "not-found"
    FAILED = "failed"
    #: The tick decided the dimension and made no change (a hold, or no outcome).
    HELD = "held"
    #: Ending holds: raised beyond the holds since, left as it is.
    KEPT = "kept"
    UNCHANGED = "unchanged"
    #: Ending holds without lowering a dimension that has no scalable target.
    LEFT_TO_POLICY = "left-to-policy"
    #: Ending holds: the table is being updated; the next restore tries again.
    BUSY = "busy"
    #: The dimension's holds were forgotten without lowering it.
    DROPPED = "dropped"
    #: The tick's deadline passed before the change was sent (its lease waited for, or its
    #: control-plane call made): nothing was sent, and the next tick decides again.
    DEADLINE = "deadline-passed"


#: Statuses of a change AWS refused, or whose table or index was not found.
REFUSED = frozenset({Status.FAILED, Status.INVALID, Status.ACCESS_DENIED, Status.NOT_FOUND})
#: Statuses a change made for good carries.
DONE = frozenset({Status.APPLIED, Status.DRY_RUN})


def result_row(
    table: str,
    index: str | None,
    dimension: str,
    via: str,
    old: int,
    new: int,
    status: str,
    **extra: str | None,
) -> dict[str, Any]:
    """One dimension's change as a row: where, how (``via``), from, to and its status,
    with the ``extra`` fields that are set (an ``error``, a ``note``)."""
    return {
        "table": table,
        "index": index,
        "dimension": dimension,
        "via": via,
        "from": old,
        "to": new,
        "status": status,
        **{k: v for k, v in extra.items() if v},
    }


def change_row(change: Change, status: str, error: str | None) -> dict[str, Any]:
    """What a decision event and the tick's summary say of one change."""
    d = change.dimension
    return result_row(
        d.table, d.index, d.dimension, change.via, change.old, change.new, status, error=error
    )
