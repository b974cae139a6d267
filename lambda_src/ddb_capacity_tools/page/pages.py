"""Runs in: workstation (the `ddb-capacity` command), advisor worker Lambda.

The page of each command: ``simulate`` and ``backtest``
([`run_page`][ddb_capacity_tools.page.run_page]), ``tune``
([`tune_page`][ddb_capacity_tools.page.tune_page]) and one table's ``advise``
([`table_page`][ddb_capacity_tools.page.table_page])."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..advise import Advice, Failure
from ..simulator.billing import DEFAULT_BASIS
from ..simulator.candidates import Tuning
from ..simulator.ensemble import EnsembleResult
from ..simulator.run import DimensionResult
from ..simulator.text import counted, run_period, run_scope
from ..simulator.trace import Trace
from ..simulator.tune_scored import Holdout
from .choice import (
    advice_section,
    candidates_of_ensemble,
    candidates_of_run,
    frontier_section,
    held_section,
)
from .document import document, text
from .timeline import demand_section, series_section

__all__ = ["run_page", "table_page", "tune_page"]


def _about(trace: Trace, extra: str = "") -> str:
    words = f"{counted(trace.minutes, 'minute')} from {trace.start:%Y-%m-%d %H:%M} UTC"
    notes = f" {trace.notes[:1].upper()}{trace.notes[1:]}." if trace.notes else ""
    return f'<p class="lead">{text(words + extra + ".")}{text(notes)}</p>'


def run_page(
    results: Sequence[DimensionResult],
    trace: Trace,
    score_from: int = 0,
    spread: Sequence[EnsembleResult] = (),
    ensemble: str = "",
    run_note: str = "",
    title: str = "simulation",
) -> str:
    """``simulate``'s or ``backtest``'s page: the time series, then every policy's cost
    against its refusals (min to max over the ensemble, when one ran); ``run_note`` says
    what this run did (its policies, the signals they saw), ``title`` what the page calls
    it after the trace's name. Every dollar is the cost over the trace (its scored part,
    from ``score_from``), and the page says so."""
    scored = f"; scored from {trace.time(score_from):%Y-%m-%d %H:%M} UTC" if score_from else ""
    scored += f"; every cost is {run_scope(trace.minutes, score_from)}"
    series, charts = series_section(results, trace, score_from)
    candidates = candidates_of_ensemble(spread) if spread else candidates_of_run(results)
    note = f" The whiskers span the {ensemble} ensemble's settings." if spread else ""
    frontier, more = frontier_section(candidates, None, run_period(score_from), note)
    ran = f'<p class="lead">{text(run_note)}</p>' if run_note else ""
    heading = f"{trace.name}: {title}"
    body = f"<h1>{text(heading)}</h1>{_about(trace, scored)}{ran}{series}{frontier}"
    return document(heading, body, {"charts": {**charts, **more}})


def _tuned(tuning: Tuning, trace: Trace, ensemble: str, settings: int) -> tuple[str, int, str]:
    """How ``tune`` made its figures, as its terminal output says it: the ensemble, the
    minutes fitted on and chosen on (from when), what the figures cover; the minute the
    history was split at (0: not split) and the figures' period."""
    v = tuning.validation
    words = f"; ensemble {ensemble} ({counted(settings, 'setting')})"
    if not v:
        return words + "; figures over the trace", 0, "over the trace"
    split = int(v.get("split_minute", v["fit_minutes"]))
    since = f" (from {trace.time(split):%Y-%m-%d %H:%M} UTC)"
    return words + _validated(v, since), split, "a month"


def _validated(v: dict[str, Any], since: str = "") -> str:
    """The words of a tuning's ``validation``: the minutes fitted on and chosen on (``since``:
    from when), and that its figures are a month's."""
    return (
        f"; fitted on {counted(v['fit_minutes'], 'minute')}, chosen on the later "
        f"{v['choose_minutes']:,}{since}; figures a month ({v['month_hours']} h), scaled from "
        "the later part"
    )


def tune_page(
    tuning: Tuning,
    trace: Trace,
    ensemble: str,
    settings: int,
    held: Holdout | None = None,
    basis: str = DEFAULT_BASIS,
) -> str:
    """``tune``'s page: how its figures were made (the ensemble, the minutes fitted on and
    chosen on, a month), the advice, the frontier with each candidate's spread over the
    ensemble, and the demand it was tuned on, split where the choosing began. With
    ``held`` (``--score-from``: ``trace`` is the part chosen on), the pick scored on the
    minutes after it (`held_section`), and the demand of the whole trace; ``basis``: how
    provisioned capacity was billed."""
    scope, split, period = _tuned(tuning, trace, ensemble, settings)
    scope += f"; billing basis {basis}"
    note = f" The whiskers span the {ensemble} ensemble's {counted(settings, 'setting')}."
    frontier, charts = frontier_section(tuning.candidates, tuning.recommended, period, note)
    if held is None:
        demand, more = demand_section(trace, split)
    else:
        demand, more = demand_section(held.trace, split, held.score_from)
    warnings = "".join(f'<p class="lead bad">{text(w)}</p>' for w in tuning.warnings)
    scored = "" if held is None else held_section(held, tuning)
    body = (
        f"<h1>{text(trace.name)}: tune</h1>{_about(trace, scope)}{warnings}"
        f"{advice_section(tuning, period)}{scored}{frontier}{demand}"
    )
    return document(f"{trace.name}: tune", body, {"charts": {**charts, **more}})


def _where(result: Advice | Failure) -> str:
    return result.table + (f" / {result.index}" if result.index else "")


def table_page(result: Advice | Failure, about: dict[str, Any] | None = None) -> str:
    """One table's ``advise`` page: the advice a month (against its current settings when
    they are known) and the frontier; a table that failed shows why."""
    where = _where(result)
    window = ", ".join(f"{k} {v}" for k, v in (about or {}).items())
    if not isinstance(result, Failure) and result.tuning.validation:
        window = (window or counted(result.minutes, "minute")) + _validated(
            result.tuning.validation
        )
    head = f"<h1>{text(where)}</h1>" + (f'<p class="lead">{text(window)}</p>' if window else "")
    if isinstance(result, Failure):
        body = f"{head}<h2>Not advised</h2><p>{text(result.reason)}</p>"
        return document(f"{where}: advise", body)
    tuning = result.tuning
    section = advice_section(tuning, "a month", result.current_figures)
    if result.current is not None and result.current_figures is None:
        section += f"<p>Current settings unknown: {text(result.current.reason)}</p>"
    frontier, charts = frontier_section(
        tuning.candidates,
        tuning.recommended,
        "a month",
        " The whiskers span the ensemble's settings.",
    )
    notes = f'<p class="muted">{text(result.notes)}</p>' if result.notes else ""
    body = f"{head}{section}{notes}{frontier}"
    return document(f"{where}: advise", body, {"charts": charts})
