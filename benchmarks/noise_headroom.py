"""The autopilot's noise aim (``PolicyConfig.noise_aim``), measured in one run: each policy
with it off (the target outside a plan: the default) and on, cost and refused units,
ensemble medians (``plausible``, 8 settings; ``--single``: the default model alone),
read + write.

The traces: the built-in scenarios, a seeded noisy diurnal trace
(``simulate_noisy_30_days.noisy_diurnal``, seed 1, ``--days`` long) and, when
``../shared/traces/`` exists, each real trace there (read in place: their licence forbids
copying them).

The noise aim would be the default only if, in total over the traces, cost went down and
refused units did not go up (for each policy), and no trace's refused units rose by more than
2 %: the run prints PASS or each MISS. (It misses: see docs/guides/autopilot.md, "Aiming by
the traffic's noise".) A policy whose dimensions are all under target tracking (on stock)
aims at its policy's target either way, and is printed as unchanged.

Usage:
    .venv/bin/python -m benchmarks.noise_headroom [--workers 2] [--single] [--days 14]
        [--policy autopilot:70 --policy autopilot+stock:70] [--traces DIR]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from benchmarks.simulate_noisy_30_days import noisy_diurnal
from ddb_capacity_tools.simulator import ModelParams, Prices, parse, read_csv, scenario
from ddb_capacity_tools.simulator.ensemble import run_ensemble, settings_of
from ddb_capacity_tools.simulator.policies import Spec
from ddb_capacity_tools.simulator.trace import Trace

SHARED = Path(__file__).resolve().parents[2] / "shared" / "traces"
SCENARIOS = ("spike", "spike-14000", "slow-start", "diurnal", "nightly-batch", "flash-crowd")
POLICIES = ("autopilot:70", "autopilot+stock:70")
#: No trace's refused units may rise by more than this share.
WORST_RISE = 0.02
#: Refused units below this are counted as none when a rise is judged (a rise from 0 to a
#: few units is no finding).
NEGLIGIBLE_UNITS = 1_000


def variants(policies: Sequence[str]) -> list[Spec]:
    """Each policy with the noise aim off and on (named ``P off``, ``P on``)."""
    out = []
    for text in policies:
        spec = parse(text)
        out += [replace(spec, text=f"{text} {o}", noise_aim=o == "on") for o in ("off", "on")]
    return out


def load(folder: Path, days: int) -> list[Trace]:
    traces = [scenario(n) for n in SCENARIOS] + [noisy_diurnal(seed=1, days=days)]
    if folder.is_dir():
        traces += [read_csv(p) for p in sorted(folder.glob("*.csv"))]
    return traces


def measure(
    traces: Sequence[Trace], specs: Sequence[Spec], settings: Sequence[ModelParams], workers: int
) -> dict[str, dict[str, tuple[float, float]]]:
    """Per trace, per policy: (refused units, cost $), medians summed over dimensions."""
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for trace in traces:
        results = run_ensemble(trace, specs, settings, Prices(), workers=workers)
        name = trace.name.removesuffix(".csv")
        out[name] = {
            s.text: (
                sum(r.throttled_requests.median for r in results if r.policy == s.text),
                sum(r.cost_usd.median for r in results if r.policy == s.text),
            )
            for s in specs
        }
    return out


def change(before: float, after: float) -> str:
    if before == after:
        return "0"
    return f"{(after - before) / before:+.1%}" if before else "new"


def report(policy: str, rows: dict[str, dict[str, tuple[float, float]]]) -> list[str]:
    """Print ``policy``'s off/on table; return the criteria it misses."""
    off, on = f"{policy} off", f"{policy} on"
    if all(cells[off] == cells[on] for cells in rows.values()):
        print(f"\n{policy}: unchanged on every trace (each dimension aims at its policy's target)")
        return []
    print(f"\n{policy}: noise aim off -> on")
    print("| trace | refused off | refused on | change | $ off | $ on | change |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    totals = [0.0, 0.0, 0.0, 0.0]
    misses = []
    for name, cells in rows.items():
        (thr0, cost0), (thr1, cost1) = cells[off], cells[on]
        for i, v in enumerate((thr0, thr1, cost0, cost1)):
            totals[i] += v
        print(
            f"| {name} | {thr0 / 1e6:,.2f}M | {thr1 / 1e6:,.2f}M | {change(thr0, thr1)} "
            f"| {cost0:,.2f} | {cost1:,.2f} | {change(cost0, cost1)} |"
        )
        if thr1 > NEGLIGIBLE_UNITS and thr1 > thr0 * (1 + WORST_RISE):
            misses.append(f"{policy}: {name} refuses {change(thr0, thr1)}")
    thr0, thr1, cost0, cost1 = totals
    print(
        f"| **total** | {thr0 / 1e6:,.2f}M | {thr1 / 1e6:,.2f}M | {change(thr0, thr1)} "
        f"| {cost0:,.2f} | {cost1:,.2f} | {change(cost0, cost1)} |"
    )
    if cost1 >= cost0:
        misses.append(f"{policy}: total cost {change(cost0, cost1)}")
    if thr1 > thr0:
        misses.append(f"{policy}: total refused {change(thr0, thr1)}")
    return misses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--single", action="store_true", help="the default model only")
    parser.add_argument("--days", type=int, default=14, help="the noisy diurnal trace's days")
    parser.add_argument("--policy", action="append", help=f"default: {', '.join(POLICIES)}")
    parser.add_argument("--traces", type=Path, default=SHARED)
    args = parser.parse_args()
    policies = args.policy or list(POLICIES)
    traces = load(args.traces, args.days)
    settings = [ModelParams()] if args.single else settings_of("plausible", ModelParams())
    if not args.traces.is_dir():
        print(f"{args.traces} not found: the built-in scenarios only")
    started = time.perf_counter()
    rows = measure(traces, variants(policies), settings, args.workers)
    print(
        f"{len(traces)} traces x {len(settings)} setting(s) x {2 * len(policies)} policies: "
        f"{time.perf_counter() - started:.0f} s (medians, read + write)"
    )
    misses = [m for p in policies for m in report(p, rows)]
    costs = [
        sum(cells[f"{p} {o}"][1] for cells in rows.values() for p in policies)
        for o in ("off", "on")
    ]
    if costs[1] >= costs[0]:
        misses.append(f"all policies: total cost {change(*costs)}")
    print(
        "\ncriteria (total cost down, total refused not up, no trace's refused up more than "
        f"{WORST_RISE:.0%}): " + ("PASS" if not misses else "MISS")
    )
    for m in misses:
        print(f"  MISS {m}")


if __name__ == "__main__":
    main()
