"""Runs in: workstation (the `ddb-capacity` command).

The oracle: with perfect foresight, the cheapest provisioning it finds that never
throttles and that DynamoDB's decrease quota allows. Every other policy is measured against
it (and against `bound`, which no zero-throttle plan can beat).

Capacity follows the trace in blocks of 15 minutes, and again of 5 minutes, and the cheaper
plan of each table or GSI is kept (finer blocks pay where demand moves within 15 minutes).
In each block every dimension has at least the block's peak demand (burst capacity is not
relied on, since DynamoDB may spend it on maintenance). Increases are free at any block
start; a decrease resets a table's (or GSI's) read and write to the block's need and spends
one decrease of its counter. Which block starts get a decrease is chosen by dynamic
programming over (block, decreases spent that UTC day), with the quota rule of
`ddb_capacity_runtime.core.decreases`: the first 4 of a day at any time, then at least an
hour apart, at most 27. Between two decreases capacity is the running peak of need since the
last one, so the plan is the cheapest of its kind; segments are at most ``lookback_blocks``
long, which can only cost a decrease, never a throttle.

Scored from a minute (``score_from``), a block costs only its share of minutes from that
minute on: the plan is the cheapest found for the scored minutes, and still never throttles
before them nor spends more decreases than the quota allows over the whole trace.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from ddb_capacity_runtime.core.decreases import FREE_DECREASES, HOUR, MAX_DECREASES_PER_DAY
from ddb_capacity_runtime.core.policy import capacity_units

from . import billing
from .model import SimulatedTable
from .params import ModelParams
from .prices import Prices
from .trace import Key, Trace

BLOCK_MINUTES = (15, 5)
"""Block lengths the oracle plans with, each with the longest segment it considers between two
decreases (in blocks: 24 hours of 15 minutes; 4 hours of 5 minutes, which found the same plans as 8
hours on every shared trace at half the time). It keeps the cheaper plan of each table or GSI."""
LOOKBACK_BLOCKS = {15: 96, 5: 48, 60: 48}
HOUR_BLOCK = 60
"""Billed by each clock hour's highest level, the oracle also plans in hours (a level that
falls within an hour saves nothing then); 48 hours between two decreases at most."""
CAME = 32
"""The dynamic program notes a step's origin as boundary x CAME + count (counts are below)."""


@dataclass
class _Reached:
    """The dynamic program's table: for each block boundary ``i`` and each count ``k`` of
    decreases spent on block ``i``'s UTC day, the cheapest cost of the blocks before ``i``
    found so far (``cost[i][k]``), and the boundary and count it came from, as one number
    (``came[i][k]``, boundary x `CAME` + count: no tuple per step). ``order[i]``
    lists the counts reached, in the order they were first reached; a cost only ever moves
    to a strictly lower one, so ties go to the first."""

    cost: list[list[float]]
    came: list[list[int]]
    order: list[list[int]]

    @classmethod
    def empty(cls, n: int) -> _Reached:
        width = MAX_DECREASES_PER_DAY + 1
        return cls(
            [[math.inf] * width for _ in range(n + 1)],
            [[-1] * width for _ in range(n + 1)],
            [[] for _ in range(n + 1)],
        )


def _plan_resource(
    needs: Sequence[Sequence[int]],
    weights: Sequence[float],
    days: Sequence[int],
    block: timedelta,
    lookback: int,
    scored: Sequence[float],
) -> list[list[int]]:
    """Per block, the capacity of each dimension of one counter (table or GSI); a block
    costs its ``scored`` share."""
    n = len(needs)
    reached = _Reached.empty(n)
    reached.cost[0][0] = 0.0
    reached.order[0].append(0)
    hour_blocks = math.ceil(HOUR / block)
    for j in range(n):
        if reached.order[j]:
            _segments_from(j, reached, needs, weights, days, lookback, hour_blocks, scored)
    # Walk back from the end.
    k = min(reached.order[n], key=reached.cost[n].__getitem__)
    boundaries = []
    i = n
    while i > 0:
        i, k = divmod(reached.came[i][k], CAME)
        boundaries.append(i)
    boundaries.reverse()
    dims = range(len(weights))
    plan: list[list[int]] = []
    for s, j in enumerate(boundaries):
        end = boundaries[s + 1] if s + 1 < len(boundaries) else n
        level = list(needs[j])
        for b in range(j, end):
            level = [max(level[c], needs[b][c]) for c in dims]
            plan.append(list(level))
    return plan


def _segment_costs(
    j: int,
    stop: int,
    needs: Sequence[Sequence[int]],
    weights: Sequence[float],
    scored: Sequence[float],
) -> tuple[list[float], list[bool]]:
    """For each boundary ``i`` from ``j + 1`` to ``stop``: the cost of the blocks from ``j``
    to ``i`` at the running peak of need since ``j`` (each block's at its ``scored``
    share), and whether block ``i`` needs less than that peak in some dimension (a
    decrease at ``i``; never at the last boundary)."""
    n, dims = len(needs), range(len(weights))
    level = list(needs[j])
    rate = sum(weights[c] * level[c] for c in dims)  # the cost of a block at `level`
    cost = 0.0
    costs: list[float] = []
    decreases: list[bool] = []
    if len(weights) == 2:  # a table's or GSI's read and write: the loops unrolled
        w0, w1 = weights
        l0, l1 = level
        for i in range(j + 1, stop + 1):
            r0, r1 = needs[i - 1]
            if r0 > l0:
                rate += w0 * (r0 - l0)
                l0 = r0
            if r1 > l1:
                rate += w1 * (r1 - l1)
                l1 = r1
            cost += rate * scored[i - 1]
            costs.append(cost)
            if i < n:
                f0, f1 = needs[i]
                decreases.append(f0 < l0 or f1 < l1)
            else:
                decreases.append(False)
        return costs, decreases
    for i in range(j + 1, stop + 1):
        row = needs[i - 1]
        for c in dims:
            if row[c] > level[c]:
                rate += weights[c] * (row[c] - level[c])
                level[c] = row[c]
        cost += rate * scored[i - 1]
        costs.append(cost)
        following = needs[i] if i < n else level
        decreases.append(any(following[c] < level[c] for c in dims))
    return costs, decreases


def _segments_from(
    j: int,
    reached: _Reached,
    needs: Sequence[Sequence[int]],
    weights: Sequence[float],
    days: Sequence[int],
    lookback: int,
    hour_blocks: int,
    scored: Sequence[float],
) -> None:
    """Every segment that starts at block ``j`` (its capacity the running peak of need
    since ``j``) and ends at a boundary ``i``, from each count of decreases reached at
    ``j``: the count at ``i`` follows the quota (a decrease at ``i`` when the next block
    needs less than the segment's level; a new UTC day starts from none)."""
    n = len(needs)
    counts = reached.order[j]
    spent = [reached.cost[j][k] for k in counts]
    # Per count reached, the count at i: the same one; one more, for the counts that may
    # spend a decrease (any below the daily most, and within an hour of the segment's
    # start only those within the free ones)
    same = [(k, s, k) for k, s in zip(counts, spent, strict=True)]
    spaced = [(k, s, k + 1) for k, s, _ in same if k < MAX_DECREASES_PER_DAY]
    close = [step for step in spaced if step[0] < FREE_DECREASES]
    day_j = days[j]
    table, came_from, order, unreached = reached.cost, reached.came, reached.order, math.inf
    stop = min(n, j + lookback)
    costs, decreases = _segment_costs(j, stop, needs, weights, scored)
    came = j * CAME  # where a step from j came from, less its count
    # the first block on a later UTC day than j's (days only ever grow; the end of the
    # trace, boundary n, counts as j's day)
    later = bisect_right(days, day_j, j + 1, min(stop, n - 1) + 1)
    # The first cheapest count, with a segment's cost added, is the first cheapest (the
    # sum is monotone) unless one before it ties with it once added (by rounding).
    least = min(spent)
    cheapest = spent.index(least)
    before = min(spent[:cheapest], default=unreached)
    for i, cost, decrease in zip(range(j + 1, stop + 1), costs, decreases, strict=True):
        best = table[i]
        if later <= i < n:  # a new day: every count goes to the same one,
            first = cheapest  # from the first cheapest
            if before + cost == least + cost:
                totals = [s + cost for s in spent]
                first = totals.index(min(totals))
            steps = [(counts[first], spent[first], 1 if decrease else 0)]
        elif not decrease:  # the count stays
            steps = same
        else:
            steps = spaced if i - j >= hour_blocks else close
        for k, s, k_to in steps:
            total = s + cost
            if total < best[k_to]:
                if best[k_to] == unreached:
                    order[i].append(k_to)
                best[k_to] = total
                came_from[i][k_to] = came + k


def plan(
    trace: Trace,
    params: ModelParams,
    prices: Prices,
    block_minutes: Sequence[int] | int = BLOCK_MINUTES,
    lookback_blocks: int | None = None,
    score_from: int = 0,
) -> dict[Key, list[int]]:
    """Capacity per trace minute for every dimension: for each table or GSI, the cheaper of
    the plans made with each block length in ``block_minutes`` (and, billed by each clock
    hour's highest level, of hours too), by their cost from minute ``score_from`` on as the
    model's billing basis bills it."""
    lengths = [block_minutes] if isinstance(block_minutes, int) else list(block_minutes)
    if params.billing == billing.HOURLY_MAX and HOUR_BLOCK not in lengths:
        lengths.append(HOUR_BLOCK)
    first = (trace.start.minute + score_from) % 60
    out: dict[Key, list[int]] = {}
    for index in dict.fromkeys(k[0] for k in trace.demand):
        keys = [k for k in trace.demand if k[0] == index]
        weights = [prices.unit_hour(k[1]) for k in keys]
        candidates = [
            _plan_counter(
                trace,
                params,
                keys,
                weights,
                length,
                lookback_blocks or LOOKBACK_BLOCKS.get(length, 96),
                score_from,
            )
            for length in lengths
        ]
        best = min(
            candidates,
            key=lambda p: sum(
                w * billing.unit_hours(p[k][score_from:], first, params.billing)
                for w, k in zip(weights, keys, strict=True)
            ),
        )
        out.update(best)
    return out


def _plan_counter(
    trace: Trace,
    params: ModelParams,
    keys: Sequence[Key],
    weights: Sequence[float],
    block_minutes: int,
    lookback_blocks: int,
    score_from: int = 0,
) -> dict[Key, list[int]]:
    """The plan of one table or GSI (one decrease counter) in blocks of ``block_minutes``;
    a block costs its share of minutes from ``score_from`` on."""
    minutes = trace.minutes
    blocks = max(1, math.ceil(minutes / block_minutes))
    block = timedelta(minutes=block_minutes)
    latency = timedelta(minutes=params.update_minutes)
    # A block's decrease is requested update_minutes early: that is the UTC day it counts on.
    days = [(_day(trace.start + b * block - latency)) for b in range(blocks)]
    needs = []
    for b in range(blocks):
        row = []
        for k in keys:
            peak = max(trace.demand[k][b * block_minutes : (b + 1) * block_minutes])
            row.append(max(params.min_capacity, min(params.max_capacity, capacity_units(peak))))
        needs.append(row)
    # each block's share of minutes from score_from on (whole blocks count 1, exactly)
    scored = [
        min(1.0, max(0, (b + 1) * block_minutes - score_from) / block_minutes)
        for b in range(blocks)
    ]
    by_block = _plan_resource(needs, weights, days, block, lookback_blocks, scored)
    return {
        k: [by_block[m // block_minutes][c] for m in range(minutes)] for c, k in enumerate(keys)
    }


def _day(moment: datetime) -> int:
    return moment.toordinal()


class Oracle:
    """Replays `plan` through the simulated table, each change requested
    ``update_minutes`` before the block it is for. When UpdateTable's latency is drawn from a
    range, each minute asks for the most the plan needs over every minute the change may land
    in: increases arrive in time at the longest latency, decreases never before the plan's."""

    def __init__(
        self, trace: Trace, params: ModelParams, prices: Prices, score_from: int = 0
    ) -> None:
        self.plan = plan(trace, params, prices, score_from=score_from)
        self.minutes = trace.minutes
        self.offset = params.warmup_minutes
        self.asks = {k: self._asks(p, params) for k, p in self.plan.items()}
        """Per key, for each minute from the warm-up's first, the level to ask for then."""

    def _asks(self, p: Sequence[int], params: ModelParams) -> list[int]:
        """Per minute from the warm-up's first: the most ``p`` needs over every minute a
        change asked for then may land in (clamped to the trace)."""
        last, n = self.minutes - 1, self.offset + self.minutes
        first, spread = params.update_minutes, params.update_spread_minutes
        # the trace's minute that each minute from the warm-up's first on stands for
        lands = [min(max(t, 0), last) for t in range(-self.offset, self.minutes + first + spread)]
        asks = [p[m] for m in lands[first : first + n]]
        for d in range(1, spread + 1):
            asks = [
                max(a, p[m]) for a, m in zip(asks, lands[first + d : first + d + n], strict=True)
            ]
        return asks

    def initial(self, trace: Trace, params: ModelParams) -> dict[Key, int]:
        return {k: p[0] for k, p in self.plan.items()}

    def act(self, sim: SimulatedTable, t: int) -> None:
        wanted: dict[str | None, dict[str, int]] = {}
        for key, asks in self.asks.items():
            level = asks[t + self.offset]
            if level != sim.current(key):
                wanted.setdefault(key[0], {})[key[1]] = level
        for index, values in wanted.items():
            sim.update_table(t, index, values)
