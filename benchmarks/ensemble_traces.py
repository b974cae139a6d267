"""The simulator's speed goals, measured in one run, and every policy on real traffic under
the ``plausible`` ensemble (the "Real traffic" table of docs/guides/simulator.md comes from
this output).

1. A 30-day trace through the 6 default policies (stock:70, autopilot+stock:70,
   on-demand, oracle, bound, scheduled): one process, then 2. Goal: 3 s.
2. The ensemble: 8 settings x 6 policies (``REAL_POLICIES``) x 12 traces of 14 days, on 2
   processes. Goal:
   3 minutes. The traces: the 7 real traces of ``../shared/traces/`` (read in place, never
   copied; their licence is in the README there), and 14-day diurnal (seeds 1-3) and
   nightly-batch (seeds 1-2) scenarios. Without the shared folder, 7 more diurnal seeds
   take their place, and the real-traffic table is not printed.
3. The real-traffic table: per real trace, the 6 policies' medians and the cheapest stock
   target (30 to 90 %, run under the same settings after the timed ensemble) that refuses
   no more than ``throttle-aware+stock:70``, or, when none does, the one that refuses
   least; then every stock target.
4. Per real trace, ``throttle-aware+stock:70`` against stock:70, and the stock targets and
   on-demand that refuse no more than it and cost less.

Usage:
    .venv/bin/python -m benchmarks.ensemble_traces [--workers 2] [--traces DIR]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from benchmarks.stock_rivals import beaten_by, cheapest_within, print_table
from ddb_capacity_tools.simulator import ModelParams, Prices, parse, read_csv, simulate
from ddb_capacity_tools.simulator.candidates import STOCK
from ddb_capacity_tools.simulator.ensemble import EnsembleResult, run_ensemble, settings_of
from ddb_capacity_tools.simulator.run import DEFAULT_POLICIES
from ddb_capacity_tools.simulator.scenarios import diurnal, nightly_batch
from ddb_capacity_tools.simulator.trace import Trace

SHARED = Path(__file__).resolve().parents[2] / "shared" / "traces"
POLICIES = (*DEFAULT_POLICIES, "scheduled")
REAL_POLICIES = ("stock:70", "stock:60", "throttle-aware+stock:70", "on-demand", "oracle", "bound")
#: the library's policy the stock targets are held against
LIBRARY = "throttle-aware+stock:70"


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


def cell(thr: float, cost: float, floor: float) -> str:
    """Units refused, cost and cost x the bound's."""
    ratio = f" ({cost / floor:.2f}x)" if floor else ""
    return f"{thr / 1e6:,.2f}M, ${cost:,.0f}{ratio}" if thr else f"0, ${cost:,.0f}{ratio}"


def best_stock(results: list[EnsembleResult], ceiling: float) -> tuple[str, bool]:
    """The cheapest stock target refusing no more than ``ceiling`` units (True), or, when
    none does, the one that refuses least (False)."""
    return cheapest_within({p: figures(results, p) for p in STOCK}, ceiling, STOCK)


def figures(results: list[EnsembleResult], policy: str) -> tuple[float, float]:
    """``policy``'s units refused and dollars, read + write medians."""
    return total(results, policy, "throttled_requests"), total(results, policy, "cost_usd")


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
    more = [p for p in STOCK if p not in REAL_POLICIES]
    extra = [parse(p) for p in more]
    started = time.perf_counter()
    for t in real:
        outcome[t.name] += run_ensemble(t, extra, settings, Prices(), workers=args.workers)
    print(
        f"   then {', '.join(more)} on the {len(real)} real traces: "
        f"{time.perf_counter() - started:.1f} s (not timed against the goal)"
    )
    columns = (*REAL_POLICIES, "cheapest stock target refusing no more than " + LIBRARY)
    rows, every = [], []
    for t in real:
        results = outcome[t.name]
        floor = total(results, "bound", "cost_usd")
        name = t.name.removesuffix(".csv")
        cells = [cell(*figures(results, p), floor if p != "bound" else 0.0) for p in REAL_POLICIES]
        target, fits = best_stock(results, total(results, LIBRARY, "throttled_requests"))
        chosen = cell(*figures(results, target), floor)
        cells.append(f"{target}: {chosen}" if fits else f"none; fewest: {target}: {chosen}")
        rows.append([name, *cells])
        every.append([name, *(cell(*figures(results, p), floor) for p in STOCK)])
    print("\n3. real traffic, ensemble medians (read + write): throttled units, cost $")
    print_table(("trace", *columns), rows)
    print("\nevery stock target, per real trace: throttled units, cost $ (x the bound's)")
    print_table(("trace", *STOCK), every)
    print(f"\n4. {LIBRARY} per real trace: against stock:70; beaten on both by")
    for t in real:
        results = outcome[t.name]
        thr, cost = figures(results, LIBRARY)
        base_thr, base_cost = figures(results, "stock:70")
        ratio = f"{thr / base_thr:.2f}x" if base_thr else "-"
        others = {p: figures(results, p) for p in (*STOCK, "on-demand")}
        beaten = beaten_by(others, thr, cost, others)
        print(
            f"   {t.name.removesuffix('.csv')}: refused {ratio}, cost {cost / base_cost:.2f}x "
            f"stock:70's; beaten on both by: {', '.join(beaten) or 'none'}"
        )


if __name__ == "__main__":
    main()
