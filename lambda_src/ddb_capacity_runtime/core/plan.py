"""Runs in: scaler Lambda, broker Lambda, workers (the user's own jobs, in direct mode),
workstation (simulator).

A tick's plan for one table: every dimension's decision as a `Change`. Pure; the
scaler Lambda and the simulator both call `plan_table`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from .policy import (
    DECREASE,
    HOLD,
    Action,
    Decision,
    DimensionState,
    combine_counter,
    decide,
    decide_scalable_min,
)
from .records import direct_init
from .reservation import Floor, Reservation
from .series import Series
from .settings import ScalerConfig, late_minutes
from .tables import Dimension, ManagedTable


class Via(StrEnum):
    """How a change is made: by moving a scalable target's MinCapacity, or by UpdateTable
    (``NONE``: a row of a dimension nothing was sent for)."""

    SCALABLE_TARGET = "scalable-target"
    UPDATE_TABLE = "update-table"
    NONE = "-"


SCALABLE_TARGET, UPDATE_TABLE = Via.SCALABLE_TARGET, Via.UPDATE_TABLE


@direct_init
@dataclass(frozen=True)
class Change:
    """A dimension's decided change: from ``old`` to ``new`` units, and why."""

    dimension: Dimension
    old: int
    new: int
    reason: str
    action: Action
    via: Via
    throttles_seen: float = 0.0


def delivered(series: Series, lag_minutes: int = 0) -> tuple[Series, int]:
    """``series`` without its newest minutes while they are unknown, and how many of them
    were beyond `late_minutes` of ``lag_minutes``. Minutes CloudWatch has not delivered yet are
    not looked at, so raises go on the newest known minutes; but data that stopped for
    longer than CloudWatch is late (the count returned) forbids any decrease, as unknown
    minutes before a known one do."""
    if not series.unknown and not series.undelivered:  # every minute known
        return series, 0
    n, stopped = _delivered(series, lag_minutes)
    if n == len(series.minute_starts) and not series.undelivered:
        return series, stopped
    trimmed = Series(
        series.minute_starts[:n],
        series.consumed[:n],
        series.throttles[:n],
        series.unknown[:n],
        series.unfixable[:n],
        series.key_range[:n],
        series.causes_unknown,
        throttles_read=series.throttles_read,
    )
    return trimmed, stopped


def _delivered(series: Series, lag_minutes: int) -> tuple[int, int]:
    """`delivered` as counts: the minutes kept (all when none is known, or none is
    unknown at the end), and the newest unknown ones beyond `late_minutes`. The
    minutes ``series`` leaves out as not delivered yet (after a known one) are not kept."""
    unknown, n = series.unknown, len(series.minute_starts)
    total = n + series.undelivered
    while unknown and n and unknown[n - 1]:
        n -= 1
    if n in (0, total):  # nothing known at all stays unknown, and says so
        return total, 0
    stopped = total - n - late_minutes(lag_minutes)
    return n, stopped if stopped > 0 else 0  # (a conditional, not max: a tick's hot path)


def plan_table(
    table: ManagedTable,
    series: Mapping[Any, Series],
    config: ScalerConfig,
    now: datetime,
    *,
    decreases_allowed: bool = True,
    floor: Floor | None = None,
) -> list[tuple[Change, Decision]]:
    """Every dimension's decision (holds included) as a Change; pure. No dimension is
    lowered while its series has unknown minutes (before its newest known one: see
    `delivered`), nor at all with ``decreases_allowed`` False. With a reservation
    ``floor``, each decrease of a table or GSI changed by UpdateTable is first cut at it
    (nothing spent) before read and write share their counter, so a decrease the floor
    holds never makes the other dimension's ride along; `floor_planned` then spends it."""
    planned: list[tuple[Change, Decision]] = []
    direct: dict[str | None, dict[str, tuple[Dimension, Decision]]] = {}
    lag = config.metric_lag_minutes
    for d in table.dimensions:
        state = dimension_state(d, series[d.key], now, decreases_allowed, lag)
        if d.target is not None:
            decision = decide_scalable_min(state, d.target.min_capacity, config.policy)
            planned.append((_change(d, d.target.min_capacity, decision, SCALABLE_TARGET), decision))
        else:
            direct.setdefault(d.index, {})[d.dimension] = (d, decide(state, config.policy))
    trial = floor.copy() if floor is not None else None
    for dims in direct.values():
        decisions = {k: v[1] for k, v in dims.items()}
        if trial is not None:
            worth = config.policy.min_saving_fraction
            decisions = {
                k: _cut_decision(v[0], decisions[k], trial, worth) for k, v in dims.items()
            }
        combined = combine_counter(decisions, {k: v[0].provisioned for k, v in dims.items()})
        for name, (d, _) in dims.items():
            decision = combined[name]
            planned.append((_change(d, d.provisioned, decision, UPDATE_TABLE), decision))
    return planned


def _cut_decision(d: Dimension, decision: Decision, trial: Floor, worth: float) -> Decision:
    """``decision`` with a decrease cut at ``trial`` (a copy of the floor): held when
    nothing of it is left, or less than ``worth`` (`Floor.cut`)."""
    if decision.action != DECREASE or decision.capacity >= d.provisioned or not d.covered:
        return decision
    allowed = trial.cut(d.dimension, d.provisioned, decision.capacity, worth)
    if allowed == decision.capacity:
        return decision
    if allowed >= d.provisioned:
        return replace(decision, capacity=d.provisioned, action=HOLD)
    return replace(decision, capacity=allowed)


def dimension_state(
    d: Dimension, series: Series, now: datetime, decreases_allowed: bool, lag_minutes: int = 0
) -> DimensionState:
    """What the policy is told of ``d``: its series up to the newest delivered minute
    (`delivered`), of which those within the newest ``lag_minutes`` of the window
    are ``fresh`` (CloudWatch may not have finished them: raises only), its limits, ledger
    and forecast needs."""
    s = series
    listed = len(s.minute_starts)
    n, stopped = _delivered(s, lag_minutes) if s.unknown or s.undelivered else (listed, 0)
    left_out = listed + s.undelivered - n  # the newest minutes not read: all unknown
    fresh = lag_minutes - left_out
    consumed, throttles, starts, unfixable = s.consumed, s.throttles, s.minute_starts, s.unfixable
    unknown = s.unknown_minutes - left_out
    if n < listed:  # a tick's hot path: the lists sliced, no trimmed Series made
        consumed, throttles, starts = consumed[:n], throttles[:n], starts[:n]
        if unfixable:
            unfixable = unfixable[:n]
    limits = d.limits
    return DimensionState(  # by position, in DimensionState's field order (a tick's hot path)
        d.provisioned,
        consumed,
        throttles,
        starts,
        limits.min_capacity,
        limits.max_capacity,
        now,
        d.ledger,
        d.last_increase,
        limits.target_utilization,
        unknown + stopped,
        decreases_allowed,
        d.keep,
        d.reserve,
        d.least_fall,
        unfixable,
        fresh if fresh > 0 else 0,
        s.throttles_read,
    )


THROTTLE_READ_SHARE = 0.85
"""A dimension whose consumption in the window reached this share of its capacity has its
throttle events read (docs: Scaler, "Costs")."""
THROTTLE_READ_TICKS = 4
"""... as has every dimension on one tick in this many: throttles at low use (a hot key)."""


def every_dimension_read(now: datetime, tick: int) -> bool:
    """Whether a tick at ``now``, one every ``tick`` minutes, reads every dimension's
    throttles: one in `THROTTLE_READ_TICKS`, counted from the epoch."""
    return int(now.timestamp()) // 60 // tick % THROTTLE_READ_TICKS == 0


def throttles_due(
    planned: Iterable[tuple[Change, Decision]],
    series: Mapping[Any, Series],
    now: datetime,
    tick: int,
) -> list[Any]:
    """The keys whose throttle events a tick reads, ``planned`` its first decision on
    consumption alone (throttles taken for 0): each dimension it would lower (capacity or a
    minimum: a hold's or a raise's end), each whose target's minimum the library holds
    raised (a raise under it stacks on its throttles), each near its capacity
    (`THROTTLE_READ_SHARE`), and, on one tick in `THROTTLE_READ_TICKS` (counted from the
    epoch), every one."""
    every = every_dimension_read(now, tick)
    return [
        c.dimension.key
        for c, _ in planned
        if every or c.new < c.old or read_anyway(c.dimension, series[c.dimension.key])
    ]


def read_anyway(d: Dimension, series: Series) -> bool:
    """Whether ``d``'s throttles are read whatever it would decide (`throttles_due`)."""
    return (
        (d.memory is not None and d.memory.set_to is not None)
        or (d.target is not None and d.target.min_capacity > d.limits.min_capacity)
        or max(series.consumed, default=0.0) >= THROTTLE_READ_SHARE * d.provisioned
    )


def _change(d: Dimension, old: int, decision: Decision, via: Via) -> Change:
    return Change(
        d, old, decision.capacity, decision.reason, decision.action, via, decision.throttles_seen
    )


@dataclass(frozen=True)
class Held:
    """A decrease the reservation held back: asked from ``old`` to ``asked``, made to
    ``new`` (``old``: not made)."""

    change: Change
    asked: int


def floor_planned(
    planned: Sequence[tuple[Change, Decision]], floor: Floor, worth: float = 0
) -> tuple[list[tuple[Change, Decision]], list[Held]]:
    """``planned`` (`plan_table`'s) with every decrease cut at ``floor``: one that
    would take a dimension's total below its reservation is made smaller, or held when
    nothing of it is left or less than ``worth`` (`Floor.cut`); and the decreases held
    back. A decrease's fall is from the dimension's provisioned capacity to its new value
    (under a scalable target, the new minimum: capacity may fall to it), so what the floor
    allows is never more than the capacity may lose."""
    out: list[tuple[Change, Decision]] = []
    held: list[Held] = []
    for change, decision in planned:
        d = change.dimension
        if change.action == HOLD or change.new >= change.old or not d.covered:
            out.append((change, decision))
            continue
        new = floor.cut(d.dimension, d.provisioned, change.new, worth)
        if new == change.new:
            out.append((change, decision))
            continue
        kept = min(new, change.old)
        units = floor.reservation.units(d.dimension)
        reason = f"{change.reason}; held at {kept}: the reservation ({units} units) covers it"
        action = HOLD if kept == change.old else change.action
        cut = replace(change, new=kept, reason=reason, action=action)
        out.append((cut, replace(decision, capacity=kept, reason=reason, action=action)))
        held.append(Held(cut, change.new))
    return out, held


def reservation_floor(reservation: Reservation, tables: Iterable[ManagedTable]) -> Floor | None:
    """The reservation floor over every dimension of ``tables`` (those a tick, or a batch
    of a sharded tick, decides) that reserved capacity covers (`Dimension.covered`), or
    None without a reservation. A table or GSI not among them (its description failed, it
    is UPDATING, not ACTIVE or not managed) counts 0 towards its dimension's total: what is
    not known never allows a decrease. A batch sees its own tables only: it keeps their
    total at or above its share of the reservation (`shard.Batch.reserved`)."""
    if not reservation:
        return None
    dims = (d for table in tables for d in table.dimensions if d.covered)
    return Floor.over(reservation, ((d.dimension, d.provisioned) for d in dims))
