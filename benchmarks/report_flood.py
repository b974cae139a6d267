"""What the client hook's reports cost a program that reads many tables, measured in one run.

A program reads 1,000 tables in turn, as fast as it can, for ``--seconds`` each way, from
a local HTTP server that answers DynamoDB's GetItem (1, 10 or 100 units a read, so every
table's report is due each round) and Lambda's asynchronous ``Invoke`` (202):

- **without the hook**;
- **batched**: the hook as it ships, its reports in batches (`core.report_batch`), at most
  `MAX_BATCHES_PER_ROUND` invocations a round;
- **one report an invocation**: the same hook with batches of one report and no bound on a
  round, how reports travelled before batches.

Printed: each way's median and 90th percentile of a call, and the invocations and reports
sent a second. Goal: batched invocations at most 4 a second; calls no slower than without
the hook by more than the one-report way costs.

``--quick`` (for the test suite): 2 seconds each.

Usage:
    .venv/bin/python -m benchmarks.report_flood [--seconds 10] [--quick]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
from botocore.config import Config

from ddb_capacity_runtime.core import report_batch
from ddb_capacity_runtime.fast_path import hook
from ddb_capacity_runtime.fast_path.hook import watch

TABLES = 1_000
REGION = "us-east-1"


def _session() -> boto3.Session:
    """A session of the local servers' keys (any keys do)."""
    return boto3.Session(
        aws_access_key_id="bench",
        aws_secret_access_key="bench",  # noqa: S106 (local)
        region_name=REGION,
    )


def _answer_dynamodb(handler: BaseHTTPRequestHandler, rng: random.Random) -> None:
    """A GetItem's answer: 1, 10 or 100 units consumed (each table's rate moves enough for
    its report to be due each round)."""
    table = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))["TableName"]
    units = float(rng.choice((1, 10, 100)))
    data = json.dumps({"ConsumedCapacity": {"TableName": table, "CapacityUnits": units}})
    handler.send_response(200)
    handler.send_header("Content-Type", "application/x-amz-json-1.0")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data.encode())


def _take_invocation(handler: BaseHTTPRequestHandler, received: list[int]) -> None:
    """An asynchronous Invoke, answered 202; the number of reports it carried is kept."""
    body = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))
    received.append(len(body.get(report_batch.BATCH_KEY, [body])))
    handler.send_response(202)
    handler.send_header("Content-Length", "2")
    handler.end_headers()
    handler.wfile.write(b"{}")


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that closes its kept-alive connection at the end


@contextmanager
def _local_aws() -> Iterator[tuple[str, list[int]]]:
    """One local HTTP server on 127.0.0.1 for DynamoDB's GetItem and Lambda's Invoke (real
    sockets: the program waits on them as on AWS); yields its URL and the number of reports
    in each invocation received."""
    received: list[int] = []
    rng = random.Random(7)  # noqa: S311 (a workload, not a secret)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def do_POST(self) -> None:  # noqa: N802 (the http.server API)
            if self.path.startswith("/2015-03-31/functions/"):
                _take_invocation(self, received)
            else:
                _answer_dynamodb(self, rng)

        def log_message(self, *_: Any) -> None:
            pass

    server = _Quiet(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


def _run(seconds: float, hooked: bool, url: str) -> list[float]:
    """Each call's time in ms over ``seconds`` of reading every table in turn."""
    client = _session().client(
        "dynamodb",
        endpoint_url=url,
        config=Config(retries={"mode": "standard", "total_max_attempts": 1}),
    )
    watcher = None
    if hooked:
        # one attempt, as the reads': a send still under way when the server closes fails
        # at once instead of retrying after the run
        lambda_client = _session().client(
            "lambda",
            endpoint_url=url,
            config=Config(retries={"mode": "standard", "total_max_attempts": 1}),
        )
        watcher = watch(
            client,
            send=lambda p: lambda_client.invoke(
                FunctionName="capacity-signals", InvocationType="Event", Payload=json.dumps(p)
            ),
            interval=1,
        )
    times: list[float] = []
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        t0 = time.perf_counter()
        client.get_item(TableName=f"t{i % TABLES}", Key={"pk": {"S": "a"}})
        times.append((time.perf_counter() - t0) * 1e3)
        i += 1
    if watcher is not None:
        failed = watcher.failed_sends  # during the run; stop(timeout=0) loses the rest
        watcher.stop(timeout=0)
        if failed:
            raise SystemExit(f"{failed} reports not sent")
    return times


def _one_report_each() -> tuple[int, int]:
    """Batches of one report and no bound on a round; returns the settings to put back."""
    saved = (report_batch.MAX_BATCH_REPORTS, hook.MAX_REPORTS_PER_ROUND)
    report_batch.MAX_BATCH_REPORTS = 1
    hook.MAX_REPORTS_PER_ROUND = TABLES
    return saved


def main(argv: list[str] | None = None) -> int:
    """Run and print the comparison; 0 when the batched rate meets its goal."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    seconds = 2.0 if args.quick else args.seconds
    rows = []
    for way in ("without the hook", "batched", "one report an invocation"):
        saved = _one_report_each() if way.startswith("one") else None
        with _local_aws() as (url, received):
            times = _run(seconds, way != "without the hook", url)
        if saved is not None:
            report_batch.MAX_BATCH_REPORTS, hook.MAX_REPORTS_PER_ROUND = saved
        cut = statistics.quantiles(times, n=10)
        rows.append(
            (
                way,
                statistics.median(times),
                cut[-1],
                len(received) / seconds,
                sum(received) / seconds,
            )
        )
    print(f"{TABLES:,} tables read in turn, {seconds:g} s each way")
    print(f"{'way':<26} {'median ms':>9} {'p90 ms':>7} {'invocations/s':>14} {'reports/s':>10}")
    for way, median, p90, calls, reports in rows:
        print(f"{way:<26} {median:>9.3f} {p90:>7.3f} {calls:>14.1f} {reports:>10.1f}")
    batched = rows[1]
    bound = report_batch.MAX_BATCHES_PER_ROUND + 1
    print(
        f"batched invocations a second: {batched[3]:.1f} (goal: at most {bound}, the rounds' "
        f"bound and one last batch)"
    )
    return 0 if batched[3] <= bound else 1


if __name__ == "__main__":
    raise SystemExit(main())
