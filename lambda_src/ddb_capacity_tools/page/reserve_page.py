"""Runs in: workstation (the `ddb-capacity` command).

``reserve``'s page: per dimension, the fleet's hourly provisioned units under each table's
policy (grey), under the policy that made the past bill (a line) and the reserved units (a
dashed line), over the planning and the scored parts; then the plan's figures."""

from __future__ import annotations

from typing import Any

from ..reserve import Plan, figures
from ..reserve_sizing import DIMENSIONS, Hours
from ..reserve_words import fees_words, units_words
from ..simulator.billing import DEFAULT_BASIS, HOURLY_MAX
from ..simulator.text import counted
from ..simulator.trace import Trace
from .document import document, figure, money, text
from .timeline import PANEL_HEIGHT, holder, steps

__all__ = ["reserve_page"]


def _minutes(parts: list[Hours | None], trace: Trace, dimension: str) -> list[float]:
    """The parts' hourly units, one value a trace minute (each minute its hour's units)."""
    out: list[float] = []
    for part in parts:
        if part is None:
            continue
        for units, weight in zip(part.units(dimension), part.weights, strict=True):
            out += [float(units)] * round(weight * 60)
    return (out + [0.0] * trace.minutes)[: trace.minutes]


def _chart(plan: Plan, trace: Trace, split: int, dimension: str) -> dict[str, Any]:
    ours = _minutes([plan.plan, plan.score], trace, dimension)
    past = _minutes([plan.current, plan.current_score], trace, dimension)
    reserved = plan.units.get(dimension, 0) if plan.term else 0
    series: list[dict[str, Any]] = [
        {"name": "these policies", "role": "demand", "shared": "demand"},
        {"name": plan.setup.current, "role": "capacity", "color": "#ff7f0e", "steps": steps(past)},
    ]
    if reserved:
        series.append({"name": "reserved", "role": "bound", "steps": [[0, reserved]]})
    return {
        "kind": "series",
        "minutes": trace.minutes,
        "start_ms": int(trace.start.timestamp() * 1000),
        "score_from": split if split < trace.minutes else 0,
        "shared": {"demand": ours},
        "panels": [
            {
                "title": f"{dimension} units an hour: these policies (grey), "
                f"{plan.setup.current} (line), reserved {reserved:,} (dashed)",
                "height": PANEL_HEIGHT * 2,
                "series": series,
            }
        ],
    }


def _units_words(basis: str) -> str:
    """What an hour's units are, by the billing basis (`simulator.billing`)."""
    each = (
        "the highest level provisioned in it"
        if basis == HOURLY_MAX
        else "the mean level provisioned in it (billed by the minute)"
    )
    return (
        f"An hour's units are {each}, per table and GSI, summed over the fleet: what AWS "
        f"bills (billing basis {basis})."
    )


def reserve_page(plan: Plan, trace: Trace, split: int, about: dict[str, Any]) -> str:
    """The whole page of one plan."""
    f = figures(plan)
    words = (
        "no reservation"
        if plan.term is None
        else units_words(plan.units["read"], plan.units["write"], plan.term)
    )
    heads = "".join(
        [
            figure("plan", words),
            figure("a month with it", money(f["monthly_usd"]["with_plan"]), "good"),
            figure("a month without it", money(f["monthly_usd"]["without_plan"])),
            figure("up front", money(f["upfront_usd"])),
            figure(
                "Savings Plan, an hour",
                money(plan.savings_plan_hourly) if plan.setup.savings_plan else "not planned",
            ),
            figure("with the reservation alone", money(f["monthly_usd"]["reservation_only"])),
            figure(
                "traffic a third lower, with / without",
                f"{money(f['fall_by_third_monthly_usd']['with_plan'])} / "
                f"{money(f['fall_by_third_monthly_usd']['without_plan'])}",
            ),
        ]
    )
    charts, holders = {}, []
    for n, d in enumerate(DIMENSIONS):
        charts[f"reserve-{n}"] = _chart(plan, trace, split, d)
        holders.append(holder(f"reserve-{n}"))
    body = (
        f"<h1>Reserved capacity: {counted(len(plan.tables), 'table')}</h1>"
        f'<p class="lead">{text(about["heading"])}</p>'
        f'<div class="figures">{heads}</div>'
        "<h2>The fleet's hourly units and the reservation</h2>"
        f'<p class="lead">{text(_units_words(about.get("billing_basis", DEFAULT_BASIS)))}'
        " Shaded: the planning part.</p>"
        + "".join(holders)
        + "<h2>Fees</h2>"
        + "".join(f"<p>{text(line)}</p>" for line in fees_words(plan))
    )
    return document("ddb-capacity reserve", body, {"charts": charts})
