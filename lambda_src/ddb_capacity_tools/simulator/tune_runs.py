"""Runs in: workstation (`ddb-capacity tune`, `advise`, `reserve`).

Every candidate run once over a trace under an ensemble of model settings, and placed:
its refused units and dollars, over the whole trace (`place`) or its earlier and later
parts (`place_split`), the one-time charge of a pre-warmed table (`prewarm_charge`) and
the library's functions' running cost (`running_dollars`: the scaler's and the stream
reader's) included.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ddb_capacity_runtime.core.policy import capacity_units

from .billing import charge
from .candidates import (
    DEFAULT_RULE,
    MONTH_MINUTES,
    ON_DEMAND,
    SCALER_KINDS,
    STREAM_SECONDS,
    Candidate,
    Rule,
    requested_units,
    spec_of,
    split_prewarm,
    streamed,
    with_frontier,
)
from .ensemble import Spread
from .params import ModelParams
from .policies import COMPOSED, DEFAULT_TICK_MINUTES, Spec, parse
from .prices import Prices
from .progress import Progress
from .run import (
    DimensionResult,
    check_score_from,
    compose_hybrid,
    hybrid_base,
    recovery_minutes,
    run_policy,
    simulate,
)
from .run_pool import Job, run_all
from .scaler_cost import monthly_scaler_cost
from .stream_cost import monthly_stream_cost
from .trace import Trace
from .tune_prune import pruned


def place(
    trace: Trace,
    names: Sequence[str],
    settings: Sequence[ModelParams],
    prices: Prices | None = None,
    tick: int = DEFAULT_TICK_MINUTES,
    workers: int | None = None,
    score_from: int | None = None,
    progress: Progress | None = None,
    command: str = "tune",
    learned: dict[str, tuple[bool, ...]] | None = None,
) -> list[Candidate]:
    """Every policy of ``names`` over ``trace`` under each of ``settings`` (policies in
    ``workers`` processes, default the CPU count), refused units and cost summed over the
    dimensions, counted from minute ``score_from`` on (None: every minute; the policies
    run over, and learn from, every minute either way); frontier marked among the
    candidates that can be recommended. A hybrid is composed from its base's and
    on-demand's runs, which run once whether or not they are candidates themselves. A
    pre-warmed candidate (`PREWARM`) runs on a table warmed to the peak of the
    minutes before ``score_from`` (all of them when None) / its target, the one-time
    charge in its cost. Progress on ``progress``, a step a run, named ``command``. Declared
    windows run at the hours ``learned`` gives them by name (a pick's, `Candidate.hours`),
    else at those they learn before ``score_from``."""
    prices = prices or Prices()
    until = score_from or trace.minutes
    count = _Count(progress, command, len(settings) * _runs_a_setting(names, settings[0]))
    runs = _runs(trace, names, settings, prices, tick, workers, score_from, count, learned)
    once = {n: _once(n, trace, until, prices, settings[0]) for n in names}
    scored = trace.minutes - (score_from or 0)
    return with_frontier(
        [
            _candidate(n, runs, once[n], running_dollars(n, trace, scored, prices, tick))
            for n in names
        ]
    )


def place_split(
    trace: Trace,
    names: Sequence[str],
    settings: Sequence[ModelParams],
    prices: Prices | None,
    tick: int,
    workers: int | None,
    split: int,
    progress: Progress | None = None,
    command: str = "tune",
    prune: bool = False,
    rule: Rule = DEFAULT_RULE,
) -> tuple[list[Candidate], list[Candidate]]:
    """(the earlier part's candidates, the later part's): every policy of ``names`` run
    once over the whole trace (`place`), counted over minutes 0 to ``split`` and from
    ``split`` on. A policy sees only the past, so what it did before ``split`` is what it
    would have done on the earlier part alone. The hybrid is not counted on the earlier
    part (it is never fitted). With ``prune``, a candidate another beats on the earlier
    part under the first setting is run under that setting only (`tune_prune`). Progress
    on ``progress`` as `place` shows it."""
    prices = prices or Prices()
    count = _Count(progress, command, len(settings) * _runs_a_setting(names, settings[0]))
    count.settings = len(settings)
    once = {n: _once(n, trace, split, prices, settings[0]) for n in names}
    charges = {n: (once[n], running_dollars(n, trace, split, prices, tick)) for n in names}
    billed = (trace.start.minute, settings[0].billing)
    learned: dict[str, tuple[bool, ...]] = {}
    first = _runs(trace, names, settings[:1], prices, tick, workers, split, count, learned)
    cut: dict[str, str] = {}
    if prune and len(settings) > 1:
        base = [_early(n, first, split, prices, charges[n], billed) for n in names if _fitted(n)]
        rest = trace.minutes - split
        ends = [
            _candidate(n, first, once[n], running_dollars(n, trace, rest, prices, tick))
            for n in names
        ]
        cut = pruned(
            names,
            [
                (base, requested_units(trace, end=split)),
                (ends, requested_units(trace, start=split)),
            ],
            rule,
        )
    kept = [n for n in names if n not in cut]
    count.total = count.done + (len(settings) - 1) * _runs_a_setting(kept, settings[0])
    runs = first + _runs(trace, kept, settings[1:], prices, tick, workers, split, count, learned)
    mine = {n: first if n in cut else runs for n in names}
    rest = trace.minutes - split
    later = [
        _candidate(n, mine[n], once[n], running_dollars(n, trace, rest, prices, tick))
        for n in names
    ]
    early = [_early(n, mine[n], split, prices, charges[n], billed) for n in names if _fitted(n)]
    return [_pruned(c, cut) for c in early], with_frontier([_pruned(c, cut) for c in later])


def _fitted(name: str) -> bool:
    """Whether ``name`` is counted on the earlier part: every candidate but the hybrid
    (never fitted)."""
    return spec_of(name).kind not in COMPOSED


def _pruned(c: Candidate, cut: dict[str, str]) -> Candidate:
    """``c`` marked pruned by what beat it, when ``cut`` names it."""
    return replace(c, pruned_by=cut[c.policy]) if c.policy in cut else c


def _runs_a_setting(names: Sequence[str], params: ModelParams) -> int:
    """How many runs `_runs` makes of ``names`` under one setting like ``params``."""
    warmed, ran, _ = _run_plan(names, params.max_capacity)
    streams = [n for n in names if streamed(n) and n not in warmed]
    return len(ran) + len({spec_of(n, params.max_capacity).text for n in streams}) + len(warmed)


def _runs(
    trace: Trace,
    names: Sequence[str],
    settings: Sequence[ModelParams],
    prices: Prices,
    tick: int,
    workers: int | None,
    score_from: int | None,
    count: _Count | None = None,
    learned: dict[str, tuple[bool, ...]] | None = None,
) -> list[list[DimensionResult]]:
    """Per setting, the results of every policy of ``names`` (see `place`), every run of
    every setting in one pool of ``workers`` processes (`run_pool`); ``count`` takes a step
    a run (one policy under one setting). Declared windows keep the hours learned under the
    first setting they run in, kept in ``learned`` (by name) across calls: one deployment
    has one set of hours, whatever the setting."""
    warmed, ran, hybrids = _run_plan(names, settings[0].max_capacity) if settings else ([], [], [])
    learned = {} if learned is None else learned
    streams = [n for n in names if streamed(n) and n not in warmed]
    count = count or _Count(None, "", 0)
    check_score_from(score_from, trace)
    jobs: list[Job] = []
    for n, p in enumerate(settings, 1):
        setting = f"setting {count.first + n} of {count.settings or len(settings)}"
        jobs += _setting_jobs(
            trace, (ran, streams, warmed), p.validate(), prices, tick, score_from, setting
        )
    done = iter(run_all(jobs, workers or os.cpu_count() or 1, lambda job: count(job.label)))
    runs = []
    for p in settings:
        results = [r for _ in ran for r in next(done)]
        counted = (score_from or 0, p.billing, recovery_minutes(p, tick))
        results += _hybrids(hybrids, results, trace, prices, counted, learned)
        results += _named_streams(streams, p, [next(done) for _ in _unique(streams, p)])
        results += [r for _ in warmed for r in next(done)]
        runs.append(results)
    count.first += len(settings)
    return runs


HEAVY = {"oracle": 5, **dict.fromkeys(SCALER_KINDS, 10)}
"""How long a run of each kind takes against a stock run's (about): the heavier are handed
out first (`run_pool.Job.weight`)."""


def _setting_jobs(
    trace: Trace,
    candidates: tuple[Sequence[Spec], Sequence[str], Sequence[str]],
    p: ModelParams,
    prices: Prices,
    tick: int,
    score_from: int | None,
    setting: str,
) -> list[Job]:
    """The runs of the setting ``p``, in the order `_runs` reads their results: the policies
    simulated together, each stream candidate's policy once (`_unique`), on a table whose
    stream is a signal, and each pre-warmed candidate (`_prewarmed`); each named for progress
    with ``setting``."""
    ran, streams, warmed = candidates

    def job(work: Callable[..., list[DimensionResult]], args: tuple[Any, ...], name: str) -> Job:
        weight = HEAVY.get(spec_of(name, p.max_capacity).kind, 1)
        return Job(work, args, f"{name}, {setting}", weight)

    streaming = replace(p, stream_seconds=p.stream_seconds or STREAM_SECONDS)
    out = [
        job(run_policy, (s, trace, p, prices, None, tick, None, score_from), s.text) for s in ran
    ]
    out += [
        job(run_policy, (s, trace, streaming, prices, None, tick, None, score_from), s.text)
        for s in _unique(streams, p)
    ]
    out += [job(_prewarmed, (n, trace, p, prices, tick, score_from), n) for n in warmed]
    return out


def _unique(streams: Sequence[str], p: ModelParams) -> list[Spec]:
    """The policies the `STREAM` candidates ``streams`` run, each once."""
    return list({s.text: s for s in (spec_of(n, p.max_capacity) for n in streams)}.values())


def _named_streams(
    streams: Sequence[str], p: ModelParams, ran: Sequence[list[DimensionResult]]
) -> list[DimensionResult]:
    """The `STREAM` candidates' results, named by candidate, from the runs of their
    policies (``ran``, as `_unique` lists them)."""
    out = []
    for name in streams:
        text = spec_of(name, p.max_capacity).text
        for r in (r for results in ran for r in results if r.policy == text):
            mine = copy.copy(r)
            mine.policy = name
            out.append(mine)
    return out


class _Count:
    """The runs `_runs` has done, shown on ``progress`` (when not None) as each ends: it
    starts the count at 0 of ``total``, then takes a step each call (a spec's run ended)."""

    def __init__(self, progress: Progress | None, command: str, total: int) -> None:
        self.progress, self.command, self.total, self.done = progress, command, total, 0
        self.first = 0
        """the settings run before (settings are numbered on from it)"""
        self.settings = 0
        """the settings in all (0: those of the `_runs` call)"""
        if progress is not None:
            progress(command, 0, total, "runs", "")

    def __call__(self, label: str) -> None:
        """One run ended: ``label`` names it (the policy, the setting)."""
        self.done += 1
        if self.progress is not None:
            self.progress(self.command, self.done, self.total, "runs", label)


def run_candidate(
    name: str,
    trace: Trace,
    params: ModelParams,
    prices: Prices,
    *,
    tick: int,
    score_from: int | None,
    hours: tuple[bool, ...] = (),
) -> list[DimensionResult]:
    """The candidate ``name`` run alone as `place` runs it (pre-warmed, with the table's
    stream as a signal, composed as a hybrid: as its suffixes and kind say), its results
    only; declared windows at ``hours`` when given (a pick's), else learned."""
    wanted = {name, spec_of(name, params.max_capacity).text}
    learned = {name: hours} if hours else {}
    (results,) = _runs(trace, [name], [params], prices, tick, 1, score_from, None, learned)
    return [r for r in results if r.policy in wanted]


def _run_plan(names: Sequence[str], max_capacity: int) -> tuple[list[str], list[Spec], list[Spec]]:
    """What `_runs` runs for ``names``: the pre-warmed candidates (run on their own), the
    policies simulated together (each hybrid's base and on-demand among them), and the
    hybrids (composed from those)."""
    warmed = [n for n in names if split_prewarm(n)[1]]
    specs = [parse(n, max_capacity) for n in names if n not in warmed and not streamed(n)]
    hybrids = [s for s in specs if s.kind in COMPOSED]
    needed = [hybrid_base(s) for s in hybrids] + ([parse(ON_DEMAND)] if hybrids else [])
    ran = [s for s in specs if s.kind not in COMPOSED]
    ran += [s for s in needed if s.text not in {r.text for r in ran}]
    return warmed, ran, hybrids


def _hybrids(
    hybrids: Sequence[Spec],
    results: Sequence[DimensionResult],
    trace: Trace,
    prices: Prices,
    counted: tuple[int, str, int],
    learned: dict[str, tuple[bool, ...]],
) -> list[DimensionResult]:
    """Each hybrid of ``hybrids`` composed from its base's and on-demand's ``results``,
    counted from ``counted``'s minute, billed by its basis, its windows' recovery minutes
    (`run.recovery_minutes`); declared windows at the hours in ``learned`` by their name,
    else at those they learn here (then kept there)."""
    out: list[DimensionResult] = []
    start, basis, recovery = counted
    od = [r for r in results if r.policy == ON_DEMAND]
    for h in hybrids:
        base = [r for r in results if r.policy == hybrid_base(h).text]
        hours = learned.get(h.text)
        composed = compose_hybrid(
            h, base, od, trace, prices, start, basis=basis, hours=hours, recovery=recovery
        )
        if h.kind == "windows" and composed:
            learned[h.text] = composed[0].hours
        out += composed
    return out


def _prewarmed(
    name: str,
    trace: Trace,
    params: ModelParams,
    prices: Prices,
    tick: int,
    score_from: int | None,
) -> list[DimensionResult]:
    """``name`` (a `PREWARM` candidate) run on a table warmed as `warm_levels`
    says, its results named ``name``."""
    spec = spec_of(name, params.max_capacity)
    levels = warm_levels(trace, score_from or trace.minutes, spec.value or 70, params)
    warm = replace(
        params,
        warm_read_units=max(params.warm_read_units, levels["read"]),
        warm_write_units=max(params.warm_write_units, levels["write"]),
    )
    if streamed(name):
        warm = replace(warm, stream_seconds=warm.stream_seconds or STREAM_SECONDS)
    results = simulate(trace, [spec], warm, prices, None, tick, None, 1, score_from=score_from)
    for r in results:
        r.policy = name
    return results


def stream_dollars(name: str, trace: Trace, minutes: int, prices: Prices) -> float:
    """What the stream reader costs over ``minutes`` of ``trace`` for a `STREAM`
    candidate (0 for any other): its monthly cost at the trace's mean write rate, counting
    the table's and each GSI's writes (`stream_cost.monthly_stream_cost`), pro rata."""
    if not streamed(name) or minutes <= 0:
        return 0.0
    writes = [
        v for (index, d), vs in trace.demand.items() if d == "write" and index is None for v in vs
    ]
    rate = sum(writes) / len(writes) if writes else 0.0
    dimensions = sum(1 for _, d in trace.demand if d == "write")
    monthly = monthly_stream_cost(rate, dimensions=max(1, dimensions), prices=prices).total
    return monthly * minutes / MONTH_MINUTES


def scaler_dollars(name: str, trace: Trace, minutes: int, prices: Prices, tick: int) -> float:
    """What the scaler costs to run over ``minutes`` of ``trace`` for a candidate that runs
    it (`SCALER_KINDS`; 0 for any other): its monthly cost on a table of the trace's
    table and GSIs, read and write of each (the scaler reads and alarms on both, whichever
    the trace holds), ticking every ``tick`` minutes, in autopilot or reactive mode as the policy
    says (`scaler_cost.monthly_scaler_cost`), pro rata. A trace of GSIs without their table
    (``advise --index``) is charged what the scaler adds for those GSIs alone."""
    kind = spec_of(name).kind
    if kind not in SCALER_KINDS or minutes <= 0:
        return 0.0
    indexes = {index for index, _ in trace.demand}
    monthly = monthly_scaler_cost(
        # the scaler reads and alarms on both dimensions of the table and of each GSI, though
        # the trace may hold one of them
        2 * max(1, len(indexes)),
        autopilot=kind != "throttle-aware",
        tick_minutes=tick,
        prices=prices,
        table=not indexes or None in indexes,
    ).total
    return monthly * minutes / MONTH_MINUTES


def running_dollars(name: str, trace: Trace, minutes: int, prices: Prices, tick: int) -> float:
    """What the library's functions a candidate deploys cost to run over ``minutes`` of
    ``trace``: the scaler's (`scaler_dollars`) and the stream reader's (`stream_dollars`)."""
    return scaler_dollars(name, trace, minutes, prices, tick) + stream_dollars(
        name, trace, minutes, prices
    )


def warm_levels(
    trace: Trace, minutes: int, target_percent: int, params: ModelParams
) -> dict[str, int]:
    """The warm throughput a pre-warmed candidate is given, per dimension (``read``,
    ``write``): the busiest minute of the first ``minutes`` (the part the choice is fitted
    on) of that dimension, table or GSI, / the target ``T`` %, rounded up, at most
    ``--max-capacity``; 0 for a dimension the trace does not have. Warm throughput set so
    lets target tracking raise to the highest level the earlier part needed at once."""
    out = {}
    for dim in ("read", "write"):
        peaks = [max(v[:minutes], default=0.0) for (_, d), v in trace.demand.items() if d == dim]
        peak = max(peaks, default=0.0)
        units = capacity_units(peak * 100 / target_percent) if peak > 0 else 0
        out[dim] = min(params.max_capacity, units)
    return out


def _once(
    name: str, trace: Trace, minutes: int, prices: Prices, params: ModelParams
) -> float | None:
    """The one-time charge of ``name``: 0 but for a pre-warmed candidate, whose warm
    throughput (`warm_levels`) is charged on the table and on each GSI
    (`prewarm_charge`)."""
    if not split_prewarm(name)[1]:
        return 0.0
    levels = warm_levels(trace, minutes, spec_of(name).value or 70, params)
    return warm_charge(levels, trace, prices)[0]


def warm_charge(levels: dict[str, int], trace: Trace, prices: Prices) -> tuple[float, str]:
    """`prewarm_charge` of warm ``levels`` (per dimension) on the table and on each GSI
    of ``trace``."""
    count = {d: sum(1 for k in trace.demand if k[1] == d) for d in ("read", "write")}
    return prewarm_charge(levels["read"] * count["read"], levels["write"] * count["write"], prices)


def prewarm_charge(read_units: int, write_units: int, prices: Prices) -> tuple[float, str]:
    """The one-time charge of pre-warming ``read_units`` and ``write_units`` (summed over
    the table and its GSIs), and how (`PREWARM_METHODS`): DynamoDB's warm throughput when
    its prices are given (every unit as added: what the table already has warm is not
    known, so this is at most what AWS charges); else provisioned at the mark for an hour
    (the whole hour at the mark, billed as the hour's highest level is), then settled."""
    warm = prices.prewarm(read_units, write_units)
    if warm is not None and (read_units or write_units):
        return warm, "WARM_THROUGHPUT"
    hour = prices.provisioned("read", read_units * 60) + prices.provisioned(
        "write", write_units * 60
    )
    return hour, "PROVISION_THEN_SETTLE"


def _candidate(
    name: str,
    runs: Sequence[Sequence[DimensionResult]],
    once: float | None = 0.0,
    recurring: float = 0.0,
) -> Candidate:
    """``name``'s results, per setting summed over dimensions, as min / median / max; the
    one-time charge ``once`` and what else it costs over the minutes counted
    (``recurring``: the library's functions', `running_dollars`) added to each cost."""
    mine = [[r for r in results if r.policy == name] for results in runs]
    extra = (once or 0.0) + recurring
    return Candidate(
        name,
        Spread.of([sum(r.throttled_requests for r in rs) for rs in mine]),
        Spread.of([sum(r.cost_usd for r in rs) + extra for rs in mine]),
        once_usd=once,
        running_usd=recurring,
        hours=next((r.hours for rs in mine for r in rs), ()),
    )


def _early(
    name: str,
    runs: Sequence[Sequence[DimensionResult]],
    split: int,
    prices: Prices,
    added: tuple[float | None, float],
    billed: tuple[int, str],
) -> Candidate:
    """``name``'s results over minutes 0 to ``split`` only, from what each run recorded;
    ``added``: the one-time charge and the recurring one over those minutes, added to
    each cost; ``billed``: the trace's first minute of its clock hour and the billing
    basis (`billing.charge`)."""
    once, recurring = added
    first, basis = billed
    on_demand = spec_of(name).kind == "on-demand"
    refused, cost = [], []
    for results in runs:
        mine = [r for r in results if r.policy == name]
        refused.append(sum(sum(r.recorded.throttled[:split]) for r in mine) * 60)
        cost.append(
            (once or 0.0)
            + recurring
            + sum(
                prices.on_demand(r.key[1], sum(r.recorded.served[:split]))
                if on_demand
                else charge(
                    r.key[1],
                    r.recorded.provisioned[:split],
                    r.recorded.served[:split],
                    prices,
                    first,
                    basis,
                )
                for r in mine
            )
        )
    return Candidate(
        name, Spread.of(refused), Spread.of(cost), once_usd=once, running_usd=recurring
    )
