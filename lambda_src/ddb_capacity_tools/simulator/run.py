"""Runs in: workstation (the `ddb-capacity` command).

Run a trace through policies and report per dimension."""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, TextIO

from ddb_capacity_runtime.core.names import DIMENSIONS
from ddb_capacity_runtime.core.validators import is_whole

from . import billing, hybrid, schedules
from .bound import Bound, bound
from .model import Recorded, SimulatedTable
from .on_demand import OnDemandRefusals, on_demand_refusals
from .oracle import Oracle
from .params import ModelParams
from .policies import (
    COMPOSED,
    DEFAULT_TICK_MINUTES,
    AutoScaling,
    Fixed,
    OnDemand,
    Policy,
    PolicyError,
    Spec,
    ThrottleAware,
)
from .prices import Prices
from .run_pool import Job, run_all
from .text import on_a_terminal
from .trace import Key, Trace, key_label

DEFAULT_POLICIES = ("stock:70", "autopilot+stock:70", "on-demand", "oracle", "bound")
"""What runs when no policy is named (``scheduled`` joins when the input has a schedule)."""
DAY_MINUTES = 1440


@dataclass
class DimensionResult:
    """One policy on one dimension. ``as_json`` is the stable contract of ``--json``."""

    policy: str
    key: Key
    throttled_requests: float
    throttled_minutes: int
    first_throttle_minute: int | None
    provisioned_unit_hours: float
    cost_usd: float
    decreases: int
    peak_provisioned: int
    rejected_decreases: int
    demand_unit_hours: float
    throttle_events: float = 0.0
    recorded: Recorded = field(repr=False, default_factory=Recorded)
    hours: tuple[bool, ...] = ()
    """Declared windows' (``windows``): the 24 hours of the day (UTC) they put on-demand; else
    empty."""
    score_from: int = field(default=0, repr=False, compare=False)
    """The trace minute from which the results count (``run_policy``'s ``score_from``); ``recorded``
    holds every minute. Set only when it is not 0 (`_scored`)."""

    @property
    def throttled_by_cause(self) -> dict[str, float]:
        """``throttled_requests`` by cause: ``key_range`` what a hot partition refused
        (capacity could not help); on on-demand, ``on_demand`` what exceeded double the
        previous peak and the warm throughput, ``max_on_demand`` what exceeded the maximum
        throughput (or the table quota); ``provisioned`` the rest (capacity and burst fell
        short)."""
        r, start = self.recorded, self.score_from
        key_range = sum(r.key_range[start:], 0.0) * 60
        over_peak = sum(r.on_demand[start:], 0.0) * 60
        over_cap = sum(r.max_on_demand[start:], 0.0) * 60
        rest = self.throttled_requests - key_range - over_peak - over_cap
        return {  # (what the sums' rounding leaves is none)
            "provisioned": rest if rest > 1e-9 * self.throttled_requests else 0.0,
            "key_range": key_range,
            "on_demand": over_peak,
            "max_on_demand": over_cap,
        }

    def as_json(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "dimension": key_label(self.key),
            "score_from": self.score_from,
            "index": self.key[0],
            "throttled_requests": round(self.throttled_requests, 3),
            "throttled_minutes": self.throttled_minutes,
            "first_throttle_minute": self.first_throttle_minute,
            "provisioned_unit_hours": round(self.provisioned_unit_hours, 3),
            "cost_usd": round(self.cost_usd, 6),
            "decreases": self.decreases,
            "peak_provisioned": self.peak_provisioned,
            "rejected_decreases": self.rejected_decreases,
            "demand_unit_hours": round(self.demand_unit_hours, 3),
            "throttle_events": round(self.throttle_events, 3),
            "throttled_by_cause": {k: round(v, 3) for k, v in self.throttled_by_cause.items()},
        }


def build(
    spec: Spec,
    trace: Trace,
    params: ModelParams,
    prices: Prices,
    schedule: Sequence[dict[str, Any]] | None,
    tick: int,
    score_from: int = 0,
) -> Policy:
    if spec.kind == "fixed":
        assert spec.value is not None
        return Fixed(spec.value)
    if spec.kind == "on-demand":
        return OnDemand()
    if spec.kind == "oracle":
        return Oracle(trace, params, prices, score_from)
    keys = list(trace.demand)
    reservation = params.reservation if spec.reserved else None
    if spec.kind == "stock":
        assert spec.value is not None
        return AutoScaling(spec.value, params, keys, reservation=reservation)
    if spec.kind == "scheduled":
        entries = schedule if schedule is not None else trace.schedule
        if not entries:
            raise PolicyError(
                f"--policy {spec.text!r}: {trace.name} has no schedule of its "
                f"own; pass --schedule FILE.json"
            )
        ranges = {k: (params.min_capacity, params.max_capacity) for k in keys}
        firings = schedules.firings(entries, keys, ranges, trace.start, trace.minutes)
        assert spec.value is not None
        return AutoScaling(spec.value, params, keys, firings, reservation=reservation)
    stock = AutoScaling(spec.value, params, keys) if spec.with_stock and spec.value else None
    return ThrottleAware(
        tick,
        spec.value or 70,
        params,
        stock,
        autopilot=spec.kind == "autopilot",
        causes=not spec.lumped,
        own_target=spec.owned,
        noise_aim=spec.noise_aim,
        forecast=spec.forecast,
        tweaks=spec.tweaks,
        reserved=spec.reserved,
    )


def _progress(out: TextIO | None, label: str, total: int) -> Callable[[int], None]:
    """A progress bar on ``out`` for a run of ``total`` minutes, shown when the trace is
    longer than a day and ``out`` is a terminal."""
    if out is None or total <= DAY_MINUTES or not on_a_terminal(out):
        return lambda t: None
    width = 30
    step = max(1, total // 100)

    def show(t: int) -> None:
        if t % step == 0 or t == total - 1:
            done = (t + 1) / total
            bar = "#" * int(done * width)
            out.write(f"\r{label:<28} [{bar:<{width}}] {done:4.0%}")
            if t == total - 1:
                out.write("\n")
            out.flush()

    return show


def check_score_from(score_from: int | None, trace: Trace) -> int:
    """``score_from`` as the first scored minute (None: 0); a
    [`PolicyError`][ddb_capacity_tools.simulator.PolicyError] when it is not a minute of
    ``trace``."""
    if score_from is None:
        return 0
    if not is_whole(score_from, 0, trace.minutes - 1):
        raise PolicyError(
            f"score_from: got {score_from!r}; expected a whole minute from 0 to "
            f"{trace.minutes - 1} ({trace.name} has {trace.minutes:,} minutes)"
        )
    return score_from


def run_policy(
    spec: Spec,
    trace: Trace,
    params: ModelParams,
    prices: Prices,
    schedule: Sequence[dict[str, Any]] | None = None,
    tick: int = DEFAULT_TICK_MINUTES,
    progress: TextIO | None = None,
    score_from: int | None = None,
) -> list[DimensionResult]:
    """Replay ``trace`` through one policy; one result per dimension. With ``score_from``
    (a trace minute), the policy runs over, sees and learns from every minute, but the
    results count from that minute on (`_scored`); the oracle and the bound plan
    for those minutes."""
    start = check_score_from(score_from, trace)
    if spec.kind in COMPOSED:
        if params.reservation:
            raise PolicyError(
                f"--policy {spec.text!r}: the hybrid does not model reserved capacity; run it "
                "with --reserved-read-units 0 and --reserved-write-units 0"
            )
        return _hybrid(spec, trace, params, prices, tick, start)
    if spec.kind == "bound":
        found = [
            _bound(spec, b, trace, params, prices, start)
            for b in bound(trace, params, start).values()
        ]
        return charge_reserved(found, params, prices, trace)
    policy = build(spec, trace, params, prices, schedule, tick, start)
    show = _progress(progress, spec.text, trace.minutes)
    if isinstance(policy, OnDemand):
        refused = on_demand_refusals(trace, params)
        attempts = (1 + params.retries) * 60 / params.units_per_request
        return [
            _on_demand(spec, key, demand, prices, refused.get(key), attempts, start)
            for key, demand in trace.demand.items()
        ]
    sim = SimulatedTable(trace, params, policy.initial(trace, params), start)
    begin, act, end = sim.begin_minute, policy.act, sim.end_minute
    for t in range(-params.warmup_minutes, 0):
        begin(t)
        act(sim, t)
        end(t)
    for t in range(trace.minutes):
        begin(t)
        act(sim, t)
        end(t)
        if progress is not None:
            show(t)
    return charge_reserved(
        [_result(spec, key, sim, prices, start) for key in sim.keys], params, prices, trace
    )


def charge_reserved(
    results: list[DimensionResult], params: ModelParams, prices: Prices, trace: Trace
) -> list[DimensionResult]:
    """``results`` (provisioned, one per dimension of one run over ``trace``) costed under
    the model's reservation: the part of a dimension's provisioned total (table and GSIs)
    at or below its reserved units is free (the reservation's fee is sunk), and what is
    above it is charged at the list price, each minute or clock hour by the model's
    billing basis (`billing.charged_above`). Unit-hours stay the provisioned ones. Without
    a reservation, ``results`` as they are."""
    reservation = params.reservation
    if not reservation:
        return results
    for dimension in DIMENSIONS:
        units = reservation.units(dimension)
        mine = [r for r in results if r.key[1] == dimension]
        if not units or not mine:
            continue
        lists = [r.recorded.provisioned[r.score_from :] for r in mine]
        first = first_minute(trace, mine[0].score_from)
        charged = billing.charged_above(lists, units, first, params.billing)
        for r, unit_hours in zip(mine, charged, strict=True):
            r.cost_usd = unit_hours * prices.unit_hour(dimension)
    return results


def _scored(spec: Spec, key: Key, r: Recorded, start: int, **rest: Any) -> DimensionResult:
    """One result from ``r``'s minutes from ``start`` on: throttled requests, minutes and
    events, the first throttled minute (from the trace start), provisioned unit-hours, the
    peak provisioned and demand unit-hours. ``rest``: the other fields (cost, decreases,
    refused decreases), counted from ``start`` by the caller."""
    throttled = r.throttled[start:] if start else r.throttled
    minutes = [i for i, v in enumerate(throttled, start) if v > 1e-9]
    provisioned = r.provisioned[start:] if start else r.provisioned
    result = DimensionResult(
        policy=spec.text,
        key=key,
        throttled_requests=sum(throttled) * 60,
        throttled_minutes=len(minutes),
        first_throttle_minute=minutes[0] if minutes else None,
        provisioned_unit_hours=sum(provisioned) / 60,
        peak_provisioned=max(provisioned, default=0),
        demand_unit_hours=sum(r.demand[start:] if start else r.demand) / 60,
        throttle_events=sum(r.throttle_events[start:] if start else r.throttle_events),
        recorded=r,
        **rest,
    )
    if start:
        result.score_from = start
    return result


def minute_of_day(trace: Trace) -> int:
    """The minute of its day (UTC) that ``trace``'s first minute is at."""
    return trace.start.hour * 60 + trace.start.minute


def first_minute(trace: Trace, start: int) -> int:
    """The minute of its clock hour that trace minute ``start`` is at."""
    return (trace.start.minute + start) % 60


def _result(
    spec: Spec, key: Key, sim: SimulatedTable, prices: Prices, start: int = 0
) -> DimensionResult:
    result = _scored(
        spec,
        key,
        sim.recorded[key],
        start,
        cost_usd=0.0,
        decreases=sim.dims[key].decreases,
        rejected_decreases=sim.rejected_decreases[key],
    )
    r, basis = sim.recorded[key], sim.params.billing
    result.cost_usd = billing.charge(
        key[1],
        r.provisioned[start:],
        r.served[start:],
        prices,
        first_minute(sim.trace, start),
        basis,
    )
    return result


def _bound(
    spec: Spec, b: Bound, trace: Trace, params: ModelParams, prices: Prices, start: int = 0
) -> DimensionResult:
    demand = trace.demand[b.key]
    zeros = [0.0] * len(demand)
    recorded = Recorded(list(demand), list(demand), zeros, list(b.floor), list(zeros))
    # every zero-throttle plan is billed at least the bound's unit-minutes, and (by the
    # hour's highest level) each hour's highest floor
    floor = billing.unit_hours(b.floor[start:], first_minute(trace, start), params.billing)
    unit_hours = max(b.unit_minutes / 60, floor)
    result = _scored(
        spec,
        b.key,
        recorded,
        start,
        cost_usd=unit_hours * prices.unit_hour(b.key[1]),
        decreases=0,
        rejected_decreases=0,
    )
    result.provisioned_unit_hours = unit_hours
    return result


def _on_demand(
    spec: Spec,
    key: Key,
    demand: list[float],
    prices: Prices,
    refused: OnDemandRefusals | None = None,
    attempts: float = 60.0,
    start: int = 0,
) -> DimensionResult:
    """On-demand on one dimension: every request served and billed, but what it refused
    (``refused``, units/s per minute by cause; ``attempts``: throttle events per refused
    unit/s)."""
    if refused is None:
        throttled = [0.0] * len(demand)
        served = list(demand)
    else:
        throttled = list(map(operator.add, refused.on_demand, refused.max_on_demand))
        if refused.key_range:
            throttled = list(map(operator.add, throttled, refused.key_range))
        served = list(map(operator.sub, demand, throttled))
    events = list(map(operator.mul, throttled, repeat(attempts)))
    recorded = Recorded(list(demand), served, throttled, [0] * len(demand), events)
    if refused is not None and any(refused.key_range):
        recorded.with_key_range(refused.key_range)
    if refused is not None and (any(refused.on_demand) or any(refused.max_on_demand)):
        recorded.with_on_demand(refused.on_demand, refused.max_on_demand)
    return _scored(
        spec,
        key,
        recorded,
        start,
        cost_usd=prices.on_demand(key[1], sum(served[start:] if start else served)),
        decreases=0,
        rejected_decreases=0,
    )


def hybrid_base(spec: Spec) -> Spec:
    """The provisioned policy a hybrid spec (learned or declared windows) runs outside its
    on-demand hours: the autopilot on stock target tracking at its target (70 % by default),
    as a `ProvisionedTable`, which learns or declares the windows, deploys it."""
    target = spec.value or 70
    return Spec(f"autopilot+stock:{target}", "autopilot", target, with_stock=True)


def _hybrid(
    spec: Spec, trace: Trace, params: ModelParams, prices: Prices, tick: int, start: int
) -> list[DimensionResult]:
    """The hybrid (`hybrid`): the autopilot at the spec's target and on-demand over
    the whole trace, each minute taken from the one the plan puts the table in; both
    parts counted from ``start``, as ``tune.place`` runs them."""
    base = run_policy(hybrid_base(spec), trace, params, prices, None, tick, score_from=start)
    od = run_policy(Spec("on-demand", "on-demand"), trace, params, prices, score_from=start)
    recovery = recovery_minutes(params, tick)
    return compose_hybrid(
        spec, base, od, trace, prices, start, basis=params.billing, recovery=recovery
    )


def recovery_minutes(params: ModelParams, tick: int) -> int:
    """How long after a declared window the table keeps the level it was switched at: the
    autopilot's next tick, then its UpdateTable (the model's longest)."""
    return tick + params.update_minutes + params.update_spread_minutes


def learned_hours(
    base: Sequence[DimensionResult],
    od: Sequence[DimensionResult],
    trace: Trace,
    prices: Prices,
    until: int = 0,
    recovery: int = 0,
    basis: str = billing.DEFAULT_BASIS,
) -> list[bool]:
    """The hours of the day (24, UTC) declared windows put on-demand, learned from the
    base's (`hybrid_base`) and on-demand's results over the minutes before ``until`` (0:
    every minute): `hybrid.fixed_hours`' windows, of which the set that costs least there
    as composed and billed by ``basis``, refusing no more than the base
    (`hybrid.best_of`, each window's level held ``recovery`` minutes)."""
    mine = {r.key: r.recorded for r in base}
    theirs = {r.key: r.recorded for r in od}
    offset = minute_of_day(trace)
    paid, charged = hybrid.costs(mine, theirs, prices, offset, basis)
    hours = hybrid.fixed_hours(paid, charged, offset, until or None)
    end = until or trace.minutes
    return hybrid.best_of(hours, mine, theirs, prices, offset, end, recovery, basis)


def compose_hybrid(
    spec: Spec,
    base: Sequence[DimensionResult],
    od: Sequence[DimensionResult],
    trace: Trace,
    prices: Prices,
    start: int = 0,
    hindsight: bool = False,
    basis: str = billing.DEFAULT_BASIS,
    hours: Sequence[bool] | None = None,
    recovery: int = 0,
) -> list[DimensionResult]:
    """The hybrid's (or the declared windows') results from its base's (`hybrid_base`) and
    on-demand's over the same trace, both run with ``score_from=start``: counted from
    minute ``start`` (``hindsight``: `hybrid.plan`'s), billed by ``basis``. The declared
    windows (kind ``windows``) keep ``hours`` (24, of the day, UTC) every day; None: those
    `learned_hours` finds before ``start``, and hold the level of each switch's start
    through it and for ``recovery`` minutes after (`hybrid.frozen`). Decreases are the
    base's, those in on-demand windows included (a simplification: an on-demand table takes
    no capacity update)."""
    offset = minute_of_day(trace)
    if spec.kind == "windows" and hours is None:
        hours = learned_hours(base, od, trace, prices, start, recovery, basis)
    composed = hybrid.compose(
        {r.key: r.recorded for r in base},
        {r.key: r.recorded for r in od},
        prices,
        offset,
        start,
        hindsight=hindsight,
        hours=hours if spec.kind == "windows" else None,
        recovery=recovery,
        target=spec.value or 70,
        basis=basis,
    )
    decreases = {r.key: (r.decreases, r.rejected_decreases) for r in base}
    first = first_minute(trace, start)
    declared = tuple(hours) if spec.kind == "windows" and hours is not None else ()
    return [
        _scored(
            spec,
            key,
            c.recorded,
            start,
            cost_usd=billing.charge(
                key[1],
                c.recorded.provisioned[start:],
                c.recorded.served[start:],
                prices,
                first,
                basis,
            ),
            decreases=decreases[key][0],
            rejected_decreases=decreases[key][1],
            hours=declared,
        )
        for key, c in composed.items()
    ]


def simulate(
    trace: Trace,
    specs: Sequence[Spec],
    params: ModelParams | None = None,
    prices: Prices | None = None,
    schedule: Sequence[dict[str, Any]] | None = None,
    tick: int = DEFAULT_TICK_MINUTES,
    progress: TextIO | None = sys.stderr,
    workers: int = 1,
    score_from: int | None = None,
    ran: Callable[[Spec], None] | None = None,
) -> list[DimensionResult]:
    """Every policy over ``trace``: results in policy order, then dimension order. A trace
    longer than a day shows a progress bar on ``progress`` when it is a terminal. With
    ``workers`` > 1, policies run in that many processes (no progress bar). ``score_from``:
    the trace minute the results count from
    ([`run_policy`][ddb_capacity_tools.simulator.run_policy]). ``ran(spec)`` is called as
    each policy's run ends (in the order they end), for a caller counting runs."""
    params = (params or ModelParams()).validate()
    check_score_from(score_from, trace)
    prices = prices or Prices()
    results: list[DimensionResult] = []
    workers = min(workers, len(specs))
    if workers > 1:  # one process per policy at a time; results in policy order
        jobs = [
            Job(
                run_policy,
                (spec, trace, params, prices, schedule, tick, None, score_from),
                spec.text,
            )
            for spec in specs
        ]
        by_text = {spec.text: spec for spec in specs}
        ended = None if ran is None else (lambda job: ran(by_text[job.label]))
        for runs in run_all(jobs, workers, ended):
            results.extend(runs)
        return results
    for spec in specs:
        results.extend(
            run_policy(spec, trace, params, prices, schedule, tick, progress, score_from)
        )
        if ran is not None:
            ran(spec)
    return results
