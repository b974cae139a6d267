"""Capacity requests and endings whose calls take long: an ending whose calls under the
dimension's lease outlast the lease (a new request takes the lease meanwhile, and the
decrease planned on what was read before must not land under that request's hold), and a
request whose table takes longer to become ACTIVE than the hold it asked for (it must not
answer as if the capacity were held for the work that starts after it). Tables in moto, the
hold store in dynalite, every clock a fake one."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ddb_capacity_runtime.aws.clients import Clients
from ddb_capacity_runtime.aws.store import CLOCK_SKEW, LEASE, HoldStore
from ddb_capacity_runtime.requests import (
    CapacityRequestError,
    CapacityRequestTimeout,
    request_capacity,
    restore_expired,
)
from tests.support.capacity_requests import FakeClock, stored
from tests.support.capacity_requests import world as world  # noqa: F401 (fixture)
from tests.support.moto_world import World
from tests.support.request_ending import _expired_hold, _raised


def test_a_slow_restore_never_lowers_a_table_under_a_hold_recorded_meanwhile(
    world: World,  # noqa: F811 (the fixture)
    aws_client: Any,
) -> None:
    # GIVEN a table without a scalable target raised to 500 by a hold that expired
    clock = FakeClock()
    store = HoldStore(world.store_ddb, world.store.name, clock=clock)
    name = world.table("SlowEnd", 10, 10, tagged=False)
    _raised(world, name, 500)
    _expired_hold(world, name, 490, store=store, now=clock.t)
    # AND a restore whose first DescribeTable under the lease is slow (a call that takes
    # longer than the lease and the clock skew together), during which a worker requests
    # 400 write units, which the table's 500 already covers
    slow_ddb = aws_client("dynamodb")
    restore_clients = Clients(slow_ddb, world.aas, world.cw, world.clients.tagging)
    made: list[Any] = []

    def slow(**_: Any) -> None:
        if made:
            return
        clock.sleep(LEASE.total_seconds() + CLOCK_SKEW.total_seconds() + 60)
        made.append(
            request_capacity(
                name, write=400, clients=world.clients, store=store, clock=clock, sleep=clock.sleep
            )
        )

    slow_ddb.meta.events.register("before-call.dynamodb.DescribeTable", slow)
    # WHEN the restore runs
    with pytest.raises(CapacityRequestError):  # its lease was lost, found before the decrease
        restore_expired(name, store=store, clients=restore_clients, clock=clock, sleep=clock.sleep)
    # THEN the worker was told 400 units are held, and its hold is recorded and active
    (hold,) = made
    assert hold.levels == {"write": 400}
    (write,) = stored(world, name).values()
    assert [h.id for h in write.active(datetime.fromtimestamp(clock.t, UTC))] == [hold.id]
    # AND the table still has the capacity that hold needs
    assert world.throughput(name)[1] >= 400, world.throughput(name)


def updating_after_a_raise(
    world: World,  # noqa: F811 (the fixture)
    aws_client: Any,
    clock: FakeClock,
    for_seconds: float = math.inf,
) -> tuple[Clients, list[float]]:
    """Clients whose DescribeTable says UPDATING for ``for_seconds`` (by ``clock``) after their
    first UpdateTable, and the times of their UpdateTables."""
    ddb = aws_client("dynamodb")
    raised: list[float] = []

    def updating(parsed: dict[str, Any], **_: Any) -> None:
        if raised and clock.t < raised[0] + for_seconds:
            parsed["Table"]["TableStatus"] = "UPDATING"

    ddb.meta.events.register("before-call.dynamodb.UpdateTable", lambda **_: raised.append(clock.t))
    ddb.meta.events.register("after-call.dynamodb.DescribeTable", updating)
    return Clients(ddb, world.aas, world.cw, world.clients.tagging), raised


def test_a_request_never_succeeds_with_a_hold_that_ran_out_while_it_waited(
    world: World,  # noqa: F811 (the fixture)
    aws_client: Any,
) -> None:
    # GIVEN a table without a scalable target that stays UPDATING for 3 minutes after a raise
    clock = FakeClock()
    store = HoldStore(world.store_ddb, world.store.name, clock=clock)
    name = world.table("Outlived", 10, 10, tagged=False)
    clients, raised = updating_after_a_raise(world, aws_client, clock, for_seconds=180)
    # WHEN a worker asks for 490 write units held for 2 minutes
    with pytest.raises(CapacityRequestTimeout, match="the hold ran out") as caught:
        request_capacity(
            name,
            write=490,
            hold=timedelta(minutes=2),
            timeout=timedelta(minutes=10),
            clients=clients,
            store=store,
            clock=clock,
            sleep=clock.sleep,
        )
    # THEN it is told the hold ran out while it waited (its work must not start on capacity
    # nobody holds for it), the table having been raised, and nothing is left held
    assert raised and clock.t >= raised[0] + 120
    assert "ask for a longer hold" in str(caught.value)
    assert stored(world, name) == {}


def test_a_request_told_no_timeout_waits_ten_minutes_for_its_table(
    world: World,  # noqa: F811 (the fixture)
    aws_client: Any,
) -> None:
    # GIVEN a table without a scalable target that stays UPDATING once raised
    clock = FakeClock()
    store = HoldStore(world.store_ddb, world.store.name, clock=clock)
    name = world.table("Slow", 10, 10, tagged=False)
    clients, raised = updating_after_a_raise(world, aws_client, clock)
    # WHEN a worker asks for 100 write units, held an hour, telling no timeout
    with pytest.raises(CapacityRequestError, match="still busy") as caught:
        request_capacity(
            name, write=100, hold=timedelta(hours=1), clients=clients, store=store, clock=clock,
            sleep=clock.sleep, poll_seconds=5,
        )  # fmt: skip
    # THEN it waited ten minutes for the table from its raise, no less and not a poll more,
    # then gave up (its hold left to the restore: the table is still being updated)
    waited = clock.t - raised[0]
    assert 600 - 5 <= waited <= 600 + 5, waited
    assert isinstance(caught.value.__cause__, CapacityRequestTimeout)
