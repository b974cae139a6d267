"""The sharded tick (:mod:`ddb_capacity_runtime.scaler.shard` and the handler's
``coordinate`` / ``run_batch``) against the moto server: the scheduled invocation sends
batches to a real (moto) SQS queue, and the batches are run as the batch function runs
them, several at the same time, with their own clients, one of them faulty."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ddb_capacity_runtime.aws.clients import Clients
from ddb_capacity_runtime.aws.table_calls import account_table_quota
from ddb_capacity_runtime.core.settings import ScalerConfig
from ddb_capacity_runtime.scaler import handler
from ddb_capacity_runtime.scaler import shard as shard_module
from ddb_capacity_runtime.scaler.handler import coordinate, run_batch
from ddb_capacity_runtime.scaler.shard import Batch, BatchError, parse_batch, shard
from ddb_capacity_runtime.scaler.tick import TickFailed
from ddb_capacity_tools.local_aws import recorded_events
from tests.support.faults import (
    NO_TABLES,
    client_error,
    fail_before,
    minute_queries,
    throttle_first,
    unsound_tagging,
)
from tests.support.moto_world import TAG_KEY, World
from tests.support.sharded_tick import (
    config,
    emf_records,
    own_clients,
    received,
    throttled,
    ticked,
)
from tests.support.sharded_tick import queue as queue  # noqa: F401 (fixture)
from tests.support.sharded_tick import world as world  # noqa: F401 (fixture)

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


@pytest.fixture
def moto_world(aws_client: Any) -> Iterator[World]:
    """A world whose state store is in moto too: for the batch function's entry point,
    which makes its own clients from the environment."""
    made = World(aws_client)
    yield made
    made.close()


# ------------------------------------------------------------------ the message


def test_a_batch_its_quotas_and_reservation_share_read_back_as_sent() -> None:
    batch = Batch(T0, T0 + timedelta(minutes=2), 2, 3, ("Orders", "Carts"), (60_000, 40_000))
    assert parse_batch(batch.to_message(), T0, 2) == batch
    shared = Batch(T0, T0 + timedelta(minutes=2), 2, 3, ("Orders",), (50_000, 40_000), (0, 301))
    assert parse_batch(shared.to_message(), T0, 2) == shared


def test_a_message_of_an_earlier_scheduled_function_gives_its_one_quota_to_both() -> None:
    # GIVEN a message as the scheduled function sent it before the quotas were per dimension
    earlier = {**GOOD, "table_quota": 60_000}
    # THEN it is read, its quota the read and the write one, and no reservation share
    batch = parse_batch(json.dumps(earlier), T0 + timedelta(minutes=1), 2)
    assert (batch.quotas, batch.reserved) == ((60_000, 60_000), None)


def test_a_batch_reads_back_as_it_was_sent() -> None:
    batch = Batch(T0, T0 + timedelta(minutes=2), 2, 3, ("Orders", "Users"))
    assert parse_batch(batch.to_message(), T0, 2) == batch


def test_tables_are_cut_in_name_order_into_batches_of_the_size_asked() -> None:
    found = [f"t{i:03d}" for i in range(10, 0, -1)]
    batches = shard(found, 4, T0, T0 + timedelta(minutes=2))
    assert [list(b.tables) for b in batches] == [
        ["t001", "t002", "t003", "t004"],
        ["t005", "t006", "t007", "t008"],
        ["t009", "t010"],
    ]
    assert [(b.number, b.of) for b in batches] == [(1, 3), (2, 3), (3, 3)]


GOOD = json.loads(Batch(T0, T0 + timedelta(minutes=2), 1, 1, ("Orders",)).to_message())


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("version", 2, "version must be 1; got 2"),
        ("version", True, "version must be 1; got True"),
        ("tick", "yesterday", "tick must be an ISO 8601 time"),
        ("tick", "2026-11-22T12:02:30+00:00", "tick must not be later than now"),
        ("deadline", "9999-12-31T23:59:59-14:00", "not a batch \\(OverflowError"),
        ("deadline", "2026-11-22T12:02:00", "deadline must be an ISO 8601 time with its UTC"),
        ("deadline", "2026-11-22T11:59:00+00:00", "deadline must be after tick"),
        ("deadline", "2026-11-22T12:00:00+00:00", "deadline must be after tick"),
        (
            "deadline",
            "2026-11-22T12:03:00+00:00",
            "deadline must be after tick and at most one tick \\(0:02:00\\)",
        ),
        ("of", 0, "of must be a whole number from 1"),
        ("number", 2, "number must be a whole number from 1 to 1; got 2"),
        ("number", True, "number must be a whole number"),
        ("tables", [], "tables must be a list of 1 to 500 table names; got \\[\\]"),
        ("tables", {"Orders": None}, "tables must be a list"),
        ("tables", ["a b c"], "a table name must be 3 to 255 letters"),
        ("tables", ["Orders", "Orders"], "tables must not repeat a name"),
        ("tables", [f"t{i:04d}" for i in range(501)], "tables must be a list of 1 to 500"),
        ("table_quota", 0, "table_quota must be a whole number from 1 to 1000000; got 0"),
        ("table_quota", "40000", "table_quota must be a whole number"),
        ("table_quota", None, "table_quota must be a whole number"),
        ("quotas", 40000, "quotas must be a list of a read and a write value; got 40000"),
        ("quotas", [40000], "quotas must be a list of a read and a write value"),
        ("quotas", [40000, 0], "quotas must be a whole number from 1 to 1000000; got 0"),
        ("quotas", [True, 1], "quotas must be a whole number from 1"),
        ("reserved", [100, -1], "reserved must be a whole number from 0 to 10000000; got -1"),
        ("reserved", [100, 10**8], "reserved must be a whole number from 0 to 10000000"),
        ("reserved", None, "reserved must be a list of a read and a write value; got None"),
    ],
)
def test_a_message_that_is_not_a_batch_is_refused_naming_the_field(
    field: str, value: Any, says: str
) -> None:
    # received at T0 + 1 minute, a 2-minute tick
    with pytest.raises(BatchError, match=f"batch message: {says}"):
        parse_batch(json.dumps({**GOOD, field: value}), T0 + timedelta(minutes=1), 2)


@pytest.mark.parametrize(
    "body",
    [
        None,
        "not json",
        "[1]",
        json.dumps({"version": 1}),
        '{"version": ' + "9" * 5000 + "}",  # more digits than Python converts
        "[" * 100_000 + "]" * 100_000,  # nested deeper than the parser recurses
        "x" * 300_000,  # over SQS's 256 KiB
    ],
)
def test_a_body_that_is_not_a_batch_object_is_refused(body: Any) -> None:
    with pytest.raises(BatchError, match="batch message: "):
        parse_batch(body, T0, 2)


# ------------------------------------------------------------------ the coordinator


def test_above_the_threshold_the_tick_sends_its_tables_in_batches(
    world: World, aws_client: Any, queue: str
) -> None:
    # GIVEN 7 tagged tables, a threshold of 3 tables and batches of 3
    names = sorted(world.table(f"t{i}", 10, 10) for i in range(7))
    cfg = config(world, SCALER_SHARD_ABOVE_TABLES="3", SCALER_TABLES_PER_BATCH="3")
    out = io.StringIO()
    # WHEN the scheduled invocation ticks
    summary = coordinate(
        cfg, own_clients(aws_client), world.now, store=world.store, queue_url=queue, out=out
    )
    # THEN it decided nothing itself, and sent 3 batches holding every table once, in name
    # order, each due before the next tick
    assert (summary.batches, summary.tables, summary.changes) == (3, 7, [])
    messages = received(aws_client, queue)
    batches = sorted(
        (parse_batch(m["body"], world.now, 2) for m in messages), key=lambda b: b.number
    )
    assert [list(b.tables) for b in batches] == [names[0:3], names[3:6], names[6:7]]
    assert {b.deadline for b in batches} == {world.now + timedelta(minutes=2, seconds=-20)}
    # names only: a batch reads its tables' tags itself, never from a message
    assert all("Tags" not in m["body"] and TAG_KEY not in m["body"] for m in messages)
    (record,) = emf_records(out)
    assert (record["TablesFound"], record["BatchesSent"], record["SharedFailures"]) == (7, 3, 0)
    # the scheduled invocation's record is its deployment's (dimension StateStore: its
    # state store), as the tick's own record is
    assert record["StateStore"] == world.store.name
    assert [g["Dimensions"] for g in record["_aws"]["CloudWatchMetrics"]] == [[["StateStore"]]]
    assert world.throughput(names[0]) == (10, 10)


def _describe_limits_calls(clients: Clients) -> list[int]:
    calls: list[int] = []
    clients.dynamodb.meta.events.register(
        "before-call.dynamodb.DescribeLimits", lambda seen=calls, **_: seen.append(1)
    )
    return calls


def _seven_in_threes(world: World, aws_client: Any) -> tuple[ScalerConfig, Clients]:
    """7 tables, to be sent in 3 batches, by a scaler configured with a table quota below
    the account's (moto's DescribeLimits answers 10,000), and the scheduled invocation's
    clients."""
    for i in range(7):
        world.table(f"t{i}", 10, 10)
    cfg = config(
        world,
        SCALER_SHARD_ABOVE_TABLES="3",
        SCALER_TABLES_PER_BATCH="3",
        CAPACITY_TABLE_QUOTA="5000",
    )
    return cfg, own_clients(aws_client)


def test_the_tick_reads_the_table_quota_once_for_all_its_batches(
    world: World, aws_client: Any, queue: str
) -> None:
    # GIVEN 7 tables sent in 3 batches
    cfg, clients = _seven_in_threes(world, aws_client)
    calls = _describe_limits_calls(clients)
    coordinate(cfg, clients, world.now, store=world.store, queue_url=queue, out=io.StringIO())
    # THEN the tick read DescribeLimits once (DynamoDB throttles it past one call a minute)
    # and every batch carries what it read
    assert len(calls) == 1
    quotas = account_table_quota(aws_client("dynamodb"), cfg.table_quota)
    assert min(quotas) > cfg.table_quota == 5_000  # the account's, above the configured one
    messages = [parse_batch(m["body"], world.now, 2) for m in received(aws_client, queue)]
    assert len(messages) == 3 and {b.quotas for b in messages} == {quotas}
    # WHEN a batch carrying it is ticked THEN it makes no DescribeLimits call of its own
    batch_clients = own_clients(aws_client)
    batch_calls = _describe_limits_calls(batch_clients)
    assert ticked(world, batch_clients, messages[0]) is None
    assert batch_calls == []
    # a batch of an earlier version (no quota in it) reads it itself
    earlier = Batch(world.now, messages[0].deadline, 1, 1, messages[0].tables)
    assert ticked(world, batch_clients, earlier) is None
    assert len(batch_calls) == 1


def test_a_table_quota_the_tick_cannot_read_is_a_counted_shared_failure(
    world: World, aws_client: Any, queue: str
) -> None:
    # GIVEN 7 tables to send in batches, and DescribeLimits denied
    cfg, clients = _seven_in_threes(world, aws_client)
    denied = client_error("AccessDeniedException", "DescribeLimits")
    fail_before(clients.dynamodb, "DescribeLimits", lambda _: True, denied)
    out = io.StringIO()
    summary = coordinate(cfg, clients, world.now, store=world.store, queue_url=queue, out=out)
    # THEN the batches are sent with the configured quota, and the failure is counted
    assert summary.batches == 3
    [failure] = summary.shared_failures
    assert failure.startswith("dynamodb:DescribeLimits: AccessDeniedException")
    assert "the configured table quota (5,000) bounds this tick" in failure
    (record,) = emf_records(out)
    assert record["SharedFailures"] == 1
    messages = [parse_batch(m["body"], world.now, 2) for m in received(aws_client, queue)]
    assert {b.quotas for b in messages} == {(cfg.table_quota, cfg.table_quota)}


def test_a_throttled_table_quota_read_is_counted_as_the_ticks_throttles(
    world: World, aws_client: Any, queue: str
) -> None:
    # GIVEN tables to send in batches, and DescribeLimits' first two attempts throttled, as
    # AWS answers past its rate (botocore retries them)
    cfg, clients = _seven_in_threes(world, aws_client)
    left = throttle_first(clients.dynamodb, "DescribeLimits", 2)
    out = io.StringIO()
    coordinate(cfg, clients, world.now, store=world.store, queue_url=queue, out=out)
    # THEN the read succeeded on its third attempt, and the two throttled ones are counted
    (record,) = emf_records(out)
    assert left == [0]
    assert record["SharedFailures"] == 0 and record["ControlPlaneThrottles"] == 2


def test_at_the_threshold_or_without_a_queue_the_tick_runs_in_place(
    world: World, aws_client: Any, queue: str
) -> None:
    # GIVEN 3 tables (a busy one, whose minutes CloudWatch has delivered, and 2 idle ones)
    # and a threshold of 3
    busy, idle = busy_and_idle(world, 0)
    other = world.table("idle", 200, 200)
    cfg = config(world, SCALER_SHARD_ABOVE_TABLES="3")
    # WHEN the scheduled invocation ticks, with the queue and without one
    for url in (queue, None):
        clients = own_clients(aws_client)
        pages: list[int] = []
        clients.tagging.meta.events.register(
            "before-call.resource-groups-tagging-api.GetResources",
            lambda seen=pages, **_: seen.append(1),
        )
        limits = _describe_limits_calls(clients)
        summary = coordinate(cfg, clients, world.now, store=world.store, queue_url=url)
        assert (summary.batches, summary.tables) == (0, 3)
        assert len(pages) == 1  # tag discovery once, whoever runs it
        assert len(limits) == 1  # and the table quota
    # THEN the tick ran here (twice): nothing was sent, the busy table raised, the idle
    # ones lowered
    assert received(aws_client, queue) == []
    assert world.throughput(busy)[1] > 215
    assert world.throughput(idle) == world.throughput(other) == (5, 5)


def test_a_batch_not_sent_is_a_counted_shared_failure(
    world: World, aws_client: Any, queue: str
) -> None:
    # GIVEN 4 tables in batches of 2, and SQS refusing every send
    for i in range(4):
        world.table(f"t{i}", 10, 10)
    clients = own_clients(aws_client)
    error = client_error("AccessDenied", "SendMessageBatch")
    fail_before(clients.sqs, "SendMessageBatch", lambda _: True, error)
    cfg = config(world, SCALER_SHARD_ABOVE_TABLES="1", SCALER_TABLES_PER_BATCH="2")
    out = io.StringIO()
    # WHEN the scheduled invocation ticks
    summary = coordinate(cfg, clients, world.now, store=world.store, queue_url=queue, out=out)
    # THEN each batch not sent is a shared failure, counted, and the invocation fails
    assert summary.batches == 0
    assert [f.split(":")[0] for f in summary.shared_failures] == [
        "batch 1 of 2 of the tick of " + f"{world.now:%Y-%m-%dT%H}",
        "batch 2 of 2 of the tick of " + f"{world.now:%Y-%m-%dT%H}",
    ]
    assert emf_records(out)[0]["SharedFailures"] == 2
    with pytest.raises(TickFailed, match="2 shared call"):
        handler.complete(summary)


def test_a_batch_the_answer_does_not_list_as_sent_is_a_counted_shared_failure(
    world: World, aws_client: Any, queue: str
) -> None:
    # GIVEN 4 tables in batches of 2, and SendMessageBatch answers that list the second
    # batch neither as sent nor as failed
    for i in range(4):
        world.table(f"t{i}", 10, 10)
    clients = own_clients(aws_client)

    def silent(parsed: dict[str, Any], **_: Any) -> None:
        parsed["Successful"] = [e for e in parsed.get("Successful", []) if e["Id"] != "2"]

    clients.sqs.meta.events.register("after-call.sqs.SendMessageBatch", silent)
    cfg = config(world, SCALER_SHARD_ABOVE_TABLES="1", SCALER_TABLES_PER_BATCH="2")
    out = io.StringIO()
    # WHEN the scheduled invocation ticks
    summary = coordinate(cfg, clients, world.now, store=world.store, queue_url=queue, out=out)
    # THEN that batch is taken for not sent: a shared failure, counted
    assert summary.batches == 1
    assert summary.shared_failures == [
        "batch 2 of 2: not sent: the answer does not list it as sent"
    ]
    assert emf_records(out)[0]["SharedFailures"] == 1


# ------------------------------------------------------------------ the batches


def busy_and_idle(world: World, n: int) -> tuple[str, str]:
    """A table throttled at 100 writes (raised to 215) and an idle one (lowered to 5), next
    to each other in name order."""
    busy = throttled(world, f"p{n}-busy")
    idle = world.table(f"p{n}-idle", 200, 200)
    return busy, idle


def test_batches_run_at_once_each_its_own_fault_domain(
    world: World, aws_client: Any, queue: str
) -> None:
    # GIVEN 3 batches of a busy and an idle table each (the busy ones under scalable
    # targets whose minimum the scaler raises, with its memory in the state store)
    pairs = [busy_and_idle(world, n) for n in range(3)]
    for busy, _ in pairs:
        world.target(busy, "write", 100, 10_000)
    cfg = config(world, SCALER_SHARD_ABOVE_TABLES="1", SCALER_TABLES_PER_BATCH="2")
    coordinate(cfg, own_clients(aws_client), world.now, store=world.store, queue_url=queue)
    records = received(aws_client, queue)
    by_table = {t: r for r in records for t in parse_batch(r["body"], world.now, 2).tables}
    # and the batch of the second pair meets a GetMetricData that keeps failing
    faulty = by_table[pairs[1][0]]
    clients = {id(r): own_clients(aws_client) for r in records}
    error = client_error("ServiceUnavailable", "GetMetricData")
    # the tick's own minutes (the autopilot's hourly history, read at some minutes of the
    # hour, is another shared call)
    fail_before(clients[id(faulty)].cloudwatch, "GetMetricData", minute_queries, error)
    outs = {id(r): io.StringIO() for r in records}

    def run(record: dict[str, Any]) -> str | None:
        return run_batch(
            cfg,
            clients[id(record)],
            record,
            store=world.store,
            now=lambda: world.now,
            out=outs[id(record)],
        )

    # WHEN the batch function runs the 3 batches at the same time
    with recorded_events(), ThreadPoolExecutor(3) as pool:
        results = dict(zip(map(id, records), pool.map(run, records), strict=True))
    # THEN the faulty batch failed alone: counted, its tables left as they were
    assert [r for r in records if results[id(r)] is not None] == [faulty]
    assert "GetMetricData" in str(results[id(faulty)])
    tick_record = [x for x in emf_records(outs[id(faulty)]) if "TablesManaged" in x]
    assert tick_record[0]["SharedFailures"] == 1
    assert world.throughput(pairs[1][0]) == (100, 100)
    assert world.throughput(pairs[1][1]) == (200, 200)
    # and every other batch decided its tables as an unsharded tick would: raises (the
    # target's minimum, remembered in the state store) and decreases
    for busy, idle in (pairs[0], pairs[2]):
        assert world.target_min(busy, "write") == 215
        assert world.memory(busy, "write") == "100:215"
        assert world.throughput(idle) == (5, 5)


def test_unsound_entries_of_the_discovery_that_shards_are_counted(
    world: World, aws_client: Any, queue: str
) -> None:
    # GIVEN tag discovery answering entries that name no table and one table's tags unsound
    busy, idle = busy_and_idle(world, 0)
    odd = world.table("odd", 300, 300)
    clients = own_clients(aws_client)
    unsound_tagging(world, odd, NO_TABLES, clients.tagging)
    cfg = config(world, SCALER_SHARD_ABOVE_TABLES="1", SCALER_TABLES_PER_BATCH="2")
    # WHEN the scheduled invocation shards the tables it found
    out = io.StringIO()
    summary = coordinate(cfg, clients, world.now, store=world.store, queue_url=queue, out=out)
    # THEN every table is sent in a batch, and each unsound entry is a counted shared failure
    sent = [
        t for r in received(aws_client, queue) for t in parse_batch(r["body"], world.now, 2).tables
    ]
    assert sorted(sent) == sorted([busy, idle, odd])
    assert len(summary.shared_failures) == 4
    assert all(f.startswith("tag discovery: GetResources") for f in summary.shared_failures)
    (record,) = [r for r in emf_records(out) if "BatchesSent" in r]
    assert record["SharedFailures"] == 4 and record["BatchesSent"] == 2


def test_a_batch_received_after_its_deadline_is_counted_and_not_ticked(
    world: World, aws_client: Any
) -> None:
    # GIVEN a batch whose tick's interval has passed
    idle = world.table("idle", 200, 200)
    batch = Batch(world.now - timedelta(minutes=2), world.now, 1, 1, (idle,))
    out = io.StringIO()
    # WHEN the batch function receives it
    with recorded_events() as events:
        reason = ticked(world, own_clients(aws_client), batch, out)
    # THEN nothing of it was decided; it is a failure, counted as a late batch
    assert reason is not None and "after its deadline" in reason
    assert world.throughput(idle) == (200, 200)
    (record,) = emf_records(out)
    assert (record["Failures"], record["LateBatches"], record["StateStore"]) == (
        1,
        1,
        world.store.name,
    )
    assert [e["event"] for e in events] == ["batch-late"]


def test_no_table_is_acted_on_once_the_deadline_passes(world: World, aws_client: Any) -> None:
    # GIVEN a batch of 3 idle tables (and a busy one, whose minutes CloudWatch has
    # delivered), and a clock that reaches the deadline after the first two
    busy, _ = busy_and_idle(world, 0)
    names = sorted(world.table(f"q{i}", 200, 200) for i in range(3))
    names = [busy, *names]
    batch = Batch(world.now, world.now + timedelta(minutes=2), 1, 1, tuple(names))
    # (the clock is read when the batch starts, before each table, and before each call
    # that changes one: the DescribeTable and UpdateTable of each of the first two, and
    # twice for each lease a decrease of the second one takes: before it, and for its wait)
    ticks = iter([world.now] * 11 + [batch.deadline] * 10)
    # WHEN the batch function runs it
    reason = ticked(world, own_clients(aws_client), batch, now=lambda: next(ticks))
    # THEN the first two tables were decided; the others are failures, left for the next
    # tick
    assert [world.throughput(n) for n in names] == [(100, 215), (5, 5), (200, 200), (200, 200)]
    assert reason is not None and reason.count("reached its deadline") == 2


def test_a_record_that_is_not_a_batch_is_counted_and_the_others_still_run(
    moto_world: World, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    world = moto_world
    # GIVEN the batch function's environment, a good batch and a record that is not one
    for key, value in aws_env.items():
        monkeypatch.setenv(key, value)
    for key, value in config(world).to_env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("CAPACITY_HOLDS_TABLE", world.store.name)
    busy, idle = busy_and_idle(world, 0)
    now = datetime.now(UTC)
    good = Batch(now, now + timedelta(minutes=2), 1, 1, (busy, idle)).to_message()
    event = {"Records": [{"body": "{not json"}, {"body": good}]}
    # WHEN the batch function's entry point runs
    with recorded_events() as events, pytest.raises(TickFailed, match="1 of 2 batch"):
        handler.batch_handler(event, None)
    # THEN the good batch was ticked, and the bad record refused, named and counted
    assert world.throughput(busy) == (100, 215)
    (refused,) = [e for e in events if e["event"] == "batch-refused"]
    assert "not JSON" in refused["reason"]


def test_a_batch_makes_one_getmetricdata_call_per_500_metric_queries(
    world: World, aws_client: Any
) -> None:
    # GIVEN a batch of 45 tables with a GSI each: 45 x 4 dimensions = 180 consumed-capacity
    # queries, one call; then of 70 tables: 280 queries, one call; then of all 130: 520
    # queries, two calls (at a tick that reads no throttles by the clock)
    world.off_the_periodic_read()
    names = [world.table(f"t{i:02d}", 10, 10, gsi=(10, 10)) for i in range(130)]
    for size in (45, 70, 130):
        clients = own_clients(aws_client)
        calls: list[int] = []
        clients.cloudwatch.meta.events.register(
            "before-call.monitoring.GetMetricData", lambda seen=calls, **_: seen.append(1)
        )
        batch = Batch(world.now, world.now + timedelta(minutes=2), 1, 1, tuple(names[:size]))
        ticked(world, clients, batch, SCALER_MODE="reactive")
        # THEN (no dimension near its capacity nor lowered: no throttles read, no causes)
        assert len(calls) == math.ceil(size * 4 / 500)


def test_a_table_found_updating_in_a_batch_is_skipped_and_counted(
    world: World, aws_client: Any
) -> None:
    # GIVEN a batch with a table DynamoDB reports UPDATING
    busy, idle = busy_and_idle(world, 0)
    world.ddb.meta.events.register(
        "after-call.dynamodb.DescribeTable",
        lambda parsed, **_: (
            parsed["Table"].update(TableStatus="UPDATING")
            if parsed.get("Table", {}).get("TableName") == idle
            else None
        ),
    )
    batch = Batch(world.now, world.now + timedelta(minutes=2), 1, 1, (busy, idle))
    out = io.StringIO()
    clients = Clients(world.ddb, world.aas, world.cw, world.clients.tagging)
    # WHEN the batch function runs it
    reason = ticked(world, clients, batch, out)
    # THEN the UPDATING table is skipped and counted (its alarm sees a sharded table too);
    # the other is decided
    assert reason is None
    (record,) = [r for r in emf_records(out) if r.get("TableName") == idle]
    assert record["Updating"] == 1
    assert world.throughput(busy) == (100, 215)


ODD_DESCRIPTIONS: dict[str, Callable[[dict[str, Any]], object]] = {
    "a GSI without its name": lambda t: [g.pop("IndexName") for g in t["GlobalSecondaryIndexes"]],
    "GSIs that are not a list": lambda t: t.update(GlobalSecondaryIndexes={"IndexName": "x"}),
    "no TableArn": lambda t: t.pop("TableArn"),
    "another table's ARN": lambda t: t.update(TableArn=t["TableArn"] + "-other"),
}


@pytest.mark.parametrize("odd", ODD_DESCRIPTIONS)
def test_an_odd_description_in_a_batch_fails_its_table_alone(
    world: World, aws_client: Any, odd: str
) -> None:
    # GIVEN a batch of a throttled table, an idle one, and one whose DescribeTable answer
    # is odd in what the batch reads of all its tables at once (the GSIs' names for the
    # scalable targets, the ARN for the tags)
    busy, idle = busy_and_idle(world, 0)
    name = world.table("p0-odd", 100, 100, gsi=(50, 50))
    edit = ODD_DESCRIPTIONS[odd]
    world.ddb.meta.events.register(
        "after-call.dynamodb.DescribeTable",
        lambda parsed, **_: (
            edit(parsed["Table"]) if parsed.get("Table", {}).get("TableName") == name else None
        ),
    )
    batch = Batch(world.now, world.now + timedelta(minutes=2), 1, 1, (busy, idle, name))
    out = io.StringIO()
    clients = Clients(world.ddb, world.aas, world.cw, world.clients.tagging)
    # WHEN the batch function runs it
    reason = ticked(world, clients, batch, out)
    # THEN the odd table fails alone, counted and named; the others are decided
    assert reason is not None and name in reason and "DescribeTable" in reason
    (record,) = [r for r in emf_records(out) if "TablesManaged" in r]
    assert (record["Failures"], record["SharedFailures"]) == (1, 0)
    assert world.throughput(busy) == (100, 215)
    assert world.throughput(idle) == (5, 5)
    assert world.throughput(name) == (100, 100)


def test_a_run_keeps_the_time_it_was_scheduled_for() -> None:
    now = datetime(2026, 11, 22, 12, 1, 30, tzinfo=UTC)
    assert handler.scheduled_time({"time": "2026-11-22T12:00:00Z"}, now, 2) == T0
    # nothing sound, or outside the tick before now: the clock's own time
    for event in ({}, {"time": "yesterday"}, {"time": "2026-11-22T11:50:00Z"}, {"time": 5}):
        assert handler.scheduled_time(event, now, 2) == now
    assert handler.scheduled_time({"time": "2026-11-22T12:05:00Z"}, now, 2) == now


def test_a_batch_reads_its_tables_tags_and_never_takes_one_the_scaler_does_not_manage(
    world: World, aws_client: Any
) -> None:
    # GIVEN a batch naming a tagged idle table and an idle one tagged otherwise (neither
    # listed nor carrying the discovery tag: a message cannot put it under the scaler)
    busy, idle = busy_and_idle(world, 0)
    other = world.table("other", 200, 200, tagged=False, tags={"team": "payments"})
    batch = Batch(world.now, world.now + timedelta(minutes=2), 1, 1, (busy, idle, other))
    clients = own_clients(aws_client)
    per_table: list[int] = []
    clients.dynamodb.meta.events.register(
        "before-call.dynamodb.ListTagsOfResource", lambda seen=per_table, **_: seen.append(1)
    )
    # WHEN the batch function runs it
    with recorded_events() as events:
        reason = ticked(world, clients, batch)
    # THEN the tags came from the tagging API (one call for the batch, none a table), the
    # managed tables were decided, and the other was skipped, untouched
    assert reason is None and per_table == []
    assert world.throughput(idle) == (5, 5)
    assert world.throughput(other) == (200, 200)
    (skipped,) = [e for e in events if e["event"] == "table-skipped"]
    assert skipped["table"] == other and "discovery tag" in skipped["reason"]


def test_a_batch_never_acts_on_a_table_that_was_never_tagged(world: World, aws_client: Any) -> None:
    # GIVEN a forged batch naming a managed idle table and an idle table with no tag at all
    # (the tagging API does not return it), under a scaler that discovers by tag
    busy, idle = busy_and_idle(world, 0)
    never = world.table("never-tagged", 300, 300, tagged=False)
    batch = Batch(world.now, world.now + timedelta(minutes=2), 1, 1, (busy, idle, never))
    # WHEN the batch function runs it
    with recorded_events() as events:
        reason = ticked(world, own_clients(aws_client), batch)
    # THEN the never-tagged table is skipped, untouched; the managed ones are decided
    assert reason is None
    assert world.throughput(never) == (300, 300)
    assert world.throughput(idle) == (5, 5)
    (skipped,) = [e for e in events if e["event"] == "table-skipped"]
    assert skipped["table"] == never and "discovery tag" in skipped["reason"]


def test_while_the_tag_read_fails_only_listed_tables_are_acted_on(
    world: World, aws_client: Any
) -> None:
    # GIVEN a batch naming three throttled tables (each would be raised from 100 to 215
    # writes): a listed one, a tagged one and a never-tagged one; and GetResources refusing
    # every call (a shared failure: no decrease anywhere, raises go ahead)
    listed, tagged, never = (
        throttled(world, base, tagged=base == "tagged") for base in ("listed", "tagged", "never")
    )
    batch = Batch(world.now, world.now + timedelta(minutes=2), 1, 1, (listed, tagged, never))
    clients = own_clients(aws_client)
    fail_before(
        clients.tagging,
        "GetResources",
        lambda _: True,
        client_error("AccessDeniedException", "GetResources"),
    )
    out = io.StringIO()
    # WHEN the batch function runs it
    reason = ticked(world, clients, batch, out, SCALER_TABLES=listed)
    # THEN the listed table is decided; the others wait, untouched, each a counted failure
    assert world.throughput(listed) == (100, 215)
    assert world.throughput(tagged) == (100, 100)
    assert world.throughput(never) == (100, 100)
    assert reason is not None and reason.count("its tags could not be read") == 2
    failed = {r["TableName"] for r in emf_records(out) if r.get("Failures") == 1}
    assert failed == {tagged, never}


def test_a_scaler_that_discovers_nothing_by_tag_acts_on_listed_tables_only(
    world: World, aws_client: Any
) -> None:
    # GIVEN a scaler of listed tables only, and a batch naming one of them and another
    # table (carrying the tag the other tests' scalers discover by); both throttled
    listed = throttled(world, "only", tagged=False)
    other = throttled(world, "other")
    batch = Batch(world.now, world.now + timedelta(minutes=2), 1, 1, (listed, other))
    # WHEN the batch function runs it
    with recorded_events() as events:
        reason = ticked(
            world, own_clients(aws_client), batch, SCALER_TAG_KEY="", SCALER_TABLES=listed
        )
    # THEN the other table is skipped, untouched
    assert reason is None
    assert world.throughput(listed) == (100, 215)
    assert world.throughput(other) == (100, 100)
    (skipped,) = [e for e in events if e["event"] == "table-skipped"]
    assert skipped["table"] == other


def test_batches_are_sent_in_groups_sqs_takes() -> None:
    # GIVEN 25 small batches, and 5 of 500 names of 250 characters (126 KB a message)
    small = shard([f"t{i:04d}" for i in range(25)], 1, T0, T0 + timedelta(minutes=2))
    large = shard(
        [f"{i:04d}" + "x" * 246 for i in range(2_500)], 500, T0, T0 + timedelta(minutes=2)
    )
    # THEN each SendMessageBatch gets at most 10 messages and 256 KiB, in order
    assert [len(g) for g in shard_module._groups(small)] == [10, 10, 5]
    groups = shard_module._groups(large)
    assert [len(g) for g in groups] == [2, 2, 1]
    assert all(sum(len(body.encode()) for _, body in g) <= 256 * 1024 for g in groups)
    assert [b for g in groups for b, _ in g] == large


def test_a_batch_bounds_its_raises_by_the_quota_its_message_carries(
    world: World, aws_client: Any
) -> None:
    # GIVEN a table at 6,000 writes tagged write-max=15,000, throttled (a tick would raise
    # it past 10,000), a scaler configured with a table quota of 5,000, in an account whose
    # DescribeLimits answers 10,000 (moto's)
    def raised(carried: tuple[int, int] | None) -> int:
        label = "none" if carried is None else f"{carried[0]}-{carried[1]}"
        name = world.table(f"big{label}", 100, 6_000, tags={"ddb-capacity:write-max": "15000"})
        world.traffic(name, "write", 6_000)
        world.traffic(name, "write", 0, throttles=300_000, minutes=range(1, 3))
        batch = Batch(world.now, world.now + timedelta(minutes=2), 1, 1, (name,), carried)
        assert ticked(world, own_clients(aws_client), batch, CAPACITY_TABLE_QUOTA="5000") is None
        return world.throughput(name)[1]

    # WHEN a batch carries 20,000 THEN its raise goes past 10,000; WHEN one carries none
    # THEN it reads the account's 10,000 itself, and goes no further
    assert raised((20_000, 20_000)) > 10_000
    assert raised(None) <= 10_000
    # WHEN one carries a read quota of 20,000 and a write quota of 8,000 THEN the write
    # goes to its own quota, no further
    assert raised((20_000, 8_000)) == 8_000
