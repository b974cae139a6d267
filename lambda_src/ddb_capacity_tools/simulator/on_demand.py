"""Runs in: workstation (the `ddb-capacity` command).

On-demand, per dimension of the table and of each GSI (`OnDemandDimension`), as the
DynamoDB developer guide documents it ("DynamoDB on-demand capacity mode", "Initial throughput
and scaling properties"; "DynamoDB maximum throughput for on-demand tables"): what exceeds
the maximum throughput (``on_demand_max_*_units``, or the table quota ``max_capacity``) is
refused; of the rest, what exceeds both the warm throughput (a new table's 12,000 reads and
4,000 writes per second, or ``warm_*_units`` when higher) and double the previous peak (the
highest traffic served ``on_demand_peak_minutes`` or more minutes before: traffic may exceed
double a peak 30 minutes after reaching it) is refused. The peak never decays.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from itertools import accumulate, repeat
from typing import NamedTuple

from .params import ModelParams
from .partitions import HotPartition
from .trace import Key, Trace

ON_DEMAND_WARM = {"read": 12_000.0, "write": 4_000.0}
"""What a new on-demand table (or GSI) serves at once, per dimension: its initial warm throughput
("DynamoDB on-demand capacity mode", "Initial throughput and scaling properties": "up to 4,000
writes per second and 12,000 reads per second")."""


class OnDemandDimension:
    """One dimension of an on-demand table or GSI (module docstring): it
    serves at once up to double the highest traffic it served at least ``lag`` minutes
    ago, and at least ``warm``; never more than ``cap``."""

    __slots__ = ("cap", "lag", "reached", "served", "warm")

    def __init__(self, warm: float, cap: float, lag: int) -> None:
        self.warm, self.cap, self.lag = warm, cap, lag
        self.served: list[float] = []
        """every minute served so far (units/s), the warm-up's first"""
        self.reached = 0.0
        """the previous peak: the highest served at least ``lag`` minutes ago"""

    def serve(self, wanted: float) -> tuple[float, float, float]:
        """Serve ``wanted`` (units/s) for the next minute: (served, refused over double
        the previous peak and the warm throughput, refused over the cap)."""
        served = self.served
        n = len(served)
        if n >= self.lag and served[n - self.lag] > self.reached:
            self.reached = served[n - self.lag]
        over_cap = wanted - self.cap if wanted > self.cap else 0.0
        rest = wanted - over_cap
        limit = self.reached + self.reached
        if limit < self.warm:
            limit = self.warm
        over_peak = rest - limit if rest > limit else 0.0
        served.append(rest - over_peak)
        return rest - over_peak, over_peak, over_cap

    def settle(self, level: float, minutes: int) -> None:
        """Serve ``level`` (at most the cap) for ``minutes``, whatever the limits: a table
        that has served it before (the warm-up)."""
        level = min(level, self.cap)
        self.served += [level] * minutes
        if len(self.served) > self.lag:
            self.reached = max(self.reached, max(self.served[: len(self.served) - self.lag]))

    def serve_all(
        self, wanted: Sequence[float], block: int = 1440
    ) -> tuple[list[float], list[float]]:
        """`serve` each minute of ``wanted``: what was refused each minute over double
        the previous peak and the warm throughput, and over the cap. A block of minutes
        that is refused nothing is served at once (`_within`)."""
        over_peak: list[float] = []
        over_cap: list[float] = []
        for first in range(0, len(wanted), block):
            chunk = list(wanted[first : first + block])
            if self._within(chunk):
                over_peak += [0.0] * len(chunk)
                over_cap += [0.0] * len(chunk)
                continue
            for w in chunk:
                _, peak, cap = self.serve(w)
                over_peak.append(peak)
                over_cap.append(cap)
        return over_peak, over_cap

    def _within(self, chunk: list[float]) -> bool:
        """Whether `serve` would refuse nothing of ``chunk``; if so, serve it: each
        minute's previous peak is then the running peak of what was served (``chunk``
        itself) ``lag`` minutes before."""
        top = max(chunk)
        if top > self.cap:
            return False
        served, lag = self.served, self.lag
        n = len(served)
        skip = lag - n if lag > n else 0  # minutes before the first served is lag old
        entries = ((served[n - lag :] if n > lag else served) + chunk)[: len(chunk) - skip]
        if top > self.warm and top > self.reached + self.reached:  # minute by minute
            peaks = list(accumulate(entries, max, initial=self.reached))
            reached = [self.reached] * skip + peaks[1:]
            limits = map(max, map(operator.add, reached, reached), repeat(self.warm))
            if any(map(operator.gt, chunk, limits)):
                return False
        served += chunk
        self.reached = max(self.reached, max(entries, default=0.0))
        return True


def on_demand_dimension(params: ModelParams, dimension: str) -> OnDemandDimension:
    """A new on-demand dimension under ``params``: its warm throughput the larger of a new
    table's and ``warm_*_units``, its cap the smaller of ``on_demand_max_*_units`` and the
    table quota (``max_capacity``)."""
    read = dimension == "read"
    warm = params.warm_read_units if read else params.warm_write_units
    most = params.on_demand_max_read_units if read else params.on_demand_max_write_units
    cap = params.max_capacity if most is None else min(most, params.max_capacity)
    return OnDemandDimension(
        max(ON_DEMAND_WARM[dimension], warm), float(cap), params.on_demand_peak_minutes
    )


class OnDemandRefusals(NamedTuple):
    """What an on-demand dimension refuses, units/s per trace minute, by cause."""

    key_range: list[float]
    """by a hot key's partition (empty: the partition model is off)"""
    on_demand: list[float]
    """over double the previous peak and the warm throughput"""
    max_on_demand: list[float]
    """over the maximum throughput (or the table quota)"""


def on_demand_refusals(trace: Trace, params: ModelParams) -> dict[Key, OnDemandRefusals]:
    """What an on-demand table refuses, per dimension that refuses anything (a dimension
    left out refuses nothing): its hot partitions first (their partitions follow the
    highest traffic served), then its limits (`OnDemandDimension`). Before the
    trace, ``warmup_minutes`` at the first minute's demand, served whatever the limits,
    set the previous peak: a table that has served it before (with no warm-up, a new
    table)."""
    skew = params.skew(trace)
    parts: dict[str | None, HotPartition] | None = None
    if skew > 0 or trace.key_range:
        parts = {}
        for index, dim in trace.demand:
            if index not in parts:
                parts[index] = HotPartition(skew, params.split_minutes, params.table_size_gb)
                parts[index].grow("read", params.warm_read_units)
                parts[index].grow("write", params.warm_write_units)
            parts[index].grow(dim, trace.demand[(index, dim)][0])
    dims = {k: on_demand_dimension(params, k[1]) for k in trace.demand}
    for k, d in dims.items():
        d.settle(trace.demand[k][0], params.warmup_minutes)
    if parts is None:  # each dimension on its own
        out = {}
        for k, d in dims.items():
            peak, cap = d.serve_all(trace.demand[k])
            if any(peak) or any(cap):
                out[k] = OnDemandRefusals([], peak, cap)
        return out
    keys = list(trace.demand)
    out = {k: OnDemandRefusals([], [], []) for k in keys}
    given = trace.key_range or {}
    for m in range(trace.minutes):
        for key in keys:
            wanted, known = trace.demand[key][m], given.get(key)
            refused = parts[key[0]].refuse(key[1], wanted, known[m] if known else 0.0)
            served, over_peak, over_cap = dims[key].serve(wanted - refused)
            r = out[key]
            r.key_range.append(refused)
            r.on_demand.append(over_peak)
            r.max_on_demand.append(over_cap)
            parts[key[0]].grow(key[1], served)
        for part in parts.values():
            part.end_minute()
    return out
