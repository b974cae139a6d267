"""Runs in: workstation (`ddb-capacity tune --score-from`).

A recommendation scored on minutes its choice never saw. ``tune --score-from T`` chooses on
the trace's minutes before ``T`` only (`cut`: the candidates run, the limit is set and the
pick is taken there); then the pick, every stock setting (`STOCK`) and on-demand run over
the whole trace, each learning from the minutes before ``T``, and count from ``T`` on
(`score`, through `place`'s ``score_from``, as ``simulate --score-from`` counts). The
choice's runs cover only the minutes before ``T``, so they cannot be counted again from
it: these are runs of their own.

Whether the pick held (`hold`, also right_bill's goal (d)): under the limit rule, whether
it refused no more than the limit its own rule sets on the scored minutes (the stock
setting refusing least there, times 1 + the tolerance, plus the floor of the units asked
for there); when it did not, the cheapest stock setting within that limit would have held
it. Under the price rule, whether no stock setting scored better at the price there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .candidates import (
    MIN_PART_MINUTES,
    MONTH_HOURS,
    MONTH_MINUTES,
    ON_DEMAND,
    STOCK,
    Candidate,
    Rule,
    Tuning,
    best_stock,
    rank_by,
    requested_units,
    scaled,
)
from .params import ModelParams
from .policies import DEFAULT_TICK_MINUTES
from .prices import Prices
from .progress import Progress
from .text import counted, fixed_width, span
from .trace import Trace
from .tune import within_limit
from .tune_runs import place

__all__ = [
    "MIN_CHOICE_MINUTES",
    "MIN_SCORED_MINUTES",
    "Holdout",
    "Verdict",
    "hold",
    "score",
    "text",
]

MIN_CHOICE_MINUTES = 1440
"""The fewest minutes ``tune --score-from`` must leave before the time to choose on: a day,
a whole daily cycle (tune itself warns below two: `MIN_HISTORY_DAYS`)."""
MIN_SCORED_MINUTES = MIN_PART_MINUTES
"""The fewest minutes it must leave from the time on to score on: an hour, as tune's parts."""


@dataclass(frozen=True)
class Verdict:
    """Whether a pick held its rule on scored minutes (`hold`)."""

    best: Candidate
    """the stock setting refusing least there (the limit rule's reference)"""
    limit: float | None
    """the limit the rule sets there; None under the price rule"""
    held: bool
    instead: Candidate | None
    """when the pick did not hold: the stock setting that would have (the cheapest within
    the limit; under the price rule, the best at the price); None when it held"""


def hold(pick: Candidate, stock: Sequence[Candidate], rule: Rule, requested: float) -> Verdict:
    """Whether ``pick`` held ``rule`` among the ``stock`` settings, all scored on the same
    minutes, which ask for ``requested`` units: under the limit rule, its refusals within
    the limit the rule sets on them; under the price rule, no stock setting better at the
    price (`rank_by`)."""
    best = best_stock(stock)
    rank = rank_by(rule)
    if rule.price is not None:
        better = min(stock, key=rank)
        held = rank(pick)[0] <= rank(better)[0] * (1 + 1e-9) + 1e-6
        return Verdict(best, None, held, None if held else better)
    limit = rule.limit(best, requested)
    if within_limit(pick.refused, limit):
        return Verdict(best, limit, True, None)
    within = [c for c in stock if within_limit(c.refused, limit)]
    return Verdict(best, limit, False, min(within, key=rank))


@dataclass(frozen=True)
class Holdout:
    """The pick, the stock settings and on-demand scored from minute ``score_from`` of
    ``trace`` on, each figure scaled to a month of `MONTH_HOURS` from the scored minutes
    (a one-time charge counted once), and whether the pick held (`hold`)."""

    trace: Trace
    score_from: int
    pick: Candidate
    candidates: list[Candidate]
    """the pick, every stock setting and on-demand, in that order (the pick once)"""
    rule: Rule
    requested: float
    """the units asked for on the scored minutes, a month"""
    verdict: Verdict

    @property
    def minutes(self) -> int:
        """The minutes scored on."""
        return self.trace.minutes - self.score_from

    @property
    def since(self) -> str:
        return _since(self.trace, self.score_from)

    def periods(self) -> str:
        """The two periods, in words: chosen on the minutes before, scored from then on."""
        t = self.trace
        return (
            f"chosen on {span(self.score_from)}, {t.start:%Y-%m-%dT%H:%M}Z to {self.since}; "
            f"scored on {span(self.minutes)}, {self.since} to "
            f"{t.time(t.minutes):%Y-%m-%dT%H:%M}Z"
        )

    def sentence(self) -> str:
        """Whether the pick held, in one sentence: what it refused and cost on the scored
        minutes against the limit there, and, when it did not hold, the stock setting that
        would have."""
        p, v = self.pick, self.verdict
        head = f"On the days after {self.since} the pick {p.policy}"
        if v.limit is None:
            price = self.rule.price or 0.0
            score = rank_by(self.rule)
            words = (
                f"{head} cost ${p.cost:,.2f} a month and refused {p.refused:,.0f} units a "
                f"month (${score(p)[0]:,.2f} with the refusals at ${price:g} per million)"
            )
            if v.instead is None:
                return f"{words}: no stock setting did better at that price, so it held."
            return (
                f"{words}; {v.instead.policy} would have done better at that price: "
                f"${score(v.instead)[0]:,.2f} (${v.instead.cost:,.2f} a month, refusing "
                f"{v.instead.refused:,.0f})."
            )
        limit = (
            f"the limit its rule sets on those days ({v.limit:,.0f}, from {v.best.policy}'s "
            f"{v.best.refused:,.0f}, the least refused there)"
        )
        if v.instead is None:
            return (
                f"{head} held its rule: it refused {p.refused:,.0f} units a month, within "
                f"{limit}, at ${p.cost:,.2f} a month."
            )
        times = f"{p.refused / v.limit:,.1f} times" if v.limit else "over"
        return (
            f"{head} refused {p.refused:,.0f} units a month, {times} {limit}; "
            f"{v.instead.policy} would have held it at ${v.instead.cost:,.2f} a month "
            f"(refusing {v.instead.refused:,.0f}), against the pick's ${p.cost:,.2f}."
        )

    def as_json(self) -> dict[str, Any]:
        v = self.verdict
        return {
            "score_from": self.since,
            "chosen_minutes": self.score_from,
            "scored_minutes": self.minutes,
            "month_hours": MONTH_HOURS,
            "candidates": [c.as_json() for c in self.candidates],
            "recommended": self.pick.policy,
            "rule": self.rule.as_json(v.best, self.requested),
            "times_limit": None if not v.limit else round(self.pick.refused / v.limit, 6),
            "held": v.held,
            "instead": None if v.instead is None else v.instead.policy,
            "summary": self.sentence(),
        }


def _since(trace: Trace, score_from: int) -> str:
    """The time minute ``score_from`` of ``trace`` begins, as ``--score-from`` takes it."""
    return f"{trace.time(score_from):%Y-%m-%dT%H:%M}Z"


def score(
    trace: Trace,
    tuning: Tuning,
    settings: Sequence[ModelParams],
    score_from: int,
    prices: Prices | None = None,
    tick: int = DEFAULT_TICK_MINUTES,
    workers: int | None = None,
    progress: Progress | None = None,
) -> Holdout:
    """``tuning``'s pick (chosen on ``trace``'s minutes before ``score_from``), every stock
    setting and on-demand run over the whole of ``trace`` under ``settings`` and counted
    from ``score_from`` on (`place`), a month; whether the pick held (`hold`). Their
    progress on ``progress`` is named as the scoring's, beside the choice's."""
    pick = tuning.recommended.policy
    names = list(dict.fromkeys([pick, *STOCK, ON_DEMAND]))
    command = f"tune, scoring from {_since(trace, score_from)}"
    hours = {pick: tuning.recommended.hours} if tuning.recommended.hours else {}
    placed = place(
        trace, names, settings, prices, tick, workers, score_from, progress, command, hours
    )
    factor = MONTH_MINUTES / (trace.minutes - score_from)
    by = {c.policy: scaled(c, factor) for c in placed}
    requested = requested_units(trace, factor, start=score_from)
    verdict = hold(by[pick], [by[s] for s in STOCK], tuning.rule, requested)
    return Holdout(
        trace, score_from, by[pick], [by[n] for n in names], tuning.rule, requested, verdict
    )


def text(holdout: Holdout, tuning: Tuning) -> str:
    """The scored part in words: its two periods, each scored option's refusals and dollars
    a month (min / median / max over the ensemble), the rule's limit on the part chosen on
    and on the scored part, and whether the pick held (`Holdout.sentence`)."""
    rows: list[tuple[str, ...]] = [
        (
            "policy",
            "refused units a month (min / median / max)",
            "$ a month (min / median / max)",
        )
    ]
    for c in holdout.candidates:
        r, d = c.throttled_requests, c.cost_usd
        rows.append(
            (
                c.policy + (" <- recommended" if c is holdout.pick else ""),
                f"{r.min:,.0f} / {r.median:,.0f} / {r.max:,.0f}",
                f"{d.min:,.2f} / {d.median:,.2f} / {d.max:,.2f}",
            )
        )
    v = holdout.verdict
    limits = (
        []
        if v.limit is None
        else [
            f"the rule's limit on refused units a month: {tuning.limit:,.0f} on the part chosen "
            f"on ({tuning.best_stock.policy} refused least there), {v.limit:,.0f} on the scored "
            f"part ({v.best.policy} refused least there)",
        ]
    )
    return "\n".join(
        [
            f"scored on the days after: {holdout.periods()}; every policy ran over the whole "
            f"trace, learning from the minutes before {holdout.since}, and counts from then "
            f"on; figures a month ({MONTH_HOURS} h), scaled from the "
            f"{counted(holdout.minutes, 'scored minute')}",
            "",
            *fixed_width(rows, left=1),
            "",
            *limits,
            holdout.sentence(),
        ]
    )
