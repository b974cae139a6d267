"""Runs in: settle Lambda.

What a live table's traffic needs, read before the settle step lowers it on an Update.

CloudFormation set the table to its new high-water mark in this deploy, but the table was
serving traffic: auto scaling may have had it at 800 for its load when the mark went to
2,000. So an auto-scaled dimension (a target with a ``TargetUtilization``) is lowered no
further than its consumed capacity over the last `TRAFFIC_MINUTES` needs at that target
(`settle_plan.need_of`). Where CloudWatch cannot vouch for that traffic (a minute unknown,
the read failed or was throttled) or the dimension was throttled (what it would consume is
not known), the dimension is not lowered at all: it stays at its mark, for auto scaling
to lower. Unknown data never lowers capacity, and never fails the deploy either.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from ..aws import metrics
from ..aws.error_codes import describe_error
from ..core.errors import shown_text
from ..core.plan import delivered
from ..core.series import Series, window
from ..core.settings import LATE_MINUTES, late_minutes
from .settle_plan import SettleTarget, need_of

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient

TRAFFIC_MINUTES = 15
"""The minutes of consumed capacity a live dimension's need is read from: at least this many
delivered ones, as the scaler's decreases need (its scale-down span)."""
METRIC_LAG_MINUTES = 2
"""The newest minutes CloudWatch may not have finished (the scaler's default
``SCALER_METRIC_LAG_MINUTES``): read besides `TRAFFIC_MINUTES` and `LATE_MINUTES`, so the
minutes not delivered yet are left out, never taken for idle (`core.plan.delivered`)."""
REASON_CHARS = 300
"""The most characters of a reason a ``settle-left`` event carries (an AWS error's text)."""

Dim = tuple[str | None, str]


@dataclass(frozen=True)
class Needs:
    """What the traffic of the targets read says: ``floors``, the capacity each dimension
    whose traffic is known needs (at most its mark), with its ``peaks`` (consumed units per
    second); ``left``, why each other one must stay at its mark. ``minimums``: each
    dimension's scalable target's MinCapacity now, once read (`minimums.live_minimums`);
    ``held``: the level of each held dimension's active holds, once read (`live_holds`)."""

    floors: dict[Dim, int] = field(default_factory=dict)
    peaks: dict[Dim, float] = field(default_factory=dict)
    left: dict[Dim, str] = field(default_factory=dict)
    minimums: dict[Dim, int] = field(default_factory=dict)
    held: dict[Dim, int] = field(default_factory=dict)

    @property
    def lowest(self) -> dict[Dim, int]:
        """How low each dimension not ``left`` may be lowered: what its traffic needs, its
        minimum now, or its holds' level, whichever is highest (the floors
        `settle_plan.plan_settle` takes); a dimension with none of them is not here."""
        keys = dict.fromkeys([*self.floors, *self.minimums, *self.held])
        return {
            key: max(self.floors.get(key, 0), self.minimums.get(key, 0), self.held.get(key, 0))
            for key in keys
            if key not in self.left
        }


def traffic_needs(
    cloudwatch: Callable[[], CloudWatchClient],
    table: str,
    targets: Sequence[SettleTarget],
    now: datetime,
) -> Needs:
    """The needs of the auto-scaled ``targets`` of ``table`` (those with a target
    utilization; the others are not read, and lowered to their operating capacity as
    configured), from one GetMetricData call over the minutes before ``now``
    (``cloudwatch`` makes the client). The table's consumed reads witness the minutes
    CloudWatch has delivered (`metrics.fetch`), and so do its other dimensions read in the
    same call. Never raises: a read that fails leaves every dimension it read at its mark."""
    read = [t for t in targets if t.target_utilization is not None]
    if not read:
        return Needs()
    start, end = window(now, TRAFFIC_MINUTES + LATE_MINUTES, METRIC_LAG_MINUTES)
    keys = [(table, t.index, t.dimension) for t in read]
    failures: list[str] = []
    try:
        series = metrics.fetch(
            cloudwatch(),
            keys,
            start,
            end,
            errors=failures,
            throttled=failures,
            witness=table,
            arriving=late_minutes(METRIC_LAG_MINUTES),
        )
    except Exception as exc:  # a client not made, an answer not read: nothing is known
        failures.append(f"GetMetricData: {describe_error(exc)}")
        series = {}
    needs = Needs()
    for t, key in zip(read, keys, strict=True):
        s = series.get(key)
        known, why = _known(s, failures) if s is not None else (None, None)
        if known is None:
            reason = why or f"its traffic could not be read ({'; '.join(failures)})"
            needs.left[t.key] = shown_text(reason, REASON_CHARS)
            continue
        peak = max(known.consumed)
        needs.peaks[t.key] = peak
        needs.floors[t.key] = min(need_of(t, peak), t.high_water_mark)
    return needs


def _known(series: Series, failures: list[str]) -> tuple[Series | None, str | None]:
    """The minutes of ``series`` delivered (`core.plan.delivered`), when they can say what
    its dimension needs: every minute up to the newest delivered one known, at least
    `TRAFFIC_MINUTES` of them, and none throttled; else None and why not."""
    if failures and all(series.unknown):
        return None, f"its traffic could not be read ({'; '.join(failures)})"
    known, stopped = delivered(series, METRIC_LAG_MINUTES)
    minutes = len(series.minute_starts)
    if stopped or known.unknown_minutes or len(known.consumed) < TRAFFIC_MINUTES:
        unknown = sum(series.unknown)
        return None, (
            f"CloudWatch cannot vouch for {unknown} of its last {minutes} minutes of traffic "
            "(not delivered, not complete, or no datapoint of the table at all)"
        )
    if any(t > 0 for t in known.throttles):
        return None, (
            f"it was throttled in its last {len(known.consumed)} minutes: what it would "
            "consume is not known"
        )
    return known, None
