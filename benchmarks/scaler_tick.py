"""One scaler tick over many tagged tables, beside the seed article's approach.

Creates N tables (default 2,500, an account's default table quota) with 2 GSIs each, tagged
for discovery, in a local moto server on 127.0.0.1, writes a minute of traffic for each,
then measures in the same run:

- this project's tick (``run_tick``): tag discovery, scalable targets listed once, one
  DescribeTable per table in a pool of 16 threads, GetMetricData batched 500 queries a call,
  its state read from (and written to) a state store table in the same server;
- the same tick with one thread (DescribeTable calls one after another);
- the 2019 article's approach: per table, DescribeScalingPolicies, DescribeTable, and one
  GetMetricStatistics per metric (4) of the table and of each GSI.

It prints the AWS calls by operation and the wall time of each. moto answers from this
machine in about a millisecond, where AWS takes some 10 to 30; ``--latency-ms`` adds that
round trip to every call of the three, which is what the thread pool overlaps. Usage:
    .venv/bin/python -m benchmarks.scaler_tick [--tables 2500] [--latency-ms 20]
"""

from __future__ import annotations

import argparse
import io
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import boto3

from ddb_capacity_runtime.aws.clients import Clients
from ddb_capacity_runtime.aws.store import HoldStore
from ddb_capacity_runtime.core.settings import ScalerConfig
from ddb_capacity_runtime.scaler.tick import run_tick
from ddb_capacity_tools.local_aws import create_store_table, moto_server

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch.type_defs import DimensionTypeDef

#: The scaler's state store, made in the same moto server (untagged: the tick manages only
#: the tagged tables).
STORE = "bench-state-store"
METRICS = (
    "ConsumedReadCapacityUnits",
    "ConsumedWriteCapacityUnits",
    "ReadThrottleEvents",
    "WriteThrottleEvents",
)


def counted(clients: list[Any], latency_s: float = 0.0) -> Counter[str]:
    """Count each client's calls by operation; each call also waits ``latency_s``."""
    calls: Counter[str] = Counter()

    def hook(event_name: str, **_: Any) -> None:
        calls.update([event_name.split(".")[-1]])
        if latency_s:
            time.sleep(latency_s)

    for client in clients:
        client.meta.events.register("before-call.*.*", hook)
    return calls


def make(endpoint: str) -> Clients:
    session = boto3.Session(
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",  # noqa: S106 (moto takes any key)
    )
    return Clients(
        session.client("dynamodb", endpoint_url=endpoint),
        session.client("application-autoscaling", endpoint_url=endpoint),
        session.client("cloudwatch", endpoint_url=endpoint),
        session.client("resourcegroupstaggingapi", endpoint_url=endpoint),
    )


def populate(c: Clients, n: int, now: datetime, traffic_every: int = 1) -> list[str]:
    """N tagged tables with 2 GSIs each; every ``traffic_every``-th has a minute of traffic
    (moto's GetMetricData reads every datapoint for every query: fewer keep it fast)."""
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
        if i % traffic_every:
            names.append(name)
            continue
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
        scopes: list[list[DimensionTypeDef]] = [[{"Name": "TableName", "Value": name}]]
        scopes += [
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
    parser.add_argument("--tables", type=int, default=2500)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    args = parser.parse_args()
    lat = args.latency_ms / 1000
    with moto_server() as endpoint:
        setup = make(endpoint)
        now = datetime.now(UTC).replace(second=0, microsecond=0)
        t0 = time.perf_counter()
        names = populate(setup, args.tables, now)
        create_store_table(setup.dynamodb, STORE)
        print(f"created {len(names)} tables with 2 GSIs each in {time.perf_counter() - t0:.1f} s")

        config = ScalerConfig.from_env(
            {"SCALER_TAG_KEY": "autoscaling_manager_enabled", "SCALER_DRY_RUN": "true"}
        )
        ours = make(endpoint)
        ours_calls = counted([ours.dynamodb, ours.autoscaling, ours.cloudwatch, ours.tagging], lat)
        t0 = time.perf_counter()
        summary = run_tick(
            config, ours, now, out=io.StringIO(), store=HoldStore(ours.dynamodb, STORE)
        )
        ours_s = time.perf_counter() - t0

        one = make(endpoint)
        one_calls = counted([one.dynamodb, one.autoscaling, one.cloudwatch, one.tagging], lat)
        t0 = time.perf_counter()
        run_tick(
            config, one, now, out=io.StringIO(), threads=1, store=HoldStore(one.dynamodb, STORE)
        )
        one_s = time.perf_counter() - t0

        seed = make(endpoint)
        seed_calls = counted([seed.dynamodb, seed.autoscaling, seed.cloudwatch, seed.tagging], lat)
        t0 = time.perf_counter()
        seed_approach(seed, names, now)
        seed_s = time.perf_counter() - t0

    print(
        f"\none tick over {summary['tables']} tables, {summary['dimensions']} dimensions, "
        f"{args.latency_ms:g} ms added to every call\n"
    )
    ops = sorted(set(ours_calls) | set(one_calls) | set(seed_calls))
    head = ("AWS operation", "tick, 16 threads", "tick, 1 thread", "per-table loop")
    print(f"{head[0]:<28} {head[1]:>17} {head[2]:>15} {head[3]:>15}")
    for op in ops:
        print(f"{op:<28} {ours_calls[op]:>17} {one_calls[op]:>15} {seed_calls[op]:>15}")
    totals = (sum(c.values()) for c in (ours_calls, one_calls, seed_calls))
    print(f"{'total calls':<28} {next(totals):>17} {next(totals):>15} {next(totals):>15}")
    print(f"{'wall time on moto (s)':<28} {ours_s:>17.1f} {one_s:>15.1f} {seed_s:>15.1f}")


if __name__ == "__main__":
    main()
