"""Runs in: workstation (the `ddb-capacity` command).

``ddb-capacity tune``: how to set a table's capacity for its own traffic.

Every candidate (stock target tracking at 30 to 90 %, the autopilot alone and on top of
stock target tracking at several target utilizations, and on-demand) runs over the trace
under an ensemble of model settings. The medians of refused units and cost place each
candidate; the frontier is the candidates no other beats on both.

The rule ([`Rule`][]): the recommendation is the cheapest candidate that refuses no more
than the best stock setting (of stock target tracking at every target from 30 to 90 %, step
10, the one that refuses least), times 1 + the refusal tolerance (default 0), plus the
refusal floor: 0.02 % of the requested units by default (`REFUSAL_FLOOR`), below which
a difference in refusals is the simulator's noise, not the policy's. That stock setting is a
candidate itself, so there always is one; and the cheapest candidate within a limit on
refusals is always on the frontier. With a refusal price instead (dollars per million
refused units), the recommendation is the candidate whose cost plus its refusals at that
price is least. The reason is given in words, with what on-demand would cost (or, when it
wins, by how much). Its construct code is printed to paste.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ddb_capacity_runtime.core.policy import capacity_units

from .ensemble import Spread
from .model import ModelParams
from .policies import DEFAULT_TICK_MINUTES, Spec, parse
from .prices import Prices
from .run import DimensionResult, compose_hybrid, hybrid_base, simulate
from .text import fixed_width
from .trace import Trace

__all__ = [
    "CANDIDATES",
    "ON_DEMAND",
    "REFUSAL_FLOOR",
    "STOCK",
    "Candidate",
    "Rule",
    "TuneError",
    "Tuning",
    "choose",
    "code_for",
    "compared_only",
    "decide",
    "place",
    "refusal_floor",
    "refusal_price",
    "refusal_tolerance",
    "requested_units",
    "table",
    "tune",
]

#: Stock target tracking at every target from 30 to 90 %, step 10: always run, always
#: candidates; the one that refuses least sets the limit on refusals.
STOCK = tuple(f"stock:{t}" for t in range(30, 100, 10))
ON_DEMAND = "on-demand"
#: What ``tune`` tries by default (the stock settings and on-demand are always tried).
CANDIDATES = (
    *STOCK,
    "autopilot:50",
    "autopilot:60",
    "autopilot:70",
    "autopilot:80",
    "autopilot+stock:60",
    "autopilot+stock:70",
    "autopilot+stock:80",
    "autopilot+stock:70+owned",
    "hybrid:70",
    ON_DEMAND,
)
#: The policies tune can recommend, as --candidate values.
CANDIDATE_HELP = (
    "stock:T, autopilot, autopilot:T, autopilot+stock:T, autopilot+stock:T+owned, "
    "on-demand, or hybrid / hybrid:T (shown for comparison, never recommended)"
)
#: The pasted code's maximum is this many times the trace's peak (`bounds_for`).
PEAK_HEADROOM = 2
#: ``--refusal-tolerance``'s largest value: 1 (100 %), twice the best stock's refusals.
MAX_TOLERANCE = 1.0
TOLERANCE_HELP = (
    "a fraction from 0 to 1 (0.1) or a percent from 0 to 100 followed by % (10%): how much "
    "more than the best stock setting the recommendation may refuse"
)
#: The rule's default floor: refusals within this share of the requested units (2 in
#: 10,000) of the best stock setting's count as no more. Measured on the right-bill
#: benchmark: with no floor, a choice made on a week of traffic refusing 0 units instead of
#: a few thousand in billions bought padding that the next week did not need.
REFUSAL_FLOOR = 0.0002
#: ``--refusal-floor``'s largest value: 1 % of the requested units.
MAX_FLOOR = 0.01
FLOOR_HELP = (
    "a fraction from 0 to 0.01 (0.0002) or a percent from 0 to 1 followed by % (0.02%): the "
    "share of the requested units within which refusals count as no more than the best "
    "stock setting's"
)
#: ``--refusal-price``'s largest value, dollars per million refused units.
MAX_PRICE = 1_000_000.0
PRICE_HELP = (
    f"dollars per million refused units, more than 0 and at most {MAX_PRICE:,.0f} (1.5): "
    "the recommendation is then the candidate whose cost plus its refusals at this price "
    "is least"
)


class TuneError(ValueError):
    """A tune option out of range; the message names the option, the value and the range."""


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
        }


def place(
    trace: Trace,
    names: Sequence[str],
    settings: Sequence[ModelParams],
    prices: Prices | None = None,
    tick: int = DEFAULT_TICK_MINUTES,
    workers: int | None = None,
    score_from: int | None = None,
) -> list[Candidate]:
    """Every policy of ``names`` over ``trace`` under each of ``settings`` (policies in
    ``workers`` processes, default the CPU count), refused units and cost summed over the
    dimensions, counted from minute ``score_from`` on (None: every minute; the policies
    run over, and learn from, every minute either way); frontier marked among the
    candidates that can be recommended. A hybrid is composed from its base's and
    on-demand's runs, which run once whether or not they are candidates themselves."""
    specs = [parse(n, settings[0].max_capacity) for n in names]
    hybrids = [s for s in specs if s.kind == "hybrid"]
    needed = [hybrid_base(s) for s in hybrids] + ([parse(ON_DEMAND)] if hybrids else [])
    ran = [s for s in specs if s.kind != "hybrid"]
    ran += [s for s in needed if s.text not in {r.text for r in ran}]
    scored = {} if score_from is None else {"score_from": score_from}
    prices = prices or Prices()
    runs = []
    for p in settings:
        results = simulate(
            trace,
            ran,
            p,
            prices,
            None,
            tick,
            progress=None,
            workers=workers or os.cpu_count() or 1,
            **scored,
        )
        for h in hybrids:
            base = [r for r in results if r.policy == hybrid_base(h).text]
            od = [r for r in results if r.policy == ON_DEMAND]
            results += compose_hybrid(h, base, od, trace, prices, score_from or 0)
        runs.append(results)
    return _with_frontier([_candidate(n, runs) for n in names])


def _candidate(name: str, runs: Sequence[Sequence[DimensionResult]]) -> Candidate:
    """``name``'s results, per setting summed over dimensions, as min / median / max."""
    mine = [[r for r in results if r.policy == name] for results in runs]
    return Candidate(
        name,
        Spread.of([sum(r.throttled_requests for r in rs) for rs in mine]),
        Spread.of([sum(r.cost_usd for r in rs) for rs in mine]),
    )


def compared_only(c: Candidate) -> bool:
    """Whether ``c`` is shown for comparison and never recommended: a policy the library
    does not deploy (the hybrid: the scaler does not switch billing modes)."""
    return parse(c.policy).kind == "hybrid"


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
) -> Tuning:
    """``candidates``, the stock settings of `STOCK` and on-demand over ``trace``
    under ``settings``; the recommendation by [`choose`][], its reason and its code."""
    names = list(dict.fromkeys([*candidates, *STOCK, ON_DEMAND]))
    return decide(place(trace, names, settings, prices, tick, workers), rule, trace, settings[0])


def decide(
    placed: Sequence[Candidate],
    rule: Rule,
    trace: Trace,
    params: ModelParams,
    period: str = "",
    scale: float = 1.0,
) -> Tuning:
    """The [`Tuning`][] of candidates already placed ([`place`][]) on ``trace``;
    ``period`` follows every amount in the reason (" a month" when the candidates were
    scaled to a month), and ``scale`` is that scaling (the requested units are the
    trace's times ``scale``)."""
    requested = requested_units(trace, scale)
    pick, best = choose(placed, rule, requested)
    within = _eligible(placed, rule, best, requested)
    on_demand = _on_demand(placed, pick, within, rule)
    return Tuning(
        list(placed),
        pick,
        code_for(parse(pick.policy), trace, params),
        best,
        rule,
        requested,
        _reason(pick, best, rule, requested, len(within), on_demand, period)
        + _compared_words(placed, pick, period),
        on_demand,
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
            f"{od['throttled_requests']:,.0f} {units} (its limits, or a hot key's partition), "
            "more than the limit."
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


def code_for(spec: Spec, trace: Trace, params: ModelParams) -> str:
    """The construct code that deploys ``spec`` on a table, each dimension's range from the
    trace's traffic ([`bounds_for`][])."""
    if spec.kind == "on-demand":
        return (
            "dynamodb.Table(self, 'Table', partition_key=..., "
            "billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST)\n"
        )
    target = spec.value or 70
    (r_lo, r_hi), (w_lo, w_hi) = bounds_for(trace, params, target).values()
    provisioned = (
        "ProvisionedTable(\n"
        "    self, 'Table', partition_key=...,\n"
        f"    read=Capacity(min_capacity={r_lo}, max_capacity={r_hi}, "
        f"target_utilization_percent={target}),\n"
        f"    write=Capacity(min_capacity={w_lo}, max_capacity={w_hi}, "
        f"target_utilization_percent={target}),\n"
        ")\n"
    )
    if spec.kind == "stock":
        return provisioned
    if spec.kind == "autopilot" and spec.with_stock:
        owned = ", own_target=True" if spec.owned else ""
        return (
            f"table = {provisioned}"
            f"ThrottleAwareScaler(self, 'Scaler', tables=[table]{owned})  # the autopilot mode\n"
        )
    if spec.kind == "autopilot":
        return (
            "table = dynamodb.Table(\n"
            "    self, 'Table', partition_key=...,\n"
            "    billing_mode=dynamodb.BillingMode.PROVISIONED,\n"
            f"    read_capacity={r_lo}, write_capacity={w_lo},\n"
            ")\n"
            "ThrottleAwareScaler(\n"
            "    self, 'Scaler', tables=[table], mode='autopilot',\n"
            "    overrides={table.table_name: {\n"
            f"        'target': {target},\n"
            f"        'read': {{'min': {r_lo}, 'max': {r_hi}}},\n"
            f"        'write': {{'min': {w_lo}, 'max': {w_hi}}},\n"
            "    }},\n"
            ")\n"
        )
    raise ValueError(f"code_for: no construct code for {spec.text!r}")


def table(tuning: Tuning, trace: Trace, ensemble: str, settings: int) -> str:
    """The candidates cheapest first, the frontier, the recommendation and its reason, the
    code to paste."""
    header = ("policy", "frontier", "refused units (median)", "cost $ (median)", "min-max cost")
    rows = [header]
    for c in sorted(tuning.candidates, key=lambda c: (c.cost, c.refused)):
        rows.append(
            (
                c.policy
                + (" <- recommended" if c is tuning.recommended else "")
                + (" (compared only)" if compared_only(c) else ""),
                "yes" if c.frontier else "",
                f"{c.refused:,.0f}",
                f"{c.cost:,.2f}",
                f"{c.cost_usd.min:,.2f}-{c.cost_usd.max:,.2f}",
            )
        )
    frontier = ", ".join(
        f"{c.policy} ({_money(c.cost)}, {c.refused:,.0f} refused)" for c in tuning.frontier
    )
    return "\n".join(
        [
            f"{trace.name}: {trace.minutes:,} minutes, ensemble {ensemble} ({settings} "
            f"settings), read + write",
            "",
            *fixed_width(rows),
            "",
            "frontier (cost vs refused units: no other candidate refuses less and costs "
            f"less), cheapest first: {frontier}",
            "",
            f"recommended: {tuning.recommended.policy}. {tuning.reason}",
            "",
            tuning.code,
        ]
    )
