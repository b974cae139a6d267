"""Runs in: scaler Lambda, broker Lambda, settle Lambda, workers (the user's own jobs, in
direct mode), workstation (simulator).

What a tick knows about a table: its dimensions, their limits, quota ledgers and
scalable targets. Plain data, filled in by `ddb_capacity_runtime.aws.discovery` (or
by the simulator)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .decreases import DecreaseLedger, utc
from .errors import shown, shown_text
from .floorplan import FloorPlan
from .memory import Memory
from .names import MAX_TABLE_QUOTA, UNITS, scope_label
from .table_limits import Limits
from .tags import BaseMin
from .validators import is_whole


@dataclass(frozen=True)
class TrackingPolicy:
    """A target-tracking policy as PutScalingPolicy takes it back: its name and the parts of
    its configuration kept when only its target value changes (cooldowns in seconds; None:
    not set)."""

    name: str
    metric: str
    scale_in_cooldown: int | None = None
    scale_out_cooldown: int | None = None
    disable_scale_in: bool | None = None


@dataclass(frozen=True)
class ScalableTarget:
    """A dimension's scalable target, as Application Auto Scaling describes it."""

    resource_id: str
    scalable_dimension: str
    min_capacity: int
    max_capacity: int
    target_tracking: bool
    target_percent: float | None = None
    """the target-tracking policy's TargetValue (a percentage), when it has one"""
    policy: TrackingPolicy | None = None
    """that policy, when it can be written back as it is (`TrackingPolicy`)"""

    @property
    def inverted(self) -> bool:
        """The target reports a minimum above its maximum: nothing sound can be decided
        under it, and its dimension is held until someone fixes it."""
        return self.min_capacity > self.max_capacity


@dataclass(frozen=True)
class Dimension:
    """One read or write dimension of a table (``index`` None) or of a GSI."""

    table: str
    index: str | None
    dimension: str
    provisioned: int
    ledger: DecreaseLedger
    last_increase: datetime | None
    limits: Limits
    target: ScalableTarget | None = None
    memory: Memory | None = None
    """under a scalable target: the state store's memory of the dimension's minimum, reconciled with
    the target's (its configured base, and what the library set)"""
    seen: tuple[int | None, int | None, int | None] = (None, None, None)
    """the state store's (base, set_to, intent) as read with the table: a move of the minimum goes
    ahead only while the store still says so"""
    plan: FloorPlan | None = None
    """the autopilot's plan of floors, read back from the state store; None without one"""
    keep: int = 0
    """no decrease below this: what the plan needs within the next half hour (0: no plan)"""
    reserve: int | None = None
    """decreases to keep for later today, from the plan's forecast (None: the configured)"""
    least_fall: int = 0
    """the capacity the smallest of the plan's falls ahead saves (0: not known)"""
    owned_target: float | None = None
    """the target value (a fraction) the scaler owns for the dimension's target-tracking policy and
    sets back when no plan aims higher; None: the policy is not the scaler's"""
    warm: int | None = None
    """its warm throughput (`warm_of`): a raise to at most this lands at once; None: not known, and
    then no raise is taken to land at once"""
    covered: bool = True
    """whether reserved capacity covers its units (`reservation.not_covered`): a dimension it
    does not cover is neither counted in the reservation floor nor held by it"""

    def within_warm(self, level: int) -> bool:
        """Whether a raise to ``level`` lands at once: at or below a known warm throughput
        (its partitions already serve it: no split, no update latency)."""
        return self.warm is not None and level <= self.warm

    @property
    def key(self) -> tuple[str, str | None, str]:
        return (self.table, self.index, self.dimension)


@dataclass
class ManagedTable:
    """A table the tick manages: its tags and the dimensions it decides."""

    name: str
    arn: str
    tags: dict[str, str]
    dimensions: list[Dimension] = field(default_factory=list)
    indexes: list[str] = field(default_factory=list)  # every GSI, ACTIVE or not
    ignored_tags: int = 0  # library tags ignored as malformed or out of bounds
    plans_not_kept: int = 0  # the autopilot's plans the state store could not keep this hour
    bad_targets: int = 0  # dimensions held because their scalable target's min is above max
    legacy_memories: dict[tuple[str | None, str], BaseMin] = field(default_factory=dict)
    """0.4's state tags (a remembered minimum, a plan) still on the table: moved into the state
    store, then removed"""
    legacy_tags: list[str] = field(default_factory=list)
    tag_limits: dict[str, float] = field(default_factory=dict)
    """the limits the table's tags set (`tags.parse_tags`), checked against each dimension's
    consumption once it is known (the tick's ``refuse_lowering_tags``)"""
    refused_tags: int = 0  # min or max tags not obeyed: they would lower a limit below the load
    refused_tuned: int = 0  # tuned target values not obeyed: outside the allowed targets
    targets_not_owned: int = 0  # owned target values with no policy the scaler can write
    class_unknown: bool = False
    """its table class could not be read (`table_class`): none of its units is taken for covered by
    reserved capacity, and with a reservation it is a failure"""
    began: datetime | None = None
    """when it last began to be provisioned (`began_of`): its witness may not be published yet
    for a while after (`core.delivery.NEW_MINUTES`); None: not known"""


def named_gsis(where: str, gsis: object) -> list[tuple[str, Mapping[str, Any]]]:
    """The GSIs of a DescribeTable answer's ``GlobalSecondaryIndexes`` (untrusted), each
    with its name; ValueError, naming ``where``, when they are not a list of entries each
    with an IndexName (one without it would be taken for the table itself)."""
    named: list[tuple[str, Mapping[str, Any]]] = []
    for gsi in gsis if isinstance(gsis, list) else [None]:
        name = gsi.get("IndexName") if isinstance(gsi, Mapping) else None
        if not (isinstance(gsi, Mapping) and isinstance(name, str) and name):
            raise ValueError(
                f"{where}: GlobalSecondaryIndexes is {shown(gsis, 200)}; "
                "expected a list of indexes, each with its IndexName"
            )
        named.append((name, gsi))
    return named


def provisioned_units(
    table: str, index: str | None, spec: Mapping[str, Any]
) -> tuple[Mapping[str, Any], dict[str, int]]:
    """The ``ProvisionedThroughput`` of the entry ``spec`` of the table (``index`` None) or
    of one GSI in ``table``'s DescribeTable answer (untrusted), and its read and write units
    by dimension; ValueError, naming them, when it is not an object of whole numbers from
    0 to `MAX_TABLE_QUOTA` (a forged or absurd one would be counted in the Region's total
    that a reservation keeps, and let other tables fall below it)."""
    where = f"DescribeTable {table} {scope_label(index)}"
    throughput = spec.get("ProvisionedThroughput")
    if not isinstance(throughput, Mapping):
        raise ValueError(f"{where}: ProvisionedThroughput is {shown(throughput, 200)}")
    units: dict[str, int] = {}
    for dim, field_name in UNITS.items():
        value = throughput.get(field_name)
        if not is_whole(value, 0, MAX_TABLE_QUOTA):
            raise ValueError(
                f"{where}: {field_name} is {shown(value, 40)}; expected a whole number "
                f"from 0 to {MAX_TABLE_QUOTA:,}"
            )
        units[dim] = value
    return throughput, units


def spec_of(description: Mapping[str, Any], index: str | None) -> Mapping[str, Any]:
    """The entry of the table (``index`` None: DescribeTable's ``Table`` itself) or of one
    GSI in DescribeTable's ``Table``. Raises KeyError for an unknown index."""
    if index is None:
        return description
    for gsi in description.get("GlobalSecondaryIndexes", []):
        if gsi["IndexName"] == index:
            found: Mapping[str, Any] = gsi
            return found
    raise KeyError(f"index {index!r} not found on table {description.get('TableName')!r}")


def units_of(description: Mapping[str, Any], index: str | None) -> dict[str, int]:
    """The read and write units of the table (``index`` None) or of one GSI, by dimension,
    from DescribeTable's ``Table`` (`provisioned_units`). Raises KeyError for an unknown
    index, ValueError for a capacity that is not sound."""
    name = description.get("TableName")
    named = shown_text(name, 255) if isinstance(name, str) else shown(name, 60)
    return provisioned_units(named, index, spec_of(description, index))[1]


WARM_UNITS = {"read": "ReadUnitsPerSecond", "write": "WriteUnitsPerSecond"}
"""DescribeTable's ``WarmThroughput`` fields, per dimension."""
WARM_ACTIVE = "ACTIVE"
"""The one ``WarmThroughput.Status`` whose values are in force: while it is being raised
(``UPDATING``) the partitions may not serve the new values yet."""


def warm_of(spec: Mapping[str, Any], dimension: str, quota: int) -> int | None:
    """The warm throughput of one dimension of the table or GSI whose DescribeTable entry
    is ``spec`` (`spec_of`): the units per second its partitions serve at once, so a
    raise to at most this lands at once. Untrusted input: None (unknown) unless
    ``WarmThroughput`` is an object whose ``Status`` is ``ACTIVE`` and whose field for
    ``dimension`` is a whole number from 1 to ``quota`` (the table quota: a value above
    it is not one the library may provision). Unknown never lowers capacity nor enlarges
    a raise: every caller treats None as "no raise lands at once"."""
    warm = spec.get("WarmThroughput")
    if not isinstance(warm, Mapping) or warm.get("Status") != WARM_ACTIVE:
        return None
    value = warm.get(WARM_UNITS[dimension])
    if not is_whole(value, 1, quota):
        return None
    return value


STANDARD = "STANDARD"
STANDARD_IA = "STANDARD_INFREQUENT_ACCESS"
TABLE_CLASSES = (STANDARD, STANDARD_IA)
"""DynamoDB's table classes, as DescribeTable and CloudFormation name them."""


def table_class(description: object) -> str | None:
    """The table class DescribeTable's ``Table`` (untrusted) gives: Standard when it says none
    (a table that never changed class may have no ``TableClassSummary``), one of
    `TABLE_CLASSES`, or None when what it says cannot be read."""
    if not isinstance(description, Mapping):
        return None
    summary = description.get("TableClassSummary")
    if summary is None:
        return STANDARD
    named = summary.get("TableClass") if isinstance(summary, Mapping) else None
    return named if named in TABLE_CLASSES else None


def began_of(description: Mapping[str, Any]) -> datetime | None:
    """When the table of DescribeTable's ``Table`` (untrusted) last began to be
    provisioned: the later of its ``CreationDateTime`` and its last switch to on-demand
    (``BillingModeSummary.LastUpdateToPayPerRequestDateTime``: a provisioned table switched
    back since), of those that are timestamps; None when neither is. Its GSIs: none
    reports its own creation, and only ACTIVE ones are managed, so the table's."""
    billing = description.get("BillingModeSummary")
    switched = (
        billing.get("LastUpdateToPayPerRequestDateTime") if isinstance(billing, Mapping) else None
    )
    times = [t for t in (description.get("CreationDateTime"), switched) if isinstance(t, datetime)]
    return max(times, key=utc, default=None)


def tags_of(listing: object) -> dict[str, str] | None:
    """A tag listing (``[{"Key": k, "Value": v}, ...]``) as a dict; None when it is not one
    (an entry that is not a mapping of a string key to a string value): the table's tags are
    then unknown, never some of them."""
    if not isinstance(listing, Iterable) or isinstance(listing, str | bytes | Mapping):
        return None
    tags: dict[str, str] = {}
    for t in listing:
        key = t.get("Key") if isinstance(t, Mapping) else None
        value = t.get("Value") if isinstance(t, Mapping) else None
        if not (isinstance(key, str) and isinstance(value, str)):
            return None
        tags[key] = value
    return tags
