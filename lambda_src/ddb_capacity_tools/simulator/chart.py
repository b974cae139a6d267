"""Runs in: workstation (the `ddb-capacity` command).

A PNG per run: demand, served and provisioned per policy over time, throttles below."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .run import DimensionResult
from .trace import Trace, key_label

if TYPE_CHECKING:
    from .ensemble import EnsembleResult


class ChartError(ValueError):
    """The chart cannot be written (matplotlib missing, a bad file name)."""


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


#: How to get matplotlib, which only charts need.
INSTALL = "pip install 'cdk-dynamodb-capacity[charts]'"


def check(path: str | Path) -> Path:
    """``path`` if a chart can be written there (:func:`check_path`) and matplotlib is
    installed; checked before any simulation runs."""
    checked = check_path(path)
    if importlib.util.find_spec("matplotlib") is None:
        raise ChartError(_missing(checked))
    return checked


def _missing(path: str | Path) -> str:
    return (
        f"--chart: got {str(path)!r}; a chart needs matplotlib, which is not installed: "
        f"{INSTALL} (the [charts] extra)"
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
    keys = list(dict.fromkeys(r.key for r in results))
    fig, axes = plt.subplots(2, len(keys), figsize=(6 * len(keys), 7), squeeze=False)
    for c, key in enumerate(keys):
        rows = [r for r in results if r.key == key]
        labels = [r.policy for r in rows]
        for row, (measure, title) in enumerate(
            (("cost_usd", "cost $"), ("throttled_requests", "throttled units"))
        ):
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
            if measure == "throttled_requests" and any(s.max > 0 for s in spreads):
                ax.set_yscale("symlog")
    fig.suptitle(f"{trace.name}: ensemble {name}, {len(results[0].runs)} model settings")
    fig.tight_layout()
    return _save(fig, plt, path)


def render(results: Sequence[DimensionResult], trace: Trace, path: str | Path) -> Path:
    """Write the chart; one column per dimension that has demand."""
    path = check_path(path)
    plt = _pyplot(path)

    keys = [k for k, d in trace.demand.items() if any(v > 0 for v in d)] or list(trace.demand)
    policies = list(dict.fromkeys(r.policy for r in results))
    by = {(r.policy, r.key): r for r in results}
    times = [trace.time(m) for m in range(trace.minutes)]
    rows = len(policies) + 1
    fig, axes = plt.subplots(
        rows, len(keys), figsize=(7 * len(keys), 2.2 * rows), sharex=True, squeeze=False
    )
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for c, key in enumerate(keys):
        for r, policy in enumerate(policies):
            ax = axes[r][c]
            result = by[(policy, key)]
            rec = result.recorded
            ax.plot(times, rec.demand, color="0.6", lw=0.8, label="demand")
            ax.plot(times, rec.served, color=colors[r % len(colors)], lw=0.9, label="served")
            if result.peak_provisioned:
                ax.step(
                    times, rec.provisioned, where="post", color="black", lw=1.1, label="provisioned"
                )
            ax.set_title(
                f"{policy} - {key_label(key)}: {result.throttled_minutes} throttled "
                f"min, ${result.cost_usd:,.2f}",
                fontsize=9,
            )
            ax.set_ylabel("units/s", fontsize=8)
            ax.tick_params(labelsize=7)
            if r == 0:
                ax.legend(fontsize=7, loc="upper left")
        ax = axes[-1][c]
        for r, policy in enumerate(policies):
            ax.plot(
                times,
                by[(policy, key)].recorded.throttled,
                color=colors[r % len(colors)],
                lw=0.9,
                label=policy,
            )
        ax.set_title(f"throttled - {key_label(key)}", fontsize=9)
        ax.set_ylabel("units/s refused", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(f"{trace.name}: {trace.start:%Y-%m-%d %H:%M} UTC, {trace.minutes:,} minutes")
    fig.autofmt_xdate()
    fig.tight_layout()
    return _save(fig, plt, path)
