"""No padding: where ``autopilot:T`` buys more capacity than ``stock:T``, measured in one run.

For each trace and each target T of 50, 70, 80 and 90 %, ``stock:T`` and ``autopilot:T``
(the scaler Lambda's own code, setting capacity by UpdateTable) are replayed over the
whole trace and scored on its second half (``--score-from`` semantics: the policies see and
learn from the first half; cost and refused units count from the half on; nothing is tuned
on either half: every setting is the product's default). The default model (no ensemble),
read + write summed.

Per trace and target it prints each policy's cost and refused units, the ratio
autopilot:T / stock:T, and where the autopilot's extra capacity-hours come from. The
decomposition turns the autopilot's parts off one at a time, in this order, each step
keeping the previous ones off (the difference each step makes is that part's share):

- ``forecast``: the plans (floors raised ahead of a forecast peak, the decreases kept for
  the day's falls, ``keep``: no decrease below what the plan needs soon, and the aim a
  good forecast allows above the target), as the product runs it (with its gate, where
  it has one: ``core.forecast.plan_floors``);
- ``settle``: a decrease never below the load of two minutes in three of the last half
  hour (``PolicyConfig.settle_minutes``);
- ``decrease rules``: a decrease must save 20 % and two decreases are kept for later in
  the UTC day (``min_saving_fraction``, ``reserve_decreases``);
- ``reaction``: what is left against stock target tracking (a tick every few minutes
  instead of alarms each minute, raises sized by the newest minutes, a decrease after 4 low
  minutes instead of 15, the minimum step of a throttled raise).

A share is in unit-hours (read + write) and dollars, positive where the part costs more.
(The owned target value, ``+owned``, belongs to ``autopilot+stock:T`` only: autopilot:T
sets capacity itself, so it has no share here.)

The traces: generated ones, seeded, with shapes the product was not tuned on (a smooth
diurnal swing, a nightly batch (noisy at its low level), a noisy diurnal swing with
bursts, and noisy flat traffic: lognormal noise around a level that triples halfway), and, when
``../shared/traces/`` exists, each real trace there (read in place: their licence forbids
copying them; 14 days a minute). A trace is *smooth* when its 5-minute steps are no
rougher than ``SMOOTH_NOISE`` (`trace_noise`: each step's distance from the mean of its
neighbours, the median over the median step, demand-weighted over the dimensions).

Goal (printed with PASS/MISS and the distance): on every smooth trace, at every target,
autopilot:T costs at most 1.0x stock:T at equal refusals (within ``NEGLIGIBLE_UNITS``
refused units, or 1 % of stock:T's). Where the autopilot refuses more, that is a miss;
where it refuses less at no more cost, that passes; where it refuses less at more cost,
the two are not at equal refusals: printed as a trade (its cost ratio for its refusal
ratio), not a miss. Noisy traces are judged the same way, for
information.

Against every setting, in the same run (for information, no goal): per trace, stock target
tracking at each target ``tune`` tries (``candidates.STOCK``: 30 to 90 %, step 10) and
on-demand, scored on the same second half. It prints the cheapest stock target refusing
nothing (under ``NEGLIGIBLE_UNITS``; where none does, the one refusing least) and
on-demand's cost and refused units.

``--quick`` (under two minutes on 2 cores): the generated traces only, 4 days each.

Usage:
    .venv/bin/python -m benchmarks.padding [--workers 2] [--days 14] [--traces DIR]
        [--targets 50,70,80,90] [--quick]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from benchmarks.right_bill import SHARED
from benchmarks.simulate_noisy_30_days import noisy_diurnal
from benchmarks.stock_rivals import cheapest_within
from ddb_capacity_tools.simulator import ModelParams, Prices, parse, read_csv, run_policy
from ddb_capacity_tools.simulator.candidates import ON_DEMAND, STOCK
from ddb_capacity_tools.simulator.policies import Spec
from ddb_capacity_tools.simulator.scenarios import START, diurnal, nightly_batch
from ddb_capacity_tools.simulator.trace import Trace, cut

TARGETS = (50, 70, 80, 90)
#: The seed of the generated traces (not the seeds the product's own benchmarks use).
SEED = 7
#: A trace rougher than this between its 5-minute steps (`trace_noise`) is noisy.
SMOOTH_NOISE = 0.05
STEP = 5
#: Refused units below this, or 1 % of stock:T's, are counted as equal.
NEGLIGIBLE_UNITS = 1_000
#: The autopilot's parts, turned off one after the other: (name, what the spec changes).
PARTS: tuple[tuple[str, dict[str, object]], ...] = (
    ("forecast", {"forecast": False}),
    ("settle", {"settle_minutes": 0}),
    ("decrease rules", {"min_saving_fraction": 0.0, "reserve_decreases": 0}),
)
REACTION = "reaction"
#: The settings every trace is also scored with: each stock target, then on-demand.
OTHERS = (*STOCK, ON_DEMAND)


def noisy_flat(seed: int, days: int) -> Trace:
    """Lognormal noise (sigma 0.25) around 3,000 RCU / 750 WCU, the level tripling halfway:
    traffic with no pattern to forecast."""
    rng = random.Random(seed)  # noqa: S311 (a reproducible trace, not a secret)
    minutes = days * 1440
    level = [1.0 if m < minutes // 2 else 3.0 for m in range(minutes)]
    reads = [3_000 * level[m] * rng.lognormvariate(0, 0.25) for m in range(minutes)]
    writes = [750 * level[m] * rng.lognormvariate(0, 0.25) for m in range(minutes)]
    return Trace(
        "noisy-flat",
        START,
        {(None, "read"): reads, (None, "write"): writes},
        notes=f"{days} days of noise (sigma 0.25) around a level that triples halfway",
    )


def generated(days: int) -> list[Trace]:
    """The generated traces, ``days`` long, seeded."""
    return [
        replace(diurnal(SEED, days), name="smooth-diurnal", schedule=None),
        replace(nightly_batch(SEED, days), name="nightly-batch", schedule=None),
        replace(noisy_diurnal(SEED, days), name="noisy-diurnal"),
        noisy_flat(SEED, days),
    ]


def load(folder: Path, days: int, quick: bool) -> tuple[list[Trace], str]:
    out = generated(4 if quick else days)
    if quick:
        return out, "--quick: the generated traces, 4 days each"
    if not folder.is_dir():
        return out, f"{folder} not found: no real traces"
    real = [cut(read_csv(p), days * 1440) for p in sorted(folder.glob("*.csv"))]
    named = [replace(t, name=t.name.removesuffix(".csv")) for t in real]
    return out + named, f"real traces read from {folder} ({len(real)})"


def trace_noise(trace: Trace) -> float:
    """How rough ``trace`` is between its 5-minute steps (the real traces' own resolution):
    per dimension, the median of each step's distance from the mean of its neighbours,
    over the median step; the dimensions weighed by their demand (infinite for a dimension
    mostly idle)."""
    total = weighed = 0.0
    for demand in trace.demand.values():
        starts = range(0, len(demand) - STEP + 1, STEP)
        steps = [sum(demand[i : i + STEP]) / STEP for i in starts]
        middle = statistics.median(steps) if steps else 0.0
        rough = [abs(b - (a + c) / 2) for a, b, c in zip(steps, steps[1:], steps[2:], strict=False)]
        weight = sum(demand)
        total += weight
        value = statistics.median(rough) / middle if middle > 0 and rough else math.inf
        weighed += weight * value if weight else 0.0
    return weighed / total if total else math.inf


def specs(target: int) -> list[Spec]:
    """stock:T, autopilot:T, then autopilot:T with each part off in turn (named
    ``autopilot:T -forecast``, ``... -settle`` and so on)."""
    base = parse(f"autopilot:{target}")
    out = [parse(f"stock:{target}"), base]
    forecast, tweaks, label = True, dict[str, object](), base.text
    for name, changes in PARTS:
        label = f"{label} -{name}"
        for field, value in changes.items():
            if field == "forecast":
                forecast = bool(value)
            else:
                tweaks[field] = value
        out.append(replace(base, text=label, forecast=forecast, tweaks=tuple(tweaks.items())))
    return out


@dataclass(frozen=True)
class Score:
    cost: float
    refused: float
    unit_hours: float


def _run(job: tuple[Spec, Trace]) -> Score:
    spec, trace = job
    results = run_policy(spec, trace, ModelParams(), Prices(), score_from=trace.minutes // 2)
    return Score(
        sum(r.cost_usd for r in results),
        sum(r.throttled_requests for r in results),
        sum(r.provisioned_unit_hours for r in results),
    )


Others = dict[str, dict[str, Score]]
"""Per trace, each setting of `OTHERS` and its score on the second half."""


def measure(
    traces: Sequence[Trace], targets: Sequence[int], workers: int
) -> tuple[dict[tuple[str, int], list[tuple[Spec, Score]]], Others]:
    """Per (trace, target): each spec of `specs` and its score on the second half; and per
    trace, each setting of `OTHERS` (a stock target among ``targets`` is not run twice)."""
    jobs = [
        (trace, target, spec) for trace in traces for target in targets for spec in specs(target)
    ]
    ran = {f"stock:{t}" for t in targets}
    extra = [(trace, parse(n)) for trace in traces for n in OTHERS if n not in ran]
    runs = [(spec, trace) for trace, _, spec in jobs] + [(spec, trace) for trace, spec in extra]
    with ProcessPoolExecutor(workers) as pool:
        done = list(pool.map(_run, runs))
    scores, more = done[: len(jobs)], done[len(jobs) :]
    out: dict[tuple[str, int], list[tuple[Spec, Score]]] = {}
    others: Others = {trace.name: {} for trace in traces}
    for (trace, target, spec), score in zip(jobs, scores, strict=True):
        out.setdefault((trace.name, target), []).append((spec, score))
        if spec.text == f"stock:{target}":
            others[trace.name][spec.text] = score
    for (trace, spec), score in zip(extra, more, strict=True):
        others[trace.name][spec.text] = score
    return out, others


def cheapest_stock(scores: dict[str, Score]) -> tuple[str, bool]:
    """The cheapest stock target refusing nothing (under `NEGLIGIBLE_UNITS`; and True), or,
    where none does, the one refusing least (and False)."""
    figures = {n: (scores[n].refused, scores[n].cost) for n in STOCK}
    return cheapest_within(figures, math.nextafter(NEGLIGIBLE_UNITS, 0))


def print_others(scores: dict[str, Score]) -> None:
    """The cheapest stock target refusing nothing (or fewest) and on-demand, for one trace."""
    best, clear = cheapest_stock(scores)
    said = "refusing nothing" if clear else "refusing least (none refuses nothing)"
    s, od = scores[best], scores[ON_DEMAND]
    print(
        f"  cheapest stock target {said}: {best} ${s.cost:,.2f}, {s.refused:,.0f} refused; "
        f"on-demand ${od.cost:,.2f}, {od.refused:,.0f} refused"
    )
    print(
        "  every stock target ($ / refused): "
        + "; ".join(f"{n} {scores[n].cost:,.2f} / {scores[n].refused:,.0f}" for n in STOCK)
    )


def verdict(auto: Score, stock: Score) -> str:
    """``equal`` (refusals within what is negligible), ``more`` or ``fewer``."""
    slack = max(NEGLIGIBLE_UNITS, 0.01 * stock.refused)
    if auto.refused > stock.refused + slack:
        return "more"
    return "fewer" if auto.refused < stock.refused - slack else "equal"


def decomposition(rows: list[tuple[Spec, Score]]) -> str:
    """Each part's share of autopilot:T's extra capacity (unit-hours, dollars)."""
    stock, chain = rows[0][1], [s for _, s in rows[1:]]
    names = [name for name, _ in PARTS] + [REACTION]
    parts = []
    for i, name in enumerate(names):
        after = chain[i + 1] if i + 1 < len(chain) else stock
        hours, cost = chain[i].unit_hours - after.unit_hours, chain[i].cost - after.cost
        parts.append(f"{name} {hours:+,.0f} uh/${cost:+,.2f}")
    return "; ".join(parts)


Verdict = tuple[int, float, str, float]  # target, cost ratio, refusals, refused ratio


def print_trace(
    name: str,
    smooth: bool,
    by: dict[tuple[str, int], list[tuple[Spec, Score]]],
    targets: Sequence[int],
) -> list[Verdict]:
    print(f"\n{name} ({'smooth' if smooth else 'noisy'})")
    print(
        f"  {'T':>3}{'stock $':>11}{'stock refused':>15}{'auto $':>11}{'auto refused':>15}"
        f"{'ratio':>8}  extra by cause (unit-hours / $)"
    )
    verdicts = []
    for target in targets:
        rows = by[(name, target)]
        stock, auto = rows[0][1], rows[1][1]
        ratio = auto.cost / stock.cost if stock.cost else math.inf
        refused = auto.refused / stock.refused if stock.refused else math.inf
        verdicts.append((target, ratio, verdict(auto, stock), refused))
        print(
            f"  {target:>3}{stock.cost:>11,.2f}{stock.refused:>15,.0f}{auto.cost:>11,.2f}"
            f"{auto.refused:>15,.0f}{ratio:>8.3f}  {decomposition(rows)}"
        )
    return verdicts


def goal(rows: list[tuple[str, bool, list[Verdict]]]) -> None:
    for label, which in (("smooth", True), ("noisy (for information)", False)):
        chosen = [(n, v) for n, s, vs in rows if s == which for v in vs]
        equal = [(n, t, r) for n, (t, r, how, _) in chosen if how == "equal"]
        more = [(n, t, r) for n, (t, r, how, _) in chosen if how == "more"]
        fewer = [(n, t, r, q) for n, (t, r, how, q) in chosen if how == "fewer" and r > 1.0]
        wins = sum(1 for _, (_, r, how, _) in chosen if how == "fewer" and r <= 1.0)
        misses = [(n, t, r) for n, t, r in equal if r > 1.0]
        worst = max((r for _, _, r in equal), default=0.0)
        ok = "PASS" if not misses and not more else "MISS"
        print(
            f"autopilot:T <= 1.0x stock:T at equal refusals, {label}: {ok}: {len(equal)} of "
            f"{len(chosen)} at equal refusals, worst {worst:.3f}x (distance {worst - 1:+.3f}); "
            f"{wins} refusing less at no more cost; {len(more)} refusing more; {len(fewer)} "
            "refusing less at more cost (a trade, not judged)"
        )
        for n, t, r in misses:
            print(f"    costs more: {n} at {t}: {r:.3f}x")
        for n, t, r in more:
            print(f"    refuses more: {n} at {t} ({r:.3f}x the cost)")
        for n, t, r, q in fewer:
            print(f"    refuses less: {n} at {t}: {r:.3f}x the cost for {q:.3f}x the refusals")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--days", type=int, default=14, help="days kept of each trace")
    parser.add_argument("--traces", type=Path, default=SHARED)
    parser.add_argument("--targets", default=",".join(map(str, TARGETS)))
    parser.add_argument("--quick", action="store_true", help="generated traces, 4 days")
    args = parser.parse_args(argv)
    targets = [int(t) for t in args.targets.split(",")]
    started = time.perf_counter()
    traces, said = load(args.traces, args.days, args.quick)
    print(
        f"padding: {len(traces)} traces; {said}; targets {targets}; scored on each trace's "
        f"second half; default model; read + write"
    )
    by, others = measure(traces, targets, args.workers)
    rows = []
    for trace in traces:
        smooth = trace_noise(trace) <= SMOOTH_NOISE
        rows.append((trace.name, smooth, print_trace(trace.name, smooth, by, targets)))
        print_others(others[trace.name])
    print()
    goal(rows)
    print(f"\n{time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()
