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

The rule ([`Rule`][]): the recommendation is the cheapest candidate that refuses no more
than the best stock setting (of stock target tracking at every target from 30 to 90 %, step
10, the one that refuses least), times 1 + the refusal tolerance (default 0), plus the
refusal floor: 0.02 % of the requested units by default (`REFUSAL_FLOOR`), below which
a difference in refusals is the simulator's noise, not the policy's. That stock setting is a
candidate itself, so there always is one; and the cheapest candidate within a limit on
refusals is always on the frontier. With a refusal price instead (dollars per million
refused units), the recommendation is the candidate whose cost plus its refusals at that
price is least. Of that pick and a simpler candidate (`complexity`) the rule also
allows at no more than the pick's cost plus its noise (`noise`: half the spread of
its cost over the ensemble), the simpler is recommended (`simpler`). The reason is
given in one sentence and in words, with what on-demand would cost (or, when it wins, by
how much); every term shown is explained (`terms`); a history shorter than
`MIN_HISTORY_DAYS` is warned of plainly. Its construct code is printed to paste.

Given the table's size, the table class is advised too (`class_advice`): the
recommendation's dollars a month under Standard and under Standard-Infrequent Access, its
storage plus its throughput in each, and the cheaper (`STANDARD_IA`), which the pasted code
then sets.
"""

from __future__ import annotations

import copy
import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TextIO

from ddb_capacity_runtime.core.policy import capacity_units

from ..tool_errors import TuneError as TuneError
from .ensemble import Spread
from .params import BOUNDS, ModelParams
from .policies import DEFAULT_TICK_MINUTES, Spec, parse
from .prices import Prices
from .run import DimensionResult, compose_hybrid, hybrid_base, simulate
from .text import bar, fixed_width
from .trace import Trace

__all__ = [
    "CANDIDATES",
    "MIN_HISTORY_DAYS",
    "MONTH_HOURS",
    "ON_DEMAND",
    "PREWARM",
    "REFUSAL_FLOOR",
    "STANDARD",
    "STANDARD_IA",
    "STOCK",
    "TABLE_CLASSES",
    "TERMS",
    "Candidate",
    "ClassAdvice",
    "ClassBill",
    "Rule",
    "TuneError",
    "Tuning",
    "choose",
    "class_advice",
    "class_lines",
    "code_for",
    "compared_only",
    "complexity",
    "decide",
    "family",
    "fit",
    "history_warnings",
    "noise",
    "place",
    "place_split",
    "scaled",
    "simpler",
    "spec_of",
    "split_prewarm",
    "terms",
    "validate",
    "validation_split",
    "warm_levels",
    "refusal_floor",
    "refusal_price",
    "refusal_tolerance",
    "requested_units",
    "table",
    "table_size_gb",
    "tune",
]

STOCK = tuple(f"stock:{t}" for t in range(30, 100, 10))
"""Stock target tracking at every target from 30 to 90 %, step 10: always run, always candidates;
the one that refuses least sets the limit on refusals."""
ON_DEMAND = "on-demand"
CANDIDATES = (
    *STOCK,
    "autopilot:50",
    "autopilot:60",
    "autopilot:70",
    "autopilot:80",
    "autopilot+stock:60",
    "autopilot+stock:70",
    "autopilot+stock:80",
    "autopilot+stock:90",
    "autopilot+stock:70+owned",
    "autopilot+stock:80+prewarm",
    "autopilot+stock:90+prewarm",
    "autopilot+stock:80+stream",
    "autopilot+stock:90+stream",
    "hybrid:70",
    ON_DEMAND,
)
"""What ``tune`` tries by default (the stock settings and on-demand are always tried). The
``+stream`` ones are left out when the model's signals are given (``--stream-seconds``,
``--fast-path-seconds``): every library policy runs with them then."""
PREWARM = "+prewarm"
"""The suffix of a candidate run on a pre-warmed table: its warm throughput raised once to the
earlier part's peak / T on each dimension (`warm_levels`), the one-time charge in its cost
(`prewarm_charge`)."""
STREAM = "+stream"
"""The suffix of a candidate run with the table's stream as a write signal (`STREAM_SECONDS`
late; no client code, writes only), the stream reader's own cost in its cost
(`stream_dollars`)."""
STREAM_SECONDS = 5
"""How late the stream's writes reach the stream reader, for a ``+stream`` candidate: DynamoDB
Streams shows a write within about a second, and Lambda polls each shard several times a second;
the reader's batching window (1 s by default) and its own time make the rest."""
SUFFIXES = (PREWARM, STREAM)
"""The suffixes a candidate may end with, in any order."""
PREWARM_METHODS = ("PROVISION_THEN_SETTLE", "WARM_THROUGHPUT")
"""How a pre-warmed candidate is priced and pasted (`prewarm_charge`): provisioned at the mark
for an hour, then settled (list prices); or DynamoDB's warm throughput, when its prices are
given (``--price warm_read_unit=USD --price warm_write_unit=USD``)."""
CANDIDATE_HELP = (
    "stock:T, autopilot, autopilot:T, autopilot+stock:T, autopilot+stock:T+owned, any of "
    "these with +prewarm (a pre-warmed table) and, but stock:T, +stream (the table's stream "
    "as a write signal), on-demand, or hybrid / hybrid:T (shown for comparison, never "
    "recommended)"
)
"""The policies tune can recommend, as --candidate values."""
PEAK_HEADROOM = 2
"""The pasted code's maximum is this many times the trace's peak (`bounds_for`)."""
MAX_TOLERANCE = 1.0
"""``--refusal-tolerance``'s largest value: 1 (100 %), twice the best stock's refusals."""
TOLERANCE_HELP = (
    "a fraction from 0 to 1 (0.1) or a percent from 0 to 100 followed by % (10%): how much "
    "more than the best stock setting the recommendation may refuse"
)
REFUSAL_FLOOR = 0.0002
"""The rule's default floor: refusals within this share of the requested units (2 in 10,000) of the
best stock setting's count as no more. Measured on the right-bill benchmark: with no floor, a choice
made on a week of traffic refusing 0 units instead of a few thousand in billions bought padding that
the next week did not need."""
MAX_FLOOR = 0.01
"""``--refusal-floor``'s largest value: 1 % of the requested units."""
FLOOR_HELP = (
    "a fraction from 0 to 0.01 (0.0002) or a percent from 0 to 1 followed by % (0.02%): the "
    "share of the requested units within which refusals count as no more than the best "
    "stock setting's"
)
MAX_PRICE = 1_000_000.0
"""``--refusal-price``'s largest value, dollars per million refused units."""
PRICE_HELP = (
    f"dollars per million refused units, more than 0 and at most {MAX_PRICE:,.0f} (1.5): "
    "the recommendation is then the candidate whose cost plus its refusals at this price "
    "is least"
)


def refusal_tolerance(text: str) -> float:
    """``--refusal-tolerance``: ``0.1`` or ``10%`` is 0.1 (the recommendation may refuse
    10 % more than the best stock setting); 0 to 1, or 0 % to 100 %."""
    return _fraction(text, "--refusal-tolerance", MAX_TOLERANCE, TOLERANCE_HELP)


def refusal_floor(text: str) -> float:
    """``--refusal-floor``: ``0.0002`` or ``0.02%`` is 0.0002 (refusals within 2 in 10,000
    requested units of the best stock setting's count as no more); 0 to 0.01, or 0 % to
    1 %."""
    return _fraction(text, "--refusal-floor", MAX_FLOOR, FLOOR_HELP)


def _fraction(text: str, option: str, most: float, allowed: str) -> float:
    """``text`` as a fraction from 0 to ``most``, written as one or as a percent with %."""
    value = text.strip()
    percent = value.endswith("%")
    number = value[:-1].strip() if percent else value
    if re.fullmatch(r"\d+(\.\d*)?|\.\d+", number):
        fraction = float(number) / (100 if percent else 1)
        if 0 <= fraction <= most:
            return fraction
    hint = (
        f" (for a percent, write it with %: {number}%)"
        if not percent and _is_number(number, most)
        else ""
    )
    raise TuneError(f"{option}: got {text!r}; expected {allowed}{hint}")


def _is_number(text: str, most: float) -> bool:
    """Whether ``text`` is a number above ``most`` that, read as a percent, is allowed."""
    try:
        return math.isfinite(float(text)) and most < float(text) <= most * 100
    except ValueError:
        return False


def refusal_price(text: str) -> float:
    """``--refusal-price``: dollars per million refused units, more than 0 (digits and a
    decimal point only)."""
    number = text.strip()
    value = float(number) if re.fullmatch(r"\d+(\.\d*)?|\.\d+", number) else math.nan
    if not (math.isfinite(value) and 0 < value <= MAX_PRICE):
        raise TuneError(f"--refusal-price: got {text!r}; expected {PRICE_HELP}")
    return value


MAX_SIZE_GB = BOUNDS["table_size_gb"][1]
"""``--table-size-gb``'s largest value (the model's)."""
SIZE_ALLOWED = (
    f"the table's size in GB, a number from 0 to {MAX_SIZE_GB:,.0f} (digits and a decimal "
    "point: 120 or 0.5)"
)
"""``--table-size-gb``'s values, in words."""
SIZE_HELP = (
    f"{SIZE_ALLOWED}; GB of 2^30 bytes, its indexes' included. Given, tune also advises the "
    "table class; with --key-skew, it also sets the partitions (0 when not given)"
)
"""``--table-size-gb``'s help."""


def table_size_gb(text: str) -> float:
    """``--table-size-gb``: the table's size in GB, a number from 0 to `MAX_SIZE_GB`
    (digits and a decimal point only)."""
    number = text.strip()
    value = float(number) if re.fullmatch(r"\d+(\.\d*)?|\.\d+", number) else math.nan
    if not (math.isfinite(value) and value <= MAX_SIZE_GB):
        raise TuneError(f"--table-size-gb: got {text!r}; expected {SIZE_ALLOWED}")
    return value


@dataclass(frozen=True)
class Rule:
    """How the recommendation is chosen. By default (``price`` None) the cheapest candidate
    within the limit: the best stock setting's refusals x (1 + ``tolerance``), plus
    ``floor`` x the requested units. With ``price`` (dollars per million refused units),
    the candidate whose cost plus its refusals at that price is least; ``tolerance`` and
    ``floor`` then play no part."""

    tolerance: float = 0.0
    floor: float = REFUSAL_FLOOR
    price: float | None = None

    def limit(self, best: Candidate, requested: float) -> float:
        """The most refused units a candidate may have to be recommended (the limit rule)."""
        return best.refused * (1 + self.tolerance) + self.floor * requested

    def as_json(self, best: Candidate, requested: float) -> dict[str, Any]:
        return {
            "best_stock": best.policy,
            "refusal_tolerance": self.tolerance,
            "refusal_floor": self.floor,
            "requested_units": round(requested, 6),
            "refusal_limit": None
            if self.price is not None
            else round(self.limit(best, requested), 6),
            "refusal_price": self.price,
        }


def requested_units(trace: Trace, scale: float = 1.0) -> float:
    """The units ``trace`` asks for, every dimension's (units/s per minute x 60), times
    ``scale``."""
    return sum(sum(series) for series in trace.demand.values()) * 60 * scale


@dataclass(frozen=True)
class Candidate:
    """One candidate over the ensemble: refused units and cost, summed over dimensions."""

    policy: str
    throttled_requests: Spread
    cost_usd: Spread
    frontier: bool = False
    once_usd: float | None = 0.0
    """Of ``cost_usd``, the one-time charge (pre-warming); None: a charge is due but not priced
    (``cost_usd`` then holds the running cost only)."""

    @property
    def refused(self) -> float:
        return self.throttled_requests.median

    @property
    def cost(self) -> float:
        return self.cost_usd.median

    def as_json(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "throttled_requests": self.throttled_requests.as_json(),
            "cost_usd": self.cost_usd.as_json(),
            "frontier": self.frontier,
            "compared_only": compared_only(self),
            "one_time_usd": None if self.once_usd is None else round(self.once_usd, 6),
        }


@dataclass(frozen=True)
class Tuning:
    """The candidates, the one recommended and why, and its construct code. ``best_stock``
    is the stock setting that refuses least; ``rule`` how the recommendation was chosen,
    over ``requested`` units (read + write)."""

    candidates: list[Candidate]
    recommended: Candidate
    code: str
    best_stock: Candidate
    rule: Rule
    requested: float
    reason: str
    on_demand: dict[str, Any]
    summary: str = ""
    """the recommendation in one sentence"""
    validation: dict[str, Any] = field(default_factory=dict)
    """how the history was split, and what the earlier part fitted (`validate`)"""
    warnings: tuple[str, ...] = ()
    """plain warnings: a history too short to judge (`history_warnings`)"""
    simpler_than: tuple[str, float] | None = None
    """a simpler candidate preferred within the noise: (the one the rule picked, the noise)"""
    table_class: ClassAdvice | None = None
    """the table class advised (`class_advice`); None: the table's size was not given"""

    @property
    def limit(self) -> float:
        """The limit on refused units (median) of the limit rule."""
        return self.rule.limit(self.best_stock, self.requested)

    @property
    def frontier(self) -> list[Candidate]:
        """The frontier, cheapest first."""
        return sorted((c for c in self.candidates if c.frontier), key=lambda c: c.cost)

    def as_json(self) -> dict[str, Any]:
        return {
            "candidates": [c.as_json() for c in self.candidates],
            "frontier": [c.policy for c in self.frontier],
            "recommended": self.recommended.policy,
            "reason": self.reason,
            "rule": self.rule.as_json(self.best_stock, self.requested),
            "on_demand": self.on_demand,
            "code": self.code,
            "summary": self.summary,
            "validation": self.validation,
            "warnings": list(self.warnings),
            "table_class": None if self.table_class is None else self.table_class.as_json(),
        }


def place(
    trace: Trace,
    names: Sequence[str],
    settings: Sequence[ModelParams],
    prices: Prices | None = None,
    tick: int = DEFAULT_TICK_MINUTES,
    workers: int | None = None,
    score_from: int | None = None,
    progress: TextIO | None = None,
) -> list[Candidate]:
    """Every policy of ``names`` over ``trace`` under each of ``settings`` (policies in
    ``workers`` processes, default the CPU count), refused units and cost summed over the
    dimensions, counted from minute ``score_from`` on (None: every minute; the policies
    run over, and learn from, every minute either way); frontier marked among the
    candidates that can be recommended. A hybrid is composed from its base's and
    on-demand's runs, which run once whether or not they are candidates themselves. A
    pre-warmed candidate (`PREWARM`) runs on a table warmed to the peak of the
    minutes before ``score_from`` (all of them when None) / its target, the one-time
    charge in its cost. A progress bar on ``progress``, one step per run."""
    prices = prices or Prices()
    until = score_from or trace.minutes
    runs = _runs(trace, names, settings, prices, tick, workers, score_from, progress)
    once = {n: _once(n, trace, until, prices, settings[0]) for n in names}
    scored = trace.minutes - (score_from or 0)
    return _with_frontier(
        [_candidate(n, runs, once[n], stream_dollars(n, trace, scored, prices)) for n in names]
    )


def place_split(
    trace: Trace,
    names: Sequence[str],
    settings: Sequence[ModelParams],
    prices: Prices | None,
    tick: int,
    workers: int | None,
    split: int,
    progress: TextIO | None = None,
) -> tuple[list[Candidate], list[Candidate]]:
    """(the earlier part's candidates, the later part's): every policy of ``names`` run
    once over the whole trace (`place`), counted over minutes 0 to ``split`` and from
    ``split`` on. A policy sees only the past, so what it did before ``split`` is what it
    would have done on the earlier part alone. The hybrid is not counted on the earlier
    part (it is never fitted)."""
    prices = prices or Prices()
    runs = _runs(trace, names, settings, prices, tick, workers, split, progress)
    once = {n: _once(n, trace, split, prices, settings[0]) for n in names}
    rest = trace.minutes - split
    later = _with_frontier(
        [_candidate(n, runs, once[n], stream_dollars(n, trace, rest, prices)) for n in names]
    )
    early = [
        _early(n, runs, split, prices, (once[n], stream_dollars(n, trace, split, prices)))
        for n in names
        if spec_of(n).kind != "hybrid"
    ]
    return early, later


def _runs(
    trace: Trace,
    names: Sequence[str],
    settings: Sequence[ModelParams],
    prices: Prices,
    tick: int,
    workers: int | None,
    score_from: int | None,
    progress: TextIO | None,
) -> list[list[DimensionResult]]:
    """Per setting, the results of every policy of ``names`` (see `place`)."""
    warmed, ran, hybrids = _run_plan(names, settings[0].max_capacity)
    scored = {} if score_from is None else {"score_from": score_from}
    streams = [n for n in names if streamed(n) and n not in warmed]
    total, done = len(settings) * (1 + len(warmed) + bool(streams)), 0
    runs = []
    for n, p in enumerate(settings, 1):
        bar(progress, "tune", done, total, "runs", f"model setting {n} of {len(settings)}")
        results = simulate(
            trace, ran, p, prices, None, tick, None, workers or os.cpu_count() or 1, **scored
        )
        results += _hybrids(hybrids, results, trace, prices, score_from or 0)
        done += 1
        if streams:
            bar(progress, "tune", done, total, "runs", f"with the stream, setting {n}")
            results += _with_stream(streams, trace, p, prices, tick, workers, score_from)
            done += 1
        for name in warmed:
            bar(progress, "tune", done, total, "runs", f"{name}, setting {n}")
            results += _prewarmed(name, trace, p, prices, tick, score_from)
            done += 1
        runs.append(results)
    bar(progress, "tune", total, total, "runs", "")
    return runs


def _run_plan(names: Sequence[str], max_capacity: int) -> tuple[list[str], list[Spec], list[Spec]]:
    """What `_runs` runs for ``names``: the pre-warmed candidates (run on their own), the
    policies simulated together (each hybrid's base and on-demand among them), and the
    hybrids (composed from those)."""
    warmed = [n for n in names if split_prewarm(n)[1]]
    specs = [parse(n, max_capacity) for n in names if n not in warmed and not streamed(n)]
    hybrids = [s for s in specs if s.kind == "hybrid"]
    needed = [hybrid_base(s) for s in hybrids] + ([parse(ON_DEMAND)] if hybrids else [])
    ran = [s for s in specs if s.kind != "hybrid"]
    ran += [s for s in needed if s.text not in {r.text for r in ran}]
    return warmed, ran, hybrids


def _hybrids(
    hybrids: Sequence[Spec],
    results: Sequence[DimensionResult],
    trace: Trace,
    prices: Prices,
    score_from: int,
) -> list[DimensionResult]:
    """Each hybrid of ``hybrids`` composed from its base's and on-demand's ``results``."""
    out: list[DimensionResult] = []
    od = [r for r in results if r.policy == ON_DEMAND]
    for h in hybrids:
        base = [r for r in results if r.policy == hybrid_base(h).text]
        out += compose_hybrid(h, base, od, trace, prices, score_from)
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
    scored = {} if score_from is None else {"score_from": score_from}
    results = simulate(trace, [spec], warm, prices, None, tick, None, 1, **scored)
    for r in results:
        r.policy = name
    return results


def _with_stream(
    names: Sequence[str],
    trace: Trace,
    params: ModelParams,
    prices: Prices,
    tick: int,
    workers: int | None,
    score_from: int | None,
) -> list[DimensionResult]:
    """The `STREAM` candidates ``names`` run together with the table's stream as a signal
    (`STREAM_SECONDS` late, unless the model gives its own), their results named by
    candidate."""
    streaming = replace(params, stream_seconds=params.stream_seconds or STREAM_SECONDS)
    specs = {n: spec_of(n, params.max_capacity) for n in names}
    scored = {} if score_from is None else {"score_from": score_from}
    unique = list({s.text: s for s in specs.values()}.values())
    ran = simulate(
        trace, unique, streaming, prices, None, tick, None, workers or os.cpu_count() or 1, **scored
    )
    out = []
    for name, spec in specs.items():
        for r in ran:
            if r.policy == spec.text:
                mine = copy.copy(r)
                mine.policy = name
                out.append(mine)
    return out


def stream_dollars(name: str, trace: Trace, minutes: int, prices: Prices) -> float:
    """What the stream reader costs over ``minutes`` of ``trace`` for a `STREAM`
    candidate (0 for any other): its monthly cost at the trace's mean write rate, counting
    the table's and each GSI's writes (`stream_cost.monthly_stream_cost`), pro rata."""
    if not streamed(name) or minutes <= 0:
        return 0.0
    from ..stream_cost import monthly_stream_cost

    writes = [
        v for (index, d), vs in trace.demand.items() if d == "write" and index is None for v in vs
    ]
    rate = sum(writes) / len(writes) if writes else 0.0
    dimensions = sum(1 for _, d in trace.demand if d == "write")
    monthly = monthly_stream_cost(rate, dimensions=max(1, dimensions), prices=prices).total
    return monthly * minutes / MONTH_MINUTES


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
    return _warm_charge(levels, trace, prices)[0]


def _warm_charge(levels: dict[str, int], trace: Trace, prices: Prices) -> tuple[float, str]:
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
    (``recurring``: the stream reader's) added to each cost."""
    mine = [[r for r in results if r.policy == name] for results in runs]
    extra = (once or 0.0) + recurring
    return Candidate(
        name,
        Spread.of([sum(r.throttled_requests for r in rs) for rs in mine]),
        Spread.of([sum(r.cost_usd for r in rs) + extra for rs in mine]),
        once_usd=once,
    )


def _early(
    name: str,
    runs: Sequence[Sequence[DimensionResult]],
    split: int,
    prices: Prices,
    added: tuple[float | None, float],
) -> Candidate:
    """``name``'s results over minutes 0 to ``split`` only, from what each run recorded;
    ``added``: the one-time charge and the recurring one over those minutes, added to
    each cost."""
    once, recurring = added
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
                else prices.provisioned(r.key[1], sum(r.recorded.provisioned[:split]))
                for r in mine
            )
        )
    return Candidate(name, Spread.of(refused), Spread.of(cost), once_usd=once)


def compared_only(c: Candidate) -> bool:
    """Whether ``c`` is shown for comparison and never recommended: a policy the library
    does not deploy (the hybrid: the scaler does not switch billing modes), or one whose
    one-time charge is not priced (a pre-warmed table without ``warm_*_unit`` prices)."""
    return spec_of(c.policy).kind == "hybrid" or c.once_usd is None


def suffixes(name: str) -> tuple[str, frozenset[str]]:
    """(the policy without its `SUFFIXES`, the suffixes it ends with)."""
    text, found = name.strip(), set[str]()
    while True:
        end = next((x for x in SUFFIXES if text.endswith(x) and x not in found), None)
        if end is None:
            return text, frozenset(found)
        text = text[: -len(end)]
        found.add(end)


def split_prewarm(name: str) -> tuple[str, bool]:
    """(the policy without its suffixes, whether the table is pre-warmed: `PREWARM`)."""
    text, found = suffixes(name)
    return text, PREWARM in found


def streamed(name: str) -> bool:
    """Whether the candidate runs with the table's stream as a signal (`STREAM`)."""
    return STREAM in suffixes(name)[1]


def spec_of(name: str, max_capacity: int = 40_000, option: str = "--policy") -> Spec:
    """The policy a candidate runs (a pre-warmed one's, without `PREWARM`)."""
    return parse(split_prewarm(name)[0], max_capacity, option)


def _with_frontier(placed: Sequence[Candidate]) -> list[Candidate]:
    """``placed``, each that can be recommended marked on the frontier when no other that
    can refuses no more and costs no more, and less on one of the two (medians)."""
    out = []
    rivals = [o for o in placed if not compared_only(o)]
    for c in placed:
        beaten = compared_only(c) or any(
            o.refused <= c.refused
            and o.cost <= c.cost
            and (o.refused < c.refused or o.cost < c.cost)
            for o in rivals
        )
        out.append(replace(c, frontier=not beaten))
    return out


def _within(value: float, limit: float) -> bool:
    """``value`` <= ``limit``, float noise aside (sums over settings and dimensions)."""
    return value <= limit * (1 + 1e-9) + 1e-6


def _score(c: Candidate, price: float) -> float:
    """The price rule's score: cost plus the refused units at ``price`` per million."""
    return c.cost + c.refused * price / 1_000_000


def choose(
    placed: Sequence[Candidate], rule: Rule = Rule(), requested: float = 0.0
) -> tuple[Candidate, Candidate]:
    """(the recommendation, the best stock setting). The best stock setting is the one of
    `STOCK` refusing least (the cheaper of two that refuse as little). The limit rule
    recommends the cheapest candidate within ``rule``'s limit over ``requested`` units (of
    two as cheap, the one refusing less); the price rule the one whose cost plus refusals
    at the price is least (of two as good, the one refusing less)."""
    stock = [c for c in placed if c.policy in STOCK]
    if not stock:
        raise TuneError(f"tune: no stock setting among the candidates ({', '.join(STOCK)})")
    best = min(stock, key=lambda c: (c.refused, c.cost))
    return min(_eligible(placed, rule, best, requested), key=_rank(rule)), best


def _rank(rule: Rule) -> Callable[[Candidate], tuple[float, float]]:
    """How ``rule`` orders the candidates it may recommend, best first: by cost (the limit
    rule) or by cost plus the refusals at the price, then by refusals."""
    price = rule.price
    if price is None:
        return lambda c: (c.cost, c.refused)
    return lambda c: (_score(c, price), c.refused)


def _eligible(
    placed: Sequence[Candidate], rule: Rule, best: Candidate, requested: float
) -> list[Candidate]:
    """The candidates the rule lets be recommended: within the limit (every one, under the
    price rule); never one shown for comparison only."""
    placed = [c for c in placed if not compared_only(c)]
    if rule.price is not None:
        return placed
    limit = rule.limit(best, requested)
    return [c for c in placed if _within(c.refused, limit)]


def tune(
    trace: Trace,
    settings: Sequence[ModelParams],
    candidates: Sequence[str] = CANDIDATES,
    prices: Prices | None = None,
    tick: int = DEFAULT_TICK_MINUTES,
    workers: int | None = None,
    rule: Rule = Rule(),
    progress: TextIO | None = None,
    size_gb: float | None = None,
) -> Tuning:
    """``candidates``, the stock settings of `STOCK` and on-demand over ``trace``
    under ``settings``, chosen by validation (`validate`): fitted on the earlier half,
    chosen on the later half, figures a month; with ``size_gb``, the table class advised
    too. A progress bar on ``progress``."""
    names = list(dict.fromkeys([*candidates, *STOCK, ON_DEMAND]))
    if settings[0].stream_seconds is not None or settings[0].fast_path_seconds is not None:
        names = [n for n in names if not streamed(n)]  # every library policy has them
    split = validation_split(trace)
    early, later = place_split(trace, names, settings, prices, tick, workers, split, progress)
    return validate(early, later, rule, trace, settings[0], split, size_gb, prices)


MIN_HISTORY_DAYS = 2
"""A history shorter than this many days is too short to judge (`history_warnings`)."""
MONTH_HOURS = 730
"""A month, as AWS bills it: 730 hours."""
MONTH_MINUTES = MONTH_HOURS * 60


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
        f"warning: {trace.name} holds {trace.minutes:,} minutes of traffic; at least "
        f"{MIN_HISTORY_DAYS} days ({need:,} minutes) are needed to judge: one day to fit "
        "on and one to choose on, each a whole daily cycle and a whole day of DynamoDB's "
        "decrease quota. Treat the recommendation as a guess, and tune again on a longer "
        "history (--days, or a longer --trace).",
    )


def family(name: str) -> str:
    """The candidates that differ only in their target: ``autopilot+stock:70+owned`` is of
    ``autopilot+stock:T+owned``."""
    return re.sub(r":\d+", ":T", name)


def fit(early: Sequence[Candidate], rule: Rule, requested: float) -> dict[str, str]:
    """Per family (`family`) of more than one candidate, the member ``rule`` picks
    on the earlier part (the cheapest within the limit that the stock setting refusing
    least there sets, over ``requested`` units; the one refusing least when none is within;
    under the price rule, the best at the price). Stock target tracking is not fitted: every
    target goes on to the later part, where the stock setting refusing least sets the
    limit."""
    stock = [c for c in early if c.policy in STOCK]
    best = min(stock, key=lambda c: (c.refused, c.cost))
    limit = rule.limit(best, requested)
    groups: dict[str, list[Candidate]] = {}
    for c in early:
        groups.setdefault(family(c.policy), []).append(c)
    out = {}
    for name, members in groups.items():
        if name == "stock:T" or len(members) < 2:
            continue
        within = [c for c in members if rule.price is not None or _within(c.refused, limit)]
        pick = (
            min(within, key=_rank(rule))
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
    fitted = fit(early, rule, _requested(trace, 0, split)) if split else {}
    kept = [c for c in later if fitted.get(family(c.policy), c.policy) == c.policy]
    minutes = trace.minutes - split
    scale = MONTH_MINUTES / minutes
    monthly = _with_frontier([scaled(c, scale) for c in kept])
    requested = _requested(trace, split, trace.minutes) * scale
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


def _requested(trace: Trace, start: int, end: int) -> float:
    """The units ``trace`` asks for from minute ``start`` to ``end``."""
    return sum(sum(series[start:end]) for series in trace.demand.values()) * 60


def scaled(c: Candidate, factor: float) -> Candidate:
    """``c`` with its refused units and running cost times ``factor`` (its one-time charge
    counted once)."""
    once = c.once_usd or 0.0

    def times(s: Spread, fixed: float = 0.0) -> Spread:
        return Spread(
            (s.min - fixed) * factor + fixed,
            (s.median - fixed) * factor + fixed,
            (s.max - fixed) * factor + fixed,
        )

    return replace(
        c, throttled_requests=times(c.throttled_requests), cost_usd=times(c.cost_usd, once)
    )


def complexity(name: str) -> int:
    """How much a candidate deploys beyond a table: stock target tracking and on-demand 0,
    the autopilot scaler 1 (on stock too), owning the target value 1 more, pre-warming 1
    more."""
    spec = spec_of(name)
    n = 1 if spec.kind in ("autopilot", "throttle-aware", "hybrid") else 0
    return n + spec.owned + split_prewarm(name)[1]


def noise(c: Candidate) -> float:
    """The noise of ``c``'s cost: half the spread of its cost over the ensemble's model
    settings (max - min) / 2. A cost difference smaller than that is not one the model can
    vouch for."""
    return (c.cost_usd.max - c.cost_usd.min) / 2


def simpler(pick: Candidate, eligible: Sequence[Candidate], rule: Rule) -> Candidate:
    """The simplest of the candidates the rule may recommend that are simpler than
    ``pick`` (`complexity`) and cost (or, under the price rule, score) no more than
    ``pick``'s plus its `noise`; ``pick`` itself when there is none. Of two as
    simple, the better by the rule."""
    rank = _rank(rule)
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
    """The [`Tuning`][] of candidates already placed ([`place`][]) on ``trace``;
    ``period`` follows every amount in the reason (" a month" when the candidates were
    scaled to a month), and ``scale`` is that scaling (the requested units are the
    trace's times ``scale``, unless ``requested`` gives them). Of the rule's pick and a
    simpler candidate within the noise, the simpler (`simpler`). With ``size_gb``, the
    table class for the pick's cost (its throughput: `class_advice`, at ``prices``), and
    the code sets it."""
    requested = requested_units(trace, scale) if requested is None else requested
    ruled, best = choose(placed, rule, requested)
    within = _eligible(placed, rule, best, requested)
    pick = simpler(ruled, within, rule)
    on_demand = _on_demand(placed, pick, within, rule)
    reason = _reason(pick, best, rule, requested, len(within), on_demand, period)
    if pick is not ruled:
        reason += " " + _simpler_words(pick, ruled, rule, period)
    classes = None if size_gb is None else class_advice(size_gb, pick.cost, prices or Prices())
    return Tuning(
        list(placed),
        pick,
        code_for(
            spec_of(pick.policy),
            trace,
            params,
            _warm_for(pick.policy, trace, params),
            None if classes is None else classes.recommended,
            _extras(pick.policy, trace, params, prices or Prices()),
        ),
        best,
        rule,
        requested,
        reason + _compared_words(placed, pick, period),
        on_demand,
        summary=_summary(pick, best, rule, pick is not ruled, period),
        simpler_than=None if pick is ruled else (ruled.policy, noise(ruled)),
        table_class=classes,
    )


def _extras(name: str, trace: Trace, params: ModelParams, prices: Prices) -> tuple[str, ...]:
    """What the pasted code of ``name`` adds: the pre-warm method it was priced by
    (`prewarm_charge`), and ``stream`` for a `STREAM` candidate."""
    out: tuple[str, ...] = ("stream",) if streamed(name) else ()
    warm = _warm_for(name, trace, params)
    if warm is not None:
        out += (_warm_charge(warm, trace, prices)[1],)
    return out


def _warm_for(name: str, trace: Trace, params: ModelParams) -> dict[str, int] | None:
    """A pre-warmed candidate's warm throughput, per dimension, for its code: the peak of
    the whole history / its target (the validation warmed it to the earlier part's)."""
    if not split_prewarm(name)[1]:
        return None
    return warm_levels(trace, trace.minutes, spec_of(name).value or 70, params)


def _simpler_words(pick: Candidate, ruled: Candidate, rule: Rule, period: str) -> str:
    extra = _rank(rule)(pick)[0] - _rank(rule)(ruled)[0]
    verb = "costs" if rule.price is None else "scores"
    than = (
        f"{verb} as much"
        if abs(extra) < 0.005
        else f"{verb} ${abs(extra):,.2f}{period} {'more' if extra > 0 else 'less'}"
    )
    return (
        f"The rule alone picks {ruled.policy} (${ruled.cost:,.2f}{period}); {pick.policy} is "
        f"simpler to deploy and {than}, within the noise "
        f"(${noise(ruled):,.2f}: half the spread of {ruled.policy}'s cost over the ensemble), "
        "so the simpler is recommended."
    )


def _summary(pick: Candidate, best: Candidate, rule: Rule, simpler_than: bool, period: str) -> str:
    """The recommendation in one sentence."""
    c, r = pick.cost_usd, pick.throttled_requests
    if rule.price is not None:
        why = f"the least cost plus refused units at ${rule.price:,.2f} per million"
    else:
        why = (
            f"the cheapest that refuses no more than {best.policy} (the stock target "
            "refusing least) allows"
        )
        why = f"the simplest within the noise of {why}" if simpler_than else why
    return (
        f"Use {pick.policy}: {why}, at ${c.median:,.2f}{period} (${c.min:,.2f} to "
        f"${c.max:,.2f} over the ensemble), refusing {r.median:,.0f} units{period} "
        f"({r.min:,.0f} to {r.max:,.0f})."
    )


def _on_demand(
    placed: Sequence[Candidate], pick: Candidate, within: Sequence[Candidate], rule: Rule
) -> dict[str, Any]:
    """On-demand against the recommendation, or, when on-demand is the recommendation,
    against the provisioned candidate the rule would pick without it (the cheapest within
    the limit, or the best at the refusal price): ``difference_usd`` is what on-demand
    saves in dollars (negative: what it costs more)."""
    od = next((c for c in placed if c.policy == ON_DEMAND), None)
    if od is None:
        return {"wins": False, "cost_usd": None}
    provisioned = [c for c in within if c.policy != ON_DEMAND]
    versus = min(provisioned, key=_rank(rule), default=None) if pick is od else pick
    return {
        "wins": pick is od,
        "cost_usd": round(od.cost, 6),
        "throttled_requests": round(od.refused, 6),
        "within_limit": any(c is od for c in within),
        "versus": versus.policy if versus else None,
        "versus_cost_usd": round(versus.cost, 6) if versus else None,
        "difference_usd": round(versus.cost - od.cost, 6) if versus else None,
    }


def _money(value: float) -> str:
    return f"${value:,.2f}"


def _share(part: float, whole: float) -> str:
    return f"{part / whole:.0%}" if whole > 0 else "all"


def _reason(
    pick: Candidate,
    best: Candidate,
    rule: Rule,
    requested: float,
    count: int,
    od: dict[str, Any],
    period: str = "",
) -> str:
    """Why ``pick``, in words; ``period`` follows every amount."""

    def money(value: float) -> str:
        return f"${value:,.2f}{period}"

    units = f"units{period}"
    if rule.price is not None:
        charge = pick.refused * rule.price / 1_000_000
        words = [
            f"{pick.policy} costs the least once each refused unit is charged at "
            f"${rule.price:,.2f} per million: {money(pick.cost)} and {pick.refused:,.0f} "
            f"{units} refused ({money(charge)} at that price), medians over the ensemble."
        ]
    else:
        words = [
            f"{pick.policy} is the cheapest of the {count} candidate(s) that refuse "
            f"{_allowed(best, rule, requested, units)}: {money(pick.cost)}, "
            f"{pick.refused:,.0f} {units} refused (medians over the ensemble)."
        ]
    if pick is not best and not (od.get("wins") and od.get("versus") == best.policy):
        saved = best.cost - pick.cost
        more = "less" if saved >= 0 else "more"
        words.append(
            f"It costs {money(abs(saved))} ({_share(abs(saved), best.cost)}) {more} than "
            f"{best.policy} ({money(best.cost)}, {best.refused:,.0f} {units} refused), the "
            "stock setting that refuses least."
        )
    words.append(_on_demand_words(od, money, units))
    return " ".join(words)


def _compared_words(placed: Sequence[Candidate], pick: Candidate, period: str) -> str:
    """What each candidate shown for comparison only would cost and refuse, against the
    recommendation."""
    words = []
    for c in placed:
        if c.once_usd is None:
            words.append(
                f" {c.policy} would cost ${c.cost:,.2f}{period} and refuse {c.refused:,.0f} "
                f"units{period} before its one-time pre-warming charge, which is not priced: "
                "give --price warm_read_unit=USD and --price warm_write_unit=USD to weigh it."
            )
            continue
        if not compared_only(c):
            continue
        saved = pick.cost - c.cost
        words.append(
            f" {c.policy} (on-demand in the hours where it cost less on past days) would cost "
            f"${c.cost:,.2f}{period} ({_share(abs(saved), pick.cost)} "
            f"{'less' if saved >= 0 else 'more'} than the recommendation) and refuse "
            f"{c.refused:,.0f} units{period}; it is shown for comparison only: the scaler does "
            "not switch billing modes."
        )
    return "".join(words)


def _allowed(best: Candidate, rule: Rule, requested: float, units: str) -> str:
    """The limit rule's limit, in words."""
    parts = [f"{best.refused:,.0f} {units}: the stock setting that refuses least"]
    if rule.tolerance:
        parts.append(f"plus {rule.tolerance:.0%}")
    if rule.floor:
        parts.append(
            f"plus {rule.floor:.2%} of the {requested:,.0f} requested {units} "
            f"({rule.floor * requested:,.0f})"
        )
    limit = rule.limit(best, requested)
    extra = f", {limit:,.0f} {units} in all" if len(parts) > 1 else ""
    return f"no more than {best.policy} refuses ({', '.join(parts)}{extra})"


def _on_demand_words(od: dict[str, Any], money: Any, units: str) -> str:
    if od["cost_usd"] is None:
        return "On-demand was not run."
    if od["wins"] and od["versus"] is not None:
        return (
            f"On-demand wins: {money(od['difference_usd'])} "
            f"({_share(od['difference_usd'], od['versus_cost_usd'])}) less than "
            f"{od['versus']} ({money(od['versus_cost_usd'])}), the provisioned candidate the "
            "rule would pick without it."
            if od["difference_usd"] >= 0
            else f"On-demand wins on refusals: it costs {money(-od['difference_usd'])} more "
            f"than {od['versus']} ({money(od['versus_cost_usd'])}), the provisioned candidate "
            "the rule would pick without it."
        )
    if not od["within_limit"]:
        return (
            f"On-demand would cost {money(od['cost_usd'])} but refuses "
            f"{od['throttled_requests']:,.0f} {units}, more than the limit: it serves at once only "
            "up to double its previous peak (more about 30 minutes later), and a hot key's "
            "partition throttles whatever the mode."
        )
    if od["difference_usd"] > 0:  # cheaper, but its refusals cost more at the price
        return (
            f"On-demand would cost {money(od['cost_usd'])}, {money(od['difference_usd'])} "
            f"less, but refuses {od['throttled_requests']:,.0f} {units}."
        )
    return f"On-demand would cost {money(od['cost_usd'])}, {money(-od['difference_usd'])} more."


def bounds_for(
    trace: Trace, params: ModelParams, target_percent: int
) -> dict[str, tuple[int, int]]:
    """Per dimension (``read``, ``write``), the range the pasted code gives it, from the
    traffic's own range at the target utilization (``T`` %):

    - min: the trace's lowest minute of that dimension / T, rounded up: never more than
      its quietest minute needs, so the range does not keep capacity the traffic never
      asked for;
    - max: ``PEAK_HEADROOM`` (2) x its busiest minute / T, rounded up: room for traffic up
      to twice the trace's peak before a raise is capped;

    both within the model's range (``--min-capacity`` to ``--max-capacity``, 1 to 40,000 by
    default), and the max at least the min. The table's own dimensions are read, else (a
    trace of one GSI) the first of that dimension."""
    target = target_percent / 100
    out = {}
    for dim in ("read", "write"):
        keys = [k for k in trace.demand if k[1] == dim]
        key = (None, dim) if (None, dim) in trace.demand else keys[0] if keys else None
        demand = trace.demand[key] if key is not None else []
        low, peak = min(demand, default=0.0), max(demand, default=0.0)
        lo, hi = params.min_capacity, params.max_capacity
        least = max(lo, min(hi, capacity_units(low / target)))
        most = max(least, min(hi, capacity_units(PEAK_HEADROOM * peak / target)))
        out[dim] = (least, most)
    return out


def code_for(
    spec: Spec,
    trace: Trace,
    params: ModelParams,
    warm: dict[str, int] | None = None,
    table_class: str | None = None,
    extras: tuple[str, ...] = (),
) -> str:
    """The construct code that deploys ``spec`` on a table, each dimension's range from the
    trace's traffic (`bounds_for`); with ``warm`` (per dimension), the table
    pre-warmed to it (``PROVISION_THEN_SETTLE`` in ``extras``: provisioned at the marks, then
    settled; else by warm throughput); with the fast path's signals on in ``params``, or
    ``stream`` in ``extras``, the fast path; with ``table_class`` `STANDARD_IA`, the table
    in that class (Standard is the default)."""
    klass = f"table_class=dynamodb.TableClass.{STANDARD_IA}" if table_class == STANDARD_IA else ""
    line = f"    {klass},\n" if klass else ""
    settle = bool(warm) and "PROVISION_THEN_SETTLE" in extras
    if "stream" in extras:
        params = replace(params, stream_seconds=params.stream_seconds or STREAM_SECONDS)
    if spec.kind == "on-demand":
        return (
            "dynamodb.Table(self, 'Table', partition_key=..., "
            f"billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST{', ' + klass if klass else ''})\n"
        )
    target = spec.value or 70
    (r_lo, r_hi), (w_lo, w_hi) = bounds_for(trace, params, target).values()
    if spec.kind == "stock" or (spec.kind == "autopilot" and spec.with_stock):
        if settle:
            line += "    prewarm=PrewarmMethod.PROVISION_THEN_SETTLE,\n"
        table = _provisioned_table_code(target, (r_lo, r_hi), (w_lo, w_hi), warm, line)
        if spec.kind == "stock":
            return table + _fast_path_code(params, False)
        owned = ", own_target=True" if spec.owned else ""
        return (
            f"table = {table}"
            f"ThrottleAwareScaler(self, 'Scaler', tables=[table]{owned})  # the autopilot mode\n"
            + _fast_path_code(params, True)
        )
    if spec.kind == "autopilot":
        priced = (
            "# pre-warming was priced as an hour provisioned at the marks: a ProvisionedTable "
            "with prewarm=PrewarmMethod.PROVISION_THEN_SETTLE pays that; warm throughput's "
            "one-time charge may differ\n"
            if settle
            else ""
        )
        return (
            priced
            + _autopilot_code(target, (r_lo, r_hi), (w_lo, w_hi), warm, line)
            + _fast_path_code(params, True)
        )
    raise ValueError(f"code_for: no construct code for {spec.text!r}")


def _provisioned_table_code(
    target: int,
    read: tuple[int, int],
    write: tuple[int, int],
    warm: dict[str, int] | None,
    line: str,
) -> str:
    """A ProvisionedTable at the ranges and ``target``, each dimension's high-water mark
    ``warm`` when it has one; ``line``: its further props (the table class, the pre-warm
    method) or nothing."""
    marks = {
        d: f", high_water_mark={warm[d]}" if warm and warm[d] else "" for d in ("read", "write")
    }
    return (
        "ProvisionedTable(\n"
        "    self, 'Table', partition_key=...,\n"
        f"    read=Capacity(min_capacity={read[0]}, max_capacity={read[1]}, "
        f"target_utilization_percent={target}{marks['read']}),\n"
        f"    write=Capacity(min_capacity={write[0]}, max_capacity={write[1]}, "
        f"target_utilization_percent={target}{marks['write']}),\n"
        f"{line}"
        ")\n"
    )


def _autopilot_code(
    target: int,
    read: tuple[int, int],
    write: tuple[int, int],
    warm: dict[str, int] | None,
    line: str,
) -> str:
    """The autopilot alone: a provisioned table at the ranges' minimums (pre-warmed to
    ``warm``) and a scaler that overrides its target and ranges; ``line``, the table
    class's line or nothing."""
    warmed = (
        f"    warm_throughput=dynamodb.WarmThroughput(read_units_per_second="
        f"{warm['read'] or None}, write_units_per_second={warm['write'] or None}),\n"
        if warm
        else ""
    )
    return (
        "table = dynamodb.Table(\n"
        "    self, 'Table', partition_key=...,\n"
        "    billing_mode=dynamodb.BillingMode.PROVISIONED,\n"
        f"    read_capacity={read[0]}, write_capacity={write[0]},\n"
        f"{warmed}{line}"
        ")\n"
        "ThrottleAwareScaler(\n"
        "    self, 'Scaler', tables=[table], mode='autopilot',\n"
        "    overrides={table.table_name: {\n"
        f"        'target': {target},\n"
        f"        'read': {{'min': {read[0]}, 'max': {read[1]}}},\n"
        f"        'write': {{'min': {write[0]}, 'max': {write[1]}}},\n"
        "    }},\n"
        ")\n"
    )


def _fast_path_code(params: ModelParams, library: bool) -> str:
    """The fast path's code when the model runs with its signals and the policy is the
    library's (stock target tracking sees no signal: nothing to add): the signals function,
    with the stream reader when the stream is a signal."""
    hook, stream = params.fast_path_seconds is not None, params.stream_seconds is not None
    if not library or not (hook or stream):
        return ""
    words = []
    if hook:
        words.append("# the hook in the processes that use the table (docs: Fast path)\n")
    if stream:
        words.append(
            "# the table's stream as a write signal: no client code; it sees writes only, "
            "reads need the hook (docs: Fast path)\n"
        )
    fast = "FastPath(stream=True)" if stream else "FastPath()"
    return "".join(words) + (
        f"CapacityRequests(self, 'Requests', tables=[table], fast_path={fast})\n"
    )


STANDARD = "STANDARD"
STANDARD_IA = "STANDARD_INFREQUENT_ACCESS"
TABLE_CLASSES = (STANDARD, STANDARD_IA)
"""DynamoDB's table classes, as DescribeTable and CloudFormation name them."""
CLASS_CAVEATS = (
    "Reserved capacity applies to the Standard class only: a table moved to Standard-IA "
    "leaves any reservation it used. AWS allows at most two table class updates per table "
    "in any 30 days, so switch only for a difference that lasts."
)
"""What the table-class advice cannot weigh, said with every piece of it."""


@dataclass(frozen=True)
class ClassBill:
    """One table class's dollars a month: storage and throughput."""

    storage_usd: float
    throughput_usd: float

    @property
    def total_usd(self) -> float:
        return self.storage_usd + self.throughput_usd

    def as_json(self) -> dict[str, float]:
        return {
            "storage_usd": round(self.storage_usd, 6),
            "throughput_usd": round(self.throughput_usd, 6),
            "total_usd": round(self.total_usd, 6),
        }


@dataclass(frozen=True)
class ClassAdvice:
    """The table class advised for a table of ``size_gb``: each class's bill a month, the
    cheaper recommended (Standard when they cost the same: nothing to move), and
    ``break_even_gb``, the size above which Standard-IA is cheaper at this throughput (None:
    it never is; 0: at any size)."""

    size_gb: float
    standard: ClassBill
    infrequent: ClassBill
    break_even_gb: float | None

    @property
    def recommended(self) -> str:
        cheaper = self.infrequent.total_usd < self.standard.total_usd
        return STANDARD_IA if cheaper else STANDARD

    def as_json(self) -> dict[str, Any]:
        return {
            "recommended": self.recommended,
            "size_gb": round(self.size_gb, 6),
            "standard": self.standard.as_json(),
            "standard_infrequent_access": self.infrequent.as_json(),
        }


def class_advice(size_gb: float, throughput_usd: float, prices: Prices) -> ClassAdvice:
    """The table class for a table of ``size_gb`` whose throughput (read and write
    capacity, or on-demand requests, its indexes' included) costs ``throughput_usd`` a
    month under Standard: storage at ``prices.storage_gb_month`` against
    ``prices.ia_storage_gb_month``, throughput times ``prices.ia_throughput_factor`` under
    Standard-IA. The 25 GB AWS stores free each month are the account's, not a table's, so
    they are not counted."""
    extra = throughput_usd * (prices.ia_throughput_factor - 1)
    saved_per_gb = prices.storage_gb_month - prices.ia_storage_gb_month
    break_even = None if saved_per_gb <= 0 else max(0.0, extra / saved_per_gb)
    return ClassAdvice(
        size_gb,
        ClassBill(size_gb * prices.storage_gb_month, throughput_usd),
        ClassBill(size_gb * prices.ia_storage_gb_month, throughput_usd + extra),
        break_even,
    )


def class_lines(advice: ClassAdvice) -> list[str]:
    """The table-class block: both classes' dollars a month, the recommendation with why in
    one sentence, and what the advice cannot weigh (`CLASS_CAVEATS`)."""
    std, ia = advice.standard, advice.infrequent
    rows: list[tuple[str, ...]] = [("class", "storage $", "throughput $", "total $", "")]
    for name, bill in ((STANDARD, std), (STANDARD_IA, ia)):
        money = (bill.storage_usd, bill.throughput_usd, bill.total_usd)
        mark = "<- recommended" if name == advice.recommended else ""
        rows.append((name, *(f"{v:,.2f}" for v in money), mark))
    stored = std.storage_usd - ia.storage_usd
    served = ia.throughput_usd - std.throughput_usd
    gb = f"{advice.size_gb:,.3f}".rstrip("0").rstrip(".") + " GB"
    if advice.recommended == STANDARD_IA:
        why = (
            f"at {gb}, Standard-IA stores the table for ${stored:,.2f} a month less, more than "
            f"the ${served:,.2f} more it charges for throughput"
        )
    else:
        why = (
            f"at {gb}, Standard-IA would store the table for ${stored:,.2f} a month less but "
            f"charge ${served:,.2f} more for throughput"
        )
    if advice.break_even_gb:
        why += f"; Standard-IA is cheaper above {advice.break_even_gb:,.1f} GB at this throughput"
    return [
        f"table class (dollars a month; {gb} stored, the recommendation's throughput):",
        *(f"  {line}" for line in fixed_width(rows, left=1)),
        f"  {advice.recommended}: {why}.",
        f"  {CLASS_CAVEATS}",
    ]


TERMS = {
    "stock": "stock:T: Application Auto Scaling target tracking at T % utilization on read "
    "and write, as ProvisionedTable sets it up alone; no library scaler",
    "autopilot": "autopilot:T: the library's ThrottleAwareScaler in autopilot mode, without "
    "target tracking: it raises at once when requests are throttled, raises ahead of peaks "
    "it forecasts from the table's own history and plans decreases within the day's quota, "
    "aiming at T % utilization",
    "autopilot+stock": "autopilot+stock:T: stock target tracking at T % with the autopilot "
    "scaler on top (it moves the scalable target's minimum, so auto scaling knows)",
    "owned": "+owned: the scaler also owns target tracking's target value (own_target=True) "
    "and moves it, instead of only the minimum",
    "prewarm": "+prewarm: the table pre-warmed once to the earlier part's busiest minute / T "
    "on each dimension (its high-water mark), so a raise up to it lands in seconds; the "
    "one-time charge is in the cost (the 'once' column) and counted in the first month. It "
    "is priced as one hour provisioned at the marks, table and GSIs, at the list price: "
    "what pre-warming by provisioning and then settling costs "
    "(prewarm=PrewarmMethod.PROVISION_THEN_SETTLE, in the pasted code). With --price "
    "warm_read_unit=USD --price warm_write_unit=USD (dollars per unit/s of warm throughput "
    "added; no default is published here) it is priced as DynamoDB's warm throughput instead",
    "stream": "+stream: the library's policy with the table's own stream as a write signal "
    f"(its writes seen about {STREAM_SECONDS} s later; FastPath(stream=True), no client "
    "code); the stream reader's own cost (its Lambda and state store) is in the cost. The "
    "stream sees writes only: reads need the client hook (CapacityRequests' FastPath in "
    "your processes, or ddb-capacity-instrument)",
    "on-demand": "on-demand: PAY_PER_REQUEST billing, charged per request. It refuses units "
    "too: DynamoDB serves at once up to double the previous peak (at least the warm "
    "throughput: 12,000 reads / 4,000 writes a second on a new table) and more only about "
    "30 minutes later, so a burst beyond double what came before is throttled",
    "hybrid": "hybrid:T: on-demand in the hours where it cost less on past days, "
    "autopilot:T otherwise; compared only: the scaler does not switch billing modes",
}
"""What each term a tune or advise answer shows means, keyed by what shows it."""


def terms(tuning: Tuning) -> list[str]:
    """One line for each term the answer shows: the policies' names, the rule, the
    figures, the validation."""
    shown = [c.policy for c in tuning.candidates]
    keys = set()
    for name in shown:
        spec = spec_of(name)
        keys.add("autopilot+stock" if spec.with_stock else spec.kind)
        keys |= {"owned"} if spec.owned else set()
        keys |= {"prewarm"} if split_prewarm(name)[1] else set()
        keys |= {"stream"} if streamed(name) else set()
    lines = [f"- {TERMS[k]}." for k in TERMS if k in keys]
    v = tuning.validation
    signals = v.get("signals", {})
    if signals.get("fast_path_seconds") is not None or signals.get("stream_seconds") is not None:
        lines.append(
            "- with the fast path: the library's policies (autopilot) also receive the "
            "signals you said you have (--fast-path-seconds: the hook; --stream-seconds: "
            "the table's stream); stock target tracking and on-demand see none."
        )
    lines += [
        f"- the rule: {_rule_words(tuning.rule)}",
        "- refused units: capacity units DynamoDB would throttle (a request retried counts "
        "each time); $: what DynamoDB bills for read and write capacity, nothing else.",
        "- min / median / max: over the ensemble's model settings (CloudWatch delay, "
        "update latency, burst, retries): a choice must hold across them.",
        "- frontier: no other option refuses no more and costs no more.",
    ]
    if v:
        lines.append(
            f"- validation: each option family (the same policy at another T) was fitted on "
            f"the earlier {v['fit_minutes']:,} minutes, and the fitted options were compared "
            f"on the later {v['choose_minutes']:,} (from {v['split_time']}); the figures "
            f"shown are the later part's, scaled to a month of {v['month_hours']} hours."
        )
    return lines


def _rule_words(rule: Rule) -> str:
    if rule.price is not None:
        first = (
            f"the option whose cost plus its refused units at ${rule.price:,.2f} per million "
            "is least"
        )
    else:
        more = f" plus {rule.tolerance:.0%}" if rule.tolerance else ""
        first = (
            "the cheapest option that refuses no more than the stock target refusing least"
            f"{more}, plus {rule.floor:.2%} of the requested units (the refusal floor: a "
            "smaller difference is the simulator's noise, not the policy's)"
        )
    return (
        f"{first}; then, of it and a simpler option (stock before the autopilot, fewer "
        "features) the rule also allows at no more than its cost plus the noise (half the "
        "spread of its cost over the ensemble), the simpler."
    )


def _spread(s: Spread, digits: int) -> str:
    return f"{s.min:,.{digits}f} / {s.median:,.{digits}f} / {s.max:,.{digits}f}"


def _rows(tuning: Tuning, period: str) -> list[tuple[str, ...]]:
    """The table's header and a row per candidate, cheapest first."""
    header = (
        "policy",
        "frontier",
        f"refused units {period} (min / median / max)",
        f"$ {period} (min / median / max)",
        "of which once $",
    )
    rows: list[tuple[str, ...]] = [header]
    for c in sorted(tuning.candidates, key=lambda c: (c.cost, c.refused)):
        mark = " <- recommended" if c is tuning.recommended else ""
        mark += (
            " (unpriced)" if c.once_usd is None else " (compared only)" if compared_only(c) else ""
        )
        once = "" if c.once_usd == 0 else "unpriced" if c.once_usd is None else f"{c.once_usd:,.2f}"
        rows.append(
            (
                c.policy + mark,
                "yes" if c.frontier else "",
                _spread(c.throttled_requests, 0),
                _spread(c.cost_usd, 2),
                once,
            )
        )
    return rows


def table(tuning: Tuning, trace: Trace, ensemble: str, settings: int) -> str:
    """The warnings, the recommendation in one sentence, the candidates cheapest first
    with every column labelled, the frontier, the reason, a line for each term shown, the
    code to paste."""
    v = tuning.validation
    rows = _rows(tuning, "a month" if v else "over the trace")
    frontier = ", ".join(
        f"{c.policy} ({_money(c.cost)}, {c.refused:,.0f} refused)" for c in tuning.frontier
    )
    scope = (
        f"fitted on {v['fit_minutes']:,} minutes, chosen on the later {v['choose_minutes']:,} "
        f"(from {v['split_time']}); figures a month ({v['month_hours']} h)"
        if v
        else "figures over the trace"
    )
    return "\n".join(
        [
            *tuning.warnings,
            f"{trace.name}: {trace.minutes:,} minutes, ensemble {ensemble} ({settings} "
            f"settings), read + write; {scope}",
            "",
            tuning.summary,
            "",
            *fixed_width(rows),
            "",
            "frontier (cost vs refused units: no other candidate refuses less and costs "
            f"less), cheapest first: {frontier}",
            "",
            f"recommended: {tuning.recommended.policy}. {tuning.reason}",
            "",
            *([*class_lines(tuning.table_class), ""] if tuning.table_class else []),
            "what the terms mean:",
            *terms(tuning),
            "",
            "code to paste (CDK, Python):",
            tuning.code,
            *tuning.warnings,
        ]
    )
