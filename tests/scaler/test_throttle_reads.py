"""Throttle events read only where a tick needs them, against a moto server: a tick reads
every dimension's consumed capacity, decides on it alone, then reads in a second
GetMetricData call the throttle events of the dimensions it would lower, of those near their
capacity, and of every dimension on one tick in `THROTTLE_READ_TICKS`; it decides again
with them known. The calls are counted by a boto3 event hook on the tick's own CloudWatch
client."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ddb_capacity_runtime.core.plan import THROTTLE_READ_TICKS, every_dimension_read
from ddb_capacity_runtime.core.policy import DECREASE, HOLD, DimensionState, decide
from tests.support.faults import client_error, emf, fail_before
from tests.support.moto_world import World
from tests.support.throttle_causes import count_queries
from tests.support.throttle_causes import world as world  # noqa: F401 (fixture)

REACTIVE = {"SCALER_MODE": "reactive"}  # no history read: the window's calls alone
TICK = timedelta(minutes=2)  # the default tick


def low_use(world: World, throttles: float = 0) -> str:
    """A table and its GSI at 20 % of their capacity (``throttles`` events a minute in
    the newest 2 minutes of each): a tick would lower them on consumption alone."""
    name = world.table("calm", 100, 100, gsi=(100, 100))
    for index in (None, "byUser"):
        for dimension in ("read", "write"):
            world.traffic(name, dimension, 20, index=index)
            if throttles:
                world.traffic(
                    name, dimension, 0, throttles=throttles, minutes=range(1, 3), index=index
                )
    return name


THROTTLES_OF_FOUR = sorted(["ReadThrottleEvents", "WriteThrottleEvents"] * 2)


def test_a_quiet_tick_makes_one_call_of_consumed_capacity(world: World) -> None:
    # GIVEN a table and its GSI at their aim (70 % of their capacity), at a tick that reads
    # no throttles by the clock
    world.off_the_periodic_read()
    name = world.table("steady", 100, 100, gsi=(100, 100))
    for index in (None, "byUser"):
        for dimension in ("read", "write"):
            world.traffic(name, dimension, 70, index=index)
    calls = count_queries(world)
    # WHEN a tick runs
    summary, _ = world.tick(**REACTIVE)
    # THEN it makes one GetMetricData call, of consumed capacity alone (the four dimensions'
    # and the state store's), and changes nothing
    assert len(calls) == 1
    assert len(calls[0]) == 5 and all(m.startswith("Consumed") for m in calls[0])
    assert world.throughput(name) == (100, 100)
    assert world.throughput(name, "byUser") == (100, 100)
    assert summary["failures"] == []


def test_a_dimension_about_to_be_lowered_has_its_throttles_read_first(world: World) -> None:
    # GIVEN a low-use table and GSI, at a tick that reads no throttles by the clock
    world.off_the_periodic_read()
    name = low_use(world)
    calls = count_queries(world)
    # WHEN a tick runs
    world.tick(**REACTIVE)
    # THEN a second call reads the four dimensions' throttle events, and, none throttled,
    # the table and its GSI are lowered that tick
    assert sorted(calls[1]) == THROTTLES_OF_FOUR
    assert world.throughput(name) < (100, 100)
    assert world.throughput(name, "byUser") < (100, 100)


def test_a_dimension_about_to_be_lowered_is_not_when_its_throttles_show(world: World) -> None:
    # GIVEN the same table, but each dimension throttled (a hot key at low use)
    world.off_the_periodic_read()
    name = low_use(world, throttles=600)
    calls = count_queries(world)
    # WHEN a tick runs
    summary, _ = world.tick(**REACTIVE)
    # THEN the throttles are read after the consumption, and nothing is lowered
    assert all(m.startswith("Consumed") for m in calls[0])
    assert sorted(calls[1]) == THROTTLES_OF_FOUR
    assert min(world.throughput(name)) >= 100
    assert min(world.throughput(name, "byUser")) >= 100
    assert summary["failures"] == []


def test_a_hot_dimension_has_its_throttles_read_and_raised_for(world: World) -> None:
    # GIVEN a table whose writes run at their capacity, throttled, and whose reads are at
    # their aim, at a tick that reads no throttles by the clock
    world.off_the_periodic_read()
    name = world.table("busy", 100, 100)
    world.traffic(name, "read", 70)
    world.traffic(name, "write", 100)
    world.traffic(name, "write", 0, throttles=3000, minutes=range(1, 3))
    calls = count_queries(world)
    # WHEN a tick runs
    summary, _ = world.tick(**REACTIVE)
    # THEN the second call reads the writes' throttle events alone, and the writes are
    # raised on them that tick: (served 100 + refused 50) / 0.7
    assert calls[1] == ["WriteThrottleEvents"]
    assert world.throughput(name) == (100, 215)
    assert summary["failures"] == []


def test_the_periodic_tick_reads_every_dimensions_throttles(world: World) -> None:
    # GIVEN a table at its aim, at a tick that reads every dimension's throttles
    while not every_dimension_read(world.now, 2):
        world.now -= TICK
    name = world.table("steady", 100, 100)
    world.traffic(name, "read", 70)
    world.traffic(name, "write", 70)
    calls = count_queries(world)
    # WHEN a tick runs
    world.tick(**REACTIVE)
    # THEN a second call reads both dimensions' throttle events
    assert sorted(calls[1]) == ["ReadThrottleEvents", "WriteThrottleEvents"]


def test_a_failed_throttle_read_is_counted_and_nothing_lowered(world: World) -> None:
    # GIVEN a low-use table whose throttle events' read fails
    name = low_use(world)

    def throttle_read(params: dict[str, Any]) -> bool:
        names = [q["MetricStat"]["Metric"]["MetricName"] for q in params["MetricDataQueries"]]
        return all(n.endswith("ThrottleEvents") for n in names)

    fail_before(world.cw, "GetMetricData", throttle_read, client_error("InternalError", "x"))
    # WHEN a tick runs
    summary, lines = world.tick(**REACTIVE)
    # THEN it is a failure of the table, counted, and nothing of it is lowered
    (failure,) = summary["failures"]
    assert failure["table"] == name
    assert "GetMetricData, throttle events (4 queries)" in failure["reason"]
    assert emf(lines, name)["Failures"] == 1
    assert world.throughput(name) == (100, 100)
    assert world.throughput(name, "byUser") == (100, 100)


@pytest.mark.parametrize("phase", range(THROTTLE_READ_TICKS))
def test_a_raised_minimum_is_restored_on_the_first_calm_tick_whatever_the_minute(
    world: World, phase: int
) -> None:
    # GIVEN a table under target tracking whose minimum a throttled tick raised, at each
    # phase of the periodic read
    world.now -= phase * TICK
    name = world.table("catalog", 100, 20, tagged=False)
    world.target(name, "read", 10, 1000)
    world.traffic(name, "read", 100)
    world.traffic(name, "read", 0, throttles=1200, minutes=range(1, 2))
    world.tick(SCALER_TABLES=name, SCALER_TAG_KEY="")
    assert world.target_min(name, "read") == 172
    # WHEN the next tick whose window holds no throttling runs
    later = world.now + timedelta(minutes=46)
    world.traffic(name, "read", 5, minutes=range(-45, -29))
    calls = count_queries(world)
    world.tick(later, SCALER_TABLES=name, SCALER_TAG_KEY="")
    # THEN its throttles are read and the configured minimum restored, whatever the minute
    assert ["ReadThrottleEvents"] in [sorted(c) for c in calls] or every_dimension_read(later, 2)
    assert world.target_min(name, "read") == 10


def _state(now: datetime, throttles_read: bool) -> DimensionState:
    """A dimension at 20 % of its 100 units for an hour."""
    starts = [now - timedelta(minutes=60 - i) for i in range(60)]
    return DimensionState(
        100, [20.0] * 60, [0.0] * 60, starts, 1, 1000, now, throttles_read=throttles_read
    )


def test_a_decrease_is_refused_without_the_throttles_read() -> None:
    now = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
    assert decide(_state(now, True)).action == DECREASE
    refused = decide(_state(now, False))
    assert (refused.action, refused.capacity) == (HOLD, 100)
    assert refused.reason == "no decrease: throttles not read this tick"


def test_every_dimension_is_read_on_one_tick_in_a_few() -> None:
    start = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
    for tick in (1, 2, 3, 5):
        read = [every_dimension_read(start + i * timedelta(minutes=tick), tick) for i in range(12)]
        assert sum(read) == 12 // THROTTLE_READ_TICKS
