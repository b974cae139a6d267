"""Runs in: scaler Lambda, workstation (examples, benchmarks).

A table's plan in a tick, with the delivery witness (`core.delivery`): read, in one
GetMetricData call a 500, for the dimensions the tick is about to lower on minutes read as
idle (`read_witnesses`); each table's decreases held for want of it (`planned_table`), and
logged (`log_stalled`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from ..aws import metrics
from ..core.delivery import hold_unwitnessed, idle_decreases, idle_minutes, witnessed
from ..core.floorplan import FloorPlan
from ..core.outcomes import Status, change_row
from ..core.plan import Change, Held, floor_planned, plan_table
from ..core.policy import Decision
from ..core.series import Key, Series
from ..core.tables import ManagedTable
from ..events import log_event
from .plans import with_plans_in_force
from .tick_state import TickState


def planned_table(
    t: TickState, table: ManagedTable, series: Mapping[Key, Series]
) -> tuple[list[tuple[Change, Decision]], list[Held], list[Change]]:
    """Every dimension's change (`plan_table`): a decrease that rests on minutes read as
    idle only where the dimension's delivery witness was read and recent
    (`core.delivery.hold_unwitnessed`), then every decrease cut at the reservation floor
    (`floor_planned`, which spends it). Returns the plan, the decreases the floor held
    back, and those held for want of a witness."""
    allowed = not t.shared_failures
    own = {d.key: series[d.key] for d in table.dimensions}

    def plan(read: Mapping[Key, Series]) -> list[tuple[Change, Decision]]:
        return plan_table(table, read, t.config, t.now, decreases_allowed=allowed, floor=t.floor)

    planned, stalled = hold_unwitnessed(
        plan, own, lambda key: witnessed(t.witnesses.get(key), t.now)
    )
    if t.floor is None:
        return planned, [], stalled
    planned, held_back = floor_planned(planned, t.floor)
    return planned, held_back, stalled


def read_witnesses(
    t: TickState,
    tables: list[ManagedTable],
    series: Mapping[Key, Series],
    fresh: Mapping[Key, FloorPlan | None],
) -> None:
    """Read the delivery witness (`metrics.fetch_witness`, in one GetMetricData call a 500)
    of each dimension the tick is about to lower on minutes read as idle, into
    ``t.witnesses``: a table none of whose dimensions is, a steady one, costs nothing. A
    witness not read (its query failed or was not trusted) is a failure of its table, whose
    decrease is held when the table is decided; every other table goes on."""
    if t.shared_failures:  # no decrease anywhere this tick
        return
    asked: list[Key] = []
    for table in tables:
        if not any(d.key in series and idle_minutes(series[d.key]) for d in table.dimensions):
            continue
        try:
            decided = with_plans_in_force(t.config, table, fresh, t.now)
            planned = plan_table(decided, series, t.config, t.now, floor=t.floor)
        except Exception:  # noqa: S112 (the table fails when it is decided, as it raises again)
            continue
        asked += [c.dimension.key for c in idle_decreases(planned, series)]
    if not asked:
        return
    errors: dict[Key, str] = {}
    t.witnesses = metrics.fetch_witness(t.clients.cloudwatch, asked, t.now, errors=errors)
    for key, error in errors.items():
        t.fail(key[0], f"{key[1] or 'table'} {key[2]}: {error}")


def log_stalled(t: TickState, stalled: list[Change]) -> None:
    """A ``metrics-stalled`` warning for each decrease held because its dimension's
    delivery witness was not recent (or not read): counted as ``MetricsStalled``."""
    for change in stalled:
        d = change.dimension
        newest = t.witnesses.get(d.key)
        log_event(
            "metrics-stalled",
            level=logging.WARNING,
            **change_row(change, Status.HELD, None),
            witness=newest.isoformat() if newest else None,
            consequence="not lowered: its minutes without a datapoint may be CloudWatch's "
            "delay, not idle; counted as MetricsStalled",
        )
