"""Runs in: workstation (the `ddb-capacity` command).

``ddb-capacity tune``: how to set a table's capacity for its own traffic.

Every candidate (stock target tracking, the autopilot alone and the autopilot on top of
stock target tracking, each at several target utilizations, and on-demand) runs over the
trace under an ensemble of model settings. The medians of refused units and cost place each
candidate; the frontier is the candidates no other beats on both. The recommendation is the
frontier candidate that refuses least among those costing no more than stock target
tracking at 70 % (the console's default), or the cheapest frontier candidate when none
does. Its construct code is printed to paste.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ddb_capacity_runtime.core.policy import capacity_units

from .ensemble import Spread, run_ensemble
from .model import ModelParams
from .policies import DEFAULT_TICK_MINUTES, Spec, parse
from .prices import Prices
from .text import fixed_width
from .trace import Trace

#: What ``tune`` tries by default.
CANDIDATES = (
    "stock:50",
    "stock:60",
    "stock:70",
    "stock:80",
    "autopilot:50",
    "autopilot:60",
    "autopilot:70",
    "autopilot:80",
    "autopilot+stock:60",
    "autopilot+stock:70",
    "autopilot+stock:80",
    "on-demand",
)
REFERENCE = "stock:70"
#: The policies tune can recommend, as --candidate values.
CANDIDATE_HELP = "stock:T, autopilot, autopilot:T, autopilot+stock:T or on-demand"
#: The pasted code's maximum is this many times the trace's peak (:func:`bounds_for`).
PEAK_HEADROOM = 2


@dataclass(frozen=True)
class Candidate:
    """One candidate over the ensemble: refused units and cost, summed over dimensions."""

    policy: str
    throttled_requests: Spread
    cost_usd: Spread
    frontier: bool = False

    def as_json(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "throttled_requests": self.throttled_requests.as_json(),
            "cost_usd": self.cost_usd.as_json(),
            "frontier": self.frontier,
        }


@dataclass(frozen=True)
class Tuning:
    candidates: list[Candidate]
    recommended: Candidate
    code: str

    def as_json(self) -> dict[str, Any]:
        return {
            "candidates": [c.as_json() for c in self.candidates],
            "recommended": self.recommended.policy,
            "code": self.code,
        }


def _summed(values: Sequence[Sequence[float]]) -> Spread:
    """Per setting, the sum over dimensions; then min / median / max over settings."""
    return Spread.of([sum(v) for v in zip(*values, strict=True)])


def tune(
    trace: Trace,
    settings: Sequence[ModelParams],
    candidates: Sequence[str] = CANDIDATES,
    prices: Prices | None = None,
    tick: int = DEFAULT_TICK_MINUTES,
    workers: int | None = None,
) -> Tuning:
    names = list(dict.fromkeys([*candidates, REFERENCE]))
    specs = [parse(n, settings[0].max_capacity) for n in names]
    results = run_ensemble(trace, specs, settings, prices, tick=tick, workers=workers)
    placed = []
    for name in names:
        mine = [r for r in results if r.policy == name]
        placed.append(
            (
                name,
                _summed([[x.throttled_requests for x in r.runs] for r in mine]),
                _summed([[x.cost_usd for x in r.runs] for r in mine]),
            )
        )
    out = []
    for name, thr, cost in placed:
        beaten = any(
            t.median <= thr.median
            and c.median <= cost.median
            and (t.median < thr.median or c.median < cost.median)
            for _, t, c in placed
        )
        out.append(Candidate(name, thr, cost, frontier=not beaten))
    reference = next(c for c in out if c.policy == REFERENCE)
    frontier = [c for c in out if c.frontier]
    affordable = [c for c in frontier if c.cost_usd.median <= reference.cost_usd.median]
    best = (
        min(affordable, key=lambda c: (c.throttled_requests.median, c.cost_usd.median))
        if affordable
        else min(frontier, key=lambda c: (c.cost_usd.median, c.throttled_requests.median))
    )
    return Tuning(out, best, code_for(parse(best.policy), trace, settings[0]))


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
    trace's traffic (:func:`bounds_for`)."""
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
        return (
            f"table = {provisioned}"
            "ThrottleAwareScaler(self, 'Scaler', tables=[table])  # the autopilot mode\n"
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
    header = ("policy", "frontier", "refused units (median)", "cost $ (median)", "min-max cost")
    rows = [header]
    for c in sorted(tuning.candidates, key=lambda c: c.cost_usd.median):
        rows.append(
            (
                c.policy + (" <- recommended" if c is tuning.recommended else ""),
                "yes" if c.frontier else "",
                f"{c.throttled_requests.median:,.0f}",
                f"{c.cost_usd.median:,.2f}",
                f"{c.cost_usd.min:,.2f}-{c.cost_usd.max:,.2f}",
            )
        )
    lines = [
        f"{trace.name}: {trace.minutes:,} minutes, ensemble {ensemble} ({settings} settings), "
        f"read + write",
        "",
        *fixed_width(rows),
    ]
    lines += ["", "frontier: no other candidate refuses less and costs less", "", tuning.code]
    return "\n".join(lines)
