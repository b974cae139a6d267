"""Runs in: workstation (``ddb-capacity advise --report``), advisor worker Lambda.

A table's current capacity settings, as DynamoDB and Application Auto Scaling say they are
now, named as the simulator's policies, and their figures on the table's history.

Per dimension (the table's read and write, each GSI's): on-demand when the table's billing
mode is PAY_PER_REQUEST; ``stock:T`` when the dimension has a scalable target with a
target-tracking policy at T % (a whole number from 20 to 90); ``fixed:N`` when it has no
scalable target, at its provisioned units N. Anything else (a target without target
tracking, a target value that is not a whole percent, units that are not a positive whole
number, an answer not shaped as documented, a call refused) is unknown: its figures are
never guessed, and the fleet report shows its savings as unknown, not as zero.

When every dimension has the same policy, that policy runs over the whole history, as
``advise`` runs its candidates. Otherwise each group of dimensions with one policy runs over
its own dimensions and the groups' figures are added (minimum to minimum, median to
median, maximum to maximum): an approximation, since it leaves out that the dimensions of
one table wait for each other's updates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ddb_capacity_runtime.aws.discovery import table_targets
from ddb_capacity_runtime.core.names import resource_id, scalable_dimension
from ddb_capacity_runtime.core.validators import is_whole

from .simulator.candidates import ON_DEMAND, Candidate
from .simulator.ensemble import Spread
from .simulator.params import ModelParams
from .simulator.prices import Prices
from .simulator.trace import Key, Trace, key_label
from .simulator.tune_runs import place
from .tool_errors import reason_of

__all__ = ["Current", "current_figures", "read_current"]


@dataclass(frozen=True)
class Current:
    """What a table's capacity is set to now: per dimension, a simulator policy (empty when
    unknown), and ``reason`` when any is unknown; ``ranges``: a scalable target's minimum
    and maximum, which the policy runs within."""

    policies: dict[Key, str]
    reason: str = ""
    ranges: dict[Key, tuple[int, int]] = field(default_factory=dict)

    @property
    def known(self) -> bool:
        return not self.reason and bool(self.policies)

    @property
    def label(self) -> str:
        """``stock:70``, or each group with its dimensions: ``fixed:10 (read, write); ...``."""
        if not self.known:
            return "unknown"
        groups = _groups(self)
        names = {g: _name(*g) for g in groups}
        if len(groups) == 1:
            return next(iter(names.values()))
        return "; ".join(
            f"{names[g]} ({', '.join(key_label(k) for k in keys)})" for g, keys in groups.items()
        )


Group = tuple[str, tuple[int, int] | None]


def _groups(current: Current) -> dict[Group, list[Key]]:
    """The dimensions by policy and range: each group runs as one."""
    groups: dict[Group, list[Key]] = {}
    for key, policy in current.policies.items():
        groups.setdefault((policy, current.ranges.get(key)), []).append(key)
    return groups


def _name(policy: str, limits: tuple[int, int] | None) -> str:
    return policy if limits is None else f"{policy} [{limits[0]}..{limits[1]}]"


def _units(value: object, max_capacity: int) -> int | None:
    return value if is_whole(value, 1, max_capacity) else None


def _provisioned(description: Mapping[str, Any], index: str | None) -> Mapping[str, Any]:
    if index is None:
        through = description.get("ProvisionedThroughput")
    else:
        gsis = description.get("GlobalSecondaryIndexes")
        found = [
            g
            for g in (gsis if isinstance(gsis, list) else [])
            if isinstance(g, dict) and g.get("IndexName") == index
        ]
        through = found[0].get("ProvisionedThroughput") if found else None
    return through if isinstance(through, dict) else {}


def read_current(
    autoscaling: Any, table: str, description: Any, keys: Sequence[Key], max_capacity: int
) -> Current:
    """The current settings of ``keys`` (the dimensions of the table's history), from
    DescribeTable's answer for it (``description``, untrusted) and, for a provisioned table,
    its and its GSIs' scalable targets and target-tracking policies. A failed call makes
    them unknown, with the reason."""
    try:
        if not isinstance(description, dict):
            return Current({}, "DescribeTable: the answer has no Table")
        mode = description.get("BillingModeSummary", {}).get("BillingMode", "PROVISIONED")
        if mode == "PAY_PER_REQUEST":
            return Current(dict.fromkeys(keys, ON_DEMAND))
        if mode != "PROVISIONED":
            return Current({}, f"DescribeTable: billing mode {mode!r} is not known")
        targets = table_targets(autoscaling, table, description)
    except Exception as exc:  # what it could not read is unknown, never zero
        return Current({}, reason_of(exc))
    policies: dict[Key, str] = {}
    ranges: dict[Key, tuple[int, int]] = {}
    for index, dimension in keys:
        target = targets.get((resource_id(table, index), scalable_dimension(index, dimension)))
        where = key_label((index, dimension))
        if target is None:
            given = _provisioned(description, index).get(f"{dimension.capitalize()}CapacityUnits")
            units = _units(given, max_capacity)
            if units is None:
                return Current(
                    {},
                    f"{where}: provisioned units {given!r}, not a whole number from 1 to "
                    f"{max_capacity} (the model's maximum capacity)",
                )
            policies[(index, dimension)] = f"fixed:{units}"
            continue
        percent = target.target_percent
        if percent is None or percent != int(percent):
            return Current(
                {}, f"{where}: auto scaling without a target-tracking target of a whole percent"
            )
        low, high = target.min_capacity, target.max_capacity
        if not 1 <= low <= high <= max_capacity:
            return Current(
                {},
                f"{where}: a scalable target from {low} to {high}, not within 1 to "
                f"{max_capacity} (the model's maximum capacity)",
            )
        policies[(index, dimension)] = f"stock:{int(percent)}"
        ranges[(index, dimension)] = (low, high)
    return Current(policies, ranges=ranges)


def current_figures(
    current: Current,
    trace: Trace,
    placed: Sequence[Candidate],
    settings: Sequence[ModelParams],
    prices: Prices | None,
    tick: int,
    workers: int | None,
    score_from: int | None = None,
) -> Candidate | None:
    """The current settings' refused units and cost over ``trace`` (None when unknown),
    counted from minute ``score_from`` on as the ``placed`` candidates were: the
    candidate already ``placed`` when it is one (no scalable target's range to keep), else
    its policy run under the same ``settings``, within its targets' minimum and maximum;
    groups of dimensions with different policies or ranges run apart and are added."""
    if not current.known:
        return None
    groups = {g: k for g, k in _groups(current).items() if k}
    whole = len(groups) == 1 and set(next(iter(groups.values()))) == set(trace.demand)
    if whole and next(iter(groups))[1] is None:
        [(policy, _)] = groups
        for c in placed:
            if c.policy == policy:
                return replace(c, frontier=False)
    parts = [
        place(
            _only(trace, keys),
            [policy],
            _within(settings, limits),
            prices,
            tick,
            workers,
            score_from,
        )[0]
        for (policy, limits), keys in groups.items()
    ]
    if whole:
        return replace(parts[0], frontier=False)
    return Candidate(
        current.label,
        _added([c.throttled_requests for c in parts]),
        _added([c.cost_usd for c in parts]),
        running_usd=sum(c.running_usd for c in parts),
    )


def _within(settings: Sequence[ModelParams], limits: tuple[int, int] | None) -> list[ModelParams]:
    """``settings`` with a scalable target's minimum and maximum, when it has them."""
    if limits is None:
        return list(settings)
    return [replace(s, min_capacity=limits[0], max_capacity=limits[1]) for s in settings]


def _only(trace: Trace, keys: Sequence[Key]) -> Trace:
    """``trace`` with only the dimensions ``keys``."""
    ranges = trace.key_range
    return replace(
        trace,
        demand={k: trace.demand[k] for k in keys},
        key_range=None if ranges is None else {k: v for k, v in ranges.items() if k in keys},
    )


def _added(spreads: Sequence[Spread]) -> Spread:
    return Spread(
        sum(s.min for s in spreads), sum(s.median for s in spreads), sum(s.max for s in spreads)
    )
