"""Runs in: workstation (the `ddb-capacity` command).

``bound``: a proven lower bound on the cost of any plan that never throttles, under the
model, so that "x bound" cannot flatter a policy the way "x oracle" can.

It is the best of two relaxations: UpdateTable latency, the decrease quota and the policy's
view of CloudWatch are dropped, and only these facts of the model are kept, which every
zero-throttle plan obeys (``p`` the capacity provisioned in a minute, ``d`` its demand, in
units per second; ``b`` the burst seconds left to you, ``P`` the maximum capacity):

1. **Each minute.** The bucket never holds more than ``b x p`` unit-seconds (the model caps
   it when the minute starts), so a minute without throttles needs ``60 d <= 60 p + b p``:
   ``p >= m = max(min_capacity, ceil(60 d / (60 + b)))``.
2. **From the start.** The bucket only ever holds what unused capacity put there, plus what
   it held when the trace started (at most ``b x P``, the warm-up being free): over the
   first ``T`` minutes, ``sum(p) >= sum(d) - F``, ``F = b x P / 60``.
3. **Each stretch.** A stretch of minutes starts with at most ``b x P`` in the bucket too:
   ``sum over the stretch of p >= sum of d - F``.

Writing ``p = m + x`` with ``x >= 0``: facts 1 and 2 give ``sum(m) + max over T of (d's sum
- F - m's sum over the first T minutes, or 0)``, exactly (the extra can all go in the first
minute); facts 1 and 3 give ``sum(m) + the sum, over the stretches of a split, of (d's sum -
F - m's sum, or 0)`` for any split into stretches, and a dynamic program over hour-aligned
splits takes the best. The larger of the two is reported. With no burst (``b = 0``) it is
each minute's demand, rounded up. It is loose only where ``F`` is large beside the demand:
on a short trace with a large maximum capacity, since the model's warm-up may leave the
bucket full at ``b x P``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

from .params import ModelParams
from .trace import Key, Trace

STRETCH_MINUTES = 60
"""Stretches start and end on these minute boundaries (the split's granularity)."""


@dataclass(frozen=True)
class Bound:
    """The bound on one dimension: capacity-unit-minutes and the floor of each minute."""

    key: Key
    unit_minutes: float
    floor: list[int]


def floors(demand: Sequence[float], params: ModelParams) -> list[int]:
    """Fact 1: each minute's least capacity."""
    share = 60 / (60 + params.burst)
    return [
        max(params.min_capacity, math.ceil(d * share - 1e-9)) if d > 0 else params.min_capacity
        for d in demand
    ]


def dimension_bound(key: Key, demand: Sequence[float], params: ModelParams) -> Bound:
    floor = floors(demand, params)
    free = params.burst * params.max_capacity / 60
    n = len(demand)
    if free == 0:  # fact 1 already covers every minute
        return Bound(key, float(sum(floor)), floor)
    d_sum = [0.0, *accumulate(demand)]
    m_sum = [0, *accumulate(floor)]
    from_start = max(0.0, max(d - free - m for d, m in zip(d_sum, m_sum, strict=True)))
    cut = list(range(0, n, STRETCH_MINUTES)) + [n]
    # best[j]: the largest extra over splits of minutes [0, cut[j])
    best = [0.0] * len(cut)
    for j in range(1, len(cut)):
        e = cut[j]
        best[j] = best[j - 1]  # minute block j-1 in no stretch
        for i in range(j):
            s = cut[i]
            gain = (d_sum[e] - d_sum[s]) - free - (m_sum[e] - m_sum[s])
            if gain > 0 and best[i] + gain > best[j]:
                best[j] = best[i] + gain
    return Bound(key, m_sum[n] + max(from_start, best[-1]), floor)


def bound(trace: Trace, params: ModelParams, score_from: int = 0) -> dict[Key, Bound]:
    """Per dimension, the bound on the minutes from ``score_from`` on (each fact holds for
    them alone: the bucket holds at most ``b x P`` when they start, as at the trace's
    start); ``floor`` covers every minute (fact 1 before ``score_from``)."""
    out = {}
    for k, d in trace.demand.items():
        scored = dimension_bound(k, d[score_from:] if score_from else d, params)
        if score_from:
            scored = Bound(k, scored.unit_minutes, floors(d[:score_from], params) + scored.floor)
        out[k] = scored
    return out
