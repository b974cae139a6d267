"""Runs in: CDK app (synth time).

A run-time function run on a schedule by an EventBridge rule: one run at a time, no retries
of a stale run. A failed run is counted, not kept: the function's ``Errors``, the rule's
``FailedInvocations`` and the function's ``AsyncEventsDropped`` (`failed_runs`), which its
construct alarms on; a scheduled event carries nothing to replay (every run reads everything
afresh), so it needs no dead-letter queue (one only where something else needs it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from ._alarms import AlarmSpec, metric, says
from ._compliance import acknowledge_all, skip_checkov
from ._function_options import FunctionConfig
from ._runtime import runtime_function


@dataclass(frozen=True)
class ScheduledFunction:
    function: lambda_.Function
    policy: iam.ManagedPolicy
    dead_letter_queue: sqs.Queue | None
    rule: events.Rule

    def failed_runs(
        self, period: Duration, what: str, prefix: str = ""
    ) -> list[tuple[str, AlarmSpec]]:
        """The checks that a run of ``what`` was dropped (`failed_runs`), their ids after
        ``prefix``."""
        return [(prefix + i, s) for i, s in failed_runs(self.function, self.rule, period, what)]


def scheduled_function(
    scope: Construct,
    *,
    handler: str,
    description: str,
    config: FunctionConfig,
    every: Duration,
    calls: str,
    environment: Mapping[str, str] | None = None,
    shared: bool = False,
    dead_letter_queue: bool = False,
) -> ScheduledFunction:
    """A `runtime_function` run every ``every`` by an EventBridge rule: one run at a
    time (reserved concurrency 1), no retries of a stale run. ``dead_letter_queue``: failed
    runs also go to a dead-letter queue (SSL only, SQS-managed encryption, 14 days), for a
    construct that needs one besides (the scaler's sharded batches'). ``shared``: its policy
    will be attached to another function's role too (`runtime_function`). ``calls`` names the
    AWS APIs it reaches, for the acknowledgements of the VPC rules; ``environment``, its
    environment."""
    queue = _dead_letter_queue(scope, description) if dead_letter_queue else None
    function, policy = runtime_function(
        scope,
        "Function",
        handler=handler,
        description=description,
        config=config,
        environment=dict(environment) if environment else None,
        own=[] if queue is None else [dead_letters(queue)],
        shared=shared,
    )
    one_run_at_a_time(function)
    _configure_failed_runs(scope, function, queue, every)
    rule = events.Rule(
        scope,
        "Schedule",
        schedule=events.Schedule.rate(every),
        description=f"Runs the {description}",
        targets=[
            targets.LambdaFunction(
                function, dead_letter_queue=queue, retry_attempts=2, max_event_age=every
            )
        ],
    )
    acknowledge_control_plane_function(function, calls)
    if queue is None:
        _acknowledge_no_dead_letters(scope, function, rule, description)
    return ScheduledFunction(function, policy, queue, rule)


def failed_runs(
    function: lambda_.IFunction, rule: events.Rule, period: Duration, what: str
) -> list[tuple[str, AlarmSpec]]:
    """The checks of a scheduled function's lost runs, by alarm id: ``RunsDropped``, the
    rule's failed invocations, and ``RunsExpired``, the events Lambda dropped unrun
    (throttled past their age: a run still going when the next is due). Its errors are each
    construct's own ``Errors`` check."""
    look = (
        f"the {what}'s Throttles and Duration metrics against its schedule, and its rule "
        "(CloudTrail PutTargets, RemovePermission)"
    )
    do = "nothing to replay (every run reads everything afresh): fix what keeps runs out"
    rule_failed = metric(
        "AWS/Events", "FailedInvocations", dimensions_map={"RuleName": rule.rule_name}
    )
    dropped = function.metric("AsyncEventsDropped", period=period, statistic="Sum")
    return [
        (
            "RunsDropped",
            AlarmSpec(
                rule_failed.with_(period=period),
                says(f"EventBridge could not invoke the {what} on its schedule"),
                look=look,
                do=do,
            ),
        ),
        (
            "RunsExpired",
            AlarmSpec(
                dropped,
                says(f"Runs of the {what} were dropped unrun (still throttled at their age)"),
                look=look,
                do=do,
            ),
        ),
    ]


def _acknowledge_no_dead_letters(
    scope: Construct, function: lambda_.Function, rule: events.Rule, description: str
) -> None:
    """The dead-letter findings on the function, its asynchronous invocations (``scope``'s
    ``AsyncInvokeConfig``) and its rule, acknowledged: failed runs are counted and alarmed,
    not kept."""
    reason = (
        f"A failed run of the {description} is counted (its Errors, the rule's "
        "FailedInvocations, AsyncEventsDropped) and alarmed; its scheduled event carries "
        "nothing to replay, so a dead-letter queue would keep nothing of use."
    )
    packs = ("Serverless", "HIPAA.Security", "NIST.800.53.R5")
    acknowledge_all(function, {f"{p}-LambdaDLQ": reason for p in packs})
    acknowledge_unkept_runs(scope, rule, reason)
    skip_checkov(function, "CKV_AWS_116", reason)


def acknowledge_unkept_runs(scope: Construct, rule: events.Rule, reason: str) -> None:
    """The dead-letter findings on a scheduled function's asynchronous invocations
    (``scope``'s ``AsyncInvokeConfig``) and on its rule, acknowledged for ``reason``."""
    acknowledge_all(
        scope.node.find_child("AsyncInvokeConfig"),
        {"Serverless-LambdaAsyncFailureDestination": reason},
    )
    acknowledge_all(rule, {"Serverless-EventBusDLQ": reason})


def acknowledge_control_plane_function(function: lambda_.Function, calls: str) -> None:
    """The findings a function that reaches only AWS APIs (``calls`` names them) is
    acknowledged for: no tracing, no VPC."""
    reasons = {
        "Serverless-LambdaTracing": "Each run logs JSON lines (and EMF metrics where it "
        "publishes any); tracing would add cost and an X-Ray wildcard permission.",
        **{
            f"{pack}-LambdaInsideVPC": f"Calls only AWS control-plane APIs ({calls}); it "
            f"reaches nothing in a VPC."
            for pack in ("HIPAA.Security", "NIST.800.53.R5", "PCI.DSS.321")
        },
    }
    acknowledge_all(function, reasons)


def _dead_letter_queue(scope: Construct, description: str) -> sqs.Queue:
    """Where the failed runs of a scheduled function go (child ``DeadLetterQueue``)."""
    queue = sqs.Queue(
        scope,
        "DeadLetterQueue",
        enforce_ssl=True,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        retention_period=Duration.days(14),
    )
    skip_checkov(
        queue,
        "CKV_AWS_27",
        "Encrypted at rest with SQS-managed keys (SSE-SQS); it holds failed schedule "
        "events, which name no data, so a KMS key ($1 a month) would protect nothing more.",
    )
    acknowledge_all(
        queue,
        dict.fromkeys(
            ("AwsSolutions-SQS3", "Serverless-SQSRedrivePolicy"),
            f"This queue is itself the dead-letter queue of the {description}'s "
            f"schedule and of its asynchronous invocations; nothing is behind it.",
        ),
    )
    return queue


def one_run_at_a_time(function: lambda_.Function) -> None:
    """Runs of ``function`` never overlap (reserved concurrency 1)."""
    cfn_function = function.node.default_child
    assert isinstance(cfn_function, lambda_.CfnFunction)
    cfn_function.reserved_concurrent_executions = 1


def _configure_failed_runs(
    scope: Construct, function: lambda_.Function, queue: sqs.Queue | None, every: Duration
) -> None:
    """A scheduled run is never retried once a newer run is due (``every``); with ``queue``,
    a failed run goes to it (a DLQ and an on-failure destination). The function is let send
    to the queue by `dead_letters`, given to `runtime_function` as its ``own``."""
    cfn_function = function.node.default_child
    assert isinstance(cfn_function, lambda_.CfnFunction)
    destination = None
    if queue is not None:
        # Failed runs go to the queue (a DLQ and an on-failure destination); the permission
        # (DeadLetters) lives in the function's managed policy, not an inline role policy.
        cfn_function.dead_letter_config = lambda_.CfnFunction.DeadLetterConfigProperty(
            target_arn=queue.queue_arn
        )
        destination = lambda_.CfnEventInvokeConfig.DestinationConfigProperty(
            on_failure=lambda_.CfnEventInvokeConfig.OnFailureProperty(destination=queue.queue_arn)
        )
    lambda_.CfnEventInvokeConfig(
        scope,
        "AsyncInvokeConfig",
        function_name=function.function_name,
        qualifier="$LATEST",
        maximum_retry_attempts=0,
        maximum_event_age_in_seconds=int(every.to_seconds()),
        destination_config=destination,
    )


def dead_letters(queue: sqs.Queue) -> iam.PolicyStatement:
    """Sending failed runs to ``queue``."""
    return iam.PolicyStatement(
        sid="DeadLetters", actions=["sqs:SendMessage"], resources=[queue.queue_arn]
    )
