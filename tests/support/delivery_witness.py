"""The delivery witness's world and its on-time and stalled decisions."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from ddb_capacity_runtime.core.delivery import WITNESS_PERIOD_MINUTES
from ddb_capacity_runtime.core.series import step_start
from ddb_capacity_tools.local_aws import put_traffic, put_witness
from tests.support.moto_world import World


@pytest.fixture
def world(aws_client: Any) -> Iterator[World]:
    made = World(aws_client)
    yield made
    made.close()


def on_time(world: World) -> str:
    """A table busy at 30 of 200 reads, delivered up to 3 minutes ago, and the state
    store's reads: the batch shows its minutes delivered, and this table's decrease rests
    on none without a datapoint."""
    table = world.table("on-time", 200, 200)
    put_traffic(world.cw, table, "read", 30, end=world.now, minutes=range(3, 40))
    put_traffic(world.cw, table, "write", 30, end=world.now, minutes=range(3, 40))
    put_traffic(world.cw, world.store.name, "read", 0.5, end=world.now, minutes=range(3, 40))
    return table


def stalled(world: World, base: str = "stalled") -> str:
    """A table busy (120 of 200 reads and writes) until 25 minutes ago, of which CloudWatch
    has delivered nothing since: no consumption, and no provisioned capacity for the last
    30 minutes (its metric stream stopped). Every minute of the tick's window reads as
    idle."""
    table = world.table(base, 200, 200, witness=False)
    for dimension in ("read", "write"):
        put_traffic(world.cw, table, dimension, 120, end=world.now, minutes=range(25, 60))
    put_witness(world.cw, table, end=world.now - timedelta(minutes=30), units=(200, 200))
    return table


def decisions(lines: list[dict[str, Any]], event: str, table: str) -> list[dict[str, Any]]:
    return [e for e in lines if e.get("event") == event and e.get("table") == table]


def newest_of(end: datetime) -> datetime:
    """The newest witness datapoint `put_witness` publishes for periods ended by ``end``."""
    return step_start(end, WITNESS_PERIOD_MINUTES) - timedelta(minutes=WITNESS_PERIOD_MINUTES)
