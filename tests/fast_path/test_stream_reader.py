"""The stream reader against real parts: a table with a stream in moto, its records read
with a real boto3 ``dynamodbstreams`` client and handed to the reader in the event source
mapping's event shape; the state store (its counters and the surge's items) in dynalite,
whose conditional writes are atomic as DynamoDB's are."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
import uuid
from typing import Any

import pytest

from ddb_capacity_runtime.aws import stream_counts
from ddb_capacity_runtime.aws.stream_counts import Added
from ddb_capacity_runtime.core.stream import WINDOW_SECONDS
from ddb_capacity_runtime.fast_path.stream_reader import MAX_RECORDS, read_stream
from ddb_capacity_runtime.fast_path.surge_settings import RESERVE_MS
from tests.support.moto_world import World
from tests.support.signals_batches import Clock
from tests.support.stream_reader import (
    NOTE,
    lambda_event,
    put_items,
    read,
    settled,
    stream_records,
    streamed_table,
    window_sum,
)
from tests.support.surge_server import SETTINGS, counted, served, surge_of
from tests.support.surge_server import prompt_store as prompt_store  # noqa: F401 (fixture)
from tests.support.surge_server import world as world  # noqa: F401 (fixture)

# ------------------------------------------------------------------ end to end


def test_writes_at_or_over_provisioned_raise_the_table_and_its_gsi(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a table and its GSI provisioned at 10 write units, with a stream
    name = streamed_table(world, "Streamed")
    world.target(name, "write", 10, 1_000, index="byUser")
    # WHEN 30 items of 1,500 bytes are written (2 units each, on the table and the GSI),
    # and their records reach the reader within one window, 5 seconds into it
    put_items(world, name, 30)
    arn, records = stream_records(world, name)
    assert len(records) == 30
    start, at = settled(time.time())
    answer = read(world, lambda_event(arn, records, at), served(name, indexes=("byUser",)))
    # THEN the counters hold 60 units for the window, on the table and on the GSI
    assert window_sum(world, name, "table:write", start) == 60
    assert window_sum(world, name, "index/byUser:write", start) == 60
    # and 12 units/s (60 over 5 s) raise both at once, to 12 / 0.7
    rows = {r["index"]: r for r in answer["dimensions"]}
    assert rows[None]["rate"] == rows["byUser"]["rate"] == 12.0
    assert (rows[None]["status"], rows[None]["to"]) == ("applied", 18)
    assert (rows["byUser"]["status"], rows["byUser"]["to"]) == ("applied", 18)
    assert world.target_min(name, "write") == 18
    hold = surge_of(world, name)
    assert hold is not None and hold.baseline == 10
    assert counted(capsys.readouterr().out, "SurgesApplied") == 2


def test_a_batch_reads_its_table_once_and_again_only_under_each_lease(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    # GIVEN a table and its GSI at 10 write units whose batch raises both
    name = streamed_table(world, "Described")
    world.target(name, "write", 10, 1_000, index="byUser")
    put_items(world, name, 30)
    arn, records = stream_records(world, name)
    start, at = settled(time.time())
    reads: list[str] = []

    def described(params: dict[str, Any], **_: Any) -> None:
        reads.append(params["TableName"])

    world.ddb.meta.events.register("before-parameter-build.dynamodb.DescribeTable", described)
    try:
        # WHEN the reader takes the batch
        answer = read(world, lambda_event(arn, records, at), served(name, indexes=("byUser",)))
    finally:
        world.ddb.meta.events.unregister("before-parameter-build.dynamodb.DescribeTable", described)
    # THEN both dimensions are raised, on one description of the table for the batch's
    # first looks, and two under each dimension's lease (the state the raise is decided on,
    # and the actuator's read right before its UpdateTable): 5, not 7
    assert [r["status"] for r in answer["dimensions"]] == ["applied", "applied"]
    assert reads == [name] * (1 + 2 * 2)


def test_writes_below_provisioned_are_counted_and_raise_nothing(world: World) -> None:
    name = streamed_table(world, "Calm", write=100)
    put_items(world, name, 10, user=False)
    arn, records = stream_records(world, name)
    start, at = settled(time.time())
    answer = read(world, lambda_event(arn, records, at), served(name))
    assert window_sum(world, name, "table:write", start) == 20
    assert [(r["status"], r["rate"]) for r in answer["dimensions"]] == [("none", 4.0)]
    assert world.target_min(name, "write") == 100
    assert surge_of(world, name) is None


def test_shards_add_up_and_the_sum_decides(world: World) -> None:
    # GIVEN a table at 10 write units whose writes arrive through two shards, each
    # carrying 30 units of one window: 6 units/s each, 12 together
    name = streamed_table(world, "Shards")
    put_items(world, name, 30, user=False)
    arn, records = stream_records(world, name)
    start, at = settled(time.time())
    first, second = records[:15], records[15:]
    # WHEN the first shard's batch is read: its own writes are below provisioned
    one = read(world, lambda_event(arn, first, at), served(name))
    assert [r["status"] for r in one["dimensions"]] == ["none"]
    assert world.target_min(name, "write") == 10
    # THEN the second shard's batch reads the sum of both, and raises
    two = read(world, lambda_event(arn, second, at), served(name))
    assert window_sum(world, name, "table:write", start) == 60
    assert [(r["status"], r["rate"], r.get("to")) for r in two["dimensions"]] == [
        ("applied", 12.0, 18)
    ]


@pytest.mark.parametrize("stored", ["-1", "-1000", "1e30"])
def test_a_window_sum_out_of_bounds_is_a_counted_failure(
    world: World, capsys: pytest.CaptureFixture[str], stored: str
) -> None:
    # GIVEN the two shards' batches of 30 units of one window; after the first is counted,
    # the window's sum in the state store is changed to a number out of bounds (below the
    # next batch's own 30 units, or above any dimension's)
    name = streamed_table(world, "Unsound" + str(len(stored)))
    put_items(world, name, 30, user=False)
    arn, records = stream_records(world, name)
    start, at = settled(time.time())
    first, second = records[:15], records[15:]
    read(world, lambda_event(arn, first, at), served(name))
    world.store_ddb.update_item(
        TableName=world.store.name,
        Key=stream_counts.counter_key(name, "table:write", start),
        UpdateExpression="SET u = :u",
        ExpressionAttributeValues={":u": {"N": stored}},
    )
    capsys.readouterr()
    # WHEN the second batch is read
    (row,) = read(world, lambda_event(arn, second, at), served(name))["dimensions"]
    # THEN it goes by its own units (6 a second: no raise) and counts the failure, which
    # alarms: the other shard's units are lost for that window
    assert (row["status"], row["rate"]) == ("none", 6.0)
    assert counted(capsys.readouterr().out, "StreamFailed") == 1
    assert world.target_min(name, "write") == 10


@pytest.mark.parametrize(
    "window", [{"N": str(10**12)}, {"S": "soon"}], ids=["far-ahead", "not-a-number"]
)
def test_a_slot_holding_a_window_that_cannot_be_is_taken_over_and_counted(
    world: World, capsys: pytest.CaptureFixture[str], window: dict[str, str]
) -> None:
    # GIVEN the two shards' batches of 30 units of one window; after the first is counted,
    # its slot in the state store is made to count a window that cannot be
    name = streamed_table(world, "Window" + next(iter(window)))
    put_items(world, name, 30, user=False)
    arn, records = stream_records(world, name)
    start, at = settled(time.time())
    read(world, lambda_event(arn, records[:15], at), served(name))
    world.store_ddb.update_item(
        TableName=world.store.name,
        Key=stream_counts.counter_key(name, "table:write", start),
        UpdateExpression="SET w = :w",
        ExpressionAttributeValues={":w": window},
    )
    capsys.readouterr()
    # WHEN the second batch is read
    (row,) = read(world, lambda_event(arn, records[15:], at), served(name))["dimensions"]
    # THEN it takes the slot over for its window (else every later window of that slot
    # was too late), goes by its own units, and counts the failure, which alarms
    assert (row["status"], row["rate"]) == ("none", 6.0)
    assert window_sum(world, name, "table:write", start) == 30
    assert counted(capsys.readouterr().out, "StreamFailed") == 1


def test_every_state_store_call_is_one_the_stream_readers_role_may_make(world: World) -> None:
    """dynalite checks no IAM: the calls two shards' batches make on the state store (their
    counters, the combiner, the surge's lease and hold) are recorded and checked against
    what the construct grants the reader (`SIGNALS_STORE_ACTIONS`)."""
    from constructs_pkg.fast_path._fast_path import SIGNALS_STORE_ACTIONS

    calls: set[str] = set()

    def note(**kwargs: Any) -> None:
        calls.add(kwargs["model"].name)

    name = streamed_table(world, "Granted")
    put_items(world, name, 30, user=False)
    arn, records = stream_records(world, name)
    _, at = settled(time.time())
    world.store_ddb.meta.events.register("before-call.dynamodb", note)
    try:
        read(world, lambda_event(arn, records[:15], at), served(name))
        (row,) = read(world, lambda_event(arn, records[15:], at), served(name))["dimensions"]
    finally:
        world.store_ddb.meta.events.unregister("before-call.dynamodb", note)
    assert row["status"] == "applied"  # a surge was made: its lease and hold written
    granted = {a.split(":", 1)[1] for a in SIGNALS_STORE_ACTIONS}
    made = calls - {"CreateTable", "DescribeTable"}  # the test's store, made on first use
    assert {"GetItem", "UpdateItem"} <= made <= granted, made


def test_ttl_deletions_are_left_out(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN a table's records: 5 puts, and 20 deletions by Time to Live in AWS's shape
    name = streamed_table(world, "Expiring", write=100)
    put_items(world, name, 5, user=False)
    arn, records = stream_records(world, name)
    ttl = [
        {
            "eventID": uuid.uuid4().hex,
            "eventName": "REMOVE",
            "eventVersion": "1.1",
            "eventSource": "aws:dynamodb",
            "awsRegion": "us-east-1",
            "dynamodb": {
                "ApproximateCreationDateTime": time.time(),
                "Keys": {"pk": {"S": f"old-{i}"}},
                "OldImage": {"pk": {"S": f"old-{i}"}, "note": {"S": NOTE * 3}},
                "SequenceNumber": str(10**20 + i),
                "SizeBytes": 4_500,
                "StreamViewType": "NEW_AND_OLD_IMAGES",
            },
            "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
        }
        for i in range(20)
    ]
    start, at = settled(time.time())
    read(world, lambda_event(arn, records + ttl, at), served(name))
    # THEN only the puts count: 10 units, not 10 + 20 x 5
    assert window_sum(world, name, "table:write", start) == 10
    assert counted(capsys.readouterr().out, "StreamTtlDeletions") == 20


# ------------------------------------------------------------------ untrusted input


def test_an_event_that_is_not_a_batch_of_records_is_refused(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    scopes = served("anything")
    events: list[object] = [{}, {"Records": "no"}, {"Records": [{}] * (MAX_RECORDS + 1)}, []]
    for event in events:
        assert read(world, event, scopes)["ok"] is False
    assert counted(capsys.readouterr().out, "StreamRecordsMalformed") == 4


def test_malformed_and_foreign_records_count_for_nothing(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    name = streamed_table(world, "Untrusted", write=100)
    put_items(world, name, 2, user=False)
    arn, records = stream_records(world, name)
    start, at = settled(time.time())
    event = lambda_event(arn, records, at)
    deep: dict[str, Any] = {"S": "x"}
    for _ in range(100):
        deep = {"M": {"a": deep}}
    bad = [
        {**event["Records"][0], "dynamodb": {"NewImage": {"pk": deep}}},  # nested too deep
        {**event["Records"][0], "eventSourceARN": "arn:aws:s3:::not-a-stream"},
        "not a record",
    ]
    other = arn.replace(name, f"Other-{world.run_id}")
    foreign = [{**event["Records"][0], "eventSourceARN": other}] * 3
    answer = read(world, {"Records": event["Records"] + bad + foreign}, served(name))
    out = capsys.readouterr().out
    assert counted(out, "StreamRecordsMalformed") == 3
    assert counted(out, "StreamRecordsNotServed") == 3
    assert window_sum(world, name, "table:write", start) == 4  # the two puts alone
    assert {r["status"] for r in answer["dimensions"]} == {"refused", "none"}


def test_a_failing_store_is_counted_and_fails_no_invocation(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    name = streamed_table(world, "NoStore")
    put_items(world, name, 30, user=False)
    arn, records = stream_records(world, name)
    _, at = settled(time.time())
    from ddb_capacity_runtime.aws.store import HoldStore

    missing = HoldStore(world.store_ddb, f"missing-{world.run_id}")
    answer = read_stream(
        lambda_event(arn, records, at), served(name), SETTINGS, clients=world.clients, store=missing
    )
    assert [r["status"] for r in answer["dimensions"]] == ["failed"]
    assert counted(capsys.readouterr().out, "StreamFailed") == 1
    assert world.target_min(name, "write") == 10


def test_one_table_failing_leaves_the_other_tables_of_the_batch_raised(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN one batch with the records of two served tables, one of which is deleted
    # before the batch is read (its DescribeTable fails)
    healthy, gone = streamed_table(world, "Healthy"), streamed_table(world, "Gone")
    put_items(world, healthy, 30, user=False)
    put_items(world, gone, 30, user=False)
    _, at = settled(time.time())
    events = [lambda_event(*stream_records(world, name), at) for name in (healthy, gone)]
    world.ddb.delete_table(TableName=gone)
    batch = {"Records": events[0]["Records"] + events[1]["Records"]}
    # WHEN the reader takes it
    answer = read(world, batch, served(healthy, gone))
    # THEN the deleted table's part fails alone, counted, and the other table is raised
    rows = {r["table"]: r for r in answer["dimensions"]}
    assert rows[gone]["status"] == "failed"
    assert (rows[healthy]["status"], rows[healthy].get("to")) == ("applied", 18)
    assert world.target_min(healthy, "write") == 18
    assert counted(capsys.readouterr().out, "StreamFailed") == 1


def test_one_tables_busy_leases_leave_the_other_tables_of_the_batch_their_time(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN one batch with the records of two served tables over their capacity, the first
    # of which has both its dimensions' leases taken by someone else, and an invocation
    # with 8 s left
    clock = Clock()
    store = dataclasses.replace(world.store, clock=clock, sleep=clock.sleep)
    busy, healthy = streamed_table(world, "BusyStream"), streamed_table(world, "CalmStream")
    world.target(busy, "write", 10, 1_000, index="byUser")
    put_items(world, busy, 30)
    put_items(world, healthy, 30, user=False)
    _, at = settled(clock())
    events = [lambda_event(*stream_records(world, name), at) for name in (busy, healthy)]
    batch = {"Records": events[0]["Records"] + events[1]["Records"]}
    start = clock()
    capsys.readouterr()
    # WHEN the reader takes it
    with store.lease(busy, None, "write", deadline=clock()):
        with store.lease(busy, "byUser", "write", deadline=clock()):
            answer = read_stream(
                batch,
                served(busy, healthy, indexes=("byUser",)),
                SETTINGS,
                clients=world.clients,
                store=store,
                clock=clock,
                sleep=clock.sleep,
                remaining_ms=lambda: int((start + 8 - clock()) * 1_000),
            )
    # THEN it ends before the time the invocation keeps in hand: the busy table waited its
    # share, its dimensions deferred to the next batch
    assert clock() - start <= 8 - RESERVE_MS / 1_000
    rows = [r for r in answer["dimensions"] if r["table"] == busy]
    assert [r["status"] for r in rows] == ["deferred", "deferred"]
    assert counted(capsys.readouterr().out, "SurgesDeferred") == 2
    # AND each of its dimensions' records is counted all the same (a stream gives no
    # record twice: the next batch decides on sums that hold them)
    sums = world.store_ddb.scan(TableName=world.store.name)["Items"]
    counters = [i["sk"]["S"] for i in sums if i["pk"]["S"] == busy and "u" in i]
    for dimension in ("table:write", "index/byUser:write"):
        assert any(sk.endswith(f":{dimension}") for sk in counters), (dimension, counters)
    # AND the other table still got its turn: raised
    (row,) = [r for r in answer["dimensions"] if r["table"] == healthy]
    assert (row["status"], row.get("to")) == ("applied", 18)


# ------------------------------------------------------------------ the counters


def test_a_window_older_than_the_ring_is_too_late(world: World) -> None:
    ddb, store = world.store_ddb, world.store.name
    table = world.name("Ring")
    now = int(time.time()) // WINDOW_SECONDS * WINDOW_SECONDS
    old = now - stream_counts.SLOTS * WINDOW_SECONDS  # the same slot, a ring earlier
    assert stream_counts.add(ddb, store, table, "table:write", now, 5) == Added(5)
    assert stream_counts.add(ddb, store, table, "table:write", old, 7) is None
    assert stream_counts.add(ddb, store, table, "table:write", now, 2) == Added(7)
    # and a newer window takes its slot over from an older one
    newer = now + stream_counts.SLOTS * WINDOW_SECONDS
    assert stream_counts.add(ddb, store, table, "table:write", newer, 3) == Added(3)


@pytest.mark.parametrize("rings", [1, 2, 50])
def test_a_lagging_shard_never_takes_a_current_window_over(world: World, rings: int) -> None:
    # GIVEN two shards' batches counted in the current window (a record may reach the reader
    # up to the event source's maximum record age late: StreamSignal allows an hour)
    ddb, store = world.store_ddb, world.store.name
    table = world.name("Lagging")
    now = int(time.time()) // WINDOW_SECONDS * WINDOW_SECONDS
    for units, batch in ((500, "b1"), (400, "b2")):
        stream_counts.add(ddb, store, table, "table:write", now, units, batch)
    # WHEN a lagging shard's batch of the same slot `rings` rings earlier arrives
    late = now - rings * stream_counts.SLOTS * WINDOW_SECONDS
    answer = stream_counts.add(ddb, store, table, "table:write", late, 7, "b3")
    # THEN it is too late, and the current window keeps every shard's units
    assert answer is None
    assert stream_counts.add(ddb, store, table, "table:write", now, 100, "b4") == Added(1_000)


def test_shards_racing_on_a_slot_that_cannot_be_lose_no_units(world: World) -> None:
    # GIVEN a slot holding a window start from the far future (not a sound one)
    ddb, store = world.store_ddb, world.store.name
    table = world.name("Racing")
    now = int(time.time()) // WINDOW_SECONDS * WINDOW_SECONDS
    key = stream_counts.counter_key(table, "table:write", now)
    ddb.put_item(TableName=store, Item={**key, "w": {"N": str(10**12)}, "u": {"N": "3"}})
    # WHEN one shard's batch takes it over just before another, having failed to add to it
    # twice, reads it to take it over too (its third read of the slot)
    first: list[Any] = []
    reads = [0]

    def other_shard(params: dict[str, Any], **_: Any) -> None:
        if params.get("Key") == key and not first:
            reads[0] += 1
            if reads[0] == 3:
                first.append(stream_counts.add(ddb, store, table, "table:write", now, 500, "bA"))

    ddb.meta.events.register("before-parameter-build.dynamodb.GetItem", other_shard)
    try:
        second = stream_counts.add(ddb, store, table, "table:write", now, 400, "bB")
    finally:
        ddb.meta.events.unregister("before-parameter-build.dynamodb.GetItem", other_shard)
    # THEN the first counts a failure (the slot was not sound), and the second adds its
    # units to the window the first opened: none are lost
    assert first == [Added(500, unsound=f"its slot counted a window that cannot be ('{10**12}')")]
    assert second == Added(900)


def test_shards_adding_at_once_lose_nothing(world: World) -> None:
    # GIVEN a slot that counts an older window, and 8 shards adding to a new one at once
    ddb, store = world.store_ddb, world.store.name
    table = world.name("Race")
    now = int(time.time()) // WINDOW_SECONDS * WINDOW_SECONDS
    stream_counts.add(ddb, store, table, "table:write", now - stream_counts.SLOTS * 10, 99)
    errors: list[BaseException] = []

    def go() -> None:
        try:
            stream_counts.add(ddb, store, table, "table:write", now, 1)
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=go) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    # THEN the slot counts the new window, and every shard's unit is in it
    assert errors == []
    assert window_sum(world, table, "table:write", now) == 8


def test_a_window_of_many_batches_keeps_its_counter_small(world: World) -> None:
    # GIVEN a window that has counted as many batches as its counter keeps the ids of
    ddb, store = world.store_ddb, world.store.name
    table = world.name("Busy")
    now = int(time.time()) // WINDOW_SECONDS * WINDOW_SECONDS
    cap = stream_counts.MAX_BATCH_IDS
    for n in range(cap):
        assert stream_counts.add(ddb, store, table, "table:write", now, 1, f"{n:032x}") == Added(
            n + 1
        )
    # WHEN more batches come in the same window (a stream of hundreds of shards)
    extra = [
        stream_counts.add(ddb, store, table, "table:write", now, 2, f"x{n:031x}") for n in range(5)
    ]
    # THEN each is added without its id, and said so: no batch's units are lost
    assert extra == [Added(cap + 2 * (n + 1), unguarded=True) for n in range(5)]
    # AND the counter keeps no more ids than its cap: the item stays far below 400 KB
    key = stream_counts.counter_key(table, "table:write", now)
    item = ddb.get_item(TableName=store, Key=key, ConsistentRead=True)["Item"]
    assert len(item["b"]["SS"]) == cap
    assert len(json.dumps(item)) < 10_000
    # AND a batch counted before the ids were full is still known on its replay
    replay = stream_counts.add(ddb, store, table, "table:write", now, 1, f"{0:032x}")
    assert replay is not None and replay.replayed
    # AND the next window starts its ids afresh
    later = now + stream_counts.SLOTS * WINDOW_SECONDS
    assert stream_counts.add(ddb, store, table, "table:write", later, 3, "y" * 32) == Added(3)
