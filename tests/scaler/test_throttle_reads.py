"""Throttle events read only where they may matter, against a moto server: a tick reads
every dimension's consumed capacity, and in a second GetMetricData call the throttle events
of the dimensions near their capacity, and of every dimension on every third tick. A
dimension whose throttles were not read is never lowered on that tick; the calls are
counted by a boto3 event hook on the tick's own CloudWatch client."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from ddb_capacity_runtime.core.policy import DECREASE, HOLD, DimensionState, decide
from ddb_capacity_runtime.core.series import THROTTLE_READ_SHARE, throttles_due
from tests.support.faults import client_error, emf, fail_before
from tests.support.moto_world import World
from tests.support.throttle_causes import world as world  # noqa: F401 (fixture)

REACTIVE = {"SCALER_MODE": "reactive"}  # no history read: the window's calls alone


def metric_calls(world: World) -> list[list[str]]:
    """The metric names of each GetMetricData call of the world's ticks, as they are made."""
    calls: list[list[str]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        calls.append([q["MetricStat"]["Metric"]["MetricName"] for q in params["MetricDataQueries"]])

    world.clients.cloudwatch.meta.events.register(
        "provide-client-params.cloudwatch.GetMetricData", record
    )
    return calls


def low_use(world: World) -> str:
    """A table and its GSI at 20 % of their capacity: a third tick lowers them."""
    name = world.table("calm", 100, 100, gsi=(100, 100))
    for index in (None, "byUser"):
        for dimension in ("read", "write"):
            world.traffic(name, dimension, 20, index=index)
    return name


def not_a_third_tick(world: World) -> None:
    """Move the world's now 2 minutes on, off a third tick (its now is on one)."""
    world.now += timedelta(minutes=2)
    assert not throttles_due([0.0], 100, world.now, 2)


def test_a_low_use_tick_reads_consumption_alone_and_lowers_nothing(world: World) -> None:
    # GIVEN a table and its GSI at 20 % of their capacity, at a tick that is no third one
    not_a_third_tick(world)
    name = low_use(world)
    calls = metric_calls(world)
    # WHEN a tick runs
    summary, lines = world.tick(**REACTIVE)
    # THEN it makes one GetMetricData call, of consumed capacity alone (the four dimensions'
    # and the state store's)
    assert len(calls) == 1
    assert len(calls[0]) == 5 and all(m.startswith("Consumed") for m in calls[0])
    # AND nothing is lowered: the throttles were not read
    assert world.throughput(name) == (100, 100)
    assert world.throughput(name, "byUser") == (100, 100)
    held = [e for e in lines if e.get("event") == "decision" and e.get("table") == name]
    assert len(held) == 4
    assert all(e["reason"] == "no decrease: throttles not read this tick" for e in held)
    assert summary["failures"] == []


def test_a_third_tick_reads_every_dimensions_throttles_and_lowers(world: World) -> None:
    # GIVEN the same table at a third tick (the world's now: a multiple of 6 minutes)
    name = low_use(world)
    calls = metric_calls(world)
    # WHEN a tick runs
    world.tick(**REACTIVE)
    # THEN a second call reads the four dimensions' throttle events, and the table and its
    # GSI are lowered (then the decreases' delivery witnesses are read: a third call)
    assert len(calls) >= 2
    assert sorted(calls[1]) == sorted(["ReadThrottleEvents", "WriteThrottleEvents"] * 2)
    assert world.throughput(name) < (100, 100)
    assert world.throughput(name, "byUser") < (100, 100)


def test_a_hot_dimension_has_its_throttles_read_and_raised_for(world: World) -> None:
    # GIVEN a table whose writes run at their capacity, throttled, and whose reads are at
    # 60 % of theirs, at a tick that is no third one
    not_a_third_tick(world)
    name = world.table("busy", 100, 100)
    world.traffic(name, "read", 60)
    world.traffic(name, "write", 100)
    world.traffic(name, "write", 0, throttles=3000, minutes=range(1, 3))
    calls = metric_calls(world)
    # WHEN a tick runs
    summary, _ = world.tick(**REACTIVE)
    # THEN the second call reads the writes' throttle events alone, and the writes are
    # raised on them that tick: (served 100 + refused 50) / 0.7
    assert calls[1] == ["WriteThrottleEvents"]
    assert world.throughput(name) == (100, 215)
    assert summary["failures"] == []


def test_a_failed_throttle_read_is_counted_and_its_dimensions_held(world: World) -> None:
    # GIVEN a low-use table at a third tick, whose throttle events' read fails
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


def test_throttles_are_due_near_the_capacity_or_on_a_third_tick() -> None:
    third = datetime(2026, 1, 5, 12, 6, tzinfo=UTC)
    other = third + timedelta(minutes=2)
    assert throttles_due([1.0], 100, third, 2)
    assert not throttles_due([1.0], 100, other, 2)
    assert throttles_due([THROTTLE_READ_SHARE * 100], 100, other, 2)
    # at a tick of 3 minutes, as at any, one tick in three reads them
    due = [i for i in range(9) if throttles_due([], 100, third + timedelta(minutes=3 * i), 3)]
    assert len(due) == 3 and due[1] - due[0] == due[2] - due[1] == 3
