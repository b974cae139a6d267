"""The scaler under faults, against a moto server. Each test has three tables and one fault
that touches one of them (or a call the tick shares), and asserts that the tick survived,
that the other tables were handled exactly, that nothing wrong was changed, and that the
fault was counted.

Faults are injected into the real calls with botocore's event hooks (an exception before a
call, a changed answer after it); a Stubber is used only where moto has nothing to stub
against."""

from __future__ import annotations

import io
import json
import math
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.compat import HTTPHeaders
from botocore.exceptions import EndpointConnectionError

from ddb_capacity_runtime.aws.discovery import current_minimum
from ddb_capacity_runtime.core.decreases import DecreaseLedger
from ddb_capacity_runtime.core.errors import UnsoundListing
from ddb_capacity_runtime.core.names import resource_id, table_of_arn
from ddb_capacity_runtime.core.settings import ScalerConfig
from ddb_capacity_runtime.core.tables import ScalableTarget, tags_of
from ddb_capacity_runtime.requests import Hold
from ddb_capacity_runtime.scaler import tick_report
from ddb_capacity_runtime.scaler.handler import complete
from ddb_capacity_runtime.scaler.shard import Batch
from ddb_capacity_runtime.scaler.tick import TickFailed, TickSummary, run_tick
from tests.support.faults import (
    NO_TABLES,
    SHARED_CALLS,
    assert_handled,
    busy_and_idle,
    client_error,
    emf,
    fail_before,
    fail_shared_call,
    raised_minimum,
    throttle_first,
    unsound_tagging,
)
from tests.support.faults import world as world  # noqa: F401 (fixture)
from tests.support.moto_world import TAG_KEY, World, base_min_tag, configured_min, upgrade_window
from tests.support.retry_policy import _Raw
from tests.support.surge_server import counted

WRITES = "dynamodb:table:WriteCapacityUnits"


def change_metric_results(
    world: World, table: str, change: Callable[[dict[str, Any]], None]
) -> None:
    """Let ``change`` edit the GetMetricData results of ``table``'s per-minute queries (its
    delivery witness's and its forecast history's left as CloudWatch answered them: a tick
    is the table's forecast tick once an hour, by its name's hash, so a random name would
    make a test of its minutes read its history too, one run in 60)."""
    ids: dict[str, str] = {}

    def before(params: dict[str, Any], **_: Any) -> None:
        for q in params["MetricDataQueries"]:
            metric = q["MetricStat"]["Metric"]
            if metric["MetricName"].startswith("Provisioned") or q["MetricStat"]["Period"] != 60:
                continue
            ids[q["Id"]] = next(
                d["Value"] for d in metric["Dimensions"] if d["Name"] == "TableName"
            )

    def after(parsed: dict[str, Any], **_: Any) -> None:
        for result in parsed.get("MetricDataResults", []):
            if ids.get(result["Id"]) == table:
                change(result)

    world.cw.meta.events.register("before-parameter-build.cloudwatch.GetMetricData", before)
    world.cw.meta.events.register("after-call.cloudwatch.GetMetricData", after)


# ------------------------------------------------------------------ one table's fault


@pytest.mark.parametrize(
    "error",
    [
        EndpointConnectionError(endpoint_url="http://127.0.0.1:1"),
        client_error("InternalServerError", "DescribeTable"),
        client_error("AccessDeniedException", "DescribeTable"),
    ],
    ids=["connection-error", "internal-error", "access-denied"],
)
def test_an_error_on_one_tables_describe_fails_that_table_alone(
    world: World, error: Exception
) -> None:
    busy, idle = busy_and_idle(world)
    faulty = world.table("faulty", 300, 300)
    disarm = fail_before(world.ddb, "DescribeTable", lambda p: p["TableName"] == faulty, error)
    summary, events = world.tick()
    disarm()
    assert_handled(world, busy, idle)
    assert world.throughput(faulty) == (300, 300)
    (failure,) = summary["failures"]
    assert failure["table"] == faulty
    assert emf(events, faulty)["Failures"] == 1 and emf(events, busy)["Failures"] == 0
    assert emf(events, None)["Failures"] == 1
    with pytest.raises(TickFailed, match="1 table\\(s\\) failed"):
        complete(TickSummary(**summary))


def test_an_error_on_one_tables_update_fails_that_table_alone(world: World) -> None:
    busy, idle = busy_and_idle(world)
    faulty = world.table("faulty", 300, 300)  # idle: the tick tries to lower it
    fail_before(
        world.ddb,
        "UpdateTable",
        lambda p: p["TableName"] == faulty,
        EndpointConnectionError(endpoint_url="http://127.0.0.1:1"),
    )
    summary, events = world.tick()
    assert_handled(world, busy, idle)
    assert world.throughput(faulty) == (300, 300)
    assert [f["table"] for f in summary["failures"]] == [faulty]
    assert emf(events, faulty)["Failures"] == 1


@pytest.mark.parametrize(
    ("tag", "value"),
    [
        (base_min_tag(None, "read"), "lots"),
        (base_min_tag(None, "read"), "-5"),
        ("ddb-capacity:min", "lots"),
        ("ddb-capacity:max", "99999999"),
        ("ddb-capacity:min", "\u0661\u0662"),  # 12 in Arabic-Indic digits: not a number here
        ("ddb-capacity:hold:forged:read", "table:10000000:4102444800:0"),  # 2100, 10 M units
        ("ddb-capacity:hold:far:read", "table:5000:1000000000000:0"),  # year 33658
    ],
)
def test_a_bad_tag_is_ignored_and_counted(world: World, tag: str, value: str) -> None:
    busy, idle = busy_and_idle(world)
    faulty = world.table("tagged", 300, 300, tags={tag: value})
    world.target(faulty, "read", 300, 1000)  # read under auto scaling, minimum 300
    world.traffic(faulty, "read", 150)
    summary, events = world.tick()
    assert_handled(world, busy, idle)
    # nothing obeyed the tag: read keeps its minimum, the idle write goes to the default min
    assert world.target_min(faulty, "read") == 300
    assert world.throughput(faulty) == (300, 5)
    assert summary["failures"] == [] and emf(events, faulty)["IgnoredTags"] == 1
    assert "IgnoredTags" not in emf(events, busy)  # sent only while it happens


def store_reads_held(world: World, table: str, holds: dict[str, dict[str, Any]]) -> None:
    """``table``'s reads held by ``holds`` (id: the hold's fields, as DynamoDB types them)
    on a base of 300, written straight into the state store."""
    world.ddb.update_item(
        TableName=world.store.name,
        Key={"pk": {"S": table}, "sk": {"S": "table:read"}},
        UpdateExpression="SET #b = :b, holds = :h",
        ExpressionAttributeNames={"#b": "base"},
        ExpressionAttributeValues={
            ":b": {"N": "300"},
            ":h": {"M": {ident: {"M": fields} for ident, fields in holds.items()}},
        },
    )


def test_a_forged_hold_in_the_store_is_ignored_and_counted(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    busy, idle = busy_and_idle(world)
    faulty = world.table("forged", 300, 300)
    world.traffic(faulty, "read", 150)
    # 10 million units until 2100, written straight into the store
    forged = {"units": {"N": "10000000"}, "expires": {"N": "4102444800"}, "baseline": {"N": "0"}}
    store_reads_held(world, faulty, {"forged": forged})
    summary, events = world.tick()
    assert_handled(world, busy, idle)
    assert world.throughput(faulty) == (300, 5)  # the forged hold raised nothing
    assert emf(events, faulty)["IgnoredTags"] == 1 and summary["failures"] == []
    assert not any(s.holding for s in world.store.table(faulty))  # and the tick removed it
    # counted as the broker's restore counts a hold dropped: HoldsDropped, alarmed
    assert counted(capsys.readouterr().out, "HoldsDropped") == 1


def test_holds_in_the_store_never_lift_a_dimension_above_the_table_quota(world: World) -> None:
    # GIVEN three holds in the store, each well formed, whose level adds up past any
    # table quota (a baseline of 999,000 and 1,000 units each: only a write of the
    # library's checks their sum, and these were written straight into the store)
    busy, idle = busy_and_idle(world)
    faulty = world.table("oversum", 300, 300)
    world.traffic(faulty, "read", 150)
    expires = str(int(time.time()) + 600)
    hold = {"units": {"N": "1000"}, "expires": {"N": expires}, "baseline": {"N": "999000"}}
    store_reads_held(world, faulty, {f"h{n}": hold for n in range(3)})
    # WHEN a tick runs
    summary, _ = world.tick()
    # THEN the others are handled, and the held dimension is raised to the table quota at
    # most, never to the 1,002,000 the holds add up to
    assert_handled(world, busy, idle)
    quota = ScalerConfig.from_env({"SCALER_TABLES": faulty}).table_quota
    assert world.throughput(faulty)[0] == quota


REREAD_ANSWERS: dict[str, Callable[[dict[str, Any]], None]] = {
    "units": lambda t: t["ProvisionedThroughput"].update(WriteCapacityUnits="100"),
    "gsi": lambda t: t.update(GlobalSecondaryIndexes=[{"IndexName": "byUser"}]),
    # a GSI whose capacity is there but not its name: read as the table's, it would
    # take the table's place
    "nameless gsi": lambda t: t.update(
        GlobalSecondaryIndexes=[
            {"ProvisionedThroughput": {"ReadCapacityUnits": 100, "WriteCapacityUnits": 215}}
        ]
    ),
    "updating": lambda t: t.update(TableStatus="UPDATING"),
    "deleting gsi": lambda t: t.update(
        GlobalSecondaryIndexes=[{"IndexName": "old", "IndexStatus": "DELETING"}]
    ),
}
"""How the table "reread" is told, re-read right before its UpdateTable."""


def ticked_on_re_read(
    world: World, answer: str
) -> tuple[str, str, str, dict[str, Any], list[dict[str, Any]]]:
    """A tick of a throttled table, "reread", whose DescribeTable answers soundly when it is
    read, then as `REREAD_ANSWERS`' ``answer`` says when read again before its UpdateTable,
    and of the busy and idle tables beside it: the three tables, the tick's summary and its
    events."""
    busy, idle = busy_and_idle(world)
    odd = world.table("reread", 100, 100)
    world.traffic(odd, "write", 100)
    world.traffic(odd, "write", 0, throttles=3000, minutes=range(1, 3))
    reads = [0]

    def later(parsed: dict[str, Any], **_: Any) -> None:
        table = parsed.get("Table", {})
        if table.get("TableName") == odd:
            reads[0] += 1
            if reads[0] > 1:
                REREAD_ANSWERS[answer](table)

    event = "after-call.dynamodb.DescribeTable"
    world.ddb.meta.events.register(event, later)
    try:
        summary, events = world.tick()
    finally:
        world.ddb.meta.events.unregister(event, later)
    assert reads[0] >= 2  # read, then read again
    return busy, idle, odd, summary, events


@pytest.mark.parametrize("unsound", ["units", "gsi", "nameless gsi"])
def test_an_unsound_re_read_before_an_update_sends_nothing_and_fails_its_table(
    world: World, unsound: str
) -> None:
    # GIVEN a throttled table whose DescribeTable answers soundly when it is read, then,
    # re-read right before its UpdateTable, without a whole capacity, with a GSI that has
    # no capacity, or with a GSI without its name
    # WHEN a tick runs
    busy, idle, odd, summary, events = ticked_on_re_read(world, unsound)
    # THEN nothing is sent on that answer: the table is left as it is, a failure of its own,
    # and the others are handled
    assert_handled(world, busy, idle)
    assert world.throughput(odd) == (100, 100)
    assert [f["table"] for f in summary["failures"]] == [odd]
    assert "DescribeTable" in summary["failures"][0]["reason"]
    assert emf(events, odd)["Failures"] == 1


def test_an_index_being_deleted_told_without_its_capacity_stops_no_update(world: World) -> None:
    # GIVEN a throttled table whose re-read before its UpdateTable lists a GSI being
    # deleted, without its capacity (DescribeTable may leave fields out of one going away)
    # WHEN a tick runs
    busy, idle, odd, summary, _ = ticked_on_re_read(world, "deleting gsi")
    # THEN the table is updated as any other: its writes raised, its idle reads lowered
    assert_handled(world, busy, idle)
    assert world.throughput(odd) == (5, 215) and summary["failures"] == []


def test_a_table_found_updating_on_its_re_read_is_left_for_the_next_tick(world: World) -> None:
    # GIVEN a throttled table ACTIVE when the tick reads it, UPDATING when it is read again
    # right before its UpdateTable (another update began in between)
    # WHEN a tick runs
    busy, idle, odd, summary, events = ticked_on_re_read(world, "updating")
    # THEN nothing is sent to it (DynamoDB would refuse it, or stack the two updates), and
    # it is no failure: the next tick decides again; the others are handled
    assert_handled(world, busy, idle)
    assert world.throughput(odd) == (100, 100)
    assert summary["failures"] == [] and emf(events, odd).get("Failures", 0) == 0
    rows = [r for r in summary["failed"] if r["table"] == odd]
    assert {(r["dimension"], r["status"]) for r in rows} == {
        ("read", "retry-next-tick"),
        ("write", "retry-next-tick"),
    }
    assert all("UPDATING" in r["error"] for r in rows)
    # AND its raise not sent is said and counted as a table found UPDATING is (its record,
    # and the worst table's twin the Updating alarm watches), so one whose raises end so
    # tick after tick alarms; the decrease left with it is not a raise, and says nothing
    (retried,) = [e for e in events if e.get("event") == "raise-retried"]
    assert (retried["table"], retried["dimension"], retried["from"], retried["to"]) == (
        odd,
        "write",
        100,
        215,
    )
    assert retried["status"] == "retry-next-tick" and "UPDATING" in retried["error"]
    record = emf(events, odd)
    assert record["Updating"] == 1
    worst = record["_aws"]["CloudWatchMetrics"][1]
    assert worst["Dimensions"] == [["StateStore"]] and record["StateStore"] == world.store.name
    assert {"Name": "Updating", "Unit": "Count"} in worst["Metrics"]
    assert "Updating" not in emf(events, busy)


def test_a_stale_memory_never_overrides_a_minimum_an_operator_set(world: World) -> None:
    # GIVEN the scaler raised the minimum from 10 to 40 once, then an operator set it to
    # 300: remembered in the state store, and (on two other tables) in 0.4's state tags,
    # read during an upgrade's window
    busy, idle = busy_and_idle(world)
    faulty = world.table("operated", 300, 300)
    world.target(faulty, "read", 300, 1000)
    with world.store.lease(faulty, None, "read", deadline=time.time() + 5) as lease:
        lease.write(10, set_to=40)
    tagged = world.table("tagged", 300, 300, tags={base_min_tag(None, "read"): "10:40"})
    world.target(tagged, "read", 300, 1000)
    legacy = world.table("legacy", 300, 300, tags={base_min_tag(None, "read"): "10"})
    world.target(legacy, "read", 300, 1000)
    # WHEN a calm tick runs
    summary, events = world.tick(**upgrade_window(world.now))
    # THEN the present minimum stands and becomes the configured one: the memory is
    # forgotten, never obeyed, and that is said (a tag's base is never below the present
    # minimum: nothing of the tags is kept)
    assert_handled(world, busy, idle)
    for name in (faulty, tagged, legacy):
        assert world.target_min(name, "read") == 300
        assert world.memory(name, "read") is None
        assert not any(s.holding for s in world.store.table(name))
    said = {e["table"] for e in events if e.get("event") == "minimum-set-elsewhere"}
    assert said == {faulty}
    # AND 0.4's state tags were moved into the store first, then removed
    moved = {e["table"] for e in events if e.get("event") == "state-moved-from-tags"}
    assert moved == {tagged, legacy}
    for name in (tagged, legacy):
        assert not [k for k in world.tags(name) if k.startswith("ddb-capacity:")]
    assert summary["failures"] == []


def test_state_tags_written_after_the_move_are_not_state(world: World) -> None:
    # GIVEN a table configured at a write minimum of 400, whose 0.4 scaler raised it to
    # 500, moved into the state store by a first tick of an upgrade's window, then back at
    # 400 after a calm one (two healthy tables beside it)
    faulty = world.table("forged", 300, 500, tags={base_min_tag(None, "write"): "400:500"})
    world.target(faulty, "write", 500, 1000)
    env = {**upgrade_window(world.now), **configured_min(faulty, "write", 400)}
    world.tick(**env)
    assert world.memory(faulty, "write") == "400:500"
    busy, idle = busy_and_idle(world)
    world.tick(**env)
    assert world.target_min(faulty, "write") == 400 and not any(
        s.holding for s in world.store.table(faulty)
    )
    # WHEN someone allowed to tag it writes a memory that makes the configured minimum 1
    arn = world.ddb.describe_table(TableName=faulty)["Table"]["TableArn"]
    world.ddb.tag_resource(
        ResourceArn=arn, Tags=[{"Key": base_min_tag(None, "write"), "Value": "1:400"}]
    )
    summary, events = world.tick(**env)
    # THEN it is not read as state: the minimum stays at the configured 400, nothing is
    # remembered; the tag is removed and counted; the others are handled
    assert world.target_min(faulty, "write") == 400 and not any(
        s.holding for s in world.store.table(faulty)
    )
    assert base_min_tag(None, "write") not in world.tags(faulty)
    assert emf(events, faulty)["IgnoredTags"] == 1 and summary["failures"] == []
    assert world.throughput(idle) == (5, 5)


def test_a_table_found_updating_is_skipped_and_counted(world: World) -> None:
    # GIVEN a throttled table that DynamoDB reports UPDATING (moto's tables never are)
    busy, idle = busy_and_idle(world)
    stuck = world.table("stuck", 100, 100)
    world.traffic(stuck, "write", 100)
    world.traffic(stuck, "write", 0, throttles=3000, minutes=range(1, 3))

    def updating(parsed: dict[str, Any], **_: Any) -> None:
        if parsed.get("Table", {}).get("TableName") == stuck:
            parsed["Table"]["TableStatus"] = "UPDATING"

    world.ddb.meta.events.register("after-call.dynamodb.DescribeTable", updating)
    # WHEN a tick runs
    summary, events = world.tick()
    # THEN it is left alone, as before, and the others are handled
    assert_handled(world, busy, idle)
    assert world.throughput(stuck) == (100, 100)
    assert {"table": stuck, "reason": "status UPDATING"} in summary["skipped"]
    # AND the tick counts it (so a table that stays UPDATING alarms), and only it
    record = emf(events, stuck)
    assert record["Updating"] == 1
    assert record["_aws"]["CloudWatchMetrics"][0]["Metrics"] == [
        {"Name": "Updating", "Unit": "Count"}
    ]
    assert "Updating" not in emf(events, busy) and summary["failures"] == []


def odd_decreases(world: World, table: str, count: object, last: datetime | None) -> None:
    """DescribeTable tells ``table``'s write counter as ``count`` decreases today, the last at
    ``last`` (none: left as DynamoDB said)."""

    def odd(parsed: dict[str, Any], **_: Any) -> None:
        if parsed.get("Table", {}).get("TableName") == table:
            throughput = parsed["Table"]["ProvisionedThroughput"]
            throughput["NumberOfDecreasesToday"] = count
            if last is not None:
                throughput["LastDecreaseDateTime"] = last

    world.ddb.meta.events.register("after-call.dynamodb.DescribeTable", odd)


@pytest.mark.parametrize("count", [-3, 10**400, 2.5, math.nan, "1", True])
def test_a_decrease_counter_past_belief_is_taken_as_spent(world: World, count: object) -> None:
    # GIVEN an idle table whose DescribeTable tells a decrease counter no table can have
    busy, idle = busy_and_idle(world)
    odd = world.table("odd", 300, 300)
    odd_decreases(world, odd, count, None)
    # WHEN a tick runs
    summary, events = world.tick()
    # THEN the others are handled, and the odd one is not lowered: no decrease left today
    assert_handled(world, busy, idle)
    assert world.throughput(odd) == (300, 300)
    assert summary["failures"] == [] and emf(events, odd)["DecreasesLeft"] == 0


def test_a_last_decrease_in_the_far_future_leaves_the_table_raised_and_the_tick_whole(
    world: World,
) -> None:
    # GIVEN a throttled table whose DescribeTable says 5 decreases today, the last in 9999
    busy, idle = busy_and_idle(world)
    odd = world.table("future", 100, 100)
    world.traffic(odd, "write", 100)
    world.traffic(odd, "write", 0, throttles=3000, minutes=range(1, 3))
    odd_decreases(world, odd, 5, datetime(9999, 12, 31, 23, 30, tzinfo=UTC))
    # WHEN a tick runs
    summary, events = world.tick()
    # THEN every table is decided: the odd one raised as the busy one is, none failed, and
    # its last decrease is taken as made now (no decrease for an hour, none left today)
    assert_handled(world, busy, idle)
    assert world.throughput(odd) == (100, 215)
    made_now = DecreaseLedger(decreases_today=5, last_decrease=world.now)
    assert summary["failures"] == []
    assert emf(events, odd)["DecreasesLeft"] == made_now.remaining_today(world.now)


def test_an_error_in_one_tables_decision_fails_that_table_alone(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a table whose decision raises, after its changes, whatever the cause (a fault
    # planted in the tick's own code: no answer of AWS's is known to cause one)
    busy, idle = busy_and_idle(world)
    faulty = world.table("faulty", 300, 300)
    metrics = tick_report._table_metrics

    def planted(table: Any, *args: Any) -> dict[str, float]:
        if table.name == faulty:
            raise OverflowError("date value out of range")
        return metrics(table, *args)

    monkeypatch.setattr(tick_report, "_table_metrics", planted)
    # WHEN a tick runs
    summary, events = world.tick()
    # THEN the others are decided and counted as ever, and the faulty one is a failure, counted
    assert_handled(world, busy, idle)
    assert [f["table"] for f in summary["failures"]] == [faulty]
    assert "OverflowError" in summary["failures"][0]["reason"]
    assert emf(events, faulty)["Failures"] == 1 and emf(events, None)["Failures"] == 1
    # AND what was sent for it before is in the summary: the idle table lowered
    assert world.throughput(faulty) == (5, 5)
    assert {c["table"] for c in summary["changes"]} == {busy, idle, faulty}


def test_a_target_whose_min_is_above_its_max_is_held_and_counted(world: World) -> None:
    # GIVEN a throttled table whose write target reports min 500 > max 100 (moto keeps it)
    busy, idle = busy_and_idle(world)
    inverted = world.table("inverted", 100, 100)
    world.target(inverted, "write", 500, 100)
    world.traffic(inverted, "write", 100)
    world.traffic(inverted, "write", 0, throttles=3000, minutes=range(1, 3))
    registered: list[str] = []
    world.aas.meta.events.register(
        "before-call.application-autoscaling.RegisterScalableTarget",
        lambda params, **_: registered.append(params["ResourceId"]),
    )
    # WHEN a tick runs
    summary, events = world.tick()
    # THEN the dimension is held: neither the table nor the target is touched
    assert_handled(world, busy, idle)
    assert world.throughput(inverted) == (5, 100)  # its idle read, without a target, is lowered
    assert world.target_min(inverted, "write") == 500 and registered == []
    # AND it is counted for its table (an alarm watches it), and said why
    assert emf(events, inverted)["BadTargets"] == 1
    assert "BadTargets" not in emf(events, busy)
    # and for the scaler's deployment too (dimension StateStore, its state store's name),
    # which its alarm watches (the worst table's Maximum): an alarm cannot watch a SEARCH
    # over the tables' metrics, and another scaler of the account has its own series
    record = emf(events, inverted)
    per_table, worst = record["_aws"]["CloudWatchMetrics"]
    assert per_table["Dimensions"] == [["TableName"]]
    assert (record["TableName"], record["StateStore"]) == (inverted, world.store.name)
    assert worst == {
        "Namespace": "DynamoDBCapacity",
        "Dimensions": [["StateStore"]],
        "Metrics": [{"Name": "BadTargets", "Unit": "Count"}],  # CapacityAtMax is 0: no metric
    }
    # a value of 0 is a field of the line, not a metric (billed only while it happens)
    busy_record = emf(events, busy)
    assert busy_record["CapacityAtMax"] == 0
    assert all(g["Dimensions"] == [["TableName"]] for g in busy_record["_aws"]["CloudWatchMetrics"])
    tick = emf(events, None)["_aws"]["CloudWatchMetrics"]
    assert all(g["Dimensions"] == [["StateStore"]] for g in tick)  # the tick's: no twin
    (held,) = [e for e in events if e.get("event") == "target-held"]
    assert (held["table"], held["index"], held["dimension"]) == (inverted, None, "write")
    assert held["reason"].startswith("the scalable target's MinCapacity (500) is above its ")
    assert not [
        c for c in summary["changes"] if c["table"] == inverted and c["dimension"] == "write"
    ]


def test_the_other_dimension_is_sent_as_it_is_now(world: World) -> None:
    # GIVEN a table whose read is raised to 400 by someone else just after the tick read it
    busy, idle = busy_and_idle(world)
    faulty = world.table("raced", 100, 100)
    world.traffic(faulty, "write", 100)
    world.traffic(faulty, "write", 0, throttles=3000, minutes=range(1, 3))
    raised: list[bool] = []

    def raise_read(parsed: dict[str, Any], **_: Any) -> None:
        if parsed.get("Table", {}).get("TableName") == faulty and not raised:
            raised.append(True)  # the first read of the table, in the tick's discovery
            world.ddb.update_table(
                TableName=faulty,
                ProvisionedThroughput={"ReadCapacityUnits": 400, "WriteCapacityUnits": 100},
            )

    world.ddb.meta.events.register("after-call.dynamodb.DescribeTable", raise_read)
    summary, _ = world.tick()
    # THEN the write went up and read stayed at 400
    assert_handled(world, busy, idle)
    assert world.throughput(faulty) == (400, 215)
    assert summary["failures"] == []


# ------------------------------------------------------------------ metrics that are unknown


def test_partial_data_is_not_idle(world: World) -> None:
    # GIVEN a busy table (120 of 200) whose datapoints CloudWatch did not all return
    busy, idle = busy_and_idle(world)
    faulty = world.table("partial", 200, 200)
    world.traffic(faulty, "read", 120)

    def partial(result: dict[str, Any]) -> None:
        result["StatusCode"] = "PartialData"
        result["Timestamps"], result["Values"] = [], []

    change_metric_results(world, faulty, partial)
    summary, events = world.tick()
    assert_handled(world, busy, idle)
    assert world.throughput(faulty) == (200, 200)
    reasons = {e["reason"] for e in events if e.get("event") == "decision" and e["table"] == faulty}
    config = ScalerConfig.from_env({"SCALER_TABLES": faulty})
    window = config.history_minutes + config.metric_lag_minutes  # the tick reads both
    assert reasons == {f"no decrease: {window} minute(s) of the window unknown"}
    assert summary["failures"] == []


@pytest.mark.parametrize("bad", [math.nan, -60.0, math.inf], ids=["nan", "negative", "infinite"])
def test_a_bad_value_is_not_idle(world: World, bad: float) -> None:
    busy, idle = busy_and_idle(world)
    faulty = world.table("valued", 200, 200)
    world.traffic(faulty, "read", 120)

    def spoil(result: dict[str, Any]) -> None:
        result["Values"] = [bad for _ in result["Values"]]

    change_metric_results(world, faulty, spoil)
    world.tick()
    assert_handled(world, busy, idle)
    assert world.throughput(faulty) == (200, 5)  # busy read kept; the write had no data: idle


def test_a_max_tag_may_not_lower_a_limit_while_the_load_is_unknown(world: World) -> None:
    # GIVEN a table tagged write-max=150, its writes (100/s) throttled in the newest minutes,
    # and the oldest minute of each of its metrics NaN: its consumption is not known
    busy, idle = busy_and_idle(world)
    unsure = world.table("unsure", 100, 100, tags={"ddb-capacity:write-max": "150"})
    world.traffic(unsure, "write", 100)
    world.traffic(unsure, "write", 0, throttles=3000, minutes=range(1, 3))

    def spoil(result: dict[str, Any]) -> None:
        if result["Values"]:  # the oldest minute, whatever the order of the answer
            oldest = result["Timestamps"].index(min(result["Timestamps"]))
            result["Values"][oldest] = math.nan

    change_metric_results(world, unsure, spoil)
    # WHEN a tick runs
    summary, events = world.tick()
    # THEN the tag does not cap the raise the known throttles ask for
    assert_handled(world, busy, idle, lowered=True)
    assert world.throughput(unsure)[1] == 215  # (100 + 3000 / 60) / 0.7, not 150
    # AND the tag held back is said, but not counted (nor alarmed): it is not known to hurt
    assert "RefusedTags" not in emf(events, unsure) and "RefusedTags" not in emf(events, busy)
    (refused,) = [e for e in events if e.get("event") == "tag-refused"]
    assert refused["needs"] is None and "consumption is not known" in refused["reason"]
    assert summary["failures"] == []


def test_minutes_not_yet_delivered_are_not_idle(world: World) -> None:
    # GIVEN CloudWatch has delivered nothing newer than 4 minutes before the window's end,
    # and a table idle before that got busy since
    busy = world.table("busy", 100, 100)
    world.traffic(busy, "write", 100, minutes=range(4, 16))
    world.traffic(busy, "write", 0, throttles=3000, minutes=range(4, 6))
    idle = world.table("idle", 200, 200)
    faulty = world.table("woke", 200, 200)
    # WHEN a tick runs
    summary, events = world.tick()
    # THEN the throttled table is raised on what is known; nothing is lowered
    assert world.throughput(busy)[1] == 215
    assert world.throughput(idle) == (200, 200)
    assert world.throughput(faulty) == (200, 200)
    assert summary["failures"] == []


# ------------------------------------------------------------------ shared calls


@pytest.mark.parametrize(("service", "operation"), SHARED_CALLS)
def test_a_shared_call_that_keeps_failing_stops_every_decrease(
    world: World, service: str, operation: str
) -> None:
    # GIVEN a throttled table listed explicitly, an idle one, and one below its minimum; a
    # shared call fails with an error that is not a throttle
    busy, idle = busy_and_idle(world)
    low = world.table("low", 2, 2)
    error = client_error("ServiceUnavailable", operation)
    calls = fail_shared_call(world, service, operation, error)
    # WHEN a tick runs
    summary, events = world.tick(SCALER_TABLES=",".join((busy, idle, low)))
    # THEN it survived, made the call once (botocore's retries, below where the error is
    # injected, are the only ones: the library adds none), and lowered nothing
    assert len(calls) == 1
    assert world.throughput(idle) == (200, 200)
    assert world.throughput(low) == (5, 5)  # raised to the minimum: a raise on what it knows
    if operation != "GetMetricData":
        assert world.throughput(busy) == (100, 215)  # raised on the metrics it has
    (failure,) = summary["shared_failures"]
    assert failure.startswith(("scalable targets", "tag discovery", "GetMetricData"))
    assert emf(events, None)["SharedFailures"] == 1
    with pytest.raises(TickFailed, match="1 shared call\\(s\\) failed"):
        complete(TickSummary(**summary))


@pytest.mark.parametrize(("service", "operation"), SHARED_CALLS)
def test_a_throttled_shared_call_is_counted_and_no_other_decision_waits(
    world: World, service: str, operation: str
) -> None:
    # GIVEN a throttled table listed explicitly and an idle one; a shared call stays
    # throttled through every retry
    busy, idle = busy_and_idle(world)
    calls = fail_shared_call(
        world, service, operation, client_error("ThrottlingException", operation)
    )
    # WHEN a tick runs
    summary, events = world.tick(SCALER_TABLES=",".join((busy, idle)))
    # THEN it was made once (the library adds no retries to botocore's), counted as a
    # shared failure, and the tables whose data it could still read were decided as usual:
    # the idle one lowered, unless its minutes were what the throttled call would have read
    # (unknown never lowers)
    assert len(calls) == 1
    (failure,) = summary["shared_failures"]
    assert "ThrottlingException" in failure
    assert emf(events, None)["SharedFailures"] == 1
    assert [e for e in events if e.get("event") == "shared-call-throttled"]
    if operation == "GetMetricData":
        assert world.throughput(idle) == (200, 200)
        assert world.throughput(busy) == (100, 100)
    else:
        assert world.throughput(idle)[0] < 200
        assert world.throughput(busy) == (100, 215)
    with pytest.raises(TickFailed, match="1 shared call\\(s\\) failed"):
        complete(TickSummary(**summary))


def test_targets_that_cannot_be_read_leave_their_table_unchanged_and_fail_it_alone(
    world: World,
) -> None:
    # GIVEN two tables whose writes are under auto scaling (minimum 100) and throttled, and
    # the account's listing of scalable targets throttled past its retries; the table
    # "blind"'s own targets cannot be read either, the table "seen"'s can
    seen, blind = world.table("seen", 100, 100), world.table("blind", 100, 100)
    for name in (seen, blind):
        world.target(name, "write", 100, 1000)
        world.traffic(name, "write", 100)
        world.traffic(name, "write", 0, throttles=3000, minutes=range(1, 3))
    disarm = fail_before(
        world.aas,
        "DescribeScalableTargets",
        lambda p: "ResourceIds" not in p or resource_id(blind, None) in p["ResourceIds"],
        client_error("ThrottlingException", "DescribeScalableTargets"),
    )
    updates: list[str] = []
    world.ddb.meta.events.register(
        "before-parameter-build.dynamodb.UpdateTable",
        lambda params, **_: updates.append(params["TableName"]),
    )
    # WHEN a tick runs
    summary, events = world.tick()
    disarm()
    # THEN the table whose targets are known has its minimum moved, as ever (its writes
    # under the target are never sent UpdateTable; its idle reads are lowered, since a
    # throttled listing stops no other decision)
    assert world.target_min(seen, "write") == 215  # (100 + 3000 / 60) / 0.7
    assert world.throughput(seen) == (5, 100)
    # AND the other is left exactly as it is: no UpdateTable, no target moved
    assert world.throughput(blind) == (100, 100) and world.target_min(blind, "write") == 100
    assert blind not in updates
    # AND that is a failure of that table alone, besides the shared call's
    assert [f["table"] for f in summary["failures"]] == [blind]
    assert (
        "scalable targets not read (ThrottlingException: injected)"
        in (summary["failures"][0]["reason"])
    )
    assert emf(events, blind)["Failures"] == 1 and emf(events, seen)["Failures"] == 0
    assert [f.split(":")[0] for f in summary["shared_failures"]] == ["scalable targets"]
    assert emf(events, None)["Failures"] == 1


def unsound_entry(world: World, table: str, listing: str) -> Callable[[], None]:
    """Every answer of ``listing`` (``"targets"``: DescribeScalableTargets; ``"policies"``:
    DescribeScalingPolicies) lists ``table``'s entries without the field it needs most:
    a target's MinCapacity, a policy's ResourceId, until the returned function is called."""
    operation, field, key = {
        "targets": ("DescribeScalableTargets", "ScalableTargets", "MinCapacity"),
        "policies": ("DescribeScalingPolicies", "ScalingPolicies", "ResourceId"),
    }[listing]

    def unsound(parsed: dict[str, Any], **_: Any) -> None:
        for entry in parsed.get(field, []):
            if entry.get("ResourceId") == resource_id(table, None):
                del entry[key]

    event = f"after-call.application-auto-scaling.{operation}"
    world.aas.meta.events.register(event, unsound)
    return lambda: world.aas.meta.events.unregister(event, unsound)


@pytest.mark.parametrize("listing", ["targets", "policies"])
def test_an_unsound_entry_in_a_listing_fails_its_table_alone(world: World, listing: str) -> None:
    # GIVEN two tables whose writes are under auto scaling (minimum 100) and throttled, and
    # an entry of the table "odd" that Application Auto Scaling lists unsound
    seen, odd = world.table("seen", 100, 100), world.table("odd", 100, 100)
    for name in (seen, odd):
        world.target(name, "write", 100, 1000)
        world.traffic(name, "write", 100)
        world.traffic(name, "write", 0, throttles=3000, minutes=range(1, 3))
    disarm = unsound_entry(world, odd, listing)
    # WHEN a tick runs
    summary, events = world.tick()
    disarm()
    # THEN the table whose targets are sound is decided as ever: its minimum moved, and its
    # idle reads lowered (the unsound entry stops no decrease elsewhere)
    assert world.target_min(seen, "write") == 215
    assert world.throughput(seen) == (5, 100)
    # AND the other is left as it is, a failure of that table alone, the entry named
    assert world.throughput(odd) == (100, 100) and world.target_min(odd, "write") == 100
    assert [f["table"] for f in summary["failures"]] == [odd]
    assert "UnsoundListing" in summary["failures"][0]["reason"]
    (shared,) = summary["shared_failures"]
    assert shared.startswith("scalable targets: UnsoundListing") and odd in shared
    assert emf(events, None)["SharedFailures"] == 1 and emf(events, None)["Failures"] == 1


NULLS = {
    "a null target": ("DescribeScalableTargets", "ScalableTargets", None),
    "a null policy": ("DescribeScalingPolicies", "ScalingPolicies", None),
    "a null policy configuration": (
        "DescribeScalingPolicies",
        "ScalingPolicies",
        "TargetTrackingScalingPolicyConfiguration",
    ),
}


@pytest.mark.parametrize("null", NULLS)
def test_a_null_in_a_listing_fails_its_table_alone(world: World, null: str) -> None:
    # GIVEN two tables throttled under auto scaling (minimum 100), an idle one, and a null
    # (JSON's, which botocore passes through as None) where Application Auto Scaling lists
    # the entry of the table "odd", or that entry's policy configuration
    seen, odd = world.table("seen", 100, 100), world.table("odd", 100, 100)
    idle = world.table("idle", 200, 200)
    for name in (seen, odd):
        world.target(name, "write", 100, 1000)
        world.traffic(name, "write", 100)
        world.traffic(name, "write", 0, throttles=3000, minutes=range(1, 3))
    operation, field, key = NULLS[null]

    def nulled(parsed: dict[str, Any], **_: Any) -> None:
        entries = parsed.get(field, [])
        for i, entry in enumerate(entries):
            if entry and entry.get("ResourceId") == resource_id(odd, None):
                if key is None:
                    entries[i] = None
                else:
                    entry[key] = None

    event = f"after-call.application-auto-scaling.{operation}"
    world.aas.meta.events.register(event, nulled)
    # WHEN a tick runs
    try:
        summary, events = world.tick()
    finally:
        world.aas.meta.events.unregister(event, nulled)
    # THEN the other tables are decided as ever: a raise, and decreases (the null stops
    # no decrease elsewhere)
    assert world.target_min(seen, "write") == 215
    assert world.throughput(seen) == (5, 100)
    assert world.throughput(idle) == (5, 5)
    # AND "odd" is left as it is, a failure of that table alone, counted
    assert world.throughput(odd) == (100, 100) and world.target_min(odd, "write") == 100
    assert [f["table"] for f in summary["failures"]] == [odd]
    assert "UnsoundListing" in summary["failures"][0]["reason"]
    assert emf(events, None)["Failures"] == 1


def test_a_null_target_in_a_re_read_under_the_lease_leaves_the_tables_other_changes(
    world: World,
) -> None:
    # GIVEN a table throttled on both dimensions, its writes under a scalable target (the
    # minimum moved under the dimension's lease, after the target is read again) and its
    # reads without one (an UpdateTable)
    name = world.table("mixed", 100, 100)
    world.target(name, "write", 100, 1000)
    for dim in ("read", "write"):
        world.traffic(name, dim, 100)
        world.traffic(name, dim, 0, throttles=3000, minutes=range(1, 3))

    def reread(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["reread"] = "ScalableDimension" in params  # one target, read again

    def nulled(parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if context.get("reread"):
            parsed["ScalableTargets"] = [None]

    events: list[tuple[str, Callable[..., None]]] = [
        ("before-parameter-build.application-auto-scaling.DescribeScalableTargets", reread),
        ("after-call.application-auto-scaling.DescribeScalableTargets", nulled),
    ]
    for event, hook in events:
        world.aas.meta.events.register(event, hook)
    # WHEN a tick runs, the re-read answering a null where the target is
    try:
        summary, _ = world.tick()
    finally:
        for event, hook in events:
            world.aas.meta.events.unregister(event, hook)
    # THEN the minimum is not moved on an answer that says nothing sound, a failure of
    # the table counted (a null that lasts alarms), and the table's other change, the
    # reads' UpdateTable, is made
    assert world.target_min(name, "write") == 100
    assert world.throughput(name)[0] == 215
    assert [f["table"] for f in summary["failures"]] == [name]
    assert "an entry of ScalableTargets is None" in summary["failures"][0]["reason"]


def test_unsound_entries_of_tag_discovery_are_counted_and_hide_no_table(world: World) -> None:
    # GIVEN tag discovery answering entries that name no table, and one table's tags unsound
    busy, idle = busy_and_idle(world)
    odd = world.table("odd", 300, 300)
    disarm = unsound_tagging(world, odd, NO_TABLES)
    # WHEN a tick runs
    summary, events = world.tick()
    disarm()
    # THEN every table discovered is decided, the odd one with its tags read on its own
    assert_handled(world, busy, idle)
    assert world.throughput(odd) == (5, 5) and summary["failures"] == []
    # AND each unsound entry is a counted shared failure that forbids no decrease
    shared = summary["shared_failures"]
    assert len(shared) == 4 and all(s.startswith("tag discovery: GetResources") for s in shared)
    assert sum("names no table" in s for s in shared) == 3 and odd in shared[0] + shared[-1]
    assert emf(events, None)["SharedFailures"] == 4


def test_a_tag_discovery_page_without_its_list_is_counted_and_hides_nothing(
    world: World,
) -> None:
    # GIVEN tag discovery answering a page without its ResourceTagMappingList
    busy, idle = busy_and_idle(world)

    def listless(parsed: dict[str, Any], **_: Any) -> None:
        parsed.pop("ResourceTagMappingList", None)

    tagging = world.clients.tagging
    event = "after-call.resource-groups-tagging-api.GetResources"
    tagging.meta.events.register(event, listless)
    # WHEN a tick runs
    summary, events = world.tick()
    tagging.meta.events.unregister(event, listless)
    # THEN no table is taken as found or as untagged: the tables it may name wait for the
    # next tick, and the page is a counted shared failure
    assert world.throughput(busy) == (100, 100) and world.throughput(idle) == (200, 200)
    (shared,) = summary["shared_failures"]
    assert shared.startswith("tag discovery: UnsoundListing: GetResources: a page without")
    assert emf(events, None)["SharedFailures"] == 1


def test_a_batch_table_whose_tags_are_unsound_fails_alone(world: World) -> None:
    # GIVEN a batch of three tables found by tag, one whose tags the tagging API gives
    # unsound, its answer carrying entries that name no table too
    busy, idle = busy_and_idle(world)
    odd = world.table("odd", 300, 300)
    disarm = unsound_tagging(world, odd, NO_TABLES)
    batch = Batch(world.now, world.now + timedelta(minutes=2), 1, 1, (busy, idle, odd))
    config = ScalerConfig.from_env({"SCALER_TAG_KEY": TAG_KEY, "SCALER_TAG_VALUE": world.run_id})
    # WHEN the batch is ticked
    out = io.StringIO()
    summary = run_tick(config, world.clients, world.now, out, store=world.store, batch=batch)
    disarm()
    # THEN the others are decided, and the odd one (whether it carries the discovery tag is
    # not known) is left as it is, a failure of that table alone
    assert_handled(world, busy, idle)
    assert world.throughput(odd) == (300, 300)
    assert [f["table"] for f in summary["failures"]] == [odd]
    assert "tags could not be read" in summary["failures"][0]["reason"]
    # AND the unsound entries are counted shared failures
    shared = summary["shared_failures"]
    assert len(shared) == 4 and all(s.startswith("table tags: GetResources") for s in shared)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert emf(records, None)["SharedFailures"] == 4 and emf(records, None)["Failures"] == 1


@pytest.mark.parametrize(
    ("arn", "name"),
    [
        ("arn:aws:dynamodb:us-east-1:123456789012:table/Orders", "Orders"),
        ("arn:aws-cn:dynamodb:cn-north-1:123456789012:table/a.b-c_d/stream/2026", "a.b-c_d"),
        ("arn:aws:dynamodb:us-east-1:123456789012:table/Orders/index/byUser", "Orders"),
        ("arn:aws:dynamodb::123456789012:global-table/Orders", None),
        ("arn:aws:s3:::bucket:table/Orders", None),
        ("arn:aws:dynamodb:us-east-1:123456789012:table/", None),
        ("arn:aws:dynamodb:us-east-1:123456789012:table/a b", None),
        ("table/Orders", None),
        (None, None),
        (42, None),
    ],
)
def test_the_table_of_an_arn_is_told_only_when_it_names_one(arn: object, name: str | None) -> None:
    assert table_of_arn(arn) == name


@pytest.mark.parametrize(
    ("listing", "tags"),
    [
        ([{"Key": "a", "Value": "1"}, {"Key": "b", "Value": ""}], {"a": "1", "b": ""}),
        ([], {}),
        ([{"Key": "a"}], None),
        ([{"Key": "a", "Value": 1}], None),
        ([{"Key": "a", "Value": "1"}, "b"], None),
        ({"Key": "a", "Value": "1"}, None),
        ("a=1", None),
        (None, None),
    ],
)
def test_a_tag_listing_is_read_whole_or_not_at_all(listing: object, tags: object) -> None:
    assert tags_of(listing) == tags


def test_a_shared_call_that_recovers_on_retry_is_not_a_failure(world: World) -> None:
    # GIVEN Application Auto Scaling throttles the first attempt of the tick's listing of
    # the scalable targets, as AWS does over its rate
    from botocore.awsrequest import AWSResponse

    busy, idle = busy_and_idle(world)
    sent: list[int] = []

    def answer(request: Any, **_: Any) -> AWSResponse | None:
        sent.append(1)
        if len(sent) > 1:
            return None
        body = b'{"__type":"ThrottlingException","message":"Rate exceeded"}'
        headers = HTTPHeaders.from_dict({"Content-Type": "application/x-amz-json-1.1"})
        return AWSResponse(request.url, 400, headers, _Raw(body))

    event = "before-send.application-auto-scaling.DescribeScalableTargets"
    world.aas.meta.events.register(event, answer)
    # WHEN a tick runs
    summary, _ = world.tick()
    world.aas.meta.events.unregister(event, answer)
    # THEN botocore retried it (the library adds no retry of its own), and the tick went
    # on as usual
    assert_handled(world, busy, idle)
    assert len(sent) >= 2 and summary["shared_failures"] == []


# ------------------------------------------------------------------ the autopilot's forecast


def history_queries(params: dict[str, Any]) -> bool:
    """GetMetricData calls that read the forecast's history (5-minute steps)."""
    return any(q["MetricStat"]["Period"] == 300 for q in params["MetricDataQueries"])


@pytest.mark.parametrize("code", ["ThrottlingException", "ServiceUnavailable"])
def test_a_failing_history_read_keeps_the_plans_and_stops_decreases_unless_throttled(
    world: World, code: str
) -> None:
    # GIVEN the first tick of an hour in autopilot mode: a throttled table, an idle one,
    # and one whose plan from the hour before asks for 900 writes now
    world.now = world.now.replace(minute=0)
    busy, idle = busy_and_idle(world)
    minute = int(world.now.timestamp() // 60)
    planned = world.table("planned", 100, 100, forecast_minute=0)
    world.set_plan(planned, "write", f"{minute - 15}:70:0:0:900/900/900/900")
    calls: list[int] = []

    def count(params: dict[str, Any]) -> bool:
        calls.append(1)
        return history_queries(params)

    fail_before(world.cw, "GetMetricData", count, client_error(code, "x"))
    # WHEN the tick runs and every read of the history fails
    summary, events = world.tick(SCALER_MODE="autopilot")
    # THEN the one page of history was asked for once (botocore's retries are the only
    # ones): the tick's own minutes, the history, the throttle events of the busy table and
    # of the idle one about to be lowered, the busy table's throttles by cause (and, where
    # decreases go on, the idle table's delivery witness before it is lowered)
    throttled = code == "ThrottlingException"
    assert len(calls) == 1 + 1 + 1 + 1 + throttled
    # THEN it survived; the raises on what it knows went ahead, the kept plan among them
    assert world.throughput(busy) == (100, 215)
    assert world.throughput(planned)[1] == 900
    assert world.plan(planned, "write") is not None  # not dropped for a failed read
    # the failed read is a shared failure, counted; a throttle loses the new plans alone
    # and the idle table is lowered as usual, any other failure stops every decrease
    (failure,) = summary["shared_failures"]
    assert failure.startswith("forecast history") and code in failure
    assert emf(events, None)["SharedFailures"] == 1
    assert not [e for e in events if e.get("event") == "forecast"]
    assert world.throughput(idle) == ((5, 5) if throttled else (200, 200))


@pytest.mark.parametrize("bad", [math.nan, -1.0, math.inf])
def test_bad_values_in_one_tables_history_are_unknown_not_idle(world: World, bad: float) -> None:
    # GIVEN two tables with the same daily write spike, and bad values in all of one's history
    world.now = world.now.replace(minute=0)
    clean = world.table("clean", 10, 10, forecast_minute=0)
    faulty = world.table("faulty", 10, 10, forecast_minute=0)
    for name in (clean, faulty):
        world.daily_spikes(name, world.now, first_minute=40, per_second=6_000)
    ids: set[str] = set()

    def before(params: dict[str, Any], **_: Any) -> None:
        for q in params["MetricDataQueries"]:
            dims = q["MetricStat"]["Metric"]["Dimensions"]
            if q["MetricStat"]["Period"] == 300 and {"Name": "TableName", "Value": faulty} in dims:
                ids.add(q["Id"])

    def after(parsed: dict[str, Any], **_: Any) -> None:
        for result in parsed.get("MetricDataResults", []):
            if result["Id"] in ids:
                result["Values"] = [bad] * len(result["Values"])

    world.cw.meta.events.register("before-parameter-build.cloudwatch.GetMetricData", before)
    world.cw.meta.events.register("after-call.cloudwatch.GetMetricData", after)
    # WHEN the hour's first tick forecasts
    summary, events = world.tick(SCALER_MODE="autopilot")
    # THEN the clean table is planned; the faulty one's spikes are unknown steps, skipped:
    # no plan from them (an infinite value is no 40,000 floor), and no failure of the tick
    forecasts = {(e["table"], e["dimension"]): e for e in events if e.get("event") == "forecast"}
    assert forecasts[(clean, "write")]["plan"] is not None
    assert forecasts[(faulty, "write")]["plan"] is None
    assert world.plan(clean, "write") is not None
    assert world.plan(faulty, "write") is None
    assert summary["failures"] == [] and summary["shared_failures"] == []


def test_a_plan_that_cannot_be_kept_is_a_failure_of_its_table_and_still_raises(
    world: World,
) -> None:
    # GIVEN two tables with the same daily write spike from 10 minutes past the hour
    world.now = world.now.replace(minute=0)
    faulty = world.table("unkept", 10, 10, forecast_minute=0)
    healthy = world.table("kept", 10, 10, forecast_minute=0)
    for name in (faulty, healthy):
        world.daily_spikes(name, world.now, first_minute=10, per_second=600)
    fail_before(
        world.store_ddb,
        "UpdateItem",
        lambda p: p["Key"]["pk"]["S"] == faulty and "#p" in p["UpdateExpression"],
        client_error("InternalServerError", "UpdateItem"),  # the state store failing
    )
    # WHEN the hour's first tick plans both
    summary, events = world.tick(SCALER_MODE="autopilot")
    # THEN both are raised to the plan's floor this tick (the spike is 20 minutes away)
    assert world.throughput(faulty)[1] == world.throughput(healthy)[1] == 667  # 600 / 0.9
    # the plan is kept for the healthy one only, and the other's failure is counted
    assert world.plan(healthy, "write") is not None
    assert world.plan(faulty, "write") is None
    (failure,) = summary["failures"]
    assert failure["table"] == faulty and "keeping the forecast's plans" in failure["reason"]
    assert emf(events, faulty)["Failures"] == 1 and emf(events, healthy)["Failures"] == 0


def test_a_stale_listing_of_targets_never_becomes_the_configured_minimum(world: World) -> None:
    # GIVEN a minimum the library holds at 200 over a configured 100, and an account-wide
    # listing of targets that still says 300 (it was read before a release lowered it)
    busy, idle = busy_and_idle(world)
    faulty = world.table("stale", 300, 300)
    world.target(faulty, "read", 200, 1000)
    with world.store.lease(faulty, None, "read", deadline=time.time() + 5) as lease:
        lease.write(100, set_to=200)

    def stale(parsed: dict[str, Any], params: dict[str, Any], **_: Any) -> None:
        if "ResourceIds" in params:
            return  # a listing of one target is read now
        for t in parsed.get("ScalableTargets", []):
            if t["ResourceId"] == f"table/{faulty}" and "Read" in t["ScalableDimension"]:
                t["MinCapacity"] = 300

    params: dict[str, Any] = {}

    def remember(**kwargs: Any) -> None:
        params.clear()
        params.update(kwargs["params"])

    world.aas.meta.events.register(
        "before-parameter-build.application-autoscaling.DescribeScalableTargets", remember
    )
    world.aas.meta.events.register(
        "after-call.application-autoscaling.DescribeScalableTargets",
        lambda parsed, **kw: stale(parsed, params),
    )
    # WHEN a tick runs
    summary, events = world.tick()
    # THEN the configured minimum is still 100: what the listing said was checked against
    # the target itself before anything was written
    assert_handled(world, busy, idle)
    state = world.store.get(faulty, None, "read")
    assert state is not None and (state.base, state.set_to) == (100, 200)
    assert world.target_min(faulty, "read") == 200
    assert summary["failures"] == []


def test_a_hold_recorded_after_the_tick_read_the_store_is_never_lowered_under(
    world: World,
) -> None:
    # GIVEN a calm table whose minimum the library holds at 500 over a configured 100
    busy, idle = busy_and_idle(world)
    faulty = raised_minimum(world, "heldlate")
    # AND a capacity request that records a hold of 300 right after the tick's read
    late = Hold("latecomer01", None, "write", 295, world.now + timedelta(minutes=30), 5)

    def record(**_: Any) -> None:
        world.store.dynamodb.meta.events.unregister("after-call.dynamodb.Scan", record)
        with world.store.lease(faulty, None, "write", deadline=time.time() + 5) as lease:
            lease.write(holds=[late])

    world.store.dynamodb.meta.events.register("after-call.dynamodb.Scan", record)
    # WHEN a tick would lower the minimum to the configured 100
    summary, events = world.tick()
    # THEN it does not: the hold it had not seen needs 300, and the next tick decides again
    assert_handled(world, busy, idle)
    assert world.target_min(faulty, "write") == 500
    (row,) = [
        e
        for e in events
        if e.get("event") == "decision" and e["table"] == faulty and e["dimension"] == "write"
    ]
    assert (
        row["status"] == "retry-next-tick" and row["error"] == "a hold since it was read needs 300"
    )
    assert summary["failures"] == []


def newly_tagged_with_a_forged_memory(world: World, base: str) -> str:
    """A table newly brought into scope with a write minimum of 400 and a 0.4 memory
    claiming the library raised it from 1 (so that a calm tick would restore 1)."""
    name = world.table(base, 300, 400, tags={base_min_tag(None, "write"): "1:400"})
    world.target(name, "write", 400, 1000)
    return name


def test_a_0_4_state_tag_is_removed_unread_outside_an_upgrades_window(world: World) -> None:
    # GIVEN a table newly tagged for discovery, carrying a forged 0.4 memory of its write
    # minimum (two healthy tables beside it), and no upgrade's window open
    forged = newly_tagged_with_a_forged_memory(world, "forged")
    busy, idle = busy_and_idle(world)
    # WHEN two calm ticks run
    summary, events = world.tick()
    assert_handled(world, busy, idle)
    world.tick()
    # THEN the tag was not read: nothing remembered, the minimum stays 400; the tag is
    # removed, counted and logged with why
    assert world.target_min(forged, "write") == 400 and world.store.table(forged) == []
    assert base_min_tag(None, "write") not in world.tags(forged)
    assert emf(events, forged)["IgnoredTags"] == 1 and summary["failures"] == []
    (ignored,) = [e for e in events if e.get("event") == "tag-ignored" and e["table"] == forged]
    assert "upgrade's window" in ignored["reason"] and "not read" in ignored["reason"]


@pytest.mark.parametrize("configured", [None, 400])
def test_a_0_4_state_tag_never_lowers_a_minimum_even_in_an_upgrades_window(
    world: World, configured: int | None
) -> None:
    # GIVEN the same forged memory, read in an upgrade's window, on a table whose minimum
    # the deployment does not state (400 is the target's), or states as 400
    forged = newly_tagged_with_a_forged_memory(world, "forged")
    busy, idle = busy_and_idle(world)
    env = upgrade_window(world.now)
    if configured is not None:
        env.update(configured_min(forged, "write", configured))
    # WHEN two calm ticks run
    summary, events = world.tick(**env)
    assert_handled(world, busy, idle)
    world.tick(**env)
    # THEN the memory moved has a base of no less than the configured 400: the minimum
    # stays 400, and the tag is gone
    assert world.target_min(forged, "write") == 400
    assert world.memory(forged, "write") is None
    assert base_min_tag(None, "write") not in world.tags(forged)
    (moved,) = [e for e in events if e.get("event") == "state-moved-from-tags"]
    assert moved["moved"] == [{"index": None, "dimension": "write", "base": 400, "set": None}]
    assert summary["failures"] == []


def test_an_upgrade_moves_the_remembered_minimum_into_the_store(world: World) -> None:
    # GIVEN a table configured at a write minimum of 100 that 0.4 raised to 400 and
    # remembered in its tag, in an upgrade's window
    upgraded = world.table("upgraded", 300, 400, tags={base_min_tag(None, "write"): "100:400"})
    world.target(upgraded, "write", 400, 1000)
    env = {**upgrade_window(world.now, days=30), **configured_min(upgraded, "write", 100)}
    # WHEN the first tick runs
    summary, events = world.tick(**env)
    # THEN the memory is in the store, the tag gone, nothing counted as ignored
    assert world.memory(upgraded, "write") == "100:400"
    assert base_min_tag(None, "write") not in world.tags(upgraded)
    assert "IgnoredTags" not in emf(events, upgraded) and summary["failures"] == []
    # AND once calm, the configured minimum comes back
    busy, idle = busy_and_idle(world)
    world.tick(**env)
    assert_handled(world, busy, idle)
    assert world.target_min(upgraded, "write") == 100


def test_a_move_of_state_tags_that_fails_half_way_is_done_again(world: World) -> None:
    # GIVEN a table with a 0.4 memory (configured 400, raised to 500) whose tags cannot be
    # removed on the first try, in an upgrade's window
    faulty = world.table("halfway", 300, 500, tags={base_min_tag(None, "write"): "400:500"})
    world.target(faulty, "write", 500, 1000)
    env = {**upgrade_window(world.now), **configured_min(faulty, "write", 400)}
    arn = world.ddb.describe_table(TableName=faulty)["Table"]["TableArn"]
    disarm = fail_before(
        world.ddb,
        "UntagResource",
        lambda p: p["ResourceArn"] == arn,
        client_error("InternalServerError", "UntagResource"),
    )
    summary, _ = world.tick(**env)
    assert [f["table"] for f in summary["failures"]] == [faulty]
    disarm()
    busy, idle = busy_and_idle(world)
    # WHEN the next tick runs
    summary, events = world.tick(**env)
    # THEN the move is finished: the memory is kept, the tags are gone, nothing is counted
    # as ignored (they were the table's own 0.4 state, not tags written after the move)
    # (the calm table's minimum comes back to the configured 400)
    assert_handled(world, busy, idle)
    assert world.target_min(faulty, "write") == 400
    assert base_min_tag(None, "write") not in world.tags(faulty)
    assert "IgnoredTags" not in emf(events, faulty) and summary["failures"] == []


def test_state_tags_on_a_table_that_never_had_state_are_not_state(world: World) -> None:
    # GIVEN a table with a write minimum of 400 that a tick has seen once
    faulty = world.table("neverstate", 300, 400)
    world.target(faulty, "write", 400, 1000)
    world.tick()
    # WHEN someone allowed to tag it writes a memory that makes the configured minimum 1
    busy, idle = busy_and_idle(world)
    arn = world.ddb.describe_table(TableName=faulty)["Table"]["TableArn"]
    world.ddb.tag_resource(
        ResourceArn=arn, Tags=[{"Key": base_min_tag(None, "write"), "Value": "1:400"}]
    )
    summary, events = world.tick()
    # THEN it is not read as state: removed and counted; the minimum stays 400
    assert_handled(world, busy, idle)
    assert world.target_min(faulty, "write") == 400 and not any(
        s.holding for s in world.store.table(faulty)
    )
    assert base_min_tag(None, "write") not in world.tags(faulty)
    assert emf(events, faulty)["IgnoredTags"] == 1 and summary["failures"] == []
    # and logged one event a tag, with its key, as discovery logs other ignored tags
    (ignored,) = [e for e in events if e.get("event") == "tag-ignored" and e["table"] == faulty]
    assert ignored["key"] == base_min_tag(None, "write")


def test_throttled_attempts_are_counted_and_retried_by_botocore(world: World) -> None:
    # GIVEN DynamoDB's control plane answers the tick's first two DescribeTable attempts
    # with ThrottlingException, as AWS does over its rate (botocore retries it)
    busy, idle = busy_and_idle(world)
    assert world.store  # made before: its creation waits with DescribeTable
    throttled = throttle_first(world.ddb, "DescribeTable", 2)
    # WHEN a tick runs
    summary, events = world.tick(SCALER_TABLES=",".join((busy, idle)))
    # THEN botocore retried them, the tick went on as usual, and the tick's record counts them
    assert throttled == [0]
    assert summary["failures"] == [] and summary["shared_failures"] == []
    assert_handled(world, busy, idle)
    assert emf(events, None)["ControlPlaneThrottles"] == 2


@pytest.mark.parametrize("minimum", [2.5, "100", -1, True, None])
def test_a_targets_minimum_read_under_its_lease_is_a_whole_number_or_unsound(
    world: World, minimum: object
) -> None:
    # GIVEN a table whose write target Application Auto Scaling lists with a MinCapacity
    # that is not a whole number from 0, when it is read alone (as a lease reads it)
    name = world.table("leased", 100, 100)
    world.target(name, "write", 100, 1000)
    target = ScalableTarget(resource_id(name, None), WRITES, 100, 1000, target_tracking=True)
    assert current_minimum(world.aas, target) == 100

    def odd(parsed: dict[str, Any], **_: Any) -> None:
        for entry in parsed.get("ScalableTargets", []):
            entry["MinCapacity"] = minimum

    event = "after-call.application-auto-scaling.DescribeScalableTargets"
    world.aas.meta.events.register(event, odd)
    # WHEN it is read, THEN the answer is unsound (counted by the caller), never a number
    # made of it
    try:
        with pytest.raises(UnsoundListing, match="MinCapacity"):
            current_minimum(world.aas, target)
    finally:
        world.aas.meta.events.unregister(event, odd)


def test_a_dimension_counts_at_its_max_from_the_max_itself(world: World) -> None:
    # GIVEN two tables whose writes (busy, within target) are under targets of max 1,000:
    # one provisioned at 1,000, the other one unit below
    at_max, below = world.table("at-max", 100, 1_000), world.table("below", 100, 999)
    for name in (at_max, below):
        world.target(name, "write", 100, 1_000)
        world.traffic(name, "write", 600, minutes=range(0, 40))
        world.traffic(name, "read", 60, minutes=range(0, 40))
    # WHEN a tick runs
    summary, events = world.tick()
    # THEN the one at its max counts (its alarm says the table can grow no more), the other not
    assert summary["failures"] == []
    assert (emf(events, at_max)["CapacityAtMax"], emf(events, below)["CapacityAtMax"]) == (1, 0)
