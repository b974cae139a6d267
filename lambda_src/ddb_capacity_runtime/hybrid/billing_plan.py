"""Runs in: on-demand switch Lambda.

What the on-demand switch decides, without I/O: a table's switch state (its switches to
on-demand, its provisioned levels and its scalable targets before the window) read and
written as JSON, checked as untrusted input; the level each dimension returns to (never
below what it had before the window); and the two UpdateTable requests.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..core.errors import shown
from ..core.names import MAX_TABLE_QUOTA
from ..core.tables import named_gsis, warm_of
from ..core.validators import is_number, is_whole

ON_DEMAND = "PAY_PER_REQUEST"
PROVISIONED = "PROVISIONED"
SUSPENDED = ("DynamicScalingInSuspended", "DynamicScalingOutSuspended", "ScheduledScalingSuspended")
"""The three parts of a scalable target's suspended state."""
ALL_SUSPENDED = dict.fromkeys(SUSPENDED, True)
UNITS = {"read": "ReadCapacityUnits", "write": "WriteCapacityUnits"}


@dataclass(frozen=True)
class Target:
    """A scalable target as it was before the window: restored exactly at its end."""

    resource_id: str
    dimension: str
    bounds: tuple[int, int]
    suspended: Mapping[str, bool]

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> Target:
        """A DescribeScalableTargets entry (or a stored one), checked: ValueError otherwise."""
        rid, dim = raw.get("ResourceId"), raw.get("ScalableDimension")
        low, high = raw.get("MinCapacity"), raw.get("MaxCapacity")
        state = raw.get("SuspendedState") or {}
        if not (isinstance(rid, str) and isinstance(dim, str) and isinstance(state, Mapping)):
            raise ValueError(f"scalable target: got {shown(raw, 200)}")
        if not (is_whole(low, 0) and is_whole(high, 1) and low <= high):
            raise ValueError(f"scalable target {rid} {dim}: min {low!r}, max {high!r}")
        return cls(rid, dim, (low, high), {k: state.get(k) is True for k in SUSPENDED})

    def as_json(self) -> dict[str, Any]:
        return {
            "ResourceId": self.resource_id,
            "ScalableDimension": self.dimension,
            "MinCapacity": self.bounds[0],
            "MaxCapacity": self.bounds[1],
            "SuspendedState": dict(self.suspended),
        }


@dataclass(frozen=True)
class SwitchState:
    """A table's switch state: ``billing`` as the switch left it, its switches to on-demand
    (seconds since the epoch), and while on-demand: the window, when it ends, the
    provisioned levels before it (``"<index or ''>|read"`` to units) and its targets then."""

    billing: str = PROVISIONED
    switches: tuple[int, ...] = ()
    window: str = ""
    until: float = 0.0
    levels: Mapping[str, int] = field(default_factory=dict)
    targets: tuple[Target, ...] = ()
    plan_day: int = -1
    """Learned windows: the day (UTC, from the epoch) ``plan`` is for (-1: none learned)."""
    plan: tuple[bool, ...] = ()
    """Learned windows: the 24 hours of ``plan_day``, whether each runs on-demand."""
    returns: Mapping[int, Mapping[str, int]] = field(default_factory=dict)
    """Learned windows: per hour a window of ``plan`` ends at, the level each dimension
    (``"<index or ''>|read"``) returns at, where learned (`core.on_demand_hours.return_level`)."""
    back: Mapping[str, int] = field(default_factory=dict)
    """While on-demand by a learned window: the levels it returns at (from ``returns``)."""
    skipped_until: float = 0.0
    """Learned windows: the end of a window skipped at DynamoDB's rolling limit (not started
    later in its run)."""

    def as_text(self) -> str:
        return json.dumps(
            {
                "billing": self.billing,
                "switches": list(self.switches),
                "window": self.window,
                "until": self.until,
                "levels": dict(self.levels),
                "targets": [t.as_json() for t in self.targets],
                "plan": {
                    "day": self.plan_day,
                    "hours": list(self.plan),
                    "returns": {str(h): dict(v) for h, v in self.returns.items()},
                },
                "back": dict(self.back),
                "skipped_until": self.skipped_until,
            },
            sort_keys=True,
        )

    def provisioned(self) -> SwitchState:
        """Back to provisioned: the history kept, the window's state dropped."""
        return replace(
            self, billing=PROVISIONED, window="", until=0.0, levels={}, targets=(), back={}
        )


def parse_state(text: str | None) -> SwitchState:
    """A stored switch state (untrusted JSON); none yet: the empty state. ValueError for
    anything malformed: the switch then changes nothing (unknown data lowers nothing)."""
    if text is None:
        return SwitchState()
    raw = json.loads(text)
    if not isinstance(raw, dict) or raw.get("billing") not in (ON_DEMAND, PROVISIONED):
        raise ValueError(f"switch state: got {shown(raw, 200)}")
    switches, levels = raw.get("switches"), raw.get("levels")
    if not isinstance(switches, list) or not all(is_whole(t, 0) for t in switches):
        raise ValueError(f"switch state: switches {shown(switches, 200)}")
    if not isinstance(levels, dict) or not all(is_whole(v, 1) for v in levels.values()):
        raise ValueError(f"switch state: levels {shown(levels, 200)}")
    until = raw.get("until")
    if not is_number(until):
        raise ValueError(f"switch state: until {shown(until)}")
    targets = raw.get("targets")
    if not isinstance(targets, list):
        raise ValueError(f"switch state: targets {shown(targets, 200)}")
    day, hours, returns = _plan(raw.get("plan", {"day": -1, "hours": []}))
    back = _levels("back", raw.get("back", {}))
    skipped = raw.get("skipped_until", 0.0)
    if not is_number(skipped):
        raise ValueError(f"switch state: skipped_until {shown(skipped)}")
    return SwitchState(
        billing=raw["billing"],
        switches=tuple(int(t) for t in switches),
        window=str(raw.get("window", "")),
        until=float(until),
        levels={str(k): int(v) for k, v in levels.items()},
        targets=tuple(Target.of(t) for t in targets),
        plan_day=day,
        plan=hours,
        returns=returns,
        back=back,
        skipped_until=float(skipped),
    )


def _levels(what: str, raw: object) -> dict[str, int]:
    """Stored levels by dimension (``"<index or ''>|read"``), each a whole number of units."""
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and "|" in k and is_whole(v, 1, MAX_TABLE_QUOTA) for k, v in raw.items()
    ):
        raise ValueError(f"switch state: {what} {shown(raw, 200)}")
    return {str(k): int(v) for k, v in raw.items()}


def _plan(raw: object) -> tuple[int, tuple[bool, ...], dict[int, dict[str, int]]]:
    """A stored learned plan: its day, its 24 hours and its return levels (none: day -1)."""
    day = raw.get("day") if isinstance(raw, dict) else None
    hours = raw.get("hours") if isinstance(raw, dict) else None
    returns = raw.get("returns", {}) if isinstance(raw, dict) else None
    sound = isinstance(hours, list) and len(hours) in (0, 24) and isinstance(returns, dict)
    if not (is_whole(day, -1) and sound and all(isinstance(h, bool) for h in hours or [])):
        raise ValueError(f"switch state: plan {shown(raw, 200)}")
    assert isinstance(returns, dict)
    by_hour = {}
    for hour, levels in returns.items():
        if not (isinstance(hour, str) and hour.isdigit() and int(hour) < 24):
            raise ValueError(f"switch state: plan returns {shown(returns, 200)}")
        by_hour[int(hour)] = _levels("plan returns", levels)
    return int(day), tuple(hours or []), by_hour


def billing_of(description: Mapping[str, Any]) -> str:
    """A DescribeTable answer's billing mode (provisioned when it says none)."""
    summary = description.get("BillingModeSummary")
    mode = summary.get("BillingMode") if isinstance(summary, Mapping) else None
    return ON_DEMAND if mode == ON_DEMAND else PROVISIONED


def _specs(name: str, description: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The DescribeTable entries of the table ('') and of each of its GSIs, by index name."""
    gsis = named_gsis(f"DescribeTable {name}", description.get("GlobalSecondaryIndexes") or [])
    return {"": description, **dict(gsis)}


def _throughputs(name: str, description: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The table's and each GSI's ``ProvisionedThroughput``, by index name ('' the table)."""
    found = {k: spec.get("ProvisionedThroughput") for k, spec in _specs(name, description).items()}
    return {k: v if isinstance(v, Mapping) else {} for k, v in found.items()}


def levels_of(name: str, description: Mapping[str, Any]) -> dict[str, int]:
    """The provisioned levels of a provisioned table and its GSIs (DescribeTable's,
    untrusted): ValueError when one is not a whole number of 1 or more."""
    levels: dict[str, int] = {}
    for index, throughput in _throughputs(name, description).items():
        for dim, units in UNITS.items():
            value = throughput.get(units)
            if not is_whole(value, 1):
                where = "table" if not index else f"index {index}"
                raise ValueError(f"DescribeTable {name}: {where} {units} is {shown(value)}")
            levels[f"{index}|{dim}"] = value
    return levels


def back_levels(
    name: str,
    state: SwitchState,
    description: Mapping[str, Any],
    held: Mapping[str, int] | None = None,
    served: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """The level each dimension of the table (as DescribeTable lists its GSIs now) returns
    to: no lower than before the window, nor than its target's minimum then, nor than its
    active capacity holds' level (``held``, same keys), nor than the level it served at in
    the window's last minutes (``served``); for a learned window, nor than its return level
    (``state.back``, within its warm throughput where DescribeTable gives it); each at most
    its target's maximum then. A GSI made during the window: its target's minimum (1
    without one)."""
    held, served = held or {}, served or {}
    bounds = {(t.resource_id, t.dimension): t.bounds for t in state.targets}
    levels = {}
    for index, spec in _specs(name, description).items():
        rid = f"table/{name}" + (f"/index/{index}" if index else "")
        kind = "index" if index else "table"
        for dim, units in UNITS.items():
            least, most = bounds.get((rid, f"dynamodb:{kind}:{units}"), (1, MAX_TABLE_QUOTA))
            key = f"{index}|{dim}"
            warm = warm_of(spec, dim, MAX_TABLE_QUOTA) or MAX_TABLE_QUOTA
            back = min(state.back.get(key, 0), warm, most)
            floor = max(least, held.get(key, 0), back, min(served.get(key, 0), most))
            levels[key] = max(state.levels.get(key, 1), floor)
    return levels


def on_demand_request(
    name: str, description: Mapping[str, Any], max_read: int, max_write: int
) -> dict[str, Any]:
    """UpdateTable to on-demand, the table and each GSI capped at the window's maximums."""
    cap = {"MaxReadRequestUnits": max_read, "MaxWriteRequestUnits": max_write}
    indexes = [i for i in _throughputs(name, description) if i]
    request: dict[str, Any] = {
        "TableName": name,
        "BillingMode": ON_DEMAND,
        "OnDemandThroughput": cap,
    }
    if indexes:
        request["GlobalSecondaryIndexUpdates"] = [
            {"Update": {"IndexName": i, "OnDemandThroughput": cap}} for i in indexes
        ]
    return request


def provisioned_request(name: str, levels: Mapping[str, int]) -> dict[str, Any]:
    """UpdateTable back to provisioned at ``levels`` (`back_levels`)."""

    def throughput(index: str) -> dict[str, int]:
        return {units: levels[f"{index}|{dim}"] for dim, units in UNITS.items()}

    indexes = sorted({key.split("|")[0] for key in levels} - {""})
    request: dict[str, Any] = {
        "TableName": name,
        "BillingMode": PROVISIONED,
        "ProvisionedThroughput": throughput(""),
    }
    if indexes:
        request["GlobalSecondaryIndexUpdates"] = [
            {"Update": {"IndexName": i, "ProvisionedThroughput": throughput(i)}} for i in indexes
        ]
    return request


def with_last_switch(history: Sequence[float], description: Mapping[str, Any]) -> list[float]:
    """The switch history, with DescribeTable's last switch to on-demand added when the
    history does not have it (a switch made by someone else counts against the limit too)."""
    summary = description.get("BillingModeSummary")
    last = (
        summary.get("LastUpdateToPayPerRequestDateTime") if isinstance(summary, Mapping) else None
    )
    stamp = getattr(last, "timestamp", None)
    if not callable(stamp):
        return list(history)
    moment = float(stamp())
    if any(abs(moment - t) < 600 for t in history):  # ours: recorded before the call
        return list(history)
    return [*history, moment]
