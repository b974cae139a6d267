"""The sharded tick's world, its clients, and the EMF records it writes."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest

from ddb_capacity_runtime.aws.clients import Clients
from ddb_capacity_runtime.core.settings import ScalerConfig
from ddb_capacity_runtime.scaler.handler import run_batch
from ddb_capacity_runtime.scaler.shard import Batch
from tests.support.moto_world import TAG_KEY, World


@pytest.fixture
def world(aws_client: Any, store_dynamodb: Any) -> Iterator[World]:
    """Tables, targets and traffic in moto; the state store in dynalite (atomic conditional
    writes, as DynamoDB's: batches write to it at the same time)."""
    made = World(aws_client, store_dynamodb)
    yield made
    made.close()


@pytest.fixture
def queue(aws_client: Any, world: World) -> Iterator[str]:
    """The batch queue, in moto's SQS."""
    sqs = aws_client("sqs")
    url = sqs.create_queue(QueueName=f"batches-{world.run_id}")["QueueUrl"]
    yield url
    sqs.delete_queue(QueueUrl=url)


def received(aws_client: Any, url: str) -> list[dict[str, Any]]:
    """Every message on the queue, as the event source would hand them over."""
    sqs, out = aws_client("sqs"), []
    while page := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
        out += [{"body": m["Body"], "messageId": m["MessageId"]} for m in page]
    return out


def config(world: World, **env: str) -> ScalerConfig:
    return ScalerConfig.from_env(
        {"SCALER_TAG_KEY": TAG_KEY, "SCALER_TAG_VALUE": world.run_id, **env}
    )


def own_clients(aws_client: Any) -> Clients:
    """Clients of one Lambda invocation (each batch has its own)."""
    return Clients(
        aws_client("dynamodb"),
        aws_client("application-autoscaling"),
        aws_client("cloudwatch"),
        aws_client("resourcegroupstaggingapi"),
        aws_client("sqs"),
    )


def ticked(
    world: World,
    clients: Clients,
    batch: Batch,
    out: io.StringIO | None = None,
    now: Any = None,
    **env: str,
) -> str | None:
    """``batch``, as the batch function receives it, at the world's time (or ``now()``)."""
    return run_batch(
        config(world, **env),
        clients,
        {"body": batch.to_message()},
        store=world.store,
        now=now or (lambda: world.now),
        out=out or io.StringIO(),
    )


def emf_records(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def throttled(world: World, base: str, *, tagged: bool = True) -> str:
    """A table throttled at 100 writes: a tick raises it to 215."""
    name = world.table(base, 100, 100, tagged=tagged)
    world.traffic(name, "read", 60)
    world.traffic(name, "write", 100)
    world.traffic(name, "write", 0, throttles=3000, minutes=range(1, 3))
    return name
