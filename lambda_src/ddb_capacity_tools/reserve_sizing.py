"""Runs in: workstation (`ddb-capacity reserve`, `advise`).

A fleet's provisioned hours as AWS bills them (`Hours`, `hourly`, by the billing basis of
`simulator.billing`), and the pure rules that
size reserved capacity on them: the bill at a reserved level (`bill`), the level that
minimises it (`size`), the level no fall in traffic would make a loss (`no_regret`), and the
anchors shown beside it (`anchors`).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

from .simulator import billing
from .simulator.billing import DEFAULT_BASIS
from .simulator.prices import BLOCK_UNITS, Prices
from .simulator.run import DimensionResult
from .simulator.trace import Trace
from .tool_errors import ReserveError as ReserveError

DIMENSIONS = ("read", "write")


FUTURES = (1.0, 5 / 6, 2 / 3)
"""The futures a plan is sized for, as factors on the planning part's hourly units, equally
likely: traffic as it was, a sixth lower, a third lower."""


FALL = 2 / 3
"""The stress shown beside a plan: every hour's units a third lower."""


NOPS_SHARE = 0.95
"""The anchor rule's share of hours: reserve the level met in this share of them."""


MIN_PART_MINUTES = 60
"""The planning part and the scored part each hold at least an hour."""


@dataclass(frozen=True)
class Hours:
    """Hourly provisioned units per dimension (``read``, ``write``: one value an hour), each
    hour's weight (the share of the hour the part holds), and the dollars billed outside
    provisioned capacity (on-demand minutes), over one part of the history."""

    read: Sequence[float]
    write: Sequence[float]
    weights: list[float]
    other_usd: float = 0.0
    on_demand: list[float] | None = None
    """Each hour's on-demand dollars (part of ``other_usd``); None: ``other_usd`` less
    ``outside`` spread over the hours by weight."""
    outside: list[float] | None = None
    """Each hour's provisioned dollars billed outside any reservation (`unreserved`: part of
    ``other_usd``); None: none."""

    def units(self, dimension: str) -> Sequence[float]:
        return self.read if dimension == "read" else self.write

    @property
    def hours(self) -> float:
        return sum(self.weights)

    def unreserved(self, dimension: str, unit_hour: float) -> Hours:
        """These hours with every provisioned unit of ``dimension`` billed at ``unit_hour``
        outside any reservation (a global table's writes are replicated writes, and a
        Standard-Infrequent Access table's units are not of the Standard class: reserved
        capacity covers neither): the reservable units of ``dimension`` none."""
        units = self.units(dimension)
        billed = sum(u * w for u, w in zip(units, self.weights, strict=True))
        zero = [0.0] * len(units)
        read, write = (zero, self.write) if dimension == "read" else (self.read, zero)
        on_demand, outside = self.other_hourly()
        moved = [
            o + u * w * unit_hour for o, u, w in zip(outside, units, self.weights, strict=True)
        ]
        return Hours(
            read, write, self.weights, self.other_usd + billed * unit_hour, on_demand, moved
        )

    def __add__(self, other: Hours) -> Hours:
        return self._with(other, 1)

    def __sub__(self, other: Hours) -> Hours:
        return self._with(other, -1)

    def _with(self, other: Hours, sign: int) -> Hours:
        return Hours(
            [a + sign * b for a, b in zip(self.read, other.read, strict=True)],
            [a + sign * b for a, b in zip(self.write, other.write, strict=True)],
            self.weights,
            self.other_usd + sign * other.other_usd,
            *self._other_with(other, sign),
        )

    def other_hourly(self) -> tuple[list[float], list[float]]:
        """Each hour's on-demand dollars and provisioned dollars outside any reservation."""
        outside = self.outside or [0.0] * len(self.weights)
        if self.on_demand is not None:
            return self.on_demand, outside
        rest, total = self.other_usd - sum(outside), self.hours
        return [rest * w / total if total else 0.0 for w in self.weights], outside

    def _other_with(self, other: Hours, sign: int) -> tuple[list[float] | None, list[float] | None]:
        if self.on_demand is self.outside is other.on_demand is other.outside is None:
            return None, None
        (mine, mine_out), (theirs, theirs_out) = self.other_hourly(), other.other_hourly()
        return (
            [a + sign * b for a, b in zip(mine, theirs, strict=True)],
            [a + sign * b for a, b in zip(mine_out, theirs_out, strict=True)],
        )


def hourly(
    results: Sequence[DimensionResult],
    trace: Trace,
    start: int,
    end: int,
    prices: Prices,
    basis: str = DEFAULT_BASIS,
) -> Hours:
    """What AWS bills for minutes ``start`` to ``end`` of one table's run (``results``: its
    table and GSIs): per dimension and clock hour, each key's units as ``basis`` bills
    them (`billing.billed_hours`: hourly-max, its highest provisioned level in the hour),
    summed over the keys; a minute provisioned at 0 is billed as on-demand, and its dollars
    kept by hour too."""
    first = (trace.start.minute + start) % 60
    weights: list[float] = billing.billed_hours([0] * (end - start), first, basis)[1]
    sums = {d: [0.0] * len(weights) for d in DIMENSIONS}
    other, on_demand = 0.0, [0.0] * len(weights)
    for r in results:
        provisioned = r.recorded.provisioned[start:end]
        units = billing.billed_hours(provisioned, first, basis)[0]
        od_hours = [0.0] * len(weights)
        for i, (p, s) in enumerate(zip(provisioned, r.recorded.served[start:end], strict=True)):
            if p <= 0:
                od_hours[(first + i) // 60] += s
        od = sum(od_hours)
        other += prices.on_demand(r.key[1], od)
        for h, served_h in enumerate(od_hours):
            on_demand[h] += prices.on_demand(r.key[1], served_h)
        column = sums[r.key[1]]
        for h, level in enumerate(units):
            column[h] += level
    return Hours(sums["read"], sums["write"], weights, other, on_demand)


@dataclass(frozen=True)
class _Sorted:
    """One dimension's hourly units sorted, with running sums of weights and weighted units:
    the bill at any reserved level in a binary search."""

    units: list[float]
    weight: list[float]
    weighted: list[float]

    @classmethod
    def of(cls, units: Sequence[float], weights: Sequence[float]) -> _Sorted:
        pairs = sorted(zip(units, weights, strict=True))
        us = [float(u) for u, _ in pairs]
        ws = [w for _, w in pairs]
        return cls(
            us,
            [0.0, *accumulate(ws)],
            [0.0, *accumulate(u * w for u, w in pairs)],
        )

    def above(self, level: float) -> float:
        """Weighted unit-hours above ``level``."""
        i = bisect.bisect_right(self.units, level)
        weight = self.weight[-1] - self.weight[i]
        return self.weighted[-1] - self.weighted[i] - level * weight


def bill(
    units: Sequence[float],
    weights: Sequence[float],
    reserved: int,
    reserved_rate: float,
    list_rate: float,
) -> float:
    """Dollars for these hours: ``reserved`` units at ``reserved_rate`` an hour whether used
    or not, and every hour's units above them at ``list_rate``."""
    return _Sorted.of(units, weights).above(reserved) * list_rate + (
        reserved * reserved_rate * sum(weights)
    )


def _best_level(
    sorted_futures: Sequence[_Sorted], hours: float, reserved_rate: float, list_rate: float
) -> tuple[int, float]:
    """The whole number of blocks whose mean bill over ``sorted_futures`` is least (the
    fewest of equal bills), and that bill. The bill is convex in the level, so a binary
    search on whether one more block lowers it finds the least."""

    def total(blocks: int) -> float:
        level = blocks * BLOCK_UNITS
        mean = sum(s.above(level) for s in sorted_futures) / len(sorted_futures)
        return mean * list_rate + level * reserved_rate * hours

    top = max((s.units[-1] for s in sorted_futures if s.units), default=0.0)
    low, high = 0, int(top // BLOCK_UNITS) + 1
    while low < high:  # the first block count that one more block does not improve on
        mid = (low + high) // 2
        if total(mid + 1) < total(mid) - 1e-9:
            low = mid + 1
        else:
            high = mid
    return low * BLOCK_UNITS, total(low)


def size(
    hours: Hours, term: str, prices: Prices, futures: Sequence[float] = FUTURES
) -> dict[str, int]:
    """The reserved units per dimension (whole blocks) whose mean bill over ``futures``
    (factors on ``hours``' units) is least for ``term``."""
    out = {}
    for d in DIMENSIONS:
        sorted_futures = [
            _Sorted.of([f * u for u in hours.units(d)], hours.weights) for f in futures
        ]
        out[d] = _best_level(
            sorted_futures, hours.hours, prices.reserved_unit_hour(term, d), prices.unit_hour(d)
        )[0]
    return out


def no_regret(hours: Hours, term: str, prices: Prices, fall: float = FALL) -> dict[str, int]:
    """Per dimension, the reserved units (whole blocks) the plan buys: the level that would
    have cost least over ``hours`` (`size` with the one future of traffic as it was), cut to
    the most blocks that still cost no more than no reservation if every hour's units were
    ``fall`` times as many."""
    best = size(hours, term, prices, futures=(1.0,))
    out = {}
    for d in DIMENSIONS:
        rate, listed = prices.reserved_unit_hour(term, d), prices.unit_hour(d)
        low = _Sorted.of([fall * u for u in hours.units(d)], hours.weights)
        level, free = best[d], low.above(0.0) * listed
        while level > 0 and low.above(level) * listed + level * rate * hours.hours > free + 1e-9:
            level -= BLOCK_UNITS
        out[d] = level
    return out


def fleet_bill(
    hours: Hours, reserved: dict[str, int], term: str | None, prices: Prices, factor: float = 1.0
) -> float:
    """Dollars for ``hours`` (units times ``factor``) with ``reserved`` units of ``term``
    (None: no reservation), on-demand minutes included."""
    total = hours.other_usd * factor
    for d in DIMENSIONS:
        units = [factor * u for u in hours.units(d)]
        rate = 0.0 if term is None else prices.reserved_unit_hour(term, d)
        total += bill(
            units, hours.weights, reserved.get(d, 0) if term else 0, rate, prices.unit_hour(d)
        )
    return total


def anchors(current: Hours, term: str, prices: Prices) -> dict[str, dict[str, int]]:
    """The reservation two common rules size from ``current``'s hours (the bill the old
    policy made): ``nops_95``, the level met in `NOPS_SHARE` of hours, rounded down to
    whole blocks (none below one block); ``past_optimal``, the level that would have cost
    least over those hours."""
    nops, past = {}, {}
    for d in DIMENSIONS:
        units = current.units(d)
        nops[d] = _met_in(units, current.weights, NOPS_SHARE) // BLOCK_UNITS * BLOCK_UNITS
        past[d] = _best_level(
            [_Sorted.of(units, current.weights)],
            current.hours,
            prices.reserved_unit_hour(term, d),
            prices.unit_hour(d),
        )[0]
    return {"nops_95": nops, "past_optimal": past}


def _met_in(units: Sequence[float], weights: Sequence[float], share: float) -> int:
    """The highest level the units reach or pass in at least ``share`` of the (weighted)
    hours."""
    if not units:
        return 0
    pairs = sorted(zip(units, weights, strict=True), reverse=True)
    need, seen = share * sum(weights), 0.0
    for u, w in pairs:
        seen += w
        if seen >= need - 1e-9:
            return int(u)
    return int(pairs[-1][0])
