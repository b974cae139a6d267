"""Runs in: CDK app (synth time).

ThrottleAwareScaler: deploys the run-time scaler (`ddb_capacity_runtime.scaler`) on a
schedule, with its state store, least-privilege IAM, a dead-letter path, alarms and a topic."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from types import MappingProxyType
from typing import Any, Unpack

import jsii
from aws_cdk import Aws, Duration, Fn, IStableStringProducer, Lazy, Stack, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from constructs import Construct, IValidation

from ddb_capacity_runtime.aws.store import STORE_ENV
from ddb_capacity_runtime.core.errors import CapacityConfigError, shown
from ddb_capacity_runtime.core.names import DIMENSIONS, SCALER_TAGS, TARGET_TAG
from ddb_capacity_runtime.core.settings import (
    CONSTRUCT_SETTINGS,
    DEFAULT_SHARD_ABOVE_TABLES,
    DEFAULT_TABLES_PER_BATCH,
    DEFAULT_TICK_MINUTES,
    LEGACY_SETTINGS,
    MAX_LEGACY_STATE_DAYS,
    MAX_TABLES_PER_BATCH,
    MODES,
    RESERVED_SETTINGS,
    SETTINGS_BY_KEY,
    SHARDING_SETTINGS,
    OverrideError,
    ScalerConfig,
    for_mode,
)
from ddb_capacity_runtime.scaler.shard import MARGIN

from .alarm_sink import chosen_alarm_topic
from .alarms import (
    ALARM_WINDOW_SECONDS,
    AlarmOptions,
    checked_alarm_options,
    emf_metric,
)
from .batches import CONCURRENCY_RANGE, DEFAULT_BATCH_CONCURRENCY, BatchPath, batch_path
from .capacity import DEFAULT_TABLE_QUOTA, check_table_quota
from .compliance import acknowledge
from .iam_statements import (
    SCALABLE_TARGETS_FINDING,
    move_minimums_statement,
    read_autoscaling_statement,
    scalable_targets_reason,
    set_target_values_statement,
    state_store_statement,
)
from .props import MetricProps, ReservedCapacity, duration_prop
from .runtime import FunctionDefaults, FunctionOptions, function_configs, state_store_table
from .scaler_alarms import NAMESPACE as NAMESPACE
from .scaler_alarms import ScalerAlarms
from .scheduled_function import scheduled_function
from .table import TableCapacity, check_table, table_list

DEFAULT_TICK = Duration.minutes(DEFAULT_TICK_MINUTES)
"""Default tick: CloudWatch delivers a minute 1-3 minutes late; ticking every 2 minutes acts on
throttling about as soon as it is visible, at half the 5-minute delay of the 2019 Lambda article."""
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
            "DecreasesLeft",
            "CapacityAtMax",
            "IgnoredTags",
            "PlansNotKept",
            "ForecastsOn",
            "BadTargets",
            "RefusedTags",
            "RefusedTunedTargets",
            "KeyRangeThrottleEvents",
            "Updating",
            "HeldByReservation",
        ),
        "table",
    ),
    **dict.fromkeys(
        (
            "SharedFailures",
            "TablesManaged",
            "ControlPlaneThrottles",
            "DeadlinePassed",
            "TablesFound",
            "BatchesSent",
            "LateBatches",
        ),
        "run",
    ),
    "Failures": "both",
}
"""The EMF metrics the tick sends (docs: Scaler run-time, "Logs and metrics"): per table (dimension
TableName), once a run (no dimension), or both."""
ALARM_IDS = (
    "Errors",
    "DeadLetters",
    "NotRunning",
    "BatchErrors",
    "BatchesLate",
    "BadTargets",
    "RefusedTags",
    "PinnedAtMax",
    "Updating",
    "SustainedThrottling",
    "HotKey",
)
"""The scaler's alarms, by stable id (``alarm_options``, ``alarms``)."""
DEFAULT_PINNED_FOR = Duration.minutes(30)
DEFAULT_THROTTLED_FOR = Duration.minutes(10)
DEFAULT_UPDATING_TICKS = 5
"""Ticks in a row that find a table UPDATING before it alarms: 10 minutes at the default tick,
longer than an UpdateTable of capacity takes ("several minutes")."""
DEFAULT_HOT_KEY_FOR = Duration.minutes(10)
"""How long a managed table's key-range throttles last before its hot-key alarm fires."""


class ThrottleAwareScaler(Construct):
    """A scheduled Lambda that raises capacity at once when requests are throttled.

    :param tables: tables to manage explicitly (``ProvisionedTable`` or any ``ITable``), as
        a list. Default: none.
    :param tag_key: also manage every table carrying the tag ``tag_key=tag_value``.
        Default: no tag discovery. Permissions for discovered tables are scoped by the tag
        (ABAC).
    :param tag_value: the value of that tag. Default: ``"true"``.
    :param overrides: per-table ``{"min", "max", "target", "read": {...}, "write": {...}}``,
        keyed by table name. ``ProvisionedTable``s get their configured ranges by default.
    :param tick: how often it runs. Default: 2 minutes (docs: Scaler, why).
    :param dry_run: decide and log, change nothing. Default: False.
    :param mode: ``"autopilot"`` (default) or ``"reactive"``. The autopilot sizes raises by
        the newest minutes only (no chasing a burst that is over), decreases promptly after
        a burst, and forecasts recurring load once an hour per table, planned per 5 minutes
        and kept in the state store, raising the minimum ahead of a known peak and holding
        it until the peak is over (docs: Autopilot). ``"reactive"`` is 0.3's policy.
    :param alarm_topic: where the alarms go. Default: the stack's shared library topic
        (one SNS topic, SSL enforced, encrypted with one KMS key, for every construct of the
        library in the stack given none).
    :param topic: the earlier name of ``alarm_topic`` (a warning at synth).
    :param pinned_at_max_for: alarm when a table sits at its max this long. Default 30 min.
    :param throttled_for: alarm when a managed table is throttled this long. Default 10 min.
    :param updating_for_ticks: alarm when a managed table is found UPDATING (and so skipped)
        by this many ticks in a row: a whole number from 1 to a day's ticks. Default 5.
    :param hot_key_for: alarm when a managed table's requests are throttled by a hot key
        (key-range throttles, which capacity cannot fix and the scaler never raises for)
        in every tick for this long: from one tick to a day. Default 10 minutes. One alarm
        per managed table; its description points to CloudWatch Contributor Insights in
        its throttled-keys mode, which names the keys (docs: Hot keys).
    :param own_target: the autopilot also owns target tracking's target value of each
        ``ProvisionedTable`` it manages (table and GSIs): while a plan's floor is in force it
        sets the dimension's target-tracking policy to the plan's aim (up to 90 %, as high
        as the forecast's error allows), and back to the ``Capacity``'s
        ``target_utilization_percent`` after, so target tracking scales in as far as the
        forecast allows. Autopilot mode only. CloudFormation keeps the configured value, so
        drift detection reports the policy while a plan is in force (docs: Autopilot,
        "Owning the target value"). Default False.
    :param sharded: deploy the batch path of a sharded tick: an SQS queue (child
        ``BatchQueue``) and a batch function (child ``BatchFunction``) with its alarms. A
        tick that finds more than ``shard_above_tables`` tables then sends them in batches
        to the queue, and the batch function ticks each batch on its own, before the next
        tick (docs: Fleet scale). Default False: one invocation ticks every table (about
        1,500 within a 2-minute tick); above ``shard_above_tables`` it logs
        ``shard-advised``.
    :param shard_above_tables: with ``sharded``, the table count above which a tick is
        sharded, from 1 to 1,000,000. Default 1,000.
    :param tables_per_batch: with ``sharded``, tables in a batch, from 1 to 500. Default
        125 (with 2 GSIs each, 1,500 metric queries: 3 full GetMetricData calls).
    :param batch_concurrency: with ``sharded``, batches ticked at once (the event source's
        maximum concurrency, and the batch function's reserved concurrency, which must
        leave the account 100 unreserved), from 2 to 1,000. Default 10.
    :param read_legacy_state_until: an upgrade from 0.4 only: the last UTC day (a
        ``datetime.date``, from today to 30 days ahead) on which the scaler reads 0.4's
        state tags (``ddb-capacity:base-min:*``, the minimum it held raised) on a table it
        sees for the first time, and moves them into the state store; a remembered minimum
        is never moved below the dimension's configured one (its ``overrides`` min, a
        ``ProvisionedTable``'s range, else the target's minimum now). Default: never read:
        such tags are removed unread and counted as ignored (docs: Scaler, "Upgrading
        from 0.4").
    :param table_quota: the account's per-table capacity quota, in capacity units: the
        largest capacity the scaler reads, remembers or sets for one dimension (a minimum,
        a maximum, an override), from 1 to 1,000,000. Default: 40,000 (DynamoDB's default
        quota). Each tick also reads the account's quota (DescribeLimits) and uses it where
        it is larger; a smaller one never lowers this. The overrides and ranges checked at
        synth are bounded by this value, so raise it to declare capacities above 40,000.
    :param reserved: the Region's reserved capacity (`ReservedCapacity`): the scaler then
        never lowers the provisioned total of the tables it manages (per dimension, tables
        and GSIs) below the reserved units: a decrease that would is cut back to the
        reservation, or not made; raises are never limited. A table whose capacity is not
        known that tick counts 0, so fewer decreases happen, never more. A sharded tick's
        batch keeps its own tables' total at or above the whole reservation. It does not
        see reserved units used by tables it does not manage (docs: Scaler, "Reserved
        capacity"). Default: None (no reservation).
    :param alarm_options: per alarm id (``"Errors"``, ``"DeadLetters"``, ``"NotRunning"``,
        ``"BatchErrors"``, ``"BatchesLate"``, ``"BadTargets"``, ``"RefusedTags"``,
        ``"PinnedAtMax"``, ``"Updating"``, ``"SustainedThrottling"`` and ``"HotKey"``, the
        last two for every managed table), an ``AlarmOptions``: off, another threshold or
        evaluation periods, more actions. Default: every alarm as documented (docs:
        Alarms). The alarms made are `alarms`.
    :param function_options: ``{"Scaler": FunctionOptions(...)}``: the memory, timeout
        (1 to 15 minutes), log retention and architecture of the scaler's function (and of
        a sharded tick's batch function), merged over the defaults. Default: 256 MB, 3
        minutes, one year, ARM_64.

    The scaler keeps its run-time state (the configured minimum of a dimension it holds
    raised, the autopilot's plans) in ``state_store``, a small on-demand table (child
    ``StateStore``) that it writes only with conditional writes; tables' tags are
    configuration only, and the scaler may only remove the state tags 0.4 wrote. Connected
    to a ``CapacityRequests`` (``requests.connect(scaler)``), it keeps its state in the
    requests' hold store instead, and ``StateStore`` is removed.
    """

    batches: BatchPath | None
    """The batch queue and function of a sharded tick; None unless ``sharded``."""

    @property
    def topic(self) -> sns.ITopic:
        """The earlier name of `alarm_topic`."""
        return self.alarm_topic

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        tables: Sequence[dynamodb.ITable | TableCapacity] = (),
        tag_key: str | None = None,
        tag_value: str = "true",
        overrides: Mapping[str, Mapping[str, Any]] | None = None,
        tick: Duration = DEFAULT_TICK,
        dry_run: bool = False,
        mode: str = "autopilot",
        alarm_topic: sns.ITopic | None = None,
        topic: sns.ITopic | None = None,
        pinned_at_max_for: Duration = DEFAULT_PINNED_FOR,
        throttled_for: Duration = DEFAULT_THROTTLED_FOR,
        updating_for_ticks: int = DEFAULT_UPDATING_TICKS,
        hot_key_for: Duration = DEFAULT_HOT_KEY_FOR,
        own_target: bool = False,
        sharded: bool = False,
        shard_above_tables: int | None = None,
        tables_per_batch: int | None = None,
        batch_concurrency: int | None = None,
        read_legacy_state_until: date | None = None,
        table_quota: int = DEFAULT_TABLE_QUOTA,
        reserved: ReservedCapacity | None = None,
        alarm_options: Mapping[str, AlarmOptions] | None = None,
        function_options: Mapping[str, FunctionOptions] | None = None,
    ) -> None:
        super().__init__(scope, id)
        self._where = f"ThrottleAwareScaler {self.node.path}"
        self._alarm_options = checked_alarm_options(self._where, ALARM_IDS, alarm_options)
        self._function_config = function_configs(self._where, function_options, FUNCTION_DEFAULTS)[
            "Scaler"
        ]
        tick_minutes = self._validate_props(tick, mode, updating_for_ticks, tag_key, table_quota)
        self.reserved = self._validate_reserved(reserved)
        *sharding, concurrency = self._validate_sharding(
            sharded, shard_above_tables, tables_per_batch, batch_concurrency
        )
        self._tick, self._throttled_for, self.tag_key = tick, throttled_for, tag_key
        self._hot_key_ticks = self._validate_hot_key_for(hot_key_for)
        self._init_tables(self._validate_own_target(own_target, mode))
        self.tag_value = tag_value
        self.state_store: dynamodb.ITable = self._own_state_store()
        self.alarm_topic = chosen_alarm_topic(self, self._where, alarm_topic, topic)
        self._render_function(
            self._settings(mode, tick_minutes, dry_run, sharding, read_legacy_state_until),
            sharded and concurrency,
        )
        self._grant_static()
        if tag_key:
            self._grant_tagged(tag_key, tag_value)
        self._alarm_parts = ScalerAlarms(self, pinned_at_max_for, updating_for_ticks)
        for table in table_list(self._where, tables):
            self.add_table(table)
        self._configure_overrides(overrides or {})
        self._render_tables()
        self._acknowledge()
        self.node.add_validation(_ScalerValidation(self))

    # ------------------------------------------------------------------ construction

    def _validate_props(
        self,
        tick: Duration,
        mode: str,
        updating_for_ticks: int,
        tag_key: str | None,
        table_quota: int,
    ) -> int:
        """The props checked (``table_quota`` kept as `table_quota`); returns the
        tick in whole minutes."""
        where = self._where
        duration_prop(where, "tick", tick, Duration.minutes(1))
        self.table_quota = check_table_quota(where, table_quota)
        seconds = tick.to_seconds()
        if seconds % 60 or not 60 <= seconds <= 3600:
            raise CapacityConfigError(
                f"{where}: tick must be whole minutes from 1 to 60; got {tick.to_human_string()}"
            )
        if mode not in MODES:
            raise CapacityConfigError(
                f"{where}: mode must be one of {', '.join(MODES)}; got {mode!r}"
            )
        most = int(ALARM_WINDOW_SECONDS // seconds)
        if (
            isinstance(updating_for_ticks, bool)
            or not isinstance(updating_for_ticks, int)
            or not 1 <= updating_for_ticks <= most
        ):
            raise CapacityConfigError(
                f"{where}: updating_for_ticks must be a whole number of ticks from 1 to {most} "
                f"(a day at a tick of {tick.to_human_string()}); "
                f"got {shown(updating_for_ticks)}"
            )
        if tag_key is not None and not (isinstance(tag_key, str) and 1 <= len(tag_key) <= 128):
            raise CapacityConfigError(
                f"{where}: tag_key must be a tag key of 1 to 128 characters; got {tag_key!r}"
            )
        return int(seconds // 60)

    def _settings(
        self, mode: str, tick_minutes: int, dry_run: bool, sharding: list[int], until: object
    ) -> ScalerConfig:
        """The settings the construct writes from its props (``until``:
        ``read_legacy_state_until``, checked here)."""
        return ScalerConfig(
            tag_key=self.tag_key,
            tag_value=self.tag_value,
            dry_run=dry_run,
            tick_minutes=tick_minutes,
            namespace=NAMESPACE,
            shard_above_tables=sharding[0],
            tables_per_batch=sharding[1],
            policy=for_mode(mode, tick_minutes),
            read_legacy_state_until=self._validate_legacy_until(until),
            table_quota=self.table_quota,
            reserved_read_units=self.reserved.read_units if self.reserved else 0,
            reserved_write_units=self.reserved.write_units if self.reserved else 0,
        )

    def _validate_reserved(self, reserved: object) -> ReservedCapacity | None:
        """``reserved`` checked: None or a `ReservedCapacity` (which checks its units)."""
        if reserved is not None and not isinstance(reserved, ReservedCapacity):
            raise CapacityConfigError(
                f"{self._where}: reserved: got {shown(reserved)}; expected "
                "ReservedCapacity(read_units=..., write_units=...) or None"
            )
        return reserved

    def _validate_legacy_until(self, until: object) -> date | None:
        """``read_legacy_state_until`` checked: None, or a date from today (UTC) to
        MAX_LEGACY_STATE_DAYS ahead (an upgrade's window, never an open door)."""
        if until is None:
            return None
        today = datetime.now(UTC).date()
        last = today + timedelta(days=MAX_LEGACY_STATE_DAYS)
        if isinstance(until, datetime) or not isinstance(until, date) or not today <= until <= last:
            raise CapacityConfigError(
                f"{self._where}: read_legacy_state_until must be a datetime.date from today "
                f"({today}) to {MAX_LEGACY_STATE_DAYS} days ahead ({last}): 0.4's state tags "
                f"are read during an upgrade only; got {shown(until)}"
            )
        return until

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

    def _validate_sharding(
        self, sharded: object, above: object, per_batch: object, concurrency: object
    ) -> tuple[int, int, int]:
        """The sharding props checked (the Lambda checks the first two again); returns
        them with their defaults."""
        if not isinstance(sharded, bool):
            raise CapacityConfigError(
                f"{self._where}: sharded must be True or False; got {shown(sharded)}"
            )
        checks = (
            ("shard_above_tables", above, 1, 1_000_000, DEFAULT_SHARD_ABOVE_TABLES),
            ("tables_per_batch", per_batch, 1, MAX_TABLES_PER_BATCH, DEFAULT_TABLES_PER_BATCH),
            ("batch_concurrency", concurrency, *CONCURRENCY_RANGE, DEFAULT_BATCH_CONCURRENCY),
        )
        out = []
        for name, value, low, high, default in checks:
            if value is not None and not sharded:
                raise CapacityConfigError(
                    f"{self._where}: {name} applies to a sharded tick only; got {shown(value)} "
                    "without sharded=True"
                )
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high
            ):
                raise CapacityConfigError(
                    f"{self._where}: {name} must be a whole number from {low:,} to {high:,}; "
                    f"got {shown(value)}"
                )
            out.append(default if value is None else value)
        return out[0], out[1], out[2]

    def _init_tables(self, own_target: bool) -> None:
        """What the tables added will fill in: the tables, their overrides, the statements
        that grow with them, and (``own_target``) the target values the autopilot owns."""
        self._tables: list[dynamodb.ITable] = []
        self._overrides: dict[str, Any] = {}
        self._forget_state_tags: iam.PolicyStatement | None = None
        self._move_minimums: iam.PolicyStatement | None = None
        self._own_target = own_target
        self._owned: dict[str, Any] = {}
        """per ProvisionedTable managed, the target values the autopilot owns"""
        self._set_target_values: iam.PolicyStatement | None = None

    def _validate_own_target(self, own_target: object, mode: str) -> bool:
        """``own_target`` checked: a bool, True in the autopilot mode only."""
        if not isinstance(own_target, bool):
            raise CapacityConfigError(
                f"{self._where}: own_target must be True or False; got {shown(own_target)}"
            )
        if own_target and mode != "autopilot":
            raise CapacityConfigError(
                f"{self._where}: own_target needs mode='autopilot' (its plans set the target "
                f"value); got mode={mode!r}"
            )
        return own_target

    def _validate_hot_key_for(self, hot_key_for: Duration) -> int:
        """``hot_key_for`` checked; returns it in ticks (rounded up)."""
        duration_prop(self._where, "hot_key_for", hot_key_for, Duration.minutes(1))
        seconds = hot_key_for.to_seconds()
        tick = self._tick.to_seconds()
        if not tick <= seconds <= ALARM_WINDOW_SECONDS:
            raise CapacityConfigError(
                f"{self._where}: hot_key_for must be a Duration from one tick "
                f"({self._tick.to_human_string()}) to 1 day; got {hot_key_for.to_human_string()}"
            )
        return math.ceil(seconds / tick)

    def _render_function(self, settings: ScalerConfig, batch_concurrency: int | bool) -> None:
        """The scheduled function, configured by ``settings`` and its state store; with a
        ``batch_concurrency``, the batch path of a sharded tick too (and its settings)."""
        scheduled = scheduled_function(
            self,
            handler="ddb_capacity_runtime.scaler.handler.lambda_handler",
            description="Throttle-aware DynamoDB capacity scaler",
            config=self._function_config,
            every=self._tick,
            calls="DynamoDB, Application Auto Scaling, CloudWatch, tagging",
        )
        self.function, self.policy = scheduled.function, scheduled.policy
        self.dead_letter_queue, self.rule = scheduled.dead_letter_queue, scheduled.rule
        self.batches = None
        if batch_concurrency:
            self.batches = batch_path(
                self,
                scheduled=self.function,
                scheduled_policy=self.policy,
                dead_letter_queue=self.dead_letter_queue,
                config=self._function_config,
                concurrency=int(batch_concurrency),
            )
        written = (
            CONSTRUCT_SETTINGS
            + (SHARDING_SETTINGS if self.batches else ())
            + (LEGACY_SETTINGS if settings.read_legacy_state_until else ())
            + (RESERVED_SETTINGS if settings.reservation else ())
        )
        for name, value in settings.to_env(written).items():
            self.add_environment(name, value)
        self.add_environment(STORE_ENV, Lazy.string(_StoreName(self)))
        self.policy.add_statements(
            state_store_statement("StateStore", Lazy.string(_StoreArn(self)))
        )

    def add_environment(self, key: str, value: str) -> None:
        """Set ``key`` in the environment of every function of the scaler (the scheduled
        one, and the batch function of a sharded tick), which read the same settings."""
        self.function.add_environment(key, value)
        if self.batches is not None:
            self.batches.function.add_environment(key, value)

    def _configure_overrides(self, overrides: Mapping[str, Mapping[str, Any]]) -> None:
        for name, override in overrides.items():
            self._overrides[name] = self._checked_override(name, override)
        self._explicit_overrides = set(overrides.keys())

    def _checked_override(self, name: str, override: Any) -> dict[str, Any]:
        """``override`` checked as the Lambda will check it (one definition: ScalerConfig)."""
        if Token.is_unresolved(name):  # a name known at deploy time only: kept as given
            return dict(override) if isinstance(override, Mapping) else override
        try:
            config = ScalerConfig(overrides={name: override}, table_quota=self.table_quota)
            config.limits(name, {})
        except OverrideError as exc:
            raise CapacityConfigError(f"{self._where}: {exc}") from None
        return dict(override)

    # ------------------------------------------------------------------ state store

    def use_state_store(self, table: dynamodb.ITable) -> None:
        """Keep the scaler's state in ``table`` (a state store of the same shape: ``pk`` and
        ``sk`` strings) instead of its own: the function's ``CAPACITY_HOLDS_TABLE`` and its
        ``StateStore`` statement name ``table``, and the scaler's own ``StateStore`` is
        removed. Once only, before anything refers to the scaler's own store.
        ``CapacityRequests.connect`` calls it with the requests' hold store."""
        if not (hasattr(table, "table_arn") and hasattr(table, "table_name")):
            raise CapacityConfigError(
                f"{self._where}: use_state_store needs an aws_dynamodb.ITable; got {table!r}"
            )
        if table is self.state_store:
            return
        if self.state_store.node.scope is not self:
            raise CapacityConfigError(
                f"{self._where}: already keeps its state in {self.state_store.node.path}; "
                f"a scaler has one state store, so it cannot move to {table.node.path}"
            )
        self.node.try_remove_child("StateStore")
        self.state_store = table

    # ------------------------------------------------------------------ tables

    @property
    def tables(self) -> tuple[dynamodb.ITable, ...]:
        """The tables it manages explicitly (``tables``, [`add_table`][],
        ``enable_throttle_aware_scaling``), a ``TableCapacity`` as its ``table``; tables
        found by tag are known at run time only."""
        return tuple(self._tables)

    def add_table(self, table: dynamodb.ITable | TableCapacity) -> None:
        """Manage ``table`` explicitly: permissions on its ARN, alarms on its throttling,
        and, for a ``ProvisionedTable``, its configured ranges as the scaler's bounds."""
        check_table(self._where, table)
        label = _label(table)
        indexes: list[str] = []
        if isinstance(table, TableCapacity):
            indexes = self._configure_bounds(table, label)
            table = table.table
        self._tables.append(table)
        self._grant_table(table)
        for index in [None, *indexes]:
            self._index_alarms(table, label, index)
        self._alarm_parts.hot_key(table, label)
        self._render_tables()

    def _configure_bounds(self, table: TableCapacity, label: str) -> list[str]:
        """A ``TableCapacity``'s configured ranges as its overrides; a GSI added later gets
        its alarms too. Returns its indexes."""
        self._overrides[table.table.table_name] = {
            dim: {
                "min": table.capacity(dim).min_capacity,
                "max": table.capacity(dim).max_capacity,
                "target": table.capacity(dim).target_utilization_percent,
            }
            for dim in DIMENSIONS
        }
        table.on_index_added(lambda index: self._index_added(table, label, index))
        if self._own_target and not table._elsewhere:
            self._own(table)
        return table.index_names

    def _index_added(self, table: TableCapacity, label: str, index: str) -> None:
        self._index_alarms(table.table, label, index)
        if self._own_target and not table._elsewhere:
            self._own(table)
            self._render_tables()

    def _own(self, table: TableCapacity) -> None:
        """The target values of ``table``'s dimensions, the table's and each GSI's, as the
        autopilot owns them (``own_target``), and the right to write their policies."""

        def targets(index: str | None) -> dict[str, Any]:
            return {d: table.capacity(d, index).target_utilization_percent for d in DIMENSIONS}

        self._owned[table.table.table_name] = {
            **targets(None),
            "indexes": {i: targets(i) for i in table.index_names},
        }
        names = list(self._owned)
        if self._set_target_values is None:
            self._set_target_values = set_target_values_statement(
                "SetOwnedTargetValues", TARGET_TAG, names
            )
            self.policy.add_statements(self._set_target_values)
        else:
            self._set_target_values.add_condition(
                "StringEquals", {f"aws:ResourceTag/{TARGET_TAG}": names}
            )

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
        stack = Stack.of(self)
        names = [t.table_name for t in self._tables]
        # names and overrides known at deploy time only: written as CloudFormation joins them
        self.add_environment(SETTINGS_BY_KEY["tables"].name, Fn.join(",", names) if names else "")
        self.add_environment(
            SETTINGS_BY_KEY["overrides"].name, stack.to_json_string(self._overrides)
        )
        if self._own_target:
            self.add_environment(
                SETTINGS_BY_KEY["owned_targets"].name, stack.to_json_string(self._owned)
            )

    # ------------------------------------------------------------------ IAM

    def _grant_static(self) -> None:
        self.policy.add_statements(
            read_autoscaling_statement(),
            iam.PolicyStatement(
                sid="ReadMetrics", actions=["cloudwatch:GetMetricData"], resources=["*"]
            ),
            # the account's table quota, where above table_quota, bounds levels and minimums
            iam.PolicyStatement(
                sid="ReadTableQuota", actions=["dynamodb:DescribeLimits"], resources=["*"]
            ),
        )  # no PutMetricData: the tick's metrics are EMF lines in its own log

    def _grant_table(self, table: dynamodb.ITable) -> None:
        """Describe, update and list the tags of ``table``; forget its state tags; move the
        minimums of its scalable targets (one statement for every explicit table)."""
        self.policy.add_statements(
            iam.PolicyStatement(
                sid=f"ManageTable{len(self._tables)}",
                actions=[
                    "dynamodb:DescribeTable",
                    "dynamodb:UpdateTable",
                    "dynamodb:ListTagsOfResource",
                ],
                resources=[table.table_arn],
            )
        )
        if self._forget_state_tags is None:
            self._forget_state_tags = _forget_state_tags("ForgetStateTags", [table.table_arn])
            self._move_minimums = move_minimums_statement(
                "MoveMinimums", TARGET_TAG, [table.table_name]
            )
            self.policy.add_statements(self._forget_state_tags, self._move_minimums)
        else:
            assert self._move_minimums is not None
            self._forget_state_tags.add_resources(table.table_arn)
            self._move_minimums.add_condition(
                "StringEquals",
                {f"aws:ResourceTag/{TARGET_TAG}": [t.table_name for t in self._tables]},
            )

    def _grant_tagged(self, key: str, value: str) -> None:
        tables = f"arn:{Aws.PARTITION}:dynamodb:{Aws.REGION}:{Aws.ACCOUNT_ID}:table/*"
        self.policy.add_statements(
            iam.PolicyStatement(
                sid="DiscoverTables", actions=["tag:GetResources"], resources=["*"]
            ),
            iam.PolicyStatement(
                sid="ManageTaggedTables",
                actions=[
                    "dynamodb:DescribeTable",
                    "dynamodb:UpdateTable",
                    "dynamodb:ListTagsOfResource",
                ],
                resources=[tables],
                conditions={"StringEquals": {f"aws:ResourceTag/{key}": value}},
            ),
            _forget_state_tags(
                "ForgetStateTagsOnTaggedTables",
                [tables],
                {"StringEquals": {f"aws:ResourceTag/{key}": value}},
            ),
            # a tag-discovered table's targets are adopted only if they carry the tag too
            move_minimums_statement("MoveMinimumsOfTaggedTargets", key, [value]),
        )

    def _acknowledge(self) -> None:
        wildcards = {
            "Resource::*": "DescribeScalableTargets, DescribeScalingPolicies, GetMetricData, "
            "DescribeLimits and tag:GetResources have no resource-level permissions; they "
            "only read.",
            SCALABLE_TARGETS_FINDING: scalable_targets_reason(
                f"{TARGET_TAG} with the name of a table the scaler manages"
                + (f", or tagged {self.tag_key}={self.tag_value}" if self.tag_key else ""),
                "the ProvisionedTables it manages (own_target)" if self._owned else "",
            ),
        }
        if self.tag_key:
            wildcards[
                "Resource::arn:<AWS::Partition>:dynamodb:<AWS::Region>:<AWS::AccountId>:table/*"
            ] = (
                f"Tables found by tag are only known at run time; the "
                f"statement is limited to tables tagged "
                f"{self.tag_key}={self.tag_value} by an aws:ResourceTag "
                f"condition."
            )
        for resource, reason in wildcards.items():
            acknowledge(self.policy, f"AwsSolutions-IAM5[{resource}]", reason)

    # ------------------------------------------------------------------ alarms and metrics

    @property
    def alarms(self) -> Mapping[str, cloudwatch.Alarm]:
        """The scaler's alarms by stable id (read-only): ``Errors``, ``DeadLetters``,
        ``NotRunning``, ``BadTargets``, ``RefusedTags``, ``PinnedAtMax``, ``Updating``;
        ``BatchErrors`` and ``BatchesLate`` when sharded; ``SustainedThrottling/<table>-<dim>``
        (``<table>-<index>-<dim>`` for a GSI) and ``HotKey/<table>`` per managed table. An
        alarm turned off by ``alarm_options`` is absent."""
        return self._alarm_parts.alarm_set.alarms

    def metric(
        self, metric_name: str, *, table_name: str | None = None, **props: Unpack[MetricProps]
    ) -> cloudwatch.Metric:
        """The tick's EMF metric ``metric_name`` (namespace ``DynamoDBCapacity``): per table
        with ``table_name``, else the tick's own record (docs: Scaler run-time, "Logs and
        metrics"). Default: Sum over one tick."""
        return emf_metric(
            self._where, NAMESPACE, SCALER_METRICS, metric_name, table_name, self._tick, props
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


def _label(table: dynamodb.ITable | TableCapacity) -> str:
    """A stable name for ``table`` in construct ids: its path within its stack."""
    path = table.node.path.split("/", 1)[-1] if "/" in table.node.path else table.node.id
    return re.sub(r"[^A-Za-z0-9-]", "-", path)


@jsii.implements(IStableStringProducer)
class _StoreName:
    """The name of the scaler's state store when the template is written (after any
    ``use_state_store``)."""

    def __init__(self, scaler: ThrottleAwareScaler) -> None:
        self._scaler = scaler

    def produce(self) -> str:
        return self._scaler.state_store.table_name


@jsii.implements(IStableStringProducer)
class _StoreArn(_StoreName):
    """The ARN of the scaler's state store when the template is written."""

    def produce(self) -> str:
        return self._scaler.state_store.table_arn


@jsii.implements(IValidation)
class _ScalerValidation:
    """What can only be checked once the app is built."""

    def __init__(self, scaler: ThrottleAwareScaler) -> None:
        self._scaler = scaler

    def validate(self) -> list[str]:
        s = self._scaler
        errors = []
        if not s._tables and not s.tag_key:
            errors.append(
                f"{s._where}: nothing to manage: pass tables=[...], call add_table(...) or "
                f"enable_throttle_aware_scaling(...), or set tag_key for tag discovery"
            )
        if not s.tag_key:
            names = {t.table_name for t in s._tables if not Token.is_unresolved(t.table_name)}
            for name in sorted(s._explicit_overrides):
                if not Token.is_unresolved(name) and name not in names:
                    errors.append(
                        f"{s._where}: overrides name table {name!r}, which the scaler does "
                        f"not manage; add the table, or set tag_key if it is found by tag"
                    )
        return errors


def _forget_state_tags(
    sid: str, resources: list[str], conditions: dict[str, Any] | None = None
) -> iam.PolicyStatement:
    """Removing the state tags 0.4 wrote (its base-min memory and its forecast plans), once
    the run-time has moved them into the state store; nothing else. The scaler writes no
    tag: it can neither add nor change the discovery tag, nor remove any other tag."""
    return iam.PolicyStatement(
        sid=sid,
        actions=["dynamodb:UntagResource"],
        resources=resources,
        conditions={
            **(conditions or {}),
            "ForAllValues:StringLike": {"aws:TagKeys": [f"{k}*" for k in SCALER_TAGS]},
        },
    )
