"""Runs in: workstation (the `ddb-capacity` command), advisor Lambdas.

The frontier (cost against refused units, one point per candidate, the recommendation
highlighted and the ensemble's spread as whiskers) and the advice (what to paste, the
dollars, the reason in words), as page sections. A run's plans made with hindsight (the
oracle, the bound) are drawn for reference: the frontier is marked among the policies a
table can deploy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..simulator.candidates import MONTH_HOURS, Candidate, Tuning, compared_only, with_frontier
from ..simulator.ensemble import EnsembleResult, Spread
from ..simulator.run import DimensionResult
from ..simulator.tune_scored import Holdout
from .document import figure, money, table, text

__all__ = [
    "HINDSIGHT",
    "advice_section",
    "caption",
    "candidates_of_ensemble",
    "candidates_of_run",
    "frontier_section",
    "held_section",
    "hindsight",
]

HINDSIGHT = ("oracle", "bound")
"""The runs that plan with hindsight, knowing the traffic to come (``--policy oracle`` and
``bound``, each its own kind of policy): no scaler can deploy them."""


def hindsight(c: Candidate) -> bool:
    """Whether ``c`` plans with hindsight (`HINDSIGHT`)."""
    return c.policy.strip() in HINDSIGHT


def _marked(placed: Sequence[Candidate]) -> list[Candidate]:
    """``placed``, the frontier marked among those that plan without hindsight
    (`with_frontier`); one that plans with hindsight is on no frontier and beats none."""
    deployable = iter(with_frontier([c for c in placed if not hindsight(c)]))
    return [replace(c, frontier=False) if hindsight(c) else next(deployable) for c in placed]


def _point(c: Candidate, recommended: Candidate | None) -> dict[str, Any]:
    r, cost = c.throttled_requests, c.cost_usd
    return {
        "name": c.policy,
        "cost": round(cost.median, 4),
        "cost_min": round(cost.min, 4),
        "cost_max": round(cost.max, 4),
        "refused": round(r.median, 2),
        "refused_min": round(r.min, 2),
        "refused_max": round(r.max, 2),
        "frontier": c.frontier,
        "recommended": c is recommended,
        "compared_only": compared_only(c),
        "hindsight": hindsight(c),
    }


def candidates_of_run(results: Sequence[DimensionResult]) -> list[Candidate]:
    """Each policy of one run (every dimension summed), the frontier marked among those
    that plan without hindsight (`_marked`)."""
    names = list(dict.fromkeys(r.policy for r in results))
    out = []
    for name in names:
        mine = [r for r in results if r.policy == name]
        refused = sum(r.throttled_requests for r in mine)
        cost = sum(r.cost_usd for r in mine)
        out.append(Candidate(name, Spread(refused, refused, refused), Spread(cost, cost, cost)))
    return _marked(out)


def candidates_of_ensemble(spread: Sequence[EnsembleResult]) -> list[Candidate]:
    """Each policy over an ensemble: per setting, every dimension summed; then min /
    median / max over the settings; the frontier marked as by `candidates_of_run`."""
    names = list(dict.fromkeys(r.policy for r in spread))
    out = []
    for name in names:
        mine = [r for r in spread if r.policy == name]
        settings = range(len(mine[0].runs))
        refused = [sum(r.runs[s].throttled_requests for r in mine) for s in settings]
        cost = [sum(r.runs[s].cost_usd for r in mine) for s in settings]
        out.append(Candidate(name, Spread.of(refused), Spread.of(cost)))
    return _marked(out)


def caption(candidates: Sequence[Candidate], recommended: Candidate | None) -> str:
    """What the frontier chart draws, in words: only the kinds of point it has (on the
    frontier, the recommendation, beaten, compared only, planned with hindsight)."""
    late = [c.policy for c in candidates if hindsight(c)]
    rivals = "other candidate that plans without hindsight" if late else "other candidate"
    kinds = []
    if any(c.frontier and c is not recommended for c in candidates):
        kinds.append(
            f"blue points are on the frontier (no {rivals} refuses no more and costs no more, "
            "and less on one of the two), joined by the dashed line"
        )
    if recommended is not None:
        kinds.append("the green point is the recommendation")
    beaten = (c for c in candidates if c is not recommended and not c.frontier)
    if any(not (compared_only(c) or hindsight(c)) for c in beaten):
        kinds.append("grey points are beaten by one on the frontier")
    if any(compared_only(c) for c in candidates):
        kinds.append("hollow points are shown for comparison only")
    if late:
        kinds.append(
            f"purple points ({', '.join(late)}) plan with hindsight, knowing the traffic to "
            "come: no scaler can follow them, so they are drawn for reference and count for "
            "no frontier"
        )
    words = "Each point is a candidate: further left refuses fewer units, lower costs less."
    if kinds:
        words += f" {kinds[0][0].upper()}{kinds[0][1:]}"
        words += "".join(f"; {k}" for k in kinds[1:]) + "."
    return words


def frontier_section(
    candidates: Sequence[Candidate],
    recommended: Candidate | None,
    period: str,
    spread_note: str = "",
) -> tuple[str, dict[str, dict[str, Any]]]:
    """The frontier chart, its caption (`caption`) and the candidates' table; ``period``
    says what the dollars cover ("over the trace", "a month")."""
    chart = {
        "kind": "frontier",
        "title": f"cost against refused units ({period}), one point per candidate",
        "x_label": f"refused units {period} (log scale; 0 at the left)",
        "points": [_point(c, recommended) for c in candidates],
    }
    rows = []
    marks = []
    for c in sorted(candidates, key=lambda c: (c.cost, c.refused)):
        name = c.policy + (" (recommended)" if c is recommended else "")
        name += " (compared only)" if compared_only(c) else ""
        name += " (hindsight: for reference)" if hindsight(c) else ""
        spread = f"{money(c.cost_usd.min)} to {money(c.cost_usd.max)}"
        rows.append(
            [
                (name, None),
                ("yes" if c.frontier else "", None),
                (f"{c.refused:,.0f}", c.refused),
                (money(c.cost), c.cost),
                (spread, c.cost_usd.max - c.cost_usd.min),
            ]
        )
        marks.append('class="recommended"' if c is recommended else "")
    header = [
        ("policy", False),
        ("on the frontier", False),
        (f"refused units {period}", True),
        (f"cost {period}", True),
        (f"cost {period}, min to max", True),
    ]
    body = (
        "<h2>The frontier: cost against refusals</h2>"
        f'<p class="lead">{text(caption(candidates, recommended))}{text(spread_note)}</p>'
        '<div class="chart" data-chart="frontier"></div>' + table(header, rows, row_attrs=marks)
    )
    return body, {"frontier": chart}


def advice_section(tuning: Tuning, period: str, now: Candidate | None = None) -> str:
    """The recommendation: the dollars (now and after, when the current settings are
    known), the reason in words and the code to paste."""
    pick = tuning.recommended
    figures = [figure("recommended", pick.policy), figure(f"its cost {period}", money(pick.cost))]
    if now is not None:
        saved = now.cost - pick.cost
        figures[1:1] = [figure(f"current settings ({now.policy}) {period}", money(now.cost))]
        figures.append(figure(f"saved {period}", money(saved), "good" if saved >= 0 else "bad"))
    od = tuning.on_demand
    if od.get("cost_usd") is not None and pick.policy != "on-demand":
        figures.append(figure(f"on-demand {period}", money(od["cost_usd"])))
    return (
        "<h2>The advice</h2>"
        f'<div class="figures">{"".join(figures)}</div>'
        f"<p>{text(tuning.reason)}</p>"
        "<h3>What to paste</h3>"
        f"<pre><code>{text(tuning.code)}</code></pre>"
    )


def held_section(held: Holdout, tuning: Tuning) -> str:
    """``tune --score-from``'s scored part, its header naming the two periods: whether the
    pick held its rule there (`Holdout.sentence`), its figures against the limit, and the
    pick, every stock setting and on-demand, a month from the scored minutes."""
    pick, v = held.pick, held.verdict
    figures = [
        figure("recommended", pick.policy),
        figure(
            "held its rule on the scored part",
            "yes" if v.held else "no",
            "good" if v.held else "bad",
        ),
        figure("refused units a month, scored", f"{pick.refused:,.0f}"),
    ]
    if v.limit is not None:
        figures += [
            figure("its rule's limit, chosen part", f"{tuning.limit:,.0f}"),
            figure("its rule's limit, scored part", f"{v.limit:,.0f}"),
        ]
    figures.append(figure("its cost a month, scored", money(pick.cost)))
    if v.instead is not None:
        figures.append(figure(f"{v.instead.policy} a month, scored", money(v.instead.cost)))
    rows = [
        [
            (c.policy + (" (recommended)" if c is pick else ""), None),
            (f"{c.refused:,.0f}", c.refused),
            (money(c.cost), c.cost),
            (f"{money(c.cost_usd.min)} to {money(c.cost_usd.max)}", c.cost_usd.max),
        ]
        for c in held.candidates
    ]
    header = [
        ("policy", False),
        ("refused units a month", True),
        ("cost a month", True),
        ("cost a month, min to max", True),
    ]
    marks = ['class="recommended"' if c is pick else "" for c in held.candidates]
    return (
        f"<h2>The pick on the days after: {text(held.periods())}</h2>"
        f'<p class="lead">{text(held.sentence())} Every policy ran over the whole trace, '
        f"learning from the minutes before {text(held.since)}; figures a month "
        f"({MONTH_HOURS} h), scaled from the {held.minutes:,} scored minutes.</p>"
        f'<div class="figures">{"".join(figures)}</div>' + table(header, rows, row_attrs=marks)
    )
