"""The simulated table's UpdateTable against a second-by-second model of it, on random
sequences of changes sent at any second of any minute: UPDATING until the second a change
lands, ACTIVE from it; each part of a minute served at the capacity then in force, the
burst bucket carried over; every change landed exactly once, in order."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddb_capacity_tools.simulator.model import SimulatedTable
from ddb_capacity_tools.simulator.params import ModelParams
from ddb_capacity_tools.simulator.scenarios import START
from ddb_capacity_tools.simulator.trace import Key, Trace
from tests.support.hypothesis_profiles import examples

INDEXES = (None, "gsi1")
DIMS = ("read", "write")
KEYS: list[Key] = [(i, d) for i in INDEXES for d in DIMS]

Change = tuple[int, str | None, dict[str, int]]
"""A change sent: its second in the minute, the table (None) or GSI, its values."""


@dataclass
class Landing:
    """A change the reference took: when it lands (seconds of the run) and its values."""

    at: int
    values: dict[str, int]


@dataclass
class Reference:
    """The table second by second: each table or GSI's changes, as they land."""

    initial: dict[Key, int]
    landings: dict[str | None, list[Landing]] = field(
        default_factory=lambda: {i: [] for i in INDEXES}
    )

    def busy(self, index: str | None, second: int) -> bool:
        return any(x.at > second for x in self.landings[index])

    def level(self, key: Key, second: int, strictly: bool = False) -> int:
        """The capacity in force at ``second`` (a change landing then counts, unless
        ``strictly``)."""
        value = self.initial[key]
        for x in sorted(self.landings[key[0]], key=lambda x: x.at):
            if (x.at < second if strictly else x.at <= second) and key[1] in x.values:
                value = x.values[key[1]]
        return value


def _part(
    demand: float, capacity: int, bucket: float, burst: float, seconds: int
) -> tuple[float, float, float]:
    """Served and refused units over ``seconds`` at ``capacity``, and the bucket after."""
    bucket = min(max(bucket, 0.0), burst * capacity)
    if demand <= capacity:
        return demand * seconds, 0.0, min(burst * capacity, bucket + (capacity - demand) * seconds)
    used = min(bucket, (demand - capacity) * seconds)
    served = capacity * seconds + used
    return served, demand * seconds - served, bucket - used


def _started(ref: Reference, bucket: float, key: Key, begin: int, burst: float) -> float:
    """``key``'s bucket at the start of the minute from ``begin`` (a change landing at its
    very start caps it)."""
    for x in ref.landings[key[0]]:
        if x.at == begin and key[1] in x.values:
            bucket = min(bucket, burst * x.values[key[1]])
    return bucket


def _served(
    ref: Reference,
    demand: float,
    bucket: float,
    key: Key,
    seconds: tuple[int, int],
    burst: float,
) -> tuple[float, float, float]:
    """Units served and refused over the first ``seconds[1]`` seconds of the minute from
    ``seconds[0]``, each part at the capacity then in force, and the bucket after."""
    begin, until = seconds
    landed = {x.at - begin for x in ref.landings[key[0]] if begin < x.at < begin + until}
    cuts = sorted({0} | landed)
    served = refused = 0.0
    for a, e in zip(cuts, [*cuts[1:], until], strict=True):
        part = _part(demand, ref.level(key, begin + a), bucket, burst, e - a)
        served, refused, bucket = served + part[0], refused + part[1], part[2]
    return served, refused, bucket


def _close(*values: float) -> tuple[object, ...]:
    return tuple(pytest.approx(v, rel=1e-9, abs=1e-6) for v in values)


minutes_of_changes = st.lists(
    st.lists(
        st.tuples(
            st.integers(0, 59),
            st.sampled_from(INDEXES),
            st.dictionaries(st.sampled_from(DIMS), st.integers(1, 1_000), min_size=1),
        ),
        max_size=4,
    ),
    min_size=2,
    max_size=6,
)


@settings(max_examples=examples(150), deadline=None)
@given(
    changes=minutes_of_changes,
    update_minutes=st.integers(0, 3),
    spread=st.integers(0, 2),
    quick=st.sampled_from([None, 0, 5, 30, 59, 60, 125]),
    burst_seconds=st.sampled_from([0, 30, 300]),
    demand=st.lists(st.sampled_from([0.0, 10.0, 100.0, 300.0, 450.0]), min_size=4, max_size=4),
    initial=st.lists(st.sampled_from([10, 100, 200]), min_size=4, max_size=4),
)
def test_updates_land_at_their_second_and_each_part_of_a_minute_is_served_so(
    changes: list[list[Change]],
    update_minutes: int,
    spread: int,
    quick: int | None,
    burst_seconds: int,
    demand: list[float],
    initial: list[int],
) -> None:
    minutes = len(changes) + 4  # the last changes land within 4 minutes more
    wanted = dict(zip(KEYS, demand, strict=True))
    trace = Trace("random", START, {k: [wanted[k]] * minutes for k in KEYS})
    params = ModelParams(
        warmup_minutes=0,
        burst_seconds=burst_seconds,
        update_minutes=update_minutes,
        update_spread_minutes=spread,
        warm_update_seconds=quick,
        max_capacity=1_000,
    ).validate()
    start = dict(zip(KEYS, initial, strict=True))
    sim = SimulatedTable(trace, params, start)
    ref = Reference(start)
    bucket = {k: sim.dims[k].bucket for k in KEYS}
    burst = params.burst
    for t in range(minutes):
        sim.begin_minute(t)
        for i in INDEXES:
            for s in range(60):
                assert sim.busy(i, t, s) == ref.busy(i, t * 60 + s), (i, t, s)
        sent = sorted(changes[t], key=lambda c: c[0]) if t < len(changes) else []
        for second, index, values in sent:
            now = t * 60 + second
            answer = sim.update_table(t, index, values, second=second)
            if ref.busy(index, now):
                assert answer == "in-use"
                continue
            moved = {d: v for d, v in values.items() if v != ref.level((index, d), now)}
            assert answer in ("applied", "quota")
            if answer == "applied" and moved:
                assert sim.busy_until[index] >= now  # lands when the model says, not before
                ref.landings[index].append(Landing(sim.busy_until[index], moved))
        begin, end = t * 60, (t + 1) * 60
        starts = {k: _started(ref, bucket[k], k, begin, burst) for k in KEYS}
        for k in KEYS:  # what a look inside the minute reads: the capacity in force, so far
            for s in (1, 5, 20, 59):
                assert sim.in_force(k, t, s) == ref.level(k, begin + s), (k, t, s)
                so_far = _served(ref, wanted[k], starts[k], k, (begin, s), burst)
                assert sim.so_far(k, wanted[k], t, s)[:2] == _close(so_far[0] / s, so_far[1] / s)
        sim.end_minute(t)
        for k in KEYS:
            d = sim.dims[k]
            served, refused, bucket[k] = _served(ref, wanted[k], starts[k], k, (begin, 60), burst)
            assert math.isclose(d.served[t], served / 60, rel_tol=1e-9, abs_tol=1e-6), (k, t)
            assert math.isclose(d.throttled[t], refused / 60, rel_tol=1e-9, abs_tol=1e-6)
            after = ref.level(k, end, strictly=True)
            assert d.provisioned_at[t] == d.provisioned == after, (k, t)
            in_flight = [x for x in ref.landings[k[0]] if x.at >= end and k[1] in x.values]
            assert d.pending == (in_flight[-1].values[k[1]] if in_flight else None), (k, t)
            assert k[0] not in sim.landed
            # every change that landed counted once, in order: its decreases, the minute of
            # its last increase, the highest capacity it had (its warm throughput)
            level, falls, rose, highest = start[k], 0, None, float(start[k])
            for x in sorted(ref.landings[k[0]], key=lambda x: x.at):
                if x.at < end and k[1] in x.values:
                    value = x.values[k[1]]
                    falls += value < level
                    rose = x.at // 60 if value > level else rose
                    level, highest = value, max(highest, value)
            assert (d.decreases, d.warm) == (falls, highest), (k, t)
            assert d.last_increase == (sim.time(rose) if rose is not None else None), (k, t)
