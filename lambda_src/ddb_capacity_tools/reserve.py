"""Runs in: workstation (the `ddb-capacity` command).

``ddb-capacity reserve``: how much reserved capacity a fleet of tables (one account and
Region) should buy, with the scaler in the loop (docs: Reserved capacity).

Each table's policy is the one ``tune`` recommends on the planning part of its history (or
the one ``--policy`` names); ``tune``'s rule also chooses again among the same runs with
provisioned units at the reserved rate (`_recommend`), and the fleet switches a table to
that choice where, with the reservation sized again, its bill is less (`_choose`). That
policy runs over the table's whole history (it sees only the past, so what it does on the
planning part is what it would have done on that part alone), as does the policy that made
the past bill (``--current``). Their provisioned units are billed by the hour as AWS bills
them (`hourly`: an hour's units are the highest level provisioned in it, per table and GSI,
summed over the fleet), read and write apart.

The plan (`no_regret`) is, per dimension, the number of 100-unit blocks that would have
cost least over the planning part under the recommended policies, cut to the most blocks
that would still cost no more than no reservation at all if traffic fell by a third
(`FALL`). A reservation runs for a year or three; the history for days or weeks: the rule
for that uncertainty is that the plan never loses money against buying every unit at the
list price while traffic stays within a third below the history, and it does not assume
that traffic grows (units above a reservation are bought hour by hour at the list price,
which loses nothing but the discount). Of the terms asked for, the one whose bill over the
planning part is least is the plan's; none when no block pays. (`size` over `FUTURES`, the
mean bill over traffic as it was, a sixth and a third lower, is the rule the benchmark sets
beside it: it bought less and was beaten on the scored halves.)

Every hour of a part is weighted by the minutes of it the part holds, so a part that begins
or ends within an hour bills that hour for those minutes only. A minute provisioned at 0 is
an on-demand minute (an on-demand or hybrid recommendation): its requests are billed at the
on-demand price, outside any reservation.

The anchors (`anchors`) size the same reservation the way others do, from ``--current``'s
hours on the planning part: the level met in 95 % of hours, rounded down to blocks
(`NOPS_SHARE`), and the level that would have cost least over those hours (past-optimal).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from typing import Any

from . import savings_plan
from .reserve_sizing import (
    DIMENSIONS,
    FALL,
    MIN_PART_MINUTES,
    Hours,
    anchors,
    fleet_bill,
    hourly,
    no_regret,
)
from .simulator.candidates import (
    CANDIDATES,
    MONTH_HOURS,
    ON_DEMAND,
    Candidate,
    Rule,
    spec_of,
    tried,
)
from .simulator.ensemble import settings_of
from .simulator.params import ModelParams
from .simulator.policies import COMPOSED, DEFAULT_TICK_MINUTES
from .simulator.prices import BLOCK_UNITS, SAVINGS_PLAN_HOURS, TERMS, Prices, unverified
from .simulator.progress import Progress, step
from .simulator.text import counted
from .simulator.trace import Trace
from .simulator.trace import cut as cut_trace
from .simulator.tune import validate, validation_split
from .simulator.tune_runs import place_split, run_candidate
from .tool_errors import ReserveError as ReserveError

__all__ = [
    "Plan",
    "ReserveError",
    "Setup",
    "TableHours",
    "as_json",
    "check_fleet",
    "check_split",
    "figures",
    "plan_fleet",
    "plan_table",
    "prices_json",
    "plan_tables",
    "summary",
]


@dataclass(frozen=True)
class Setup:
    """What every table of a plan is run with."""

    current: str = "stock:70"
    policy: str | None = None
    """Every table's policy; None: each table's recommendation by ``tune`` on the planning
    part."""
    policies: dict[str, str] = field(default_factory=dict)
    """Per table name, its policy (a fleet report's recommendation); a table not named here
    gets ``policy``, or tune's recommendation."""
    candidates: tuple[str, ...] = CANDIDATES
    ensemble: str = "plausible"
    params: ModelParams = field(default_factory=ModelParams)
    prices: Prices = field(default_factory=Prices)
    tick: int = DEFAULT_TICK_MINUTES
    rule: Rule = field(default_factory=Rule)
    hours: dict[str, tuple[bool, ...]] = field(default_factory=dict)
    """Per policy, declared windows' hours as tune's pick learned them (`Candidate.hours`):
    run at those rather than learned again; a policy not here learns its own."""
    savings_plan: bool = True
    """Plan a Database Savings Plan beside the reservation (`savings_plan.commitment`);
    False: reserved capacity alone (``--no-savings-plan``)."""
    prune: bool = True
    """Tune prunes (`tune_prune`): a library candidate beaten on both counts in the first
    setting's run is not run under the others."""


@dataclass(frozen=True)
class Run:
    """One table under one policy: its hours on the planning and the scored parts (None:
    not scored) and the units it refused on the scored part."""

    policy: str
    plan: Hours
    score: Hours | None
    refused: float


@dataclass(frozen=True)
class TableHours:
    """One table: the policy tune recommends at the list prices (``listed``), the one it
    recommends where provisioned units cost the reserved rate (``reserved``; None: the same
    policy, or ``--policy`` was given), the same under ``--current`` (``current``), and
    tune's warnings."""

    name: str
    listed: Run
    current: Run
    reserved: Run | None = None
    warnings: tuple[str, ...] = ()
    replicated: bool = False
    """A global table's replica: its write units are replicated writes, billed outside any
    reservation (`replicated_writes`), so its runs hold none of them as reservable."""
    infrequent: bool = False
    """A table of the Standard-Infrequent Access class: reserved capacity covers the
    Standard class only (`infrequent_access`), so its runs hold none of its units as
    reservable."""

    def run(self, switched: bool) -> Run:
        """The reserved-price run when ``switched`` and there is one, else the listed."""
        return self.reserved if switched and self.reserved is not None else self.listed


def replicated_writes(table: TableHours, prices: Prices) -> TableHours:
    """``table`` as a global table's replica: its write units billed at the list price in
    every run, none of them reservable (`Hours.unreserved`)."""
    return replace(_unreserved(table, {"write": prices.unit_hour("write")}), replicated=True)


def infrequent_access(table: TableHours, prices: Prices) -> TableHours:
    """``table`` as a table of the Standard-Infrequent Access class: its units billed at
    that class's price (``prices.ia_throughput_factor`` times the list price) in every run,
    none of them reservable (reserved capacity covers the Standard class only)."""
    factor = prices.ia_throughput_factor
    rates = {d: prices.unit_hour(d) * factor for d in DIMENSIONS}
    return replace(_unreserved(table, rates), infrequent=True)


def left_out(
    table: TableHours, prices: Prices, *, infrequent: bool, replicated: bool
) -> TableHours:
    """``table`` with what a reservation never covers left out of it: all its units when
    it is of the Standard-Infrequent Access class (`infrequent_access`), then its writes
    when it is a global table's replica (`replicated_writes`: nothing more for a table both
    are true of, its writes already left out at that class's price)."""
    if infrequent:
        table = infrequent_access(table, prices)
    if replicated:
        table = replicated_writes(table, prices)
    return table


def _unreserved(table: TableHours, rates: Mapping[str, float]) -> TableHours:
    """``table`` with each dimension of ``rates`` billed at its rate outside any
    reservation, in every run."""

    def hours(part: Hours) -> Hours:
        for dimension, rate in rates.items():
            part = part.unreserved(dimension, rate)
        return part

    def unreserved(run: Run) -> Run:
        score = None if run.score is None else hours(run.score)
        return replace(run, plan=hours(run.plan), score=score)

    reserved = None if table.reserved is None else unreserved(table.reserved)
    return replace(
        table, listed=unreserved(table.listed), current=unreserved(table.current), reserved=reserved
    )


RESERVED_TERM = "1y"
"""The term whose rate prices provisioned units when each table's policy is chosen again as
if its units were reserved (`_recommend`): the dearer of the two, so the choice is the
conservative one."""


def _at_rate(c: Candidate, factor: float) -> Candidate:
    """``c`` with its capacity's cost times ``factor`` when it is a provisioned policy (its
    one-time charge, what the library's functions cost to run, and on-demand's and the
    hybrid's costs, as they were)."""
    if c.policy == ON_DEMAND or spec_of(c.policy).kind in COMPOSED:
        return c
    return replace(c, cost_usd=c.cost_usd.scaled(factor, (c.once_usd or 0.0) + c.running_usd))


def _recommend(
    trace: Trace, split: int, setup: Setup, progress: Progress | None = None
) -> tuple[str, str, tuple[str, ...], dict[str, tuple[bool, ...]]]:
    """The policy tune recommends on ``trace``'s minutes before ``split`` at the list prices,
    the one it recommends where every provisioned unit costs the reserved rate of
    `RESERVED_TERM` (the same runs, chosen again), and tune's warnings; progress on
    ``progress``, a step a run."""
    planning = cut_trace(trace, split)
    settings = settings_of(setup.ensemble, setup.params, planning)
    names = tried(setup.candidates, settings[0])
    cut = validation_split(planning)
    early, later = place_split(
        planning,
        names,
        settings,
        setup.prices,
        setup.tick,
        1,
        cut,
        progress,
        "reserve",
        prune=setup.prune,
        rule=setup.rule,
    )
    listed = validate(early, later, setup.rule, planning, settings[0], cut)
    factor = max(
        setup.prices.break_even(RESERVED_TERM, d) for d in DIMENSIONS
    )  # the reserved rate / the list price
    cheaper = validate(
        [_at_rate(c, factor) for c in early],
        [_at_rate(c, factor) for c in later],
        setup.rule,
        planning,
        settings[0],
        cut,
    )
    hours = {t.recommended.policy: t.recommended.hours for t in (listed, cheaper)}
    return listed.recommended.policy, cheaper.recommended.policy, listed.warnings, hours


def _run(name: str, trace: Trace, split: int, setup: Setup) -> Run:
    """The candidate ``name`` run as tune runs it (`tune_runs.run_candidate`: a pre-warmed
    one warmed, one with the stream given it), its hours on each part."""
    params = setup.params.for_trace(trace)
    scored = split if 0 < split < trace.minutes else None  # results count from the scored part
    ran = run_candidate(
        name,
        trace,
        params,
        setup.prices,
        tick=setup.tick,
        score_from=scored,
        hours=setup.hours.get(name, ()),
    )
    end, prices = trace.minutes, setup.prices
    return Run(
        name,
        hourly(ran, trace, 0, split, prices, params.billing),
        hourly(ran, trace, split, end, prices, params.billing) if scored else None,
        sum(r.throttled_requests for r in ran) if scored else 0.0,
    )


def plan_table(
    trace: Trace, split: int, setup: Setup, progress: Progress | None = None
) -> TableHours:
    """One table's hours under its policy (and its policy at reserved prices, when another)
    and under ``setup.current``: the planning part is minutes 0 to ``split`` (the whole
    trace when ``split`` is its length); progress on ``progress``, a step a tune run."""
    warnings: tuple[str, ...] = ()
    given = setup.policies.get(trace.name, setup.policy)
    if given is not None:
        listed, cheaper = given, given
    else:
        listed, cheaper, warnings, hours = _recommend(trace, split, setup, progress)
        setup = replace(setup, hours={**setup.hours, **hours})
    runs: dict[str, Run] = {}
    for name in dict.fromkeys([listed, cheaper, setup.current]):
        runs[name] = _run(name, trace, split, setup)
    return TableHours(
        trace.name,
        runs[listed],
        runs[setup.current],
        None if cheaper == listed else runs[cheaper],
        warnings,
    )


def check_fleet(traces: Sequence[Trace], labels: Sequence[str]) -> None:
    """A [`ReserveError`][] unless every trace covers the same minutes (one account and
    Region's hours are billed together)."""
    first = traces[0]
    for trace, label in zip(traces[1:], labels[1:], strict=True):
        if trace.start != first.start or trace.minutes != first.minutes:
            raise ReserveError(
                f"--trace {label}: got {_window(trace)}; expected the same minutes as "
                f"{labels[0]} ({_window(first)}): a fleet's traces cover one window"
            )


def _window(trace: Trace) -> str:
    return f"{trace.start:%Y-%m-%dT%H:%MZ} + {counted(trace.minutes, 'minute')}"


def check_split(split: int, minutes: int, scored: bool) -> None:
    """A [`ReserveError`][] unless both parts hold `MIN_PART_MINUTES`."""
    if split < MIN_PART_MINUTES or (scored and minutes - split < MIN_PART_MINUTES):
        raise ReserveError(
            f"--score-from: got minute {split:,} of {minutes:,}; expected a time that leaves "
            f"at least {MIN_PART_MINUTES} minutes before it (to plan on) and after it (to "
            f"score on)"
        )


def plan_tables(
    traces: Sequence[Trace],
    split: int,
    setup: Setup,
    processes: int | None = None,
    progress: Progress | None = None,
) -> list[TableHours]:
    """Every table's hours (`plan_table`), in ``processes`` processes (default the CPU
    count), in the order given; progress on ``progress``, a step a table (a tune run, for
    one table)."""
    processes = min(processes or os.cpu_count() or 1, len(traces))
    total = len(traces)
    if total == 1:
        return [plan_table(traces[0], split, setup, progress)]
    step(progress, "reserve", 0, total, "tables", "")
    if processes <= 1:
        out = []
        for n, trace in enumerate(traces, 1):
            out.append(plan_table(trace, split, setup))
            step(progress, "reserve", n, total, "tables", trace.name[:40])
        return out
    done: dict[int, TableHours] = {}
    with ProcessPoolExecutor(processes) as pool:
        jobs = {pool.submit(plan_table, t, split, setup): n for n, t in enumerate(traces)}
        for job in as_completed(jobs):
            done[jobs[job]] = job.result()
            step(progress, "reserve", len(done), total, "tables", traces[jobs[job]].name[:40])
    return [done[n] for n in range(total)]


def _sum(parts: Sequence[Hours | None]) -> Hours | None:
    """The parts' hours added up (None when every part is None)."""
    kept = [p for p in parts if p is not None]
    if not kept:
        return None
    total = kept[0]
    for p in kept[1:]:
        total = total + p
    return total


@dataclass(frozen=True)
class Plan:
    """A fleet's plan: the term (None: no reservation) and units per dimension; per term
    asked for, its own sizing, bill over the planning part and the tables it switched to
    their reserved-price policy; the tables, the policy each runs under the plan, and the
    fleet's hours under those policies and under ``--current``."""

    term: str | None
    units: dict[str, int]
    by_term: dict[str, dict[str, Any]]
    tables: list[TableHours]
    policies: dict[str, str]
    plan: Hours
    score: Hours | None
    listed: Hours
    """the planning part's hours with every table on its listed policy (no reservation's
    bill: what the fleet runs without the plan)"""
    listed_score: Hours | None
    current: Hours
    current_score: Hours | None
    refused: float
    current_refused: float
    prices: Prices
    setup: Setup
    savings_plan_hourly: float = 0.0
    """The Database Savings Plan's hourly commitment beside the reservation (0: none)."""


def _choose(
    tables: Sequence[TableHours], term: str, prices: Prices
) -> tuple[set[str], dict[str, int], float]:
    """For ``term``: the tables switched to their reserved-price policy, the reserved units
    (`no_regret`) and the bill over the planning part. Every table starts on its listed
    policy; in turn, each table with another policy at reserved prices is switched when
    that, with the reservation sized again, lowers the fleet's bill."""
    hours = _sum([t.listed.plan for t in tables])
    assert hours is not None
    units = no_regret(hours, term, prices)
    least = fleet_bill(hours, units, term, prices)
    switched: set[str] = set()
    for t in tables:
        if t.reserved is None:
            continue
        trial = hours - t.listed.plan + t.reserved.plan
        trial_units = no_regret(trial, term, prices)
        trial_bill = fleet_bill(trial, trial_units, term, prices)
        if trial_bill < least - 1e-9:
            hours, units, least = trial, trial_units, trial_bill
            switched.add(t.name)
    return switched, units, least


def _best_term(
    tables: Sequence[TableHours], terms: Sequence[str], prices: Prices, listed: Hours
) -> tuple[str | None, dict[str, dict[str, Any]]]:
    """For each term of ``terms``, the tables' policies and reserved units (`_choose`), and
    the term whose bill over the planning part is least, against no reservation with every
    table on its listed policy (``listed``; None when no block pays)."""
    by_term: dict[str, dict[str, Any]] = {}
    best: tuple[float, str | None] = (fleet_bill(listed, {}, None, prices), None)
    for each in terms:
        switched, units, least = _choose(tables, each, prices)
        by_term[each] = {"units": units, "expected_usd": least, "switched": sorted(switched)}
        if any(units.values()) and least < best[0] - 1e-9:
            best = (least, each)
    return best[1], by_term


def plan_fleet(tables: Sequence[TableHours], terms: Sequence[str], setup: Setup) -> Plan:
    """The fleet's plan from its tables' hours: for each term of ``terms``, the tables'
    policies (`_choose`) and the reserved units (`no_regret`); of those, the term whose
    bill over the planning part is least, against no reservation with every table on its
    listed policy (none when no block pays); then, given the reserved units, the Savings
    Plan's hourly commitment that costs least over the planning part
    (`savings_plan.commitment`; none with ``setup.savings_plan`` False)."""
    prices = setup.prices
    listed = _sum([t.listed.plan for t in tables])
    assert listed is not None
    term, by_term = _best_term(tables, terms, prices, listed)
    chosen = set(by_term[term]["switched"]) if term is not None else set()
    runs = [t.run(t.name in chosen) for t in tables]
    current = _sum([t.current.plan for t in tables])
    assert current is not None
    units = by_term[term]["units"] if term else {d: 0 for d in DIMENSIONS}
    hours = _sum([r.plan for r in runs]) or listed
    return Plan(
        term,
        units,
        by_term,
        list(tables),
        {t.name: r.policy for t, r in zip(tables, runs, strict=True)},
        hours,
        _sum([r.score for r in runs]),
        listed,
        _sum([t.listed.score for t in tables]),
        current,
        _sum([t.current.score for t in tables]),
        sum(r.refused for r in runs),
        sum(t.current.refused for t in tables),
        prices,
        setup,
        savings_plan.commitment(hours, units, term, prices) if setup.savings_plan else 0.0,
    )


def _monthly(value: float, hours: Hours) -> float:
    return value * MONTH_HOURS / hours.hours if hours.hours else 0.0


def _judged(plan: Plan) -> Hours:
    """The hours a plan's figures are given on: the scored part's, else the planning
    part's."""
    return plan.score if plan.score is not None else plan.plan


def figures(plan: Plan) -> dict[str, Any]:
    """The plan's monthly dollars with it (both instruments), with the reservation alone and
    without either (and with traffic a third lower), its upfront fee, the Savings Plan's
    commitment, the break-even utilization, the anchors' sizes and bills, and on the scored
    part the plan best in hindsight."""
    hours, prices, term = _judged(plan), plan.prices, plan.term
    listed = plan.listed_score if plan.score is not None else plan.listed
    assert listed is not None
    hourly = plan.savings_plan_hourly

    def with_plan(factor: float = 1.0) -> float:
        return savings_plan.fleet_bill_with(hours, plan.units, term, prices, hourly, factor)

    without = fleet_bill(listed, {}, None, prices)
    reserved_only = fleet_bill(hours, plan.units, term, prices)
    fall_without = fleet_bill(listed, {}, None, prices, FALL)
    sized = term or "1y"
    anchor = anchors(plan.current, sized, prices)
    out: dict[str, Any] = {
        "judged_on": "scored" if plan.score is not None else "planning",
        "monthly_usd": {
            "with_plan": round(_monthly(with_plan(), hours), 2),
            "reservation_only": round(_monthly(reserved_only, hours), 2),
            "without_plan": round(_monthly(without, hours), 2),
        },
        "fall_by_third_monthly_usd": {
            "with_plan": round(_monthly(with_plan(FALL), hours), 2),
            "without_plan": round(_monthly(fall_without, hours), 2),
        },
        "upfront_usd": round(_upfront(plan.units, term, prices), 2),
        "savings_plan_monthly_usd": round(hourly * MONTH_HOURS, 2),
        "break_even": {
            t: {d: round(prices.break_even(t, d), 4) for d in DIMENSIONS} for t in TERMS
        },
        "anchors": {
            rule: {
                "term": sized,
                "units": units,
                "monthly_usd": round(_monthly(fleet_bill(hours, units, sized, prices), hours), 2),
            }
            for rule, units in anchor.items()
        },
    }
    if plan.score is not None:
        out["hindsight"] = _hindsight(plan, plan.score, sized)
    if plan.current_score is not None:
        current = fleet_bill(plan.current_score, {}, None, prices)
        monthly = round(_monthly(current, plan.current_score), 2)
        out["current_monthly_usd"] = monthly  # kept for earlier readers: the same figure
        out["current_policy_monthly"] = {"policy": plan.setup.current, "monthly_usd": monthly}
    return out


def _hindsight(plan: Plan, score: Hours, term: str) -> dict[str, Any]:
    """The plan best for the scored hours themselves (`savings_plan.hindsight`), of the
    plan's term (1y when it has none) and with a Savings Plan when the plan may have one."""
    units, hourly, least = savings_plan.hindsight(score, term, plan.prices, plan.setup.savings_plan)
    return {
        "term": term,
        "read_units": units["read"],
        "write_units": units["write"],
        "savings_plan_hourly": round(hourly, 4),
        "monthly_usd": round(_monthly(least, score), 2),
    }


def _upfront(units: dict[str, int], term: str | None, prices: Prices) -> float:
    if term is None:
        return 0.0
    return sum(
        units.get(d, 0) / BLOCK_UNITS * float(getattr(prices, f"reserved_{term}_{kind}_upfront"))
        for d, kind in (("read", "rcu"), ("write", "wcu"))
    )


def prices_json(prices: Prices) -> dict[str, Any]:
    return {
        "rcu_hour": prices.rcu_hour,
        "wcu_hour": prices.wcu_hour,
        "reserved": {
            term: {
                "rcu_hour_per_unit": prices.reserved_unit_hour(term, "read"),
                "wcu_hour_per_unit": prices.reserved_unit_hour(term, "write"),
                "rcu_upfront_per_block": getattr(prices, f"reserved_{term}_rcu_upfront"),
                "wcu_upfront_per_block": getattr(prices, f"reserved_{term}_wcu_upfront"),
                "rcu_hour_per_block": getattr(prices, f"reserved_{term}_rcu_hour"),
                "wcu_hour_per_block": getattr(prices, f"reserved_{term}_wcu_hour"),
                "term_hours": TERMS[term],
            }
            for term in TERMS
        },
        "savings_plan": {
            "on_demand_discount": prices.savings_plan_on_demand_discount,
            "provisioned_discount": prices.savings_plan_provisioned_discount,
            "term_hours": SAVINGS_PLAN_HOURS,
            "upfront_usd": 0.0,
        },
        "reserved_verified": "reserved" not in unverified(prices),
        "savings_plan_verified": "savings_plan" not in unverified(prices),
    }


def _dims(hours: Hours | None) -> dict[str, list[float]] | None:
    return None if hours is None else {d: list(hours.units(d)) for d in DIMENSIONS}


def as_json(plan: Plan, about: dict[str, Any]) -> dict[str, Any]:
    """``--json``'s object."""
    return {
        **about,
        "plan": {
            "term": plan.term,
            "read_units": plan.units.get("read", 0),
            "write_units": plan.units.get("write", 0),
            "savings_plan_hourly": round(plan.savings_plan_hourly, 4),
        },
        "terms": {
            t: {**v["units"], "expected_usd": round(v["expected_usd"], 4)}
            for t, v in plan.by_term.items()
        },
        "prices": prices_json(plan.prices),
        "sizing": {"rule": "past-optimal, cut to break even at a fall", "fall": round(FALL, 4)},
        "tables": [
            {
                "name": t.name,
                "policy": plan.policies[t.name],
                "listed_policy": t.listed.policy,
                "reserved_policy": None if t.reserved is None else t.reserved.policy,
                "warnings": list(t.warnings),
                "replicated_writes": t.replicated,
                "infrequent_access": t.infrequent,
            }
            for t in plan.tables
        ],
        "plan_hourly": _dims(plan.plan),
        "score_hourly": _dims(plan.score),
        "current_train_hourly": _dims(plan.current),
        "current_score_hourly": _dims(plan.current_score),
        "hour_weights": {
            "plan": [round(w, 4) for w in plan.plan.weights],
            "score": None if plan.score is None else [round(w, 4) for w in plan.score.weights],
        },
        "on_demand_usd": {
            "plan": round(plan.plan.other_usd, 4),
            "score": None if plan.score is None else round(plan.score.other_usd, 4),
        },
        "refused": {
            "plan": round(plan.refused, 3),
            "current": round(plan.current_refused, 3),
        }
        if plan.score is not None
        else None,
        **figures(plan),
    }


def summary(plan: Plan) -> dict[str, Any]:
    """The plan in short, for ``advise --all-tables`` and its fleet report: the plan (the
    reservation and the Savings Plan's commitment), its upfront fee, the month with and
    without it (and at a third less traffic), the prices' status, and each table's median
    hourly units under its policy that a reservation could cover (a global table's
    replica's writes none: ``replicated_writes`` says so; a Standard-Infrequent Access
    table's units none: ``infrequent_access``)."""
    f = figures(plan)
    tables: dict[str, dict[str, Any]] = {}
    for t in plan.tables:
        run = t.run(plan.policies[t.name] != t.listed.policy)
        tables[t.name] = {d: _median(run.plan.units(d)) for d in DIMENSIONS}
        if t.replicated:
            tables[t.name]["replicated_writes"] = True
        if t.infrequent:
            tables[t.name]["infrequent_access"] = True
    return {
        "term": plan.term,
        "read_units": plan.units.get("read", 0),
        "write_units": plan.units.get("write", 0),
        "upfront_usd": f["upfront_usd"],
        "savings_plan_hourly": round(plan.savings_plan_hourly, 4),
        "savings_plan_discounts": {
            "on_demand": plan.prices.savings_plan_on_demand_discount,
            "provisioned": plan.prices.savings_plan_provisioned_discount,
        },
        "monthly_usd": f["monthly_usd"],
        "fall_by_third_monthly_usd": f["fall_by_third_monthly_usd"],
        "break_even": f["break_even"],
        "reserved_verified": "reserved" not in unverified(plan.prices),
        "savings_plan_verified": "savings_plan" not in unverified(plan.prices),
        "unverified": [UNVERIFIED_WORDS[k] for k in unverified(plan.prices)],
        "median_hourly_units": tables,
    }


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    mid = len(ordered) // 2
    return float(ordered[mid]) if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


UNVERIFIED_WORDS = {"reserved": "the reserved fees", "savings_plan": "the Savings Plan's discounts"}
"""What the words call each commitment's prices (`prices.unverified`)."""
