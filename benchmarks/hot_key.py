"""A hot key: what reading throttles by cause saves, measured in one run on the two hot-key
scenarios (``hot-key``: a steady table where one key alone asks its partition for more
than it serves; ``hot-key-surge``: a 5x surge while one key takes a quarter of the
requests).

For each scenario, read + write: cost, and units refused by cause (provisioned-throughput
throttles, which capacity fixes, and key-range throttles, which it does not), for the
autopilot as deployed (``autopilot+stock:70``) and alone (``autopilot``), each also with
the lumped rule from before DynamoDB published the causes (``+lumped``), stock target
tracking at every target from 30 to 90 %, and on-demand.

Goal: on both scenarios, the cause-aware autopilot (as deployed and alone) costs at most
1.05x what ``stock:70`` costs. A miss prints its distance and why.

Usage:
    .venv/bin/python -m benchmarks.hot_key [--workers 2]
"""

from __future__ import annotations

import argparse
import time

from ddb_capacity_tools.simulator import DimensionResult, ModelParams, parse, scenario, simulate

SCENARIOS = ("hot-key", "hot-key-surge")
AUTOPILOTS = ("autopilot+stock:70", "autopilot")
POLICIES = (
    *(p for a in AUTOPILOTS for p in (a, f"{a}+lumped")),
    *(f"stock:{t}" for t in range(30, 100, 10)),
    "on-demand",
)
GOAL = 1.05
BASE = "stock:70"


def totals(results: list[DimensionResult]) -> dict[str, tuple[float, float, float]]:
    """Per policy, read + write: (cost $, provisioned-throughput units refused, key-range
    units refused)."""
    out: dict[str, tuple[float, float, float]] = {}
    for r in results:
        cost, provisioned, key_range = out.get(r.policy, (0.0, 0.0, 0.0))
        causes = r.throttled_by_cause
        out[r.policy] = (
            cost + r.cost_usd,
            provisioned + causes["provisioned"],
            key_range + causes["key_range"],
        )
    return out


def why(by: dict[str, tuple[float, float, float]], policy: str) -> str:
    """What a miss comes from, as the numbers show it."""
    cost, provisioned, key_range = by[policy]
    base_cost, base_provisioned, base_key_range = by[BASE]
    if provisioned < base_provisioned:
        return (
            f"it raised capacity for provisioned-throughput throttles stock:70 left "
            f"({provisioned:,.0f} units refused against {base_provisioned:,.0f})"
        )
    if key_range < base_key_range:
        return "its extra capacity added partitions, which narrowed the hot one"
    return "key-range throttles block its decreases, so it keeps capacity stock scales in"


def report(name: str, by: dict[str, tuple[float, float, float]]) -> list[str]:
    """The scenario's table; returns the goal's misses."""
    base_cost = by[BASE][0]
    print(f"\n{name}\n")
    print("| policy | cost $ | x stock:70 | provisioned refused | key-range refused |")
    print("| --- | --- | --- | --- | --- |")
    for policy, (cost, provisioned, key_range) in by.items():
        print(
            f"| {policy} | {cost:,.2f} | {cost / base_cost:.2f} | {provisioned:,.0f} "
            f"| {key_range:,.0f} |"
        )
    misses = []
    for policy in AUTOPILOTS:
        ratio = by[policy][0] / base_cost
        verdict = "PASS" if ratio <= GOAL else "MISS"
        line = f"{verdict}: {policy} costs {ratio:.3f}x {BASE} (goal <= {GOAL})"
        if ratio > GOAL:
            line += f", {ratio - GOAL:.3f} over: {why(by, policy)}"
            misses.append(f"{name}: {line}")
        lumped = by[f"{policy}+lumped"][0] / base_cost
        print(f"{line}; with the lumped rule: {lumped:.2f}x")
    return misses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    began = time.perf_counter()
    misses = []
    for name in SCENARIOS:
        trace = scenario(name)
        specs = [parse(p) for p in POLICIES]
        results = simulate(trace, specs, ModelParams(), progress=None, workers=args.workers)
        misses += report(f"{name} (hot key {trace.key_skew:.0%})", totals(results))
    print(f"\n{time.perf_counter() - began:.1f} s; {len(misses)} goal(s) missed")
    for miss in misses:
        print(f"- {miss}")


if __name__ == "__main__":
    main()
