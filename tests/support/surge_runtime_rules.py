"""The surge rules' run-time world: stored buckets, warm and streamed tables, and the
metrics the hook reports."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import boto3
from botocore.config import Config

from ddb_capacity_runtime.aws import combiner
from ddb_capacity_runtime.core.bucket import Bucket, read_bucket
from ddb_capacity_runtime.core.names import DEFAULT_TABLE_QUOTA
from ddb_capacity_runtime.core.surge_report import DimensionReport, Report
from ddb_capacity_runtime.fast_path.stream_reader import read_stream
from ddb_capacity_runtime.fast_path.surge_settings import SurgeSettings
from tests.support.moto_world import World
from tests.support.surge_server import send, served

#: The deployed defaults: the surge cap 4x the start, the default budget.
DEFAULTS = SurgeSettings()


#: The seconds between two of a process's reports in these tests (their window).
EVERY = 5


class Clock:
    """A clock the test moves, starting at a whole second."""

    def __init__(self, start: float) -> None:
        self.t = float(int(start))

    def __call__(self) -> float:
        return self.t

    def tick(self, seconds: float) -> float:
        self.t += seconds
        return self.t


def hook_report(
    world: World,
    name: str,
    clock: Clock,
    per_second: float,
    *,
    throttles: dict[str, int] | None = None,
    index: str | None = None,
    settings: SurgeSettings = DEFAULTS,
) -> dict[str, Any]:
    """One process's report of ``EVERY`` seconds at ``per_second`` write units (in 1-unit
    requests), taken at ``clock``'s time; its one row."""
    units = per_second * EVERY
    d = DimensionReport(index, "write", units, int(units), throttles or {}, 0)
    event = Report(name, "p1", float(EVERY), clock(), (d,)).as_json()
    scopes = served(name, indexes=(index,) if index else ())
    (row,) = send(world, event, scopes, settings, clock=clock)["dimensions"]
    return dict(row)


def stored(world: World, name: str, source: str = "hook", key: str = "table:write") -> Any:
    """The combiner item's attribute of ``source``'s estimate, as DynamoDB holds it."""
    item = world.store_ddb.get_item(
        TableName=world.store.name,
        Key=combiner.combiner_key(name, key),
        ConsistentRead=True,
    ).get("Item", {})
    return item.get(combiner.BUCKETS[source])


def stored_bucket(world: World, name: str, now: float, source: str = "hook") -> Bucket | None:
    raw = stored(world, name, source)
    return read_bucket(raw.get("S") if raw else None, now, DEFAULT_TABLE_QUOTA)


def put_bucket(world: World, name: str, text: dict[str, Any], source: str = "hook") -> None:
    """Write ``text`` (an attribute value) as ``source``'s estimate of the table's writes."""
    world.store_ddb.update_item(
        TableName=world.store.name,
        Key=combiner.combiner_key(name, "table:write"),
        UpdateExpression="SET #e = :e",
        ExpressionAttributeNames={"#e": combiner.BUCKETS[source]},
        ExpressionAttributeValues={":e": text},
    )


def warm_table(world: World, base: str, warm: int = 1_000) -> str:
    """A table at 100 write units pre-warmed to ``warm``, its writes under a 70 % target
    (min 100, max 10,000)."""
    name = world.name(base)
    world.ddb.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        ProvisionedThroughput={"ReadCapacityUnits": 50, "WriteCapacityUnits": 100},
        WarmThroughput={"ReadUnitsPerSecond": warm, "WriteUnitsPerSecond": warm},
    )
    world.target(name, "write", 100, 10_000)
    return name


def plain_table(world: World, base: str, write: int = 100) -> str:
    """A table at ``write`` units (its warm throughput the same, as moto reports it), its
    writes under a 70 % target (max 10,000)."""
    name = world.table(base, 50, write, tagged=False)
    world.target(name, "write", write, 10_000)
    return name


def stream_table(world: World, base: str) -> tuple[str, str]:
    """A table at 100 write units with a stream, its writes under a 70 % target; its name
    and a stream ARN of it (the reader reads the table's name from it)."""
    name = plain_table(world, base)
    arn = f"arn:aws:dynamodb:us-east-1:123456789012:table/{name}/stream/2026-01-01T00:00:00.000"
    return name, arn


def stream_batch(arn: str, start: float, per_second: int) -> dict[str, Any]:
    """A batch of one 10-second window from ``start``: ``per_second`` x 10 units of writes,
    items of 10 KB (10 units each), all in the window's last second."""
    records = []
    for i in range(per_second):
        item = {"pk": {"S": f"k{int(start)}-{i}"}, "note": {"S": "x" * 10_000}}
        records.append(
            {
                "eventID": f"{int(start)}-{i}",
                "eventName": "INSERT",
                "eventSource": "aws:dynamodb",
                "awsRegion": "us-east-1",
                "eventSourceARN": arn,
                "dynamodb": {
                    "ApproximateCreationDateTime": start + 9,
                    "Keys": {"pk": item["pk"]},
                    "NewImage": item,
                    "SequenceNumber": str(10**20 + int(start) * 1_000 + i),
                    "SizeBytes": 10_020,
                    "StreamViewType": "NEW_AND_OLD_IMAGES",
                },
            }
        )
    return {"Records": records}


def stream_look(world: World, name: str, arn: str, clock: Clock, per_second: int) -> dict[str, Any]:
    """The stream reader's batch of the window that ends at ``clock``'s next 10 s (its
    rate: ``per_second``, or the window before's if that was higher); its one row."""
    start = clock()
    clock.tick(9)  # the look: just as its window's last second's records come
    event = stream_batch(arn, start, per_second)
    answer = read_stream(
        event, served(name), DEFAULTS, clients=world.clients, store=world.store, clock=clock
    )
    clock.tick(1)
    (row,) = answer["dimensions"]
    return dict(row)


def consumed(
    world: World, name: str, per_second: float, minutes_ago: int, index: str | None = None
) -> None:
    """CloudWatch's consumed write capacity of one minute, ``minutes_ago`` before the
    current one, as DynamoDB publishes it (a Sum a minute)."""
    dims = [{"Name": "TableName", "Value": name}]
    if index is not None:
        dims.append({"Name": "GlobalSecondaryIndexName", "Value": index})
    world.cw.put_metric_data(
        Namespace="AWS/DynamoDB",
        MetricData=[
            {
                "MetricName": "ConsumedWriteCapacityUnits",
                "Dimensions": dims,
                "Timestamp": world.now - timedelta(minutes=minutes_ago),
                "Value": per_second * 60,
                "Unit": "Count",
            }
        ],
    )


def metric_calls(world: World) -> Callable[[], int]:
    """How many GetMetricData calls the world's CloudWatch client has made from now."""
    calls: list[str] = []
    world.cw.meta.events.register(
        "before-call.cloudwatch.GetMetricData", lambda **_: calls.append("call")
    )
    return lambda: len(calls)


def unreachable_cloudwatch() -> Any:
    """A CloudWatch client whose endpoint has no server: every call fails at once."""
    return boto3.client(
        "cloudwatch",
        endpoint_url="http://127.0.0.1:9",
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",  # noqa: S106 (never sent)
        config=Config(connect_timeout=1, retries={"total_max_attempts": 1}),
    )
