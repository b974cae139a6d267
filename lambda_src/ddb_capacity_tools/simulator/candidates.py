"""Runs in: workstation (`ddb-capacity tune`, `advise`, `reserve`), fleet advisor Lambda.

What ``tune`` compares: the candidates' names (`CANDIDATES`, the ``+prewarm`` and
``+stream`` suffixes), one candidate's figures over the ensemble (`Candidate`), the rule
that picks one (`Rule`) and the result (`Tuning`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ddb_capacity_runtime.core.on_demand_hours import HISTORY_DAYS

from ..tool_errors import PolicyError
from .ensemble import Spread
from .hybrid import windows_of
from .params import ModelParams
from .policies import COMPOSED, Spec, parse
from .table_class import ClassAdvice
from .trace import Trace

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
    "windows:70",
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


SCALER_KINDS = frozenset({"throttle-aware", "autopilot", "hybrid", "windows"})
"""The kinds of policy that run the library's scaler (a hybrid or declared windows: its autopilot,
most of the day),
whose running cost is in a candidate's (`tune_runs.scaler_dollars`)."""


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
    "stock:T, autopilot, autopilot:T, autopilot+stock:T, autopilot+stock:T+owned; any of "
    "these with +prewarm (a pre-warmed table); any of them but stock:T with +stream (the "
    "table's stream as a write signal); on-demand; windows / windows:T (autopilot+stock:T "
    "with declared on-demand windows at hours learned on the part fitted on); or hybrid / "
    "hybrid:T (autopilot+stock:T with on-demand windows the stack's switch learns each day "
    f"from the table's last {HISTORY_DAYS} days)"
)
"""The policies tune can recommend, as --candidate values."""


REFUSAL_FLOOR = 0.0002
"""The rule's default floor: refusals within this share of the requested units (2 in 10,000) of the
best stock setting's count as no more. Measured on the right-bill benchmark: with no floor, a choice
made on a week of traffic refusing 0 units instead of a few thousand in billions bought padding that
the next week did not need."""


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


DEFAULT_RULE = Rule()
"""The rule by default: the limit rule, no tolerance, the default floor."""


def requested_units(
    trace: Trace, scale: float = 1.0, start: int = 0, end: int | None = None
) -> float:
    """The units ``trace`` asks for from minute ``start`` to ``end`` (default: all of it),
    every dimension's (units/s per minute x 60), times ``scale``."""
    return sum(sum(series[start:end]) for series in trace.demand.values()) * 60 * scale


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
    running_usd: float = 0.0
    """Of ``cost_usd``, what the library's own functions cost to run over the minutes counted:
    the scaler's for a policy that runs it, the stream reader's for a `STREAM` one
    (`tune_runs.running_dollars`)."""
    pruned_by: str | None = None
    """The candidate that beat this one on both refusals and dollars in the base setting's
    run, so it was not run under the rest of the ensemble (`tune_prune`): its figures are
    that one run's, and it is never recommended; None: run under every setting."""
    hours: tuple[bool, ...] = ()
    """Declared windows' (``windows:T``): the 24 hours of the day (UTC) they put on-demand, the
    same under every setting (learned under the first); else empty."""

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
            "running_usd": round(self.running_usd, 6),
            "pruned_by": self.pruned_by,
            "on_demand_windows": [
                {"start": f"{h:02d}:00", "hours": n} for h, n in windows_of(self.hours)
            ]
            if spec_of(self.policy).kind == "windows"
            else None,
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


def best_stock(candidates: Sequence[Candidate]) -> Candidate:
    """The stock setting refusing least among ``candidates`` (of two that refuse as
    little, the cheaper): what the limit rule's limit is set by."""
    return min((c for c in candidates if c.policy in STOCK), key=lambda c: (c.refused, c.cost))


def tried(candidates: Sequence[str], params: ModelParams) -> list[str]:
    """What tune runs: ``candidates``, every stock setting and on-demand, without the hybrid
    and declared windows when the model has a reservation (they do not model one: their
    provisioned hours would be charged at the list price beside candidates whose reserved
    units are free)."""
    names = list(dict.fromkeys([*candidates, *STOCK, ON_DEMAND]))
    if params.reservation:
        names = [n for n in names if spec_of(n).kind not in COMPOSED]
    return names


def compared_only(c: Candidate) -> bool:
    """Whether ``c`` is shown for comparison and never recommended: one whose one-time
    charge is not priced (a pre-warmed table without ``warm_*_unit`` prices), or one pruned
    after the base setting's run (`Candidate.pruned_by`). Every policy tune tries deploys:
    declared windows with ``add_on_demand_window``, the hybrid with
    ``learn_on_demand_windows`` (`tune_code.code_for`)."""
    return c.once_usd is None or c.pruned_by is not None


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


def spec_of(
    name: str, max_capacity: int | None = None, option: str = "--policy", expected: str = ""
) -> Spec:
    """The policy a candidate runs (a pre-warmed one's, without `PREWARM`); a ``fixed:N``
    checked against ``max_capacity`` when given (a candidate's name was checked against the
    run's when it was given: `--max-capacity` may be above the default 40,000); a name that
    is no policy's refused with ``expected`` as what is allowed (`policies.parse`)."""
    return parse(split_prewarm(name)[0], max_capacity, option, expected)


def check_candidate(name: str, max_capacity: int | None, option: str = "--candidate") -> Spec:
    """``name``'s policy when tune may try it; else a `PolicyError` naming ``option``, the
    name and what tune tries (`CANDIDATE_HELP`): not a policy at all, one tune does not
    recommend (a fixed level, the oracle, ...), or a variant only simulate compares
    (``+lumped``; ``+reserved``: tune models a reservation with ``--reserved-read-units``
    and ``--reserved-write-units`` instead)."""
    spec = spec_of(name, max_capacity, option, CANDIDATE_HELP)
    kinds: tuple[str, ...] = ("stock", "autopilot")
    if not split_prewarm(name)[1]:
        kinds += ("on-demand", "hybrid", "windows")
    if streamed(name):  # only the library's policies see the stream
        kinds = ("autopilot",)
    if spec.kind not in kinds or spec.lumped or spec.reserved:
        raise PolicyError(f"{option}: got {name!r}; expected {CANDIDATE_HELP}")
    return spec


def with_frontier(placed: Sequence[Candidate]) -> list[Candidate]:
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


def price_score(c: Candidate, price: float) -> float:
    """The price rule's score: cost plus the refused units at ``price`` per million."""
    return c.cost + c.refused * price / 1_000_000


def rank_by(rule: Rule) -> Callable[[Candidate], tuple[float, float]]:
    """How ``rule`` orders the candidates it may recommend, best first: by cost (the limit
    rule) or by cost plus the refusals at the price, then by refusals."""
    price = rule.price
    if price is None:
        return lambda c: (c.cost, c.refused)
    return lambda c: (price_score(c, price), c.refused)


MIN_HISTORY_DAYS = 2
"""A history shorter than this many days is too short to judge (`history_warnings`)."""
MIN_PART_MINUTES = 60
"""The fewest minutes each part of tune's validation holds, the earlier to fit on and the
later to choose on: a shorter trace is refused (`check_length`), as nothing a policy does
within minutes can be told apart."""


MONTH_HOURS = 730
"""A month, as AWS bills it: 730 hours."""


MONTH_MINUTES = MONTH_HOURS * 60


def family(name: str) -> str:
    """The candidates that differ only in their target: ``autopilot+stock:70+owned`` is of
    ``autopilot+stock:T+owned``."""
    return re.sub(r":\d+", ":T", name)


def scaled(c: Candidate, factor: float) -> Candidate:
    """``c`` with its refused units and running cost times ``factor`` (its one-time charge
    counted once; what the library's functions cost to run, times ``factor`` too)."""
    return replace(
        c,
        throttled_requests=c.throttled_requests.scaled(factor),
        cost_usd=c.cost_usd.scaled(factor, c.once_usd or 0.0),
        running_usd=c.running_usd * factor,
    )


def complexity(name: str) -> int:
    """How much a candidate deploys beyond a table: stock target tracking and on-demand 0,
    the autopilot scaler 1 (on stock too), owning the target value 1 more, pre-warming 1
    more, on-demand windows (declared, or learned each day: the hybrid) 1 more."""
    spec = spec_of(name)
    n = 1 if spec.kind in SCALER_KINDS else 0
    return n + spec.owned + split_prewarm(name)[1] + (spec.kind in COMPOSED)


def noise(c: Candidate) -> float:
    """The noise of ``c``'s cost: half the spread of its cost over the ensemble's model
    settings (max - min) / 2. A cost difference smaller than that is not one the model can
    vouch for."""
    return (c.cost_usd.max - c.cost_usd.min) / 2
