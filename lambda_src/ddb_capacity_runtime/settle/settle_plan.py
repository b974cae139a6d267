"""Runs in: settle Lambda.

What the settle step of PROVISION_THEN_SETTLE changes: pure.

A dimension is lowered only while its provisioned capacity still equals the high-water mark
that CloudFormation provisioned, so a retried or repeated event spends no second decrease
and never cuts live capacity.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.names import UNITS
from ..core.tables import throughput_of

READ, WRITE = "read", "write"
SETTLE_WAIT_S = 1800
"""How long the settle step waits for its table and GSIs to be ACTIVE, from the event's first call,
before it fails the deploy (the provider's own time limit is a little longer)."""


@dataclass(frozen=True)
class SettleTarget:
    """One dimension to settle: ``index`` is None for the base table."""

    index: str | None
    dimension: str
    high_water_mark: int
    operating: int


def parse_targets(raw: Any) -> list[SettleTarget]:
    """Read the targets from custom-resource properties (CloudFormation sends strings)."""
    if not isinstance(raw, list):
        raise ValueError(f"Targets must be a list; got {type(raw).__name__}")
    targets = []
    for i, item in enumerate(raw):
        dimension = item.get("Dimension")
        if dimension not in UNITS:
            raise ValueError(f"Targets[{i}].Dimension must be read or write; got {dimension!r}")
        targets.append(
            SettleTarget(
                index=item.get("Index") or None,
                dimension=dimension,
                high_water_mark=int(item["HighWaterMark"]),
                operating=int(item["Operating"]),
            )
        )
    return targets


def plan_settle(
    description: Mapping[str, Any], targets: list[SettleTarget]
) -> dict[str, Any] | None:
    """The UpdateTable arguments that settle ``targets``, or None when nothing is left.

    ``description`` is DescribeTable's ``Table``. Only dimensions still at their
    high-water mark, and whose mark is above the operating capacity, are lowered; every
    other dimension of a touched table or GSI is sent unchanged (UpdateTable needs both).
    """
    wanted: dict[str | None, dict[str, int]] = {}
    for t in targets:
        current = int(throughput_of(description, t.index)[UNITS[t.dimension]])
        if t.high_water_mark > t.operating and current == t.high_water_mark:
            wanted.setdefault(t.index, {})[t.dimension] = t.operating
    if not wanted:
        return None

    def throughput(index: str | None) -> dict[str, int]:
        now = throughput_of(description, index)
        return {UNITS[d]: int(wanted[index].get(d, now[UNITS[d]])) for d in (READ, WRITE)}

    update: dict[str, Any] = {"TableName": description["TableName"]}
    if None in wanted:
        update["ProvisionedThroughput"] = throughput(None)
    gsi_updates = [
        {"Update": {"IndexName": name, "ProvisionedThroughput": throughput(name)}}
        for name in sorted(n for n in wanted if n is not None)
    ]
    if gsi_updates:
        update["GlobalSecondaryIndexUpdates"] = gsi_updates
    return update
