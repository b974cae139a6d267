"""A tick's plan for one table: every dimension's decision as a :class:`Change`. Pure; the
scaler Lambda and the simulator both call :func:`plan_table`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .policy import Decision, DimensionState, combine_counter, decide, decide_scalable_min
from .series import Series
from .settings import LATE_MINUTES, ScalerConfig
from .tables import Dimension, ManagedTable

#: How a change is made: by moving a scalable target's MinCapacity, or by UpdateTable.
SCALABLE_TARGET, UPDATE_TABLE = "scalable-target", "update-table"


@dataclass(frozen=True)
class Change:
    dimension: Dimension
    old: int
    new: int
    reason: str
    action: str
    via: str
    throttles_seen: float = 0.0


def delivered(series: Series) -> tuple[Series, int]:
    """``series`` without its newest minutes while they are unknown, and how many of them
    were beyond ``LATE_MINUTES``. Minutes CloudWatch has not delivered yet are not looked
    at, as the metric lag's are not, so raises go on the newest known minutes; but data
    that stopped for longer than CloudWatch is late (the count returned) forbids any
    decrease, as unknown minutes before a known one do."""
    n = len(series.unknown)
    while n and series.unknown[n - 1]:
        n -= 1
    if n in (0, len(series.unknown)):  # nothing known at all stays unknown, and says so
        return series, 0
    stopped = max(0, len(series.unknown) - n - LATE_MINUTES)
    trimmed = Series(
        series.minute_starts[:n], series.consumed[:n], series.throttles[:n], series.unknown[:n]
    )
    return trimmed, stopped


def plan_table(
    table: ManagedTable,
    series: Mapping[Any, Series],
    config: ScalerConfig,
    now: datetime,
    *,
    decreases_allowed: bool = True,
) -> list[tuple[Change, Decision]]:
    """Every dimension's decision (holds included) as a Change; pure. No dimension is
    lowered while its series has unknown minutes (before its newest known one: see
    :func:`delivered`), nor at all with ``decreases_allowed`` False."""
    planned: list[tuple[Change, Decision]] = []
    direct: dict[str | None, dict[str, tuple[Dimension, Decision]]] = {}
    for d in table.dimensions:
        s, stopped = delivered(series[d.key])
        state = DimensionState(
            provisioned=d.provisioned,
            consumed=s.consumed,
            throttles=s.throttles,
            minute_starts=s.minute_starts,
            min_capacity=d.limits.min_capacity,
            max_capacity=d.limits.max_capacity,
            now=now,
            ledger=d.ledger,
            last_increase=d.last_increase,
            target_utilization=d.limits.target_utilization,
            unknown_minutes=s.unknown_minutes + stopped,
            decreases_allowed=decreases_allowed,
            keep=d.keep,
            reserve=d.reserve,
            least_fall=d.least_fall,
        )
        if d.target is not None:
            decision = decide_scalable_min(state, d.target.min_capacity, config.policy)
            planned.append(
                (
                    Change(
                        d,
                        d.target.min_capacity,
                        decision.capacity,
                        decision.reason,
                        decision.action,
                        SCALABLE_TARGET,
                        decision.throttles_seen,
                    ),
                    decision,
                )
            )
        else:
            direct.setdefault(d.index, {})[d.dimension] = (d, decide(state, config.policy))
    for dims in direct.values():
        combined = combine_counter(
            {k: v[1] for k, v in dims.items()}, {k: v[0].provisioned for k, v in dims.items()}
        )
        for name, (d, _) in dims.items():
            decision = combined[name]
            planned.append(
                (
                    Change(
                        d,
                        d.provisioned,
                        decision.capacity,
                        decision.reason,
                        decision.action,
                        UPDATE_TABLE,
                        decision.throttles_seen,
                    ),
                    decision,
                )
            )
    return planned
