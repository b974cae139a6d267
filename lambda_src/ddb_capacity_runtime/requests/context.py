"""Runs in: broker Lambda, workers (the user's own jobs, in direct mode), workstation
(``ddb-capacity`` in direct mode).

What a capacity request reads of one table besides what ending holds reads too
(`aws.hold_table.read_table`): its current traffic, and whether a level it recorded a hold on is
still there."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from ..aws import metrics, table_calls
from ..aws.error_codes import meaning
from ..aws.hold_table import Context
from ..core.errors import LevelUnconfirmed
from ..core.names import scope_label
from ..core.policy import capacity_units
from ..core.series import window
from ..core.tables import ManagedTable, spec_of, units_of
from ..events import log_event

TRAFFIC_MINUTES = 5
"""Minutes of CloudWatch history whose peak is "the current traffic"."""
TRAFFIC_LAG_MINUTES = 2


def still_has(
    ctx: Context, table: str, index: str | None, dimension: str, level: int, deadline: float
) -> bool:
    """Whether ``table`` (or its GSI ``index``), read again once a hold is recorded on a table
    read to have ``level``, still has ``dimension`` there. False where it reads below it (a
    decrease sent between that read and the record, by a writer that read the hold store
    before it: the settle step) or fails for good: the request looks again, and raises it.
    Being updated at the level (DynamoDB serves the capacity from before an update until it
    lands), or a read that may pass, is read again each poll interval until ``deadline``;
    past it the level is not claimed: logged, and a `LevelUnconfirmed` (a timeout: counted
    ``TimedOut`` by a broker, and alarmed), its hold kept."""
    while (seen := _seen(ctx, table, index, dimension, level)) is None:
        if ctx.clock() >= deadline:
            log_event("hold-level-unconfirmed", level=logging.WARNING, table=table, units=level)
            raise LevelUnconfirmed(
                f"table {table}: {scope_label(index)} {dimension} at {level:,} not confirmed "
                "before the timeout (the table still being updated, or not read)"
            )
        ctx.sleep(ctx.poll_seconds)
    return seen


def _seen(ctx: Context, table: str, index: str | None, dimension: str, level: int) -> bool | None:
    try:
        raw = table_calls.describe(ctx.clients.dynamodb, table)
    except Exception as exc:
        return False if meaning(exc).final else None
    try:
        status = (raw.get("TableStatus"), spec_of(raw, index).get("IndexStatus", "ACTIVE"))
        if units_of(raw, index)[dimension] < level:
            return False
    except (KeyError, ValueError):
        return False
    return True if status == ("ACTIVE", "ACTIVE") else None


def provisioned_of(managed: ManagedTable, index: str | None) -> dict[str, int]:
    """The provisioned capacity of each dimension of the table (``index`` None) or its GSI
    ``index``, as `aws.hold_table.read_table` read it."""
    return {d.dimension: d.provisioned for d in managed.dimensions if d.index == index}


def current_traffic(
    ctx: Context,
    table: str,
    index: str | None,
    dims: Iterable[str],
    provisioned: Mapping[str, int],
) -> dict[str, int]:
    """Peak consumed units per second of each dimension over the last few minutes. Where
    CloudWatch answered minutes not to be trusted (`core.series.Series.untrusted`: the
    peak may be among them), at least the dimension's ``provisioned`` capacity (what the
    table serves now at most; for a table on-demand for a window, its scalable target's
    minimum, the least it returns at), logged (``traffic-unknown``): a baseline read too low
    would raise the table too little for the work on top of it."""
    keys = [(table, index, d) for d in dims]
    start, end = window(ctx.now(), TRAFFIC_MINUTES, TRAFFIC_LAG_MINUTES)
    series = metrics.fetch(ctx.clients.cloudwatch, keys, start, end)
    out = {}
    for key in keys:
        seen = capacity_units(max(series[key].consumed, default=0.0))
        untrusted = series[key].untrusted
        out[key[2]] = max(seen, provisioned.get(key[2], 0)) if untrusted else seen
        if untrusted:
            log_event(
                "traffic-unknown",
                level=logging.WARNING,
                table=table,
                index=index,
                dimension=key[2],
                unknown_minutes=untrusted,
                seen=seen,
                baseline=out[key[2]],
            )
    return out
