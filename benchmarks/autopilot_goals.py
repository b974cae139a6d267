"""The autopilot's goals, measured in one run: ensemble medians (``plausible``, 8 settings)
over the built-in scenarios and the real traces of ``../shared/traces/`` (read in place).

Goals, against stock target tracking at 70 % (``stock:70``):

- on every trace, refused units <= stock:70's; in total, <= 0.3 x stock:70's;
- total cost <= stock:70's total cost;
- on periodic traffic (diurnal, nightly-batch, and the real traces with a daily pattern:
  road-occupancy-6005, road-occupancy-t4013, tweets-amzn), cost <= 1.3 x the bound's and
  refused units <= 0.05 x stock:70's;
- on the spike, refused units <= 0.4 x stock:70's.

Usage:
    .venv/bin/python -m benchmarks.autopilot_goals [--workers 2] [--policy autopilot] [--tick 2]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ddb_capacity_tools.simulator import ModelParams, Prices, parse, read_csv, scenario
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
    names = ("stock:70", args.policy, "bound")
    specs = [parse(n) for n in names]
    started = time.perf_counter()
    rows = []
    for trace in traces:
        results = run_ensemble(
            trace, specs, settings, Prices(), tick=args.tick, workers=args.workers
        )
        med = {
            (n, m): sum(getattr(r, m).median for r in results if r.policy == n)
            for n in names
            for m in ("throttled_requests", "cost_usd")
        }
        rows.append((trace.name.removesuffix(".csv"), med))
    elapsed = time.perf_counter() - started
    judged = args.policy
    print(
        f"{judged} (tick {args.tick} min) against stock:70, ensemble medians (read + write), "
        f"{elapsed:.0f} s\n"
    )
    print("| trace | stock:70 refused | stock:70 $ | refused | $ | x stock refused | x bound $ |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    failures = []
    totals = {"stock_thr": 0.0, "stock_cost": 0.0, "thr": 0.0, "cost": 0.0}
    for name, med in rows:
        s_thr, s_cost = med[("stock:70", "throttled_requests")], med[("stock:70", "cost_usd")]
        thr, cost = med[(judged, "throttled_requests")], med[(judged, "cost_usd")]
        floor = med[("bound", "cost_usd")]
        totals["stock_thr"] += s_thr
        totals["stock_cost"] += s_cost
        totals["thr"] += thr
        totals["cost"] += cost
        ratio = thr / s_thr if s_thr else (0.0 if thr == 0 else float("inf"))
        print(
            f"| {name} | {s_thr / 1e6:,.2f}M | {s_cost:,.0f} | {thr / 1e6:,.2f}M | {cost:,.0f} | "
            f"{ratio:.2f} | {cost / floor:.2f} |"
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


if __name__ == "__main__":
    main()
