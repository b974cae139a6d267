"""One scaler tick over many tagged tables, beside the seed article's approach.

Creates N tables (default 1,000) with 2 GSIs each, tagged for discovery, in a local moto
server on 127.0.0.1, writes a minute of traffic for each, then measures in the same run:

- this project's tick (``run_tick``): tag discovery, scalable targets listed once, one
  DescribeTable per table, GetMetricData batched 500 queries a call;
- the seed's approach: per table, DescribeScalingPolicies, DescribeTable, and one
  GetMetricStatistics per metric (4) of the table and of each GSI.

It prints the AWS calls by operation and the wall time of each. Usage:
    .venv/bin/python benchmarks/scaler_tick.py [--tables 1000]
"""

from __future__ import annotations

import argparse
import io
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3

from ddb_capacity_runtime.aws.clients import Clients
from ddb_capacity_runtime.core.settings import ScalerConfig
from ddb_capacity_runtime.scaler.tick import run_tick
from examples.local_aws import moto_server

METRICS = (
    "ConsumedReadCapacityUnits",
    "ConsumedWriteCapacityUnits",
    "ReadThrottleEvents",
    "WriteThrottleEvents",
)


def counted(clients: list[Any]) -> Counter[str]:
    calls: Counter[str] = Counter()
    for client in clients:
        client.meta.events.register(
            "before-call.*.*", lambda event_name, **_: calls.update([event_name.split(".")[-1]])
        )
    return calls


def make(endpoint: str) -> Clients:
    kw = {
        "endpoint_url": endpoint,
        "region_name": "us-east-1",
        "aws_access_key_id": "test",
        "aws_secret_access_key": "test",
    }
    return Clients(
        boto3.client("dynamodb", **kw),
        boto3.client("application-autoscaling", **kw),
        boto3.client("cloudwatch", **kw),
        boto3.client("resourcegroupstaggingapi", **kw),
    )


def populate(c: Clients, n: int, now: datetime) -> list[str]:
    names = []
    for i in range(n):
        name = f"bench-{i:04d}"
        c.dynamodb.create_table(
            TableName=name,
            AttributeDefinitions=[
                {"AttributeName": a, "AttributeType": "S"} for a in ("pk", "a", "b")
            ],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            ProvisionedThroughput={"ReadCapacityUnits": 10, "WriteCapacityUnits": 10},
            GlobalSecondaryIndexes=[
                {
                    "IndexName": f"by_{a}",
                    "KeySchema": [{"AttributeName": a, "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                    "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
                }
                for a in ("a", "b")
            ],
            Tags=[{"Key": "autoscaling_manager_enabled", "Value": "true"}],
        )
        c.cloudwatch.put_metric_data(
            Namespace="AWS/DynamoDB",
            MetricData=[
                {
                    "MetricName": "ConsumedReadCapacityUnits",
                    "Dimensions": [{"Name": "TableName", "Value": name}],
                    "Timestamp": now - timedelta(minutes=4),
                    "Value": 300.0,
                }
            ],
        )
        names.append(name)
    return names


def seed_approach(c: Clients, names: list[str], now: datetime) -> None:
    """The 2019 article's loop: everything per table, one GetMetricStatistics per metric."""
    start, end = now - timedelta(minutes=5), now
    for name in names:
        c.autoscaling.describe_scaling_policies(
            ServiceNamespace="dynamodb", ResourceId=f"table/{name}"
        )
        table = c.dynamodb.describe_table(TableName=name)["Table"]
        scopes = [[{"Name": "TableName", "Value": name}]] + [
            [
                {"Name": "TableName", "Value": name},
                {"Name": "GlobalSecondaryIndexName", "Value": g["IndexName"]},
            ]
            for g in table.get("GlobalSecondaryIndexes", [])
        ]
        for dims in scopes:
            for metric in METRICS:
                c.cloudwatch.get_metric_statistics(
                    Namespace="AWS/DynamoDB",
                    MetricName=metric,
                    Dimensions=dims,
                    StartTime=start,
                    EndTime=end,
                    Period=60,
                    Statistics=["Sum"],
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=1000)
    args = parser.parse_args()
    with moto_server() as endpoint:
        setup = make(endpoint)
        now = datetime.now(UTC).replace(second=0, microsecond=0)
        t0 = time.perf_counter()
        names = populate(setup, args.tables, now)
        print(f"created {len(names)} tables with 2 GSIs each in {time.perf_counter() - t0:.1f} s")

        ours = make(endpoint)
        ours_calls = counted([ours.dynamodb, ours.autoscaling, ours.cloudwatch, ours.tagging])
        t0 = time.perf_counter()
        summary = run_tick(
            ScalerConfig.from_env({"SCALER_DRY_RUN": "true"}), ours, now, out=io.StringIO()
        )
        ours_s = time.perf_counter() - t0

        seed = make(endpoint)
        seed_calls = counted([seed.dynamodb, seed.autoscaling, seed.cloudwatch, seed.tagging])
        t0 = time.perf_counter()
        seed_approach(seed, names, now)
        seed_s = time.perf_counter() - t0

    print(f"\none tick over {summary['tables']} tables, {summary['dimensions']} dimensions\n")
    ops = sorted(set(ours_calls) | set(seed_calls))
    print(f"{'AWS operation':<28} {'this tick':>10} {'seed approach':>14}")
    for op in ops:
        print(f"{op:<28} {ours_calls[op]:>10} {seed_calls[op]:>14}")
    print(f"{'total calls':<28} {sum(ours_calls.values()):>10} {sum(seed_calls.values()):>14}")
    print(f"{'wall time (s)':<28} {ours_s:>10.1f} {seed_s:>14.1f}")


if __name__ == "__main__":
    main()
