"""Reserved capacity planned with the scaler in the loop, planned on the first half and scored
on the second, measured in one run.

Two fleets (one account and Region each), planned by ``ddb-capacity reserve``'s code
(`ddb_capacity_tools.reserve`): each table's policy is the one ``tune`` recommends on the
first half (default candidates, the plausible ensemble), the fleet's hourly units under those
policies size the plan, and the plan is scored on the second half:

- **real**: the traces in ``../shared/traces/`` when that folder exists (read in place: their
  licence forbids copying them), moved to one common start (a fleet's traces cover the same
  minutes), 14 days a minute;
- **generated**: five seeded shapes the planner was never tuned on: a weekday office load with
  quiet weekends, diurnal traffic growing 40 % over the fortnight, diurnal traffic that falls
  by a third on day 10 (inside the scored half), a flat load with heavy noise, and a low base
  with rare bursts.

For each fleet and term (1 and 3 years), against the scored half's bills:

(a) the plan's bill <= 0.5 x stock:70's without a reservation, refusing no more than stock:70;
(b) the plan's bill <= 0.93 x the better anchor's: the level met in 95 % of ``--current``'s
    (stock:70's) planning hours, and the past-optimal level over those hours, each billed on
    the same scored hours as the plan;
(c) the fleet planned as one costs no more than its tables planned alone (each table's own
    plan on its own hours, summed).

Besides, the plan sized without the stated rule for uncertainty (the past-optimal level of
the recommended policies' own hours) is printed beside it, so the rule's price is seen.

With a Database Savings Plan beside the reservation (its hourly commitment planned on the
first half, given the reserved units), measured on the same scored halves:

(e) on five held-out spiky tables run on-demand (`spiky`: generated here, never tuned on),
    each planned alone and all planned as one fleet: the scored bill with the Savings Plan
    <= 0.93 x the bill without it over the fleet, and above it on no table;
(f) on the real fleet, one-year instruments: the plan's scored bill (the reservation and the
    Savings Plan) <= 0.65 x stock:70's without either (reserved capacity alone printed
    beside it);
(g) for each fleet and term, the plan's scored bill <= 1.03 x the plan best in hindsight
    (`savings_plan.hindsight`: the reservation and the commitment that would have cost least
    on the scored hours themselves).

(d) Planning 1,000 tables' 14 days: timed on 1,000 generated tables in 2 processes, with every
table on one policy (``--policy``: no tune per table), and the tune per table timed on one
table and multiplied out (printed as an estimate).

``--quick`` (for the test suite, seconds): the generated fleet cut to 3 days, every table on
stock:90; for (d), 20 tables of one day, and the tune per table timed on the stock targets and
on-demand only.

Usage:
    .venv/bin/python -m benchmarks.reserve_plan [--traces DIR] [--quick] [--tables 1000]
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from ddb_capacity_tools import reserve, reserve_sizing, savings_plan
from ddb_capacity_tools.simulator import read_csv
from ddb_capacity_tools.simulator.candidates import STOCK
from ddb_capacity_tools.simulator.progress import Progress
from ddb_capacity_tools.simulator.trace import Trace

START = datetime(2026, 1, 5, tzinfo=UTC)
"""Every fleet's common start (a Monday)."""
DAYS = 14
TERMS = ("1y", "3y")


def _day_shape(minute_of_day: int) -> float:
    """0 at 04:00, 1 at 16:00, smooth."""
    return 0.5 - 0.5 * math.cos(2 * math.pi * ((minute_of_day - 240) % 1440) / 1440)


def generated(days: int = DAYS) -> list[Trace]:
    """The five seeded shapes (see the module's docstring), ``days`` long."""
    minutes = days * 1440
    out = []

    def trace(name: str, level: list[float]) -> Trace:
        return Trace(
            name,
            START,
            {(None, "read"): level, (None, "write"): [0.3 * v for v in level]},
        )

    rng = random.Random(7)  # noqa: S311 (reproducible traffic)
    office = []
    for m in range(minutes):
        weekday = (m // 1440) % 7 < 5
        hour = (m % 1440) / 60
        busy = 1.0 if weekday and 8 <= hour < 18 else 0.15 if weekday else 0.08
        office.append(3_000 * busy * rng.lognormvariate(0, 0.15) + 100)
    out.append(trace("gen-office", office))
    out.append(
        trace(
            "gen-growing",
            [
                (800 + 2_400 * _day_shape(m % 1440))
                * (1 + 0.4 * m / minutes)
                * rng.lognormvariate(0, 0.1)
                for m in range(minutes)
            ],
        )
    )
    fall_at = 10 * 1440
    out.append(
        trace(
            "gen-falling",
            [
                (1_500 + 1_500 * _day_shape(m % 1440))
                * (2 / 3 if m >= fall_at else 1)
                * rng.lognormvariate(0, 0.1)
                for m in range(minutes)
            ],
        )
    )
    out.append(
        trace("gen-flat-noisy", [1_200 * rng.lognormvariate(0, 0.35) for _ in range(minutes)])
    )
    bursty, left = [], 0
    for _ in range(minutes):
        if left == 0 and rng.random() < 1 / 720:
            left = rng.randint(5, 40)
        bursty.append(150 * rng.lognormvariate(0, 0.2) * (8 if left else 1))
        left = max(0, left - 1)
    out.append(trace("gen-bursty", bursty))
    return out


def real(folder: Path, days: int = DAYS) -> list[Trace]:
    """The real traces, moved to `START` and cut to ``days``."""
    traces = []
    for path in sorted(folder.glob("*.csv")):
        t = read_csv(path)
        traces.append(
            replace(
                t,
                name=path.stem,
                start=START,
                demand={k: v[: days * 1440] for k, v in t.demand.items()},
            )
        )
    n = min(t.minutes for t in traces)
    return [replace(t, demand={k: v[:n] for k, v in t.demand.items()}) for t in traces]


def _score(plan: reserve.Plan, units: dict[str, int], term: str) -> float:
    assert plan.score is not None
    return reserve_sizing.fleet_bill(plan.score, units, term, plan.prices)


def _alone(tables: Sequence[reserve.TableHours], term: str, setup: reserve.Setup) -> float:
    """Each table's own plan on its own scored hours, summed."""
    total = 0.0
    for t in tables:
        own = reserve.plan_fleet([t], [term], setup)
        total += _score(own, own.units if own.term else {}, term)
    return total


def _verdict(ok: bool, value: float, goal: float) -> str:
    return f"{'PASS' if ok else 'MISS'} ({value:.3f} against {goal})"


def fleet_report(name: str, tables: list[reserve.TableHours], setup: reserve.Setup) -> list[bool]:
    """Print one fleet's goals (a) to (c) for each term; the verdicts."""
    out = []
    print(f"\n== fleet {name}: {len(tables)} tables ==")
    for term in TERMS:
        plan = reserve.plan_fleet(tables, [term], setup)
        print(f"\n  term {term}: each table's policy (at list prices, when another)")
        for t in tables:
            policy = plan.policies[t.name]
            listed = "" if policy == t.listed.policy else f" ({t.listed.policy})"
            print(f"    {t.name:<28} {policy}{listed}")
        assert plan.score is not None and plan.current_score is not None
        units = plan.units if plan.term else {}
        ours = _score(plan, units, term)
        stock70 = reserve_sizing.fleet_bill(plan.current_score, {}, None, plan.prices)
        assert plan.listed_score is not None
        no_plan = reserve_sizing.fleet_bill(plan.listed_score, {}, None, plan.prices)
        anchors = reserve_sizing.anchors(plan.current, term, plan.prices)
        anchor_bills = {rule: _score(plan, u, term) for rule, u in anchors.items()}
        better = min(anchor_bills.values())
        raw = reserve_sizing.size(plan.plan, term, plan.prices, futures=(1.0,))
        raw_bill = _score(plan, raw, term)
        capped = reserve_sizing.no_regret(plan.plan, term, plan.prices)
        capped_bill = _score(plan, capped, term)
        alone = _alone(tables, term, setup)
        hindsight = reserve_sizing.size(plan.score, term, plan.prices, futures=(1.0,))
        hindsight_bill = _score(plan, hindsight, term)
        own_world = {
            rule: reserve_sizing.fleet_bill(plan.current_score, u, term, plan.prices)
            for rule, u in anchors.items()
        }
        refused, refused70 = plan.refused, plan.current_refused
        a = ours <= 0.5 * stock70 and refused <= refused70
        b = ours <= 0.93 * better
        c = ours <= alone + 1e-6
        print(
            f"  plan {units.get('read', 0):,} read / {units.get('write', 0):,} "
            f"write units; scored bill ${ours:,.2f}\n"
            f"    stock:70, no reservation ${stock70:,.2f}; the listed policies, no reservation "
            f"${no_plan:,.2f}\n"
            f"    refused: {refused:,.0f} units (these policies) against {refused70:,.0f} "
            f"(stock:70)\n"
            + "".join(
                f"    anchor {rule}: {anchors[rule]['read']:,} / {anchors[rule]['write']:,} "
                f"-> ${bill_:,.2f}\n"
                for rule, bill_ in anchor_bills.items()
            )
            + f"    hindsight (the level best for the scored hours themselves): "
            f"{hindsight['read']:,} / {hindsight['write']:,} -> ${hindsight_bill:,.2f} "
            f"({hindsight_bill / better:.3f} x the better anchor: no sizing can do better)\n"
            + "".join(
                f"    anchor {rule} on stock:70's own scored hours (its policy kept): "
                f"${bill_:,.2f} ({ours / bill_:.3f})\n"
                for rule, bill_ in own_world.items()
            )
            + f"    without the rule for uncertainty: {raw['read']:,} / {raw['write']:,} -> "
            f"${raw_bill:,.2f}\n"
            f"    past-optimal, cut to break even at a third less traffic: {capped['read']:,} / "
            f"{capped['write']:,} -> ${capped_bill:,.2f}\n"
            f"    tables planned alone, summed: ${alone:,.2f}\n"
            f"    (a) <= 0.5 x stock:70, refusing no more: "
            f"{_verdict(a, ours / stock70 if stock70 else 0, 0.5)}"
            f"{'' if refused <= refused70 else ' (refuses more)'}\n"
            f"    (b) <= 0.93 x the better anchor: "
            f"{_verdict(b, ours / better if better else 0, 0.93)}\n"
            f"    (c) fleet <= tables alone: {_verdict(c, ours / alone if alone else 0, 1.0)}"
        )
        out += [a, b, c, *_with_savings_plan(name, plan, term, stock70)]
    return out


def _with_savings_plan(name: str, plan: reserve.Plan, term: str, stock70: float) -> list[bool]:
    """Print (f) and (g) for one fleet's plan of ``term``; the verdicts ((f) for the real
    fleet's one-year plan only)."""
    assert plan.score is not None
    units = plan.units if plan.term else {}
    hourly = plan.savings_plan_hourly
    reserved_only = _score(plan, units, term)
    both = savings_plan.fleet_bill_with(plan.score, units, term, plan.prices, hourly)
    best_units, best_hourly, best = savings_plan.hindsight(plan.score, term, plan.prices)
    g = both <= 1.03 * best
    print(
        f"    with a Savings Plan of ${hourly:,.4f} an hour (planned on the first half): "
        f"${both:,.2f} ({both / reserved_only if reserved_only else 1:.3f} x the reservation "
        f"alone, {both / stock70 if stock70 else 0:.3f} x stock:70 without either)\n"
        f"    hindsight with both: {best_units['read']:,} / {best_units['write']:,}, "
        f"${best_hourly:,.4f} an hour -> ${best:,.2f}\n"
        f"    (g) <= 1.03 x hindsight with both: {_verdict(g, both / best if best else 1, 1.03)}"
    )
    if name != "real" or term != "1y":
        return [g]
    f = both <= 0.65 * stock70
    print(
        f"    (f) real fleet, one year, <= 0.65 x stock:70 without either: "
        f"{_verdict(f, both / stock70 if stock70 else 0, 0.65)} (reserved capacity alone: "
        f"{reserved_only / stock70 if stock70 else 0:.3f})"
    )
    return [f, g]


def _spike(rng: random.Random, base: float, every: int, height: float, length: int) -> list[float]:
    """A load of ``base`` (lognormal noise) with spikes ``height`` times it, ``length``
    minutes long, one every ``every`` minutes on average, and a diurnal swing of a half."""
    out, left = [], 0
    for m in range(DAYS * 1440):
        if left == 0 and rng.random() < 1 / every:
            left = rng.randint(max(1, length // 2), length * 2)
        day = 0.75 + 0.5 * _day_shape(m % 1440)
        out.append(base * day * rng.lognormvariate(0, 0.25) * (height if left else 1))
        left = max(0, left - 1)
    return out


def spiky(days: int = DAYS) -> list[Trace]:
    """Five seeded spiky tables, for on-demand (seed 11: not the planner's generated
    fleet): short frequent spikes, rare tall ones, hourly batch bursts, a weekday load with
    spikes, and a small table with spikes of twenty times its base."""
    rng = random.Random(11)  # noqa: S311 (reproducible traffic)
    shapes = {
        "spiky-frequent": _spike(rng, 400, 90, 5, 6),
        "spiky-tall": _spike(rng, 900, 1_440, 15, 30),
        "spiky-batch": [
            v * (8 if m % 180 < 12 else 1) for m, v in enumerate(_spike(rng, 250, 10**9, 1, 1))
        ],
        "spiky-weekdays": [
            v * (1 if (m // 1440) % 7 < 5 else 0.3)
            for m, v in enumerate(_spike(rng, 1_200, 240, 4, 10))
        ],
        "spiky-small": _spike(rng, 40, 360, 20, 5),
    }
    return [
        Trace(
            name,
            START,
            {(None, "read"): level[: days * 1440], (None, "write"): [0.4 * v for v in level]},
        )
        for name, level in shapes.items()
    ]


def savings_on_demand(days: int, processes: int) -> list[bool]:
    """(e): the spiky tables (`spiky`) on on-demand, the Savings Plan planned on the first
    half, scored on the second: alone per table and as one fleet."""
    traces = [
        replace(t, demand={k: v[: days * 1440] for k, v in t.demand.items()}) for t in spiky(days)
    ]
    setup = reserve.Setup(policy="on-demand")
    split = traces[0].minutes // 2
    tables = reserve.plan_tables(traces, split, setup, processes, Progress.on(sys.stderr))
    print(f"\n== (e) {len(tables)} held-out spiky tables on on-demand, planned alone ==")
    never_above = True
    for t in tables:
        with_, without = _sp_bills(reserve.plan_fleet([t], ["1y"], setup))
        never_above = never_above and with_ <= without + 1e-9
        print(
            f"    {t.name:<16} ${without:,.2f} without, ${with_:,.2f} with "
            f"({with_ / without if without else 1:.3f})"
        )
    with_, without = _sp_bills(reserve.plan_fleet(tables, ["1y"], setup))
    ok = with_ <= 0.93 * without and never_above
    print(
        f"    fleet planned as one: ${without:,.2f} without, ${with_:,.2f} with\n"
        f"    (e) <= 0.93 x without, above it on no table: "
        f"{_verdict(ok, with_ / without if without else 1, 0.93)}"
        f"{'' if never_above else ' (above on a table)'}"
    )
    return [ok]


def _sp_bills(plan: reserve.Plan) -> tuple[float, float]:
    """A plan's scored bill with its Savings Plan and without it (its reservation kept)."""
    assert plan.score is not None
    units, term = (plan.units, plan.term) if plan.term else ({}, None)
    without = reserve_sizing.fleet_bill(plan.score, units, term, plan.prices)
    with_ = savings_plan.fleet_bill_with(
        plan.score, units, term, plan.prices, plan.savings_plan_hourly
    )
    return with_, without


def generated_fleet(count: int, days: int) -> list[Trace]:
    """``count`` generated tables of ``days`` days: the five shapes (`generated`) in turn, the
    n-th scaled by 0.5 + (n % 10) / 10, named ``t0000``, ``t0001``, ..."""
    shapes = generated(days)
    return [
        replace(
            shapes[n % len(shapes)],
            name=f"t{n:04d}",
            demand={
                k: [v * (0.5 + (n % 10) / 10) for v in s]
                for k, s in shapes[n % len(shapes)].demand.items()
            },
        )
        for n in range(count)
    ]


def timing(count: int, days: int, processes: int, tune: reserve.Setup | None = None) -> None:
    """(d): ``count`` generated tables (`generated_fleet`) planned on one policy, timed; and
    tune on one table (with ``tune``'s candidates: by default, the default candidates),
    multiplied out."""
    fleet = generated_fleet(count, days)
    split = fleet[0].minutes // 2
    setup = reserve.Setup(policy="stock:90")
    began = time.perf_counter()
    tables = reserve.plan_tables(fleet, split, setup, processes, Progress.on(sys.stderr))
    plan = reserve.plan_fleet(tables, list(TERMS), setup)
    spent = time.perf_counter() - began
    print(
        f"\n(d) {count:,} tables x {days} days on stock:90, {processes} processes: "
        f"{spent:,.1f} s ({'PASS' if spent < 600 * count / 1000 else 'MISS'} against 600 s "
        f"for 1,000); plan {plan.term} {plan.units}"
    )
    began = time.perf_counter()
    reserve.plan_tables(fleet[:1], split, tune or reserve.Setup(), 1, None)
    one = time.perf_counter() - began
    which = "" if tune is None else f", candidates {', '.join(tune.candidates)} and on-demand"
    print(
        f"    tune per table (one table, one process{which}): {one:,.1f} s; 1,000 tables in "
        f"{processes} processes: about {one * 1000 / processes / 60:,.0f} minutes (estimate)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traces", default="../shared/traces", help="the real traces' folder")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--tables", type=int, default=1000, help="tables timed for (d)")
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args(argv)
    days = 3 if args.quick else DAYS
    setup = reserve.Setup(policy="stock:90") if args.quick else reserve.Setup()
    fleets = {"generated": generated(days)}
    folder = Path(args.traces)
    if args.quick:
        pass
    elif folder.is_dir() and any(folder.glob("*.csv")):
        fleets["real"] = real(folder, days)
    else:
        print(f"no real traces: {folder} does not exist or holds no CSV")
    verdicts = []
    for name, traces in fleets.items():
        split = traces[0].minutes // 2
        tables = reserve.plan_tables(traces, split, setup, args.processes, Progress.on(sys.stderr))
        verdicts += fleet_report(name, tables, setup)
    verdicts += savings_on_demand(days, args.processes)
    if args.quick:
        timing(20, 1, args.processes, reserve.Setup(candidates=STOCK))
    else:
        timing(args.tables, DAYS, args.processes)
    print(f"\n{sum(verdicts)} of {len(verdicts)} fleet goals met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
