"""NightlyTuning's time a table: one ``tune_run`` over N tables on a local moto server.

Starts a moto server on 127.0.0.1 (a free port; stopped when the run ends), makes the
advisor's report bucket and the scaler's state store in it, and writes a fresh run: the
``runs/latest.json`` pointer and one advised result per table (recommended ``stock:50``,
current ``stock:70``). Each table has four owned dimensions (its read and write, and one
GSI's), all configured at 70, with the allowed targets 50 to 90 in steps of 5 and the
default ``max_step`` of 10, so every dimension moves (70 to 60) and is written to the store.
Then it times one ``tune_run`` (:func:`ddb_capacity_tools.tuning_lambda.tune_run`, what the
Tuner function runs) and prints its counts, the milliseconds a table, and how many tables
the Tuner's 15 minutes would cover at that rate. moto answers from this machine in about a
millisecond, where AWS takes some 10 to 30 a call, so the figure is a lower bound.

Usage:
    .venv/bin/python -m benchmarks.nightly_tuning_time [--tables 200]
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from datetime import UTC, datetime
from typing import Any

from ddb_capacity_tools.fleet_settings import run_id_of
from ddb_capacity_tools.local_aws import client, create_store_table, moto_server
from ddb_capacity_tools.tuning_lambda import tune_run
from ddb_capacity_tools.tuning_rules import Bounds, TuningSettings

BUCKET = "bench-advisor-reports"
STORE = "bench-state-store"
#: The Tuner function's timeout (seconds).
TUNER_TIMEOUT_S = 900


def write_run(s3: Any, run_id: str, tables: list[str]) -> None:
    """The advisor's run as the Tuner reads it: the pointer and one result per table."""
    s3.put_object(
        Bucket=BUCKET, Key="runs/latest.json", Body=json.dumps({"run_id": run_id}).encode()
    )
    for table in tables:
        result = {
            "run_id": run_id,
            "table": table,
            "index": None,
            "status": "advised",
            "recommended": "stock:50",
            "reason": "cheaper at no more refused requests",
            "options": [{"policy": "stock:50", "usd_per_month": 10.0, "refused_per_month": 0}],
            "current": {"policy": "stock:70", "usd_per_month": 14.0, "refused_per_month": 0},
        }
        s3.put_object(
            Bucket=BUCKET,
            Key=f"runs/{run_id}/tables/{table}.json",
            Body=json.dumps(result).encode(),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=200)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)  # one log line per dimension would time the terminal
    tables = [f"bench-{n:05d}" for n in range(args.tables)]
    owned = {
        t: {"read": 70, "write": 70, "indexes": {"byUser": {"read": 70, "write": 70}}}
        for t in tables
    }
    with moto_server() as endpoint:
        s3, dynamodb = client(endpoint, "s3"), client(endpoint, "dynamodb")
        s3.create_bucket(Bucket=BUCKET)
        create_store_table(dynamodb, STORE)
        now = datetime.now(UTC).replace(second=0, microsecond=0)
        write_run(s3, run_id_of(now), tables)
        settings = TuningSettings(BUCKET, STORE, owned, Bounds(tuple(range(50, 91, 5)), 10))
        t0 = time.perf_counter()
        counts = tune_run(s3, dynamodb, settings, now)
        seconds = time.perf_counter() - t0
    per_table = seconds / args.tables
    print(f"counts: {counts}")
    print(
        f"{args.tables} tables of 4 owned dimensions: {seconds:.1f} s, "
        f"{1000 * per_table:.0f} ms a table; the Tuner's {TUNER_TIMEOUT_S // 60} minutes "
        f"cover about {TUNER_TIMEOUT_S / per_table:,.0f} tables at that rate"
    )


if __name__ == "__main__":
    main()
