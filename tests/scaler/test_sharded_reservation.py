"""A sharded tick shares the reservation among its batches: the scheduled invocation
describes every table and gives each batch a share in proportion to the units of its
tables that reserved capacity covers, the shares adding up to the reservation exactly; a
table it cannot describe leaves every batch the whole reservation, counted. Against the
moto server: the batches sent to its SQS queue and run as the batch function runs them."""

from __future__ import annotations

import io
from typing import Any

import pytest

from ddb_capacity_runtime.scaler.handler import coordinate
from ddb_capacity_runtime.scaler.shard import parse_batch, reserved_shares
from tests.support.faults import client_error, fail_before
from tests.support.moto_world import World
from tests.support.sharded_tick import (
    config,
    emf_records,
    own_clients,
    received,
    ticked,
)
from tests.support.sharded_tick import queue as queue  # noqa: F401 (fixture)
from tests.support.sharded_tick import world as world  # noqa: F401 (fixture)


@pytest.mark.parametrize(
    ("reserved", "covered", "shares"),
    [
        (1000, [600, 600, 200], [429, 428, 143]),
        (1000, [0, 0], [1000, 1000]),  # nothing covered: nothing to lower anywhere
        (0, [600, 200], [0, 0]),
        (100, [1, 1, 1], [34, 33, 33]),
        (500, [300, 0], [500, 0]),
        (10_000_000, [7, 1_000_000, 3], [70, 9_999_900, 30]),
    ],
)
def test_the_shares_are_proportional_and_add_up_to_the_reservation(
    reserved: int, covered: list[int], shares: list[int]
) -> None:
    assert reserved_shares(reserved, covered) == shares
    if any(covered):
        assert sum(shares) == reserved


def _seven_idle(world: World) -> list[str]:
    """7 idle tables of 200 read and write units, a unit a second of traffic."""
    names = []
    for i in range(7):
        name = world.table(f"idle{i}", 200, 200)
        for dimension in ("read", "write"):
            world.traffic(name, dimension, 1, minutes=range(0, 40))
        names.append(name)
    return names


ENV = {
    "SCALER_SHARD_ABOVE_TABLES": "3",
    "SCALER_TABLES_PER_BATCH": "3",
    "SCALER_RESERVED_WRITE_UNITS": "1000",
}


def _run_batches(world: World, aws_client: Any, queue: str) -> list[Any]:
    """Every batch on the queue, parsed and ticked; returns them."""
    batches = [parse_batch(m["body"], world.now, 2) for m in received(aws_client, queue)]
    for batch in batches:
        assert ticked(world, own_clients(aws_client), batch, None, None, **ENV) is None
    return batches


def test_a_sharded_fleet_scales_in_down_to_the_reservation(
    world: World, aws_client: Any, queue: str
) -> None:
    # GIVEN 7 idle tables of 200 write units in batches of 3, and 1,000 write units reserved
    names = _seven_idle(world)
    cfg = config(world, **ENV)
    # WHEN the scheduled invocation sends the batches and each is ticked
    out = io.StringIO()
    coordinate(cfg, own_clients(aws_client), world.now, store=world.store, queue_url=queue, out=out)
    batches = _run_batches(world, aws_client, queue)
    # THEN the fleet's writes fell to the reservation, no lower; the reads to the minimum
    assert sum(world.throughput(n)[1] for n in names) == 1000
    assert {world.throughput(n)[0] for n in names} == {5}
    # AND each batch carried its share of the writes, in proportion to its 600, 600 and
    # 200 units, the shares adding up to the reservation; none of the reads (none reserved)
    assert [b.reserved for b in batches] == [(0, 429), (0, 428), (0, 143)]
    assert emf_records(out)[0]["SharedFailures"] == 0


def test_a_table_not_described_leaves_every_batch_the_whole_reservation(
    world: World, aws_client: Any, queue: str
) -> None:
    # GIVEN the same fleet, and one table whose DescribeTable fails for the scheduled
    # invocation
    names = _seven_idle(world)
    cfg = config(world, **ENV)
    clients = own_clients(aws_client)
    denied = client_error("AccessDeniedException", "DescribeTable")
    fail_before(clients.dynamodb, "DescribeTable", lambda p: p["TableName"] == names[4], denied)
    out = io.StringIO()
    summary = coordinate(cfg, clients, world.now, store=world.store, queue_url=queue, out=out)
    # THEN the batches are sent with no share (each keeps the whole reservation), and the
    # failure is counted as a shared one
    (failure,) = summary.shared_failures
    assert failure.startswith("reservation shares: AccessDeniedException")
    assert emf_records(out)[0]["SharedFailures"] == 1
    batches = _run_batches(world, aws_client, queue)
    assert [b.reserved for b in batches] == [None, None, None]
    # AND no batch lowered its writes below the whole reservation: all 1,400 stay
    assert sum(world.throughput(n)[1] for n in names) == 1400
