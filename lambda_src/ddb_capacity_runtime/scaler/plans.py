"""Runs in: scaler Lambda, workstation (examples, benchmarks).

The autopilot's plans in a tick: this hour's forecast of the tables whose forecast tick it
is (`new_plans`, `forecast_plans`), each table as they ask (`with_plans_in_force`), the
plans kept in the state store (`keep_plans`), and the target values of the target-tracking
policies the autopilot owns written back (`retarget`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from ..aws import metrics
from ..aws.clients import Clients
from ..aws.error_codes import describe_error
from ..aws.scaling_policy import put_target_value
from ..aws.store import HoldStore
from ..core.floorplan import STEP_MINUTES, FloorPlan
from ..core.forecast import HISTORY_DAYS, apply_plans, forecast_due, plan_floors, with_plans
from ..core.holds import HeldDimension
from ..core.ownership import retargets
from ..core.series import MINUTE, Key, step_start
from ..core.settings import ScalerConfig
from ..core.tables import Dimension, ManagedTable
from ..events import log_event
from .tick_state import TickState


def forecast_plans(
    config: ScalerConfig,
    clients: Clients,
    tables: list[ManagedTable],
    now: datetime,
    shared: Callable[..., Any],
    failed: Callable[[str, str], None],
) -> dict[Key, FloorPlan | None]:
    """The autopilot's forecast of ``tables`` (those whose forecast tick of the hour this
    is, `forecast.forecast_due`): 14 days of 5-minute history of every dimension
    (one GetMetricData query each, 25 a call), and its plan of floors, or None where the
    forecast is not good enough. Each forecast is logged. A failed read leaves no new plan
    (the plans kept in the state store still hold until they end, a quarter hour past this
    forecast tick, and bound this tick's decreases as ever); it is a shared failure, and
    one that is not a throttle stops every decrease this tick (a throttled one is counted
    alone: what it loses is confined to the plans it would have made). A dimension whose
    history CloudWatch answered with a query it cannot vouch for (every step None:
    `metrics.fetch_history`) gets no new plan either: its plan in force is kept, not taken
    for a forecast of none (which would lower the floor it stages ahead of a peak), and its
    table fails (``failed``: counted as ``Failures``, alarmed)."""
    dims = [d for t in tables for d in t.dimensions]
    if not dims:
        return {}
    end = step_start(now - config.metric_lag_minutes * MINUTE, STEP_MINUTES)
    history = shared(
        "forecast history",
        lambda: metrics.fetch_history(
            clients.cloudwatch,
            [d.key for d in dims],
            end,
            HISTORY_DAYS,
            STEP_MINUTES,
        ),
        {},
        confined=True,
    )
    plans: dict[Key, FloorPlan | None] = {}
    for d in dims:
        if d.key not in history:
            continue
        if all(v is None for v in history[d.key]):
            failed(
                d.table,
                f"{d.index or 'table'} {d.dimension}: CloudWatch did not answer its forecast "
                "history soundly; its plan in force is kept",
            )
            continue
        plan = _forecast(config, d, history[d.key], end, now)
        plans[d.key] = plan
    return plans


def _forecast(
    config: ScalerConfig, d: Dimension, history: list[float | None], end: datetime, now: datetime
) -> FloorPlan | None:
    """``d``'s plan of floors from its ``history`` up to ``end`` (None: the forecast is not
    good enough), logged (``forecast``)."""
    plan, f = plan_floors(
        history,
        minute(end),
        minute(now),
        d.limits.target_utilization or config.policy.target_utilization,
        d.limits.min_capacity,
        d.limits.max_capacity,
        minute_of_day=now.hour * 60 + now.minute,
    )
    log_event(
        "forecast",
        table=d.table,
        index=d.index,
        dimension=d.dimension,
        season=f.season,
        error=None if f.error is None else round(f.error, 4),
        peak=f.peak,
        floor=max(plan.floors) if plan else None,
        plan=plan.value() if plan else None,
        reason=f.reason,
        gate=f.gate,
    )
    return plan


def new_plans(t: TickState, tables: list[ManagedTable]) -> dict[Key, FloorPlan | None]:
    """The autopilot's new plans of the tables whose forecast tick this is."""
    if not t.config.policy.autopilot:
        return {}
    due = [x for x in tables if forecast_due(x.name, t.now.minute, t.config.tick_minutes)]
    if not due:
        return {}
    return forecast_plans(t.config, t.clients, due, t.now, t.shared, t.fail)


def with_plans_in_force(
    config: ScalerConfig,
    table: ManagedTable,
    fresh: Mapping[Key, FloorPlan | None],
    now: datetime,
) -> ManagedTable:
    """``table`` as a tick decides it at ``now``: in autopilot, with this hour's plans
    (``fresh``) and what the plans in force ask (`core.forecast.apply_plans`)."""
    if not config.policy.autopilot:
        return table
    table = with_plans(table, fresh)
    plans = {d.key: d.plan for d in table.dimensions if d.plan is not None}
    return apply_plans(table, plans, minute(now))


def minute(moment: datetime) -> int:
    """The plans' clock: whole minutes since the epoch."""
    return int(moment.timestamp() // 60)


def keep_plans(
    store: HoldStore,
    table: ManagedTable,
    fresh: Mapping[Key, FloorPlan | None],
    held: list[HeldDimension],
    dry_run: bool,
    failed: Callable[[str], None],
) -> int:
    """Keep this hour's plans in the state store: every dimension of ``table`` (as read)
    the forecast reached gets its new plan or loses its old one, and so do the plans kept
    for dimensions no longer managed (an index gone). Nothing changes for a table the
    forecast did not reach this tick (``fresh`` has none of its dimensions). The tick has
    decided on the plans already (`core.forecast.with_plans`).

    A plan is kept with a conditional write made only while nobody holds the dimension's
    lease; one that could not be kept is obeyed this tick, and counted (the number
    returned, ``table.plans_not_kept``): its dimension reacts alone until the next hour. A
    store write that fails is reported to ``failed`` (a failure of the table), and the
    tick goes on with the plans: raises this tick need no store write."""
    if not any(d.key in fresh for d in table.dimensions):
        return 0
    not_kept = 0
    for d in table.dimensions:
        if d.key in fresh:
            plan = fresh[d.key]
            if not dry_run and plan != d.plan:
                value = plan.value() if plan is not None else None
                try:
                    if not store.keep_plan(d.table, d.index, d.dimension, value):
                        not_kept += 1
                except Exception as exc:
                    failed(f"keeping the forecast's plans: {describe_error(exc)}")
                    not_kept += 1
    for state in held:  # an index not ACTIVE now keeps its plan; one gone loses it
        gone = state.index is not None and state.index not in table.indexes
        if state.plan is not None and gone and not dry_run:
            try:
                store.keep_plan(state.table, state.index, state.dimension, None)
            except Exception as exc:
                failed(f"forgetting a plan: {describe_error(exc)}")
    if not_kept:
        log_event(
            "plans-not-kept",
            level=logging.WARNING,
            table=table.name,
            not_kept=not_kept,
            reason="a capacity request or restore held the dimension's state; these plans "
            "are obeyed this tick only, and the next hour plans again",
        )
    return not_kept


def retarget(t: TickState, table: ManagedTable) -> None:
    """Set each owned target-tracking policy's target value to what its dimension aims at
    (`core.ownership.retargets`; ``table`` as the plans made it). A failed write is
    a failure of the table; the others are still written."""
    for r in retargets(table):
        d = r.dimension
        fields: dict[str, Any] = {"table": table.name, "index": d.index}
        fields |= {"dimension": d.dimension, "old": r.old, "new": r.new}
        fields["dry_run"] = t.config.dry_run
        if not t.config.dry_run:
            assert d.target is not None  # retargets gives owned targets only
            if t.deadline.left() <= 0:
                t.fail_late(table.name, f"target value {r.old} -> {r.new}: deadline passed")
                continue
            try:
                put_target_value(t.clients.autoscaling, d.target, r.new)
            except Exception as exc:
                reason = f"target value {r.old} -> {r.new}: {describe_error(exc)}"
                t.fail(table.name, reason)
                log_event("target-value-failed", level=logging.WARNING, **fields, reason=reason)
                continue
        log_event("target-value", **fields)
