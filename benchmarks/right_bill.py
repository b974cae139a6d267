"""The right bill: ``tune`` trained on the past and scored on the future, measured in one run.

For each trace, ``tune`` (its default candidates, the ``plausible`` ensemble, the scaler's
default tick) runs on the first half as the command does: it validates within that half
(each candidate family fitted on its first quarter of the trace, the fitted candidates
compared on its second quarter; with ``--no-validation``, every candidate compared on the
whole first half, for comparison), and three rules choose among its candidates: the
default rule (refusal tolerance 0 unless ``--refusal-tolerance`` is given, refusal floor
0.02 % of the requested units unless ``--refusal-floor`` is), the same with no floor, and
the price rule (cost plus the refused units at ``--refusal-price`` dollars per million,
default 1). Each recommendation is then scored on the second half (the policies run over
the whole trace and learn from the first half; refusals and cost count from the half on,
``score_from``), against stock target tracking at 30 to 90 % and on-demand, scored the same
way. Every number is a median over the ensemble's 8 settings, read + write.

The traces: the built-in scenarios of at least 2 days (diurnal, nightly-batch, hot-key); a
seeded noisy diurnal trace (``simulate_noisy_30_days.noisy_diurnal``, seed 1); and, when
``../shared/traces/`` exists, each real trace there (read in place: their licence forbids
copying them; 14 days a minute). The noisy trace is ``--days`` long and the real traces
are cut to their first ``--days`` (default 14, all of them: 7 days to tune on, 7 to score
on); the scenarios keep their length (7, 7 and 2 days). The run took 10.7 minutes on 2
cores with other work beside it; ``--days 8`` about 6.

Goals (printed with PASS/MISS and the distance; a miss is a finding, not a reason to move
the goal):

(a) on every trace, the recommendation is not dominated by any stock target or by
    on-demand: none refuses no more and costs less than 0.97 x the recommendation's, or
    refuses less and costs no more (a 3 % cost tolerance);
(b) dollar-weighted over the traces where a stock target refuses as little as the
    recommendation, the recommendation costs at most 0.75 x the cheapest stock target that
    refuses no more (sum of its costs / sum of those stock targets' costs);
(c) in total over the traces, the recommendation refuses at most 0.5 x what stock:70
    refuses, at no more than stock:70's cost;
(d) on every trace, the recommendation holds its own rule on the scored half: under a limit
    rule, it refuses no more than the rule's limit computed there (the stock target refusing
    least on that half, plus the tolerance and the floor of the half's requested units);
    under the price rule, no stock target costs less with its refusals at the price there. A
    pick that misses it on the future was chosen on figures that did not hold: (a) cannot
    see it when the pick is the cheapest stock target.

The goals are printed for each rule, and each trace's verdict under the default rule:
whether the recommendation is dominated, and its cost against the cheapest stock target
refusing no more.

``--quick`` (for the test suite, seconds): one seeded noisy trace of 2 days, 2 of the
ensemble's settings, the stock targets, ``autopilot+stock:80`` and ``:90`` and on-demand.

Usage:
    .venv/bin/python -m benchmarks.right_bill [--workers 2] [--days 14] [--traces DIR]
        [--refusal-tolerance 5%] [--refusal-floor 0.02%] [--refusal-price 1] [--no-validation]
        [--quick]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from benchmarks.simulate_noisy_30_days import noisy_diurnal
from ddb_capacity_tools.simulator import ModelParams, Prices, read_csv, scenario
from ddb_capacity_tools.simulator.candidates import (
    CANDIDATES,
    ON_DEMAND,
    REFUSAL_FLOOR,
    STOCK,
    Candidate,
    Rule,
    rank_by,
    requested_units,
)
from ddb_capacity_tools.simulator.ensemble import settings_of
from ddb_capacity_tools.simulator.policies import DEFAULT_TICK_MINUTES
from ddb_capacity_tools.simulator.trace import Trace, cut
from ddb_capacity_tools.simulator.tune import decide, validate, validation_split
from ddb_capacity_tools.simulator.tune_options import (
    refusal_floor,
    refusal_price,
    refusal_tolerance,
)
from ddb_capacity_tools.simulator.tune_runs import place, place_split
from ddb_capacity_tools.simulator.tune_scored import hold

SHARED = Path(__file__).resolve().parents[2] / "shared" / "traces"
SCENARIOS = ("diurnal", "nightly-batch", "hot-key")
COST_TOLERANCE = 0.03
GOAL_B = 0.75
GOAL_C_REFUSED = 0.5
REFERENCE = "stock:70"
BOUND = "bound"


def traces(folder: Path, days: int) -> tuple[list[Trace], str]:
    out = [scenario(n) for n in SCENARIOS]
    out.append(cut(noisy_diurnal(seed=1, days=days), days * 1440))
    if not folder.is_dir():
        return out, f"{folder} not found: no real traces"
    real = [cut(read_csv(p), days * 1440) for p in sorted(folder.glob("*.csv"))]
    names = [replace(t, name=t.name.removesuffix(".csv")) for t in real]
    return out + names, f"real traces read from {folder} ({len(real)})"


#: --quick's candidates (with the stock targets and on-demand) and ensemble settings.
QUICK_CANDIDATES: tuple[str, ...] = ("autopilot+stock:80", "autopilot+stock:90")
QUICK_SETTINGS = 2


def judge(
    trace: Trace,
    workers: int,
    rules: Sequence[Rule],
    candidates: Sequence[str] = CANDIDATES,
    settings_count: int | None = None,
    validation: bool = True,
) -> tuple[list[Candidate], dict[str, Candidate]]:
    """Tune on the first half as ``tune`` does (the candidates placed once over it at the
    scaler's default tick, split for validation; each rule applied to them), or, without
    ``validation``, chosen on the whole first half; each rule's recommendation, the stock
    targets and on-demand scored on the second half."""
    half = trace.minutes // 2
    settings = settings_of("plausible", ModelParams(), trace)[:settings_count]
    first = cut(trace, half)
    names = list(dict.fromkeys([*candidates, *STOCK, ON_DEMAND]))
    tick = DEFAULT_TICK_MINUTES
    if validation:
        split = validation_split(first)
        early, later = place_split(first, names, settings, Prices(), tick, workers, split)
        tunings = [validate(early, later, rule, first, settings[0], split) for rule in rules]
    else:
        placed = place(first, names, settings, Prices(), tick, workers)
        tunings = [decide(placed, rule, first, settings[0]) for rule in rules]
    picks = [t.recommended.policy for t in tunings]
    scored_names = list(dict.fromkeys([*picks, *STOCK, ON_DEMAND, BOUND]))
    scored = place(trace, scored_names, settings, Prices(), tick, workers, score_from=half)
    by = {c.policy: c for c in scored}
    return [by[p] for p in picks], by


def dominated(rec: Candidate, other: Candidate) -> bool:
    """Goal (a)'s test: ``other`` refuses no more and costs less than 0.97 x ``rec``, or
    refuses less and costs no more."""
    no_more = other.refused <= rec.refused * (1 + 1e-9) + 1e-6
    cheaper = other.cost < (1 - COST_TOLERANCE) * rec.cost
    return (no_more and cheaper) or (other.refused < rec.refused - 1e-6 and other.cost <= rec.cost)


def print_trace(
    trace: Trace, picks: list[Candidate], labels: list[str], by: dict[str, Candidate], t: float
) -> None:
    half = trace.minutes // 2
    chosen = ", ".join(f"{label}: {c.policy}" for label, c in zip(labels, picks, strict=True))
    print(
        f"\n{trace.name}: tuned on {half:,} minutes, scored on {trace.minutes - half:,} "
        f"({t:.0f} s); recommended by {chosen}"
    )
    print(f"  {'option':<24}{'refused units':>18}{'cost $':>12}")
    for name in list(dict.fromkeys([*(c.policy for c in picks), *STOCK, ON_DEMAND, BOUND])):
        c = by[name]
        who = [label for label, p in zip(labels, picks, strict=True) if p.policy == name]
        mark = f" <- {', '.join(who)}" if who else ""
        print(f"  {name:<24}{c.refused:>18,.0f}{c.cost:>12,.2f}{mark}")
    print(f"  verdict ({labels[0]}): {verdict(picks[0], by)}")


def verdict(rec: Candidate, by: dict[str, Candidate]) -> str:
    """Whether ``rec`` is dominated (goal (a)), and its cost against the cheapest stock
    target refusing no more."""
    beaten = [o for o in (*STOCK, ON_DEMAND) if o != rec.policy and dominated(rec, by[o])]
    words = f"dominated by {', '.join(beaten)}" if beaten else "not dominated"
    matching = [by[s] for s in STOCK if by[s].refused <= rec.refused * (1 + 1e-9) + 1e-6]
    if not matching:
        return f"{words}; no stock target refuses as little"
    cheapest = min(matching, key=lambda c: c.cost)
    ratio = rec.cost / cheapest.cost if cheapest.cost else float("inf")
    return (
        f"{words}; costs {ratio:.2f}x {cheapest.policy}, the cheapest stock target refusing no more"
    )


def goals(rows: list[tuple[str, Candidate, dict[str, Candidate]]]) -> None:
    misses, traces_missed, worst = [], set(), 0.0
    for name, rec, by in rows:
        for other in [*STOCK, ON_DEMAND]:
            o = by[other]
            if other != rec.policy and dominated(rec, o):
                traces_missed.add(name)
                worst = max(worst, 1 - o.cost / rec.cost)
                misses.append(
                    f"{name}: {other} refuses {o.refused:,.0f} (vs {rec.refused:,.0f}) at "
                    f"${o.cost:,.2f} (vs ${rec.cost:,.2f}, {o.cost / rec.cost - 1:+.1%})"
                )
    verdict = (
        "PASS"
        if not misses
        else f"MISS on {len(traces_missed)} of {len(rows)} traces ({len(misses)} dominations; "
        f"distance: what dominates it costs up to {worst:.1%} less)"
    )
    print(f"(a) not dominated by a stock target or on-demand (3 % cost tolerance): {verdict}")
    for m in misses:
        print(f"      {m}")
    paid = stock_paid = bound_paid = 0.0
    counted = []
    for name, rec, by in rows:
        matching = [by[s] for s in STOCK if by[s].refused <= rec.refused * (1 + 1e-9) + 1e-6]
        if matching:
            cheapest = min(matching, key=lambda c: c.cost)
            paid += rec.cost
            stock_paid += cheapest.cost
            bound_paid += by[BOUND].cost
            counted.append(f"{name} ({rec.cost / cheapest.cost:.2f}x {cheapest.policy})")
    if stock_paid:
        ratio = paid / stock_paid
        verdict = "PASS" if ratio <= GOAL_B else "MISS"
        print(
            f"(b) cost / cheapest stock target refusing no more, dollar-weighted over "
            f"{len(counted)} trace(s): {ratio:.3f}x (goal <= {GOAL_B}x, distance "
            f"{ratio - GOAL_B:+.3f}): {verdict}"
        )
        print(f"      {', '.join(counted)}")
        print(
            f"      for scale: the bound (no plan that refuses nothing costs less) costs "
            f"{bound_paid / stock_paid:.3f}x those stock targets over the same traces"
        )
    else:
        print("(b) no trace where a stock target refuses as little: nothing to weigh")
    _goal_c(rows)


def goal_d(rows: list[tuple[str, Candidate, dict[str, Candidate], float]], rule: Rule) -> None:
    """Goal (d): each recommendation held ``rule`` on the scored half (`hold`, as ``tune
    --score-from`` judges it; ``rows``: each trace's name, recommendation, scored candidates
    and the half's requested units): within the limit rule's limit there, or no stock target
    better at the price rule's price; and the stock target that would have held it where it
    did not."""
    misses = []
    rank = rank_by(rule)
    for name, rec, by, requested in rows:
        v = hold(rec, [by[s] for s in STOCK], rule, requested)
        if v.held:
            continue
        assert v.instead is not None  # a pick that did not hold has a stock target that did
        if v.limit is None:  # the price rule: a stock target did better at the price
            misses.append(
                f"{name}: {rec.policy} costs ${rank(rec)[0]:,.2f} with its refusals at the "
                f"price, {v.instead.policy} ${rank(v.instead)[0]:,.2f}; "
                f"{v.instead.policy} would have held it"
            )
            continue
        over = f"{rec.refused / v.limit:.1f}x" if v.limit else "over a limit of 0"
        misses.append(
            f"{name}: {rec.policy} refuses {rec.refused:,.0f}, limit {v.limit:,.0f} "
            f"({v.best.policy} refuses {v.best.refused:,.0f}; {over}); "
            f"{v.instead.policy} would have held it"
        )
    verdict = "PASS" if not misses else f"MISS on {len(misses)} of {len(rows)} traces"
    held = "within its rule's limit" if rule.price is None else "no worse at the price than stock"
    print(f"(d) the recommendation {held} on the scored half: {verdict}")
    for m in misses:
        print(f"      {m}")


def _goal_c(rows: list[tuple[str, Candidate, dict[str, Candidate]]]) -> None:
    refused = sum(rec.refused for _, rec, _ in rows)
    cost = sum(rec.cost for _, rec, _ in rows)
    ref_refused = sum(by[REFERENCE].refused for *_, by in rows)
    ref_cost = sum(by[REFERENCE].cost for *_, by in rows)
    r_ratio = refused / ref_refused if ref_refused else (0.0 if not refused else float("inf"))
    c_ratio = cost / ref_cost if ref_cost else float("inf")
    ok = r_ratio <= GOAL_C_REFUSED and c_ratio <= 1.0
    print(
        f"(c) in total, refused {refused:,.0f} = {r_ratio:.3f}x {REFERENCE}'s {ref_refused:,.0f} "
        f"(goal <= {GOAL_C_REFUSED}x, distance {r_ratio - GOAL_C_REFUSED:+.3f}); cost "
        f"${cost:,.2f} = {c_ratio:.3f}x {REFERENCE}'s ${ref_cost:,.2f} (goal <= 1x, distance "
        f"{c_ratio - 1:+.3f}): {'PASS' if ok else 'MISS'}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--days", type=int, default=14, help="days kept of the long traces")
    parser.add_argument("--refusal-tolerance", default="0", help="tune's, 0.05 or 5%%")
    parser.add_argument("--refusal-floor", default=None, help="tune's, default 0.02%%")
    parser.add_argument(
        "--refusal-price", default="1", help="the price rule's dollars per million refused"
    )
    parser.add_argument("--traces", type=Path, default=SHARED)
    parser.add_argument("--quick", action="store_true", help="one 2-day trace, in seconds")
    parser.add_argument(
        "--no-validation",
        action="store_true",
        help="choose on the whole first half (no fit and choose within it), for comparison",
    )
    args = parser.parse_args(argv)
    tolerance = refusal_tolerance(args.refusal_tolerance)
    floor = REFUSAL_FLOOR if args.refusal_floor is None else refusal_floor(args.refusal_floor)
    rules = {
        "the default rule": Rule(tolerance, floor),
        "no floor": Rule(tolerance, 0.0),
        f"price ${refusal_price(args.refusal_price):g}/M": Rule(
            price=refusal_price(args.refusal_price)
        ),
    }
    labels = list(rules)
    started = time.perf_counter()
    if args.quick:
        chosen, said = [noisy_diurnal(seed=1, days=2)], "--quick: one noisy 2-day trace"
        candidates, count = QUICK_CANDIDATES, QUICK_SETTINGS
    else:
        (chosen, said), candidates, count = traces(args.traces, args.days), CANDIDATES, None
    how = (
        "chosen on the whole first half (--no-validation)"
        if args.no_validation
        else "fitted on the first half's first half, chosen on its second"
    )
    print(
        f"right bill: {len(chosen)} traces; {said}; {how}; "
        f"ensemble plausible, medians, read + write; "
        f"the default rule: refusal tolerance {tolerance:.0%}, floor {floor:.2%} of the "
        f"requested units; no floor: the same without it; the price rule: cost + refused "
        f"units at ${refusal_price(args.refusal_price):g} per million"
    )
    rows: dict[str, list[tuple[str, Candidate, dict[str, Candidate]]]] = {k: [] for k in labels}
    requested: list[float] = []
    for trace in chosen:
        t0 = time.perf_counter()
        picks, by = judge(
            trace, args.workers, list(rules.values()), candidates, count, not args.no_validation
        )
        print_trace(trace, picks, labels, by, time.perf_counter() - t0)
        for label, pick in zip(labels, picks, strict=True):
            rows[label].append((trace.name, pick, by))
        requested.append(requested_units(trace, start=trace.minutes // 2))
    for label in labels:
        print(f"\ngoals, {label}")
        goals(rows[label])
        scored = [(*row, r) for row, r in zip(rows[label], requested, strict=True)]
        goal_d(scored, rules[label])
    print(f"\n{time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()
