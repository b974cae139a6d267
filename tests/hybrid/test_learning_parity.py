"""The switch learns a day's on-demand hours as the simulator's hybrid does: on random traffic,
the plan the switch makes from CloudWatch's reads of the days before (consumed capacity per
minute, provisioned capacity's hourly highest, none in the hours an earlier plan put
on-demand) is the plan the simulator makes from the same days, hours and return levels."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from ddb_capacity_runtime.aws.metrics import HourReads
from ddb_capacity_runtime.core.on_demand_hours import DAY_S
from ddb_capacity_runtime.hybrid.learning import plan_of
from ddb_capacity_tools.simulator import billing
from ddb_capacity_tools.simulator.hybrid import costed_hours, day_plans, first_peaks
from ddb_capacity_tools.simulator.model import Recorded
from ddb_capacity_tools.simulator.prices import Prices
from tests.support.hypothesis_profiles import examples

DAYS = 9
FIRST = 20_600
"""The simulated trace's first day, from the epoch."""
KEYS: list[tuple[str, str | None, str]] = [("orders", None, "write"), ("orders", None, "read")]


def _traffic(
    seed_levels: list[int], spikes: list[tuple[int, int, float]], slope: float
) -> list[float]:
    """Units/s a minute: each hour at its day's level, rising by ``slope`` a minute through
    the hour, with spikes (hour of day, minute, units/s)."""
    out = []
    for m in range(DAYS * 1440):
        hour = m % 1440 // 60
        base = float(seed_levels[(m // 1440 + hour) % len(seed_levels)]) + slope * (m % 60)
        extra = sum(u for h, minute, u in spikes if h == hour and m % 60 == minute)
        out.append(base + extra)
    return out


def _reads(
    served: dict[str, list[float]], levels: dict[str, list[int]], on_demand: set[tuple[int, int]]
) -> dict[tuple[str, str | None, str], HourReads]:
    """What CloudWatch would hold for the trace: consumed units per minute, each hour's
    highest provisioned level where the table was provisioned."""
    out: dict[tuple[str, str | None, str], HourReads] = {}
    for key in KEYS:
        dim = key[2]
        consumed, provisioned = {}, {}
        for m, v in enumerate(served[dim]):
            when = datetime.fromtimestamp(FIRST * DAY_S, UTC) + timedelta(minutes=m)
            consumed[when] = v * 60
            if m % 60 == 0 and (m // 1440, m % 1440 // 60) not in on_demand:
                provisioned[when] = float(max(levels[dim][m : m + 60]))
        out[key] = HourReads(consumed, frozenset(), provisioned, frozenset())
    return out


@settings(max_examples=examples(25), deadline=None)
@given(
    writes=st.lists(st.integers(0, 60), min_size=1, max_size=5),
    reads=st.lists(st.integers(0, 200), min_size=1, max_size=5),
    spikes=st.lists(
        st.tuples(st.integers(0, 23), st.integers(0, 59), st.floats(10, 3_000)), max_size=4
    ),
    pads=st.lists(st.sampled_from([1.0, 1.5, 3.0, 6.0]), min_size=1, max_size=5),
    slope=st.sampled_from([0.0, 0.5, 3.0]),
    target=st.sampled_from([50, 70, 90]),
)
def test_the_switch_and_the_simulator_learn_the_same_plan(
    writes: list[int],
    reads: list[int],
    spikes: list[tuple[int, int, float]],
    pads: list[float],
    slope: float,
    target: int,
) -> None:
    served = {"write": _traffic(writes, spikes, slope), "read": _traffic(reads, [], slope)}
    # the provisioned run holds a multiple of each hour's busiest minute, by hour
    levels = {
        dim: [
            max(1, int(pads[m // 60 % len(pads)] * max(values[m - m % 60 : m - m % 60 + 60])))
            for m in range(len(values))
        ]
        for dim, values in served.items()
    }
    base: dict[tuple[str | None, str], Recorded] = {
        (None, dim): Recorded(values, values, [0.0] * len(values), levels[dim], [0.0] * len(values))
        for dim, values in served.items()
    }
    od: dict[tuple[str | None, str], Recorded] = {
        (None, dim): Recorded(
            values, values, [0.0] * len(values), [0] * len(values), [0.0] * len(values)
        )
        for dim, values in served.items()
    }
    costed = costed_hours(base, od, Prices(), 0, target, billing.HOURLY_MAX)
    plans = day_plans(costed, DAYS, peaks=first_peaks(od, 0), target=target)
    on_demand = {(d, h) for d, (hours, _) in enumerate(plans[:-1]) for h in range(24) if hours[h]}
    learned = plan_of(_reads(served, levels, on_demand), FIRST + DAYS - 1, target)
    hours, returns = plans[-1]
    assert list(learned.hours) == hours
    assert learned.returns == {
        end: {f"|{k[1]}": v for k, v in by_key.items()} for end, by_key in returns.items()
    }
