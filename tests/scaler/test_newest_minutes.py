"""The tick reads every minute CloudWatch has delivered, against a moto server: the
newest minutes count for a raise as soon as they arrive, and never as evidence for a
decrease while CloudWatch may still be adding to them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ddb_capacity_runtime.core.settings import DEFAULT_TICK_MINUTES, scale_down_ticks
from ddb_capacity_tools.local_aws import put_traffic
from tests.support.moto_world import World


@pytest.fixture
def world(aws_client: Any) -> Iterator[World]:
    made = World(aws_client)
    yield made
    made.close()


def test_throttles_in_the_newest_delivered_minute_raise_at_once(world: World) -> None:
    # GIVEN a table whose writes were calm until the last complete minute, which CloudWatch
    # has already delivered with 3,000 throttle events (a table beside it: the same, one
    # minute older, so the batch's newest minute is known either way)
    fresh = world.table("fresh", 100, 100)
    put_traffic(world.cw, fresh, "write", 60, end=world.now, minutes=range(2, 20))
    put_traffic(world.cw, fresh, "write", 100, end=world.now, minutes=range(1, 2), throttles=3000)
    # WHEN a tick runs in this minute
    summary, _ = world.tick(SCALER_MODE="reactive")
    # THEN it has raised already: (served 100 + refused 50) / 0.7
    assert world.throughput(fresh)[1] == 215
    assert summary["failures"] == [] and summary["shared_failures"] == []


def test_newest_minutes_that_read_low_do_not_lower_a_busy_table(world: World) -> None:
    # GIVEN a table busy (120 of 200) until 17 minutes ago, then calmer (30) for the 14
    # minutes the reactive mode's 16-minute decrease window would still need, and whose
    # two newest minutes, delivered within the metric lag, read almost nothing
    # (CloudWatch may not have finished them)
    busy = world.table("busy", 200, 200)
    put_traffic(world.cw, busy, "read", 120, end=world.now, minutes=range(17, 40))
    put_traffic(world.cw, busy, "read", 30, end=world.now, minutes=range(3, 17))
    put_traffic(world.cw, busy, "read", 1, end=world.now, minutes=range(1, 3))
    # AND an idle table beside it
    idle = world.table("idle", 200, 200)
    # WHEN a tick runs
    world.tick(SCALER_MODE="reactive")
    # THEN the busy table keeps its reads: its finished minutes still hold 120, and the
    # two that read low do not count as evidence; the idle one is lowered
    assert world.throughput(busy)[0] == 200
    assert world.throughput(idle) == (5, 5)


#: The reactive mode's decrease span at the default 2-minute tick (16 minutes).
SPAN = scale_down_ticks(DEFAULT_TICK_MINUTES) * DEFAULT_TICK_MINUTES


def _on_time(world: World) -> str:
    """A table beside the late one, and the state store's reads, both delivered up to 3
    minutes before now: the batch shows that minute delivered."""
    on_time = world.table("on-time", 200, 200)
    put_traffic(world.cw, on_time, "read", 30, end=world.now, minutes=range(3, 40))
    put_traffic(world.cw, world.store.name, "read", 0.5, end=world.now, minutes=range(3, 40))
    return on_time


@pytest.mark.parametrize("lag", ["2", "0"])
def test_a_minute_another_table_has_delivered_is_not_idle_for_a_table_still_waiting_for_it(
    world: World, lag: str
) -> None:
    # GIVEN a table busy (120 of 200) until the reactive decrease span before its newest
    # delivered minute, calmer (30) since, and its minute 3 minutes ago not delivered yet
    # (CloudWatch 3 minutes late with it, as it may be), whatever the metric lag: with
    # none, the newest 3 minutes still count as on their way
    late = world.table("late", 200, 200)
    put_traffic(world.cw, late, "read", 120, end=world.now, minutes=range(SPAN + 3, 40))
    put_traffic(world.cw, late, "read", 30, end=world.now, minutes=range(4, SPAN + 3))
    # AND another table and the state store delivered up to that minute
    on_time = _on_time(world)
    # AND an idle table, no datapoint of its own for 40 minutes
    idle = world.table("idle", 200, 200)
    # WHEN a tick runs
    summary, _ = world.tick(SCALER_MODE="reactive", SCALER_METRIC_LAG_MINUTES=lag)
    # THEN the late table keeps its reads: its minute not delivered is not a low minute,
    # and its delivered ones still hold 120 within the span
    assert world.throughput(late)[0] == 200
    # AND the idle table is lowered as before: its older minutes are known idle
    assert world.throughput(idle) == (5, 5)
    # AND the table beside it, calm for longer than the span, is lowered (30 / 0.7)
    assert world.throughput(on_time)[0] == 43
    assert summary["failures"] == [] and summary["shared_failures"] == []


@pytest.mark.parametrize("mode", ["autopilot", "reactive"])
def test_a_raise_reads_the_minutes_delivered_before_a_late_one(world: World, mode: str) -> None:
    # GIVEN a table at 100 writes whose two newest delivered minutes served 90 a second,
    # and whose minute after them (3 minutes ago) is not delivered yet
    late = world.table("late", 100, 100)
    put_traffic(world.cw, late, "write", 20, end=world.now, minutes=range(6, 40))
    put_traffic(world.cw, late, "write", 90, end=world.now, minutes=range(4, 6))
    # AND another table and the state store delivered up to that minute
    _on_time(world)
    # WHEN a tick runs
    world.tick(SCALER_MODE=mode)
    # THEN it is raised for the 90 a second (90 / 0.7): in both modes, the autopilot's
    # (both newest minutes above the target) included, the late minute hiding nothing
    assert world.throughput(late)[1] == 129
