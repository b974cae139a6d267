"""Does the hybrid win? The hybrid billing policy against its two parts, measured in one run.

For each trace: the hybrid's base alone (``autopilot+stock:70``, `run.hybrid_base`), on-demand,
the hybrid (``hybrid:70``: that base, with on-demand in the hours where on-demand cost less on
the table's own past days, at most 4 switches to on-demand in a rolling 24 hours, as the
switch of ``learn_on_demand_windows`` deploys it), and the
hybrid in hindsight (each day's windows from that day's own costs: a cost reference for
what better foresight could get, not a bound, since the rolling limit links the days).
Each figure is a median over the ``plausible`` ensemble's 8 settings, read + write, over
the whole trace. Beside them, in the same settings, every stock target from 30 to 90 %,
with the cheapest that refuses no more than the hybrid (or, where none does, the one that
refuses least), and on-demand, each against the hybrid.

The traces: each real trace of ``../shared/traces/`` (read in place: their licence forbids
copying them; 14 days a minute), the seeded noisy diurnal trace
(``simulate_noisy_30_days.noisy_diurnal``, 14 days) and the nightly-batch scenario.

The rule, printed with its count: learned windows would be the choice to reach for first
if the hybrid won by a clear margin on at least half of the real traces (before they were
built, this decided whether to build them). On a trace it does when
neither part refuses less than it and it costs at most 0.9 x each part (a 10 % margin).

Usage:
    .venv/bin/python -m benchmarks.hybrid [--workers 2] [--traces DIR]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from benchmarks.simulate_noisy_30_days import noisy_diurnal
from benchmarks.stock_rivals import cheapest_within
from ddb_capacity_tools.simulator import ModelParams, Prices, parse, read_csv, scenario, simulate
from ddb_capacity_tools.simulator.candidates import ON_DEMAND, STOCK
from ddb_capacity_tools.simulator.ensemble import settings_of
from ddb_capacity_tools.simulator.policies import DEFAULT_TICK_MINUTES
from ddb_capacity_tools.simulator.run import (
    DimensionResult,
    compose_hybrid,
    hybrid_base,
    recovery_minutes,
)
from ddb_capacity_tools.simulator.trace import Trace

SHARED = Path(__file__).resolve().parents[2] / "shared" / "traces"
HYBRID = "hybrid:70"
BASE = hybrid_base(parse(HYBRID)).text
HINDSIGHT = "hybrid:70 in hindsight"
MARGIN = 0.9


def _totals(results: list[DimensionResult]) -> tuple[float, float]:
    return sum(r.throttled_requests for r in results), sum(r.cost_usd for r in results)


def measure(trace: Trace, workers: int) -> dict[str, tuple[float, float]]:
    """Per option, (refused units, cost): medians over the ensemble."""
    prices = Prices()
    per: dict[str, list[tuple[float, float]]] = {}
    for params in settings_of("plausible", ModelParams(), trace):
        policies = [parse(p) for p in (BASE, ON_DEMAND, *STOCK)]
        results = simulate(trace, policies, params, prices, progress=None, workers=workers)
        base = [r for r in results if r.policy == BASE]
        od = [r for r in results if r.policy == ON_DEMAND]
        recovery = recovery_minutes(params, DEFAULT_TICK_MINUTES)
        learned = compose_hybrid(
            parse(HYBRID), base, od, trace, prices, basis=params.billing, recovery=recovery
        )
        hindsight = compose_hybrid(
            parse(HYBRID), base, od, trace, prices, 0, True, params.billing, recovery=recovery
        )
        for name, rs in ((BASE, base), (ON_DEMAND, od), (HYBRID, learned), (HINDSIGHT, hindsight)):
            per.setdefault(name, []).append(_totals(rs))
        for stock in STOCK:
            per.setdefault(stock, []).append(_totals([r for r in results if r.policy == stock]))
    return {
        name: (statistics.median(r for r, _ in v), statistics.median(c for _, c in v))
        for name, v in per.items()
    }


def verdict(figures: dict[str, tuple[float, float]]) -> tuple[bool, str]:
    """Whether the hybrid wins by the clear margin on this trace: no part refuses less,
    and it costs at most ``MARGIN`` x each part; with the comparisons, in words."""
    refused, cost = figures[HYBRID]
    words, won = [], True
    for part in (BASE, ON_DEMAND):
        p_refused, p_cost = figures[part]
        ratio = cost / p_cost if p_cost else float("inf")
        if p_refused < refused * (1 - 1e-9) - 1e-6:
            won = False
            words.append(f"{part} refuses less ({p_refused:,.0f}) at {p_cost / cost:.3f}x its cost")
        else:
            won = won and ratio <= MARGIN
            words.append(f"{ratio:.3f}x {part}'s cost")
    return won, "; ".join(words)


def against_stock(figures: dict[str, tuple[float, float]]) -> str:
    """The hybrid against every stock target and on-demand, in words: the cheapest stock
    target refusing no more than it (or, where none does, the one refusing least)."""
    refused, cost = figures[HYBRID]
    best, fits = cheapest_within(figures, refused * (1 + 1e-9) + 1e-6, STOCK)
    head = (
        f"cheapest stock target refusing no more: {best}"
        if fits
        else f"no stock target refuses as little; fewest: {best}"
    )
    words = []
    for name in (best, ON_DEMAND):
        o_refused, o_cost = figures[name]
        words.append(f"{name} refuses {o_refused:,.0f} at {o_cost / cost:.3f}x the hybrid's cost")
    return f"{head}; " + "; ".join(words)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--traces", type=Path, default=SHARED)
    args = parser.parse_args()
    started = time.perf_counter()
    real = [read_csv(p) for p in sorted(args.traces.glob("*.csv"))] if args.traces.is_dir() else []
    others = [noisy_diurnal(seed=1, days=14), scenario("nightly-batch")]
    print(
        f"hybrid: {len(real)} real traces from {args.traces}, and {len(others)} others; "
        "ensemble plausible, medians, read + write, the whole trace"
    )
    header = f"{'trace':<26}{'option':<24}{'refused units':>16}{'cost $':>11}"
    wins = 0
    for n, trace in enumerate([*real, *others]):
        t0 = time.perf_counter()
        figures = measure(trace, args.workers)
        won, against = verdict(figures)
        is_real = n < len(real)
        wins += won and is_real
        print(f"\n{header}" if n == 0 else "")
        for i, (name, (refused, cost)) in enumerate(figures.items()):
            label = trace.name.removesuffix(".csv")[:25] if i == 0 else ""
            print(f"{label:<26}{name:<24}{refused:>16,.0f}{cost:>11,.2f}")
        hint = "" if is_real else " (not a real trace: not counted)"
        print(
            f"{'':<26}hybrid: {against}: {'clear win' if won else 'no clear win'}{hint} "
            f"({time.perf_counter() - t0:.0f} s)"
        )
        print(f"{'':<26}against stock: {against_stock(figures)}")
    needed = (len(real) + 1) // 2
    print(
        f"\nthe hybrid wins by a clear margin (no part refuses less; <= {MARGIN}x each part's "
        f"cost) on {wins} of {len(real)} real traces; at least {needed} would make learned "
        "windows the choice to reach for first (they are deployed either way: "
        "learn_on_demand_windows; tune recommends them per table)"
    )
    print(f"{time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()
