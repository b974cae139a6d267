"""Runs in: CDK app (synth time).

GlobalTableCapacity: schedules, capacity windows and high-water marks for a provisioned
``aws_dynamodb.TableV2`` (``AWS::DynamoDB::GlobalTable``) and every replica.

The global table keeps its own auto scaling: its template's minimum, maximum and target
value, which ``AWS::DynamoDB::GlobalTable`` applies to each replica's scalable targets in
that replica's Region, and which a deploy of the table restores. This construct adds the
library's scheduled actions to those targets through one custom resource per Region
(`_replica_schedules`), validated as a ``ProvisionedTable``'s schedule is, and sets the
table's (and its GSIs') warm throughput to the high-water marks it is given. Write
capacity is one setting of every replica: a write schedule applies to all of them, read
schedules to every replica or to one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Unpack

import jsii
from aws_cdk import Annotations, Duration, IStableAnyProducer, Stack, TimeZone
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sns as sns
from constructs import Construct

from ddb_capacity_runtime.core.errors import CapacityConfigError, shown
from ddb_capacity_runtime.core.names import DIMENSIONS
from ddb_capacity_runtime.core.validators import is_whole
from ddb_capacity_runtime.global_tables.replica_actions import ACTION_PREFIX, MAX_ACTIONS
from ddb_capacity_runtime.schedule.entries import (
    WEEKDAYS,
    Event,
    ScheduleEntry,
    TableSchedule,
)

from ..common._alarm_sink import chosen_alarm_topic
from ..common._alarms import AlarmOptions, checked_alarm_options
from ..common._function_options import FunctionOptions, function_configs
from ..common._props import Checked, MetricProps, is_token, known_at_synth
from ..table._capacity import DEFAULT_TABLE_QUOTA, check_table_quota
from ..table._parts import capacity_window, known_entry
from ._replica import Replica, replica_of, shown_table
from ._replica_schedules import (
    ALARM_IDS,
    REPLICA_DEFAULTS,
    ReplicaScheduleResource,
    _ReplicaScheduleProvider,
    replica_provider,
)

STACK_REGION = "StackRegion"
"""How ids and messages name the stack's own Region when it is known at deploy time only."""
Ranges = dict[tuple[str | None, str], tuple[int, int]]


@dataclass(frozen=True)
class HighWaterMark:
    """The capacity units a dimension must take at once, from the first minute: the warm
    throughput of the table or of one GSI, in every replica.

    :param read: read units a second. Default: none (the table's own).
    :param write: write units a second. Default: none (the table's own).
    """

    read: int | None = None
    write: int | None = None


@dataclass(frozen=True)
class _Spec:
    """What the global table's template says: its replicas' Regions (the stack's first),
    its GSIs, each Region's auto scaling range per (index or None, dimension), and each
    Region's target value (percent) per autoscaled dimension of the table."""

    regions: tuple[str, ...]
    indexes: tuple[str, ...]
    ranges: Mapping[str, Ranges]
    targets: Mapping[str, Mapping[str, float]]


@dataclass(frozen=True, kw_only=True)
class GlobalTableCapacityProps:
    """`GlobalTableCapacity`'s props, each with its default: the keyword arguments of
    `GlobalTableCapacity`, which takes them as they are (and checks them)."""

    table: dynamodb.TableV2
    """A ``TableV2`` of this app with provisioned billing; each dimension a schedule or window
    is added to must be autoscaled (``Capacity.autoscaled``). Give it all its replicas
    before this construct."""

    high_water_mark: HighWaterMark | None = None
    """The table's warm throughput, in every replica. Default: none."""

    index_high_water_marks: Mapping[str, HighWaterMark] | None = None
    """Each GSI's, by index name. Default: none."""

    table_quota: int = DEFAULT_TABLE_QUOTA
    """The account's per-table capacity quota. Default: 40,000."""

    function_options: Mapping[str, FunctionOptions] | None = None
    """``{"ReplicaSchedules": FunctionOptions(...)}``: the stack's replica-schedule function
    (memory, timeout from 30 seconds to 15 minutes, log retention, architecture), shared by
    every GlobalTableCapacity of the stack. Default: 256 MB, 2 minutes."""

    alarm_topic: sns.ITopic | None = None
    """Where the replica-schedule function's errors alarm goes (shared by every
    GlobalTableCapacity of the stack, as the function is: give them the same). Default: None,
    it opens an OpsItem in OpsCenter."""

    alarm_options: Mapping[str, AlarmOptions] | None = None
    """``{"Errors": AlarmOptions(...)}``. Default: on, 1 error in 5 minutes."""


class GlobalTableCapacity(Construct):
    """Schedules, windows and high-water marks for a provisioned ``TableV2`` and its
    replicas.

    Example::

        orders = dynamodb.TableV2(self, "Orders", partition_key=...,
            billing=dynamodb.Billing.provisioned(
                read_capacity=dynamodb.Capacity.autoscaled(max_capacity=1000),
                write_capacity=dynamodb.Capacity.autoscaled(max_capacity=500)),
            replicas=[dynamodb.ReplicaTableProps(region="eu-west-1")])
        capacity = GlobalTableCapacity(self, "OrdersCapacity", table=orders,
            high_water_mark=HighWaterMark(write=2000))
        capacity.add_capacity_window("launch", dimension="write", capacity=400,
            start="09:00", duration=Duration.hours(2), time_zone="Europe/Paris")

    Its props, each with its default and what it does, are the fields of
    `GlobalTableCapacityProps`: the keyword arguments here.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        table: dynamodb.TableV2,
        high_water_mark: HighWaterMark | None = GlobalTableCapacityProps.high_water_mark,
        index_high_water_marks: Mapping[str, HighWaterMark] | None = (
            GlobalTableCapacityProps.index_high_water_marks
        ),
        table_quota: int = GlobalTableCapacityProps.table_quota,
        function_options: Mapping[str, FunctionOptions] | None = (
            GlobalTableCapacityProps.function_options
        ),
        alarm_topic: sns.ITopic | None = GlobalTableCapacityProps.alarm_topic,
        alarm_options: Mapping[str, AlarmOptions] | None = GlobalTableCapacityProps.alarm_options,
    ) -> None:
        super().__init__(scope, id)
        self._where = f"GlobalTableCapacity {self.node.path}"
        self.table_quota = check_table_quota(self._where, table_quota)
        self.table = _checked_table(self._where, table)
        self._managed_once(table)
        self._spec = _spec_of(self._where, table)
        self._warm(high_water_mark, dict(index_high_water_marks or {}))
        provider = self._provider = self._provider_of(function_options, alarm_topic, alarm_options)
        self.alarm_topic = provider.alarm_config.topic
        """Where the stack's replica-schedule alarms go."""
        self.alarms = provider.alarms
        """The stack's replica-schedule alarms (shared by its GlobalTableCapacity), by id."""
        self.schedule_role, self.schedule_grant = provider.serve(
            self, table.table_name, self._spec.regions
        )
        now = datetime.now(UTC)
        self._schedules: dict[str, TableSchedule] = {}
        self.replica_schedules: dict[str, ReplicaScheduleResource] = {}
        """The custom resource of each replica Region."""
        for region in self._spec.regions:
            label = _label(region)
            schedule = TableSchedule(
                f"{self._where} replica {label}", self._spec.ranges[region], table_quota, now=now
            )
            self._schedules[region] = schedule
            resource = ReplicaScheduleResource(
                self,
                f"Schedule-{label}",
                provider=provider,
                table_name=table.table_name,
                region=region,
                indexes=self._spec.indexes,
                actions=_Actions(schedule),
                role=self.schedule_role,
                grant=self.schedule_grant,
            )
            resource.node.add_dependency(table)
            self.replica_schedules[region] = resource
        self._warned: set[str] = set()  # each warning once, however often validated
        self.node.add_validation(Checked(self._validate))

    # ------------------------------------------------------------------ schedules

    @property
    def regions(self) -> list[str]:
        """The replicas' Regions, the stack's first."""
        return list(self._spec.regions)

    @property
    def index_names(self) -> list[str]:
        return list(self._spec.indexes)

    def replica(self, scope: Construct) -> Replica:
        """The replica in the Region of ``scope``'s stack, for that stack's
        ``ThrottleAwareScaler`` (``scaler.add_table(capacity.replica(stack))``; in the table's
        own stack, ``scaler.add_table(capacity)`` is the same). A stack other than the
        table's names the table by its ``table_name``, which must then be given."""
        return replica_of(self._where, self.table, self._spec, scope)

    def add_schedule(
        self,
        entry: ScheduleEntry,
        *,
        dimension: str,
        index_name: str | None = None,
        region: str | None = None,
    ) -> None:
        """Add a scheduled action that sets the minimum of one dimension, checked as a
        ``ProvisionedTable``'s: write in every replica; read in every replica, or in
        ``region``'s alone. The maximum is the template's, so ``max_capacity`` is refused,
        and so is a ``min_capacity`` above it."""
        known_entry(self._where, entry)
        placed = self._placed(dimension, index_name, region)
        for where, schedule, highest in placed:  # every Region checked before any is added
            if isinstance(entry, ScheduleEntry):
                self._check_minimum(where, entry, highest)
            schedule.check_entry(entry, index_name, dimension)
        for _, schedule, _ in placed:
            schedule.add_entry(entry, index_name, dimension)

    def add_capacity_window(
        self,
        name: str,
        *,
        dimension: str,
        capacity: int,
        start: str,
        duration: Duration,
        lead: Duration | None = None,
        week_days: Sequence[str] = WEEKDAYS,
        time_zone: str | TimeZone = "UTC",
        index_name: str | None = None,
        region: str | None = None,
    ) -> None:
        """Be ready for ``capacity`` units from ``start`` (HH:MM in ``time_zone``) for
        ``duration`` on ``week_days``, as ``TableCapacity.add_capacity_window``: the minimum
        is raised ``lead`` before (default 15 minutes) and restored at the end. In every
        replica (write), or every replica or ``region``'s (read); ``capacity`` may not be
        above the template's maximum."""
        windows = []
        for where, schedule, highest in self._placed(dimension, index_name, region):
            window = capacity_window(
                where,
                name,
                dimension=dimension,
                capacity=capacity,
                start=start,
                duration=duration,
                lead=lead,
                week_days=week_days,
                time_zone=time_zone,
                index_name=index_name,
            )
            if is_whole(capacity) and capacity > highest:
                raise CapacityConfigError(
                    self._above(f"{where} window {name!r}", capacity, highest)
                )
            schedule.check_window(window)  # every Region checked before any is added
            windows.append((schedule, window))
        for schedule, window in windows:
            schedule.add_window(window)

    def _provider_of(
        self, function_options: object, alarm_topic: object, alarm_options: object
    ) -> _ReplicaScheduleProvider:
        """The stack's replica-schedule provider, its props checked first."""
        config = function_configs(self._where, function_options, REPLICA_DEFAULTS)
        options = checked_alarm_options(self._where, ALARM_IDS, alarm_options)
        topic = None
        if alarm_topic is not None:
            topic = chosen_alarm_topic(self, self._where, alarm_topic, None)
        given = None if alarm_options is None else options
        return replica_provider(self, self._where, config["ReplicaSchedules"], topic, given)

    def metric_errors(self, **props: Unpack[MetricProps]) -> cloudwatch.Metric:
        """The stack's replica-schedule function's errors (the ``Errors`` alarm's metric):
        the Sum over 5 minutes unless ``props`` say."""
        return self._provider.metric_errors(**props)

    def schedule_preview(
        self, *, count: int = 10, start: datetime | None = None, region: str | None = None
    ) -> list[Event]:
        """The next ``count`` firings (a whole number, 1 or more) in ``region`` (default: the
        stack's) from ``start`` (default: now), each with its dimension's effective min and
        max after it."""
        region = self._spec.regions[0] if region is None else region
        if region not in self._schedules:
            raise CapacityConfigError(self._unknown_region(region))
        return self._schedules[region].preview(count, start or datetime.now(UTC))

    # ------------------------------------------------------------------ internals

    def _placed(
        self, dimension: str, index_name: str | None, region: str | None
    ) -> list[tuple[str, TableSchedule, int]]:
        """The Regions' schedules a schedule of ``dimension`` goes to, each with how
        messages name it and the template's maximum there; refused where the global
        table's rules do not allow it."""
        if dimension not in DIMENSIONS:
            raise CapacityConfigError(
                f"{self._where}: dimension must be 'read' or 'write'; got {dimension!r}"
            )
        if index_name is not None and index_name not in self._spec.indexes:
            known = ", ".join(repr(i) for i in self._spec.indexes) or "none"
            raise CapacityConfigError(
                f"{self._where}: unknown global secondary index {index_name!r}; the table's "
                f"indexes are: {known}"
            )
        if region is not None and dimension == "write":
            raise CapacityConfigError(
                f"{self._where}: region: got {region!r} for a write schedule; a global "
                "table's write capacity is one setting of every replica, so a write "
                "schedule applies to all of them: leave region out"
            )
        if region is not None and region not in self._schedules:
            raise CapacityConfigError(self._unknown_region(region))
        regions = self._spec.regions if region is None else (region,)
        out = []
        for r in regions:
            where = f"{self._where} replica {_label(r)}"
            if (index_name, dimension) not in self._spec.ranges[r]:
                scope = "table" if index_name is None else f"index {index_name!r}"
                raise CapacityConfigError(
                    f"{where}: the {scope} {dimension} capacity has no auto scaling "
                    "(Capacity.fixed); a schedule moves a scalable target's minimum: make "
                    "it Capacity.autoscaled(...)"
                )
            out.append(
                (where, self._schedules[r], self._spec.ranges[r][(index_name, dimension)][1])
            )
        return out

    def _check_minimum(self, where: str, entry: ScheduleEntry, highest: int) -> None:
        """A schedule sets the minimum only, at most the template's maximum ``highest``."""
        if entry.max_capacity is not None:
            raise CapacityConfigError(
                f"{where} schedule {entry.name!r}: max_capacity: got {shown(entry.max_capacity)}; "
                f"the maximum of global table {shown_table(self.table)} is its template's "
                "(Capacity.autoscaled(max_capacity=...)), which every deploy restores: a "
                "schedule sets min_capacity only"
            )
        if is_whole(entry.min_capacity) and entry.min_capacity > highest:
            raise CapacityConfigError(
                self._above(f"{where} schedule {entry.name!r}", entry.min_capacity, highest)
            )

    def _above(self, where: str, minimum: int, highest: int) -> str:
        return (
            f"{where}: a minimum of {minimum} is above global table "
            f"{shown_table(self.table)}'s maximum there ({highest}, its template's): raise "
            "max_capacity in the table's Capacity.autoscaled(...)"
        )

    def _unknown_region(self, region: object) -> str:
        """Why ``region`` is refused: no replica's Region (a token, one known at deploy time
        only, refused as such)."""
        known = ", ".join(_label(r) for r in self._spec.regions)
        known_at_synth(
            self._where,
            "region",
            region,
            "it picks the replica a schedule is for",
            f"one of the table's replica Regions ({known})",
        )
        return (
            f"{self._where}: region: got {shown(region)}; global table "
            f"{shown_table(self.table)} has replicas in {known}"
        )

    def _warm(self, table: HighWaterMark | None, indexes: dict[str, HighWaterMark]) -> None:
        """Set the warm throughput of the table and of its GSIs to their marks."""
        cfn = self.table.node.default_child
        assert isinstance(cfn, dynamodb.CfnGlobalTable)
        stack = Stack.of(self.table)
        unknown = sorted(set(indexes) - set(self._spec.indexes))
        if unknown:
            raise CapacityConfigError(
                f"{self._where}: index_high_water_marks: got {unknown}; the table's indexes "
                f"are: {', '.join(self._spec.indexes) or 'none'}"
            )
        if table is not None:
            given = stack.resolve(cfn.warm_throughput)
            self._set_warm(cfn, "WarmThroughput", "high_water_mark", table, given, None)
        gsis = stack.resolve(cfn.global_secondary_indexes) or []
        for n, gsi in enumerate(gsis):
            mark = indexes.get(gsi.get("indexName"))
            if mark is not None:
                self._set_warm(
                    cfn,
                    f"GlobalSecondaryIndexes.{n}.WarmThroughput",
                    f"index_high_water_marks[{gsi['indexName']!r}]",
                    mark,
                    gsi.get("warmThroughput"),
                    gsi.get("indexName"),
                )

    def _set_warm(
        self,
        cfn: dynamodb.CfnGlobalTable,
        path: str,
        field: str,
        mark: object,
        given: object,
        index: str | None,
    ) -> None:
        if not isinstance(mark, HighWaterMark) or (mark.read is None and mark.write is None):
            raise CapacityConfigError(
                f"{self._where}: {field}: got {shown(mark)}; expected "
                "HighWaterMark(read=..., write=...) with at least one of them"
            )
        if given:
            raise CapacityConfigError(
                f"{self._where}: {field}: the table already sets this warm throughput "
                f"({shown(given)}); give the high-water mark in one place"
            )
        warm = {}
        for dimension, units in (("read", mark.read), ("write", mark.write)):
            if units is None:
                continue
            if not is_token(units) and not is_whole(units, 1, self.table_quota):
                raise CapacityConfigError(
                    f"{self._where}: {field}.{dimension}: got {shown(units)} units a second; "
                    f"expected a whole number from 1 to table_quota ({self.table_quota})"
                )
            if not is_token(units):
                self._at_least_minimum(field, index, dimension, units)
            warm[f"{dimension.title()}UnitsPerSecond"] = units
        cfn.add_property_override(path, warm)

    def _at_least_minimum(self, field: str, index: str | None, dimension: str, units: int) -> None:
        """A mark (``units`` of ``index``'s ``dimension``) below the template's minimum in
        a Region refused, as `Capacity` refuses one below its ``min_capacity``."""
        minimums = {
            region: ranges[(index, dimension)][0]
            for region, ranges in self._spec.ranges.items()
            if (index, dimension) in ranges
        }
        if not minimums or units >= max(minimums.values()):
            return
        region, floor = max(minimums.items(), key=lambda kv: kv[1])
        there = "" if len(set(minimums.values())) == 1 else f" in {_label(region)}"
        what = "the table" if index is None else f"index {index!r}"
        raise CapacityConfigError(
            f"{self._where}: {field}: {dimension} ({units}) is below the {dimension} minimum "
            f"of {what}{there} ({floor}, its template's); a high-water mark is the peak the "
            "table must take, at least its minimum"
        )

    def _managed_once(self, table: dynamodb.TableV2) -> None:
        """No other GlobalTableCapacity of the app manages ``table``: two would each set its
        warm throughput (the later one's kept) and schedule actions on the same targets."""
        for other in self.node.root.node.find_all():
            if (
                isinstance(other, GlobalTableCapacity)
                and other is not self
                and getattr(other, "table", None) is table
            ):
                raise CapacityConfigError(
                    f"{self._where}: global table {table.node.path} is managed already by "
                    f"{other._where}; a table takes one GlobalTableCapacity: give all of its "
                    "high-water marks and schedules there, and remove this one"
                )

    def _validate(self) -> list[str]:
        """At synth: each Region's whole schedule (as a ProvisionedTable's), and the replicas
        and GSIs unchanged since the construct read them."""
        o = self
        regions: dict[str, list[str]] = {}  # a write schedule's error is every replica's
        warned: dict[str, list[str]] = {}
        for region, schedule in o._schedules.items():
            errors_of, warnings_of = schedule.check()
            count = sum(len(actions) for actions in schedule.actions().values())
            if count > MAX_ACTIONS:
                errors_of.append(
                    f"{o._where}: {count} scheduled actions in one Region, its table's and every "
                    f"GSI's together; the replica-schedule function puts at most {MAX_ACTIONS} "
                    "a Region (within its time, and deletes them again if it fails)"
                )
            for error in errors_of:
                regions.setdefault(error, []).append(_label(region))
            for warning in warnings_of:
                warned.setdefault(warning, []).append(_label(region))
        for warning, where in warned.items():
            said = f"replica {', '.join(where)}: {warning}"
            if said not in self._warned:
                self._warned.add(said)
                Annotations.of(o).add_warning_v2("ddb-capacity:schedule", said)
        errors = [f"replica {', '.join(r)}: {error}" for error, r in regions.items()]
        now = _spec_of(o._where, o.table)
        for kind, then, found in (
            ("replicas", o._spec.regions, now.regions),
            ("global secondary indexes", o._spec.indexes, now.indexes),
        ):
            added = sorted(_label(r) for r in set(found) - set(then))
            removed = sorted(_label(r) for r in set(then) - set(found))
            if added:
                errors.append(
                    f"{o._where}: global table {shown_table(o.table)} has {kind} added after "
                    f"this construct ({', '.join(added)}); add every one of them to the "
                    "TableV2 before GlobalTableCapacity"
                )
            if removed:
                errors.append(
                    f"{o._where}: global table {shown_table(o.table)} has {kind} removed "
                    f"after this construct ({', '.join(removed)})"
                )
        return errors


def _checked_table(where: str, table: object) -> dynamodb.TableV2:
    """``table`` is a TableV2 of this app with provisioned billing."""
    if not isinstance(table, dynamodb.TableV2):
        raise CapacityConfigError(
            f"{where}: table: got {shown(table)}; expected an aws_dynamodb.TableV2 of this app "
            "(for an aws_dynamodb.Table, use TableCapacity)"
        )
    cfn = table.node.default_child
    assert isinstance(cfn, dynamodb.CfnGlobalTable)
    billing = Stack.of(table).resolve(cfn.billing_mode)
    if billing != "PROVISIONED":
        raise CapacityConfigError(
            f"{where}: global table {shown_table(table)} bills {billing or 'PAY_PER_REQUEST'}; "
            "schedules and high-water marks need provisioned billing "
            "(billing=Billing.provisioned(...))"
        )
    return table


def _spec_of(where: str, table: dynamodb.TableV2) -> _Spec:
    """The Regions, GSIs and ranges of ``table``'s template, the stack's Region first."""
    cfn = table.node.default_child
    assert isinstance(cfn, dynamodb.CfnGlobalTable)
    stack = Stack.of(table)
    write_settings = stack.resolve(cfn.write_provisioned_throughput_settings)
    write, write_target = _range(write_settings, "write"), _target(write_settings, "write")
    gsis = stack.resolve(cfn.global_secondary_indexes) or []
    index_writes = {
        g["indexName"]: _range(g.get("writeProvisionedThroughputSettings"), "write") for g in gsis
    }
    ranges: dict[str, Ranges] = {}
    targets: dict[str, dict[str, float]] = {}
    for replica in stack.resolve(cfn.replicas) or []:
        region = _region(stack, replica.get("region"))
        read_settings = replica.get("readProvisionedThroughputSettings")
        found_targets = {"write": write_target, "read": _target(read_settings, "read")}
        targets[region] = {d: t for d, t in found_targets.items() if t is not None}
        found: Ranges = {}
        if write:
            found[(None, "write")] = write
        for index, span in index_writes.items():
            if span:
                found[(index, "write")] = span
        if read := _range(read_settings, "read"):
            found[(None, "read")] = read
        for g in replica.get("globalSecondaryIndexes") or []:
            if span := _range(g.get("readProvisionedThroughputSettings"), "read"):
                found[(g["indexName"], "read")] = span
        ranges[region] = found
    own = _region(stack, stack.region)
    regions = tuple(sorted(ranges, key=lambda r: (r != own, r)))
    return _Spec(regions, tuple(g["indexName"] for g in gsis), ranges, targets)


def _region(stack: Stack, region: object) -> str:
    """A replica's Region as a string (the stack's own, when known at deploy time only, as
    its token)."""
    if isinstance(region, str) and not is_token(region):
        return region
    return stack.region


def _scaling(settings: object, dimension: str) -> Mapping[str, Any] | None:
    """An autoscaled dimension's auto scaling settings; None for a fixed one."""
    if not isinstance(settings, Mapping):
        return None
    scaling = settings.get(f"{dimension}CapacityAutoScalingSettings")
    return scaling if isinstance(scaling, Mapping) else None


def _range(settings: object, dimension: str) -> tuple[int, int] | None:
    """(min, max) of an autoscaled dimension's settings; None for a fixed one."""
    scaling = _scaling(settings, dimension)
    if scaling is None:
        return None
    return int(scaling.get("minCapacity") or 1), int(scaling["maxCapacity"])


def _target(settings: object, dimension: str) -> float | None:
    """The target value of an autoscaled dimension's settings; None for a fixed one."""
    policy = (_scaling(settings, dimension) or {}).get("targetTrackingScalingPolicyConfiguration")
    value = policy.get("targetValue") if isinstance(policy, Mapping) else None
    return float(value) if isinstance(value, int | float) else None


def _label(region: str) -> str:
    return STACK_REGION if is_token(region) else region


@jsii.implements(IStableAnyProducer)
class _Actions:
    """One Region's scheduled actions, in the resource's properties, when the template is
    written: each named with ``prefix``, which begins with `ACTION_PREFIX` (the only actions
    the function may delete; `ReplicaScheduleResource` sets its own)."""

    def __init__(self, schedule: TableSchedule) -> None:
        self._schedule = schedule
        self.prefix = ACTION_PREFIX

    def produce(self, context: Any = None) -> Any:
        out = []
        for (index, dimension), actions in sorted(
            self._schedule.actions().items(), key=lambda kv: (kv[0][0] or "", kv[0][1])
        ):
            for action in actions:
                out.append(
                    {
                        **action,
                        "ScheduledActionName": f"{self.prefix}{action['ScheduledActionName']}",
                        "Index": index or "",
                        "Dimension": dimension,
                    }
                )
        return out
