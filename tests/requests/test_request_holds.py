"""What a capacity request and the end of a hold promise when things go wrong or sit at
their limits (the table and its target in moto, the hold store in dynalite):

- a scalable target's minimum that Application Auto Scaling refuses to move fails the
  request, and nothing stays held; refused on release, the release fails and the hold stays
  in the store, so the next restore lowers the minimum;
- a hold that expired but was not restored yet counts for nothing in a new request's level;
- a dimension records at most `MAX_HOLDS` holds, and an item of that many at their largest
  fits DynamoDB's 400 KB;
- the longest hold is accepted, and one second more is refused before anything is read or
  sent, naming the field, the value and the range;
- a table lowered between the request's read of it and the record of its hold (the settle
  step of PROVISION_THEN_SETTLE, which read the hold store before that record) is raised
  again before the request returns; one busy with another update, or unread, at the
  level the request reached keeps the hold, and one below it never answers the request."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import pytest
from botocore.exceptions import ClientError

from ddb_capacity_runtime.aws.store import MAX_HOLDS, MAX_PLAN_CHARS, RECENT_INTENTS
from ddb_capacity_runtime.core.hold_requests import new_token
from ddb_capacity_runtime.core.holds import MAX_HOLD, HeldDimension, Hold, token_digest
from ddb_capacity_runtime.core.names import MAX_TABLE_QUOTA
from ddb_capacity_runtime.requests import (
    CapacityRequestError,
    CapacityRequestTimeout,
    request_capacity,
    restore_expired,
)
from ddb_capacity_runtime.requests import request as request_module
from tests.support.capacity_requests import later, stored, write_held
from tests.support.capacity_requests import world as world  # the fixture
from tests.support.moto_world import World

REGISTER = "before-parameter-build.application-autoscaling.RegisterScalableTarget"


@contextmanager
def register_refused(world: World) -> Iterator[None]:
    """RegisterScalableTarget refused with AccessDenied (as for a target not tagged for the
    broker), an answer moto never gives."""

    def refuse(**_: Any) -> None:
        raise ClientError(
            {"Error": {"Code": "AccessDeniedException", "Message": "not authorized"}},
            "RegisterScalableTarget",
        )

    world.aas.meta.events.register(REGISTER, refuse)
    try:
        yield
    finally:
        world.aas.meta.events.unregister(REGISTER, refuse)


def test_a_refused_minimum_fails_the_request_and_holds_nothing(
    world: World,
) -> None:
    # GIVEN a table whose write minimum Application Auto Scaling will not let us move
    name = world.table("MinRefused", 10, 100, tagged=False)
    world.target(name, "write", 100, 10_000)
    # WHEN a worker asks for 1,000 more write units
    with (
        register_refused(world),
        pytest.raises(
            CapacityRequestError,
            match="setting MinCapacity 1,000 failed: AccessDeniedException",
        ),
    ):
        request_capacity(name, write=1_000, clients=world.clients, store=world.store)
    # THEN nothing moved and nothing is held
    assert world.target_min(name, "write") == 100
    assert world.throughput(name) == (10, 100)
    assert stored(world, name) == {}


def test_a_refused_lowering_fails_the_release_and_keeps_the_hold_for_the_restore(
    world: World,
) -> None:
    # GIVEN a hold that raised the write minimum from 100 to 1,000
    name, hold = write_held(world, "LowerRefused", 100, 1_000, minutes=2)
    # WHEN it is released while the minimum cannot be moved
    with (
        register_refused(world),
        pytest.raises(
            CapacityRequestError,
            match="setting MinCapacity 100 failed: AccessDeniedException",
        ),
    ):
        hold.release()
    # THEN the minimum is still held, and so is the hold: it is not forgotten
    assert world.target_min(name, "write") == 1_000
    assert [h.id for h in stored(world, name)[(None, "write")].holds] == [hold.id]
    # AND once it has expired, the next restore lowers the minimum to the base
    (row,) = restore_expired(name, clients=world.clients, store=world.store, clock=later(5))
    assert (row["via"], row["from"], row["to"], row["status"]) == (
        "scalable-target",
        1_000,
        100,
        "applied",
    )
    assert world.target_min(name, "write") == 100
    assert stored(world, name) == {}


def test_an_expired_hold_not_yet_restored_adds_nothing_to_a_new_request(
    world: World,
) -> None:
    # GIVEN a hold of 5,000 write units (over no traffic) that expired; no restore ran yet
    name, _ = write_held(world, "ExpiredAdds", 50, 5_000, minutes=2)
    # WHEN, after its expiry, a worker asks for 100 write units
    hold = request_capacity(
        name, write=100, clients=world.clients, store=world.store, clock=later(5)
    )
    # THEN its level is what the live hold needs; nothing is raised for the expired one
    assert hold.levels == {"write": 100}
    assert hold.changes == []
    assert world.target_min(name, "write") == 5_000
    assert world.throughput(name) == (10, 5_000)
    # AND the restore brings the minimum down to the live hold's level, not the base
    (row,) = restore_expired(name, clients=world.clients, store=world.store, clock=later(6))
    assert (row["from"], row["to"], row["status"]) == (5_000, 100, "applied")
    assert world.target_min(name, "write") == 100


def test_the_longest_hold_is_accepted_and_one_second_more_is_refused(
    world: World,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = world.table("LongestHold", 10, 10, tagged=False)
    # the longest hold, 24 hours: granted, and it lasts that long
    before = datetime.now(UTC)
    hold = request_capacity(name, write=20, hold=MAX_HOLD, clients=world.clients, store=world.store)
    assert before + MAX_HOLD <= hold.expires <= datetime.now(UTC) + MAX_HOLD + timedelta(seconds=1)
    assert world.throughput(name) == (10, 20)
    hold.release()

    def no_broker(*_: Any, **__: Any) -> dict[str, Any]:
        raise AssertionError("a hold that is too long was sent to the broker")

    monkeypatch.setattr(request_module, "invoke_broker", no_broker)
    # one second more: refused before anything is read or sent, directly or via a broker
    too_long = MAX_HOLD + timedelta(seconds=1)
    places: tuple[dict[str, Any], ...] = ({"store": world.store}, {"broker": "capacity-broker"})
    for where in places:
        with pytest.raises(CapacityRequestError) as refused:
            request_capacity(name, write=20, hold=too_long, clients=world.clients, **where)
        assert str(refused.value) == (
            "hold: got datetime.timedelta(days=1, seconds=1); "
            "expected a timedelta from 1 minute to 1 day, 0:00:00"
        )
    assert world.throughput(name) == (10, 10)
    assert stored(world, name) == {}


def held(world: World, name: str) -> HeldDimension:
    """What the hold store keeps of the table ``name``'s write dimension."""
    item = world.store.get(name, None, "write")
    assert item is not None
    return item


def _ended(count: int, units: int, baseline: int) -> list[Hold]:
    """``count`` write holds that ended a minute ago, none yet removed by a restore."""
    ended = datetime.now(UTC) - timedelta(minutes=1)
    return [
        Hold(f"{n:012x}", None, "write", units, ended, baseline, token_digest(new_token()))
        for n in range(count)
    ]


@pytest.mark.parametrize("recorded", [MAX_HOLDS - 1, MAX_HOLDS])
def test_a_dimension_records_at_most_max_holds(world: World, recorded: int) -> None:
    # GIVEN a live hold of 200 write units, and ended holds no restore has removed yet:
    # `recorded` holds in the dimension's item in all
    name, _ = write_held(world, f"ManyHolds{recorded}", 50, 200, minutes=30)
    with world.store.lease(name, None, "write", deadline=time.time() + 5) as lease:
        (live,) = held(world, name).holds
        lease.write(holds=[live, *_ended(recorded - 1, 100, 0)])
    # WHEN a worker asks for 100 more write units
    ask = partial(request_capacity, name, write=100, clients=world.clients, store=world.store)
    if recorded < MAX_HOLDS:
        # THEN up to the bound, it is held, and its level adds to the live hold's
        assert ask().levels == {"write": 300}
        assert len(held(world, name).holds) == MAX_HOLDS
        assert world.target_min(name, "write") == 300
        return
    # THEN past it, it is refused by name, and nothing is recorded or raised
    with pytest.raises(CapacityRequestError) as refused:
        ask()
    assert str(refused.value) == (
        "write: table has 2,000 holds recorded (active, or ended and not yet removed by a "
        "restore), and the hold store keeps at most 2,000 per dimension; release the holds "
        "no longer needed, or share one hold among the workers of one piece of work"
    )
    assert len(held(world, name).holds) == MAX_HOLDS
    assert world.target_min(name, "write") == 200


def test_an_item_of_max_holds_at_their_largest_fits_dynamodb_item_size(world: World) -> None:
    # GIVEN a dimension's item at its largest: MAX_HOLDS holds with units and a baseline of
    # the most digits the store reads, its base, minimum set, 8 recent intents and a plan
    name = world.table("LargestItem", 10, 10, tagged=False)
    holds = _ended(MAX_HOLDS, world.store.limits.max_units - 1, MAX_TABLE_QUOTA - 1)
    with world.store.lease(name, None, "write", deadline=time.time() + 5) as lease:
        for intent in range(MAX_TABLE_QUOTA - RECENT_INTENTS, MAX_TABLE_QUOTA):
            lease.write(MAX_TABLE_QUOTA, set_to=MAX_TABLE_QUOTA, intent=intent)
        # WHEN its holds are written: THEN DynamoDB's 400 KB item takes them
        lease.write(holds=holds, renew_for=60)
    assert world.store.keep_plan(name, None, "write", "9" * MAX_PLAN_CHARS)
    stored_item = held(world, name)
    assert len(stored_item.holds) == MAX_HOLDS
    assert len(stored_item.recent) == RECENT_INTENTS
    assert stored_item.plan == "9" * MAX_PLAN_CHARS


def lowered_as_the_hold_is_recorded(world: World, name: str, read: int) -> list[int]:
    """``name``'s read lowered to ``read`` just before the first write of the hold store
    that records a hold: after the request read the table, as the settle step's UpdateTable
    lands when it read the store before the record. The hold writes seen."""
    seen: list[int] = []

    def lower(params: dict[str, Any], **_: Any) -> None:
        if ":h" not in params.get("ExpressionAttributeValues", {}):
            return
        seen.append(1)
        if len(seen) == 1:
            world.ddb.update_table(
                TableName=name,
                ProvisionedThroughput={"ReadCapacityUnits": read, "WriteCapacityUnits": 5},
            )

    world.store_ddb.meta.events.register("provide-client-params.dynamodb.UpdateItem", lower)
    return seen


def test_a_table_lowered_while_the_hold_is_recorded_is_raised_again(world: World) -> None:
    # GIVEN a table created at its high-water mark (read 2,000), auto-scaled from a minimum
    # of 100, that the settle step lowers to 100: its UpdateTable lands after a capacity
    # request read the table (2,000: its read needs no raise) and before it records its hold
    name = world.table("Settling", 2_000, 5, tagged=False)
    world.target(name, "read", 100, 40_000)
    seen = lowered_as_the_hold_is_recorded(world, name, 100)
    # WHEN a worker asks for 400 read units
    hold = request_capacity(
        name, read=400, clients=world.clients, store=world.store, poll_seconds=0.1
    )
    # THEN the request, reading the table again once its hold is recorded, raises it to the
    # hold before it returns; its minimum holds it there
    assert seen, "no hold was recorded"
    assert hold.levels == {"read": 400}
    assert world.throughput(name) == (400, 5)
    assert world.target_min(name, "read") == 400
    assert [(c["via"], c["from"], c["to"]) for c in hold.changes][-1] == ("update-table", 100, 400)


def seen_after_the_record(world: World, name: str, case: str) -> list[int]:
    """DescribeTable of ``name``, once the request records its hold, as ``case`` says:
    ``updating`` (UPDATING, its read as it is: another dimension's update in flight),
    ``unreadable`` (a read refused with a server's error, which may pass), or
    ``updating-below`` (once, UPDATING with its read at 100: a decrease landing). The hold
    writes seen."""
    seen: list[int] = []
    shown: list[int] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        if ":h" in params.get("ExpressionAttributeValues", {}):
            seen.append(1)

    def described(parsed: dict[str, Any], **_: Any) -> None:
        table = parsed.get("Table", {})
        if not seen or table.get("TableName") != name or (case == "updating-below" and shown):
            return
        shown.append(1)
        table["TableStatus"] = "UPDATING"
        if case == "updating-below":
            table["ProvisionedThroughput"]["ReadCapacityUnits"] = 100

    def refused(**_: Any) -> None:
        if seen:
            raise ClientError(
                {"Error": {"Code": "InternalServerError", "Message": "try again"}}, "DescribeTable"
            )

    world.store_ddb.meta.events.register("provide-client-params.dynamodb.UpdateItem", record)
    if case == "unreadable":
        world.ddb.meta.events.register("before-parameter-build.dynamodb.DescribeTable", refused)
    else:
        world.ddb.meta.events.register("after-call.dynamodb.DescribeTable", described)
    return seen


@pytest.mark.parametrize("case", ["updating", "unreadable"])
def test_a_level_unconfirmed_by_the_timeout_is_a_timeout_that_keeps_its_hold(
    world: World, case: str
) -> None:
    # GIVEN a table at 2,000 reads, auto-scaled from a minimum of 100, which DescribeTable
    # shows UPDATING from the moment a request records its hold until its timeout (another
    # dimension's update; its read still 2,000), or cannot be read then (a server's error)
    name = world.table("Busy", 2_000, 5, tagged=False)
    world.target(name, "read", 100, 40_000)
    seen = seen_after_the_record(world, name, case)
    # WHEN a worker asks for 400 read units, waiting a second at most
    with pytest.raises(CapacityRequestTimeout) as timed_out:
        request_capacity(
            name,
            read=400,
            clients=world.clients,
            store=world.store,
            poll_seconds=0.1,
            timeout=timedelta(seconds=1),
        )
    # THEN the request does not claim the level it could not confirm: it answers as a
    # timeout (through a broker: counted TimedOut, alarmed), saying why, and keeps its hold
    # (the level may stand, or a decrease in flight may need it)
    assert seen, "no hold was recorded"
    message = str(timed_out.value)
    assert "table read at 400 not confirmed before the timeout" in message, message
    (kept,) = stored(world, name)[(None, "read")].holds
    assert f"its hold {kept.id} is kept until it expires" in message, message
    assert world.target_min(name, "read") == 400


def test_a_level_not_there_after_the_record_is_never_claimed(world: World) -> None:
    # GIVEN a table at 2,000 reads that DescribeTable shows UPDATING with its read at 100
    # once a request records its hold (a decrease landing), until the request's timeout
    name = world.table("Lowering", 2_000, 5, tagged=False)
    seen = seen_after_the_record(world, name, "updating-below")
    # WHEN a worker asks for 400 read units, waiting not at all: THEN it times out, and
    # its hold is withdrawn; the capacity it asked for is not claimed
    with pytest.raises(CapacityRequestTimeout, match="capacity not reached before the timeout"):
        request_capacity(
            name, read=400, clients=world.clients, store=world.store, timeout=timedelta(0)
        )
    assert seen, "no hold was recorded"
    assert (None, "read") not in stored(world, name)
