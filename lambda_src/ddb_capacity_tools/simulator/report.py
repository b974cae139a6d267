"""Runs in: workstation (the `ddb-capacity` command).

Results as the stable JSON contract of ``--json`` and as a readable table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from .params import ModelParams
from .prices import Prices
from .run import DimensionResult
from .text import cost_heading, counted, fixed_width, run_scope
from .trace import Trace, key_label


def as_json(
    results: Sequence[DimensionResult], trace: Trace, params: ModelParams, prices: Prices
) -> dict[str, Any]:
    """``{"policies": [...]}``: one element per policy and dimension
    (docs/guides/simulator.md#json-output)."""
    oracle = {r.key: r.cost_usd for r in results if r.policy == "oracle"}
    floor = {r.key: r.cost_usd for r in results if r.policy == "bound"}
    return {
        "policies": [r.as_json() for r in results],
        "oracle_over_bound": {
            key_label(k): round(oracle[k] / floor[k], 4)
            for k in oracle
            if k in floor and floor[k] > 0
        },
        "trace": {
            "name": trace.name,
            "start": trace.start.isoformat(),
            "minutes": trace.minutes,
            "dimensions": [key_label(k) for k in trace.demand],
        },
        "model": asdict(params),
        "billing_basis": params.billing,
        "prices": asdict(prices),
    }


def _on_demand_limits(r: DimensionResult) -> float:
    causes = r.throttled_by_cause
    return causes["on_demand"] + causes["max_on_demand"]


def table(results: Sequence[DimensionResult], trace: Trace) -> str:
    """A fixed-width comparison; ``cost $ (trace)`` is the cost over the trace (``cost $
    (scored)`` over its scored part), ``x oracle`` and ``x bound`` are cost relative to the
    oracle's and to the bound's."""
    oracle = {r.key: r.cost_usd for r in results if r.policy == "oracle"}
    floor = {r.key: r.cost_usd for r in results if r.policy == "bound"}
    score_from = max((r.score_from for r in results), default=0)
    cost = cost_heading(score_from)
    header: tuple[str, ...] = (
        "policy",
        "dimension",
        "throttled units",
        "thr. min",
        "first",
        "unit-hours",
        cost,
        "x oracle",
        "x bound",
        "decreases",
        "peak",
    )
    by_cause = any(r.throttled_by_cause["key_range"] > 0 for r in results)
    if by_cause:  # the throttled units split by cause, where a hot partition refused some
        header = (*header[:3], "of which key-range", *header[3:])
    limits = any(_on_demand_limits(r) > 0 for r in results)
    if limits:  # and where on-demand's limits refused some
        header = (*header[: 3 + by_cause], "of which on-demand limits", *header[3 + by_cause :])
    rows: list[tuple[str, ...]] = [header]
    for r in results:
        base = oracle.get(r.key)
        key_range = f"{r.throttled_by_cause['key_range']:,.0f}"
        rows.append(
            (
                r.policy,
                key_label(r.key),
                f"{r.throttled_requests:,.0f}",
                *([key_range] if by_cause else []),
                *([f"{_on_demand_limits(r):,.0f}"] if limits else []),
                f"{r.throttled_minutes:,}",
                "-" if r.first_throttle_minute is None else f"{r.first_throttle_minute}",
                f"{r.provisioned_unit_hours:,.0f}",
                f"{r.cost_usd:,.2f}",
                f"{r.cost_usd / base:.2f}" if base else "-",
                f"{r.cost_usd / floor[r.key]:.2f}" if floor.get(r.key) else "-",
                f"{r.decreases}"
                + (f" (+{r.rejected_decreases} refused)" if r.rejected_decreases else ""),
                f"{r.peak_provisioned:,}",
            )
        )
    held = counted(trace.minutes, "minute")
    lines = [f"{trace.name}: {held} from {trace.start:%Y-%m-%d %H:%M} UTC"]
    if trace.notes:
        lines.append(trace.notes)
    lines.append("")
    lines += fixed_width(rows)
    lines.append("")
    lines.append(
        _legend(by_cause, limits, f"{cost}: the cost {run_scope(trace.minutes, score_from)}")
    )
    return "\n".join(lines)


def _legend(by_cause: bool, limits: bool, cost: str) -> str:
    """The table's footnote: ``cost`` says what the cost column covers; the causes'
    columns explained where they are shown."""
    return (
        "throttled units: capacity units refused (units/s x 60); first: minutes from "
        f"the trace start; {cost}; x oracle, x bound: the cost against the oracle's and the "
        "bound's (- when they were not run or cost nothing); refused decreases were over "
        "DynamoDB's quota; bound: no plan without throttles costs less "
        "(docs/guides/simulator.md#bounds-oracle-and-bound)"
        + (
            "; key-range: refused by a hot key's partition, which no capacity fixes (the "
            "rest are provisioned-throughput throttles)"
            if by_cause
            else ""
        )
        + (
            "; on-demand limits: over double the previous peak, the warm throughput or the "
            "maximum throughput (docs: Simulator, 'On-demand')"
            if limits
            else ""
        )
    )
