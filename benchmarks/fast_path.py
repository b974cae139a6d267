"""The fast path's goals, measured in one run: ensemble medians (``plausible``: 8 model
settings, the fast path's delay spread from 5 to 30 s around S = 20 and its reporting
share from 0.5 to 1 times F), read + write.

For each trace: stock target tracking at every target from 30 to 90 %, on-demand, and the
library's policies (``autopilot+stock:70``, what a ``ProvisionedTable`` with a scaler
deploys, and ``autopilot`` alone) without the fast path and with it (``+fast``). Units
refused and cost are each policy's ensemble medians, added over the dimensions.

Goals (refused and cost against stock:70's):

| scenario | refused | cost |
|---|---|---|
| spike, F = 1 | <= 0.1x | <= 1.05x |
| spike, F = 0.5 | <= 0.3x | |
| flash-crowd, slow-start, spike-14000 | <= 0.1x | |
| every real trace in ``../shared/traces`` | <= 0.5x | no more than without the fast path |

A goal is judged for ``autopilot+stock:70+fast``. ``autopilot+stock:80+fast`` (less
headroom, as the fast path catches bursts) and ``autopilot+fast`` are printed beside it. A
miss prints its distance and why, as the numbers show it. For the spike, the refusals of
each model setting show where the fast path cannot help: an UpdateTable that takes
minutes, or no burst bucket to bridge the seconds before it lands.

Beside the goals, ``autopilot+stock:70+fast`` is held against every stock target and
on-demand: per trace, the cheapest stock target that refuses no more than it (or, when
none does, the one that refuses least), on-demand, and every one of them that refuses no
more and costs less (``BEATEN``). Two closing tables sum up the goals (bold: missed) and
this comparison per trace.

Usage:
    .venv/bin/python -m benchmarks.fast_path [--workers 2] [--traces DIR]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, replace
from pathlib import Path

from benchmarks.stock_rivals import beaten_by, cheapest_within, print_table
from ddb_capacity_tools.simulator import ModelParams, Prices, parse, read_csv, scenario
from ddb_capacity_tools.simulator.candidates import ON_DEMAND, STOCK
from ddb_capacity_tools.simulator.ensemble import EnsembleResult, run_ensemble, settings_of
from ddb_capacity_tools.simulator.trace import Trace

SHARED = Path(__file__).resolve().parents[2] / "shared" / "traces"
SECONDS = 20
LIBRARY = ("autopilot+stock:70", "autopilot")
FAST = ("autopilot+stock:70", "autopilot+stock:80", "autopilot")
JUDGED = "autopilot+stock:70"
RIVALS = (*STOCK, ON_DEMAND)
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


@dataclass(frozen=True)
class Outcome:
    """One goal's measures: per policy the medians, and per model setting what stock:70
    and the judged policy with the fast path refused."""

    by: dict[str, tuple[float, float]]
    settings: list[ModelParams]
    stock: list[float]
    fast: list[float]

    def quick(self) -> list[bool]:
        """Per setting, whether a raise can land within about a minute of the report and
        the bucket bridges it: a 1-minute UpdateTable with no spread, half a bucket or more."""
        return [
            p.update_minutes + p.update_spread_minutes <= 1 and p.burst_fraction >= 0.5
            for p in self.settings
        ]


def refused_by_setting(results: list[EnsembleResult], policy: str) -> list[float]:
    """Per setting, what ``policy`` refused over every dimension."""
    rows = [r.runs for r in results if r.policy == policy]
    return [sum(run.throttled_requests for run in runs) for runs in zip(*rows, strict=True)]


def measure(goal: Goal, workers: int) -> Outcome:
    """Every policy's medians on the goal's trace, without the fast path and with it."""
    base = ModelParams()
    off = settings_of("plausible", base, goal.trace)
    on = settings_of(
        "plausible",
        replace(base, fast_path_seconds=SECONDS, fast_path_share=goal.share),
        goal.trace,
    )
    specs = [parse(p) for p in (*RIVALS, *LIBRARY)]
    slow = run_ensemble(goal.trace, specs, off, Prices(), workers=workers)
    fast = run_ensemble(goal.trace, [parse(p) for p in FAST], on, workers=workers)
    by = medians(slow)
    by.update({f"{p}+fast": v for p, v in medians(fast).items()})
    return Outcome(by, on, refused_by_setting(slow, BASE), refused_by_setting(fast, JUDGED))


def by_setting(outcome: Outcome) -> None:
    """Per model setting: what stock:70 and the judged policy with the fast path refused."""
    print(f"\n| update minutes (+ spread) | burst | S | F | {BASE} refused | {JUDGED}+fast |")
    print("| --- | --- | --- | --- | --- | --- |")
    for p, a, b in zip(outcome.settings, outcome.stock, outcome.fast, strict=True):
        print(
            f"| {p.update_minutes} (+{p.update_spread_minutes}) | {p.burst_fraction:g} "
            f"| {p.fast_path_seconds} | {p.fast_path_share:g} | {a:,.0f} | {b:,.0f} |"
        )


def why_refused(outcome: Outcome) -> str:
    """Where the judged policy's refusals come from, by kind of setting."""
    quick = outcome.quick()
    fast_quick = sum(f for f, q in zip(outcome.fast, quick, strict=True) if q)
    stock_quick = sum(s for s, q in zip(outcome.stock, quick, strict=True) if q)
    slow_share = 1 - fast_quick / sum(outcome.fast) if sum(outcome.fast) else 0.0
    return (
        f"{slow_share:.0%} of its refusals come from the {quick.count(False)} settings where "
        f"an UpdateTable takes 2 minutes or more, or the bucket holds less than half, so "
        f"no raise lands before the bucket runs dry; in the {quick.count(True)} others it "
        f"refused {fast_quick:,.0f} units against stock:70's {stock_quick:,.0f}"
    )


def why_cost(outcome: Outcome, against: str) -> str:
    refused, cost = outcome.by[f"{JUDGED}+fast"]
    base_refused, base_cost = outcome.by[against]
    return (
        f"its surges serve what {against} refused ({base_refused - refused:,.0f} units "
        f"fewer refused), and the capacity stays up until auto scaling scales in: "
        f"${cost - base_cost:,.2f} more"
    )


def report(goal: Goal, outcome: Outcome) -> list[str]:
    """The goal's table and verdicts; returns its misses."""
    by = outcome.by
    base_refused, base_cost = by[BASE]
    print(f"\n{goal.name} (F = {goal.share:g})\n")
    print("| policy | refused units | x stock:70 | cost $ | x stock:70 |")
    print("| --- | --- | --- | --- | --- |")
    for policy, (refused, cost) in by.items():
        ratio = f"{refused / base_refused:.3f}" if base_refused else "-"
        print(f"| {policy} | {refused:,.0f} | {ratio} | {cost:,.2f} | {cost / base_cost:.3f} |")
    refused, cost = by[f"{JUDGED}+fast"]
    checks = [("refused", refused / base_refused if base_refused else 0.0, goal.refused, BASE)]
    if goal.cost is not None:
        checks.append(("cost", cost / base_cost, goal.cost, BASE))
    if goal.no_dearer:
        checks.append(("cost", cost / by[JUDGED][1], 1.0, f"{JUDGED} without the fast path"))
    misses = []
    for what, value, bound, against in checks:
        key = BASE if against == BASE else JUDGED
        verdict = "PASS" if value <= bound + 1e-9 else "MISS"
        line = (
            f"{verdict} {goal.name} F={goal.share:g}: {what} {value:.3f}x {against} "
            f"(goal <= {bound:g})"
        )
        if verdict == "MISS":
            reason = why_refused(outcome) if what == "refused" else why_cost(outcome, key)
            line += f"; {value / bound:.2f}x the goal: {reason}"
            misses.append(line)
        print(line)
    return misses


def judged(value: float, bound: float | None) -> str:
    """A ratio, with its goal when it has one; bold when the goal is missed."""
    if bound is None:
        return f"{value:.3f}x"
    text = f"{value:.3f}x (<= {bound:g}x)"
    return text if value <= bound + 1e-9 else f"**{value:.3f}x** (<= {bound:g}x)"


def goal_row(goal: Goal, outcome: Outcome) -> list[str]:
    """The goals table's row: the judged policy with the fast path against stock:70 and
    against itself without the fast path, with the goals; then the same without the fast
    path and ``autopilot+stock:80+fast``, each x stock:70."""
    by = outcome.by
    base_refused, base_cost = by[BASE]

    def ratios(policy: str) -> tuple[float, float]:
        refused, cost = by[policy]
        return (refused / base_refused if base_refused else 0.0), cost / base_cost

    refused, cost = ratios(f"{JUDGED}+fast")
    dearer = by[f"{JUDGED}+fast"][1] / by[JUDGED][1]
    slow_refused, slow_cost = ratios(JUDGED)
    less_refused, less_cost = ratios("autopilot+stock:80+fast")
    return [
        goal.name,
        f"{goal.share:g}",
        judged(refused, goal.refused),
        judged(cost, goal.cost),
        judged(dearer, 1.0 if goal.no_dearer else None),
        f"{slow_refused:.3f}x, {slow_cost:.3f}x",
        f"{less_refused:.3f}x, {less_cost:.3f}x",
    ]


GOAL_COLUMNS = (
    "trace",
    "F",
    f"{JUDGED}+fast: refused x {BASE} (goal)",
    f"cost x {BASE} (goal)",
    "cost x without the fast path (goal)",
    f"{JUDGED} without it: refused, cost x {BASE}",
    f"autopilot+stock:80+fast: refused, cost x {BASE}",
)
"""The goals table's header."""

SUMMARY_COLUMNS = (
    "trace",
    "F",
    f"{JUDGED}+fast: refused, cost",
    "cheapest stock target refusing no more (x the fast path's)",
    "on-demand (x the fast path's)",
    "refuses no more and costs less",
)
"""The header of the table of the judged policy with the fast path against every stock
target, per trace."""


def units(n: float) -> str:
    if n >= 1e6:
        return f"{n / 1e6:,.2f}M"
    return f"{n / 1e3:,.0f}k" if n >= 1e3 else f"{n:,.0f}"


def versus(by: dict[str, tuple[float, float]], policy: str) -> str:
    """``policy``'s refusals and cost, each x the judged policy's with the fast path."""
    refused, cost = by[policy]
    own_refused, own_cost = by[f"{JUDGED}+fast"]
    ratio = f"{refused / own_refused:.2f}x" if own_refused else "-"
    return f"{units(refused)} ({ratio}), ${cost:,.2f} ({cost / own_cost:.2f}x)"


def rivals(goal: Goal, outcome: Outcome) -> tuple[list[str], list[str]]:
    """The judged policy with the fast path against every stock target and on-demand:
    prints them; returns the summary row's cells and who beats it on both."""
    by = outcome.by
    refused, cost = by[f"{JUDGED}+fast"]
    target, fits = cheapest_within(by, refused, STOCK)
    best = f"{'' if fits else 'none; fewest: '}{target}: {versus(by, target)}"
    beaten = beaten_by(by, refused, cost, RIVALS)
    print(
        f"\nagainst every stock target and on-demand ({JUDGED}+fast: {units(refused)} "
        f"refused, ${cost:,.2f}; x its own):\n"
        f"  cheapest stock target refusing no more: {best}\n"
        f"  on-demand: {versus(by, 'on-demand')}"
    )
    for p in beaten:
        print(
            f"BEATEN {goal.name} F={goal.share:g}: {p} refuses {units(by[p][0])} "
            f"(against {units(refused)}) and costs ${by[p][1]:,.2f} (against ${cost:,.2f})"
        )
    cells = [
        goal.name,
        f"{goal.share:g}",
        f"{units(refused)}, ${cost:,.2f}",
        best,
        versus(by, "on-demand"),
        ", ".join(beaten) or "none",
    ]
    return cells, beaten


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
    rows: list[list[str]] = []
    table: list[list[str]] = []
    beaten = 0
    for i, goal in enumerate(goals(args.traces)):
        outcome = measure(goal, args.workers)
        misses += report(goal, outcome)
        table.append(goal_row(goal, outcome))
        cells, by = rivals(goal, outcome)
        rows.append(cells)
        beaten += bool(by)
        if i == 0:
            by_setting(outcome)
    print()
    print_table(GOAL_COLUMNS, table)
    print()
    print_table(SUMMARY_COLUMNS, rows)
    print(
        f"\n{time.perf_counter() - started:.0f} s; {len(misses)} miss(es); beaten on both "
        f"refusals and cost by a stock target or on-demand on {beaten} of {len(rows)}"
    )
    for m in misses:
        print(f"  {m}")


if __name__ == "__main__":
    main()
