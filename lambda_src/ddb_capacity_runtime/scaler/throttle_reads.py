"""Runs in: Lambda (the scaler's tick).

A tick reads every dimension's consumed capacity first, decides on it alone (throttles
taken for 0), then reads, in a second GetMetricData call, the throttle events of the
dimensions where they may matter (`core.plan.throttles_due`): those it would lower, those
near their capacity, and every one on one tick in a few. It decides again with them known.
A dimension whose throttles were not read is never lowered (`Series.throttles_read`); one
whose read failed is a failure of its table (counted and alarmed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ..aws import metrics
from ..core.floorplan import FloorPlan
from ..core.plan import plan_table, throttles_due
from ..core.series import Key, Series, window
from ..core.tables import ManagedTable
from .plans import with_plans_in_force
from .tick_state import TickState


def read_throttles(
    t: TickState,
    tables: list[ManagedTable],
    series: Mapping[Key, Series],
    fresh: Mapping[Key, FloorPlan | None],
) -> dict[Key, Series]:
    """``series`` (consumption alone) with the throttle events of the dimensions due read,
    and their causes where throttled (`metrics.fetch_causes`). A global table's are read
    whole by `metrics.fetch` already (its replicas' throttles add to its own)."""
    if t.config.replicas or not series:
        return dict(series)
    assumed = {k: replace(s, throttles_read=True) for k, s in series.items()}
    due: list[Key] = []
    for table in tables:
        try:
            decided = with_plans_in_force(t.config, table, fresh, t.now)
            planned = plan_table(decided, assumed, t.config, t.now, floor=t.floor)
        except Exception:  # the table fails when it is decided; its throttles are read
            due += [d.key for d in table.dimensions]
            continue
        due += throttles_due(planned, assumed, t.now, t.config.tick_minutes)
    start, end = window(t.now, t.config.history_minutes, t.config.metric_lag_minutes)
    unread: dict[Key, str] = {}  # each such dimension never lowered this tick
    out = dict(series)
    if due:
        out = metrics.fetch_throttles(t.clients.cloudwatch, out, due, start, end, errors=unread)
    by_cause: dict[Key, str] = {}
    out = metrics.fetch_causes(t.clients.cloudwatch, out, start, end, errors=by_cause)
    for key, error in (unread | by_cause).items():  # unread, or its throttles all fixable
        t.fail(key[0], f"{key[1] or 'table'} {key[2]}: {error}")
    return out
