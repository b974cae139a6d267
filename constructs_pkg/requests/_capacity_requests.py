"""Runs in: CDK app (synth time).

CapacityRequests: the construct side of capacity requests ("get ready, here I come").

Workers call ``ddb_capacity_runtime.requests.request_capacity`` (or ``ddb-capacity
request``) at run time. This construct makes the hold store (a small on-demand DynamoDB
table with conditional writes) and a broker function with its own narrow role: workers are
granted invoking the broker and nothing else, and the broker checks every request against
this construct's configuration before it raises anything. By default an EventBridge rule
(the restorer) also asks the broker every 5 minutes to end expired holds, so a worker that
dies mid-work leaves nothing raised behind. A ``ThrottleAwareScaler`` that manages one of
the same tables is connected to it without a call, whichever is made first
(`common._wiring`): it obeys the holds and ends them in its tick, keeping its own state in
the hold store (``connect`` does it by hand, for a scaler that finds tables by tag); the
restorer stays even then (``CapacityRequests``: why), unless ``restore_every=None`` leaves
it out where that is safe.

With ``fast_path=FastPath(...)`` it also deploys the signals function: the application's
processes report what they consume and the throttles they meet within seconds (one
asynchronous invocation per report, through ``ddb_capacity_runtime.fast_path.hook.watch``), and the
function raises a dimension at once, as a hold that ends by itself, when their summed demand
heads over what is provisioned. ``grant_signals`` lets a process report, and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Unpack

from aws_cdk import Aspects, Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from constructs import Construct

from ddb_capacity_runtime.aws.store import (
    MAX_HOLD_ENV,
    MAX_TOTAL_UNITS_ENV,
    MAX_UNITS_ENV,
)
from ddb_capacity_runtime.core.errors import CapacityConfigError, shown
from ddb_capacity_runtime.core.names import (
    METRICS_STORE_ENV,
    STORE_ENV,
    TABLE_QUOTA_ENV,
    TARGET_TAG,
)
from ddb_capacity_runtime.core.surge_report import SIGNALS_ENV
from ddb_capacity_runtime.fast_path.surge_settings import SurgeSettings
from ddb_capacity_runtime.requests.broker import BROKER_ENV, SCOPES_ENV
from ddb_capacity_runtime.requests.broker import NAMESPACE as BROKER_NAMESPACE
from ddb_capacity_runtime.requests.client import BROKER_MAX_WAIT

from ..common import _wiring as wiring
from ..common._alarm_sink import chosen_alarm_topic
from ..common._alarms import AlarmOptions, AlarmSet, checked_alarm_options, emf_metric
from ..common._compliance import acknowledge, acknowledge_function, skip_checkov
from ..common._deploy_limits import check_function
from ..common._function_options import FunctionDefaults, FunctionOptions, function_configs
from ..common._iam_statements import (
    HOLD_STORE_ACTIONS,
    SCALABLE_TARGETS_FINDING,
    VALIDATION_REASON,
    autoscaling_validation_statement,
    move_minimums_statement,
    read_autoscaling_statement,
    scalable_targets_reason,
    state_store_statement,
)
from ..common._lazy import lazy_json
from ..common._props import Checked, MetricProps
from ..common._runtime import runtime_function, state_store_table
from ..common._scheduled_function import _configure_failed_runs, acknowledge_unkept_runs
from ..fast_path._fast_path import (
    SIGNALS_MAX_EVENT_AGE,
    SIGNALS_MEMORY_MB,
    SIGNALS_TIMEOUT,
    TABLE_ACTIONS,
    FastPath,
    FastPathParts,
    check_fast_path,
    instrument_function,
    signals_of,
)
from ..fast_path._served import Served
from ..fast_path._stream_signal import (
    READER_MEMORY_MB,
    READER_TIMEOUT,
    STREAM_ALARM_IDS,
    STREAM_COUNTS,
    StreamSignal,
    check_stream_signal,
)
from ..scaler._scaler import ThrottleAwareScaler
from ..table._capacity import DEFAULT_TABLE_QUOTA, check_table_quota
from ..table._parts import is_table, table_shown
from ..table._table import REQUESTS_GLOBAL, TableCapacity, check_table, index_names_of, table_list
from . import _requests_checks as checks
from ._requests_alarms import broker_alarms, restorer_alarms

DEFAULT_RESTORE_EVERY = Duration.minutes(5)
"""How often expired holds are ended by default: a hold outlives its expiry by at most this."""
DEFAULT_MAX_HOLD = Duration.hours(24)
BROKER_TIMEOUT = Duration.minutes(15)
"""The broker waits for the table while a request is made: Lambda's longest timeout."""
BROKER_MEMORY_MB = 256
DEFAULT_BROKER_CONCURRENCY = 10
"""How many requests the broker serves at once by default; more are refused by Lambda
(TooManyRequestsException), so a flood of requests cannot take the account's concurrency."""

FUNCTION_DEFAULTS = {
    "Broker": FunctionDefaults(
        BROKER_MEMORY_MB,
        BROKER_TIMEOUT,
        shortest=BROKER_TIMEOUT,
        why=f"a request waits up to {int(BROKER_MAX_WAIT.total_seconds() // 60)} minutes for "
        "its table (BROKER_MAX_WAIT), and the broker then needs the time left to withdraw "
        "the hold; Lambda's longest is 15 minutes",
    ),
    "Signals": FunctionDefaults(
        SIGNALS_MEMORY_MB,
        SIGNALS_TIMEOUT,
        shortest=Duration.seconds(10),
        longest=SIGNALS_MAX_EVENT_AGE,
        why="a report is stale after a minute (the function's maximum event age)",
    ),
    "StreamReader": FunctionDefaults(
        READER_MEMORY_MB,
        READER_TIMEOUT,
        shortest=Duration.seconds(10),
        longest=Duration.minutes(1),
        why="a batch of records is worthless after its maximum record age (a minute at "
        "most); a longer run holds the shard's next batch back",
    ),
}
"""The functions' defaults and the timeouts their logic allows (``function_options``)."""
REQUEST_METRICS = dict.fromkeys(
    (
        "Refused",
        "TimedOut",
        "HoldsDropped",
        "HoldsBusy",
        "ReportsRefused",
        "ReportsNotServed",
        "CombinerFull",
        "SurgesApplied",
        "SurgesDeferred",
        "SurgesFailed",
        "SurgesOverBudget",
        "SurgeUnits",
        "SurgeEntriesIgnored",
        "BucketFailed",
        "SurgesCorroborated",
        "CorroborationFailed",
        "SurgesUnconfirmed",
        "HookFailures",
        "RaisesWithinWarm",
        *STREAM_COUNTS,
    ),
    "run",
)
"""The EMF counts the broker, the signals function, the stream reader, a connected
scaler (``HoldsDropped``) and the client hook in a Lambda function send (namespace
``DynamoDBCapacity``, dimension ``StateStore``: the hold store's name)."""
ALARM_IDS = (
    "BrokerErrors",
    "TimedOut",
    "HoldsDropped",
    "RestorerRunsDropped",
    "RestorerRunsExpired",
    "HoldsBusy",
    "SignalsErrors",
    "ReportsRefused",
    "SurgeBudget",
    "SurgeUnits",
    "SurgesFailed",
    "SurgeEntriesIgnored",
    "CombinerFull",
    "SignalsDropped",
    "BucketFailed",
    "CorroborationFailed",
    "SurgesUnconfirmed",
    "HookFailures",
    *STREAM_ALARM_IDS,
)
"""The alarms, by stable id (``alarm_options``, ``alarms``)."""


@dataclass(frozen=True, kw_only=True)
class CapacityRequestsProps:
    """`CapacityRequests`'s props, each with its default: the keyword arguments of
    `CapacityRequests`, which takes them as they are (and checks them)."""

    tables: Sequence[dynamodb.ITable | TableCapacity]
    """The tables workers may request capacity on (``ProvisionedTable`` or any ``ITable``), as
    a list; at least one. The indexes of a ``ProvisionedTable`` are allowed too; allow an
    index of another table with
    [`allow_index`][constructs_pkg.requests.CapacityRequests.allow_index]."""

    restore_every: Duration | None = DEFAULT_RESTORE_EVERY
    """How often an EventBridge rule (the restorer) asks the broker to end expired holds on
    these tables; a restore that fails fails the broker's run (``BrokerErrors``). Default: 5
    minutes. None: no restorer; see "Why the restorer stays" before
    choosing it (a connected scaler, not a dry run, is then needed: synthesis fails without
    one)."""

    max_units: int = DEFAULT_TABLE_QUOTA
    """The most units one hold of one dimension may ask for; larger requests are refused and,
    if written to the store anyway, ignored. At most ``table_quota``. Default: 40,000."""

    max_total_units: int | None = None
    """The most units the active holds of one dimension (a table's or a GSI's read or write)
    may add up to; a request that would pass it is refused. Default: ``max_units``, so the
    holds of a dimension add up to one largest hold at most; raise it to let holds stack.
    From ``max_units`` to ``table_quota``."""

    max_hold: Duration = DEFAULT_MAX_HOLD
    """The longest hold. Default: 24 hours."""

    broker_concurrency: int | None = DEFAULT_BROKER_CONCURRENCY
    """The broker's reserved concurrency: how many requests it serves at once; a worker beyond
    it gets an error at once. Default: 10. None: unreserved (an account whose concurrency
    limit is 10, as new accounts have, can reserve none)."""

    alarm_topic: sns.ITopic | None = None
    """Where its alarms go. Default: None, each alarm opens an OpsItem in OpsCenter (no topic
    or key deployed); pass a topic (an `AlarmTopic`'s, say) to be notified."""

    fast_path: FastPath | None = None
    """Deploy the signals function ([`FastPath`][]), which raises a dimension within seconds of
    the processes' reports. Without a restorer (``restore_every=None``) a scaler must be
    connected to end its surges. Default: None, no fast path."""

    table_quota: int = DEFAULT_TABLE_QUOTA
    """The account's per-table capacity quota, in capacity units: the largest capacity the hold
    store reads or a request may reach (a base, a hold's baseline, a minimum set), from 1 to
    1,000,000. Default: 40,000 (DynamoDB's default quota). A connected scaler must have the
    same."""

    alarm_options: Mapping[str, AlarmOptions] | None = None
    """Per alarm id (see `alarms`), an ``AlarmOptions``: off, another threshold or evaluation
    periods, more actions. Default: every alarm as documented (docs: Alarms)."""

    function_options: Mapping[str, FunctionOptions] | None = None
    """Per function (``"Broker"``, ``"Signals"``, ``"StreamReader"``), a ``FunctionOptions``
    merged over its defaults: the broker 256 MB and 15 minutes (its timeout cannot be
    shorter: a request waits up to 13 minutes), the signals function 256 MB and 30 seconds
    (10 seconds to a minute); logs kept one year; ARM_64."""


class CapacityRequests(Construct):
    """Lets workers raise capacity for work about to start, with automatic restore.

    Its props, each with its default and what it does, are the fields of
    `CapacityRequestsProps`: the keyword arguments here.

    **Why the restorer stays when a scaler is connected.** A scaler connected with
    [`connect`][] ends expired holds in its tick, but only some of them, so the restorer
    is deployed all the same:

    - the scaler ends the holds of the tables it manages in that tick only; a table these
      requests serve that it does not manage (not in its ``tables`` and not carrying its
      discovery tag), or one it skips (UPDATING, or its tick failed on it), would keep the
      raised minimum of a hold that expired unreleased (its worker died): nothing else ends
      it;
    - a scaler with ``dry_run=True`` changes nothing, so it ends no hold;
    - holds of a table these requests no longer serve, or that was deleted or went
      on-demand, are dropped (and counted: the ``HoldsDroppedAlarm``) by the restore alone;
      the scaler never sees those tables;
    - a scaler that fails on every tick (its errors alarm) must not keep capacity raised,
      and paid for, past the holds' expiry: the restorer is a second, independent way
      down, with a role that may only invoke the broker.

    ``restore_every=None`` is safe only when none of these can happen: every served table
    is managed explicitly by a connected scaler that is not a dry run, and no table leaves
    ``tables`` while it is held.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        tables: Sequence[dynamodb.ITable | TableCapacity],
        restore_every: Duration | None = CapacityRequestsProps.restore_every,
        max_units: int = CapacityRequestsProps.max_units,
        max_total_units: int | None = CapacityRequestsProps.max_total_units,
        max_hold: Duration = CapacityRequestsProps.max_hold,
        broker_concurrency: int | None = CapacityRequestsProps.broker_concurrency,
        alarm_topic: sns.ITopic | None = CapacityRequestsProps.alarm_topic,
        fast_path: FastPath | None = CapacityRequestsProps.fast_path,
        table_quota: int = CapacityRequestsProps.table_quota,
        alarm_options: Mapping[str, AlarmOptions] | None = CapacityRequestsProps.alarm_options,
        function_options: Mapping[str, FunctionOptions] | None = (
            CapacityRequestsProps.function_options
        ),
    ) -> None:
        super().__init__(scope, id)
        self._where = f"CapacityRequests {self.node.path}"
        alarm_options = checked_alarm_options(self._where, ALARM_IDS, alarm_options)
        self._functions = function_configs(self._where, function_options, FUNCTION_DEFAULTS)
        self.table_quota = check_table_quota(self._where, table_quota)
        total = checks.total_units(
            self._where, self.table_quota, max_units, max_total_units, broker_concurrency
        )
        hold_minutes = checks.hold_minutes(self._where, max_hold)
        checks.check_restore_every(self._where, restore_every)
        surge = check_fast_path(self._where, fast_path, max_units, hold_minutes)
        stream = check_stream_signal(self._where, fast_path.stream) if fast_path else None
        self.environment = self._limits(max_units, hold_minutes, total)
        self._configure_tables(tables)
        self.alarm_topic = chosen_alarm_topic(self, self._where, alarm_topic, None)
        self._alarm_set = AlarmSet(
            self, self._where, self.alarm_topic, alarm_options, "CapacityRequests"
        )
        self.hold_store = self._render_hold_store()
        """The hold store: holds and their leases, written with conditional writes (and, once a
        scaler is connected, the scaler's state too)."""
        self.environment[STORE_ENV] = self.hold_store.table_name
        self._served = self._serve()
        self.broker, self.broker_policy = self._render_broker(broker_concurrency)
        """The broker: the one function workers may invoke to request capacity."""
        broker_alarms(self._served, self.broker)
        self.restorer = self._render_restorer(restore_every)
        """The restorer (None with ``restore_every=None``): the EventBridge rule that asks the
        broker to end expired holds (``{"action": "restore"}``) every ``restore_every``."""
        parts = self._render_fast_path(fast_path, surge, stream)
        self.signals = parts.signals if parts else None
        """The signals function (None without ``fast_path``)."""
        self.signals_policy = parts.policy if parts else None
        """The signals function's policy (None without ``fast_path``)."""
        self.stream_reader = parts.stream_reader if parts else None
        """The stream reader (None without ``FastPath(stream=...)``)."""
        self._refuse_unused(fast_path, function_options)
        self.node.add_validation(Checked(self._validate))
        # every scaler of the app that manages one of these tables, made before or after
        wiring.serve(self, self._table_keys, self._join)

    # ------------------------------------------------------------------ checks at synth

    def _validate(self) -> list[str]:
        """At synth: a scaler that finds one of its tables by tag is connected to it
        (`checks.found_by_tag`), and, without a restorer, a connected scaler that is not a
        dry run ends its expired holds and surges (`checks.unended_holds`). These two wait
        for synth because what they are about may still come while the app is built: the
        tables' tags (an aspect), a scaler made later or given a table later, a scaler found
        by tag connected by hand. The rest is checked in Python as each construct is built
        (a table served twice, a scaler connected elsewhere)."""
        scalers = checks.app_scalers(self)
        restored, fast = self.restorer is not None, self.signals is not None
        return checks.found_by_tag(self._served, scalers) + checks.unended_holds(
            self._served, restored, fast, scalers
        )

    # ------------------------------------------------------------------ construction

    def _limits(self, max_units: int, hold_minutes: int, total: int) -> dict[str, str]:
        """The functions' environment of its limits (the hold store's name is added once it
        is made)."""
        return {
            MAX_UNITS_ENV: str(max_units),
            MAX_HOLD_ENV: str(hold_minutes),
            MAX_TOTAL_UNITS_ENV: str(total),
            TABLE_QUOTA_ENV: str(self.table_quota),
        }

    def _serve(self) -> Served:
        """What its fast path and its alarms are made of (`Served`), once its hold store is
        made; the aspect that has the settle steps of the tables it serves read its holds."""
        served = Served(
            scope=self,
            where=self._where,
            indexes=self._indexes,
            hold_store=self.hold_store,
            functions=self._functions,
            alarms=self._alarm_set,
            metric=self.metric,
            acknowledge=self._acknowledge,
        )
        Aspects.of(self).add(checks.HoldReaders(served))
        return served

    def _refuse_unused(self, fast_path: FastPath | None, function_options: object) -> None:
        """Options for an alarm or a function these props never make, refused."""
        made = {
            "Broker": self.broker,
            "Signals": self.signals,
            "StreamReader": self.stream_reader,
        }
        checks.unused_options(
            self._where, made, fast_path, self._alarm_set.unused(), function_options
        )

    def _render_hold_store(self) -> dynamodb.Table:
        """The hold store, which each table's settle step reads (never lowering it below
        a hold): told now to a table given as its ``TableCapacity``, once the app is built
        to one given as the plain table (`requests._requests_checks.HoldReaders`)."""
        store = state_store_table(
            self,
            "HoldStore",
            contents="table names, unit counts and expiry times",
            backup_reason="The hold store keeps capacity holds that last 24 hours at most; "
            "point-in-time recovery covers it, and a lost hold only ends a raise early.",
        )
        for _table, owner, _extra in self._indexes:
            if owner is not None:
                # the one call across features to a table's own state: its settle step is
                # granted the hold store's reads (never lowering a table below a hold)
                owner._read_holds(store)
        return store

    def _configure_tables(self, tables: Sequence[dynamodb.ITable | TableCapacity]) -> None:
        """``tables`` checked, each listed once and none served by other CapacityRequests
        of the app already (refused as this one is built), and kept."""
        given = table_list(self._where, tables)
        if not given:
            raise CapacityConfigError(
                f"{self._where}: tables must list at least one table; got {shown(tables)}"
            )
        self.tables: list[dynamodb.ITable] = []
        self._indexes: list[tuple[dynamodb.ITable, TableCapacity | None, list[str]]] = []
        self._table_keys: dict[tuple[str, str], str] = {}  # `table._parts.table_keys` to path
        for table in given:
            check_table(self._where, table, REQUESTS_GLOBAL)
            owner = table if isinstance(table, TableCapacity) else None
            if owner is not None:
                table = owner.table
            checks.add_once(self._where, self._table_keys, table, (owner or table).node.path)
            self.tables.append(table)
            self._indexes.append((table, owner, []))
        served_elsewhere = wiring.holders(self, self._table_keys)  # other CapacityRequests
        checks.refuse_served_elsewhere(self._where, self._table_keys, served_elsewhere)

    def _render_broker(
        self, broker_concurrency: int | None
    ) -> tuple[lambda_.Function, iam.ManagedPolicy]:
        broker, policy = runtime_function(
            self,
            "Broker",
            handler="ddb_capacity_runtime.requests.broker.broker_handler",
            description="DynamoDB capacity request broker",
            config=self._functions["Broker"],
            environment={
                **self.environment,
                SCOPES_ENV: self._scopes_setting(),
            },
            reserved_concurrent_executions=broker_concurrency,
        )
        policy.add_statements(
            *self._statements(),
            iam.PolicyStatement(
                sid="ReadTraffic", actions=["cloudwatch:GetMetricData"], resources=["*"]
            ),
        )
        self._acknowledge(
            policy, "DescribeScalableTargets, DescribeScalingPolicies and GetMetricData"
        )
        _acknowledge_broker(broker, broker_concurrency)
        return broker, policy

    @property
    def alarms(self) -> Mapping[str, cloudwatch.IAlarm]:
        """The alarms by stable id (read-only): ``BrokerErrors``, ``HoldsDropped``;
        ``RestorerRunsDropped`` and ``RestorerRunsExpired`` with a restorer; ``HoldsBusy``
        with it or a fast path; ``SignalsErrors``,
        ``ReportsRefused``, ``SurgeBudget``, ``SurgeUnits``, ``SurgesFailed``,
        ``SurgeEntriesIgnored``, ``CombinerFull``, ``SignalsDropped``, ``BucketFailed``,
        ``CorroborationFailed``,
        ``SurgesUnconfirmed`` and ``HookFailures`` with a fast path;
        ``StreamReaderErrors``, ``StreamFailed``, ``StreamRecordsMalformed``,
        ``StreamRecordsNotServed`` and ``StreamLag`` with its stream signal
        (``FastPath(stream=...)``). An alarm turned off is absent."""
        return self._alarm_set.alarms

    def metric(self, metric_name: str, **props: Unpack[MetricProps]) -> cloudwatch.Metric:
        """The EMF count ``metric_name`` its functions send (namespace ``DynamoDBCapacity``,
        dimension ``StateStore``: its hold store's name, no other deployment's; docs:
        Alarms). Default: Sum over 5 minutes."""
        store, five = self.hold_store.table_name, Duration.minutes(5)
        return emf_metric(
            self._where, BROKER_NAMESPACE, REQUEST_METRICS, metric_name, None, five, props, store
        )

    def metric_refused(self, **props: Unpack[MetricProps]) -> cloudwatch.Metric:
        """Requests the broker refused."""
        return self.metric("Refused", **props)

    def metric_timed_out(self, **props: Unpack[MetricProps]) -> cloudwatch.Metric:
        """Requests the broker answered with a timeout: the table was not ready in time."""
        return self.metric("TimedOut", **props)

    def metric_holds_dropped(self, **props: Unpack[MetricProps]) -> cloudwatch.Metric:
        """Holds dropped without lowering their table (it left, was deleted, went on-demand)."""
        return self.metric("HoldsDropped", **props)

    def metric_reports_refused(self, **props: Unpack[MetricProps]) -> cloudwatch.Metric:
        """Malformed reports to the fast path's signals function."""
        return self.metric("ReportsRefused", **props)

    def metric_surges_failed(self, **props: Unpack[MetricProps]) -> cloudwatch.Metric:
        """Surges of the fast path that could not be applied."""
        return self.metric("SurgesFailed", **props)

    def metric_surge_units(self, **props: Unpack[MetricProps]) -> cloudwatch.Metric:
        """Capacity units the fast path's surges added."""
        return self.metric("SurgeUnits", **props)

    def _render_restorer(self, restore_every: Duration | None) -> events.Rule | None:
        """The restorer: a rule that asks the broker to end expired holds every
        ``restore_every`` (an asynchronous run, never retried once the next is due). The
        broker alone may change capacity; a restore that fails fails its run, counted in
        the broker's ``Errors``."""
        if restore_every is None:
            return None
        rule = events.Rule(
            self,
            "RestoreSchedule",
            schedule=events.Schedule.rate(restore_every),
            description="Asks the DynamoDB capacity broker to end expired holds",
            targets=[
                targets.LambdaFunction(
                    self.broker,
                    event=events.RuleTargetInput.from_object({"action": "restore"}),
                    retry_attempts=2,
                    max_event_age=restore_every,
                )
            ],
        )
        _configure_failed_runs(self, self.broker, None, restore_every)
        acknowledge_unkept_runs(self, rule, UNKEPT_RESTORES)
        restorer_alarms(self._served, self.broker, rule, restore_every)
        return rule

    def _render_fast_path(
        self,
        fast_path: FastPath | None,
        surge: SurgeSettings | None,
        stream: StreamSignal | None,
    ) -> FastPathParts | None:
        """The fast path's functions (`fast_path.FastPathParts`); None without one."""
        if fast_path is None or surge is None:
            return None
        environment = {
            **self.environment,
            SCOPES_ENV: self._scopes_setting(),
            **surge.to_env(),
        }
        return FastPathParts(
            self._served, fast_path, stream, environment, restored=self.restorer is not None
        )

    def grant_signals(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` (a role, a user, a group, or a function or task definition)
        report to the signals function, and nothing else: it never gets UpdateTable,
        scalable targets, the hold store or a hold. A function granted here gets
        ``$CAPACITY_SIGNALS`` set, so ``ddb_capacity_runtime.fast_path.hook.watch`` reports there
        by default, and ``$CAPACITY_METRICS_STORE``, the hold store's name, so the hook's
        ``HookFailures`` are this deployment's, which its alarm watches. Needs ``fast_path``."""
        signals = signals_of(self._where, self.signals, "grant_signals")
        env = {SIGNALS_ENV: signals.function_name, METRICS_STORE_ENV: self.hold_store.table_name}
        return self._grant_invoke("grant_signals", grantee, signals, env)

    def instrument(
        self,
        function: lambda_.Function,
        *,
        tables: Sequence[str] | None = None,
        mode: str = "consumed",
    ) -> iam.Grant:
        """Install the fast path's client hook in the Python ``function`` without changing
        its code: a layer with the run-time package and an exec wrapper
        (``AWS_LAMBDA_EXEC_WRAPPER``) that installs the hook before the handler is
        imported, the function granted and told where to report, as
        [`grant_signals`][] does. ``tables``: the only tables reported (default: all
        of the account's in the Region); ``mode``: ``consumed`` (the hook asks for the
        consumed capacity of the requests it counts) or ``throttles`` (it changes no
        request). Needs ``fast_path``."""
        return instrument_function(
            self._served, self.signals, self.grant_signals, function, tables=tables, mode=mode
        )

    def allow_index(self, table: dynamodb.ITable | TableCapacity, index_name: str) -> None:
        """Let workers request capacity on the GSI ``index_name`` of ``table``, one of this
        construct's tables. (A ``ProvisionedTable``'s own indexes are allowed already.)
        The index must be on the table already, where that is known at synth (a table of
        this app)."""
        target = table.table if isinstance(table, TableCapacity) else table
        entry = next((e for e in self._indexes if e[0] is target), None)
        if entry is None:
            served = ", ".join(table_shown(t, (o or t).node.path) for t, o, _ in self._indexes)
            raise CapacityConfigError(
                f"{self._where}: allow_index needs one of this construct's tables ({served}); "
                f"got {'table ' if is_table(target) else ''}{table_shown(target)}"
            )
        if not isinstance(index_name, str) or not 3 <= len(index_name) <= 255:
            raise CapacityConfigError(
                f"{self._where}: index_name must be a global secondary index name "
                f"(3 to 255 characters); got {shown(index_name)}"
            )
        owner = entry[1] or target
        known = index_names_of(owner)
        if known is not None and index_name not in known:
            raise CapacityConfigError(
                f"{self._where}: allow_index: index_name {shown(index_name)} is not a global "
                f"secondary index of table {owner.node.path}; "
                + (f"its indexes are {known}" if known else "it has none")
                + " (add an index to the table before allowing it)"
            )
        entry[2].append(index_name)

    def _scopes_setting(self) -> str:
        """The broker's ``CAPACITY_SCOPES``, written with the template (indexes added later
        count too)."""
        return lazy_json(self, self.scopes)

    def scopes(self) -> list[dict[str, Any]]:
        """What the broker serves: each table with the indexes it allows."""
        return [
            {
                "table": table.table_name,
                "indexes": sorted({*(owner.index_names if owner else []), *extra}),
            }
            for table, owner, extra in self._indexes
        ]

    def _join(self, scaler: ThrottleAwareScaler, shared: frozenset[tuple[str, str]]) -> None:
        """Connect ``scaler``, which manages the tables ``shared`` (their keys) of these, as
        it comes (`wiring`): at once if it is not connected, never twice; refused in Python,
        naming the tables, the scaler and its store, if it keeps its state with another
        CapacityRequests (`checks.connected_elsewhere`)."""
        if scaler.state_store is self.hold_store:
            return
        if scaler.state_store.node.scope is not scaler:
            labels = sorted({self._table_keys[k] for k in shared if k in self._table_keys})
            raise CapacityConfigError(checks.connected_elsewhere(self._where, labels, scaler))
        self.connect(scaler)

    def connect(self, scaler: ThrottleAwareScaler) -> None:
        """Let ``scaler`` obey these holds and end them at expiry in its tick. Not needed in
        the common case: a scaler that manages one of these tables explicitly (its
        ``tables``, ``add_table`` or ``enable_throttle_aware_scaling``) is connected without
        this call, whichever of the two is made first, as the later is built. Call it for a
        scaler that finds these tables by tag only (which tables carry its tag is known at
        run time only). Calling it for a connected scaler does nothing, so an explicit call
        leaves the template as it is.

        Once connected, the scaler keeps its state (the configured minimum under a raise,
        the autopilot's plans) in this construct's hold store instead of its own
        ``StateStore``, which is removed: holds and the scaler's memory of a dimension are
        one item, written with conditional writes under one lease, so a hold and a raise of
        the scaler on the same dimension cannot overwrite each other's base. The scaler's
        ``state_store`` is then ``hold_store``, and the scaler's ``HoldsDropped`` alarm is
        removed while this construct's is on (both watch one metric; this one's topic and
        options then stand). A scaler has one state store, so it can be connected to one
        CapacityRequests only: a scaler that manages tables two CapacityRequests serve is
        refused (``CapacityConfigError``, while the later one is built).
        """
        if not isinstance(scaler, ThrottleAwareScaler):
            raise CapacityConfigError(
                f"{self._where}: connect: got {shown(scaler)}; expected a ThrottleAwareScaler "
                "(the construct itself)"
            )
        current = scaler.state_store
        if current is self.hold_store:
            return
        if current.node.scope is not scaler:
            raise CapacityConfigError(
                f"{self._where}: ThrottleAwareScaler {scaler.node.path} already keeps its "
                f"state in {checks.store_of(scaler)}; a scaler has one state store, so it can be "
                f"connected to one CapacityRequests only"
            )
        if scaler.table_quota != self.table_quota:
            raise CapacityConfigError(
                f"{self._where}: table_quota is {self.table_quota:,} but ThrottleAwareScaler "
                f"{scaler.node.path} has {scaler.table_quota:,}; one state store has one "
                f"table quota: give both the same"
            )
        for name, value in self.environment.items():
            if name != STORE_ENV:  # the store's name follows use_state_store
                scaler.add_environment(name, value)
        scaler.use_state_store(self.hold_store, dropped_alarmed="HoldsDropped" in self.alarms)

    def grant_request(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` (a role, a user, a group, or a function or task definition)
        invoke the broker, and nothing else: it never gets UpdateTable, scalable targets or
        the hold store. A function granted here gets ``$CAPACITY_BROKER`` set, so
        ``request_capacity`` goes through the broker by default."""
        env = {BROKER_ENV: self.broker.function_name}
        return self._grant_invoke("grant_request", grantee, self.broker, env)

    def _grant_invoke(
        self, what: str, grantee: iam.IGrantable, function: lambda_.Function, env: Mapping[str, str]
    ) -> iam.Grant:
        """``lambda:InvokeFunction`` on ``function`` alone for ``grantee``; a function
        granted gets ``env`` set in its environment."""
        refused = CapacityConfigError(
            f"{self._where}: {what} needs the grantee (an iam.IGrantable): a role, a "
            f"user, a group or something with a role (a function, a task definition); got "
            f"{shown(grantee)}"
        )
        if not hasattr(grantee, "grant_principal"):
            raise refused
        grant = iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["lambda:InvokeFunction"],
            resource_arns=[function.function_arn],
        )
        if not grant.success:
            raise refused
        if isinstance(grantee, lambda_.Function):
            for name, value in env.items():
                grantee.add_environment(name, value)
            check_function(grantee, library=False)
        return grant

    def _statements(self) -> list[iam.PolicyStatement]:
        return [
            iam.PolicyStatement(
                sid="HoldTables",
                actions=TABLE_ACTIONS,
                resources=[t.table_arn for t in self.tables],
            ),
            state_store_statement("HoldStore", self.hold_store, HOLD_STORE_ACTIONS),
            read_autoscaling_statement(),
            move_minimums_statement(
                "MoveMinimums", TARGET_TAG, [t.table_name for t in self.tables]
            ),
            autoscaling_validation_statement(),
        ]

    @staticmethod
    def _acknowledge(policy: iam.ManagedPolicy, reads: str) -> None:
        acknowledge(
            policy,
            "AwsSolutions-IAM5[Resource::*]",
            f"{reads} have no resource-level permissions; they only read. {VALIDATION_REASON}",
        )
        skip_checkov(policy, "CKV_AWS_111", VALIDATION_REASON)
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[{SCALABLE_TARGETS_FINDING}]",
            scalable_targets_reason(f"{TARGET_TAG} with the name of one of its tables"),
        )


UNKEPT_RESTORES = (
    "A failed restore is counted (the broker's Errors, the rule's FailedInvocations, "
    "AsyncEventsDropped) and alarmed; its event carries nothing to replay (the next run "
    "reads every hold afresh)."
)


def _acknowledge_broker(broker: lambda_.Function, broker_concurrency: int | None) -> None:
    """The broker's acknowledgements (its reserved concurrency's only with one)."""
    no_dlq = (
        "Workers invoke the broker synchronously and get its answer or its error; its "
        f"restorer's runs are asynchronous: {UNKEPT_RESTORES}"
    )
    acknowledge_function(
        broker,
        broker_concurrency,
        {
            "Serverless-LambdaTracing": "Each request logs JSON lines; tracing would add "
            "cost and an X-Ray wildcard permission.",
            "Serverless-LambdaDLQ": no_dlq,
            "Serverless-LambdaDefaultMemorySize": "256 MB: the broker mostly waits on "
            "DynamoDB and Application Auto Scaling.",
        },
        {
            "LambdaInsideVPC": "Calls only AWS APIs (DynamoDB, Application Auto Scaling, "
            "CloudWatch); it reaches nothing in a VPC.",
            "LambdaConcurrency": "Concurrent requests are expected; they are serialized per "
            "dimension by the hold store's leases.",
            "LambdaDLQ": "Workers invoke it synchronously and get the error; a failed "
            "scheduled restore is counted and alarmed, and carries nothing to replay.",
        },
        no_dlq,
    )
