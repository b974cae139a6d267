"""A capacity request made while a tick decides: the tick read the hold store before the
request recorded its hold, and a decrease it planned on that read must not land under the
hold (a real tick against the moto server, the hold store in dynalite)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from ddb_capacity_runtime.aws.clients import Clients
from ddb_capacity_runtime.requests import CapacityHold, CapacityRequestTimeout, request_capacity
from tests.support.faults import busy_and_idle, emf
from tests.support.faults import world as world  # noqa: F401 (a fixture)
from tests.support.moto_world import World


@pytest.fixture
def worker(world: World, aws_client: Any) -> Callable[..., CapacityHold]:  # noqa: F811
    """A worker's request for 150 write units held, with clients of its own."""
    own = Clients(aws_client("dynamodb"), aws_client("application-autoscaling"),
                  aws_client("cloudwatch"), aws_client("resourcegroupstaggingapi"))  # fmt: skip

    def ask(name: str, timeout: timedelta = timedelta(minutes=1)) -> CapacityHold:
        return request_capacity(
            name, write=150, hold=timedelta(minutes=15), timeout=timeout, clients=own,
            store=world.store,
        )  # fmt: skip

    return ask


def test_a_hold_recorded_while_a_tick_decides_is_never_cut_by_its_decrease(
    world: World,  # noqa: F811 (the fixture)
    worker: Callable[..., CapacityHold],
) -> None:
    # GIVEN an idle table without a scalable target at 200 writes (a tick lowers it to 5)
    _, name = busy_and_idle(world)
    # AND a worker that asks for 150 write units once the tick has read the store, just
    # as the tick takes the dimension's lease to lower it: 200 covers them, nothing raised
    made: list[CapacityHold] = []

    asked: list[bool] = []

    def request(params: dict[str, Any], **_: Any) -> None:
        taking = str(params.get("UpdateExpression")).startswith("SET #o = :o")
        if not asked and taking and params["Key"]["pk"] == {"S": name}:
            asked.append(True)  # once: the worker's own store calls come through here too
            made.append(worker(name))

    world.store_ddb.meta.events.register("before-parameter-build.dynamodb.UpdateItem", request)
    # WHEN the tick runs
    summary, events = world.tick()
    # THEN the worker was told its units are held, at the 200 the table has
    (hold,) = made
    assert hold.levels == {"write": 200} and hold.changes == []
    # AND the tick did not cut the table under the hold: its write decrease is left for the
    # next tick, which reads the hold; its reads, not held, are lowered as usual
    assert world.throughput(name) == (5, 200)
    decisions = [e for e in events if e.get("event") == "decision" and e["table"] == name]
    (write,) = [e for e in decisions if e["dimension"] == "write"]
    assert (write["from"], write["to"], write["status"]) == (200, 5, "retry-next-tick"), write
    assert write["error"] == "a hold since it was read needs 150", write
    assert summary["failures"] == [] and emf(events, name)["Failures"] == 0


def test_a_request_made_while_a_tick_lowers_its_table_is_never_answered_under_it(
    world: World,  # noqa: F811 (the fixture)
    worker: Callable[..., CapacityHold],
) -> None:
    # GIVEN an idle table without a scalable target at 200 writes (a tick lowers it to 5)
    _, name = busy_and_idle(world)
    # AND a worker that asks for 150 write units (2 s at most) while the tick's UpdateTable
    # of that table is being sent
    made: list[CapacityHold | Exception] = []

    def request(params: dict[str, Any], **_: Any) -> None:
        if not made and params.get("TableName") == name:
            try:
                made.append(worker(name, timeout=timedelta(seconds=2)))
            except CapacityRequestTimeout as exc:
                made.append(exc)

    world.clients.dynamodb.meta.events.register(
        "before-parameter-build.dynamodb.UpdateTable", request
    )
    # WHEN the tick runs
    world.tick()
    # THEN the table is lowered, and the worker was never told its 150 units are held: it
    # waited for the dimension's lease, which the tick held while it lowered the table
    assert world.throughput(name) == (5, 5)
    (answer,) = made
    assert isinstance(answer, CapacityRequestTimeout), answer


def test_a_decrease_whose_lease_is_held_elsewhere_waits_for_the_next_tick(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    # GIVEN an idle table without a scalable target at 200 (a tick lowers it to 5), whose
    # write lease someone else holds for the whole tick (a request under way)
    _, name = busy_and_idle(world)
    with world.store.lease(name, None, "write", deadline=time.time() + 5):
        # WHEN the tick runs
        _, events = world.tick()
    # THEN the read is lowered, and the write decrease is not sent without its lease: left
    # for the next tick, not a failure
    assert world.throughput(name) == (5, 200)
    decisions = [e for e in events if e.get("event") == "decision" and e["table"] == name]
    assert {e["dimension"]: e["status"] for e in decisions} == {
        "read": "applied",
        "write": "retry-next-tick",
    }
    assert emf(events, name)["Failures"] == 0
