"""Runs in: settle Lambda.

What the settle step of PROVISION_THEN_SETTLE changes: pure.

A dimension is lowered only where CloudFormation provably provisioned it at its high-water
mark in this deploy (`to_settle`: a table created, or a mark changed since the last deploy)
and while its capacity still equals that mark, so a retried or repeated event spends no
second decrease, and a table that auto scaling or a schedule holds at its mark is never
cut. On a live table (an Update), an auto-scaled dimension is lowered no further than what
its recent traffic needs at its target utilization (`need_of`); on a Create and an Update,
no dimension below its scalable target's MinCapacity now nor its holds (the floors
`plan_settle` is given). `update_request` makes one UpdateTable of any levels: the settle's,
or those a dimension is put back to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..core.names import MAX_TABLE_QUOTA, UNITS, is_table_name, whole_units
from ..core.policy import capacity_units
from ..core.tables import units_of
from ..core.tags import percent

READ, WRITE = "read", "write"
SETTLE_WAIT_S = 1800
"""How long the settle step waits for its table and GSIs to be ACTIVE, from the event's first call,
before it fails the deploy (the provider's own time limit is a little longer)."""
LOWER_BY_S = 300
"""How long before its SettleBy the settle step lowers a table at the latest: once it has
lowered, a later call reads the floors of what it lowered again, when the table is ACTIVE
again (a decrease takes seconds, a few minutes at worst), and puts back any whose floor rose.
A table ACTIVE later than that is left at its marks (counted)."""
FINISH_S = 40
"""How long past its SettleBy a step that has lowered still waits for its table to be ACTIVE
again (its own decrease in flight fails no deploy): the provider asks for 20 s more (its
total timeout, `SETTLE_WAIT_S` and this and two of its intervals), so the step answers
first."""
PROVISIONED_WITHIN_S = 3600
"""How long before the settle step's first call CloudFormation may have created the table for
the step to take it for this deploy's (a creation takes minutes; one that takes longer, an
import among them, is not settled, and stays at its marks)."""
SETTLE_LEFT = "SettleLeft"
"""The settle function's count of the dimensions it left at their high-water mark for want of
what bounds their lowering (their traffic, their minimum now or their holds: ``settle-left``),
or put back there when that rose while it lowered them (or could not be read again), per table
(dimension ``TableName``) and for the stack's settle step (`SETTLE_FUNCTION_DIMENSION`), which
the step's alarm watches."""
SETTLE_FUNCTION_DIMENSION = "SettleFunction"
"""The dimension of the settle step's counts that are not per table: the name of the settle
function that sends them, one a stack (the step has no state store to name its deployment)."""
PERMISSION_WAIT_S = 300
"""How long from the settle step's first call an ``AccessDeniedException`` is taken for its
permission possibly not yet in force, and asked again at the provider's next call: the step
waits for its table's grant (a policy of its own), but IAM takes seconds to apply it. A
denial after it fails the deploy."""


@dataclass(frozen=True)
class SettleTarget:
    """One dimension to settle: ``index`` is None for the base table. ``target_utilization``:
    its auto scaling's target, in percent (None: a fixed capacity, lowered to ``operating``
    as configured)."""

    index: str | None
    dimension: str
    high_water_mark: int
    operating: int
    target_utilization: float | None = None

    @property
    def key(self) -> tuple[str | None, str]:
        return self.index, self.dimension


def parse_targets(raw: Any) -> list[SettleTarget]:
    """Read the targets from custom-resource properties (CloudFormation sends strings):
    each an object of an ``Index`` (empty for the table), a ``Dimension`` and whole numbers
    of units, its ``HighWaterMark`` at least its ``Operating``, and optionally its auto
    scaling's ``TargetUtilization`` (a percentage from 20 to 90), no two of one dimension.
    Raises ValueError naming the field, the value and what is allowed."""
    if not isinstance(raw, list):
        raise ValueError(f"Targets must be a list; got {type(raw).__name__}")
    targets: list[SettleTarget] = []
    for i, item in enumerate(raw):
        where = f"Targets[{i}]"
        if not isinstance(item, Mapping):
            raise ValueError(f"{where} must be an object; got {type(item).__name__}")
        dimension = item.get("Dimension")
        if dimension not in UNITS:
            raise ValueError(f"{where}.Dimension must be read or write; got {dimension!r:.100}")
        index = item.get("Index") or None
        if index is not None and not is_table_name(index):
            raise ValueError(f"{where}.Index must be empty or a GSI's name; got {index!r:.100}")
        mark, operating = _units(item, where, "HighWaterMark"), _units(item, where, "Operating")
        if mark < operating:
            raise ValueError(
                f"{where}.HighWaterMark must be at least its Operating ({operating}); got {mark}"
            )
        if any(t.key == (index, dimension) for t in targets):
            raise ValueError(f"{where}: a second target of {index or 'the table'} {dimension}")
        utilization = _utilization(item, where)
        targets.append(SettleTarget(index, dimension, mark, operating, utilization))
    return targets


def _utilization(item: Mapping[str, Any], where: str) -> float | None:
    """A target's ``TargetUtilization``: absent (None), or a percentage from 20 to 90, as
    decimal text in ASCII digits (as CloudFormation sends it) or a number."""
    raw = item.get("TargetUtilization")
    if raw is None:
        return None
    value = percent(raw)
    if value is None:
        raise ValueError(
            f"{where}.TargetUtilization must be a percentage from 20 to 90 (auto scaling's "
            f"target), or absent for a fixed capacity; got {raw!r:.100}"
        )
    return value


def _units(item: Mapping[str, Any], where: str, field: str) -> int:
    """A target's ``field``: a whole number of units from 1 to `MAX_TABLE_QUOTA`, as text of
    digits (as CloudFormation sends it) or a number."""
    raw = item.get(field)
    units = whole_units(raw)
    if units is not None:
        return units
    raise ValueError(
        f"{where}.{field} must be a whole number of units from 1 to {MAX_TABLE_QUOTA:,}; "
        f"got {raw!r:.100}"
    )


def to_settle(
    description: Mapping[str, Any],
    targets: Sequence[SettleTarget],
    previous: Sequence[SettleTarget] | None,
    since: float,
) -> list[SettleTarget]:
    """The ``targets`` CloudFormation provably provisioned at their mark in this deploy,
    which the step may settle. On an Update of the same table (``previous``: the last
    deploy's targets), those whose mark changed: the table's template capacity is the mark,
    so CloudFormation set them to it. A target new to the step is not (its dimension's
    template capacity may not have moved: a minimum lowered below an unchanged mark adds
    one), nor a dimension that DescribeTable says was raised lately (auto scaling's raises
    and a schedule's set that date too). Else (a Create, or a new table), every target of
    a table created at ``since`` (seconds since the epoch) or later, and none of an older
    one; ``description``'s date is untrusted (anything but a date is no evidence)."""
    if previous is not None:
        before = {t.key: t.high_water_mark for t in previous}
        return [t for t in targets if before.get(t.key, t.high_water_mark) != t.high_water_mark]
    created = description.get("CreationDateTime")
    if isinstance(created, datetime) and created.timestamp() >= since:
        return list(targets)
    return []


def at_mark(description: Mapping[str, Any], targets: Sequence[SettleTarget]) -> list[SettleTarget]:
    """The ``targets`` still at their high-water mark, and whose mark is above their
    operating capacity: those `plan_settle` may lower (``description``: DescribeTable's
    ``Table``)."""
    return [
        t
        for t in targets
        if t.high_water_mark > t.operating
        and units_of(description, t.index)[t.dimension] == t.high_water_mark
    ]


def need_of(target: SettleTarget, peak: float) -> int:
    """The capacity ``target`` needs for a ``peak`` of consumed units per second at its
    target utilization (at least 1 unit); ``peak`` is read from CloudWatch, and any
    finite value at least 0 is taken (a need above the mark leaves the mark)."""
    assert target.target_utilization is not None
    return max(1, capacity_units(peak / (target.target_utilization / 100)))


def settle_levels(
    description: Mapping[str, Any],
    targets: Sequence[SettleTarget],
    floors: Mapping[tuple[str | None, str], int] | None = None,
) -> dict[tuple[str | None, str], int]:
    """The level each of ``targets`` is lowered to (by index and dimension): only those
    still at their high-water mark, and whose mark is above their operating capacity
    (`at_mark`), each to its operating capacity, or to its floor in ``floors`` (what a live
    dimension's traffic needs, its minimum now, its holds' level) where that is higher; a
    floor at or above the mark leaves the dimension at its mark (it is not here)."""
    levels: dict[tuple[str | None, str], int] = {}
    for t in at_mark(description, targets):
        lowered = max(t.operating, (floors or {}).get(t.key, t.operating))
        if lowered < t.high_water_mark:
            levels[t.key] = lowered
    return levels


def plan_settle(
    description: Mapping[str, Any],
    targets: list[SettleTarget],
    floors: Mapping[tuple[str | None, str], int] | None = None,
) -> dict[str, Any] | None:
    """The UpdateTable arguments that settle ``targets`` (`settle_levels`), or None when
    nothing is left to lower. ``description`` is DescribeTable's ``Table``."""
    return update_request(description, settle_levels(description, targets, floors))


def update_request(
    description: Mapping[str, Any], levels: Mapping[tuple[str | None, str], int]
) -> dict[str, Any] | None:
    """The UpdateTable arguments that set each dimension of ``levels`` (by index and
    dimension) to its units, in one call that carries the table and every GSI together
    (None when ``levels`` is empty). Every other dimension of a touched table or GSI is
    sent unchanged (UpdateTable needs both), as ``description`` (DescribeTable's ``Table``)
    has it."""
    wanted: dict[str | None, dict[str, int]] = {}
    for (index, dimension), units in levels.items():
        wanted.setdefault(index, {})[dimension] = units
    if not wanted:
        return None

    def throughput(index: str | None) -> dict[str, int]:
        now = units_of(description, index)
        return {UNITS[d]: wanted[index].get(d, now[d]) for d in (READ, WRITE)}

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
