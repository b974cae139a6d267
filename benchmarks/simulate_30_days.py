"""Every simulator policy over a 30-day trace at 1-minute resolution (43,200 minutes, read
and write): wall time and peak Python memory of each, measured in one run. Each policy runs
twice: once timed, once under tracemalloc (which slows Python down) for its peak memory.

Usage:
    .venv/bin/python -m benchmarks.simulate_30_days [--days 30]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

from ddb_capacity_tools.simulator import ModelParams, Prices, parse, run_policy
from ddb_capacity_tools.simulator.scenarios import diurnal

POLICIES = (
    "fixed:25000",
    "stock:70",
    "stock:60",
    "scheduled",
    "throttle-aware",
    "throttle-aware+stock:70",
    "autopilot",
    "autopilot+stock:70",
    "on-demand",
    "oracle",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30)
    args = parser.parse_args()
    started = time.perf_counter()
    trace = diurnal(seed=1, days=args.days)
    built = time.perf_counter() - started
    print(
        f"trace: diurnal, {args.days} days, {trace.minutes:,} minutes x "
        f"{len(trace.demand)} dimensions (built in {built:.2f} s)\n"
    )
    print(f"{'policy':<26}{'seconds':>9}{'peak MiB':>10}{'throttled min':>15}{'cost $':>10}")
    total = 0.0
    params, prices = ModelParams().validate(), Prices()
    for name in POLICIES:
        t0 = time.perf_counter()
        results = run_policy(parse(name), trace, params, prices)
        seconds = time.perf_counter() - t0
        tracemalloc.start()
        run_policy(parse(name), trace, params, prices)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        total += seconds
        throttled = sum(r.throttled_minutes for r in results)
        cost = sum(r.cost_usd for r in results)
        print(f"{name:<26}{seconds:>9.2f}{peak / 2**20:>10.1f}{throttled:>15,}{cost:>10,.2f}")
    print(f"\nall {len(POLICIES)} policies: {total:.1f} s")


if __name__ == "__main__":
    main()
