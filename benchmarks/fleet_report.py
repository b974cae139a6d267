"""The fleet report: ``advise --all-tables`` over many tables, one process vs N, measured
in one run; and what the nightly ``FleetAdvisor`` costs a month at that size.

The tables are synthetic: each table's history is one of the real traces in
``../shared/traces/`` (read in place: their licence forbids copying them) or the diurnal
and nightly-batch scenarios, ``--days`` long (default 14), scaled by a factor from 0.2 to
5 and rotated by a number of minutes, both drawn per table from a seeded generator; its
current settings are stock:70, fixed capacity at its peak demand, or on-demand, in turn.
They go through ``advise``'s own path (:func:`ddb_capacity_tools.advise.advise` with a
history source in place of CloudWatch), first in one process, then in ``--processes``
processes, and the two results must be identical; then the fleet report is built from them.

The per-table setting is the fast one (candidates: the stock targets and on-demand; one
model setting of the ``plausible`` ensemble): a full 1,000-table run at the nightly
advisor's setting would take hours on a workstation. The advisor's own seconds per table
(every default candidate, all 8 settings) are measured on ``--lambda-sample`` tables
(default 1) and priced by :func:`ddb_capacity_tools.fleet_cost.monthly_cost` at the
worker's memory, for ``--tables`` and for 1,000 / 10,000 / 50,000 tables.

Goal (printed with PASS/MISS and the measured ratio; a miss is a finding, not a reason to
move the goal): the parallel run takes at most 1/N of the sequential one. Beside it, the
CPU seconds and the cores each run had (a shared machine gives each run its own share).

Measured on 2 shared cores: 1,000 tables, 900 s in one process (0.94 cores had) and 510 s
in two (1.36 cores had): MISS at 0.567; 150 tables, 313 s (0.42 cores) and 138 s (1.02
cores): PASS at 0.442; with the machine to itself, 40 tables, 25.4 s (1.00 cores) and
13.7 s (1.96 cores): MISS at 0.541 (the pool used 6 % more CPU). The advisor's setting took
80.3 CPU s a table in the latest run of this code (82.8 s before the simulator's last
speed-ups; 61 and 63.5 s in earlier ones, since when tune's default candidates have grown).
The default (40 tables) takes about 3 minutes; 1,000 tables about 25.

Usage:
    PYTHONPATH=.:lambda_src .venv/bin/python -m benchmarks.fleet_report [--tables 40]
        [--processes 2] [--days 14] [--lambda-sample 1] [--traces DIR]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import resource
import time
from dataclasses import replace
from functools import cache
from pathlib import Path

from benchmarks.right_bill import SHARED
from ddb_capacity_tools import fleet
from ddb_capacity_tools.advise import Advice, Clients, Failure, Setup, advise
from ddb_capacity_tools.fleet_cost import monthly_cost
from ddb_capacity_tools.fleet_current import Current
from ddb_capacity_tools.simulator import ModelParams, read_csv
from ddb_capacity_tools.simulator.ensemble import settings_of
from ddb_capacity_tools.simulator.scenarios import diurnal, nightly_batch
from ddb_capacity_tools.simulator.trace import Trace, cut

#: The nightly advisor's worker memory (MB): 1,769 MB is one full vCPU.
WORKER_MB = 1769
SIZES = (1_000, 10_000, 50_000)
#: The options a benchmark process builds its traces from (set before any pool starts).
OPTIONS: dict[str, object] = {"days": 14, "folder": SHARED}


@cache
def bases() -> list[Trace]:
    """The traces the tables are made from (read once per process)."""
    days = int(OPTIONS["days"])  # type: ignore[call-overload]
    folder = Path(str(OPTIONS["folder"]))
    out = [diurnal(1, days), nightly_batch(1, days)]
    if folder.is_dir():
        out += [cut(read_csv(p), days * 1440) for p in sorted(folder.glob("*.csv"))]
    return out


def synthetic(table: str, index: str | None, setup: Setup) -> tuple[Trace, Current]:
    """Table ``bench-N``'s history and current settings, drawn from N."""
    n = int(table.rsplit("-", 1)[1])
    rng = random.Random(n)  # noqa: S311 (a seeded benchmark, not a secret)
    base = bases()[n % len(bases())]
    factor, shift = rng.uniform(0.2, 5.0), rng.randrange(base.minutes)
    demand = {
        k: [round(v * factor, 3) for v in series[shift:] + series[:shift]]
        for k, series in base.demand.items()
    }
    trace = replace(base, name=table, demand=demand, key_range=None)
    kinds = ("stock:70", "fixed", "on-demand")
    kind = kinds[n % 3]
    policies = {
        k: f"fixed:{max(1, math.ceil(max(v)))}" if kind == "fixed" else kind
        for k, v in demand.items()
    }
    return trace, Current(policies)


def synthetic_clients() -> Clients:
    return Clients(None, None, None, synthetic)


def one_setting(trace: Trace) -> list[ModelParams]:
    return settings_of("plausible", ModelParams(), trace)[:1]


def every_setting(trace: Trace) -> list[ModelParams]:
    return settings_of("plausible", ModelParams(), trace)


def timed(
    tables: list[tuple[str, None]], setup: Setup, processes: int
) -> tuple[float, float, list[Advice | Failure]]:
    """The wall-clock and CPU seconds of one ``advise`` run and its results; the machine's
    load (runnable processes, 1-minute average) and the cores the run had (CPU seconds /
    wall-clock seconds) are printed, since other work on the cores takes from its share."""
    print(f"  load average before {processes} process(es): {os.getloadavg()[0]:.1f}")
    cpu = _cpu_seconds()
    began = time.perf_counter()
    results = advise(synthetic_clients, tables, setup, None, processes)
    wall = time.perf_counter() - began
    used = _cpu_seconds() - cpu
    print(
        f"  {processes} process(es): {used:.1f} CPU s in {wall:.1f} s: {used / wall:.2f} cores had"
    )
    return wall, used, results


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its finished children (the pool's processes)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=40)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--days", type=int, default=14)
    parser.add_argument("--lambda-sample", type=int, default=1)
    parser.add_argument("--traces", type=Path, default=SHARED)
    args = parser.parse_args()
    for option, value, low, high in (
        ("--tables", args.tables, 1, 100_000),
        ("--processes", args.processes, 2, 64),
        ("--days", args.days, 1, 14),
        ("--lambda-sample", args.lambda_sample, 1, 100),
    ):
        if not low <= value <= high:
            parser.error(f"{option}: got {value}; expected a whole number from {low} to {high:,}")
    OPTIONS.update(days=args.days, folder=args.traces)
    tables = [(f"bench-{n:05d}", None) for n in range(args.tables)]
    fast = Setup(args.days, None, one_setting, ModelParams(), ["on-demand"], workers=1)
    fast = replace(fast, current=True)
    print(
        f"fleet report: {args.tables} tables, {args.days} day(s) each ({len(bases())} base "
        f"traces, scaled and rotated); candidates: stock targets + on-demand, 1 model setting"
    )
    sequential, _, one = timed(tables, fast, 1)
    parallel, _, many = timed(tables, fast, args.processes)
    same = [r.as_json() for r in one] == [r.as_json() for r in many]
    ratio = parallel / sequential
    goal = 1 / args.processes
    print(f"sequential: {sequential:.1f} s ({sequential / args.tables:.2f} s a table)")
    print(f"{args.processes} processes: {parallel:.1f} s; results identical: {same}")
    print(
        f"goal parallel <= 1/{args.processes} of sequential: "
        f"{'PASS' if ratio <= goal else 'MISS'} (ratio {ratio:.3f}, goal {goal:.3f})"
    )
    totals = fleet.build(many, {"tables": args.tables}).totals()
    print(
        f"report: {totals['advised']} advised, saved ${totals['usd_saved_per_month']:,.2f} "
        f"a month, {totals['refusals_avoided_per_month']:,.0f} refused units a month avoided"
    )
    _cost(args)


def _cost(args: argparse.Namespace) -> None:
    """The advisor's seconds per table at its own setting, and its cost a month. A worker
    has a whole vCPU (1,769 MB), so its time is the CPU seconds measured here, not the
    wall-clock seconds of a shared machine."""
    full = Setup(args.days, None, every_setting, ModelParams(), workers=1, current=True)
    sample = [(f"bench-{n:05d}", None) for n in range(args.lambda_sample)]
    _, cpu, _ = timed(sample, full, 1)
    per_table = cpu / max(1, len(sample))
    print(
        f"nightly advisor's setting (every default candidate, 8 model settings): "
        f"{per_table:.1f} CPU s a table here (on {len(sample)} table(s))"
    )
    for size in sorted({args.tables, *SIZES}):
        c = monthly_cost(size, per_table, WORKER_MB)
        print(
            f"  {size:>6,} tables: ${c.total:,.2f} a month (SQS ${c.sqs:,.2f}, Lambda "
            f"${c.lambda_requests + c.lambda_compute:,.2f}, S3 ${c.s3:,.2f}) at {WORKER_MB} MB"
        )


if __name__ == "__main__":
    main()
