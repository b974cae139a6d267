"""Runs in: CDK app (synth time).

TableCapacity: capacity management for a DynamoDB table (one of this app's, adopted, or
one imported by name): every dimension auto scaled, optionally pre-warmed to a high-water
mark, with schedules and windows. ProvisionedTable: a Table plus a TableCapacity."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Unpack, cast

import jsii
from aws_cdk import (
    Annotations,
    Duration,
    IStableAnyProducer,
    Lazy,
    RemovalPolicy,
    Stack,
    Tags,
    TimeZone,
    Token,
)
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk.interfaces import ResourceEnvironment
from aws_cdk.interfaces.aws_dynamodb import TableReference
from constructs import Construct, IValidation

from ddb_capacity_runtime.core.errors import CapacityConfigError, shown
from ddb_capacity_runtime.core.names import TARGET_TAG, resource_id
from ddb_capacity_tools.schedule import (
    HORIZON,
    WEEKDAYS,
    CapacityWindow,
    Event,
    ScheduleEntry,
    TableSchedule,
)
from ddb_capacity_tools.schedule_expressions import zone_name

from .capacity import (
    DEFAULT_TABLE_QUOTA,
    MAX_GSIS_PER_TABLE,
    Capacity,
    PrewarmMethod,
    check_table_quota,
    is_token,
)
from .prewarm import SETTLE_DEFAULTS, SettleStep
from .props import MetricProps, duration_prop
from .quota import ScalableTargetQuota
from .runtime import FunctionConfig, FunctionOptions, function_configs

DIMENSIONS = ("read", "write")

INDEX_NAME = re.compile(r"[a-zA-Z0-9_.-]{3,255}")
"""DynamoDB's rule for index names."""

PREWARM_TAG = "ddb-capacity:prewarm"
"""Tag set on a table that has a high-water mark; its value is the PrewarmMethod's name."""


_CAPACITY_PROPS = frozenset(
    {
        "read_capacity",
        "write_capacity",
        "warm_throughput",
        "max_read_request_units",
        "max_write_request_units",
    }
)
"""Table props that set capacity: ProvisionedTable sets them from ``read`` and ``write``."""


def _check_type(field: str, value: Any, expected: type, where: str) -> None:
    if not isinstance(value, expected):
        raise CapacityConfigError(f"{where}: {field} must be a {expected.__name__}; got {value!r}")


def table_list(where: str, tables: object) -> list[Any]:
    """``tables`` as given to a construct that takes several: a list (or tuple, or any
    other iterable) of tables; a clear error for one table alone, a string, or anything
    else."""
    if isinstance(tables, Construct):
        raise CapacityConfigError(
            f"{where}: tables must be a list (sequence) of tables, such as tables=[orders]; "
            f"got one table alone, {tables.node.path}: write tables=[...] around it"
        )
    if isinstance(tables, str | bytes) or not isinstance(tables, Iterable):
        raise CapacityConfigError(
            f"{where}: tables must be a list (sequence) of tables (ProvisionedTable, "
            f"TableCapacity or aws_dynamodb.ITable), such as tables=[orders]; "
            f"got {shown(tables)}"
        )
    return list(tables)


def check_table(where: str, table: object) -> None:
    """One of the ``tables`` of a construct: a ``TableCapacity`` or an ``ITable``."""
    if not isinstance(table, TableCapacity) and not (
        hasattr(table, "table_arn") and hasattr(table, "table_name")
    ):
        raise CapacityConfigError(
            f"{where}: tables must be ProvisionedTable or aws_dynamodb.ITable; got {shown(table)}"
        )


def index_names_of(table: dynamodb.ITable | TableCapacity) -> list[str] | None:
    """The GSIs of ``table`` as far as synth knows them: a ``TableCapacity``'s, or those of
    an ``aws_dynamodb.Table`` of this app; None for a table owned elsewhere."""
    if isinstance(table, TableCapacity):
        return None if table._elsewhere else table.index_names
    if isinstance(table, dynamodb.Table):
        return [g["indexName"] for g in _gsis_of(table)]
    return None


@jsii.implements(dynamodb.ITable)
class TableCapacity(Construct):
    """Everything ``ProvisionedTable`` gives, for an ``aws_dynamodb.Table`` that already
    exists in the stack: Application Auto Scaling target tracking on read and write of the
    table and of every GSI, high-water marks by either method, schedules and windows, and
    throttle-aware scaling. The table keeps its logical ID and every property that is not
    about capacity, so adopting it is an update, never a replacement. A table takes one
    TableCapacity in an app (a ``ProvisionedTable`` is one): a second is refused.

    Example::

        orders = dynamodb.Table(self, "Orders", partition_key=..., ...)  # already deployed
        TableCapacity(self, "OrdersCapacity", table=orders,
            read=Capacity(min_capacity=5, max_capacity=1000),
            write=Capacity(min_capacity=5, max_capacity=500),
            indexes={"byCustomer": (Capacity(min_capacity=2, max_capacity=100),
                                    Capacity(min_capacity=2, max_capacity=100))})

    :param table: a provisioned ``aws_dynamodb.Table`` of this app; or a table you own
        elsewhere, imported by name (``Table.from_table_name``): then this stack registers
        and owns its scalable targets (min, max, target tracking, schedules and windows)
        and changes nothing else; high-water marks need the table in this app.
    :param read: the table's read capacity.
    :param write: the table's write capacity.
    :param indexes: every GSI the table has, by name: ``(read, write)`` Capacity. Default:
        none (a table with GSIs must name them all).
    :param prewarm: how high-water marks are reached. Default: ``WARM_THROUGHPUT``.
    :param table_quota: the account's per-table capacity quota. Default: 40,000.
    :param function_options: with ``PROVISION_THEN_SETTLE`` only, ``{"Settle":
        FunctionOptions(...)}``: the stack's two settle functions (memory, timeout from 30
        seconds to 15 minutes for each call, log retention, architecture) merged over their
        defaults (256 MB, 1 minute; the provider waits for the table between calls, up to 30
        minutes). Every settled table of a stack shares them, so they must ask for the same.
        Default: the defaults.
    """

    _KIND = "TableCapacity"
    """How messages name the construct."""

    table: dynamodb.Table
    """The ``aws_dynamodb.Table`` it manages: adopted, made (``ProvisionedTable``), or, for
    a table owned elsewhere, the one imported by name (only its name is used)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        table: dynamodb.ITable | _NewTable,
        read: Capacity,
        write: Capacity,
        indexes: Mapping[str, tuple[Capacity, Capacity]] | None = None,
        prewarm: PrewarmMethod = PrewarmMethod.WARM_THROUGHPUT,
        table_quota: int = DEFAULT_TABLE_QUOTA,
        function_options: Mapping[str, FunctionOptions] | None = None,
    ) -> None:
        super().__init__(scope, id)
        where = f"{self._KIND} {self.node.path}"
        self._validate_table(where, table)
        self._configure(where, prewarm, table_quota, tag=isinstance(table, _NewTable))
        self._settle_config = self._validate_function_options(function_options)
        if isinstance(table, _NewTable):
            self._render_new_table(table, read=read, write=write)
        elif isinstance(table, dynamodb.Table):
            self._adopt(table, read=read, write=write, indexes=dict(indexes or {}))
        else:
            self._import(table, read=read, write=write, indexes=dict(indexes or {}))
        self._identity = _identity(self.table)  # ready: other constructs may see it
        ScalableTargetQuota.check(self)  # the app's scalable targets against the quota

    # ------------------------------------------------------------------ construction

    def _validate_table(self, where: str, table: dynamodb.ITable | _NewTable) -> None:
        """A table TableCapacity can manage, and that no other TableCapacity manages."""
        if isinstance(table, _NewTable):
            table.validate(where)
            return
        if isinstance(table, dynamodb.TableV2):
            raise CapacityConfigError(
                f"{where}: a TableV2 (AWS::DynamoDB::GlobalTable) manages its own capacity and "
                f"auto scaling; use TableV2's Capacity.autoscaled(...) instead"
            )
        if not isinstance(table, dynamodb.Table) and (
            not hasattr(table, "table_name") or Token.is_unresolved(table.table_name)
        ):
            raise CapacityConfigError(
                f"{where}: table must be an aws_dynamodb.Table of this app, or one "
                f"imported by name (Table.from_table_name); got {table!r}"
            )
        if isinstance(table, dynamodb.Table):
            billing = Stack.of(table).resolve(_cfn_of(table).billing_mode)
            if billing not in (None, "PROVISIONED"):
                raise CapacityConfigError(
                    f"{where}: the table's billing mode is {billing}; TableCapacity manages "
                    f"provisioned tables only"
                )
        _validate_managed_once(self, where, table)

    def _validate_function_options(self, options: object) -> FunctionConfig:
        """``function_options``: the settle functions' (``"Settle"``), PROVISION_THEN_SETTLE
        only; returns its config merged over the defaults."""
        if options is not None and self.prewarm is not PrewarmMethod.PROVISION_THEN_SETTLE:
            raise CapacityConfigError(
                f"{self._where}: function_options: got {shown(options)}; they set the settle "
                f"function of prewarm=PrewarmMethod.PROVISION_THEN_SETTLE only, and prewarm is "
                f"{self.prewarm.name}"
            )
        return function_configs(self._where, options, SETTLE_DEFAULTS)["Settle"]

    def _configure(
        self, where: str, prewarm: PrewarmMethod, table_quota: int, *, tag: bool
    ) -> None:
        """The state every capacity manager has, checked."""
        if not isinstance(prewarm, PrewarmMethod):
            raise CapacityConfigError(
                f"{where}: prewarm must be PrewarmMethod.WARM_THROUGHPUT or "
                f"PrewarmMethod.PROVISION_THEN_SETTLE; got {prewarm!r}"
            )
        check_table_quota(where, table_quota)
        self.prewarm = prewarm
        self.table_quota = table_quota
        self._where = where
        self._tag = tag
        self._identity = frozenset[tuple[str, ...]]()  # what it manages, once made
        self._capacity: dict[str | None, dict[str, Capacity]] = {}
        self._scalable: dict[tuple[str | None, str], dynamodb.IScalableTableAttribute] = {}
        self._settle: SettleStep | None = None
        self._ranges: dict[tuple[str | None, str], tuple[int, int]] = {}
        self._schedule = TableSchedule(where, self._ranges, table_quota, now=datetime.now(UTC))
        self._rendered: set[tuple[str | None, str]] = set()
        self._index_listeners: list[Callable[[str], None]] = []
        self._elsewhere = False  # a table imported by name: only its scalable targets here
        self.node.add_validation(_ScheduleValidation(self))

    def _render_new_table(self, spec: _NewTable, *, read: Capacity, write: Capacity) -> None:
        """Make the table (child ``Resource``) at its initial capacity, and manage it."""
        capacity = self._checked(None, read=read, write=write)
        self.table = dynamodb.Table(
            self,
            "Resource",
            billing_mode=dynamodb.BillingMode.PROVISIONED,
            read_capacity=self._initial(capacity["read"]),
            write_capacity=self._initial(capacity["write"]),
            warm_throughput=self._warm_throughput(capacity),
            **spec.props,
        )
        self._manage(None)

    def _adopt(
        self,
        table: dynamodb.Table,
        *,
        read: Capacity,
        write: Capacity,
        indexes: dict[str, tuple[Capacity, Capacity]],
    ) -> None:
        """Set the capacity of a table of this app and of each of its GSIs, and manage them."""
        self.table = table
        cfn = self._cfn_table()
        capacity = self._checked(None, read=read, write=write)
        cfn.provisioned_throughput = dynamodb.CfnTable.ProvisionedThroughputProperty(
            read_capacity_units=self._initial(capacity["read"]),
            write_capacity_units=self._initial(capacity["write"]),
        )
        warm = self._warm_throughput(capacity)
        if warm is not None:
            cfn.add_property_override("WarmThroughput", _warm_json(warm))
        self._manage(None)
        existing = [g["indexName"] for g in self._gsis()]
        self._validate_index_keys(indexes, existing)
        for position, name in enumerate(existing):
            capacity = self._checked(name, **self._pair(name, indexes[name]))
            self._render_adopted_index(cfn, position, capacity)
            self._manage(name)

    def _validate_index_keys(self, given: Mapping[str, object], existing: Sequence[str]) -> None:
        """``indexes`` names each GSI of the adopted table, and nothing else."""
        unknown = [name for name in given if name not in existing]
        if unknown:
            close = difflib.get_close_matches(str(unknown[0]), existing, n=1)
            raise CapacityConfigError(
                f"{self._where}: indexes has the key {shown(unknown[0])}, which is not a "
                f"global secondary index of the table"
                + (f" (did you mean {close[0]!r}?)" if close else "")
                + f"; the allowed keys are the table's GSIs {existing}, each one needed"
            )
        missing = [name for name in existing if name not in given]
        if missing:
            raise CapacityConfigError(
                f"{self._where}: indexes must give (read, write) Capacity for exactly the "
                f"table's GSIs {existing}; missing {missing}"
            )

    def _pair(self, name: str, pair: object) -> dict[str, Capacity]:
        """``indexes[name]``: a (read, write) pair, as ``_checked`` takes it."""
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise CapacityConfigError(
                f"{self._where}: indexes[{name!r}] must be a (read, write) pair of Capacity; "
                f"got {shown(pair)}"
            )
        return {"read": pair[0], "write": pair[1]}

    def _render_adopted_index(
        self, cfn: dynamodb.CfnTable, position: int, capacity: dict[str, Capacity]
    ) -> None:
        base = f"GlobalSecondaryIndexes.{position}"
        cfn.add_property_override(
            f"{base}.ProvisionedThroughput",
            {
                "ReadCapacityUnits": self._initial(capacity["read"]),
                "WriteCapacityUnits": self._initial(capacity["write"]),
            },
        )
        warm = self._warm_throughput(capacity)
        if warm is not None:
            cfn.add_property_override(f"{base}.WarmThroughput", _warm_json(warm))

    def _import(
        self,
        table: dynamodb.ITable,
        *,
        read: Capacity,
        write: Capacity,
        indexes: dict[str, tuple[Capacity, Capacity]],
    ) -> None:
        """Register and manage the scalable targets of a table owned elsewhere."""
        self.table = cast(dynamodb.Table, table)  # only its name is used
        self._elsewhere = True
        pairs: dict[str | None, dict[str, Capacity]] = {None: {"read": read, "write": write}}
        pairs.update({name: self._pair(name, pair) for name, pair in indexes.items()})
        for index, pair in pairs.items():
            capacity = self._checked(index, **pair)
            if any(c.high_water_mark is not None for c in capacity.values()):
                raise CapacityConfigError(
                    f"{self._where}: high_water_mark needs the table in this app (a table "
                    f"imported by name is owned elsewhere); leave it out"
                )
            self._manage(index)

    def _cfn_table(self) -> dynamodb.CfnTable:
        return _cfn_of(self.table)

    def _gsis(self) -> list[dict[str, Any]]:
        return _gsis_of(self.table)

    def add_global_secondary_index(
        self,
        *,
        index_name: str,
        partition_key: dynamodb.Attribute,
        read: Capacity,
        write: Capacity,
        sort_key: dynamodb.Attribute | None = None,
        projection_type: dynamodb.ProjectionType | None = None,
        non_key_attributes: Sequence[str] | None = None,
    ) -> None:
        """Add a GSI with its own auto scaled read and write capacity and high-water mark.

        :param projection_type: Default: ``ProjectionType.ALL``.
        """
        if self._elsewhere:
            raise CapacityConfigError(
                f"{self._where}: the table is owned elsewhere; add its GSI in the app that "
                f"defines it, and give its capacity here in indexes="
            )
        if not is_token(index_name) and not INDEX_NAME.fullmatch(str(index_name)):
            raise CapacityConfigError(
                f"{self._where}: index_name must be 3 to 255 characters of a-z, A-Z, 0-9, "
                f"'_', '-' and '.'; got {index_name!r}"
            )
        if not is_token(index_name) and index_name in self._capacity:
            raise CapacityConfigError(
                f"{self._where}: index_name {index_name!r} is already used by another "
                f"global secondary index; names must be unique per table"
            )
        gsi_count = len(self._capacity) - 1
        if gsi_count >= MAX_GSIS_PER_TABLE:
            raise CapacityConfigError(
                f"{self._where}: cannot add index {index_name!r}: a table takes at most "
                f"{MAX_GSIS_PER_TABLE} global secondary indexes (DynamoDB's default quota); "
                f"it has {gsi_count}"
            )
        capacity = self._checked(index_name, read=read, write=write)
        self.table.add_global_secondary_index(
            index_name=index_name,
            partition_key=partition_key,
            sort_key=sort_key,
            projection_type=projection_type,
            non_key_attributes=non_key_attributes,
            read_capacity=self._initial(capacity["read"]),
            write_capacity=self._initial(capacity["write"]),
            warm_throughput=self._warm_throughput(capacity),
        )
        self._manage(index_name)
        for listener in self._index_listeners:
            listener(index_name)

    def on_index_added(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(index_name)`` for every GSI added from now on (a scaler that
        manages the table alarms on it too)."""
        self._index_listeners.append(listener)

    @property
    def index_names(self) -> list[str]:
        """Names of the GSIs added through this construct, in order."""
        return [name for name in self._capacity if name is not None]

    def capacity(self, dimension: str, index_name: str | None = None) -> Capacity:
        """The capacity settings of ``dimension`` (``"read"``/``"write"``) of the table or a GSI."""
        self._check_dimension(dimension, index_name)
        return self._capacity[index_name][dimension]

    def scalable_attribute(
        self, dimension: str, index_name: str | None = None
    ) -> dynamodb.IScalableTableAttribute:
        """The auto scaling handle of a dimension, e.g. to add scheduled actions to it."""
        self._check_dimension(dimension, index_name)
        return self._scalable[(index_name, dimension)]

    def enable_throttle_aware_scaling(self, scaler: Any) -> None:
        """Let ``scaler`` (a ``ThrottleAwareScaler``) manage this table: it moves the
        minimum of this table's scalable targets when requests are throttled."""
        scaler.add_table(self)

    def add_schedule(
        self, entry: ScheduleEntry, *, dimension: str, index_name: str | None = None
    ) -> None:
        """Add a scheduled action (set min and/or max at a time) to one dimension.

        Checked at once: the expression, time zone, name, and capacities. Checked at synth,
        over the next 28 days: min <= max at every firing, no two entries firing at the same
        moment with different values, and (a warning) the decrease quota.
        """
        self._check_dimension(dimension, index_name)
        self._schedule.add_entry(entry, index_name, dimension)
        self._render_schedules(index_name, dimension)

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
    ) -> None:
        """Be ready for ``capacity`` units from ``start`` (HH:MM in ``time_zone``) for
        ``duration`` on ``week_days``: the minimum is raised ``lead`` before the start
        (default 15 minutes) and restored at the end to the operating minimum, or to what
        another window active at that moment needs. A capacity above the configured max
        raises the max for the window too."""
        self._check_dimension(dimension, index_name)
        where = f"{self._where} window {name!r}"
        duration_prop(where, "duration", duration, Duration.minutes(1))
        duration_prop(where, "lead", lead, Duration.seconds(0), optional=True)
        self._schedule.add_window(
            CapacityWindow(
                name=name,
                index=index_name,
                dimension=dimension,
                capacity=capacity,
                start=start,
                duration=_timedelta(duration),
                lead=_timedelta(lead or Duration.minutes(15)),
                week_days=tuple(week_days),
                time_zone=zone_name(time_zone),  # type: ignore[arg-type]
            )
        )
        self._render_schedules(index_name, dimension)

    def schedule_preview(self, *, count: int = 10, start: datetime | None = None) -> list[Event]:
        """The next ``count`` firings of the table's schedule from ``start`` (default: now),
        each with its dimension's effective min and max after it."""
        start = start or datetime.now(UTC)
        timeline = self._schedule.timeline(start, start + HORIZON)
        return timeline.events[:count]

    def _render_schedules(self, index_name: str | None, dimension: str) -> None:
        """Render the schedule of one scalable target when the template is written: the
        actions of the user's own ``scale_on_schedule`` first, then the library's."""
        key = (index_name, dimension)
        if key in self._rendered:
            return
        self._rendered.add(key)
        cfn = self._cfn_target(self._scalable[key])
        cfn.add_property_override(
            "ScheduledActions", Lazy.any(_ScheduledActions(self._schedule, key, cfn))
        )

    # ------------------------------------------------------------------ internals

    def _check_dimension(self, dimension: str, index_name: str | None) -> None:
        if dimension not in DIMENSIONS:
            raise CapacityConfigError(
                f"{self._where}: dimension must be 'read' or 'write'; got {dimension!r}"
            )
        if index_name not in self._capacity:
            known = ", ".join(repr(n) for n in self.index_names) or "none"
            raise CapacityConfigError(
                f"{self._where}: unknown global secondary index {index_name!r}; "
                f"the table's indexes are: {known}"
            )

    def _checked(
        self, index_name: str | None, *, read: Capacity, write: Capacity
    ) -> dict[str, Capacity]:
        label = "table" if index_name is None else f"index {index_name!r}"
        capacity = {"read": read, "write": write}
        for dimension, value in capacity.items():
            where = f"{self._where} {label} {dimension}"
            _check_type(dimension, value, Capacity, where)
            value.validate(where, self.table_quota)
            if value.high_water_mark is not None and self._tag:
                Tags.of(self).add(PREWARM_TAG, self.prewarm.value)
            self._ranges[(index_name, dimension)] = (value.min_capacity, value.max_capacity)
        self._capacity[index_name] = capacity
        return capacity

    def _initial(self, capacity: Capacity) -> int:
        if (
            self.prewarm is PrewarmMethod.PROVISION_THEN_SETTLE
            and capacity.high_water_mark is not None
        ):
            return capacity.high_water_mark
        return capacity.initial_capacity

    def _warm_throughput(self, capacity: dict[str, Capacity]) -> dynamodb.WarmThroughput | None:
        if self.prewarm is not PrewarmMethod.WARM_THROUGHPUT:
            return None
        read, write = capacity["read"].high_water_mark, capacity["write"].high_water_mark
        if read is None and write is None:
            return None
        return dynamodb.WarmThroughput(read_units_per_second=read, write_units_per_second=write)

    def _manage(self, index_name: str | None) -> None:
        """Auto scale both dimensions and register what the settle step must lower."""
        for dimension in DIMENSIONS:
            capacity = self._capacity[index_name][dimension]
            attribute = self._auto_scale(dimension, index_name, capacity)
            attribute.scale_on_utilization(
                target_utilization_percent=capacity.target_utilization_percent,
                scale_in_cooldown=capacity.scale_in_cooldown,
                scale_out_cooldown=capacity.scale_out_cooldown,
                disable_scale_in=capacity.disable_scale_in,
            )
            self._scalable[(index_name, dimension)] = attribute
            # the library's roles may move this target's minimum (and no other)
            Tags.of(self._cfn_target(attribute)).add(TARGET_TAG, self.table.table_name)
            initial = self._initial(capacity)
            if initial > capacity.min_capacity:
                if self._settle is None:
                    self._settle = SettleStep(
                        self,
                        "Settle",
                        table=self.table,
                        where=self._where,
                        config=self._settle_config,
                    )
                self._settle.add_target(index_name, dimension, initial, capacity.min_capacity)

    @staticmethod
    def _cfn_target(attribute: dynamodb.IScalableTableAttribute) -> appscaling.CfnScalableTarget:
        cfn = (
            attribute.cfn
            if isinstance(attribute, _ImportedDimension)
            else attribute.node.find_child("Target").node.default_child
        )
        assert isinstance(cfn, appscaling.CfnScalableTarget)
        return cfn

    def _auto_scale(
        self, dimension: str, index_name: str | None, capacity: Capacity
    ) -> dynamodb.IScalableTableAttribute:
        bounds = {"min_capacity": capacity.min_capacity, "max_capacity": capacity.max_capacity}
        if self._elsewhere:
            return _ImportedDimension(  # type: ignore[return-value]
                self, self.table.table_name, index_name, dimension, capacity
            )
        if index_name is None:
            if dimension == "read":
                return self.table.auto_scale_read_capacity(**bounds)
            return self.table.auto_scale_write_capacity(**bounds)
        if dimension == "read":
            return self.table.auto_scale_global_secondary_index_read_capacity(index_name, **bounds)
        return self.table.auto_scale_global_secondary_index_write_capacity(index_name, **bounds)

    @property
    def stack(self) -> Stack:
        return Stack.of(self)

    # ------------------------------------------------------------------ ITable, by delegation

    @property
    def env(self) -> ResourceEnvironment:
        """The table's account and Region."""
        return self.table.env

    @property
    def table_arn(self) -> str:
        """The table's ARN."""
        return self.table.table_arn

    @property
    def table_name(self) -> str:
        """The table's name."""
        return self.table.table_name

    @property
    def table_stream_arn(self) -> str | None:
        """The ARN of the table's stream, if it has one."""
        return self.table.table_stream_arn

    @property
    def encryption_key(self) -> kms.IKey | None:
        """The customer-managed key the table is encrypted with, if any."""
        return self.table.encryption_key

    @property
    def table_ref(self) -> TableReference:
        """A reference to the table (its name and ARN)."""
        return self.table.table_ref

    def apply_removal_policy(self, policy: RemovalPolicy) -> None:
        """Apply ``policy`` to the table."""
        self.table.apply_removal_policy(policy)

    def grant(self, grantee: iam.IGrantable, *actions: str) -> iam.Grant:
        """Let ``grantee`` perform ``actions`` on the table and its indexes."""
        return self.table.grant(grantee, *actions)

    def grant_full_access(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` perform every DynamoDB action (``dynamodb:*``) on the table."""
        return self.table.grant_full_access(grantee)

    def grant_read_data(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` read the table's data (GetItem, Query, Scan, ...)."""
        return self.table.grant_read_data(grantee)

    def grant_read_write_data(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` read and write the table's data."""
        return self.table.grant_read_write_data(grantee)

    def grant_stream(self, grantee: iam.IGrantable, *actions: str) -> iam.Grant:
        """Let ``grantee`` perform ``actions`` on the table's stream."""
        return self.table.grant_stream(grantee, *actions)

    def grant_stream_read(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` read the table's stream."""
        return self.table.grant_stream_read(grantee)

    def grant_table_list_streams(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` list the table's streams."""
        return self.table.grant_table_list_streams(grantee)

    def grant_write_data(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` write the table's data (PutItem, UpdateItem, DeleteItem, ...)."""
        return self.table.grant_write_data(grantee)

    def metric(self, metric_name: str, **props: Unpack[MetricProps]) -> cloudwatch.Metric:
        """The table's CloudWatch metric ``metric_name`` (namespace ``AWS/DynamoDB``)."""
        return self.table.metric(metric_name, **props)

    def metric_conditional_check_failed_requests(
        self, **props: Unpack[MetricProps]
    ) -> cloudwatch.Metric:
        """Conditional writes that failed their condition, per period."""
        return self.table.metric_conditional_check_failed_requests(**props)

    def metric_consumed_read_capacity_units(
        self, **props: Unpack[MetricProps]
    ) -> cloudwatch.Metric:
        """Read capacity units consumed, per period."""
        return self.table.metric_consumed_read_capacity_units(**props)

    def metric_consumed_write_capacity_units(
        self, **props: Unpack[MetricProps]
    ) -> cloudwatch.Metric:
        """Write capacity units consumed, per period."""
        return self.table.metric_consumed_write_capacity_units(**props)

    def metric_successful_request_latency(self, **props: Unpack[MetricProps]) -> cloudwatch.Metric:
        """Latency of successful requests (give ``dimensions_map`` with an ``Operation``)."""
        return self.table.metric_successful_request_latency(**props)

    def metric_system_errors_for_operations(
        self,
        *,
        operations: Sequence[dynamodb.Operation] | None = None,
        **props: Unpack[MetricProps],
    ) -> cloudwatch.IMetric:
        """Server errors (HTTP 500) of ``operations`` (default: all), summed."""
        return self.table.metric_system_errors_for_operations(operations=operations, **props)

    def metric_throttled_requests(self, **props: Unpack[MetricProps]) -> cloudwatch.Metric:
        """Throttled requests (deprecated by aws-cdk-lib: use the ``_for_operations`` one)."""
        return self.table.metric_throttled_requests(**props)

    def metric_throttled_requests_for_operations(
        self,
        *,
        operations: Sequence[dynamodb.Operation] | None = None,
        **props: Unpack[MetricProps],
    ) -> cloudwatch.IMetric:
        """Throttled requests of ``operations`` (default: all), summed."""
        return self.table.metric_throttled_requests_for_operations(operations=operations, **props)

    def metric_user_errors(self, **props: Unpack[MetricProps]) -> cloudwatch.Metric:
        """Requests refused as client errors (HTTP 400), per period."""
        return self.table.metric_user_errors(**props)

    def _unmanaged_indexes(self) -> list[str]:
        """GSIs added to the underlying table directly: they would have no auto scaling."""
        if self._elsewhere:
            return []
        return [
            f"{self._where}: index {g['indexName']!r} was added to the underlying table "
            f"directly, so it has no capacity settings nor auto scaling; add it with "
            f"add_global_secondary_index(..., read=Capacity(...), write=Capacity(...))"
            for g in self._gsis()
            if g.get("indexName") not in self._capacity
        ]


class ProvisionedTable(TableCapacity):
    """A provisioned ``aws_dynamodb.Table`` with Application Auto Scaling target tracking
    on read and write of the table and of every GSI, and an optional high-water mark: a
    ``Table`` plus a [`TableCapacity`][], in one construct.

    Example::

        table = ProvisionedTable(self, "Orders",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            read=Capacity(min_capacity=5, max_capacity=1000),
            write=Capacity(min_capacity=5, max_capacity=500, high_water_mark=4000),
        )
        table.table.grant_read_write_data(my_function)

    :param partition_key: the table's partition key.
    :param read: read capacity of the table (range, target, high-water mark).
    :param write: write capacity of the table.
    :param sort_key: Default: none.
    :param prewarm: how high-water marks are reached. Default:
        ``PrewarmMethod.WARM_THROUGHPUT`` (instant, spends no decrease). Used only where
        a ``Capacity`` sets ``high_water_mark``.
    :param table_quota: the per-table capacity quota of the account, in capacity units.
        Default: 40,000 (DynamoDB's default quota).
    :param function_options: with ``PROVISION_THEN_SETTLE`` only, ``{"Settle":
        FunctionOptions(...)}``: the stack's two settle functions (memory, timeout from 30
        seconds to 15 minutes for each call, log retention, architecture) merged over their
        defaults (256 MB, 1 minute; the provider waits for the table between calls, up to 30
        minutes). Every settled table of a stack shares them, so they must ask for the same.
        Default: the defaults.
    :param billing_mode: only ``BillingMode.PROVISIONED`` is accepted. Default: PROVISIONED.
    :param point_in_time_recovery: Default: True.
    :param deletion_protection: Default: True.
    :param removal_policy: Default: ``RemovalPolicy.RETAIN``.
    :param table_props: every other ``aws_dynamodb.Table`` prop, as keywords
        (``table_name``, ``table_class``, ``encryption``, ``encryption_key``, ``stream``,
        ``time_to_live_attribute``, ``contributor_insights_enabled``, …;
        ``local_secondary_indexes`` aside: use ``table.add_local_secondary_index``): passed
        to ``aws_dynamodb.Table`` unchanged. Capacity props (``read_capacity``,
        ``write_capacity``, ``warm_throughput``, on-demand limits) are refused: ``read`` and
        ``write`` set them. Default: that construct's defaults.
    """

    _KIND = "ProvisionedTable"

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        partition_key: dynamodb.Attribute,
        read: Capacity,
        write: Capacity,
        sort_key: dynamodb.Attribute | None = None,
        prewarm: PrewarmMethod = PrewarmMethod.WARM_THROUGHPUT,
        table_quota: int = DEFAULT_TABLE_QUOTA,
        billing_mode: dynamodb.BillingMode | None = None,
        point_in_time_recovery: bool = True,
        deletion_protection: bool = True,
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
        table_name: str | None = None,
        table_class: dynamodb.TableClass | None = None,
        encryption: dynamodb.TableEncryption | None = None,
        encryption_key: kms.IKey | None = None,
        stream: dynamodb.StreamViewType | None = None,
        time_to_live_attribute: str | None = None,
        contributor_insights_enabled: bool | None = None,
        function_options: Mapping[str, FunctionOptions] | None = None,
        **table_props: Any,
    ) -> None:
        spec = _NewTable(
            billing_mode,
            {
                "partition_key": partition_key,
                "sort_key": sort_key,
                "point_in_time_recovery_specification": (
                    dynamodb.PointInTimeRecoverySpecification(
                        point_in_time_recovery_enabled=point_in_time_recovery
                    )
                ),
                "deletion_protection": deletion_protection,
                "removal_policy": removal_policy,
                "table_name": table_name,
                "table_class": table_class,
                "encryption": encryption,
                "encryption_key": encryption_key,
                "stream": stream,
                "time_to_live_attribute": time_to_live_attribute,
                "contributor_insights_enabled": contributor_insights_enabled,
                **table_props,
            },
            frozenset(table_props),
        )
        super().__init__(
            scope,
            id,
            table=spec,
            read=read,
            write=write,
            prewarm=prewarm,
            table_quota=table_quota,
            function_options=function_options,
        )


@dataclass(frozen=True)
class _NewTable:
    """The table a ``ProvisionedTable`` makes as its child ``Resource``: its billing mode as
    given (checked), and every other ``aws_dynamodb.Table`` prop but capacity."""

    billing_mode: dynamodb.BillingMode | None
    props: dict[str, Any]
    passed: frozenset[str] = frozenset()  # the props passed through as keywords

    def validate(self, where: str) -> None:
        if "point_in_time_recovery_specification" in self.passed:
            raise CapacityConfigError(
                f"{where}: point_in_time_recovery_specification cannot be passed: "
                f"point_in_time_recovery= (True or False) sets it"
            )
        capacity_props = sorted(set(self.props) & _CAPACITY_PROPS)
        if capacity_props:
            raise CapacityConfigError(
                f"{where}: {', '.join(capacity_props)} cannot be passed: read= and write= "
                f"(Capacity) set the table's capacity"
            )
        if self.billing_mode is not None and self.billing_mode != dynamodb.BillingMode.PROVISIONED:
            raise CapacityConfigError(
                f"{where}: billing_mode must be BillingMode.PROVISIONED; got {self.billing_mode}. "
                f"For on-demand capacity use aws_dynamodb.Table or TableV2 directly"
            )


def _cfn_of(table: dynamodb.Table) -> dynamodb.CfnTable:
    cfn = table.node.default_child
    assert isinstance(cfn, dynamodb.CfnTable)
    return cfn


def _gsis_of(table: dynamodb.Table) -> list[dict[str, Any]]:
    """The table's GSIs as its template has them (``indexName`` and the rest)."""
    gsis: list[dict[str, Any]] = (
        Stack.of(table).resolve(_cfn_of(table).global_secondary_indexes) or []
    )
    return gsis


def _identity(table: dynamodb.ITable) -> frozenset[tuple[str, ...]]:
    """What tells a managed table apart in an app: a table of this app by its construct; a
    table imported by name by that name in its account and Region (in its stack alone when
    they are known at deploy time only: env-agnostic stacks may go to different accounts)."""
    if isinstance(table, dynamodb.Table):
        return frozenset({("construct", table.node.path)})
    stack = Stack.of(table)
    env = [str(stack.account), str(stack.region)]
    scope = stack.node.path if any(Token.is_unresolved(v) for v in env) else ""
    return frozenset({("name", *env, scope, table.table_name)})


def _validate_managed_once(capacity: TableCapacity, where: str, table: dynamodb.ITable) -> None:
    """No other TableCapacity (nor ProvisionedTable) of the app manages ``table``: two would
    each set its capacity and register its scalable targets."""
    keys = _identity(table)
    name = "" if Token.is_unresolved(table.table_name) else f" ({shown(table.table_name)})"
    for other in capacity.node.root.node.find_all():
        if isinstance(other, TableCapacity) and other is not capacity and other._identity & keys:
            raise CapacityConfigError(
                f"{where}: table {table.node.path}{name} is managed already by "
                f"{other._where}; a table takes one TableCapacity (a "
                f"ProvisionedTable is one): give all of its capacity there, and remove this one"
            )


class _ImportedDimension:
    """One dimension of a table owned elsewhere: a scalable target this stack registers,
    with target tracking, and what schedules need of it."""

    def __init__(
        self,
        scope: Construct,
        table_name: str,
        index: str | None,
        dimension: str,
        capacity: Capacity,
    ) -> None:
        kind = "table" if index is None else "index"
        label = f"{'' if index is None else index + '-'}{dimension.capitalize()}"
        stack = Stack.of(scope)
        role = iam.Role.from_role_arn(
            scope,
            f"{label}ServiceRole",
            f"arn:{stack.partition}:iam::{stack.account}:role/aws-service-role/"
            "dynamodb.application-autoscaling.amazonaws.com/"
            "AWSServiceRoleForApplicationAutoScaling_DynamoDBTable",
        )
        self.target = appscaling.ScalableTarget(
            scope,
            f"{label}Scaling",
            service_namespace=appscaling.ServiceNamespace.DYNAMODB,
            resource_id=resource_id(table_name, index),
            scalable_dimension=f"dynamodb:{kind}:{dimension.capitalize()}CapacityUnits",
            min_capacity=capacity.min_capacity,
            max_capacity=capacity.max_capacity,
            role=role,
        )
        self._metric = (
            appscaling.PredefinedMetric.DYNAMODB_READ_CAPACITY_UTILIZATION
            if dimension == "read"
            else appscaling.PredefinedMetric.DYANMODB_WRITE_CAPACITY_UTILIZATION
        )

    @property
    def cfn(self) -> appscaling.CfnScalableTarget:
        child = self.target.node.default_child
        assert isinstance(child, appscaling.CfnScalableTarget)
        return child

    def scale_on_utilization(
        self,
        *,
        target_utilization_percent: float,
        scale_in_cooldown: Duration | None = None,
        scale_out_cooldown: Duration | None = None,
        disable_scale_in: bool | None = None,
    ) -> None:
        self.target.scale_to_track_metric(
            "Tracking",
            target_value=target_utilization_percent,
            predefined_metric=self._metric,
            scale_in_cooldown=scale_in_cooldown,
            scale_out_cooldown=scale_out_cooldown,
            disable_scale_in=disable_scale_in,
        )

    def scale_on_schedule(self, id: str, **props: Any) -> None:
        self.target.scale_on_schedule(id, **props)


def _warm_json(warm: dynamodb.WarmThroughput) -> dict[str, int]:
    out = {}
    if warm.read_units_per_second is not None:
        out["ReadUnitsPerSecond"] = int(warm.read_units_per_second)
    if warm.write_units_per_second is not None:
        out["WriteUnitsPerSecond"] = int(warm.write_units_per_second)
    return out


def _timedelta(duration: Duration) -> timedelta:
    return timedelta(seconds=duration.to_seconds())


@jsii.implements(IValidation)
class _ScheduleValidation:
    """Whole-schedule checks, once every entry and window is known (at synth)."""

    def __init__(self, table: TableCapacity) -> None:
        self._table = table
        self._warned: set[str] = set()

    def validate(self) -> list[str]:
        errors, warnings = self._table._schedule.check()
        errors += self._table._unmanaged_indexes()
        for warning in warnings:
            if warning not in self._warned:
                self._warned.add(warning)
                Annotations.of(self._table).add_warning_v2("ddb-capacity:schedule", warning)
        return errors


@jsii.implements(IStableAnyProducer)
class _ScheduledActions:
    """The ScheduledActions of one scalable target, produced when the template is written:
    what the target's own ``scale_on_schedule`` calls added, then the table's schedule."""

    def __init__(
        self,
        schedule: TableSchedule,
        key: tuple[str | None, str],
        cfn: appscaling.CfnScalableTarget,
    ) -> None:
        self._schedule, self._key, self._cfn = schedule, key, cfn

    def produce(self) -> Any:
        own = Stack.of(self._cfn).resolve(self._cfn.scheduled_actions) or []
        return [_cloudformation(a) for a in own] + self._schedule.actions().get(self._key, [])


def _cloudformation(value: Any) -> Any:
    """A resolved L1 property value (camelCase keys, datetimes) as CloudFormation JSON."""
    if isinstance(value, dict):
        return {k[:1].upper() + k[1:]: _cloudformation(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_cloudformation(v) for v in value]
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return value
