"""Runs in: workstation (the `ddb-capacity` command).

A PNG per run: demand, served and provisioned per policy over time, throttles below."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..tool_errors import ChartError as ChartError
from .run import DimensionResult
from .text import counted, run_period
from .trace import Key, Trace, key_label

if TYPE_CHECKING:
    from .ensemble import EnsembleResult


def check_path(path: str | Path) -> Path:
    """``path`` if a chart can go there: a .png name in a folder that exists (none is
    created)."""
    path = Path(path)
    if path.suffix.lower() != ".png":
        raise ChartError(f"--chart: got {str(path)!r}; expected a file name ending in .png")
    if not path.parent.is_dir():
        raise ChartError(
            f"--chart: got {str(path)!r}; the folder {str(path.parent)!r} does not exist "
            f"(create it first)"
        )
    return path


INSTALL = "pip install 'matplotlib>=3.8,<4'"
"""How to get matplotlib, which only charts need."""


def check(path: str | Path) -> Path:
    """``path`` if a chart can be written there (`check_path`) and matplotlib is
    installed; checked before any simulation runs."""
    checked = check_path(path)
    if importlib.util.find_spec("matplotlib") is None:
        raise ChartError(_missing(checked))
    return checked


def _missing(path: str | Path) -> str:
    return (
        f"--chart: got {str(path)!r}; a chart needs matplotlib, which is not installed: "
        f"{INSTALL} (what the package's [charts] extra installs)"
    )


def _pyplot(path: str | Path) -> Any:
    try:
        import matplotlib
    except ImportError:
        raise ChartError(_missing(path)) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, plt: Any, path: Path) -> Path:
    try:
        fig.savefig(path, dpi=90)
    except OSError as exc:
        raise ChartError(f"--chart: cannot write {str(path)!r}: {exc.strerror}") from None
    finally:
        plt.close(fig)
    return path


def render_ensemble(
    results: Sequence[EnsembleResult], trace: Trace, name: str, path: str | Path
) -> Path:
    """Per dimension, each policy's cost and throttled units over the ensemble's settings:
    the median as a bar, the minimum and maximum as its whiskers."""
    path = check_path(path)
    plt = _pyplot(path)
    return _save(ensemble_figure(results, trace, name, plt), plt, path)


def ensemble_figure(results: Sequence[EnsembleResult], trace: Trace, name: str, plt: Any) -> Any:
    """`render_ensemble`'s figure, drawn with ``plt`` (pyplot), not yet saved: every
    whisker within its panel (a log axis's automatic top can fall below the largest)."""
    keys = list(dict.fromkeys(r.key for r in results))
    fig, axes = plt.subplots(2, len(keys), figsize=(6 * len(keys), 7), squeeze=False)
    for c, key in enumerate(keys):
        rows = [r for r in results if r.key == key]
        labels = [r.policy for r in rows]
        scored = max((r.score_from for r in rows), default=0)
        measures = (
            ("cost_usd", f"cost $ {run_period(scored)}"),
            ("throttled_requests", "throttled units"),
        )
        for row, (measure, title) in enumerate(measures):
            ax = axes[row][c]
            spreads = [getattr(r, measure) for r in rows]
            medians = [s.median for s in spreads]
            errors = [
                [m - s.min for m, s in zip(medians, spreads, strict=True)],
                [s.max - m for m, s in zip(medians, spreads, strict=True)],
            ]
            ax.bar(range(len(rows)), medians, yerr=errors, capsize=4, color="0.7")
            ax.set_xticks(range(len(rows)), labels, rotation=30, ha="right", fontsize=7)
            ax.set_title(f"{title} - {key_label(key)} (median, min-max)", fontsize=9)
            ax.tick_params(labelsize=7)
            top = max((s.max for s in spreads), default=0.0)
            if measure == "throttled_requests" and top > 0:
                ax.set_yscale("symlog")
                ax.set_ylim(0, top * 3)  # about half a decade over the highest whisker
            elif top > 0:
                ax.set_ylim(0, top * 1.1)
    fig.suptitle(f"{trace.name}: ensemble {name}, {len(results[0].runs)} model settings")
    fig.tight_layout()
    return fig


TITLE_CHARS = 72
"""The longest panel title kept on one line: a longer one (a policy explained, a long
period) is two lines, the policy's name above its figures, so it stays over its panel."""

ABOUT = {
    "bound": "a floor on cost, not a plan",
    "oracle": "the best plan, knowing the future",
}
"""What a panel's title says of the runs that are not plans a scaler follows."""


def shown_keys(results: Sequence[DimensionResult], trace: Trace) -> tuple[list[Key], list[Key]]:
    """(the dimensions drawn, those left out): a dimension no policy throttles on is left
    out when another throttles; when none does, every dimension with demand is drawn."""
    demanded = [k for k, d in trace.demand.items() if any(v > 0 for v in d)] or list(trace.demand)
    throttling = {r.key for r in results if any(v > 0 for v in r.recorded.throttled)}
    drawn = [k for k in demanded if k in throttling] or demanded
    return drawn, [k for k in demanded if k not in drawn]


def _policy_panel(ax: Any, result: DimensionResult, times: list[Any], color: str) -> None:
    """Demand, the capacity the policy provisioned and what it refused, on one axis."""
    rec = result.recorded
    ax.plot(times, rec.demand, color="0.6", lw=0.8, label="demand")
    ax.fill_between(times, 0, rec.throttled, color="#c81e1e", lw=0, label="refused", step="post")
    bound = result.policy == "bound"
    if result.peak_provisioned:
        ax.step(
            times,
            rec.provisioned,
            where="post",
            color="#7a5195" if bound else color,
            ls="--" if bound else "-",
            lw=1.1,
            label="bound (a cost floor, not a plan)" if bound else "provisioned",
        )
    about = f" ({ABOUT[result.policy]})" if result.policy in ABOUT else ""
    name = f"{result.policy}{about}"
    figures = (
        f"{key_label(result.key)}: {result.throttled_minutes} throttled min, "
        f"${result.cost_usd:,.2f} {run_period(result.score_from)}"
    )
    one_line = len(name) + len(figures) <= TITLE_CHARS
    ax.set_title(f"{name} - {figures}" if one_line else f"{name}\n{figures}", fontsize=9)
    ax.set_ylabel("units/s", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7, loc="upper left")


def _throttle_strip(ax: Any, rows: Sequence[DimensionResult], times: list[Any]) -> None:
    """One row per policy, a mark at each minute it throttled: policies told apart."""
    minute = times[1] - times[0] if len(times) > 1 else None
    for n, r in enumerate(rows):
        spans = [(times[m], minute) for m, v in enumerate(r.recorded.throttled) if v > 0]
        if spans and minute is not None:
            ax.broken_barh(spans, (n - 0.35, 0.7), color="#c81e1e")
    ax.set_yticks(range(len(rows)), [r.policy for r in rows], fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_title(f"throttled minutes per policy - {key_label(rows[0].key)}", fontsize=9)
    ax.tick_params(labelsize=7)


def render(results: Sequence[DimensionResult], trace: Trace, path: str | Path) -> Path:
    """Write the chart (`figure`)."""
    path = check_path(path)
    plt = _pyplot(path)
    return _save(figure(plt, results, trace), plt, path)


def figure(plt: Any, results: Sequence[DimensionResult], trace: Trace) -> Any:
    """The chart: one column per dimension that throttles (every one with demand when none
    does): each policy on its own row, then their throttled minutes apart. Laid out by
    matplotlib's constrained layout, which keeps the figure's title and each panel's clear
    of one another."""
    keys, left_out = shown_keys(results, trace)
    policies = list(dict.fromkeys(r.policy for r in results))
    by = {(r.policy, r.key): r for r in results}
    times = [trace.time(m) for m in range(trace.minutes)]
    rows = len(policies) + 1
    fig, axes = plt.subplots(
        rows,
        len(keys),
        figsize=(7 * len(keys), 2.2 * rows),
        sharex=True,
        squeeze=False,
        layout="constrained",
    )
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for c, key in enumerate(keys):
        for r, policy in enumerate(policies):
            _policy_panel(axes[r][c], by[(policy, key)], times, colors[r % len(colors)])
        _throttle_strip(axes[-1][c], [by[(p, key)] for p in policies], times)
    omitted = ", ".join(key_label(k) for k in left_out)
    fig.suptitle(
        f"{trace.name}: {trace.start:%Y-%m-%d %H:%M} UTC, {counted(trace.minutes, 'minute')}"
        + (f"\nnot drawn: {omitted} (no policy throttles; see --html)" if omitted else ""),
        fontsize=10,
    )
    for ax in axes[-1]:  # the shared time axis's labels, slanted (autofmt_xdate, which
        # would call subplots_adjust, warns under a layout engine before matplotlib 3.10)
        ax.tick_params(axis="x", labelrotation=30)
        for label in ax.get_xticklabels():
            label.set_horizontalalignment("right")
    return fig
