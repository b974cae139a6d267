"""Runs in: CDK app (synth time).

The fast path of [`CapacityRequests`][]: its props ([`FastPath`][]), the signals function,
the stream reader, their policies, alarms and acknowledgements, and the client hook's
installation in a function (`instrument_function`). They are made in the scope of their
``CapacityRequests`` (their construct ids, and so the template, are the construct's own).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import jsii
from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import IValidation

from ddb_capacity_runtime.core.errors import CapacityConfigError, shown
from ddb_capacity_runtime.core.names import TARGET_TAG, is_table_name
from ddb_capacity_runtime.core.surge import (
    DEFAULT_SURGE_MINUTES,
    DEFAULT_SURGE_SCALE,
    MAX_SURGE_SCALE,
    UNBOUNDED,
)
from ddb_capacity_runtime.core.validators import is_number, is_whole
from ddb_capacity_runtime.fast_path.hook import MODES
from ddb_capacity_runtime.fast_path.surge_settings import SurgeSettings
from ddb_capacity_runtime.instrument import MODE_ENV, TABLES_ENV

from ..common._compliance import acknowledge_function
from ..common._deploy_limits import environment_of
from ..common._iam_statements import (
    autoscaling_validation_statement,
    move_minimums_statement,
    read_autoscaling_statement,
)
from ..common._props import duration_prop, is_token, known_at_synth
from ..common._runtime import HOOK_WRAPPER, hook_layer, hook_runtimes, runtime_function
from ._served import Served
from ._signals_alarms import BUSY_EVERY, busy_alarm, signals_alarms
from ._stream_signal import StreamReader, StreamSignal

WRAPPER_ENV = "AWS_LAMBDA_EXEC_WRAPPER"
"""Lambda's setting of the script that starts a function's runtime: one a function."""

TABLE_ACTIONS = [
    "dynamodb:DescribeTable",
    "dynamodb:ListTagsOfResource",
    "dynamodb:UpdateTable",
]
"""What the broker and the fast path's functions do on their tables."""
SIGNALS_TIMEOUT = Duration.seconds(30)
"""The signals function answers in seconds; a report is stale after a minute."""
SIGNALS_MEMORY_MB = 256
SIGNALS_MAX_EVENT_AGE = Duration.minutes(1)
DEFAULT_SIGNALS_CONCURRENCY = 10
"""How many reports the signals function takes at once by default; more wait in Lambda's queue for
their turn (at most `SIGNALS_MAX_EVENT_AGE`), so a flood of reports cannot take the account's
concurrency."""
DEFAULT_SURGE_ALARM_UNITS = 10_000
"""The default threshold of the ``SurgeUnitsAlarm``: units surges add in an hour."""
SIGNALS_STORE_ACTIONS = ["dynamodb:GetItem", "dynamodb:UpdateItem"]
"""What the signals function and the stream reader do in the hold store: read an item and write
it (its combiner entries, a lease, a hold, a counter; giving a lease back is a write); no
delete, no Query, no Scan."""


@dataclass(frozen=True)
class FastPath:
    """The fast path of [`CapacityRequests`][]: the signals function.

    :param share: the part of the traffic the reporting processes make, from over 0 to 1:
        their summed demand is scaled up by 1 / ``share``. Default: 1.0 (every process
        that uses the tables reports).
    :param surge_for: how long a surge holds its raise after the last report that asked
        for it (whole minutes, 1 minute to the construct's ``max_hold``); then it ends by
        itself, with the other expired holds. Default: 5 minutes. However long reports go
        on asking for it, a surge lasts at most an hour from its first raise (or
        ``max_hold``, if shorter), then ends at its expiry; a new one may start once it is
        restored.
    :param surge_cap: the most units a surge may add over what a dimension had when it
        started (a whole number from 1 to the construct's ``max_units``), so that a
        process that lies can cost at most that. Default: None, the default cap: at most
        ``surge_scale`` (4) x what the dimension had when the surge started, and at least
        100 units over it. ``UNBOUNDED``: no cap beyond the construct's ``max_units`` and
        the scalable target's max. Whatever the cap, a surge never passes the limits and
        the target's max. What a lie costs: the units it adds, for ``surge_for`` after the
        last lying report, plus up to ``restore_every`` until the restore, plus the time
        auto scaling then takes to scale in (about 15 minutes): with the defaults, on a
        dimension at 100 write units, 300 units: about $0.08 for one lie in us-east-1, and
        the budget bounds what lies add in an hour (docs/guides/fast-path.md gives the
        worst case).
    :param concurrency: the signals function's reserved concurrency: how many reports it
        takes at once (the others wait in Lambda's queue, a minute at most). Default: 10.
        None: unreserved.
    :param surge_scale: the default cap's multiple: with ``surge_cap`` None, a surge takes
        a dimension to at most ``surge_scale`` x the capacity it had when the surge
        started (and may add 100 units in any case), never above the limits. More than 1,
        at most 100. Default: 4.
    :param surge_budget: the most units the surges of one dimension may add in an hour (a
        whole number from 1 to 400,000). Default: None, twice what one surge may add from
        the level the hour's first surge started from. ``UNBOUNDED``: no budget.
    :param surge_alarm_units: the ``SurgeUnitsAlarm`` fires when surges add this many units
        or more within an hour, over every dimension served. Default: 10,000. None: no
        such alarm.
    :param stream: the table's own DynamoDB stream as a write signal, with no client in
        the application: a stream reader attached to each served table's stream feeds the
        same surge decision as the reports (`StreamSignal`; True: its defaults).
        A ``ProvisionedTable`` gets its stream turned on (``NEW_AND_OLD_IMAGES``); any
        other table must have one. Default: False.
    """

    share: float = 1.0
    surge_for: Duration = field(default_factory=lambda: Duration.minutes(DEFAULT_SURGE_MINUTES))
    surge_cap: int | str | None = None
    concurrency: int | None = DEFAULT_SIGNALS_CONCURRENCY
    surge_scale: float = DEFAULT_SURGE_SCALE
    surge_budget: int | str | None = None
    surge_alarm_units: int | None = DEFAULT_SURGE_ALARM_UNITS
    stream: bool | StreamSignal = False


def check_fast_path(
    owner: str, fast_path: FastPath | None, max_units: int, hold_minutes: int
) -> SurgeSettings | None:
    """The signals function's settings from ``fast_path`` (checked; ``owner``: the
    construct, in words); None without a fast path."""
    if fast_path is None:
        return None
    where = f"{owner}: fast_path"
    if not isinstance(fast_path, FastPath):
        raise CapacityConfigError(f"{where} must be a FastPath or None; got {shown(fast_path)}")
    share, concurrency = fast_path.share, fast_path.concurrency
    if not (is_number(share, 0, 1) and share > 0):
        raise CapacityConfigError(
            f"{where}.share must be a number over 0 and at most 1; got {shown(share)}"
        )
    surge_for = fast_path.surge_for
    duration_prop(owner, "fast_path.surge_for", surge_for, Duration.seconds(0))
    known_at_synth(
        owner,
        "fast_path.surge_for",
        surge_for,
        "the functions are configured with its minutes",
        f"whole minutes from 1 minute to max_hold ({hold_minutes} minutes)",
    )
    seconds = surge_for.to_seconds()
    if seconds % 60 or not 60 <= seconds <= hold_minutes * 60:
        raise CapacityConfigError(
            f"{where}.surge_for must be whole minutes from 1 minute to max_hold "
            f"({hold_minutes} minutes); got {surge_for.to_human_string()}"
        )
    if concurrency is not None and not is_whole(concurrency, 1, 1_000):
        raise CapacityConfigError(
            f"{where}.concurrency must be a whole number from 1 to 1000, or None; got "
            f"{shown(concurrency)}"
        )
    bounds = _surge_bounds(where, fast_path, max_units)
    return SurgeSettings(float(share), int(seconds // 60), *bounds)


class FastPathParts:
    """The fast path's resources, made in the scope of the requests ``served``:
    the signals function and its policy, and the stream reader with ``stream``; each
    function's environment is ``environment``."""

    def __init__(
        self,
        served: Served,
        fast_path: FastPath,
        stream: StreamSignal | None,
        environment: Mapping[str, str],
        *,
        restored: bool,
    ) -> None:
        self._served = served
        self._environment = environment
        self.signals, self.policy = self._render_signals(fast_path)
        if not restored:  # its surges a table stays busy for alarm all the same
            busy_alarm(served, BUSY_EVERY)
        self.stream_reader = self._render_stream_reader(stream)

    def _render_signals(self, fast_path: FastPath) -> tuple[lambda_.Function, iam.ManagedPolicy]:
        """The signals function: invoked asynchronously by the reporting processes, never
        retried (a report is stale in a minute), with what a surge needs and no more."""
        o = self._served
        signals, policy = runtime_function(
            o.scope,
            "Signals",
            handler="ddb_capacity_runtime.fast_path.signals_function.signals_handler",
            description="DynamoDB capacity signals (fast path)",
            config=o.functions["Signals"],
            environment=dict(self._environment),
            reserved_concurrent_executions=fast_path.concurrency,
        )
        signals.configure_async_invoke(retry_attempts=0, max_event_age=SIGNALS_MAX_EVENT_AGE)
        self._configure_policy(
            policy, "DescribeScalableTargets, DescribeScalingPolicies and GetMetricData"
        )
        # CloudWatch's consumed capacity corroborates a surge the default cap cuts short
        policy.add_statements(
            iam.PolicyStatement(
                sid="ReadTraffic", actions=["cloudwatch:GetMetricData"], resources=["*"]
            )
        )
        _acknowledge_signals(signals, fast_path.concurrency)
        signals_alarms(self._served, signals, fast_path.surge_alarm_units)
        return signals, policy

    def _render_stream_reader(self, stream: StreamSignal | None) -> StreamReader | None:
        """The stream reader: each served table's stream mapped to it, with what a surge
        needs (as the signals function) and reading the streams."""
        if stream is None:
            return None
        o = self._served
        reader = StreamReader(
            o.scope,
            "StreamReader",
            signal=stream,
            tables=[(table, owner) for table, owner, _ in o.indexes],
            environment=dict(self._environment),
            config=o.functions["StreamReader"],
            alarms=o.alarms,
            where=o.where,
            count=o.metric,
        )
        self._configure_policy(
            reader.policy, "DescribeScalableTargets, DescribeScalingPolicies and ListStreams"
        )
        _acknowledge_stream_reader(reader.function)
        return reader

    def _configure_policy(
        self,
        policy: iam.ManagedPolicy,
        reads: str = "DescribeScalableTargets and DescribeScalingPolicies",
    ) -> None:
        """What a surge needs: its tables' capacity, their items in the hold store, reading
        their scaling and moving their scalable targets' minimums."""
        o = self._served
        policy.add_statements(
            iam.PolicyStatement(
                sid="HoldTables",
                actions=TABLE_ACTIONS,
                resources=[t.table_arn for t in o.tables],
            ),
            iam.PolicyStatement(
                sid="SurgeStore",
                actions=list(SIGNALS_STORE_ACTIONS),
                resources=[o.hold_store.table_arn],
                # every item it touches (combiner, lease, surge hold) has its table as pk
                conditions={
                    "ForAllValues:StringEquals": {
                        "dynamodb:LeadingKeys": [t.table_name for t in o.tables]
                    }
                },
            ),
            read_autoscaling_statement(),
            move_minimums_statement("MoveMinimums", TARGET_TAG, [t.table_name for t in o.tables]),
            autoscaling_validation_statement(),
        )
        o.acknowledge(policy, reads)


def signals_of(where: str, signals: lambda_.Function | None, method: str) -> lambda_.Function:
    """The signals function (``signals``) of the CapacityRequests at ``where``, for its
    ``method``; refused by name without the fast path."""
    if signals is None:
        raise CapacityConfigError(
            f"{where}: {method} needs the fast path; pass fast_path=FastPath() to CapacityRequests"
        )
    return signals


def instrument_function(
    served: Served,
    signals: lambda_.Function | None,
    grant_signals: Callable[[lambda_.Function], iam.Grant],
    function: lambda_.Function,
    *,
    tables: Sequence[str] | None = None,
    mode: str = "consumed",
) -> iam.Grant:
    """`CapacityRequests.instrument` of the requests ``served``: install the fast path's
    client hook in the Python ``function`` without changing its code: a layer with the
    run-time package and an exec wrapper (``AWS_LAMBDA_EXEC_WRAPPER``) that installs the
    hook before the handler is imported, the function granted and told where to report, as
    `CapacityRequests.grant_signals` does.
    ``tables``: the only tables reported (default: all of the account's in the Region);
    ``mode``: ``consumed`` (the hook asks for the consumed capacity of the requests it
    counts) or ``throttles`` (it changes no request). Needs ``fast_path``."""
    signals_of(served.where, signals, "instrument")
    _check_function(served.where, function)
    if mode not in MODES:
        raise CapacityConfigError(
            f"{served.where}: instrument: mode must be one of {', '.join(MODES)}; got {shown(mode)}"
        )
    names = _table_names(served, tables)
    grant = grant_signals(function)
    function.add_layers(hook_layer(served.scope))
    function.add_environment(WRAPPER_ENV, HOOK_WRAPPER)
    function.add_environment(MODE_ENV, mode)
    if names:
        function.add_environment(TABLES_ENV, ",".join(names))
    function.node.add_validation(_KeptWrapper(served.where, function))
    return grant


def _check_function(where: str, function: lambda_.Function) -> None:
    """``function`` refused by name where the hook cannot be installed in it: not a
    ``lambda_.Function``, a runtime the hook is not for, a wrapper of its own (a function
    runs one), or the hook's already (instrumented once more)."""
    if not isinstance(function, lambda_.Function):
        raise CapacityConfigError(
            f"{where}: instrument needs a lambda_.Function (its layers and "
            f"environment are set); got {shown(function)}"
        )
    runtime = function.runtime
    allowed = [r.name for r in hook_runtimes()]
    if runtime.name not in allowed:
        raise CapacityConfigError(
            f"{where}: instrument: function {function.node.path} runs "
            f"{runtime.name}; the hook is for Python functions on {', '.join(allowed)} "
            f"(elsewhere, call grant_signals and report from your own code)"
        )
    wrapper = environment_of(function).get(WRAPPER_ENV)
    if wrapper == HOOK_WRAPPER:
        raise CapacityConfigError(
            f"{where}: instrument: function {function.node.path} is instrumented already; "
            "instrument a function once (one call gives it its tables and mode)"
        )
    if wrapper is not None:
        raise CapacityConfigError(
            f"{where}: instrument: function {function.node.path} has its own "
            f"{WRAPPER_ENV} ({shown(wrapper)}), which the hook's wrapper would replace (a "
            "function runs one wrapper): call grant_signals and watch from its code instead"
        )


@jsii.implements(IValidation)
class _KeptWrapper:
    """At synth: an instrumented function still runs the hook's wrapper (one set after
    ``instrument`` replaces it, and the hook is never installed)."""

    def __init__(self, where: str, function: lambda_.Function) -> None:
        self._where, self._function = where, function

    def validate(self) -> list[str]:
        wrapper = environment_of(self._function).get(WRAPPER_ENV)
        if wrapper == HOOK_WRAPPER:
            return []
        return [
            f"{self._where}: instrument: function {self._function.node.path}'s "
            f"{WRAPPER_ENV} was set to {shown(wrapper)} after instrument, which replaces "
            "the hook's wrapper (a function runs one wrapper): the hook would never be "
            "installed; keep one of the two"
        ]


def _surge_bounds(
    where: str, fast_path: FastPath, max_units: int
) -> tuple[int | None, float | None, int | str | None]:
    """The signals function's cap, scale and budget (`SurgeSettings`) from
    ``fast_path``'s ``surge_cap``, ``surge_scale``, ``surge_budget`` and
    ``surge_alarm_units``, each checked."""
    cap, scale, budget = fast_path.surge_cap, fast_path.surge_scale, fast_path.surge_budget
    if cap is not None and cap != UNBOUNDED and not is_whole(cap, 1, max_units):
        raise CapacityConfigError(
            f"{where}.surge_cap must be a whole number from 1 to max_units ({max_units}), "
            f"None (the default cap) or UNBOUNDED; got {shown(cap)}"
        )
    if not (is_number(scale, 1, MAX_SURGE_SCALE) and scale > 1):
        raise CapacityConfigError(
            f"{where}.surge_scale must be a number over 1, at most {MAX_SURGE_SCALE:g}; "
            f"got {shown(scale)}"
        )
    if cap is not None and scale != DEFAULT_SURGE_SCALE:
        raise CapacityConfigError(
            f"{where}.surge_scale applies to the default cap only; got surge_scale="
            f"{shown(scale)} with surge_cap={shown(cap)}: set one of them"
        )
    if budget is not None and budget != UNBOUNDED and not is_whole(budget, 1, 400_000):
        raise CapacityConfigError(
            f"{where}.surge_budget must be a whole number from 1 to 400000, None (the "
            f"default budget) or UNBOUNDED; got {shown(budget)}"
        )
    alarm = fast_path.surge_alarm_units
    if alarm is not None and not is_whole(alarm, 1, 10_000_000):
        raise CapacityConfigError(
            f"{where}.surge_alarm_units must be a whole number from 1 to 10000000, or None; "
            f"got {shown(alarm)}"
        )
    if cap == UNBOUNDED:
        return None, None, budget
    return (cap if isinstance(cap, int) else None), float(scale), budget


def _acknowledge_signals(signals: lambda_.Function, concurrency: int | None) -> None:
    """The signals function's acknowledgements (its reserved concurrency's only with one)."""
    no_dlq = (
        "Each report is a minute-fresh snapshot that the next report, seconds later, "
        "replaces; a failed or expired one is dropped on purpose (no retries, a one-minute "
        "event age), since replaying it would raise on stale demand. Failures are counted "
        "and alarmed (SurgesFailed, CombinerFull, BucketFailed, CorroborationFailed, Errors, "
        "AsyncEventsDropped)."
    )
    acknowledge_function(
        signals,
        concurrency,
        {
            "Serverless-LambdaTracing": "Each report logs JSON lines and EMF counts; tracing "
            "would add cost and an X-Ray wildcard permission.",
            "Serverless-LambdaDLQ": no_dlq,
            "Serverless-LambdaAsyncFailureDestination": no_dlq,
            "Serverless-LambdaDefaultMemorySize": "256 MB: the function mostly waits on "
            "DynamoDB and Application Auto Scaling.",
        },
        {
            "LambdaInsideVPC": "Calls only AWS APIs (DynamoDB, Application Auto Scaling, "
            "CloudWatch); it reaches nothing in a VPC.",
            "LambdaConcurrency": "Reports arrive from many processes at once; a dimension's "
            "changes are serialized by the hold store's leases.",
            "LambdaDLQ": no_dlq,
        },
        no_dlq,
    )


def _acknowledge_stream_reader(reader: lambda_.Function) -> None:
    """The stream reader's acknowledgements (unreserved: one invocation per shard)."""
    no_dlq = (
        "The stream reader's records are a signal about now: a batch that failed is "
        "worthless a minute later, and replaying it would count its writes twice. The "
        "reader counts its failures (StreamFailed) and they are alarmed, with its Errors."
    )
    acknowledge_function(
        reader,
        None,
        {
            "Serverless-LambdaTracing": "Each batch logs JSON lines only when something "
            "happens, and EMF counts; tracing would add cost and an X-Ray wildcard "
            "permission.",
            "Serverless-LambdaDLQ": no_dlq,
            "Serverless-LambdaDefaultMemorySize": "256 MB: a batch of up to 1,000 records "
            "is read, then the function waits on DynamoDB.",
        },
        {
            "LambdaInsideVPC": "Calls only AWS APIs (DynamoDB, Application Auto Scaling); "
            "it reaches nothing in a VPC.",
            "LambdaConcurrency": "Lambda runs one invocation per stream shard at a time; "
            "reserved concurrency below the shard count would only delay the signal.",
            "LambdaDLQ": no_dlq,
        },
        no_dlq,
    )


def _table_names(served: Served, tables: Sequence[str] | None) -> list[str]:
    """The table names an instrumented function reports on (None: every table), each one
    ``served`` (the signals function refuses reports on any other)."""
    where = served.where
    if tables is None:
        return []
    if isinstance(tables, str) or not isinstance(tables, Sequence):
        raise CapacityConfigError(
            f"{where}: instrument: tables must be a list of table names; got {shown(tables)}"
        )
    bad = [t for t in tables if not is_token(t) and not is_table_name(t)]
    if bad or not tables:
        raise CapacityConfigError(
            f"{where}: instrument: tables must name 1 or more tables (3 to 255 of "
            f"a-z A-Z 0-9 _ . -); got {shown(bad[0] if bad else tables)}"
        )
    names = [t.table_name for t in served.tables]
    foreign = [t for t in tables if t not in names]
    if foreign:
        shown_served = (
            f"{(made or t).node.path} (give its table_name)"
            if is_token(t.table_name)
            else shown(t.table_name)
            for t, made, _ in served.indexes
        )
        raise CapacityConfigError(
            f"{where}: instrument: tables must name tables these requests serve; got "
            f"{shown(foreign[0])}: they serve {', '.join(shown_served)}"
        )
    return list(tables)
