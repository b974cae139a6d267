"""Runs in: workstation (the `ddb-capacity` command).

Robustness: every policy over a documented set of plausible model settings.

One model setting is one guess at what DynamoDB, CloudWatch and the application do. A policy
that wins under one guess and loses under another is not a safe choice, so an ensemble runs
every policy under each setting of a named set and reports the minimum, median and maximum
of throttled units and cost per policy and dimension.

``plausible`` (the default) spans what AWS documents and what applications do:

- CloudWatch delay: 1 to 3 minutes ("Amazon DynamoDB metrics and dimensions": metrics are
  aggregated per minute and delivered with a lag), fixed or drawn per minute;
- UpdateTable latency: 1 to 5 minutes, fixed or drawn per update (the AWS spikes post: a
  raise within the high-water mark applies in "less than a minute usually"; larger changes
  take several);
- burst availability: 0, 25, 50 or 100 % of the bucket (DynamoDB "may" use burst capacity
  for maintenance and does not promise it);
- retries: none, or an SDK's 2 retries of each throttled request (the standard retry mode
  makes 3 attempts), and 2 units per request, which the throttle-aware policy is not told.

- a hot key: its share of the requests at 0.5, 1 or 1.5 times the command line's (or the
  trace's own), and DynamoDB's split for heat after half, once or twice the command
  line's minutes, or never. With no hot key (share 0) these change nothing.
- the fast path, when it is on: its reports' delay at 0.25, 0.5, 1 or 1.5 times the
  command line's (5 to 30 seconds around 20), and the share of the traffic that reports
  at 0.5, 0.75 or 1 times the command line's. With the fast path off these change nothing.

Each setting carries its own seed, so the ensemble is reproducible.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..tool_errors import EnsembleError as EnsembleError
from .params import ModelError, ModelParams
from .policies import DEFAULT_TICK_MINUTES, Spec
from .prices import Prices
from .run import DimensionResult, simulate
from .run_pool import Job, run_all
from .text import cost_heading, fixed_width
from .trace import Key, Trace, key_label

ENSEMBLES: dict[str, tuple[dict[str, Any], ...]] = {
    "plausible": (
        {"metric_delay_minutes": 1, "throttle_delay_minutes": 1, "update_minutes": 1},
        {"metric_delay_minutes": 2, "throttle_delay_minutes": 2, "update_minutes": 1},
        {
            "metric_delay_minutes": 1,
            "throttle_delay_minutes": 1,
            "delay_spread_minutes": 2,
            "update_minutes": 1,
            "update_spread_minutes": 4,
            "model_seed": 3,
        },
        {
            "metric_delay_minutes": 3,
            "throttle_delay_minutes": 3,
            "update_minutes": 2,
            "burst_fraction": 0.5,
            "retries": 2,
        },
        {
            "metric_delay_minutes": 2,
            "throttle_delay_minutes": 2,
            "update_minutes": 5,
            "burst_fraction": 0.5,
        },
        {
            "metric_delay_minutes": 3,
            "throttle_delay_minutes": 3,
            "update_minutes": 3,
            "burst_fraction": 0.0,
            "retries": 2,
        },
        {
            "metric_delay_minutes": 1,
            "throttle_delay_minutes": 1,
            "delay_spread_minutes": 2,
            "update_minutes": 1,
            "update_spread_minutes": 2,
            "burst_fraction": 0.25,
            "retries": 1,
            "units_per_request": 2.0,
            "model_seed": 7,
        },
        {
            "metric_delay_minutes": 2,
            "throttle_delay_minutes": 2,
            "update_minutes": 2,
            "burst_fraction": 0.0,
        },
    ),
}
"""Named ensembles: each setting overrides these fields of the command line's model."""


HOT_KEY_SPREAD: dict[str, tuple[tuple[float, float | None], ...]] = {
    "plausible": (
        (1.0, 1.0),
        (1.0, 1.0),
        (0.5, 1.0),
        (1.5, 2.0),
        (1.0, None),
        (1.5, None),
        (0.5, 0.5),
        (1.0, 2.0),
    ),
}
"""Per named ensemble and setting: the factor on the hot key's share (at most 1) and on the minutes
before a split for heat (None: never splits)."""


FAST_PATH_SPREAD: dict[str, tuple[tuple[float, float], ...]] = {
    "plausible": (
        (1.0, 1.0),
        (0.5, 1.0),
        (1.5, 0.75),
        (1.0, 0.5),
        (0.25, 1.0),
        (1.5, 1.0),
        (1.0, 0.75),
        (0.5, 0.5),
    ),
}
"""Per named ensemble and setting: the factors on the fast path's delay and on the share of the
traffic that reports."""


WARM_SPREAD: dict[str, tuple[float | None, ...]] = {
    "plausible": (0.5, 1.0, 3.0, None, 6.0, None, 2.0, 1.0),
}
"""Per named ensemble and setting: the factor on the seconds a raise within the warm throughput
takes (None: it takes ``update_minutes``, like any other change)."""


STREAM_SPREAD: dict[str, tuple[float, ...]] = {
    "plausible": (1.0, 0.5, 2.0, 1.0, 4.0, 2.0, 1.0, 0.5),
}
"""Per named ensemble and setting: the factor on the stream signal's delay."""


@dataclass(frozen=True)
class Spread:
    """The minimum, median and maximum of one measure over the settings."""

    min: float
    median: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        return cls(min(values), statistics.median(values), max(values))

    def as_json(self) -> dict[str, float]:
        return {k: round(v, 6) for k, v in asdict(self).items()}

    def scaled(self, factor: float, fixed: float = 0.0) -> Spread:
        """Each figure's part above ``fixed`` times ``factor``, ``fixed`` kept as it is."""
        return Spread(
            (self.min - fixed) * factor + fixed,
            (self.median - fixed) * factor + fixed,
            (self.max - fixed) * factor + fixed,
        )


@dataclass(frozen=True)
class EnsembleResult:
    """One policy on one dimension over every setting of an ensemble."""

    policy: str
    key: Key
    throttled_requests: Spread
    cost_usd: Spread
    runs: tuple[DimensionResult, ...]

    @property
    def score_from(self) -> int:
        """The minute the runs were scored from (0: the whole trace)."""
        return self.runs[0].score_from if self.runs else 0

    def as_json(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "dimension": key_label(self.key),
            "index": self.key[0],
            "throttled_requests": self.throttled_requests.as_json(),
            "cost_usd": self.cost_usd.as_json(),
            "settings": len(self.runs),
        }


def settings_of(name: str, base: ModelParams, trace: Trace | None = None) -> list[ModelParams]:
    """The ensemble ``name``'s settings on top of ``base`` (the other fields). The hot key's
    share is spread around ``base``'s, or ``trace``'s own when ``base`` leaves it to the
    trace (without ``trace``, it is left to the trace, unspread)."""
    if name not in ENSEMBLES:
        raise EnsembleError(f"--ensemble: got {name!r}; expected one of {', '.join(ENSEMBLES)}")
    if trace is not None:
        base = base.for_trace(trace)
    spread = HOT_KEY_SPREAD.get(name, ((1.0, 1.0),) * len(ENSEMBLES[name]))
    n = len(ENSEMBLES[name])
    fast = FAST_PATH_SPREAD.get(name, ((1.0, 1.0),) * n)
    warm = WARM_SPREAD.get(name, (1.0,) * n)
    stream = STREAM_SPREAD.get(name, (1.0,) * n)
    out = []
    for overrides, (skew, split), (delay, share), w, s in zip(
        ENSEMBLES[name], spread, fast, warm, stream, strict=True
    ):
        try:
            setting = _signals(_fast_path(_hot_key(base, skew, split), delay, share), w, s)
            out.append(replace(setting, **overrides).validate())
        except ModelError as exc:
            raise EnsembleError(f"--ensemble {name}: {exc}") from None
    return out


def _hot_key(base: ModelParams, skew: float, split: float | None) -> ModelParams:
    """``base`` with its hot key's share times ``skew`` (at most 1) and its minutes before
    a split for heat times ``split`` (None: never). Without a hot key, ``base`` as it is."""
    if not base.key_skew:
        return base
    minutes = base.split_minutes
    return replace(
        base,
        key_skew=min(1.0, base.key_skew * skew),
        split_minutes=None if minutes is None or split is None else max(1, round(minutes * split)),
    )


def _fast_path(base: ModelParams, delay: float, share: float) -> ModelParams:
    """``base`` with its fast path's delay times ``delay`` (at least a second) and its
    reporting share times ``share`` (at least 0.01). With the fast path off, ``base``."""
    if base.fast_path_seconds is None:
        return base
    return replace(
        base,
        fast_path_seconds=max(1, round(base.fast_path_seconds * delay)),
        fast_path_share=max(0.01, base.fast_path_share * share),
    )


def _signals(base: ModelParams, warm: float | None, stream: float) -> ModelParams:
    """``base`` with its warm raises' seconds times ``warm`` (None: as slow as any change)
    and its stream's delay times ``stream`` (at least a second; off stays off)."""
    seconds = base.warm_update_seconds
    return replace(
        base,
        warm_update_seconds=None
        if seconds is None or warm is None
        else min(600, round(seconds * warm)),
        stream_seconds=None
        if base.stream_seconds is None
        else min(600, max(1, round(base.stream_seconds * stream))),
    )


def _one(
    args: tuple[Trace, Sequence[Spec], ModelParams, Prices, Any, int, int | None],
) -> list[Any]:
    trace, specs, params, prices, schedule, tick, score_from = args
    return simulate(
        trace, specs, params, prices, schedule, tick, progress=None, score_from=score_from
    )


def run_ensemble(
    trace: Trace,
    specs: Sequence[Spec],
    settings: Sequence[ModelParams],
    prices: Prices | None = None,
    schedule: Sequence[Mapping[str, Any]] | None = None,
    tick: int = DEFAULT_TICK_MINUTES,
    workers: int | None = None,
    score_from: int | None = None,
) -> list[EnsembleResult]:
    """Every policy under every setting; settings run in parallel processes (``workers``,
    default the CPU count; 1 runs them here). ``score_from``: the trace minute every
    setting's results count from (``run_policy``'s)."""
    prices = prices or Prices()
    jobs = [
        Job(_one, ((trace, specs, p, prices, schedule, tick, score_from),), f"setting {n}")
        for n, p in enumerate(settings, 1)
    ]
    runs = run_all(jobs, workers or os.cpu_count() or 1)
    by: dict[tuple[str, Key], list[DimensionResult]] = {}
    for results in runs:
        for r in results:
            by.setdefault((r.policy, r.key), []).append(r)
    return [
        EnsembleResult(
            policy,
            key,
            Spread.of([r.throttled_requests for r in rs]),
            Spread.of([r.cost_usd for r in rs]),
            tuple(rs),
        )
        for (policy, key), rs in by.items()
    ]


def table(results: Sequence[EnsembleResult], name: str, settings: int) -> str:
    """min / median / max of throttled units and cost (over the trace, or its scored part),
    per policy and dimension."""
    score_from = max((r.score_from for r in results), default=0)
    header = (
        "policy",
        "dimension",
        "throttled units min / median / max",
        f"{cost_heading(score_from)} min / med / max",
    )
    rows = [header]
    for r in results:
        t, c = r.throttled_requests, r.cost_usd
        rows.append(
            (
                r.policy,
                key_label(r.key),
                f"{t.min:,.0f} / {t.median:,.0f} / {t.max:,.0f}",
                f"{c.min:,.2f} / {c.median:,.2f} / {c.max:,.2f}",
            )
        )
    guide = "docs/guides/simulator.md#robustness-ensembles-of-model-settings"
    lines = [f"ensemble {name}: {settings} model settings ({guide})", ""]
    lines += fixed_width(rows)
    return "\n".join(lines)
