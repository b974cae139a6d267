"""The tick reads every minute CloudWatch has delivered, against a moto server: the
newest minutes count for a raise as soon as they arrive, and never as evidence for a
decrease while CloudWatch may still be adding to them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ddb_capacity_tools.local_aws import put_traffic
from tests.moto_world import World


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
