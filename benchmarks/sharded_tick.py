"""A sharded tick over many tables: the scheduled invocation's batches, run as the batch
function runs them, against a local moto server with a round trip added to every call.

Creates N tables (default 10,000) with 2 GSIs each, tagged for discovery, in a moto server
on 127.0.0.1, one in 100 with a minute of traffic (moto's GetMetricData reads every
datapoint it holds for every query, which AWS does not: with one each, moto alone would
take hours), a state store table and the batch queue (SQS, in the same server). Then, in one run:

- the scheduled invocation (``coordinate``): tag discovery, then the tables in batches of
  ``tables_per_batch`` sent to the queue;
- the batches taken off the queue and run in this process, ``--concurrency`` at a time
  (standing in for the SQS event source's maximum concurrency), each with its own clients
  and the batch function's own code (``run_batch``), exactly as in Lambda.

It prints each batch's duration against the 2-minute tick interval (the goal: every batch
done within it), when the last one was done, the AWS calls by operation, moto's rate, the
tick's per-minute GetMetricData calls against the fewest possible (its metric queries /
500; the autopilot's hourly history reads and the delivery witness's reads are counted
apart), and what the engine costs a month at 1,000, 10,000 and 50,000 tables, from the
batch durations measured here.

Each batch's clock starts at the tick's time when the batch starts, as if the engine had
started every batch at the tick: a batch this machine starts late is still run and
measured, against its deadline, instead of being refused as late; the report says when the
last one was actually done.

moto answers from this machine, one process for every call on 2 cores, where AWS's
services answer each Lambda in parallel: the time until the last batch is done is this
machine's, the batch durations are closer to Lambda's. ``--latency-ms`` (default 20) adds
AWS's round trip to every call. The tick runs in dry-run (it decides, changes nothing), so
every batch does the same work. Usage:
    .venv/bin/python -m benchmarks.sharded_tick [--tables 10000] [--concurrency 10]
"""

from __future__ import annotations

import argparse
import io
import math
import statistics
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

from benchmarks.scaler_tick import STORE, counted, make, populate
from ddb_capacity_runtime.aws.clients import Clients
from ddb_capacity_runtime.aws.store import HoldStore
from ddb_capacity_runtime.core.settings import ScalerConfig
from ddb_capacity_runtime.scaler.handler import coordinate, run_batch
from ddb_capacity_tools.local_aws import client, create_store_table, moto_server

#: A 2-minute tick, 30 days a month.
TICKS_A_MONTH = 30 * 24 * 30
#: Public prices (us-east-1, arm64): Lambda per GB-second and per request, SQS per request,
#: Step Functions Standard per state transition, Express per request and per GB-second.
LAMBDA_GB_S, LAMBDA_REQUEST = 0.0000133334, 0.20 / 1e6
SQS_REQUEST = 0.40 / 1e6
SFN_TRANSITION, SFN_EXPRESS_REQUEST, SFN_EXPRESS_GB_S = 0.025 / 1000, 1.0 / 1e6, 0.00001667
MEMORY_GB = 256 / 1024
#: SQS requests a batch costs: its share of SendMessageBatch (10 a call), the receive and
#: the delete of the event source.
SQS_PER_BATCH = 0.1 + 1 + 1
#: The state store's reads a table of a batch costs: one strongly consistent Query of an
#: item or none (1 read request unit), on-demand at $0.125 a million.
STORE_READ = 0.125 / 1e6


def monthly_cost(tables: int, per_batch: int, batch_seconds: float) -> dict[str, float]:
    """Dollars a month of a sharded tick over ``tables`` (2-minute tick), each batch taking
    ``batch_seconds``: on SQS to Lambda, and, for comparison, on Step Functions' Distributed
    Map (a Standard parent, one Express child a batch waiting on the same Lambda)."""
    batches = math.ceil(tables / per_batch)
    lambda_ = TICKS_A_MONTH * batches * (batch_seconds * MEMORY_GB * LAMBDA_GB_S + LAMBDA_REQUEST)
    sqs = TICKS_A_MONTH * batches * SQS_PER_BATCH * SQS_REQUEST
    child = SFN_EXPRESS_REQUEST + batch_seconds * (64 / 1024) * SFN_EXPRESS_GB_S
    sfn = TICKS_A_MONTH * (6 * SFN_TRANSITION + batches * child)
    store = TICKS_A_MONTH * tables * STORE_READ
    return {"lambda": lambda_, "sqs": sqs, "store": store, "step_functions": sfn}


def taken(sqs: Any, url: str) -> list[dict[str, Any]]:
    """Every message on the queue, as the event source hands them over."""
    out = []
    while page := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
        out += [{"body": m["Body"]} for m in page]
    return out


def _minutes(params: dict[str, Any]) -> int:
    """1 for a GetMetricData call of the tick's per-minute reads (consumed and throttles)."""
    queries = params.get("MetricDataQueries", [])
    return int(all(q["MetricStat"]["Period"] == 60 and q["Id"][0] in "ct" for q in queries))


def _witness(params: dict[str, Any]) -> int:
    """1 for a GetMetricData call of the delivery witness (provisioned capacity), read for
    the dimensions a tick is about to lower on minutes without a datapoint."""
    queries = params.get("MetricDataQueries", [])
    return int(
        all(q["MetricStat"]["Metric"]["MetricName"].startswith("Provisioned") for q in queries)
    )


def run_batches(
    endpoint: str,
    config: ScalerConfig,
    records: list[dict[str, Any]],
    args: Any,
    t0: float,
    tick: datetime,
) -> tuple[list[tuple[float, float, str | None]], Counter[str]]:
    """Each record's batch, ``args.concurrency`` at a time, each with its own clients and
    a clock that starts at ``tick`` when the batch starts; returns (start, end, failure)
    per batch, seconds after ``t0``, and the calls made."""
    calls: Counter[str] = Counter()
    lock = threading.Lock()
    per_batch: list[int] = []  # GetMetricData calls of each batch

    def one(record: dict[str, Any]) -> tuple[float, float, str | None]:
        c = make(endpoint)
        mine = counted([c.dynamodb, c.autoscaling, c.cloudwatch, c.tagging], args.latency_ms / 1000)
        c.cloudwatch.meta.events.register(
            "before-parameter-build.monitoring.GetMetricData",
            lambda params, seen=mine, **_: seen.update(["minute reads"] * _minutes(params)),
        )
        c.cloudwatch.meta.events.register(
            "before-parameter-build.monitoring.GetMetricData",
            lambda params, seen=mine, **_: seen.update(["witness reads"] * _witness(params)),
        )
        begun = time.perf_counter()
        start = begun - t0
        failure = run_batch(
            config,
            c,
            record,
            store=HoldStore(c.dynamodb, STORE),
            out=io.StringIO(),
            now=lambda: tick + timedelta(seconds=time.perf_counter() - begun),
        )
        with lock:
            calls.update(mine)
            per_batch.append(mine["minute reads"])
        return start, time.perf_counter() - t0, failure

    with ThreadPoolExecutor(args.concurrency) as pool:
        timings = list(pool.map(one, records))
    calls["GetMetricData per batch"] = max(per_batch, default=0)
    return timings, calls


def report(
    args: Any,
    coordinator_s: float,
    timings: list[tuple[float, float, str | None]],
    calls: Counter[str],
    dimensions: int,
) -> None:
    interval = 120.0
    durations = [end - start for start, end, _ in timings]
    last = max(end for _, end, _ in timings)
    failed = [f for *_, f in timings if f]
    print(
        f"\nsharded tick over {args.tables:,} tables ({dimensions:,} dimensions), "
        f"{len(timings)} batches of {args.tables_per_batch}, {args.concurrency} at a time, "
        f"{args.latency_ms:g} ms added to every call"
    )
    print(f"scheduled invocation (discovery, batches sent): {coordinator_s:.1f} s")
    within = sum(d <= interval for d in durations)
    print(
        f"each batch done within the 2-minute tick: "
        f"{'PASS' if within == len(durations) and not failed else 'MISS'} ({within} of "
        f"{len(durations)}; median {statistics.median(durations):.1f} s, longest "
        f"{max(durations):.1f} s; the function's timeout is 180 s); batches failed: "
        f"{len(failed)}"
    )
    for reason in sorted({f.split(": ", 1)[-1][:120] for f in failed})[:5]:
        print(f"  a failed batch: {reason}")
    total = sum(v for k, v in calls.items() if k[0].isupper())
    print(
        f"all {len(timings)} batches done {last:.1f} s after the tick began "
        f"({'within' if last <= interval else 'past'} the {interval:.0f} s interval), at "
        f"{total / last:.0f} AWS calls a second from this machine's one moto process"
    )
    fewest = math.ceil(dimensions * 2 / 500)
    made, most = calls.pop("minute reads"), calls.pop("GetMetricData per batch")
    witness = calls.pop("witness reads", 0)
    per_batch = math.ceil(args.tables_per_batch * 6 * 2 / 500)
    verdict = "PASS" if made <= fewest and most <= per_batch else "MISS"
    print(
        f"GetMetricData calls of the tick's minutes: {made} in all (the fewest: "
        f"{dimensions * 2:,} queries / 500 = {fewest}), at most {most} a batch (its "
        f"{args.tables_per_batch * 12:,} queries / 500 = {per_batch}): {verdict}; the "
        f"autopilot's hourly history reads: {calls['GetMetricData'] - made - witness}; the "
        f"delivery witness's reads (decreases on minutes without a datapoint): {witness}"
    )
    print("\nAWS calls of the batches by operation:")
    for op, n in sorted(calls.items()):
        print(f"  {op:<28} {n:>8,}")
    seconds = statistics.mean(durations)
    print(f"\ncost a month (2-minute tick, 256 MB arm64, {seconds:.1f} s a batch as measured):")
    print(
        f"  {'tables':>8} {'batches':>8} {'Lambda':>9} {'SQS':>7} {'store':>7} {'= total':>9} "
        f"{'Step Functions instead of SQS':>31}"
    )
    for n in (1_000, 10_000, 50_000):
        c = monthly_cost(n, args.tables_per_batch, seconds)
        print(
            f"  {n:>8,} {math.ceil(n / args.tables_per_batch):>8} {c['lambda']:>9.2f} "
            f"{c['sqs']:>7.2f} {c['store']:>7.2f} {c['lambda'] + c['sqs'] + c['store']:>9.2f} "
            f"{c['step_functions']:>31.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=10_000)
    parser.add_argument("--tables-per-batch", type=int, default=125)
    parser.add_argument("--shard-above", type=int, default=1_000)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    args = parser.parse_args()
    with moto_server() as endpoint:
        setup = make(endpoint)
        t0 = time.perf_counter()
        minute = datetime.now(UTC).replace(second=0, microsecond=0)
        populate(setup, args.tables, minute, traffic_every=100)
        create_store_table(setup.dynamodb, STORE)
        sqs = client(endpoint, "sqs")
        url = sqs.create_queue(QueueName="batches")["QueueUrl"]
        print(
            f"created {args.tables:,} tables with 2 GSIs each in {time.perf_counter() - t0:.0f} s"
        )
        config = ScalerConfig.from_env(
            {
                "SCALER_TAG_KEY": "autoscaling_manager_enabled",
                "SCALER_DRY_RUN": "true",
                "SCALER_TABLES_PER_BATCH": str(args.tables_per_batch),
                "SCALER_SHARD_ABOVE_TABLES": str(args.shard_above),
            }
        )
        c = make(endpoint)
        clients = Clients(c.dynamodb, c.autoscaling, c.cloudwatch, c.tagging, sqs)
        counted([c.tagging, sqs], args.latency_ms / 1000)
        t0 = time.perf_counter()
        now = datetime.now(UTC)
        summary = coordinate(
            config,
            clients,
            now,
            store=HoldStore(c.dynamodb, STORE),
            queue_url=url,
            out=io.StringIO(),
        )
        coordinator_s = time.perf_counter() - t0
        records = taken(sqs, url)
        assert len(records) == summary.batches, (len(records), summary)
        timings, calls = run_batches(endpoint, config, records, args, t0, now)
    report(args, coordinator_s, timings, calls, args.tables * 6)


if __name__ == "__main__":
    main()
