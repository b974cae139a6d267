"""Runs in: CDK app (synth time).

The fast path's alarms, and those its `CapacityRequests` shares with it: the signals
function's (its failures, the reports it refuses, the surges it could not apply, confirm or
afford, and its rules'), ``HoldsBusy`` (expired holds or a surge that could not raise a
table not ACTIVE), and the alarms on a function's errors and on an EMF count. They are made
in the scope of the ``CapacityRequests`` (`Served.alarms`: their construct ids, and so the
template, are the construct's own); the stream reader's are its own (`_stream_signal`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_

from ddb_capacity_runtime.fast_path.failures import HOOK_FAILURES, SIGNALS_FUNCTION_DIMENSION
from ddb_capacity_runtime.requests.broker import NAMESPACE as BROKER_NAMESPACE

from ..common._alarms import AlarmSpec, metric, says

if TYPE_CHECKING:
    from ._served import Served

BUSY_FOR = Duration.minutes(30)
"""How long a held table or index must stay not ACTIVE before ``HoldsBusy`` alarms (a table
UPDATING for one raise is that for minutes)."""
BUSY_EVERY = Duration.minutes(5)
"""The period of ``HoldsBusy`` made for a fast path without a restorer."""

SIGNALS_LOG = "the signals function's log group"
"""Where most of the fast path's alarms send their on-call engineer first."""


def errors_alarm(
    served: Served,
    function: lambda_.Function,
    alarm_id: str,
    what: str,
    look: str,
    do: str,
) -> None:
    """``alarm_id``: ``function`` failed (1 error in 5 minutes)."""
    served.alarms.add(
        alarm_id,
        AlarmSpec(function.metric_errors(period=Duration.minutes(5)), says(what), look=look, do=do),
    )


def count_alarm(
    served: Served,
    alarm_id: str,
    metric_name: str,
    what: str,
    look: str,
    do: str,
) -> None:
    """An alarm on any of the functions' EMF count ``metric_name`` in 5 minutes."""
    served.alarms.add(alarm_id, AlarmSpec(served.metric(metric_name), says(what), look=look, do=do))


def busy_alarm(served: Served, every: Duration) -> None:
    """``HoldsBusy``: in every period of ``every`` (a restore's) for `BUSY_FOR` (the first
    and the last at least that far apart, and at least two), a held table or index was not
    ACTIVE: a restore could not end its expired holds (their capacity stays), or a surge
    could not raise its throttled table (``surge-busy``). A restore or a surge that finds
    none sends none, and a missing datapoint is not breaching."""
    runs = max(2, math.floor(BUSY_FOR.to_seconds() / every.to_seconds()) + 1)
    served.alarms.add(
        "HoldsBusy",
        AlarmSpec(
            served.metric("HoldsBusy", period=every),
            lambda n: (
                f"A held table or index was not ACTIVE in each of {n} periods of "
                f"{every.to_human_string()} in a row: expired capacity holds could not be "
                "ended (the capacity they raised stays until it is ACTIVE), or a surge could "
                "not raise the throttled table"
            ),
            look=(
                "the broker's holds-busy warnings, or the surge-busy warnings in the signals "
                "function's or the stream reader's log group (table, index, dimension); "
                "describe-table (TableStatus, IndexStatus)"
            ),
            do=(
                "Wait for an update or a GSI backfill to end; for a KMS key DynamoDB cannot "
                "use, restore its access; else find who keeps updating the table"
            ),
            evaluation_periods=runs,
            every_period=True,
        ),
    )


SIGNALS_COUNT_ALARMS: tuple[tuple[str, str, str, str, str], ...] = (
    (
        "ReportsRefused",
        "ReportsRefused",
        "A report to the fast path's signals function was malformed (the client hook never "
        "sends one: a process that lies, or another library version)",
        f"the report-refused warnings in {SIGNALS_LOG} (reason names the field); CloudTrail "
        "Invoke of the function for the principal",
        "deploy one library version to the function and the processes; remove the grant of "
        "a principal that should not report",
    ),
    (
        "SurgeBudget",
        "SurgesOverBudget",
        "A surge of the fast path met its dimension's budget of surge units for the hour, "
        "or its surge cap over the dimension's configured base (a process that lies, or a "
        "budget or cap too small)",
        f"the surge-over-budget warnings in {SIGNALS_LOG} (table, index, dimension)",
        "for a process that lies, remove its grant; for real bursts, raise "
        "FastPath(surge_budget=...) or surge_scale",
    ),
    (
        "SurgesFailed",
        "SurgesFailed",
        "A surge of the fast path could not be applied (the raise failed, a limit refused it, "
        "or AWS failed)",
        f"the surge-failed events in {SIGNALS_LOG} (table, index, dimension, reason)",
        "by the reason: AccessDenied, tag the table's scalable targets; no room, raise "
        "max_total_units or the target's max; a table being updated, wait",
    ),
    (
        "CombinerFull",
        "CombinerFull",
        "A report of the fast path came from a newcomer while 100 processes report on its "
        "dimension already: newcomers share one entry",
        f"the combiner-overflow warnings in {SIGNALS_LOG} (table, key, reporter)",
        "call watch once per process, not per request; or report from fewer processes with "
        "FastPath(share=...)",
    ),
    (
        "SurgeEntriesIgnored",
        "SurgeEntriesIgnored",
        "A combiner item of the fast path held entries no signals function writes (out of "
        "bounds, or more than it keeps): ignored, so the surge decided on the others; "
        "something else writes the surge store, or another version",
        f"the surge-entries-ignored and combiner-repaired warnings in {SIGNALS_LOG}; "
        "CloudTrail data events on the store's table",
        "deploy one library version to every function that writes the store; remove write "
        "access to it from anything else",
    ),
    (
        "SurgesUnconfirmed",
        "SurgesUnconfirmed",
        "A surge raised on the processes' reports was not confirmed by DynamoDB's own "
        "measure (CloudWatch's consumed capacity) and is left to expire: a process that "
        "lies, or reports on the wrong table",
        f"the surge-unconfirmed warnings in {SIGNALS_LOG} (table, index, dimension, trusted, "
        "refused)",
        "find the reporting principal (its process ids name the host) and remove its grant "
        "if it lies",
    ),
    (
        "BucketFailed",
        "BucketFailed",
        "A dimension's burst-bucket estimate could not be read or written: it reads as "
        "empty, so surges start as soon as the demand reaches the capacity",
        "the bucket-failed warnings in the signals function's or the stream reader's log "
        "group (table, key, source, reason)",
        "by the reason: a throttled or failing state store passes; AccessDenied, redeploy "
        "the stack's policies; a value that is not an estimate, find who wrote it",
    ),
    (
        "CorroborationFailed",
        "CorroborationFailed",
        "CloudWatch could not be read, or its answer left minutes unknown, to corroborate "
        "a surge the surge cap cut short or to confirm one: the capped surge stands, the "
        "surge to be confirmed goes on",
        f"the corroboration-failed errors in {SIGNALS_LOG} (table, index, dimension, reason)",
        "AccessDenied on cloudwatch:GetMetricData, redeploy the stack's policies; throttled "
        "calls and minutes not yet delivered pass by themselves",
    ),
)
"""The fast path's alarms on an EMF count in 5 minutes: id, metric, what happened, where to
look first, what to do first."""


def signals_alarms(
    served: Served, signals: lambda_.Function, surge_alarm_units: int | None
) -> None:
    """The signals function's alarms: it failed, Lambda dropped reports before they ran,
    surges added ``surge_alarm_units`` or more in an hour (unless None), and its counts'
    (`SIGNALS_COUNT_ALARMS`: a report refused, a surge failed, over budget, unconfirmed or
    not corroborated, the combiner full or holding entries no signals function writes, a
    bucket estimate not kept, a hook that could not report)."""
    errors_alarm(
        served,
        signals,
        "SignalsErrors",
        "The capacity signals function (fast path) failed: a bad configuration, an AWS call "
        "that hung, or a crash",
        f"the error in {SIGNALS_LOG}",
        "fix what the error names (redeploy the stack for a configuration error)",
    )
    for alarm_id, metric_name, what, look, do in SIGNALS_COUNT_ALARMS:
        count_alarm(served, alarm_id, metric_name, what, look, do)
    _hook_failures_alarm(served, signals)
    if surge_alarm_units is not None:
        _surge_units_alarm(served, surge_alarm_units)
    served.alarms.add(
        "SignalsDropped",
        AlarmSpec(
            metric(
                "AWS/Lambda",
                "AsyncEventsDropped",
                dimensions_map={"FunctionName": signals.function_name},
            ),
            says(
                "Reports to the capacity signals function (fast path) were dropped by Lambda "
                "before it ran them (older than a minute: its reserved concurrency was busy)"
            ),
            look=(
                "the signals function's Throttles, ConcurrentExecutions, Duration and "
                "AsyncEventAge metrics"
            ),
            do="raise FastPath(concurrency=...), or report less often or from fewer processes",
        ),
    )


def _hook_failures_alarm(served: Served, signals: lambda_.Function) -> None:
    """``HookFailures``: a client hook in a Lambda function failed, whichever way it was
    granted: the sum of its counts for the hold store (a function ``grant_signals`` or
    ``instrument`` told it) and for the signals function (one granted through its role
    alone: `ddb_capacity_runtime.fast_path.failures.series`)."""
    five = Duration.minutes(5)
    by_function = metric(
        BROKER_NAMESPACE,
        HOOK_FAILURES,
        period=five,
        dimensions_map={SIGNALS_FUNCTION_DIMENSION: signals.function_name},
    )
    failures = cloudwatch.MathExpression(
        expression="FILL(store, 0) + FILL(function, 0)",
        using_metrics={"store": served.metric(HOOK_FAILURES), "function": by_function},
        label=HOOK_FAILURES,
        period=five,
    )
    served.alarms.add(
        "HookFailures",
        AlarmSpec(
            failures,
            says(
                "A client hook in a Lambda function (instrument, watch in a function granted "
                "with grant_signals, or one granted the signals function through its role) "
                "could not send reports, dropped observations or met errors: the fast path "
                "does not hear all of that function's traffic"
            ),
            look=(
                "that function's own log group: signals-send-failed (the AWS error code and "
                "a hint) and signals-hook-error lines, or hook not installed; HookFailures "
                "by StateStore (a function granted here) or by SignalsFunction (one granted "
                "through its role)"
            ),
            do=(
                "by the code: AccessDenied, grant the function (grant_signals or "
                "instrument); ResourceNotFound, fix its CAPACITY_SIGNALS"
            ),
        ),
    )


def _surge_units_alarm(served: Served, threshold: int) -> None:
    """An alarm when the fast path's surges add ``threshold`` units or more in an hour."""
    served.alarms.add(
        "SurgeUnits",
        AlarmSpec(
            served.metric("SurgeUnits", period=Duration.hours(1)),
            says(
                f"The fast path's surges added {threshold:,} capacity units or more in an "
                "hour (SurgeUnits), over every dimension served: busy bursts, or a process "
                "that lies"
            ),
            look=f"the surge-applied lines of the hour in {SIGNALS_LOG} (table, index, to)",
            do=(
                "if the bursts are real, raise FastPath(surge_alarm_units=...); if not, "
                "remove the lying principal's grant"
            ),
            threshold=threshold,
        ),
    )
