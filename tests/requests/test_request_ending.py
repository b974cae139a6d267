"""Ending expired capacity holds when the table does not let them end at once (the tables
and their traffic in moto, the hold store in dynalite): a decrease AWS refuses, or an index
being updated, keeps the hold for the next restore, which lowers it; a restore that could
not lower a table fails the restorer's run, naming the table, after the other tables were
restored; and a restore under a tick's deadline takes no lease once it passed, nor waits
for one past it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from botocore.exceptions import ClientError

from ddb_capacity_runtime.aws.store import HoldStore
from ddb_capacity_runtime.core.deadline import Deadline, DeadlinePassed
from ddb_capacity_runtime.requests import CapacityRequestTimeout, restore_expired
from ddb_capacity_runtime.requests.restorer import restore_tables
from tests.support.capacity_requests import FakeClock, stored
from tests.support.capacity_requests import world as world  # noqa: F401 (fixture)
from tests.support.moto_world import World
from tests.support.request_ending import _expired_hold, _raised
from tests.support.surge_server import counted


@contextmanager
def _refusing(world: World, code: str, *tables: str) -> Iterator[None]:  # noqa: F811
    """AWS refuses every UpdateTable of ``tables`` with the error ``code``."""

    def refuse(params: dict[str, Any], **_: Any) -> None:
        if params.get("TableName") in tables:
            raise ClientError({"Error": {"Code": code, "Message": "refused"}}, "UpdateTable")

    event = "before-parameter-build.dynamodb.UpdateTable"
    world.ddb.meta.events.register(event, refuse)
    try:
        yield
    finally:
        world.ddb.meta.events.unregister(event, refuse)


def _ids(world: World, name: str) -> list[str]:  # noqa: F811 (the fixture)
    return [h.id for s in stored(world, name).values() for h in s.holds]


def test_a_refused_decrease_keeps_the_hold_and_the_next_restore_lowers_it(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    # GIVEN a table without a scalable target raised to 500 by a hold that expired
    name = world.table("Refused", 10, 10, tagged=False)
    _raised(world, name, 500)
    ident = _expired_hold(world, name, 490)
    # WHEN a restore's decrease is refused
    with _refusing(world, "ValidationException", name):
        (row,) = restore_expired(name, clients=world.clients, store=world.store)
    # THEN the table stays raised and the hold is kept for the next restore
    assert (row["status"], row["from"], row["to"]) == ("invalid", 500, 10)
    assert world.throughput(name) == (10, 500)
    assert _ids(world, name) == [ident]
    # AND the next restore, which AWS lets through, lowers it and forgets the hold
    (row,) = restore_expired(name, clients=world.clients, store=world.store)
    assert (row["status"], row["from"], row["to"]) == ("applied", 500, 10)
    assert world.throughput(name) == (10, 10)
    assert stored(world, name) == {}


def test_an_index_being_updated_at_expiry_keeps_its_hold_until_it_is_lowered(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    # GIVEN a GSI without a scalable target raised to 300 reads by a hold that expired
    name = world.table("Updating", 10, 10, gsi=(20, 5), tagged=False)
    world.provision(name, "byUser", 300, 5)
    ident = _expired_hold(world, name, 280, index="byUser", base=20)

    def updating(parsed: dict[str, Any], **_: Any) -> None:
        for gsi in parsed.get("Table", {}).get("GlobalSecondaryIndexes", []):
            gsi["IndexStatus"] = "UPDATING"

    # WHEN the restore finds the index UPDATING
    event = "after-call.dynamodb.DescribeTable"
    world.ddb.meta.events.register(event, updating)
    try:
        rows = restore_expired(name, clients=world.clients, store=world.store)
    finally:
        world.ddb.meta.events.unregister(event, updating)
    # THEN it leaves the index and its hold for later, and says so (a busy row, counted by
    # the broker's restore)
    (busy,) = rows
    assert (busy["index"], busy["dimension"], busy["status"]) == ("byUser", "read", "busy")
    assert busy["note"] == "index byUser is not ACTIVE: its holds stay until it is"
    assert world.throughput(name, "byUser") == (300, 5)
    assert _ids(world, name) == [ident]
    # AND once the index is ACTIVE again, the next restore lowers it to its base
    (row,) = restore_expired(name, clients=world.clients, store=world.store)
    assert (row["index"], row["status"], row["from"], row["to"]) == ("byUser", "applied", 300, 20)
    assert world.throughput(name, "byUser") == (20, 5)
    assert stored(world, name) == {}


def test_a_restore_counts_the_busy_index_alone_and_restores_the_other_table(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN two tables raised by expired holds: one through its GSI, which is being updated
    busy = world.table("BusyIdx", 10, 10, gsi=(20, 5), tagged=False)
    world.provision(busy, "byUser", 300, 5)
    _expired_hold(world, busy, 280, index="byUser", base=20)
    calm = world.table("Calm", 10, 300, tagged=False)
    _expired_hold(world, calm, 290)

    def updating(parsed: dict[str, Any], **_: Any) -> None:
        if parsed.get("Table", {}).get("TableName") == busy:
            for gsi in parsed["Table"].get("GlobalSecondaryIndexes", []):
                gsi["IndexStatus"] = "UPDATING"

    # WHEN the broker's restore runs over both
    event = "after-call.dynamodb.DescribeTable"
    world.ddb.meta.events.register(event, updating)
    try:
        out = restore_tables([busy, calm], clients=world.clients, store=world.store)
    finally:
        world.ddb.meta.events.unregister(event, updating)
    # THEN the calm table is lowered to its base, the busy index kept and counted, alone
    statuses = {(r["table"], r["index"]): r["status"] for r in out["restored"]}
    assert statuses == {(busy, "byUser"): "busy", (calm, None): "applied"}
    assert out["failed"] == []
    assert world.throughput(calm) == (10, 10) and world.throughput(busy, "byUser") == (300, 5)
    assert counted(capsys.readouterr().out, "HoldsBusy") == 1


def test_a_refused_decrease_fails_the_restore_after_the_other_tables_were_restored(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    # GIVEN two tables raised to 640 by holds that expired
    refused, healthy = (world.table(base, 10, 40, tagged=False) for base in ("Denied", "Fine"))
    for name in (refused, healthy):
        _raised(world, name, 640)
    ident = _expired_hold(world, refused, 600, base=40)
    _expired_hold(world, healthy, 600, base=40)
    # WHEN the restore may not lower the first one
    with (
        _refusing(world, "AccessDeniedException", refused),
        pytest.raises(RuntimeError, match="restoring holds failed on 1 table") as caught,
    ):
        restore_tables([refused, healthy], clients=world.clients, store=world.store)
    # THEN the run fails naming that table alone, whose hold stays for the next run
    assert refused in str(caught.value) and healthy not in str(caught.value)
    assert world.throughput(refused) == (10, 640)
    assert _ids(world, refused) == [ident]
    # AND the other table was restored
    assert world.throughput(healthy) == (10, 40)
    assert stored(world, healthy) == {}


def test_a_decrease_refused_for_the_quota_fails_the_restore_and_keeps_the_hold(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    # GIVEN a table raised to 640 by a hold that expired
    name = world.table("Quota", 10, 40, tagged=False)
    _raised(world, name, 640)
    ident = _expired_hold(world, name, 600, base=40)
    # WHEN DynamoDB refuses the decrease: the day's decreases are spent
    with (
        _refusing(world, "LimitExceededException", name),
        pytest.raises(RuntimeError, match="restoring holds failed on 1 table") as caught,
    ):
        restore_tables([name], clients=world.clients, store=world.store)
    # THEN the run fails naming the table, and the hold stays for the next run
    assert name in str(caught.value)
    assert world.throughput(name) == (10, 640)
    assert _ids(world, name) == [ident]


def _item(world: World, name: str) -> dict[str, Any]:  # noqa: F811 (the fixture)
    """The store's item of the table's write dimension, as stored."""
    key = {"pk": {"S": name}, "sk": {"S": HoldStore.sort_key(None, "write")}}
    answer = world.store_ddb.get_item(TableName=world.store.name, Key=key, ConsistentRead=True)
    return dict(answer["Item"])


def test_a_restore_waits_for_a_busy_lease_no_later_than_the_ticks_deadline(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    # GIVEN an expired hold whose lease another process holds
    clock = FakeClock()
    store = HoldStore(world.store_ddb, world.store.name, clock=clock)
    name = world.name("LeaseBusy")
    ident = _expired_hold(world, name, 490, store=store, now=clock.t)
    with store.lease(name, None, "write", deadline=clock.t + 5):
        # WHEN a tick with two seconds left restores it (the restore's own wait is 30 s)
        stop = Deadline(at=clock.t + 2, clock=clock)
        with pytest.raises(CapacityRequestTimeout, match="kept the hold store busy"):
            restore_expired(
                name,
                store=store,
                clients=world.clients,
                clock=clock,
                sleep=clock.sleep,
                stop=stop,
                lower_direct=False,
            )
        # THEN it gave up at the tick's deadline, not after it
        assert clock.t == stop.at
    assert _ids(world, name) == [ident]


def test_a_restore_after_the_ticks_deadline_takes_no_lease(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    # GIVEN an expired hold
    clock = FakeClock()
    store = HoldStore(world.store_ddb, world.store.name, clock=clock)
    name = world.name("LatePass")
    _expired_hold(world, name, 490, store=store, now=clock.t)
    before = _item(world, name)
    # WHEN a tick whose deadline passed comes to restore it
    stop = Deadline(at=clock.t - 1, clock=clock)
    with pytest.raises(DeadlinePassed, match="the tick's deadline passed"):
        restore_expired(
            name, store=store, clients=world.clients, clock=clock, sleep=clock.sleep, stop=stop
        )
    # THEN nothing was written to the store: no lease was taken
    assert _item(world, name) == before
