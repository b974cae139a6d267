"""The simulator's speed goals, measured in one run, and every policy on real traffic under
the ``plausible`` ensemble (the README's "Real traffic" table comes from this output).

1. A 30-day trace through the 6 default policies (stock:70, autopilot+stock:70,
   on-demand, oracle, bound, scheduled): one process, then 2. Goal: 3 s.
2. The ensemble: 8 settings x 6 policies (``REAL_POLICIES``) x 12 traces of 14 days, on 2
   processes. Goal:
   3 minutes. The traces: the 7 real traces of ``../shared/traces/`` (read in place, never
   copied; their licence is in the README there), and 14-day diurnal (seeds 1-3) and
   nightly-batch (seeds 1-2) scenarios. Without the shared folder, 7 more diurnal seeds
   take their place, and the real-traffic table is not printed.

Usage:
    .venv/bin/python -m benchmarks.ensemble_traces [--workers 2] [--traces DIR]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ddb_capacity_tools.simulator import ModelParams, Prices, parse, read_csv, simulate
from ddb_capacity_tools.simulator.ensemble import EnsembleResult, run_ensemble, settings_of
from ddb_capacity_tools.simulator.run import DEFAULT_POLICIES
from ddb_capacity_tools.simulator.scenarios import diurnal, nightly_batch
from ddb_capacity_tools.simulator.trace import Trace

SHARED = Path(__file__).resolve().parents[2] / "shared" / "traces"
POLICIES = (*DEFAULT_POLICIES, "scheduled")
REAL_POLICIES = ("stock:70", "stock:60", "throttle-aware+stock:70", "on-demand", "oracle", "bound")


def traces(folder: Path) -> tuple[list[Trace], list[Trace]]:
    real = [read_csv(p) for p in sorted(folder.glob("*.csv"))] if folder.is_dir() else []
    synthetic = [diurnal(seed, days=14) for seed in (1, 2, 3)]
    synthetic += [nightly_batch(seed, days=14) for seed in (1, 2)]
    synthetic += [diurnal(seed, days=14) for seed in range(4, 4 + 7 - len(real))]
    return real, synthetic


def speed(workers: int) -> None:
    trace = diurnal(seed=1, days=30)
    specs = [parse(p) for p in POLICIES]
    print(f"1. 30-day diurnal trace, {len(specs)} policies: {', '.join(POLICIES)}")
    for n in (1, workers):
        started = time.perf_counter()
        simulate(trace, specs, progress=None, workers=n)
        print(
            f"   {n} process(es): {time.perf_counter() - started:6.2f} s   (goal 3 s; "
            f"0.2 took 9-11 s)"
        )


def total(results: list[EnsembleResult], policy: str, measure: str) -> float:
    return float(sum(getattr(r, measure).median for r in results if r.policy == policy))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--traces", type=Path, default=SHARED)
    args = parser.parse_args()
    speed(args.workers)
    real, synthetic = traces(args.traces)
    settings = settings_of("plausible", ModelParams())
    specs = [parse(p) for p in REAL_POLICIES]
    print(
        f"\n2. ensemble plausible: {len(settings)} settings x {len(specs)} policies x "
        f"{len(real) + len(synthetic)} traces of 14 days, {args.workers} processes"
    )
    started = time.perf_counter()
    outcome = {
        t.name: run_ensemble(t, specs, settings, Prices(), workers=args.workers)
        for t in [*real, *synthetic]
    }
    print(f"   {time.perf_counter() - started:6.1f} s   (goal 180 s; 0.2 had no ensemble)")
    if not real:
        print(f"\n{args.traces} not found: no real-traffic table")
        return
    print("\n3. real traffic, ensemble medians (read + write): throttled units, cost $")
    header = "| trace | " + " | ".join(REAL_POLICIES) + " |"
    print(header)
    print("|" + " --- |" * (len(REAL_POLICIES) + 1))
    for t in real:
        results = outcome[t.name]
        floor = total(results, "bound", "cost_usd")
        cells = []
        for p in REAL_POLICIES:
            thr = total(results, p, "throttled_requests")
            cost = total(results, p, "cost_usd")
            ratio = f" ({cost / floor:.2f}x)" if p != "bound" and floor else ""
            cells.append(
                f"{thr / 1e6:,.2f}M, ${cost:,.0f}{ratio}" if thr else f"0, ${cost:,.0f}{ratio}"
            )
        print(f"| {t.name.removesuffix('.csv')} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
