"""DynamoDB publishes no consumption datapoint for a minute without traffic, so a tick whose
tables were all idle had nothing to show that CloudWatch had delivered the window: nothing
was lowered until some table had traffic again (a table raised for a nightly batch stayed
raised all night). The scaler's state store, which every tick reads, witnesses the
delivered minutes: its consumed read capacity is asked beside the tables'."""

from __future__ import annotations

from typing import Any

from ddb_capacity_tools.simulator.scaler_cost import QUERIES_PER_DIMENSION, WITNESS_QUERIES
from tests.support.faults import world  # noqa: F401
from tests.support.moto_world import World


def _raised_and_idle(world: World) -> str:  # noqa: F811
    """A table raised to 500 writes (a batch that ended), with no traffic since."""
    return world.table("after-batch", 5, 500)


def _store_read(world: World, minutes: range) -> None:  # noqa: F811
    """The state store's reads (one a tick), as DynamoDB publishes them, ``minutes``
    before the window's end."""
    world.traffic(world.store.name, "read", 0.5, minutes=minutes)


def test_an_idle_table_alone_is_lowered_once_the_store_shows_the_minutes_delivered(
    world: World,  # noqa: F811
) -> None:
    # GIVEN the only managed table, raised and idle since, and the state store's reads
    # delivered up to the newest minute
    table = _raised_and_idle(world)
    _store_read(world, range(1, 16))
    # WHEN a tick runs
    summary, _ = world.tick()
    # THEN the idle table is lowered: its minutes are known idle, not unknown
    assert world.throughput(table) == (5, 5)
    assert summary["failures"] == [] and summary["shared_failures"] == []


def test_the_store_shows_no_more_than_it_saw_delivered(world: World) -> None:  # noqa: F811
    # GIVEN the same table, and the store's reads delivered only up to 5 minutes before the
    # window's end (CloudWatch late)
    table = _raised_and_idle(world)
    _store_read(world, range(5, 16))
    # WHEN a tick runs
    world.tick()
    # THEN nothing is lowered: the newest minutes are not known delivered
    assert world.throughput(table) == (5, 500)


def test_the_tick_asks_for_the_witness_in_each_call(world: World) -> None:  # noqa: F811
    # GIVEN a managed table
    world.table("orders", 5, 5)
    asked: list[list[str]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        asked.append([q["Id"] for q in params["MetricDataQueries"]])

    world.cw.meta.events.register("before-parameter-build.cloudwatch.GetMetricData", record)
    # WHEN a tick runs
    world.tick()
    # THEN its minutes' call carries the state store's consumed reads, besides the table's
    # two dimensions' (what the scaler's running cost charges for)
    (minutes,) = [ids for ids in asked if "c0" in ids]
    assert "w" in minutes
    assert len(minutes) == 2 * QUERIES_PER_DIMENSION + WITNESS_QUERIES
