"""Runs in: CDK app (synth time).

ThrottleAwareScaler: deploys the run-time scaler (`ddb_capacity_runtime.scaler`) on a
schedule, with its state store, least-privilege IAM, a dead-letter path, alarms and a topic."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import date
from types import MappingProxyType
from typing import Any, Unpack, cast

from aws_cdk import Annotations, Duration, Fn, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from ddb_capacity_runtime.core.deadline import MARGIN
from ddb_capacity_runtime.core.errors import CapacityConfigError, shown
from ddb_capacity_runtime.core.names import DIMENSIONS, STORE_ENV, WORST_TABLE_METRICS
from ddb_capacity_runtime.core.settings import (
    CONSTRUCT_SETTINGS,
    LEGACY_SETTINGS,
    RESERVED_SETTINGS,
    SETTINGS_BY_KEY,
    SHARDING_SETTINGS,
    ScalerConfig,
    for_mode,
)

from ..common import _wiring as wiring
from ..common._alarm_sink import chosen_alarm_topic
from ..common._alarms import (
    AlarmOptions,
    checked_alarm_options,
    emf_metric,
)
from ..common._function_options import FunctionDefaults, FunctionOptions, function_configs
from ..common._iam_statements import (
    state_store_statement,
)
from ..common._lazy import lazy_json, lazy_string
from ..common._props import Checked, MetricProps, ReservedCapacity, bool_prop
from ..common._runtime import state_store_table
from ..common._scheduled_function import scheduled_function
from ..global_tables._replica import Replica, ReplicaSource, check_account
from ..table._capacity import check_table_quota
from ..table._parts import table_keys
from ..table._table import (
    SCALER_GLOBAL,
    TableCapacity,
    check_table,
    imported_by_name,
    is_global_table_capacity,
    table_list,
)
from . import _scaler_props as checks
from ._batches import BatchPath, batch_path
from ._grants import ScalerGrants
from ._overrides import ScalerOverrides
from ._scaler_alarms import NAMESPACE as NAMESPACE
from ._scaler_alarms import AlarmedScaler, ScalerAlarms
from ._scaler_props import ScalerProps, ScalerTables

TIMEOUT = Duration.minutes(3)
"""Sized from benchmarks/scaler_tick.py: 1,000 tables x 2 GSIs is ~1,040 AWS calls a tick."""
MEMORY_MB = 256
FUNCTION_DEFAULTS = {
    "Scaler": FunctionDefaults(
        MEMORY_MB,
        TIMEOUT,
        shortest=Duration.minutes(1),
        why=f"a tick sends nothing in the last {int(MARGIN.total_seconds())} seconds before "
        "its timeout (its deadline), and needs the rest to read metrics and decide: at least "
        "a minute, and Lambda's longest is 15 minutes",
    )
}
"""The scaler's function (the scheduled one; a sharded tick's batch function too): its defaults and
the timeouts a tick's deadline allows (``function_options["Scaler"]``)."""
SCALER_METRICS = {
    **dict.fromkeys(
        (
            "Decisions",
            "ThrottleEventsSeen",
            "KeyRangeThrottleEvents",
            "HeldByReservation",
        ),
        "table",
    ),
    # per table, and for the deployment too: the worst table's (its Maximum over a tick)
    **dict.fromkeys(sorted(WORST_TABLE_METRICS), "both"),
    **dict.fromkeys(
        (
            "SharedFailures",
            "ControlPlaneThrottles",
            "DeadlinePassed",
            "TablesFound",
            "BatchesSent",
            "LateBatches",
            "HoldsDropped",
        ),
        "run",
    ),
    "Failures": "both",
}
"""The EMF metrics the tick sends (docs: Scaler run-time, "Logs and metrics"): per table (dimension
TableName), once a run (dimension StateStore: the scaler's state store), or both
(`WORST_TABLE_METRICS`: each table's record publishes them for the deployment too)."""
ALARM_IDS = (
    "Errors",
    "DeadLetters",
    "NotRunning",
    "BatchErrors",
    "BatchesLate",
    "BadTargets",
    "RefusedTags",
    "IgnoredTags",
    "MetricsStalled",
    "HoldsDropped",
    "TargetNotOwned",
    "PlansNotKept",
    "PinnedAtMax",
    "Updating",
    "SustainedThrottling",
    "HotKey",
)
"""The scaler's alarms, by stable id (``alarm_options``, ``alarms``)."""


class ThrottleAwareScaler(Construct):
    """A scheduled Lambda that raises capacity at once when requests are throttled.

    Its props, each with its default and what it does, are `ScalerProps`' fields: the
    keyword arguments here.

    The scaler keeps its run-time state (the configured minimum of a dimension it holds
    raised, the autopilot's plans) in ``state_store``, a small on-demand table (child
    ``StateStore``) that it writes only with conditional writes; tables' tags are
    configuration only, and the scaler may only remove the state tags 0.4 wrote. Connected
    to a ``CapacityRequests`` (without a call when it manages one of the requests' tables
    explicitly; ``requests.connect(scaler)`` for one that finds them by tag), it keeps its
    state in the requests' hold store instead, and ``StateStore`` is removed.
    """

    batches: BatchPath | None
    """The batch queue and function of a sharded tick; None unless ``sharded``."""

    @property
    def topic(self) -> sns.ITopic | None:
        """The earlier name of `alarm_topic`."""
        return self.alarm_topic

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        tables: ScalerTables = ScalerProps.tables,
        tag_key: str | None = ScalerProps.tag_key,
        tag_value: str = ScalerProps.tag_value,
        overrides: Mapping[str, Mapping[str, Any]] | None = ScalerProps.overrides,
        tick: Duration = ScalerProps.tick,
        dry_run: bool = ScalerProps.dry_run,
        mode: str = ScalerProps.mode,
        alarm_topic: sns.ITopic | None = ScalerProps.alarm_topic,
        topic: sns.ITopic | None = ScalerProps.topic,
        pinned_at_max_for: Duration = ScalerProps.pinned_at_max_for,
        throttled_for: Duration = ScalerProps.throttled_for,
        updating_for_ticks: int = ScalerProps.updating_for_ticks,
        hot_key_for: Duration | None = ScalerProps.hot_key_for,
        own_target: bool = ScalerProps.own_target,
        sharded: bool = ScalerProps.sharded,
        shard_above_tables: int | None = ScalerProps.shard_above_tables,
        tables_per_batch: int | None = ScalerProps.tables_per_batch,
        batch_concurrency: int | None = ScalerProps.batch_concurrency,
        read_legacy_state_until: date | None = ScalerProps.read_legacy_state_until,
        table_quota: int = ScalerProps.table_quota,
        reserved: ReservedCapacity | None = ScalerProps.reserved,
        alarm_options: Mapping[str, AlarmOptions] | None = ScalerProps.alarm_options,
        function_options: Mapping[str, FunctionOptions] | None = ScalerProps.function_options,
    ) -> None:
        super().__init__(scope, id)
        self._where = f"ThrottleAwareScaler {self.node.path}"
        self._alarm_options = checked_alarm_options(self._where, ALARM_IDS, alarm_options)
        configs = function_configs(self._where, function_options, FUNCTION_DEFAULTS)
        self._function_config = configs["Scaler"]
        self.table_quota = check_table_quota(self._where, table_quota)
        tick_minutes = checks.tick_minutes(self._where, tick, mode, updating_for_ticks)
        self.tag_key = checks.checked_tag_key(self._where, tag_key)
        self.reserved = checks.checked_reserved(self._where, reserved)
        *sharding, concurrency = checks.checked_sharding(
            self._where, sharded, shard_above_tables, tables_per_batch, batch_concurrency
        )
        self._tick, self._throttled_for = tick, throttled_for
        self._hot_key_ticks = checks.hot_key_ticks(self._where, hot_key_for, tick)
        self._init_tables(checks.checked_own_target(self._where, own_target, mode))
        self.tag_value = checks.checked_tag_value(self._where, tag_value)
        self.state_store: dynamodb.ITable = self._own_state_store()
        self.alarm_topic = chosen_alarm_topic(self, self._where, alarm_topic, topic)
        settings = self._settings(mode, tick_minutes, dry_run, sharding, read_legacy_state_until)
        self.dry_run = settings.dry_run
        """Whether it decides and logs only, changing nothing (``dry_run``)."""
        self._render_function(settings, sharded and concurrency)
        self._grants = ScalerGrants(self.policy, self.tag_key, tag_value)
        alarmed = self._alarmed()
        self._alarm_parts = ScalerAlarms(alarmed, pinned_at_max_for, updating_for_ticks, settings)
        for table in table_list(self._where, tables):
            self.add_table(table)
        self._overrides.configure(overrides or {}, self._tables)
        self._render_tables()
        self._grants.acknowledge()
        self.node.add_validation(Checked(self._validate))

    # ------------------------------------------------------------------ construction

    def _settings(
        self, mode: str, tick_minutes: int, dry_run: bool, sharding: list[int], until: object
    ) -> ScalerConfig:
        """The settings the construct writes from its props (``dry_run`` and ``until``,
        ``read_legacy_state_until``, checked here)."""
        return ScalerConfig(
            tag_key=self.tag_key,
            tag_value=self.tag_value,
            dry_run=bool_prop(self._where, "dry_run", dry_run),
            tick_minutes=tick_minutes,
            namespace=NAMESPACE,
            shard_above_tables=sharding[0],
            tables_per_batch=sharding[1],
            policy=for_mode(mode, tick_minutes),
            read_legacy_state_until=checks.checked_legacy_until(self._where, until),
            table_quota=self.table_quota,
            reserved_read_units=self.reserved.read_units if self.reserved else 0,
            reserved_write_units=self.reserved.write_units if self.reserved else 0,
        )

    def _own_state_store(self) -> dynamodb.ITable:
        """Where the run-time state lives (conditional writes only), ``state_store``: the
        scaler's own ``StateStore``, until it is connected to a CapacityRequests' hold
        store."""
        return state_store_table(
            self,
            "StateStore",
            contents="table names, capacity units and forecast plans",
            backup_reason="The scaler's state store keeps the configured minimum of each "
            "dimension it holds raised, and the autopilot's plans; point-in-time recovery "
            "covers it, and a lost plan is made again within the hour.",
        )

    def _init_tables(self, own_target: bool) -> None:
        """What the tables added will fill in: the tables, their overrides, the statements
        that grow with them, and (``own_target``) the target values the autopilot owns."""
        self._tables: list[dynamodb.ITable] = []
        self._table_keys: dict[tuple[str, str], str] = {}
        """Each managed table's keys (`table._parts.table_keys`), to the table's label."""
        self._overrides = ScalerOverrides(self._where, self.table_quota)
        self._own_target = own_target
        self._owned: dict[str, Any] = {}
        """per ProvisionedTable managed, the target values the autopilot owns"""
        self._replicas: dict[str, Any] = {}
        """per global table's replica managed, its other replicas' Regions"""

    def _render_function(self, settings: ScalerConfig, batch_concurrency: int | bool) -> None:
        """The scheduled function, configured by ``settings`` and its state store; with a
        ``batch_concurrency``, the batch path of a sharded tick too (and its settings)."""
        written = (
            CONSTRUCT_SETTINGS
            + (SHARDING_SETTINGS if batch_concurrency else ())
            + (LEGACY_SETTINGS if settings.read_legacy_state_until else ())
            + (RESERVED_SETTINGS if settings.reservation else ())
        )
        environment = {
            **settings.to_env(written),
            STORE_ENV: lazy_string(lambda: self.state_store.table_name),
        }
        scheduled = scheduled_function(
            self,
            handler="ddb_capacity_runtime.scaler.handler.lambda_handler",
            description="Throttle-aware DynamoDB capacity scaler",
            config=self._function_config,
            every=self._tick,
            calls="DynamoDB, Application Auto Scaling, CloudWatch, tagging",
            environment=environment,
            shared=bool(batch_concurrency),  # attached to the batch function's role too
            dead_letter_queue=bool(batch_concurrency),  # where a failed batch goes
        )
        self._scheduled = scheduled
        self.function, self.policy = scheduled.function, scheduled.policy
        self.dead_letter_queue, self.rule = scheduled.dead_letter_queue, scheduled.rule
        self.batches = None
        if batch_concurrency:
            self.batches = batch_path(
                self,
                scheduled=self.function,
                scheduled_policy=self.policy,
                dead_letter_queue=cast(sqs.Queue, scheduled.dead_letter_queue),
                config=self._function_config,
                concurrency=int(batch_concurrency),
                environment=environment,
            )
        self.policy.add_statements(
            state_store_statement("StateStore", lazy_string(lambda: self.state_store.table_arn))
        )

    def add_environment(self, key: str, value: str) -> None:
        """Set ``key`` in the environment of every function of the scaler (the scheduled
        one, and the batch function of a sharded tick), which read the same settings."""
        self.function.add_environment(key, value)
        if self.batches is not None:
            self.batches.function.add_environment(key, value)

    # ------------------------------------------------------------------ state store

    def use_state_store(self, table: dynamodb.ITable, *, dropped_alarmed: bool = False) -> None:
        """Keep the scaler's state in ``table`` (a state store of the same shape: ``pk`` and
        ``sk`` strings) instead of its own: the function's ``CAPACITY_HOLDS_TABLE`` and its
        ``StateStore`` statement name ``table``, and the scaler's own ``StateStore`` is
        removed. Once only, before anything refers to the scaler's own store.
        ``dropped_alarmed``: ``table``'s owner alarms on ``HoldsDropped`` itself, so the
        scaler's ``HoldsDropped`` alarm is removed. ``CapacityRequests.connect`` calls it with
        the requests' hold store (and its ``HoldsDropped`` alarm, when on)."""
        if not (hasattr(table, "table_arn") and hasattr(table, "table_name")):
            raise CapacityConfigError(
                f"{self._where}: use_state_store needs an aws_dynamodb.ITable; got {shown(table)}"
            )
        if table is self.state_store:
            return
        if self.state_store.node.scope is not self:
            raise CapacityConfigError(
                f"{self._where}: already keeps its state in {self.state_store.node.path}; "
                f"a scaler has one state store, so it cannot move to {table.node.path}"
            )
        self.node.try_remove_child("StateStore")
        if dropped_alarmed:
            self._alarm_parts.alarm_set.remove("HoldsDropped")
            if "HoldsDropped" in self._alarm_options:
                Annotations.of(self).add_warning_v2(
                    "ddb-capacity:holds-dropped-options",
                    f"{self._where}: alarm_options['HoldsDropped'] no longer apply: the state "
                    f"store's owner ({table.node.path}) alarms on HoldsDropped, with its own "
                    "options and topic; give them there",
                )
        self.state_store = table

    # ------------------------------------------------------------------ tables

    @property
    def tables(self) -> tuple[dynamodb.ITable, ...]:
        """The tables it manages explicitly (``tables``, [`add_table`][],
        ``enable_throttle_aware_scaling``), a ``TableCapacity`` as its ``table``; tables
        found by tag are known at run time only."""
        return tuple(self._tables)

    def add_table(self, table: dynamodb.ITable | TableCapacity | ReplicaSource | Replica) -> None:
        """Manage ``table`` explicitly: permissions on its ARN, alarms on its throttling,
        and, for a ``ProvisionedTable``, its configured ranges as the scaler's bounds. A
        global table's replica (a ``GlobalTableCapacity`` in its own stack, its `replica`
        in another Region's stack) is managed in this stack's Region: its template's
        ranges are the bounds, and its writes are decided on every replica's writes, as
        each Region's scaler decides them (docs: Global tables)."""
        if is_global_table_capacity(table):
            table = cast("ReplicaSource", table).replica(self)
        if isinstance(table, Replica):
            self._add_replica(table)
            return
        check_table(self._where, table, SCALER_GLOBAL)  # an ITable or a TableCapacity
        self._add_plain(cast("dynamodb.ITable | TableCapacity", table))

    def _add_plain(self, table: dynamodb.ITable | TableCapacity) -> None:
        """A table of this stack's Region (`add_table`)."""
        label = self._label_of(table)
        indexes: list[str] = []
        if isinstance(table, TableCapacity):
            indexes = self._configure_bounds(table, label)
            table = table.table
        self._manage(table, label, indexes)

    def _add_replica(self, replica: Replica) -> None:
        """A global table's replica in this stack's Region and its table's account
        (`add_table`)."""
        here = Stack.of(self).region
        if replica.region != here:
            raise CapacityConfigError(
                f"{self._where}: the replica in {replica.region} is managed by a scaler in "
                f"{replica.region}; this one is in {here}: pass capacity.replica(stack) of a "
                "stack in that Region to that stack's scaler"
            )
        check_account(self._where, replica, Stack.of(self))
        table, label = replica.table, self._label_of(replica.table)
        source = f"its replica's Capacity.autoscaled(...) in {replica.shown_region}"
        self._overrides.bounds(table, replica.bounds, source)
        if not self._replicas:
            self.add_environment(
                SETTINGS_BY_KEY["replicas"].name, lazy_json(self, lambda: self._replicas)
            )
        self._replicas[table.table_name] = {"regions": list(replica.others)}
        self._manage(table, label, replica.indexes)

    def _label_of(self, table: dynamodb.ITable | TableCapacity) -> str:
        """``table``'s label in construct ids (`_label`), its stack's path in front when the
        table is another stack's than the scaler's (``StackB-Feed``): a label from the table
        alone, whatever else is managed here, so adding or removing another table never
        renames (and so replaces) this one's alarms, and two tables at one path in two
        stacks never share one."""
        label = _label(table)
        it = table.table if isinstance(table, TableCapacity) else table
        if Stack.of(it) is not Stack.of(self):
            label = re.sub(r"[^A-Za-z0-9-]", "-", f"{Stack.of(it).node.path}-{label}")
        return label

    def _manage(self, table: dynamodb.ITable, label: str, indexes: Sequence[str]) -> None:
        """Permissions on ``table``, alarms on its and its ``indexes``' throttling and on its
        hot keys, and its name in the function's settings. A table managed already is
        refused: its alarms would be made twice."""
        keys = table_keys(table)
        if any(k in self._table_keys for k in keys):
            raise CapacityConfigError(
                f"{self._where}: manages {label} already (tables=[...], add_table or "
                "enable_throttle_aware_scaling, one of them once)"
            )
        self._table_keys.update(dict.fromkeys(keys, label))
        self._tables.append(table)
        self._grants.table(table)
        for index in [None, *indexes]:
            self._index_alarms(table, label, index)
        self._alarm_parts.hot_key(table, label)
        wiring.manage(self, keys)  # capacity requests that serve it connect this scaler

    def _configure_bounds(self, table: TableCapacity, label: str) -> list[str]:
        """A ``TableCapacity``'s configured ranges as its overrides; a GSI added later gets
        its alarms too. Returns its indexes."""
        bounds = {
            dim: {
                "min": table.capacity(dim).min_capacity,
                "max": table.capacity(dim).max_capacity,
                "target": table.capacity(dim).target_utilization_percent,
            }
            for dim in DIMENSIONS
        }
        source = f"its {type(table).__name__}'s read= and write="
        self._overrides.bounds(table.table, bounds, source, table.node.path)
        table.on_index_added(lambda index: self._index_added(table, label, index))
        if self._own_target and not imported_by_name(table):
            self._own(table)
        return table.index_names

    def _index_added(self, table: TableCapacity, label: str, index: str) -> None:
        self._index_alarms(table.table, label, index)
        if self._own_target and not imported_by_name(table):
            self._own(table)

    def _own(self, table: TableCapacity) -> None:
        """The target values of ``table``'s dimensions, the table's and each GSI's, as the
        autopilot owns them (``own_target``), and the right to write their policies."""

        def targets(index: str | None) -> dict[str, Any]:
            return {d: table.capacity(d, index).target_utilization_percent for d in DIMENSIONS}

        self._owned[table.table.table_name] = {
            **targets(None),
            "indexes": {i: targets(i) for i in table.index_names},
        }
        self._grants.owned(lambda: list(self._owned))

    @property
    def owned_targets(self) -> Mapping[str, Any] | None:
        """The target values the autopilot owns, by table name (``own_target``: each
        ``ProvisionedTable``'s ``{"read", "write", "indexes": {...}}``, as the function's
        ``SCALER_OWNED_TARGETS`` holds them); None without ``own_target``."""
        return MappingProxyType(self._owned) if self._own_target else None

    def _index_alarms(self, table: dynamodb.ITable, label: str, index: str | None) -> None:
        for dim in DIMENSIONS:
            self._alarm_parts.throttled(table, label, index, dim)

    def _render_tables(self) -> None:
        """The tables' settings, written when the template is (so each table added costs
        nothing more here): names and overrides known at deploy time only, as CloudFormation
        joins them."""

        def names() -> str:
            found = [t.table_name for t in self._tables]
            return Fn.join(",", found) if found else ""

        self.add_environment(SETTINGS_BY_KEY["tables"].name, lazy_string(names))
        self.add_environment(
            SETTINGS_BY_KEY["overrides"].name, lazy_json(self, lambda: self._overrides.entries)
        )
        if self._own_target:
            self.add_environment(
                SETTINGS_BY_KEY["owned_targets"].name, lazy_json(self, lambda: self._owned)
            )

    # ------------------------------------------------------------------ alarms and metrics

    @property
    def alarms(self) -> Mapping[str, cloudwatch.IAlarm]:
        """The scaler's alarms by stable id (read-only): ``Errors``, ``DeadLetters``,
        ``NotRunning``, ``BadTargets``, ``RefusedTags``, ``IgnoredTags``, ``PinnedAtMax``,
        ``Updating``; ``HoldsDropped`` unless connected to a ``CapacityRequests`` that alarms
        on it; ``BatchErrors`` and ``BatchesLate`` when sharded; ``TargetNotOwned`` with
        ``own_target``; ``PlansNotKept`` in autopilot (not a dry run);
        ``SustainedThrottling/<table>-<dim>``
        (``<table>-<index>-<dim>`` for a GSI) and ``HotKey/<table>`` per managed table. An
        alarm turned off by ``alarm_options`` is absent."""
        return self._alarm_parts.alarm_set.alarms

    def metric(
        self, metric_name: str, *, table_name: str | None = None, **props: Unpack[MetricProps]
    ) -> cloudwatch.Metric:
        """The tick's EMF metric ``metric_name`` (namespace ``DynamoDBCapacity``): per table
        with ``table_name``, else the tick's own record, this scaler's (dimension
        ``StateStore``, its state store's name; docs: Scaler run-time, "Logs and metrics").
        Default: Sum over one tick."""
        known, store = SCALER_METRICS, self._alarm_parts.store_name
        return emf_metric(
            self._where, NAMESPACE, known, metric_name, table_name, self._tick, props, store
        )

    def metric_failures(
        self, *, table_name: str | None = None, **props: Unpack[MetricProps]
    ) -> cloudwatch.Metric:
        """Tables that failed a tick (``table_name``: 1 when that table failed)."""
        return self.metric("Failures", table_name=table_name, **props)

    def metric_shared_failures(self, **props: Unpack[MetricProps]) -> cloudwatch.Metric:
        """Shared calls of a tick that failed after their retries."""
        return self.metric("SharedFailures", **props)

    def metric_deadline_passed(self, **props: Unpack[MetricProps]) -> cloudwatch.Metric:
        """Tables and changes a tick left to the next because its deadline passed."""
        return self.metric("DeadlinePassed", **props)

    def metric_capacity_at_max(
        self, table_name: str, **props: Unpack[MetricProps]
    ) -> cloudwatch.Metric:
        """The table's dimensions provisioned at their max, per tick."""
        return self.metric("CapacityAtMax", table_name=table_name, **props)

    def metric_throttle_events_seen(
        self, table_name: str, **props: Unpack[MetricProps]
    ) -> cloudwatch.Metric:
        """The table's throttle events the tick saw."""
        return self.metric("ThrottleEventsSeen", table_name=table_name, **props)

    def metric_key_range_throttle_events(
        self, table_name: str, **props: Unpack[MetricProps]
    ) -> cloudwatch.Metric:
        """The table's key-range (hot key) throttles, its GSIs' included."""
        return self.metric("KeyRangeThrottleEvents", table_name=table_name, **props)

    # ------------------------------------------------------------------ checks at synth

    def _alarmed(self) -> AlarmedScaler:
        """What the scaler's alarms are made of, once its function is rendered."""
        return AlarmedScaler(
            scope=self,
            where=self._where,
            tick=self._tick,
            throttled_for=self._throttled_for,
            hot_key_ticks=self._hot_key_ticks,
            own_target=self._own_target,
            function=self.function,
            function_timeout=self._function_config.timeout,
            dead_letter_queue=self.dead_letter_queue,
            failed_runs=self._scheduled.failed_runs(self._tick, "scaler function"),
            batches=self.batches,
            alarm_topic=self.alarm_topic,
            alarm_options=self._alarm_options,
            store_name=lambda: self.state_store.table_name,
        )

    def _shared(self) -> list[str]:
        """A table this scaler manages that another scaler of the app manages too (one
        construct, or one name in one stack: `table._parts.table_keys`): each would move its
        minimum on its own state, and take the other's raise for the configured minimum. Told
        once, by the scaler made first."""
        scalers = [x for x in self.node.root.node.find_all() if isinstance(x, ThrottleAwareScaler)]
        errors = []
        mine = self._table_keys
        for other in scalers[scalers.index(self) + 1 :]:
            both = sorted({mine[k] for k in mine.keys() & other._table_keys})
            if both:
                errors.append(
                    f"{self._where}: manages {', '.join(both)}, which ThrottleAwareScaler "
                    f"{other.node.path} manages too; a table has one scaler (each would take "
                    "the other's raised minimum for the configured one): manage it from one"
                )
        return errors

    def _validate(self) -> list[str]:
        """What can only be checked once the app is built."""
        errors = self._shared() + self._alarm_parts.unused_options(self._where)
        if not self._tables and not self.tag_key:
            errors.append(
                f"{self._where}: nothing to manage: pass tables=[...], call add_table(...) or "
                f"enable_throttle_aware_scaling(...), or set tag_key for tag discovery"
            )
        return errors + self._overrides.problems(self._tables, self.tag_key)


def _label(table: dynamodb.ITable | TableCapacity) -> str:
    """A stable name for ``table`` in construct ids: its path within its stack."""
    path = table.node.path.split("/", 1)[-1] if "/" in table.node.path else table.node.id
    return re.sub(r"[^A-Za-z0-9-]", "-", path)
