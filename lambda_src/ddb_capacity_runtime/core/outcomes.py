"""Runs in: scaler Lambda, broker Lambda, workers (the user's own jobs, in direct mode),
workstation (``ddb-capacity``, examples).

What became of a change: its status, and the row that events, the tick's summary and
capacity requests' answers give of it. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .plan import Change


class Status(StrEnum):
    """The status of one dimension's change, as a row reports it."""

    APPLIED = "applied"
    DRY_RUN = "dry-run"
    RETRY_NEXT_TICK = "retry-next-tick"
    """Another update was in flight, or the capacity moved since it was read: the next tick decides
    again."""
    QUOTA_EXCEEDED = "quota-exceeded"
    INVALID = "invalid"
    ACCESS_DENIED = "access-denied"
    NOT_FOUND = "not-found"
    FAILED = "failed"
    HELD = "held"
    """The tick decided the dimension and made no change (a hold, or no outcome)."""
    KEPT = "kept"
    """Ending holds: raised beyond the holds since, left as it is."""
    UNCHANGED = "unchanged"
    LEFT_TO_POLICY = "left-to-policy"
    """Ending holds without lowering a dimension that has no scalable target."""
    BUSY = "busy"
    """Ending holds: the table is being updated; the next restore tries again."""
    DROPPED = "dropped"
    """The dimension's holds were forgotten without lowering it."""
    DEADLINE = "deadline-passed"
    """The tick's deadline passed before the change was sent (its lease waited for, or its
    control-plane call made): nothing was sent, and the next tick decides again."""


REFUSED = frozenset({Status.FAILED, Status.INVALID, Status.ACCESS_DENIED, Status.NOT_FOUND})
"""Statuses of a change AWS refused, or whose table or index was not found."""
NOT_MADE = REFUSED | {Status.QUOTA_EXCEEDED, Status.DEADLINE}
"""Statuses of a change that was needed and not made: refused, the decrease quota spent, or
the deadline passed. Each is a failure, counted and alarmed (the scaler's tick and a
restore of expired holds alike); the change is tried again at the next run.
``retry-next-tick`` is not one: another update was in flight, or the capacity moved since
it was read, and the next tick decides again."""
DONE = frozenset({Status.APPLIED, Status.DRY_RUN})
"""Statuses a change made for good carries."""


def reasons(rows: Iterable[Mapping[str, Any]]) -> str:
    """Why each of ``rows`` (result rows) is as it is, in one text: its note, else its
    error, else its status."""
    return "; ".join(str(r.get("note") or r.get("error") or r["status"]) for r in rows)


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
