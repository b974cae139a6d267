"""The autopilot's goals, measured in one run: ensemble medians (``plausible``, 8 settings)
over the built-in scenarios and the real traces of ``../shared/traces/`` (read in place).

Goals, against stock target tracking at 70 % (``stock:70``):

- on every trace, refused units <= stock:70's; in total, <= 0.3 x stock:70's;
- total cost <= stock:70's total cost;
- on periodic traffic (diurnal, nightly-batch, and the real traces with a daily pattern:
  road-occupancy-6005, road-occupancy-t4013, tweets-amzn), cost <= 1.3 x the bound's and
  refused units <= 0.05 x stock:70's;
- on the spike, refused units <= 0.4 x stock:70's.

Against every other setting, in the same run (for information, no goal): stock target
tracking at each target ``tune`` tries (``candidates.STOCK``: 30 to 90 %, step 10) and
on-demand. Per trace: the cheapest stock target refusing no more units than the judged
policy (or, where none does, the one refusing least, marked ``fewest``), on-demand's refused
units and cost, and every one of these that refuses no more than the judged policy at less
cost (``beaten by``). Then each of them at one setting over all the traces, in total.

Usage:
    .venv/bin/python -m benchmarks.autopilot_goals [--workers 2] [--policy autopilot] [--tick 2]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from benchmarks.stock_rivals import beaten_by, cheapest_within
from ddb_capacity_tools.simulator import ModelParams, Prices, parse, read_csv, scenario
from ddb_capacity_tools.simulator.candidates import ON_DEMAND, STOCK
from ddb_capacity_tools.simulator.ensemble import run_ensemble, settings_of
from ddb_capacity_tools.simulator.policies import DEFAULT_TICK_MINUTES

SHARED = Path(__file__).resolve().parents[2] / "shared" / "traces"
SCENARIOS = ("spike", "spike-14000", "slow-start", "diurnal", "nightly-batch", "flash-crowd")
PERIODIC = {
    "diurnal",
    "nightly-batch",
    "road-occupancy-6005",
    "road-occupancy-t4013",
    "tweets-amzn",
}
BASE = "stock:70"
REFUSED, COST = "throttled_requests", "cost_usd"
#: The settings the judged policy is compared with: every stock target, then on-demand.
OTHERS = (*STOCK, ON_DEMAND)

Medians = dict[tuple[str, str], float]


def cheapest_stock(med: Medians, refused: float) -> tuple[str, bool]:
    """The cheapest stock target refusing no more than ``refused`` (and True), or, where
    none does, the one refusing least (and False)."""
    return cheapest_within({n: (med[(n, REFUSED)], med[(n, COST)]) for n in STOCK}, refused)


def others_cells(med: Medians, judged: str) -> tuple[str, str, list[str]]:
    """A trace's cheapest stock target refusing no more than ``judged`` (or the one refusing
    least) and on-demand, as table cells, and the settings that beat ``judged``."""
    best, within = cheapest_stock(med, med[(judged, REFUSED)])
    label = best if within else f"none; fewest: {best}"
    stock = f"{label}: {med[(best, REFUSED)] / 1e6:,.2f}M, ${med[(best, COST)]:,.0f}"
    on_demand = f"{med[(ON_DEMAND, REFUSED)] / 1e6:,.2f}M, ${med[(ON_DEMAND, COST)]:,.0f}"
    others = [n for n in OTHERS if n != judged]
    figures = {n: (med[(n, REFUSED)], med[(n, COST)]) for n in others}
    return stock, on_demand, beaten_by(figures, med[(judged, REFUSED)], med[(judged, COST)], others)


def print_totals(rows: list[tuple[str, Medians]], judged: str) -> None:
    """Each of `OTHERS` on every trace, in total, against ``judged``."""
    total_thr = sum(med[(judged, REFUSED)] for _, med in rows)
    total_cost = sum(med[(judged, COST)] for _, med in rows)
    print(
        f"\nin total, each setting on every trace ({judged}: {total_thr / 1e6:,.2f}M refused, "
        f"${total_cost:,.0f}; x: {judged}'s over the setting's):\n"
    )
    print("| setting | refused | $ | x refused | x $ |")
    print("| --- | --- | --- | --- | --- |")
    for n in OTHERS:
        thr = sum(med[(n, REFUSED)] for _, med in rows)
        cost = sum(med[(n, COST)] for _, med in rows)
        ratio = total_thr / thr if thr else float("inf")
        print(f"| {n} | {thr / 1e6:,.2f}M | {cost:,.0f} | {ratio:.2f} | {total_cost / cost:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--policy", default="autopilot", help="the policy judged")
    parser.add_argument("--traces", type=Path, default=SHARED)
    parser.add_argument(
        "--tick", type=int, default=DEFAULT_TICK_MINUTES, help="the scaler's tick, minutes"
    )
    args = parser.parse_args()
    traces = [scenario(n) for n in SCENARIOS]
    if args.traces.is_dir():
        traces += [read_csv(p) for p in sorted(args.traces.glob("*.csv"))]
    settings = settings_of("plausible", ModelParams())
    names = tuple(dict.fromkeys((*OTHERS, args.policy, "bound")))
    specs = [parse(n) for n in names]
    started = time.perf_counter()
    rows: list[tuple[str, Medians]] = []
    for trace in traces:
        results = run_ensemble(
            trace, specs, settings, Prices(), tick=args.tick, workers=args.workers
        )
        med = {
            (n, m): sum(getattr(r, m).median for r in results if r.policy == n)
            for n in names
            for m in (REFUSED, COST)
        }
        rows.append((trace.name.removesuffix(".csv"), med))
    elapsed = time.perf_counter() - started
    judged = args.policy
    print(
        f"{judged} (tick {args.tick} min) against stock:70, ensemble medians (read + write), "
        f"{elapsed:.0f} s\n"
    )
    print(
        "| trace | stock:70 refused | stock:70 $ | refused | $ | x stock refused | x bound $ "
        "| cheapest stock refusing no more | on-demand | beaten by |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    beaten = []
    failures = []
    totals = {"stock_thr": 0.0, "stock_cost": 0.0, "thr": 0.0, "cost": 0.0}
    for name, med in rows:
        s_thr, s_cost = med[(BASE, REFUSED)], med[(BASE, COST)]
        thr, cost = med[(judged, REFUSED)], med[(judged, COST)]
        floor = med[("bound", COST)]
        totals["stock_thr"] += s_thr
        totals["stock_cost"] += s_cost
        totals["thr"] += thr
        totals["cost"] += cost
        ratio = thr / s_thr if s_thr else (0.0 if thr == 0 else float("inf"))
        stock, on_demand, by = others_cells(med, judged)
        beaten += [name] if by else []
        print(
            f"| {name} | {s_thr / 1e6:,.2f}M | {s_cost:,.0f} | {thr / 1e6:,.2f}M | {cost:,.0f} | "
            f"{ratio:.2f} | {cost / floor:.2f} | {stock} | {on_demand} | {', '.join(by) or '-'} |"
        )
        if thr > s_thr:
            failures.append(f"{name}: refused {ratio:.2f}x stock:70 (goal <= 1)")
        if name in PERIODIC:
            if cost > 1.3 * floor:
                failures.append(f"{name}: cost {cost / floor:.2f}x bound (goal <= 1.3, periodic)")
            if thr > 0.05 * s_thr:
                failures.append(f"{name}: refused {ratio:.2f}x stock:70 (goal <= 0.05, periodic)")
        if name == "spike" and thr > 0.4 * s_thr:
            failures.append(f"spike: refused {ratio:.2f}x stock:70 (goal <= 0.4)")
    total_thr = totals["thr"] / totals["stock_thr"]
    total_cost = totals["cost"] / totals["stock_cost"]
    print(f"\ntotal refused: {total_thr:.2f}x stock:70 (goal <= 0.3)")
    print(f"total cost:    {total_cost:.2f}x stock:70 (goal <= 1.0)")
    if total_thr > 0.3:
        failures.append(f"total refused {total_thr:.2f}x stock:70 (goal <= 0.3)")
    if total_cost > 1.0:
        failures.append(f"total cost {total_cost:.2f}x stock:70 (goal <= 1.0)")
    print(f"\n{len(failures)} goal(s) not met" + (":" if failures else ""))
    for f in failures:
        print(f"- {f}")
    print(
        f"\nbeaten (a stock target or on-demand refusing no more at less cost) on "
        f"{len(beaten)} of {len(rows)} traces" + (f": {', '.join(beaten)}" if beaten else "")
    )
    print_totals(rows, judged)


if __name__ == "__main__":
    main()
