"""A streamed table in moto, its records as a Lambda event, and what the stream reader
read from them."""

from __future__ import annotations

import base64
import uuid
from datetime import datetime
from typing import Any

from ddb_capacity_runtime.aws import stream_counts
from ddb_capacity_runtime.core.stream import WINDOW_SECONDS
from ddb_capacity_runtime.fast_path.stream_reader import read_stream
from ddb_capacity_runtime.fast_path.surge_settings import SurgeSettings
from ddb_capacity_runtime.requests.broker import BrokerConfig
from tests.support.moto_world import World
from tests.support.surge_server import SETTINGS

#: An item of 1,500 bytes: 2 write units on the table, and on a GSI that projects it all.
NOTE = "x" * 1_490


def streamed_table(world: World, base: str, write: int = 10, gsi_write: int = 10) -> str:
    """A provisioned table in moto with a NEW_AND_OLD_IMAGES stream and a GSI ``byUser``
    that projects every attribute, its write dimension under a scalable target."""
    name = world.name(base)
    world.ddb.create_table(
        TableName=name,
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "user", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "byUser",
                "KeySchema": [{"AttributeName": "user", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
                "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": gsi_write},
            }
        ],
        ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": write},
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    world.target(name, "write", write, 1_000)
    return name


def put_items(world: World, name: str, n: int, *, user: bool = True) -> None:
    for i in range(n):
        item = {"pk": {"S": f"item-{uuid.uuid4().hex[:6]}-{i}"}, "note": {"S": NOTE}}
        if user:
            item["user"] = {"S": f"u{i % 3}"}
        world.ddb.put_item(TableName=name, Item=item)


def stream_records(world: World, name: str) -> tuple[str, list[dict[str, Any]]]:
    """The table's stream ARN and every record of its shards, read with boto3."""
    streams = world.clients.dynamodb.meta  # the same endpoint as the world's clients
    client = _streams_client(streams.endpoint_url)
    arn = world.ddb.describe_table(TableName=name)["Table"]["LatestStreamArn"]
    records: list[dict[str, Any]] = []
    for shard in client.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = client.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        records += client.get_records(ShardIterator=iterator)["Records"]
    return arn, records


def _streams_client(endpoint: str) -> Any:
    import boto3

    return boto3.client(
        "dynamodbstreams",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",  # noqa: S106 (moto takes any key)
    )


def lambda_event(
    arn: str, records: list[dict[str, Any]], at: float | None = None
) -> dict[str, Any]:
    """``records`` as Lambda hands them to a function: each with the stream's
    ``eventSourceARN``, times in seconds since the epoch (``at``: all at that second),
    binary values in base64."""
    out = []
    for record in records:
        body = dict(record["dynamodb"])
        when = body.get("ApproximateCreationDateTime")
        if isinstance(when, datetime):
            body["ApproximateCreationDateTime"] = when.timestamp()
        if at is not None:
            body["ApproximateCreationDateTime"] = at
        for image in ("NewImage", "OldImage", "Keys"):
            if image in body:
                body[image] = {k: _wire(v) for k, v in body[image].items()}
        out.append({**record, "dynamodb": body, "eventSourceARN": arn})
    return {"Records": out}


def _wire(value: dict[str, Any]) -> dict[str, Any]:
    ((kind, raw),) = value.items()
    if kind == "B" and isinstance(raw, bytes):
        return {"B": base64.b64encode(raw).decode()}
    return value


def window_sum(world: World, name: str, sort_key: str, start: int) -> float | None:
    item = world.store_ddb.get_item(
        TableName=world.store.name,
        Key=stream_counts.counter_key(name, sort_key, start),
        ConsistentRead=True,
    ).get("Item")
    if item is None or int(item["w"]["N"]) != start:
        return None
    return float(item["u"]["N"])


def read(
    world: World,
    event: object,
    scopes: BrokerConfig,
    settings: SurgeSettings = SETTINGS,
    home: tuple[str, str, str] | None = None,
) -> dict[str, Any]:
    return read_stream(event, scopes, settings, clients=world.clients, store=world.store, home=home)


def settled(now: float) -> tuple[int, float]:
    """A window that ended a little while ago, and a second 4 s into it (5 s elapsed)."""
    start = int((now - 2 * WINDOW_SECONDS) // WINDOW_SECONDS) * WINDOW_SECONDS
    return start, start + 4.0
