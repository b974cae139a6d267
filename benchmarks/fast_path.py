"""The fast path's goals, measured in one run: ensemble medians (``plausible``: 8 model
settings, the fast path's delay spread from 5 to 30 s around S = 20 and its reporting
share from 0.5 to 1 times F), read + write.

For each trace: stock target tracking at every target from 30 to 90 %, and the library's
policies (``autopilot+stock:70``, what a ``ProvisionedTable`` with a scaler deploys, and
``autopilot`` alone) without the fast path and with it (``+fast``). Units refused and cost
are each policy's ensemble medians, added over the dimensions.

Goals (refused and cost against stock:70's):

| scenario | refused | cost |
|---|---|---|
| spike, F = 1 | <= 0.1x | <= 1.05x |
| spike, F = 0.5 | <= 0.3x | |
| flash-crowd, slow-start, spike-14000 | <= 0.1x | |
| every real trace in ``../shared/traces`` | <= 0.5x | no more than without the fast path |

A goal is judged for ``autopilot+stock:70+fast``, and again for ``autopilot+stock:80+fast``:
the fast path catches bursts, so a table can keep less headroom. ``autopilot+fast`` is
printed beside them. A miss prints its distance and why, as the numbers show it. For the
spike, the refusals of each model setting show where the fast path cannot help: an
UpdateTable that takes minutes, or no burst bucket to bridge the seconds before it lands.

Usage:
    .venv/bin/python -m benchmarks.fast_path [--workers 2] [--traces DIR]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, replace
from pathlib import Path

from ddb_capacity_tools.simulator import ModelParams, Prices, parse, read_csv, scenario
from ddb_capacity_tools.simulator.ensemble import EnsembleResult, run_ensemble, settings_of
from ddb_capacity_tools.simulator.trace import Trace

SHARED = Path(__file__).resolve().parents[2] / "shared" / "traces"
SECONDS = 20
LIBRARY = ("autopilot+stock:70", "autopilot")
FAST = ("autopilot+stock:70", "autopilot+stock:80", "autopilot")
JUDGED = ("autopilot+stock:70", "autopilot+stock:80")
STOCK = tuple(f"stock:{t}" for t in range(30, 100, 10))
BASE = "stock:70"


@dataclass(frozen=True)
class Goal:
    name: str
    trace: Trace
    share: float
    refused: float
    cost: float | None = None
    #: cost no more than the same policy without the fast path
    no_dearer: bool = False


def medians(results: list[EnsembleResult]) -> dict[str, tuple[float, float]]:
    """Per policy: (units refused, cost $), each the sum over dimensions of the medians."""
    out: dict[str, tuple[float, float]] = {}
    for r in results:
        refused, cost = out.get(r.policy, (0.0, 0.0))
        out[r.policy] = (refused + r.throttled_requests.median, cost + r.cost_usd.median)
    return out


Measured = tuple[
    dict[str, tuple[float, float]], list[EnsembleResult], list[EnsembleResult], list[ModelParams]
]


def measure(goal: Goal, workers: int) -> Measured:
    """Every policy's medians on the goal's trace, without the fast path, then with it;
    and the ensemble results of both."""
    base = ModelParams()
    off = settings_of("plausible", base, goal.trace)
    on = settings_of(
        "plausible",
        replace(base, fast_path_seconds=SECONDS, fast_path_share=goal.share),
        goal.trace,
    )
    specs = [parse(p) for p in (*STOCK, *LIBRARY)]
    slow = run_ensemble(goal.trace, specs, off, Prices(), workers=workers)
    fast = run_ensemble(goal.trace, [parse(p) for p in FAST], on, workers=workers)
    by = medians(slow)
    by.update({f"{p}+fast": v for p, v in medians(fast).items()})
    return by, slow, fast, on


def by_setting(
    slow: list[EnsembleResult], fast: list[EnsembleResult], settings: list[ModelParams]
) -> None:
    """Per model setting: what stock:70 and autopilot+stock:70+fast refused."""

    def refused(results: list[EnsembleResult], policy: str) -> list[float]:
        rows = [r.runs for r in results if r.policy == policy]
        return [sum(run.throttled_requests for run in runs) for runs in zip(*rows, strict=True)]

    stock, quick = refused(slow, BASE), refused(fast, JUDGED[0])
    print("\n| update minutes (+ spread) | burst | S | F | stock:70 refused | +fast refused |")
    print("| --- | --- | --- | --- | --- | --- |")
    for p, a, b in zip(settings, stock, quick, strict=True):
        print(
            f"| {p.update_minutes} (+{p.update_spread_minutes}) | {p.burst_fraction:g} "
            f"| {p.fast_path_seconds} | {p.fast_path_share:g} | {a:,.0f} | {b:,.0f} |"
        )


def why(by: dict[str, tuple[float, float]], policy: str) -> str:
    refused, cost = by[policy]
    slow = by[JUDGED[0]]
    if refused >= slow[0] * 0.9:
        return (
            "the reports came too late or too weak to raise before the bucket ran dry "
            f"(without the fast path it refused {slow[0]:,.0f})"
        )
    if cost > slow[1]:
        return (
            f"surges raised capacity for bursts the bucket would have absorbed "
            f"(${cost:,.2f} against ${slow[1]:,.2f} without the fast path)"
        )
    return "the bursts are longer or larger than a surge sized at the target covers"


def report(goal: Goal, by: dict[str, tuple[float, float]]) -> list[str]:
    base_refused, base_cost = by[BASE]
    print(f"\n{goal.name} (F = {goal.share:g})\n")
    print("| policy | refused units | x stock:70 | cost $ | x stock:70 |")
    print("| --- | --- | --- | --- | --- |")
    for policy, (refused, cost) in by.items():
        ratio = f"{refused / base_refused:.3f}" if base_refused else "-"
        print(f"| {policy} | {refused:,.0f} | {ratio} | {cost:,.2f} | {cost / base_cost:.3f} |")
    misses = []
    for judged in JUDGED:
        misses += verdicts(goal, by, judged, base_refused, base_cost)
    return misses


def verdicts(
    goal: Goal,
    by: dict[str, tuple[float, float]],
    judged: str,
    base_refused: float,
    base_cost: float,
) -> list[str]:
    misses = []
    policy = f"{judged}+fast"
    refused, cost = by[policy]
    ratio = refused / base_refused if base_refused else 0.0
    verdicts = [("refused", ratio, goal.refused, "x stock:70")]
    if goal.cost is not None:
        verdicts.append(("cost", cost / base_cost, goal.cost, "x stock:70"))
    if goal.no_dearer:
        slow = by[JUDGED[0]][1]
        verdicts.append(("cost", cost / slow, 1.0, f"x {JUDGED[0]} without the fast path"))
    for what, value, bound, unit in verdicts:
        verdict = "PASS" if value <= bound + 1e-9 else "MISS"
        line = (
            f"{verdict} {goal.name} F={goal.share:g} {policy}: {what} {value:.3f}{unit} "
            f"(goal <= {bound:g})"
        )
        if verdict == "MISS":
            line += f"; {bound and value / bound:.2f}x the goal: {why(by, policy)}"
            misses.append(line)
        print(line)
    return misses


def goals(folder: Path) -> list[Goal]:
    out = [
        Goal("spike", scenario("spike"), 1.0, 0.1, cost=1.05),
        Goal("spike", scenario("spike"), 0.5, 0.3),
        *(Goal(n, scenario(n), 1.0, 0.1) for n in ("flash-crowd", "slow-start", "spike-14000")),
    ]
    for path in sorted(folder.glob("*.csv")) if folder.is_dir() else []:
        out.append(Goal(path.stem, read_csv(path), 1.0, 0.5, no_dearer=True))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--traces", type=Path, default=SHARED)
    args = parser.parse_args()
    started = time.perf_counter()
    misses: list[str] = []
    for i, goal in enumerate(goals(args.traces)):
        by, slow, fast, settings = measure(goal, args.workers)
        misses += report(goal, by)
        if i == 0:
            by_setting(slow, fast, settings)
    print(f"\n{time.perf_counter() - started:.0f} s; {len(misses)} miss(es)")
    for m in misses:
        print(f"  {m}")


if __name__ == "__main__":
    main()
