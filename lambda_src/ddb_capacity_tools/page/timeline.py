"""Runs in: workstation (the `ddb-capacity` command).

The time series of a run, as page data: per dimension, a strip of each policy's throttled
minutes (one row a policy, so policies are told apart), then one panel per policy with the
demand, that policy's capacity and what it refused, its dollars labelled as the cost over
the trace (or its scored part), never a month. A dimension no policy throttles on is
folded away (open it to see it). The ``bound`` is drawn dashed and labelled as the lower
bound on cost it is, not a plan; minutes before ``--score-from`` are shaded as not scored.
A chart may mark minutes with a vertical line (``marks``: where ``tune`` split the history).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..simulator.run import DimensionResult
from ..simulator.text import counted, run_period
from ..simulator.trace import Key, Trace, key_label
from .document import money, text

__all__ = [
    "COLORS",
    "SCORED_AFTER",
    "SPLIT_AFTER",
    "SPLIT_BEFORE",
    "demand_section",
    "holder",
    "series_section",
    "sparse",
    "steps",
]

COLORS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#7f7f7f",
    "#d62728",
)
"""One colour per policy, in the order the policies were given (matplotlib's tab10)."""
ABOUT = {
    "bound": "a floor on cost, not a plan: no scaler could follow it",
    "oracle": "the best feasible plan, knowing the future",
    "on-demand": "no provisioned capacity: billed per request",
}
"""What each kind of run is, where its panel's title alone would mislead."""
PANEL_HEIGHT = 130


def steps(values: Sequence[float]) -> list[list[float]]:
    """``[minute, value]`` where ``values`` changes (from minute 0)."""
    out: list[list[float]] = []
    for minute, value in enumerate(values):
        if not out or out[-1][1] != value:
            out.append([minute, round(value, 2)])
    return out


def sparse(values: Sequence[float]) -> list[list[float]]:
    """``[minute, value]`` where ``values`` is not 0."""
    return [[m, round(v, 2)] for m, v in enumerate(values) if v > 0]


def _chart(
    trace: Trace,
    score_from: int,
    panels: list[dict[str, Any]],
    demand: Sequence[float],
    marks: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """A series chart; ``demand`` is written once and drawn in every panel that names it;
    each of ``marks`` (``minute``, the words ``before`` and ``after`` it) a vertical line
    across every panel."""
    return {
        "kind": "series",
        "minutes": trace.minutes,
        "start_ms": int(trace.start.timestamp() * 1000),
        "score_from": score_from,
        "shared": {"demand": [round(v, 2) for v in demand]},
        "panels": panels,
        "marks": list(marks),
    }


DEMAND = {"name": "demand", "role": "demand", "shared": "demand"}


def _policy_panel(r: DimensionResult, color: str, period: str) -> dict[str, Any]:
    rec = r.recorded
    role = "bound" if r.policy == "bound" else "capacity"
    series: list[dict[str, Any]] = [DEMAND]
    if r.peak_provisioned:
        series.append(
            {"name": r.policy, "role": role, "color": color, "steps": steps(rec.provisioned)}
        )
    series.append(
        {"name": f"{r.policy} refused", "role": "throttled", "sparse": sparse(rec.throttled)}
    )
    about = ABOUT.get(r.policy)
    return {
        "title": f"{r.policy}: {r.throttled_minutes:,} throttled min, "
        f"{money(r.cost_usd)} {period}" + (f" ({about})" if about else ""),
        "height": PANEL_HEIGHT,
        "series": series,
    }


def _dimension(
    key: Key,
    rows: Sequence[DimensionResult],
    trace: Trace,
    score_from: int,
    chart_id: str,
    folded: bool,
) -> tuple[str, dict[str, Any]]:
    """One dimension's charts, in a section folded away when it does not throttle and
    ``folded`` (some other dimension does)."""
    label = key_label(key)
    throttling = [r.policy for r in rows if _throttles(r)]
    strip = {
        "title": f"throttled minutes per policy: {label}",
        "strip": True,
        "series": [{"name": r.policy, "sparse": sparse(r.recorded.throttled)} for r in rows],
    }
    period = run_period(score_from)
    panels = [strip]
    panels += [_policy_panel(r, COLORS[n % len(COLORS)], period) for n, r in enumerate(rows)]
    summary = (
        f"{label}: {len(throttling)} of {counted(len(rows), 'policy', 'policies')} throttle"
        if throttling
        else f"{label}: no policy throttles"
    )
    body = (
        f"<details{' open' if throttling or not folded else ''}><summary>{text(summary)}</summary>"
        f"{_legend()}{holder(chart_id)}</details>"
    )
    return body, _chart(trace, score_from, panels, rows[0].recorded.demand)


def _throttles(r: DimensionResult) -> bool:
    return any(v > 0 for v in r.recorded.throttled)


def holder(chart_id: str) -> str:
    return (
        f'<div class="chart" data-chart="{text(chart_id)}"><div class="zoom-bar">'
        '<button type="button" class="zoom-reset">Reset zoom</button>'
        '<span class="zoom-status"></span></div></div>'
    )


def _legend() -> str:
    return (
        '<p class="legend"><span class="key" style="background:#d9d9d9"></span>demand'
        '<span class="key" style="background:#1f77b4"></span>provisioned capacity (one '
        'colour a policy)<span class="key" style="background:#7a5195"></span>bound (dashed: '
        'a cost floor, not a plan)<span class="key" style="background:#c81e1e"></span>'
        "refused (throttled) units/s; shaded: not scored</p>"
    )


def series_section(
    results: Sequence[DimensionResult], trace: Trace, score_from: int = 0
) -> tuple[str, dict[str, dict[str, Any]]]:
    """The time series section's HTML and its charts' data, by chart id."""
    keys = list(dict.fromkeys(r.key for r in results))
    folded = any(_throttles(r) for r in results)  # else every dimension is open
    parts, charts = [], {}
    for n, key in enumerate(keys):
        chart_id = f"series-{n}"
        rows = [r for r in results if r.key == key]
        body, chart = _dimension(key, rows, trace, score_from, chart_id, folded)
        parts.append(body)
        charts[chart_id] = chart
    intro = (
        "<h2>Demand, capacity and throttles over time</h2>"
        '<p class="lead">Per dimension: first the minutes each policy throttled, one row a '
        "policy; then each policy on its own: the demand (grey), the capacity it provisioned "
        "(a line) and what it refused (red). Drag across a chart to zoom; every chart of the "
        "dimension follows.</p>"
    )
    return intro + "".join(parts), charts


SPLIT_BEFORE = "fitted on the earlier part"
SPLIT_AFTER = "chosen on the later part from here"
"""The words either side of the line where ``tune`` split the history."""
SCORED_AFTER = "scored from here"
"""The words after the line where ``tune --score-from`` began to score."""


def demand_section(
    trace: Trace, split: int = 0, score_from: int = 0
) -> tuple[str, dict[str, dict[str, Any]]]:
    """The trace's demand alone, one panel per dimension (what ``tune`` and ``advise``
    were given); with ``split`` (0 < split < the trace's minutes), a line where the later
    part of the history begins: the candidates were fitted before it, chosen after it
    (up to ``score_from``, when given: a second line, where the scored minutes begin)."""
    marks = []
    lead = ""
    end = score_from or trace.minutes
    if 0 < split < end:
        marks.append({"minute": split, "before": SPLIT_BEFORE, "after": SPLIT_AFTER})
        lead = (
            '<p class="lead">The dashed line splits the history: each family of candidates '
            f"was fitted on the {counted(split, 'minute')} before it, and the candidates were "
            f"chosen on the {counted(end - split, 'minute')} after it (from "
            f"{trace.time(split):%Y-%m-%d %H:%M} UTC).</p>"
        )
    if 0 < score_from < trace.minutes:
        marks.append({"minute": score_from, "before": "", "after": SCORED_AFTER})
        lead += (
            f'<p class="lead">The second line is where the scored part begins: the choice saw '
            f"none of the {counted(trace.minutes - score_from, 'minute')} after it (from "
            f"{trace.time(score_from):%Y-%m-%d %H:%M} UTC).</p>"
        )
    charts, parts = {}, []
    for n, (key, demand) in enumerate(trace.demand.items()):
        panel = {"title": f"demand: {key_label(key)} (units/s)", "height": PANEL_HEIGHT}
        charts[f"demand-{n}"] = _chart(trace, 0, [{**panel, "series": [DEMAND]}], demand, marks)
        parts.append(holder(f"demand-{n}"))
    return "<h2>Demand</h2>" + lead + "".join(parts), charts
