"""Runs in: CDK app (synth time).

The batch path of a sharded tick (``ThrottleAwareScaler(shard_above_tables=...)``,
`ddb_capacity_runtime.scaler.shard`): an SQS queue the scheduled function sends its
batches to, and a batch function that takes them one at a time, at most ``concurrency`` at
once (the event source's maximum concurrency), with the scheduled function's permissions on
the tables (the scaler sets both functions' environment alike). A batch that fails is not
retried (its tick is over): it goes to the scheduled function's dead-letter queue, whose
alarm is the scaler's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from ddb_capacity_runtime.core.names import BATCH_QUEUE_ENV

from ..common._compliance import acknowledge, acknowledge_all, skip_checkov
from ..common._deploy_limits import check_policy
from ..common._function_options import FunctionConfig
from ..common._runtime import runtime_function
from ..common._scheduled_function import acknowledge_control_plane_function

DEFAULT_BATCH_CONCURRENCY = 10
"""Batches ticked at once: 10,000 tables in batches of 125 are 80 batches, about 8 rounds of 10
within a 2-minute tick (benchmarks/sharded_tick.py)."""
CONCURRENCY_RANGE = (2, 1_000)
"""SQS event sources take a maximum concurrency from 2 to 1,000."""


@dataclass(frozen=True)
class BatchPath:
    """The batch queue and the function that ticks its batches."""

    queue: sqs.Queue
    function: lambda_.Function


def batch_path(
    scope: Construct,
    *,
    scheduled: lambda_.Function,
    scheduled_policy: iam.ManagedPolicy,
    dead_letter_queue: sqs.IQueue,
    config: FunctionConfig,
    concurrency: int,
    environment: Mapping[str, str],
) -> BatchPath:
    """The queue (child ``BatchQueue``) and the batch function (child ``BatchFunction``) of
    ``scheduled``, whose policy the batch function's role gets too (the same tables,
    targets and state store), and whose environment names the queue. The batch function's
    environment is ``environment`` (the scheduled function's settings)."""
    queue = _batch_queue(scope, dead_letter_queue, config.timeout)
    function, policy = runtime_function(
        scope,
        "BatchFunction",
        handler="ddb_capacity_runtime.scaler.handler.batch_handler",
        description="Throttle-aware DynamoDB capacity scaler, batches of a sharded tick",
        config=config,
        environment=dict(environment),
        reserved_concurrent_executions=concurrency,
    )
    _acknowledge(function, queue)
    assert function.role is not None
    scheduled_policy.attach_to_role(function.role)
    scheduled.add_environment(BATCH_QUEUE_ENV, queue.queue_url)
    _grant_send(scope, scheduled, queue)
    policy.add_statements(
        iam.PolicyStatement(
            sid="ReceiveBatches",
            actions=[
                "sqs:ReceiveMessage",
                "sqs:DeleteMessage",
                "sqs:ChangeMessageVisibility",
                "sqs:GetQueueAttributes",
            ],
            resources=[queue.queue_arn],
        )
    )
    source = lambda_.EventSourceMapping(
        scope,
        "BatchSource",
        target=function,
        event_source_arn=queue.queue_arn,
        batch_size=1,
        max_concurrency=concurrency,
    )
    source.node.add_dependency(policy)
    acknowledge(
        source,
        "Serverless-LambdaEventSourceMappingDestination",
        "An SQS event source takes no on-failure destination: the batch queue's redrive "
        "policy sends a failed batch to the scaler's dead-letter queue (alarmed).",
    )
    return BatchPath(queue, function)


def _grant_send(scope: Construct, scheduled: lambda_.Function, queue: sqs.Queue) -> None:
    """``SendBatches``, in a policy of the scheduled function's role alone (the batch role
    shares the scheduled function's main policy)."""
    assert scheduled.role is not None
    policy = iam.ManagedPolicy(
        scope,
        "SendBatchesPolicy",
        description="Lets the throttle-aware scaler send a sharded tick's batches",
        roles=[scheduled.role],
        statements=[
            iam.PolicyStatement(
                sid="SendBatches", actions=["sqs:SendMessage"], resources=[queue.queue_arn]
            )
        ],
    )
    check_policy(policy)


def _batch_queue(scope: Construct, dead_letter_queue: sqs.IQueue, timeout: Duration) -> sqs.Queue:
    """The batch queue: a message is visible again only after the function's timeout,
    goes to ``dead_letter_queue`` after one receive, and is gone within the hour."""
    queue = sqs.Queue(
        scope,
        "BatchQueue",
        enforce_ssl=True,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        visibility_timeout=timeout,
        retention_period=Duration.hours(1),
        dead_letter_queue=sqs.DeadLetterQueue(queue=dead_letter_queue, max_receive_count=1),
    )
    skip_checkov(
        queue,
        "CKV_AWS_27",
        "Encrypted at rest with SQS-managed keys (SSE-SQS); a batch names tables and their "
        "tags, which the tagging API shows anyone allowed to list them, so a KMS key ($1 a "
        "month) would protect nothing more.",
    )
    return queue


def _acknowledge(function: lambda_.Function, queue: sqs.Queue) -> None:
    """The batch function's findings: it reaches AWS APIs only, and it is invoked by its
    event source, whose queue's redrive policy is its dead-letter path."""
    acknowledge_control_plane_function(
        function, "DynamoDB, Application Auto Scaling, CloudWatch, SQS"
    )
    dlq = (
        "Invoked synchronously by its SQS event source only, where a function's dead-letter "
        "queue never applies: the batch queue's redrive policy sends a failed batch to the "
        "scaler's dead-letter queue (alarmed) after one receive."
    )
    acknowledge_all(
        function,
        {f"{pack}-LambdaDLQ": dlq for pack in ("Serverless", "HIPAA.Security", "NIST.800.53.R5")},
    )
    skip_checkov(function, "CKV_AWS_116", dlq)
