"""Runs in: scaler Lambda, workstation (simulator).

Target tracking's target value, owned by the autopilot (``SCALER_OWNED_TARGETS``; the
construct's ``own_target``). A dimension whose target-tracking policy the scaler owns aims,
while a plan's floor is in force, at the plan's aim (`forecast.apply_plans` puts it
in the dimension's limits: at most 90 %, higher as the forecast was right), and otherwise at
its configured target value. So target tracking scales in as far as the forecast allows,
where at its configured 70 % it would keep the padding the plan does not need.
"""

from __future__ import annotations

from dataclasses import dataclass

from .tables import Dimension, ManagedTable

__all__ = ["Retarget", "retargets"]

LOWEST, HIGHEST = 20, 90
"""Application Auto Scaling's range for DynamoDB target values, in percent."""


@dataclass(frozen=True)
class Retarget:
    """One owned policy whose target value is to change: from ``old`` (percent; None when
    its own is not one the scaler can read) to ``new``."""

    dimension: Dimension
    old: float | None
    new: int


def retargets(table: ManagedTable) -> list[Retarget]:
    """The owned policies of ``table`` (as the plans made it: `forecast.apply_plans`)
    whose target value is not what the dimension aims at now."""
    out = []
    for d in table.dimensions:
        if d.owned_target is None or d.target is None or d.target.policy is None:
            continue
        new = min(HIGHEST, max(LOWEST, round(d.limits.target_utilization * 100)))
        old = d.target.target_percent
        if old is None or abs(old - new) >= 0.5:
            out.append(Retarget(d, old, new))
    return out
