"""Runs in: CDK app (synth time).

TableCapacity: capacity management for a DynamoDB table (one of this app's, adopted, or
one imported by name): every dimension auto scaled, optionally pre-warmed to a high-water
mark, with schedules and windows (`ProvisionedTable`, in `_provisioned_table`, is a Table
plus a TableCapacity; `ITable`'s members are delegated in `_delegation`)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

import jsii
from aws_cdk import (
    Annotations,
    Duration,
    Lazy,
    Stack,
    Tags,
    TimeZone,
)
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from ddb_capacity_runtime.core.errors import CapacityConfigError, shown
from ddb_capacity_runtime.core.names import TARGET_TAG
from ddb_capacity_runtime.core.tags import PREWARM_TAG as PREWARM_TAG
from ddb_capacity_runtime.schedule.entries import (
    WEEKDAYS,
    Event,
    ScheduleEntry,
    TableSchedule,
)

from ..common._function_options import (
    FunctionConfig,
    FunctionDefaults,
    FunctionOptions,
    function_configs,
)
from ..common._props import Checked, is_token, known_at_synth
from ._adoption import check_index_keys, refuse_stock_auto_scaling, render_adopted
from ._capacity import (
    DEFAULT_TABLE_QUOTA,
    MAX_GSIS_PER_TABLE,
    Capacity,
    PrewarmMethod,
    check_table_quota,
)
from ._delegation import TableDelegation
from ._parts import (
    PREWARM_UNUSED,
    ImportedDimension,
    NewTable,
    ScheduledActions,
    capacity_window,
    cfn_of,
    check_type,
    gsis_of,
    identity_of,
    is_table,
    known_entry,
    on_demand,
    too_many_tags,
)
from ._quota import ScalableTargetQuota

if TYPE_CHECKING:
    from ddb_capacity_runtime.schedule.on_demand_windows import Switch

    from ..settle._settle_step import SettleStep
    from ._on_demand import OnDemandWindows

DIMENSIONS = ("read", "write")

INDEX_NAME = re.compile(r"[a-zA-Z0-9_.-]{3,255}")
INDEX_NAMED = "the ids of the index's scalable targets are made from it"
"""Why a GSI's name must be known when the app is built."""
SETTLED_FROM = (
    "with prewarm=PROVISION_THEN_SETTLE, the table is created at it and the settle step "
    "that lowers it is rendered only when it is above min_capacity"
)
"""Why a high-water mark must be known when the app is built, with PROVISION_THEN_SETTLE."""
"""DynamoDB's rule for index names."""

SCALABLE_TARGET_TYPE = "AWS::ApplicationAutoScaling::ScalableTarget"
"""The one resource of a dimension's auto scaling the library's target tag goes on."""
_SETTLE_DEFAULTS = {
    "Settle": FunctionDefaults(
        256,
        Duration.minutes(1),
        shortest=Duration.seconds(60),
        why="each call of the settle step makes one DescribeTable, at most one UpdateTable, one "
        "GetMetricData (an Update), one DescribeScalableTargets, for a table a CapacityRequests "
        "serves up to 2 pages of its hold store's Query (48 s at most together; what it lowered is "
        "read again at a later call; the provider waits between calls): at least 1 minute, "
        "and Lambda's longest is 15 minutes",
    )
}
"""The settle functions' defaults and the timeouts they allow (``function_options["Settle"]`` of a
PROVISION_THEN_SETTLE table): each call is short, the waiting is the provider's."""


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


SCALER_GLOBAL = (
    "the scaler manages a TableV2 through GlobalTableCapacity: pass "
    "GlobalTableCapacity(stack, id, table=...) in tables=[...] or to add_table, which "
    "manages this stack's Region's replica (docs: Global tables)"
)
"""What a scaler given a TableV2 says to do."""
REQUESTS_GLOBAL = (
    "capacity requests serve aws_dynamodb.Tables only (ProvisionedTable, TableCapacity); a "
    "global table's replicas follow their auto scaling, GlobalTableCapacity's schedules and "
    "the throttle-aware scaler (docs: Global tables)"
)
"""What capacity requests given a global table say."""


def is_global_table_capacity(value: object) -> bool:
    """Whether ``value`` is a ``GlobalTableCapacity``, its module read only once one was made
    (a table alone never loads the global table's)."""
    owner = sys.modules.get("constructs_pkg.global_tables._global_table")
    return owner is not None and isinstance(value, owner.GlobalTableCapacity)


def check_table(where: str, table: object, global_table: str) -> None:
    """One of the ``tables`` of a construct: a ``TableCapacity`` or an ``ITable``, never a
    ``TableV2`` (nor a ``GlobalTableCapacity``), refused with ``global_table`` (what to do
    instead): its replicas' targets are the global table's, which a plain table's
    permissions and bounds do not describe."""
    if isinstance(table, dynamodb.TableV2) or is_global_table_capacity(table):
        raise CapacityConfigError(
            f"{where}: tables: got {shown(table)}, a global table (TableV2); {global_table}"
        )
    if isinstance(table, dynamodb.TableBaseV2):  # TableV2.from_table_name and its kin
        raise CapacityConfigError(
            f"{where}: tables: got {shown(table)}, a table imported as a TableV2 (a global "
            f"table); {global_table}. A table that is not global is imported with "
            "aws_dynamodb.Table.from_table_name"
        )
    if not isinstance(table, TableCapacity) and not (
        hasattr(table, "table_arn") and hasattr(table, "table_name")
    ):
        raise CapacityConfigError(
            f"{where}: tables must be ProvisionedTable or aws_dynamodb.ITable; got {shown(table)}"
        )
    if on_demand(table):
        raise CapacityConfigError(
            f"{where}: tables: got {shown(table)}, billed PAY_PER_REQUEST (on-demand): it has "
            "no provisioned capacity to manage; give a provisioned table "
            "(billing_mode=BillingMode.PROVISIONED, or a ProvisionedTable)"
        )


def imported_by_name(table: TableCapacity) -> bool:
    """Whether ``table`` manages a table owned elsewhere, imported by name: only its scalable
    targets and schedules are made here, and synth knows none of its GSIs."""
    return table._elsewhere


def index_names_of(table: dynamodb.ITable | TableCapacity) -> list[str] | None:
    """The GSIs of ``table`` as far as synth knows them: a ``TableCapacity``'s, or those of
    an ``aws_dynamodb.Table`` of this app; None for a table owned elsewhere."""
    if isinstance(table, TableCapacity):
        return None if imported_by_name(table) else table.index_names
    if isinstance(table, dynamodb.Table):
        return [g["indexName"] for g in gsis_of(table)]
    return None


@dataclass(frozen=True, kw_only=True)
class TableCapacityProps:
    """`TableCapacity`'s props, each with its default: the keyword arguments of
    `TableCapacity`, which takes them as they are (and checks them)."""

    table: dynamodb.ITable | NewTable
    """A provisioned ``aws_dynamodb.Table`` of this app; or a table you own elsewhere, imported
    by name (``Table.from_table_name``): then this stack registers and owns its scalable
    targets (min, max, target tracking, schedules and windows) and changes nothing else;
    high-water marks need the table in this app."""

    read: Capacity
    """The table's read capacity."""

    write: Capacity
    """The table's write capacity."""

    indexes: Mapping[str, tuple[Capacity, Capacity]] | None = None
    """Every GSI the table has, by name: ``(read, write)`` Capacity. Default: none (a table
    with GSIs must name them all)."""

    prewarm: PrewarmMethod = PrewarmMethod.WARM_THROUGHPUT
    """How high-water marks are reached. Default: ``WARM_THROUGHPUT``."""

    table_quota: int = DEFAULT_TABLE_QUOTA
    """The account's per-table capacity quota. Default: 40,000."""

    function_options: Mapping[str, FunctionOptions] | None = None
    """With ``PROVISION_THEN_SETTLE`` only, ``{"Settle": FunctionOptions(...)}``: the stack's
    two settle functions (memory, timeout from 30 seconds to 15 minutes for each call, log
    retention, architecture) merged over their defaults (256 MB, 1 minute; the provider
    waits for the table between calls, up to 30 minutes). Every settled table of a stack
    shares them, so they must ask for the same. Default: the defaults."""


@jsii.implements(dynamodb.ITable)
class TableCapacity(TableDelegation, Construct):
    """Everything ``ProvisionedTable`` gives, for an ``aws_dynamodb.Table`` that already
    exists in the stack: Application Auto Scaling target tracking on read and write of the
    table and of every GSI, high-water marks by either method, schedules and windows, and
    throttle-aware scaling. The table keeps its logical ID and every property that is not
    about capacity, so adopting it is an update, never a replacement; its
    ``ProvisionedThroughput`` stays the app's too unless a ``PROVISION_THEN_SETTLE`` mark
    provisions it (CloudFormation sets the live table to a changed one on deploy), so its
    scalable targets move its capacity. A table takes one TableCapacity in an app (a
    ``ProvisionedTable`` is one): a second is refused, and so is a table the app already
    auto scales with aws-cdk-lib's ``auto_scale_*`` calls.

    Example::

        orders = dynamodb.Table(self, "Orders", partition_key=..., ...)  # already deployed
        TableCapacity(self, "OrdersCapacity", table=orders,
            read=Capacity(min_capacity=5, max_capacity=1000),
            write=Capacity(min_capacity=5, max_capacity=500),
            indexes={"byCustomer": (Capacity(min_capacity=2, max_capacity=100),
                                    Capacity(min_capacity=2, max_capacity=100))})

    Its props, each with its default and what it does, are the fields of
    `TableCapacityProps`: the keyword arguments here.
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
        table: dynamodb.ITable | NewTable,
        read: Capacity,
        write: Capacity,
        indexes: Mapping[str, tuple[Capacity, Capacity]] | None = TableCapacityProps.indexes,
        prewarm: PrewarmMethod = TableCapacityProps.prewarm,
        table_quota: int = TableCapacityProps.table_quota,
        function_options: Mapping[str, FunctionOptions] | None = (
            TableCapacityProps.function_options
        ),
    ) -> None:
        super().__init__(scope, id)
        where = f"{self._KIND} {self.node.path}"
        self._validate_table(where, table)
        self._configure(where, prewarm, table_quota, tag=isinstance(table, NewTable))
        self._settle_config = self._validate_function_options(function_options)
        if isinstance(table, NewTable):
            self._render_new_table(table, read=read, write=write)
        elif isinstance(table, dynamodb.Table):
            self._adopt(table, read=read, write=write, indexes=dict(indexes or {}))
        else:
            self._import(table, read=read, write=write, indexes=dict(indexes or {}))
        self._identity = identity_of(self.table)  # ready: other constructs may see it
        ScalableTargetQuota.check(self)  # the app's scalable targets against the quota

    # ------------------------------------------------------------------ construction

    def _validate_table(self, where: str, table: dynamodb.ITable | NewTable) -> None:
        """A table TableCapacity can manage, and that no other TableCapacity manages."""
        if isinstance(table, NewTable):
            table.validate(where)
            return
        if isinstance(table, dynamodb.TableV2):
            raise CapacityConfigError(
                f"{where}: a TableV2 (AWS::DynamoDB::GlobalTable) manages its own capacity and "
                f"auto scaling (TableV2's Capacity.autoscaled(...)); for its schedules, windows "
                f"and high-water marks use GlobalTableCapacity"
            )
        if not isinstance(table, dynamodb.Table) and (
            not hasattr(table, "table_name") or is_token(table.table_name)
        ):
            known = f"table {table.node.path}, whose name is known at deploy time only"
            got = known if is_table(table) else shown(table)
            raise CapacityConfigError(
                f"{where}: table must be an aws_dynamodb.Table of this app, or one "
                f"imported by name (Table.from_table_name); got {got}"
            )
        if isinstance(table, dynamodb.Table):
            billing = Stack.of(table).resolve(cfn_of(table).billing_mode)
            if billing not in (None, "PROVISIONED"):
                raise CapacityConfigError(
                    f"{where}: the table's billing mode is {billing}; TableCapacity manages "
                    f"provisioned tables only"
                )
        self._validate_managed_once(where, table)
        if isinstance(table, dynamodb.Table):
            refuse_stock_auto_scaling(where, table)

    def _validate_schedule(self) -> list[str]:
        """Whole-schedule checks, once every entry and window is known (at synth)."""
        errors, warnings = self._schedule.check(own=self._own_actions())
        errors += self._unmanaged_indexes() + too_many_tags(self._where, self.table, self._tag)
        for warning in warnings:
            if warning not in self._warned:
                self._warned.add(warning)
                Annotations.of(self).add_warning_v2("ddb-capacity:schedule", warning)
        marks = [c.high_water_mark for dims in self._capacity.values() for c in dims.values()]
        settled = self.prewarm is PrewarmMethod.PROVISION_THEN_SETTLE
        if settled and all(m is None for m in marks) and PREWARM_UNUSED not in self._warned:
            self._warned.add(PREWARM_UNUSED)
            Annotations.of(self).add_warning_v2(
                PREWARM_UNUSED,
                f"{self._where}: prewarm=PROVISION_THEN_SETTLE, but neither the table nor any "
                "of its indexes has a high_water_mark, so nothing is pre-warmed: give a "
                "dimension Capacity(high_water_mark=...), or leave prewarm out",
            )
        return errors

    def _validate_managed_once(self, where: str, table: dynamodb.ITable) -> None:
        """No other TableCapacity (nor ProvisionedTable) of the app manages ``table``: two
        would each set its capacity and register its scalable targets."""
        other = capacity_of(self, table)
        if other is not None:
            name = "" if is_token(table.table_name) else f" ({shown(table.table_name)})"
            raise CapacityConfigError(
                f"{where}: table {table.node.path}{name} is managed already by "
                f"{other._where}; a table takes one TableCapacity (a "
                f"ProvisionedTable is one): give all of its capacity there, and remove this one"
            )

    def _validate_function_options(self, options: object) -> FunctionConfig:
        """``function_options``: the settle functions' (``"Settle"``), PROVISION_THEN_SETTLE
        only; returns its config merged over the defaults."""
        if options is not None and self.prewarm is not PrewarmMethod.PROVISION_THEN_SETTLE:
            raise CapacityConfigError(
                f"{self._where}: function_options: got {shown(options)}; they set the settle "
                f"function of prewarm=PrewarmMethod.PROVISION_THEN_SETTLE only, and prewarm is "
                f"{self.prewarm.name}"
            )
        return function_configs(self._where, options, _SETTLE_DEFAULTS)["Settle"]

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
        self._on_demand: OnDemandWindows | None = None  # made with the first window
        self._hold_store: dynamodb.ITable | None = None  # a serving CapacityRequests'
        self._ranges: dict[tuple[str | None, str], tuple[int, int]] = {}
        self._schedule = TableSchedule(where, self._ranges, table_quota, now=datetime.now(UTC))
        self._rendered: dict[tuple[str | None, str], ScheduledActions] = {}
        self._index_listeners: list[Callable[[str], None]] = []
        self._elsewhere = False  # a table imported by name: only its scalable targets here
        self._warned: set[str] = set()  # each warning once, however often validated
        self.node.add_validation(Checked(self._validate_schedule))

    def _render_new_table(self, spec: NewTable, *, read: Capacity, write: Capacity) -> None:
        """Make the table (child ``Resource``) at its initial capacity, and manage it."""
        capacity = self._checked(None, read=read, write=write)
        self.table = dynamodb.Table(
            self,
            "Resource",
            billing_mode=dynamodb.BillingMode.PROVISIONED,
            read_capacity=self._initial(capacity["read"]),
            write_capacity=self._initial(capacity["write"]),
            warm_throughput=self._warm_throughput(capacity),
            **spec.table_props(),
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
        """Manage a table of this app and each of its GSIs; their capacity properties are
        written by ``render_adopted`` (the live table's provisioned capacity is left to its
        scalable targets)."""
        self.table = table
        cfn = self._cfn_table()
        capacity = self._checked(None, read=read, write=write)
        render_adopted(cfn, "", capacity, self.prewarm, self._warm_throughput(capacity))
        self._manage(None)
        existing = [g["indexName"] for g in self._gsis()]
        check_index_keys(self._where, indexes, existing)
        for position, name in enumerate(existing):
            capacity = self._checked(name, **self._pair(name, indexes[name]))
            warm = self._warm_throughput(capacity)
            render_adopted(cfn, f"GlobalSecondaryIndexes.{position}.", capacity, self.prewarm, warm)
            self._manage(name)

    def _pair(self, name: str, pair: object) -> dict[str, Capacity]:
        """``indexes[name]``: a (read, write) pair, as ``_checked`` takes it."""
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise CapacityConfigError(
                f"{self._where}: indexes[{name!r}] must be a (read, write) pair of Capacity; "
                f"got {shown(pair)}"
            )
        return {"read": pair[0], "write": pair[1]}

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
        return cfn_of(self.table)

    def _gsis(self) -> list[dict[str, Any]]:
        return gsis_of(self.table)

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
        allowed = "a string of 3 to 255 characters of a-z, A-Z, 0-9, '_', '-' and '.'"
        if isinstance(index_name, str):
            known_at_synth(self._where, "index_name", index_name, INDEX_NAMED, allowed)
        if not isinstance(index_name, str) or not INDEX_NAME.fullmatch(index_name):
            raise CapacityConfigError(
                f"{self._where}: index_name must be {allowed}; got {index_name!r}"
            )
        if index_name in self._capacity:
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

    def _read_holds(self, store: dynamodb.ITable) -> None:
        """(``CapacityRequests``) the table's settle step and its on-demand windows' switch,
        made now or later, read its capacity holds in ``store``
        (`settle._settle_step.SettleStep.read_holds`, `table._on_demand`); told twice,
        once."""
        if self._hold_store is store:
            return
        self._hold_store = store
        if self._settle is not None:
            self._settle.read_holds(store)
        if self._on_demand is not None:
            self._on_demand.read_holds(store)

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
        known_entry(self._where, entry)
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
        self._schedule.add_window(
            capacity_window(
                self._where,
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
        )
        self._render_schedules(index_name, dimension)

    def add_on_demand_window(
        self,
        id: str,
        *,
        start: str,
        duration: Duration,
        time_zone: str | TimeZone | None = None,
        week_days: Sequence[str] | None = None,
        max_read_request_units: int | None = None,
        max_write_request_units: int | None = None,
        function_options: Mapping[str, FunctionOptions] | None = None,
    ) -> None:
        """Switch the table (its GSIs with it) to on-demand from ``start`` (HH:MM in
        ``time_zone``, default UTC) for ``duration`` (1 minute to under 24 hours) on
        ``week_days`` (default WEEKDAYS), and back to provisioned at the end, no lower than
        before: for the hours when spikes come. Its request units are capped meanwhile at
        ``max_read_request_units`` and ``max_write_request_units`` (default: the table's
        read and write ``max_capacity``), a cost guard. Its scalable targets are suspended
        through the window and restored exactly after. Refused at once: windows that overlap,
        or more than DynamoDB's 4 switches to on-demand in any rolling 24 hours. The stack's
        on-demand switch (a function, its state store, its schedules and its alarm) is
        made with the first window (docs: On-demand windows); ``function_options``
        (``{"Switch": FunctionOptions(...)}``) sets its function's memory, timeout (1 to 15
        minutes), log retention or architecture (default: 256 MB, 2 minutes): one switch a
        stack, so every window that gives them gives the same."""
        self._windows().add(
            id,
            start=start,
            duration=duration,
            time_zone=time_zone,
            week_days=week_days,
            max_read_request_units=max_read_request_units,
            max_write_request_units=max_write_request_units,
            function_options=function_options,
        )

    def _windows(self) -> OnDemandWindows:
        """The table's on-demand windows, made with the first."""
        if self._on_demand is None:
            from ._on_demand import OnDemandWindows

            maxima = (
                self._capacity[None]["read"].max_capacity,
                self._capacity[None]["write"].max_capacity,
            )
            self._on_demand = OnDemandWindows(
                self, self.table, self._where, self.table_quota, maxima
            )
            if self._hold_store is not None:
                self._on_demand.read_holds(self._hold_store)
        return self._on_demand

    def learn_on_demand_windows(
        self,
        *,
        target_utilization: int = 70,
        max_read_request_units: int | None = None,
        max_write_request_units: int | None = None,
        function_options: Mapping[str, FunctionOptions] | None = None,
    ) -> None:
        """Let the stack's on-demand switch choose, each day, the hours the table (its GSIs
        with it) runs on-demand: at 23:55 UTC it learns the next day's from the table's
        CloudWatch metrics of the 7 days before, costing each past hour provisioned (what its
        capacity cost, or for an hour spent on-demand the level target tracking at
        ``target_utilization`` %, 20 to 90, would have needed) and on-demand (what it
        served), and keeps the at most 4 runs of hours that save the most (docs: On-demand
        windows, "Learned windows"). Each window starts 5 minutes before its first hour and
        ends on the hour, the table back to provisioned no lower than before, its scalable
        targets restored exactly; a window that would pass DynamoDB's 4 switches to on-demand
        in any rolling 24 hours is skipped. Request units are capped meanwhile at
        ``max_read_request_units`` and ``max_write_request_units`` (default: the table's read
        and write ``max_capacity``). A table's windows are declared (`add_on_demand_window`)
        or learned, not both. ``function_options`` as for `add_on_demand_window`."""
        self._windows().learn(
            target_utilization, max_read_request_units, max_write_request_units, function_options
        )

    def on_demand_preview(self, *, count: int = 10, start: datetime | None = None) -> list[Switch]:
        """The next ``count`` (1 or more) switches of the table's on-demand windows from
        ``start`` (default: now): when, which window, and to which billing mode."""
        if self._on_demand is None:
            return []
        return self._on_demand.preview(count, start or datetime.now(UTC))

    def schedule_preview(self, *, count: int = 10, start: datetime | None = None) -> list[Event]:
        """The next ``count`` (1 or more) firings of the table's schedule from ``start``
        (default: now), each with its dimension's effective min and max after it."""
        return self._schedule.preview(count, start or datetime.now(UTC))

    def _render_schedules(self, index_name: str | None, dimension: str) -> None:
        """Render the schedule of one scalable target when the template is written: the
        actions of the user's own ``scale_on_schedule`` first, then the library's."""
        key = (index_name, dimension)
        if key in self._rendered:
            return
        cfn = self._cfn_target(self._scalable[key])
        self._rendered[key] = ScheduledActions(self._schedule, key, cfn)
        cfn.add_property_override("ScheduledActions", Lazy.any(self._rendered[key]))

    def _own_actions(self) -> dict[tuple[str | None, str], int]:
        """The actions each scheduled target has of its own (``scale_on_schedule``'s)."""
        return {key: len(actions.own()) for key, actions in self._rendered.items()}

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
            check_type(dimension, value, Capacity, where)
            value.validate(where, self.table_quota)
            if self.prewarm is PrewarmMethod.PROVISION_THEN_SETTLE:
                known_at_synth(
                    where,
                    "high_water_mark",
                    value.high_water_mark,
                    SETTLED_FROM,
                    "a whole number of capacity units",
                )
            if value.high_water_mark is not None and self._tag:
                Tags.of(self).add(PREWARM_TAG, self.prewarm.value)
            self._ranges[(index_name, dimension)] = (value.min_capacity, value.max_capacity)
        self._capacity[index_name] = capacity
        return capacity

    def _initial(self, capacity: Capacity) -> int:
        return capacity.starting_units(self.prewarm)

    def _warm_throughput(self, capacity: dict[str, Capacity]) -> dynamodb.WarmThroughput | None:
        if self.prewarm is not PrewarmMethod.WARM_THROUGHPUT:
            return None
        read, write = capacity["read"].high_water_mark, capacity["write"].high_water_mark
        if read is None and write is None:
            return None
        return dynamodb.WarmThroughput(read_units_per_second=read, write_units_per_second=write)

    def _manage(self, index_name: str | None) -> None:
        """Auto scale both dimensions and register what the settle step must lower."""
        table_name = self.table.table_name
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
            Tags.of(attribute.cfn if isinstance(attribute, ImportedDimension) else attribute).add(
                TARGET_TAG, table_name, include_resource_types=[SCALABLE_TARGET_TYPE]
            )
            initial = self._initial(capacity)
            if initial > capacity.min_capacity:
                if self._settle is None:
                    from ..settle._settle_step import (
                        SettleStep,  # only with a settle: it loads aws_lambda
                    )

                    self._settle = SettleStep(
                        self,
                        "Settle",
                        table=self.table,
                        where=self._where,
                        config=self._settle_config,
                    )
                    if self._hold_store is not None:
                        self._settle.read_holds(self._hold_store)
                self._settle.add_target(
                    index_name,
                    dimension,
                    initial,
                    capacity.min_capacity,
                    capacity.target_utilization_percent,
                )

    @staticmethod
    def _cfn_target(attribute: dynamodb.IScalableTableAttribute) -> appscaling.CfnScalableTarget:
        cfn = (
            attribute.cfn
            if isinstance(attribute, ImportedDimension)
            else attribute.node.find_child("Target").node.default_child
        )
        assert isinstance(cfn, appscaling.CfnScalableTarget)
        return cfn

    def _auto_scale(
        self, dimension: str, index_name: str | None, capacity: Capacity
    ) -> dynamodb.IScalableTableAttribute:
        bounds = {"min_capacity": capacity.min_capacity, "max_capacity": capacity.max_capacity}
        if self._elsewhere:
            return ImportedDimension(  # type: ignore[return-value]
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


def capacity_of(scope: Construct, table: dynamodb.ITable) -> TableCapacity | None:
    """The TableCapacity (not ``scope``) of its app that manages ``table`` (`identity_of`)."""
    keys = identity_of(table)
    found = (c for c in scope.node.root.node.find_all() if isinstance(c, TableCapacity))
    return next((c for c in found if c is not scope and c._identity & keys), None)
