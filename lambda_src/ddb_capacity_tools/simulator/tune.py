"""Runs in: workstation (the `ddb-capacity` command).

``ddb-capacity tune``: how to set a table's capacity for its own traffic.

Every candidate (stock target tracking at 30 to 90 %, the autopilot alone and on top of
stock target tracking at several target utilizations, the same on a pre-warmed table, and
on-demand) runs once over the trace under an ensemble of model settings. The choice is
made by validation (`validate`): each family of candidates (the same policy at
another target) is fitted on the earlier half of the history (`fit`), and the fitted
candidates, every stock target and on-demand are compared on the later half. A policy only
sees the past, so one run gives both halves' figures (`place_split`). The figures
shown are the later half's, scaled to a month of 730 hours, as min / median / max over the
ensemble; the medians place each candidate, and the frontier is the candidates no other
beats on both.

The rule ([`Rule`][ddb_capacity_tools.simulator.candidates.Rule]): the recommendation is the
cheapest candidate that refuses no more than the best stock setting (of stock target
tracking at every target from 30 to 90 %, step 10, the one that refuses least), times 1 +
the refusal tolerance (default 0), plus the refusal floor: 0.02 % of the requested units by
default (`REFUSAL_FLOOR`), below which a difference in refusals is the simulator's noise,
not the policy's. That stock setting is a candidate itself, so there always is one; and the
cheapest candidate within a limit on refusals is always on the frontier. With a refusal
price instead (dollars per million refused units), the recommendation is the candidate whose
cost plus its refusals at that price is least. Of that pick and a simpler candidate
(`complexity`) the rule also allows at no more than the pick's cost plus its noise (`noise`:
half the spread of its cost over the ensemble), the simpler is recommended (`simpler`). The
reason is given in one sentence and in words, with what on-demand would cost (or, when it
wins, by how much); every term shown is explained (`terms`); a history shorter than
`MIN_HISTORY_DAYS` is warned of plainly, and one too short to split (`check_length`:
under `MIN_PART_MINUTES` in either part) refused. Its construct code is printed to paste.

Given the table's size, the table class is advised too (`class_advice`): the
recommendation's dollars a month under Standard and under Standard-Infrequent Access, its
storage plus its throughput in each, and the cheaper (`STANDARD_IA`), which the pasted code
then sets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..tool_errors import TuneError as TuneError
from .candidates import (
    CANDIDATES,
    DEFAULT_RULE,
    MIN_HISTORY_DAYS,
    MIN_PART_MINUTES,
    MONTH_HOURS,
    MONTH_MINUTES,
    STOCK,
    Candidate,
    Rule,
    Tuning,
    best_stock,
    compared_only,
    complexity,
    family,
    noise,
    rank_by,
    requested_units,
    scaled,
    spec_of,
    split_prewarm,
    streamed,
    tried,
    with_frontier,
)
from .params import ModelParams
from .policies import DEFAULT_TICK_MINUTES
from .prices import Prices
from .progress import Progress
from .table_class import class_advice
from .text import counted, span
from .trace import Trace
from .tune_code import code_for
from .tune_runs import place_split, warm_charge, warm_levels
from .tune_words import (
    compared_words,
    on_demand_figures,
    reason_words,
    recommendation_summary,
    simpler_words,
)

__all__ = [
    "TuneError",
    "best_stock",
    "check_length",
    "choose",
    "code_of",
    "decide",
    "fit",
    "history_warnings",
    "simpler",
    "validate",
    "validation_split",
    "tune",
]


def within_limit(value: float, limit: float) -> bool:
    """``value`` <= ``limit``, float noise aside (sums over settings and dimensions)."""
    return value <= limit * (1 + 1e-9) + 1e-6


def choose(
    placed: Sequence[Candidate], rule: Rule = DEFAULT_RULE, requested: float = 0.0
) -> tuple[Candidate, Candidate]:
    """(the recommendation, the best stock setting). The best stock setting is the one of
    `STOCK` refusing least (the cheaper of two that refuse as little). The limit rule
    recommends the cheapest candidate within ``rule``'s limit over ``requested`` units (of
    two as cheap, the one refusing less); the price rule the one whose cost plus refusals
    at the price is least (of two as good, the one refusing less)."""
    if not any(c.policy in STOCK for c in placed):
        raise TuneError(f"tune: no stock setting among the candidates ({', '.join(STOCK)})")
    best = best_stock(placed)
    return min(_eligible(placed, rule, best, requested), key=rank_by(rule)), best


def _eligible(
    placed: Sequence[Candidate], rule: Rule, best: Candidate, requested: float
) -> list[Candidate]:
    """The candidates the rule lets be recommended: within the limit (every one, under the
    price rule); never one shown for comparison only."""
    placed = [c for c in placed if not compared_only(c)]
    if rule.price is not None:
        return placed
    limit = rule.limit(best, requested)
    return [c for c in placed if within_limit(c.refused, limit)]


def tune(
    trace: Trace,
    settings: Sequence[ModelParams],
    candidates: Sequence[str] = CANDIDATES,
    prices: Prices | None = None,
    tick: int = DEFAULT_TICK_MINUTES,
    workers: int | None = None,
    rule: Rule = DEFAULT_RULE,
    progress: Progress | None = None,
    size_gb: float | None = None,
    prune: bool = True,
) -> Tuning:
    """``candidates``, the stock settings of `STOCK` and on-demand over ``trace``
    under ``settings``, chosen by validation (`validate`): fitted on the earlier half,
    chosen on the later half, figures a month; with ``size_gb``, the table class advised
    too. With ``prune`` (the default), a candidate another beats in the first setting's run
    is not run under the others (`tune_prune`). Progress on ``progress``, a step a run
    (`tune_runs.place`)."""
    check_length(trace)
    names = tried(candidates, settings[0])
    if settings[0].stream_seconds is not None or settings[0].fast_path_seconds is not None:
        names = [n for n in names if not streamed(n)]  # every library policy has them
    split = validation_split(trace)
    early, later = place_split(
        trace, names, settings, prices, tick, workers, split, progress, prune=prune, rule=rule
    )
    return validate(early, later, rule, trace, settings[0], split, size_gb, prices)


def check_length(trace: Trace) -> None:
    """A [`TuneError`][] when ``trace`` is too short to split: each part of the validation
    needs `MIN_PART_MINUTES` (the earlier fits each family, the later chooses)."""
    need = 2 * MIN_PART_MINUTES
    if trace.minutes < need:
        raise TuneError(
            f"{trace.name} holds {span(trace.minutes)} of traffic; tune needs at least "
            f"{need} minutes: {MIN_PART_MINUTES} to fit on and {MIN_PART_MINUTES} to choose "
            f"on (and {MIN_HISTORY_DAYS} days to judge well: a whole daily cycle in each)"
        )


def validation_split(trace: Trace) -> int:
    """The minute the later part starts: half the trace (the earlier part fits, the later
    part chooses); 0 for a trace of one minute (nothing to fit on)."""
    return trace.minutes // 2


def history_warnings(trace: Trace) -> tuple[str, ...]:
    """A plain warning when ``trace`` is shorter than `MIN_HISTORY_DAYS`: each part
    of the validation needs a whole day, the period of daily traffic and of DynamoDB's
    decrease quota, so a shorter history cannot tell a setting that fits the day from one
    that fits an hour."""
    need = MIN_HISTORY_DAYS * 1440
    if trace.minutes >= need:
        return ()
    return (
        f"warning: {trace.name} holds {counted(trace.minutes, 'minute')} of traffic; at least "
        f"{MIN_HISTORY_DAYS} days ({need:,} minutes) are needed to judge: one day to fit "
        "on and one to choose on, each a whole daily cycle and a whole day of DynamoDB's "
        "decrease quota. Treat the recommendation as a guess, and tune again on a longer "
        "history (--days, or a longer --trace; with --score-from, an earlier time: the "
        "choice is made on the minutes before it).",
    )


def fit(early: Sequence[Candidate], rule: Rule, requested: float) -> dict[str, str]:
    """Per family (`family`) of more than one candidate, the member ``rule`` picks
    on the earlier part (the cheapest within the limit that the stock setting refusing
    least there sets, over ``requested`` units; the one refusing least when none is within;
    under the price rule, the best at the price). Stock target tracking is not fitted: every
    target goes on to the later part, where the stock setting refusing least sets the
    limit."""
    limit = rule.limit(best_stock(early), requested)
    groups: dict[str, list[Candidate]] = {}
    for c in early:
        if c.pruned_by is not None:  # shown as pruned, never fitted
            continue
        groups.setdefault(family(c.policy), []).append(c)
    out = {}
    for name, members in groups.items():
        if name == "stock:T" or len(members) < 2:
            continue
        within = [c for c in members if rule.price is not None or within_limit(c.refused, limit)]
        pick = (
            min(within, key=rank_by(rule))
            if within
            else min(members, key=lambda c: (c.refused, c.cost))
        )
        out[name] = pick.policy
    return out


def validate(
    early: Sequence[Candidate],
    later: Sequence[Candidate],
    rule: Rule,
    trace: Trace,
    params: ModelParams,
    split: int,
    size_gb: float | None = None,
    prices: Prices | None = None,
) -> Tuning:
    """Choose by validation: each family fitted on the earlier part (`fit`), the
    fitted candidates, every stock target and on-demand chosen among on the later part
    (from minute ``split``) by `decide`, every figure scaled to a month of
    `MONTH_HOURS` (a one-time charge counted once, in that month); with ``size_gb``, the
    table class advised on the month's figures at ``prices``."""
    fitted = fit(early, rule, requested_units(trace, end=split)) if split else {}
    kept = [
        c
        for c in later
        if c.pruned_by is not None or fitted.get(family(c.policy), c.policy) == c.policy
    ]
    minutes = trace.minutes - split
    scale = MONTH_MINUTES / minutes
    monthly = with_frontier([scaled(c, scale) for c in kept])
    requested = requested_units(trace, scale, start=split)
    tuning = decide(
        monthly, rule, trace, params, " a month", scale, requested, size_gb, prices or Prices()
    )
    validation = {
        "split_minute": split,
        "split_time": f"{trace.time(split):%Y-%m-%dT%H:%M}Z",
        "fit_minutes": split,
        "choose_minutes": minutes,
        "fitted": fitted,
        "month_hours": MONTH_HOURS,
        "signals": {
            "fast_path_seconds": params.fast_path_seconds,
            "fast_path_share": params.fast_path_share,
            "stream_seconds": params.stream_seconds,
        },
    }
    return replace(tuning, validation=validation, warnings=history_warnings(trace))


def simpler(pick: Candidate, eligible: Sequence[Candidate], rule: Rule) -> Candidate:
    """The simplest of the candidates the rule may recommend that are simpler than
    ``pick`` (`complexity`) and cost (or, under the price rule, score) no more than
    ``pick``'s plus its `noise`; ``pick`` itself when there is none. Of two as
    simple, the better by the rule."""
    rank = rank_by(rule)
    bar_ = rank(pick)[0] + noise(pick)
    level = complexity(pick.policy)
    near = [c for c in eligible if complexity(c.policy) < level and rank(c)[0] <= bar_]
    if not near:
        return pick
    return min(near, key=lambda c: (complexity(c.policy), *rank(c)))


def decide(
    placed: Sequence[Candidate],
    rule: Rule,
    trace: Trace,
    params: ModelParams,
    period: str = "",
    scale: float = 1.0,
    requested: float | None = None,
    size_gb: float | None = None,
    prices: Prices | None = None,
) -> Tuning:
    """The [`Tuning`][ddb_capacity_tools.simulator.candidates.Tuning] of candidates already
    placed ([`place`][ddb_capacity_tools.simulator.tune_runs.place]) on ``trace``;
    ``period`` follows every amount in the reason (" a month" when the candidates were
    scaled to a month), and ``scale`` is that scaling (the requested units are the trace's
    times ``scale``, unless ``requested`` gives them). Of the rule's pick and a simpler
    candidate within the noise, the simpler (`simpler`). With ``size_gb``, the table class
    for the pick's cost (its throughput: `class_advice`, at ``prices``), and the code sets
    it."""
    requested = requested_units(trace, scale) if requested is None else requested
    ruled, best = choose(placed, rule, requested)
    within = _eligible(placed, rule, best, requested)
    pick = simpler(ruled, within, rule)
    on_demand = on_demand_figures(placed, pick, within, rule)
    reason = reason_words(pick, best, rule, requested, len(within), on_demand, period)
    if pick is not ruled:
        reason += " " + simpler_words(pick, ruled, rule, period)
    # the table's throughput alone: what the library's functions cost is no table class's
    throughput = pick.cost - pick.running_usd
    classes = None if size_gb is None else class_advice(size_gb, throughput, prices or Prices())
    return Tuning(
        list(placed),
        pick,
        code_of(
            pick.policy,
            trace,
            params,
            prices or Prices(),
            None if classes is None else classes.recommended,
            pick.hours,
        ),
        best,
        rule,
        requested,
        reason + compared_words(placed, pick, period),
        on_demand,
        summary=recommendation_summary(pick, best, rule, pick is not ruled, period),
        simpler_than=None if pick is ruled else (ruled.policy, noise(ruled)),
        table_class=classes,
    )


def code_of(
    name: str,
    trace: Trace,
    params: ModelParams,
    prices: Prices,
    table_class: str | None = None,
    hours: tuple[bool, ...] = (),
) -> str:
    """The code printed with candidate ``name`` when it is recommended on ``trace``
    (`tune_code.code_for`), the table in ``table_class`` when given; declared windows at
    ``hours`` (`Candidate.hours`)."""
    return code_for(
        spec_of(name),
        trace,
        params,
        _warm_for(name, trace, params),
        table_class,
        _extras(name, trace, params, prices),
        hours,
    )


def _extras(name: str, trace: Trace, params: ModelParams, prices: Prices) -> tuple[str, ...]:
    """What the pasted code of ``name`` adds: the pre-warm method it was priced by
    (`prewarm_charge`), and ``stream`` for a `STREAM` candidate."""
    out: tuple[str, ...] = ("stream",) if streamed(name) else ()
    warm = _warm_for(name, trace, params)
    if warm is not None:
        out += (warm_charge(warm, trace, prices)[1],)
    return out


def _warm_for(name: str, trace: Trace, params: ModelParams) -> dict[str, int] | None:
    """A pre-warmed candidate's warm throughput, per dimension, for its code: the peak of
    the whole history / its target (the validation warmed it to the earlier part's)."""
    if not split_prewarm(name)[1]:
        return None
    return warm_levels(trace, trace.minutes, spec_of(name).value or 70, params)
