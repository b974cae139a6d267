"""Runs in: workstation (the `ddb-capacity` command).

Run a trace through policies and report per dimension."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TextIO

from . import schedules
from .bound import Bound, bound
from .model import HotPartition, ModelParams, Recorded, SimulatedTable
from .oracle import Oracle
from .policies import (
    DEFAULT_TICK_MINUTES,
    AutoScaling,
    Fixed,
    OnDemand,
    Policy,
    PolicyError,
    Spec,
    ThrottleAware,
)
from .prices import Prices
from .trace import Key, Trace, key_label

#: What runs when no policy is named (``scheduled`` joins when the input has a schedule).
DEFAULT_POLICIES = ("stock:70", "autopilot+stock:70", "on-demand", "oracle", "bound")
DAY_MINUTES = 1440


@dataclass
class DimensionResult:
    """One policy on one dimension. ``as_json`` is the stable contract of ``--json``."""

    policy: str
    key: Key
    throttled_requests: float
    throttled_minutes: int
    first_throttle_minute: int | None
    provisioned_unit_hours: float
    cost_usd: float
    decreases: int
    peak_provisioned: int
    rejected_decreases: int
    demand_unit_hours: float
    throttle_events: float = 0.0
    recorded: Recorded = field(repr=False, default_factory=Recorded)

    @property
    def throttled_by_cause(self) -> dict[str, float]:
        """``throttled_requests`` by cause: ``key_range`` what a hot partition refused
        (capacity could not help), ``provisioned`` the rest (capacity and burst fell short)."""
        key_range = sum(self.recorded.key_range) * 60
        return {
            "provisioned": max(0.0, self.throttled_requests - key_range),
            "key_range": key_range,
        }

    def as_json(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "dimension": key_label(self.key),
            "index": self.key[0],
            "throttled_requests": round(self.throttled_requests, 3),
            "throttled_minutes": self.throttled_minutes,
            "first_throttle_minute": self.first_throttle_minute,
            "provisioned_unit_hours": round(self.provisioned_unit_hours, 3),
            "cost_usd": round(self.cost_usd, 6),
            "decreases": self.decreases,
            "peak_provisioned": self.peak_provisioned,
            "rejected_decreases": self.rejected_decreases,
            "demand_unit_hours": round(self.demand_unit_hours, 3),
            "throttle_events": round(self.throttle_events, 3),
            "throttled_by_cause": {k: round(v, 3) for k, v in self.throttled_by_cause.items()},
        }


def build(
    spec: Spec,
    trace: Trace,
    params: ModelParams,
    prices: Prices,
    schedule: Sequence[dict[str, Any]] | None,
    tick: int,
) -> Policy:
    if spec.kind == "fixed":
        assert spec.value is not None
        return Fixed(spec.value)
    if spec.kind == "on-demand":
        return OnDemand()
    if spec.kind == "oracle":
        return Oracle(trace, params, prices)
    keys = list(trace.demand)
    if spec.kind == "stock":
        assert spec.value is not None
        return AutoScaling(spec.value, params, keys)
    if spec.kind == "scheduled":
        entries = schedule if schedule is not None else trace.schedule
        if not entries:
            raise PolicyError(
                f"--policy {spec.text!r}: {trace.name} has no schedule of its "
                f"own; pass --schedule FILE.json"
            )
        ranges = {k: (params.min_capacity, params.max_capacity) for k in keys}
        firings = schedules.firings(entries, keys, ranges, trace.start, trace.minutes)
        assert spec.value is not None
        return AutoScaling(spec.value, params, keys, firings)
    stock = AutoScaling(spec.value, params, keys) if spec.with_stock and spec.value else None
    return ThrottleAware(
        tick,
        spec.value or 70,
        params,
        stock,
        autopilot=spec.kind == "autopilot",
        causes=not spec.lumped,
    )


def _progress(out: TextIO | None, label: str, total: int) -> Callable[[int], None]:
    if out is None or total <= DAY_MINUTES:
        return lambda t: None
    width = 30
    step = max(1, total // 100)

    def show(t: int) -> None:
        if t % step == 0 or t == total - 1:
            done = (t + 1) / total
            bar = "#" * int(done * width)
            out.write(f"\r{label:<28} [{bar:<{width}}] {done:4.0%}")
            if t == total - 1:
                out.write("\n")
            out.flush()

    return show


def run_policy(
    spec: Spec,
    trace: Trace,
    params: ModelParams,
    prices: Prices,
    schedule: Sequence[dict[str, Any]] | None = None,
    tick: int = DEFAULT_TICK_MINUTES,
    progress: TextIO | None = None,
) -> list[DimensionResult]:
    """Replay ``trace`` through one policy; one result per dimension."""
    if spec.kind == "bound":
        return [_bound(spec, b, trace, prices) for b in bound(trace, params).values()]
    policy = build(spec, trace, params, prices, schedule, tick)
    show = _progress(progress, spec.text, trace.minutes)
    if isinstance(policy, OnDemand):
        refused = on_demand_refusals(trace, params)
        attempts = (1 + params.retries) * 60 / params.units_per_request
        return [
            _on_demand(spec, key, demand, prices, refused.get(key), attempts)
            for key, demand in trace.demand.items()
        ]
    sim = SimulatedTable(trace, params, policy.initial(trace, params))
    begin, act, end = sim.begin_minute, policy.act, sim.end_minute
    for t in range(-params.warmup_minutes, 0):
        begin(t)
        act(sim, t)
        end(t)
    for t in range(trace.minutes):
        begin(t)
        act(sim, t)
        end(t)
        if progress is not None:
            show(t)
    return [_result(spec, key, sim, prices) for key in sim.keys]


def _result(spec: Spec, key: Key, sim: SimulatedTable, prices: Prices) -> DimensionResult:
    r = sim.recorded[key]
    throttled = [i for i, v in enumerate(r.throttled) if v > 1e-9]
    unit_hours = sum(r.provisioned) / 60
    return DimensionResult(
        policy=spec.text,
        key=key,
        throttled_requests=sum(r.throttled) * 60,
        throttled_minutes=len(throttled),
        first_throttle_minute=throttled[0] if throttled else None,
        provisioned_unit_hours=unit_hours,
        cost_usd=unit_hours * prices.unit_hour(key[1]),
        decreases=sim.dims[key].decreases,
        peak_provisioned=max(r.provisioned, default=0),
        rejected_decreases=sim.rejected_decreases[key],
        demand_unit_hours=sum(r.demand) / 60,
        throttle_events=sum(r.throttle_events),
        recorded=r,
    )


def _bound(spec: Spec, b: Bound, trace: Trace, prices: Prices) -> DimensionResult:
    demand = trace.demand[b.key]
    return DimensionResult(
        policy=spec.text,
        key=b.key,
        throttled_requests=0.0,
        throttled_minutes=0,
        first_throttle_minute=None,
        provisioned_unit_hours=b.unit_minutes / 60,
        cost_usd=b.cost(prices),
        decreases=0,
        peak_provisioned=max(b.floor, default=0),
        rejected_decreases=0,
        demand_unit_hours=sum(demand) / 60,
        recorded=Recorded(
            list(demand), list(demand), [0.0] * len(demand), list(b.floor), [0.0] * len(demand)
        ),
    )


def on_demand_refusals(trace: Trace, params: ModelParams) -> dict[Key, list[float]]:
    """Per dimension and minute, what an on-demand table's hot partitions refuse (key-range
    throttles: on-demand has partitions too); its partitions follow the highest demand it
    has served. Empty when the partition model is off."""
    skew = params.skew(trace)
    if skew <= 0 and not trace.key_range:
        return {}
    given = trace.key_range or {}
    parts: dict[str | None, HotPartition] = {}
    for index, dim in trace.demand:
        if index not in parts:
            parts[index] = HotPartition(skew, params.split_minutes, params.table_size_gb)
            parts[index].grow("read", params.warm_read_units)
            parts[index].grow("write", params.warm_write_units)
        parts[index].grow(dim, trace.demand[(index, dim)][0])
    out: dict[Key, list[float]] = {k: [] for k in trace.demand}
    for m in range(trace.minutes):
        for key, demand in trace.demand.items():
            part, known = parts[key[0]], given.get(key)
            refused = part.refuse(key[1], demand[m], known[m] if known else 0.0)
            out[key].append(refused)
            part.grow(key[1], demand[m] - refused)
        for part in parts.values():
            part.end_minute()
    return out


def _on_demand(
    spec: Spec,
    key: Key,
    demand: list[float],
    prices: Prices,
    refused: list[float] | None = None,
    attempts: float = 60.0,
) -> DimensionResult:
    """On-demand on one dimension: every request served and billed, but what a hot
    partition refuses (``refused``, units/s per minute; ``attempts``: throttle events per
    refused unit/s)."""
    served = [d - r for d, r in zip(demand, refused, strict=True)] if refused else list(demand)
    throttled = list(refused) if refused else [0.0] * len(demand)
    minutes = [i for i, v in enumerate(throttled) if v > 1e-9]
    events = [v * attempts for v in throttled]
    recorded = Recorded(list(demand), served, throttled, [0] * len(demand), events)
    if refused:
        recorded.with_key_range(refused)
    return DimensionResult(
        policy=spec.text,
        key=key,
        throttled_requests=sum(throttled) * 60,
        throttled_minutes=len(minutes),
        first_throttle_minute=minutes[0] if minutes else None,
        provisioned_unit_hours=0.0,
        cost_usd=sum(served) * 60 * prices.request_unit(key[1]),
        decreases=0,
        peak_provisioned=0,
        rejected_decreases=0,
        demand_unit_hours=sum(demand) / 60,
        throttle_events=sum(events),
        recorded=recorded,
    )


def simulate(
    trace: Trace,
    specs: Sequence[Spec],
    params: ModelParams | None = None,
    prices: Prices | None = None,
    schedule: Sequence[dict[str, Any]] | None = None,
    tick: int = DEFAULT_TICK_MINUTES,
    progress: TextIO | None = sys.stderr,
    workers: int = 1,
) -> list[DimensionResult]:
    """Every policy over ``trace``: results in policy order, then dimension order. With
    ``workers`` > 1, policies run in that many processes (no progress bar)."""
    params = (params or ModelParams()).validate()
    prices = prices or Prices()
    results: list[DimensionResult] = []
    workers = min(workers, len(specs))
    if workers > 1:  # one process per policy at a time; results in policy order
        with ProcessPoolExecutor(workers) as pool:
            jobs = [
                pool.submit(run_policy, spec, trace, params, prices, schedule, tick)
                for spec in specs
            ]
            for job in jobs:
                results.extend(job.result())
        return results
    for spec in specs:
        results.extend(run_policy(spec, trace, params, prices, schedule, tick, progress))
    return results
