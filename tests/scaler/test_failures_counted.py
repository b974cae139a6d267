"""Every failure of a tick is counted, never only logged, and every table is its own fault
domain: a change AWS refuses with LimitExceededException, a batch table that cannot be
described or whose state cannot be read, a replica Region whose throttle causes cannot be
read, a plan that cannot be forgotten, a tag check that raises, a minimum set elsewhere whose
re-read is not to be trusted, and the changes and tables the deadline stops. Each test has
healthy tables beside the faulty one, asserts that they were handled as ever, that nothing
of the faulty one was lowered, and that the failure is in the tick's summary and its
metrics (``Failures``, ``DeadlinePassed``), which alarm.

Faults are injected into the real calls against the moto server with botocore's event
hooks (`tests.support.faults.fail_before`); moto never refuses an UpdateTable with
LimitExceededException, so that error is injected the same way."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import pytest

from ddb_capacity_runtime.core.series import Key, Series
from ddb_capacity_runtime.core.settings import ScalerConfig
from ddb_capacity_runtime.core.tables import ManagedTable
from ddb_capacity_runtime.scaler import tick as tick_module
from ddb_capacity_runtime.scaler.handler import complete
from ddb_capacity_runtime.scaler.refusals import refuse_tags
from ddb_capacity_runtime.scaler.shard import Batch
from ddb_capacity_runtime.scaler.tick import TickFailed, TickSummary
from tests.support.faults import (
    assert_handled,
    busy_and_idle,
    client_error,
    emf,
    fail_before,
    minute_queries,
)
from tests.support.faults import world as world  # noqa: F401 (fixture)
from tests.support.moto_world import World
from tests.support.replica_scaler import EU, US, WRITE_MIN, writes_throttled_in_us
from tests.support.replica_scaler import worlds as worlds  # noqa: F401 (fixture)
from tests.support.sharded_tick import emf_records, own_clients, throttled, ticked


def tick_record(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The tick's own EMF record (no table dimension)."""
    (record,) = [r for r in records if "_aws" in r and "TableName" not in r]
    return record


def failed_tables(summary: Mapping[str, Any]) -> list[str]:
    return [f["table"] for f in summary["failures"]]


# ------------------------------------------------------------------ a change refused


@pytest.mark.parametrize("traffic", ["idle", "throttled"])
def test_an_update_refused_with_limit_exceeded_is_a_counted_failure(
    world: World, traffic: str
) -> None:
    """A change DynamoDB refuses over its quota (LimitExceededException) is a failure of
    its table, counted and alarmed like any other refusal: a decrease refused (the
    decrease quota) and a raise refused (too many table operations at once)."""
    # GIVEN two healthy tables, and a third, idle (to be lowered) or throttled (to be
    # raised), whose UpdateTable DynamoDB refuses over its quota
    busy, idle = busy_and_idle(world)
    if traffic == "idle":
        faulty, before = world.table("quota", 300, 300), (300, 300)
    else:
        faulty, before = world.table("quota", 100, 100), (100, 100)
        world.traffic(faulty, "write", 100)
        world.traffic(faulty, "write", 0, throttles=3000, minutes=range(1, 3))
    fail_before(
        world.ddb,
        "UpdateTable",
        lambda p: p["TableName"] == faulty,
        client_error("LimitExceededException", "UpdateTable"),
    )
    # WHEN a tick runs
    summary, events = world.tick()
    # THEN the others are handled, the faulty table is left as it was
    assert_handled(world, busy, idle)
    assert world.throughput(faulty) == before
    # AND its refused changes are reported, and its failure counted in the summary and
    # in its own and the tick's metrics (the invocation fails)
    refused = [row for row in summary["failed"] if row["table"] == faulty]
    assert refused and {row["status"] for row in refused} == {"quota-exceeded"}
    assert failed_tables(summary) == [faulty]
    assert "LimitExceededException" in summary["failures"][0]["reason"]
    assert emf(events, faulty)["Failures"] == 1 and emf(events, busy)["Failures"] == 0
    assert emf(events, None)["Failures"] == 1
    with pytest.raises(TickFailed, match="1 table\\(s\\) failed"):
        complete(TickSummary(**summary))


# ------------------------------------------------------------------ a batch's tables


@pytest.mark.parametrize("read", ["DescribeTable", "state store"])
def test_a_batch_table_that_cannot_be_read_is_a_counted_failure(
    world: World, aws_client: Any, read: str
) -> None:
    """A table of a sharded tick's batch whose DescribeTable or state-store Query fails
    fails alone, and is counted: it never vanishes from the batch unreported."""
    # GIVEN a batch of a throttled table, an idle one and a third whose read fails
    busy, idle = busy_and_idle(world)
    faulty = world.table("unread", 300, 300)
    clients = own_clients(aws_client)
    if read == "DescribeTable":
        fail_before(
            clients.dynamodb,
            "DescribeTable",
            lambda p: p["TableName"] == faulty,
            client_error("InternalServerError", "DescribeTable"),
        )
    else:
        fail_before(
            world.store_ddb,
            "Query",
            lambda p: p["ExpressionAttributeValues"][":t"]["S"] == faulty,
            client_error("InternalServerError", "Query"),
        )
    batch = Batch(world.now, world.now + timedelta(minutes=2), 1, 1, (busy, faulty, idle))
    out = io.StringIO()
    # WHEN the batch function runs it
    reason = ticked(world, clients, batch, out)
    # THEN the other tables are decided as ever, the faulty one is left as it was
    assert_handled(world, busy, idle)
    assert world.throughput(faulty) == (300, 300)
    # AND the batch fails naming it, and its failure is counted for it and for the tick
    assert reason is not None and "1 table(s) failed" in reason
    assert faulty in reason and "InternalServerError" in reason
    records = emf_records(out)
    failures = {r["TableName"]: r["Failures"] for r in records if "TableName" in r}
    assert failures == {busy: 0, idle: 0, faulty: 1}
    assert tick_record(records)["Failures"] == 1


# ------------------------------------------------------------------ the deadline


def stopped_by_the_deadline(
    world: World, aws_client: Any
) -> tuple[tuple[str, str, str], str | None, list[dict[str, Any]]]:
    """A batch of a throttled table, then two idle ones (each to be lowered by one
    UpdateTable of its read and its write), run with a clock that reaches the batch's
    deadline right after the first idle table is re-read before its UpdateTable. Returns
    the three tables, why the batch failed, and its EMF records."""
    busy = throttled(world, "p0-busy")
    stopped, undecided = world.table("p1-stopped", 200, 200), world.table("p2-late", 200, 200)
    batch = Batch(world.now, world.now + timedelta(minutes=2), 1, 1, (busy, stopped, undecided))
    clock = [world.now]
    updated: list[str] = []
    clients = own_clients(aws_client)
    clients.dynamodb.meta.events.register(
        "before-parameter-build.dynamodb.UpdateTable",
        lambda params, **_: updated.append(params["TableName"]),
    )

    def reach_deadline(params: dict[str, Any], **_: Any) -> None:
        if params["TableName"] == stopped and busy in updated:  # its re-read before sending
            clock[0] = batch.deadline

    clients.dynamodb.meta.events.register(
        "before-parameter-build.dynamodb.DescribeTable", reach_deadline
    )
    out = io.StringIO()
    reason = ticked(world, clients, batch, out, now=lambda: clock[0])
    assert updated == [busy]  # nothing was sent once the deadline passed
    return (busy, stopped, undecided), reason, emf_records(out)


def test_every_change_and_table_the_deadline_stops_is_counted(
    world: World, aws_client: Any
) -> None:
    """What the deadline stops is counted in ``DeadlinePassed`` (alarmed) and fails its
    table: each change decided but not sent, and each table not decided at all."""
    # GIVEN a batch whose deadline passes after its throttled table is raised, while the
    # first idle table's UpdateTable is about to be sent
    # WHEN the batch function runs it
    (busy, stopped, undecided), reason, records = stopped_by_the_deadline(world, aws_client)
    # THEN the throttled table was raised; nothing was sent for the others
    assert [world.throughput(n) for n in (busy, stopped, undecided)] == [
        (100, 215),
        (200, 200),
        (200, 200),
    ]
    # AND both are failures of the batch, and counted: the table whose changes were not
    # sent in its own record, both in the tick's
    assert reason is not None and "2 table(s) failed" in reason
    assert stopped in reason and "deadline-passed" in reason
    assert undecided in reason and "reached its deadline" in reason
    failures = {r["TableName"]: r["Failures"] for r in records if "TableName" in r}
    assert (failures[busy], failures[stopped]) == (0, 1)
    record = tick_record(records)
    assert record["Failures"] == 2
    # AND the tick counts the two changes not sent and the table not decided
    assert record["DeadlinePassed"] == 3


def test_a_table_the_deadline_left_undecided_has_its_own_failure_counted(
    world: World, aws_client: Any
) -> None:
    """The per-table ``Failures`` metric is 1 for every table that failed the tick: a table
    the deadline left undecided too (an alarm on one table's failures sees it)."""
    (busy, stopped, undecided), reason, records = stopped_by_the_deadline(world, aws_client)
    assert reason is not None and undecided in reason  # a failure of the batch
    failures = {r["TableName"]: r["Failures"] for r in records if "TableName" in r}
    assert failures.get(undecided) == 1


def test_a_table_decided_before_the_deadline_is_not_read_again_after_it(
    world: World, aws_client: Any
) -> None:
    """A table decided while there was time, whose deadline passes before its UpdateTable
    changes are sent, is not described again: its UpdateTable changes are not sent (a
    decrease's lease is not even waited for), and counted in ``DeadlinePassed``."""
    # GIVEN a table whose write minimum is raised through its scalable target, and whose
    # idle read (no target) is lowered by an UpdateTable; the batch's deadline passes
    # once the write minimum is sent
    name = world.table("p0-mixed", 200, 100)
    world.target(name, "write", 100, 10_000)
    world.traffic(name, "write", 100)
    world.traffic(name, "write", 0, throttles=3000, minutes=range(1, 3))
    batch = Batch(world.now, world.now + timedelta(minutes=2), 1, 1, (name,))
    clock, raised = [world.now], [False]
    late_reads: list[str] = []  # tables described once the deadline passed
    clients = own_clients(aws_client)

    def register(params: dict[str, Any], **_: Any) -> None:
        raised[0] = params["ResourceId"] == f"table/{name}" and params["MinCapacity"] > 100

    def reach_deadline(**_: Any) -> None:
        if raised[0]:
            clock[0] = batch.deadline

    def describe(params: dict[str, Any], **_: Any) -> None:
        if clock[0] >= batch.deadline:
            late_reads.append(params["TableName"])

    events = clients.autoscaling.meta.events
    events.register(
        "before-parameter-build.application-autoscaling.RegisterScalableTarget", register
    )
    events.register("after-call.application-autoscaling.RegisterScalableTarget", reach_deadline)
    clients.dynamodb.meta.events.register("before-parameter-build.dynamodb.DescribeTable", describe)
    out = io.StringIO()
    # WHEN the batch function runs it
    reason = ticked(world, clients, batch, out, now=lambda: clock[0])
    # THEN the write minimum was raised; the table was not described once the deadline
    # passed, and its read was left as it was
    assert world.target_min(name, "write") == 215
    assert late_reads == []
    assert world.throughput(name)[0] == 200
    # AND the read's change is a failure of the batch, counted as the deadline's
    assert reason is not None
    assert f"table read: deadline-passed: not sent: the lease of {name} table read" in reason
    assert tick_record(emf_records(out))["DeadlinePassed"] == 1


# ------------------------------------------------------------------ a replica's Region


def test_a_replica_regions_throttle_causes_not_read_are_a_counted_failure(
    worlds: dict[str, World],
) -> None:
    """A replica whose other Region's throttles cannot be told apart by cause is a failure
    of that replica (counted and alarmed), its throttles taken for fixable; another table
    of the Region is not failed."""
    # GIVEN writes throttled in us-east-1, whose CloudWatch answers the minutes but fails
    # every query of throttles by cause; and a plain, idle eu-west-1 table beside the replica
    name = writes_throttled_in_us(worlds)
    fail_before(
        worlds[US].cw,
        "GetMetricData",
        lambda p: not minute_queries(p),
        client_error("InternalServerError", "GetMetricData"),
    )
    eu = worlds[EU]
    plain = eu.table("catalog", 100, 100, tagged=False)
    env = {
        "SCALER_TABLES": f"{name},{plain}",
        "SCALER_TAG_KEY": "",
        "SCALER_REPLICAS": json.dumps({name: {"regions": [US]}}),
    }
    # WHEN eu-west-1's scaler ticks
    summary, events = eu.tick(None, None, **env)
    # THEN the replica's write minimum is raised on us-east-1's throttles (all fixable),
    # the plain table lowered as ever
    assert eu.target_min(name, "write") > 60 / 0.7 > WRITE_MIN
    assert eu.throughput(plain) == (5, 5)
    # AND the replica alone fails, naming the Region and the read, and is counted
    assert failed_tables(summary) == [name]
    reason = summary["failures"][0]["reason"]
    assert "replica us-east-1 table write" in reason and "throttles by cause" in reason
    failures = {e["TableName"]: e["Failures"] for e in events if "_aws" in e and "TableName" in e}
    assert failures == {name: 1, plain: 0}
    assert emf(events, None)["Failures"] == 1


# ------------------------------------------------------------------ the autopilot's plans


def test_a_plan_that_cannot_be_forgotten_is_a_counted_failure(world: World) -> None:
    """A plan kept for an index since deleted is forgotten at the table's forecast; a
    state-store write that fails to forget it is a failure of that table (counted), and
    the tick goes on with its plans."""
    # GIVEN two tables with the same daily write spike, each with a plan kept for an index
    # since deleted, and the state store failing to forget the faulty table's
    world.now = world.now.replace(minute=0)
    faulty = world.table("unforgot", 10, 10, forecast_minute=0)
    healthy = world.table("forgot", 10, 10, forecast_minute=0)
    old_plan = f"{int(world.now.timestamp() // 60) - 60}:70:0:0:500"
    for name in (faulty, healthy):
        world.daily_spikes(name, world.now, first_minute=10, per_second=600)
        world.set_plan(name, "write", old_plan, "Gone")
    gone = world.store.sort_key("Gone", "write")
    fail_before(
        world.store_ddb,
        "DeleteItem",
        lambda p: p["Key"]["pk"]["S"] == faulty and p["Key"]["sk"]["S"] == gone,
        client_error("InternalServerError", "DeleteItem"),
    )
    # WHEN the hour's first tick plans both
    summary, events = world.tick(SCALER_MODE="autopilot")
    # THEN both are raised to their plan's floor and their table plans kept, as ever
    assert world.throughput(faulty)[1] == world.throughput(healthy)[1] == 667  # 600 / 0.9
    assert world.plan(faulty, "write") is not None and world.plan(healthy, "write") is not None
    # the healthy table's stale plan is forgotten; the faulty one's stays, and is counted
    assert world.plan(healthy, "write", "Gone") is None
    assert world.plan(faulty, "write", "Gone") == old_plan
    assert failed_tables(summary) == [faulty]
    assert "forgetting a plan" in summary["failures"][0]["reason"]
    assert emf(events, faulty)["Failures"] == 1 and emf(events, healthy)["Failures"] == 0
    assert emf(events, None)["Failures"] == 1


# ------------------------------------------------------------------ one table's tag check


def test_a_tag_check_that_raises_fails_its_table_alone(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Anything raised while one table's tags are checked fails that table alone: the
    others are still decided and acted on, and the failure is counted. (No input is known
    to make the check raise: it is made to raise here for one table.)"""
    # GIVEN two healthy tables and a third, idle, whose tag check raises
    busy, idle = busy_and_idle(world)
    faulty = world.table("checked", 300, 300)

    def raising(config: ScalerConfig, table: ManagedTable, series: Mapping[Key, Series]) -> Any:
        if table.name == faulty:
            raise RuntimeError("the check broke")
        return refuse_tags(config, table, series)

    monkeypatch.setattr(tick_module, "refuse_tags", raising)
    # WHEN a tick runs
    summary, events = world.tick()
    # THEN the others are decided and acted on; the faulty table is left as it was
    assert_handled(world, busy, idle)
    assert world.throughput(faulty) == (300, 300)
    # AND its failure is counted, for it and for the tick
    assert failed_tables(summary) == [faulty]
    assert "checking its tags: RuntimeError: the check broke" in summary["failures"][0]["reason"]
    assert emf(events, faulty)["Failures"] == 1 and emf(events, busy)["Failures"] == 0
    assert emf(events, None)["Failures"] == 1


# ------------------------------------------------------------------ a minimum set elsewhere


def test_a_minimum_set_elsewhere_whose_re_read_is_unsound_fails_its_table(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    # GIVEN healthy tables, and one whose read minimum the library had set to 200 over a
    # configured 100, which an operator has since set to 300
    busy, idle = busy_and_idle(world)
    faulty = world.table("adopt", 300, 300)
    world.target(faulty, "read", 200, 1_000)
    with world.store.lease(faulty, None, "read", deadline=time.time() + 5) as lease:
        lease.write(100, set_to=200)
    world.aas.register_scalable_target(
        ServiceNamespace="dynamodb",
        ResourceId=f"table/{faulty}",
        ScalableDimension="dynamodb:table:ReadCapacityUnits",
        MinCapacity=300,
        MaxCapacity=1_000,
    )
    # AND the one-target re-read under the lease, before that minimum is adopted, answers
    # without a MinCapacity
    asked: list[Mapping[str, Any]] = []

    def remember(params: Mapping[str, Any], **_: Any) -> None:
        asked.append(params)

    def unsound(parsed: dict[str, Any], **_: Any) -> None:
        if "ScalableDimension" in asked[-1]:
            for target in parsed.get("ScalableTargets", []):
                target["MinCapacity"] = None

    events = world.aas.meta.events
    before = "before-parameter-build.application-autoscaling.DescribeScalableTargets"
    after = "after-call.application-autoscaling.DescribeScalableTargets"
    events.register(before, remember)
    events.register(after, unsound)
    try:
        summary, records = world.tick()
    finally:
        events.unregister(before, remember)
        events.unregister(after, unsound)
    # THEN that table fails, counted, and nothing of it moves: the minimum stays the
    # operator's and the store's memory as it was; the healthy tables are handled as ever
    assert failed_tables(summary) == [faulty]
    assert "UnsoundListing" in summary["failures"][0]["reason"]
    assert emf(records, faulty)["Failures"] == 1
    assert world.target_min(faulty, "read") == 300
    memory = world.store.get(faulty, None, "read")
    assert memory is not None and (memory.base, memory.set_to) == (100, 200)
    assert world.throughput(faulty) == (300, 300)
    assert_handled(world, busy, idle)
