"""A dimension whose delivery witness DynamoDB has not published yet (a GSI added to an
older table, a new replica's Region, a table switched back from on-demand long after it
went): its decrease on minutes read as idle is held, but counted as a stall only once the
scaler has found it unpublished for `NEW_MINUTES` (the state store keeps since when), so
adding an index pages nobody; a witness that was published and then stopped is a stall at
once, and stays one however long it lasts. Against a moto server, DescribeTable's times
set as an older table's would be."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ddb_capacity_runtime.aws.store import MARKER
from ddb_capacity_runtime.core.delivery import (
    MISSING_MARK,
    NEW_MINUTES,
    WITNESS_MINUTES,
    WITNESS_READ_MINUTES,
    Verdict,
    missing_mark,
    missing_marks,
    missing_since,
    provisioned_newest,
    verdict,
)
from ddb_capacity_tools.local_aws import put_traffic, put_witness
from tests.support.delivery_witness import decisions, on_time, stalled
from tests.support.faults import client_error, emf, fail_before
from tests.support.moto_world import LAG, WITNESS_AHEAD, World
from tests.support.replica_scaler import EU, US
from tests.support.replica_scaler import worlds as worlds  # noqa: F401 (fixture)

DAY = timedelta(days=1)


@pytest.fixture
def world(aws_client: Any) -> Iterator[World]:
    made = World(aws_client)
    yield made
    made.close()


def described(world: World, table: str, **fields: Any) -> None:
    """DescribeTable answers ``table`` with ``fields`` in place of moto's (its times)."""

    def after(parsed: dict[str, Any], **_: Any) -> None:
        found = parsed.get("Table")
        if isinstance(found, dict) and found.get("TableName") == table:
            found.update(fields)

    world.ddb.meta.events.register("after-call.dynamodb.DescribeTable", after)


def published(world: World, table: str, index: str | None = None, units: int = 200) -> None:
    """``table``'s (or ``index``'s) provisioned capacity published from an hour before the
    world's now to `WITNESS_AHEAD` after."""
    periods = 12 + WITNESS_AHEAD // timedelta(minutes=5)
    put_witness(
        world.cw,
        table,
        end=world.now + WITNESS_AHEAD,
        periods=periods,
        index=index,
        units=(units, units),
    )


def store_delivered(world: World, at: datetime) -> None:
    """The state store's reads delivered up to 3 minutes before ``at``: the tick then takes
    the older minutes for delivered."""
    put_traffic(world.cw, world.store.name, "read", 0.5, end=at, minutes=range(3, 40))


def witness_marks(world: World, table: str) -> list[str]:
    """The state store's markers of ``table``'s witnesses found unpublished."""
    marks = world.store.scan()[1]
    return sorted(w for name, w in marks if name == table and w.startswith(MISSING_MARK))


def gsi_just_added(world: World) -> str:
    """A table created a day ago, its provisioned capacity published, with a GSI just added
    to it, none of whose provisioned capacity is published yet (both idle); and a busy table
    whose minutes are delivered (`on_time`). Returns the first's name."""
    table = world.table("indexed", 200, 200, gsi=(100, 100), witness=False)
    published(world, table)
    described(world, table, CreationDateTime=world.now - DAY)
    on_time(world)
    return table


def test_a_gsi_added_to_an_older_table_is_held_and_counted_only_after_an_hour(
    world: World,
) -> None:
    # GIVEN a table created a day ago, its provisioned capacity published, and a GSI just
    # added to it: idle, and none of its provisioned capacity published yet
    table = gsi_just_added(world)
    # WHEN a tick runs
    summary, lines = world.tick(SCALER_MODE="reactive")
    # THEN the table is lowered, its witness delivered; the GSI keeps its capacity
    assert world.throughput(table) == (5, 5)
    assert world.throughput(table, "byUser") == (100, 100)
    # AND the GSI's held decreases are not counted as a stall: an info event says why
    assert "MetricsStalled" not in emf(lines, table)
    assert not decisions(lines, "metrics-stalled", table)
    awaited = decisions(lines, "witness-awaited", table)
    assert {(e["index"], e["dimension"], e["verdict"]) for e in awaited} == {
        ("byUser", "read", "new"),
        ("byUser", "write", "new"),
    }
    assert summary["failures"] == []
    # AND the state store keeps since when each was found unpublished
    assert len(witness_marks(world, table)) == 2
    # WHEN a tick runs an hour later, the GSI still without a witness
    later = world.now + timedelta(minutes=NEW_MINUTES)
    store_delivered(world, later)
    summary, lines = world.tick(later, SCALER_MODE="reactive")
    # THEN it is held, and now counted: DynamoDB publishes a new GSI's well within that
    assert world.throughput(table, "byUser") == (100, 100)
    assert emf(lines, table)["MetricsStalled"] == 2
    assert {e["index"] for e in decisions(lines, "metrics-stalled", table)} == {"byUser"}
    assert len(witness_marks(world, table)) == 2
    # WHEN DynamoDB publishes it, and a tick runs
    published(world, table, "byUser", 100)
    summary, lines = world.tick(later, SCALER_MODE="reactive")
    # THEN the GSI is lowered, and its markers are gone (a GSI added later gets its hour)
    assert world.throughput(table, "byUser") == (5, 5)
    assert "MetricsStalled" not in emf(lines, table)
    assert witness_marks(world, table) == []


def test_a_table_switched_back_from_on_demand_long_after_it_went_is_not_a_stall_at_once(
    world: World,
) -> None:
    # GIVEN a table created three days ago, provisioned until it was switched to on-demand
    # two hours ago (DynamoDB published its provisioned capacity until then, not since),
    # and just switched back to provisioned: idle, nothing published yet
    table = world.table("switched", 200, 200, witness=False)
    went = world.now - 2 * timedelta(hours=1)
    put_witness(world.cw, table, end=went, periods=12, units=(200, 200))
    billing = {"BillingMode": "PROVISIONED", "LastUpdateToPayPerRequestDateTime": went}
    described(world, table, CreationDateTime=world.now - 3 * DAY, BillingModeSummary=billing)
    on_time(world)
    # WHEN a tick runs
    summary, lines = world.tick(SCALER_MODE="reactive")
    # THEN it keeps its capacity, not counted: what was published before it went is not
    # this provisioning's witness
    assert world.throughput(table) == (200, 200)
    assert "MetricsStalled" not in emf(lines, table)
    awaited = decisions(lines, "witness-awaited", table)
    assert {(e["dimension"], e["verdict"]) for e in awaited} == {("read", "new"), ("write", "new")}
    assert summary["failures"] == []


def test_a_new_replica_regions_witness_is_awaited_not_taken_for_a_stall(
    worlds: dict[str, World],
) -> None:
    # GIVEN a global table created here a day ago, idle, its witness delivered here, and a
    # replica just added in eu-west-1: idle there, none of its capacity published yet;
    # eu-west-1's CloudWatch delivers (a busy table there and here)
    us, eu = worlds[US], worlds[EU]
    name, busy = us.table("orders", 200, 200, tagged=False), us.table("busy", 200, 200)
    assert eu.table("orders", 200, 200, tagged=False, witness=False) == name
    assert eu.table("busy", 200, 200) == busy
    described(us, name, CreationDateTime=us.now - DAY)
    store_delivered(us, us.now)
    for each in (us, eu):
        for dimension in ("read", "write"):
            put_traffic(each.cw, busy, dimension, 120, end=each.now, minutes=range(LAG, 60))
    # WHEN us-east-1's scaler ticks
    summary, lines = us.tick(
        SCALER_MODE="reactive",
        SCALER_TABLES=f"{name},{busy}",
        SCALER_TAG_KEY="",
        SCALER_REPLICAS=json.dumps({t: {"regions": [EU]} for t in (name, busy)}),
    )
    # THEN its writes are held, its reads lowered; the held write is not a stall yet
    assert us.throughput(name) == (5, 200)
    assert "MetricsStalled" not in emf(lines, name)
    (awaited,) = decisions(lines, "witness-awaited", name)
    assert (awaited["dimension"], awaited["region"], awaited["verdict"]) == ("write", EU, "new")
    assert summary["failures"] == []
    assert len(witness_marks(us, name)) == 1


def test_a_stall_longer_than_the_witness_read_stays_counted(world: World) -> None:
    # GIVEN a table whose metrics stopped arriving 25 minutes ago (its witness 30)
    quiet = stalled(world)
    described(world, quiet, CreationDateTime=world.now - DAY)
    on_time(world)
    # WHEN a tick runs, then another once its last witness is older than what a tick reads
    _, lines = world.tick(SCALER_MODE="reactive")
    assert emf(lines, quiet)["MetricsStalled"] == 2
    later = world.now + timedelta(minutes=WITNESS_READ_MINUTES)
    store_delivered(world, later)
    _, lines = world.tick(later, SCALER_MODE="reactive")
    # THEN it is still held and counted: the state store kept when it was first found
    # without a recent witness, not an hour ago
    assert world.throughput(quiet) == (200, 200)
    assert emf(lines, quiet)["MetricsStalled"] == 2
    assert {e["witness"] for e in decisions(lines, "metrics-stalled", quiet)} == {None}


def test_a_stall_first_read_long_after_it_began_stays_counted_once_its_witness_leaves_the_read(
    world: World,
) -> None:
    # GIVEN a table whose last witness is 30 minutes old, first read two hours later (the
    # tick had no decrease to make before): a stall, counted
    quiet = stalled(world)
    described(world, quiet, CreationDateTime=world.now - DAY)
    first = world.now + timedelta(hours=2)
    store_delivered(world, first)
    _, lines = world.tick(first, SCALER_MODE="reactive")
    assert emf(lines, quiet)["MetricsStalled"] == 2
    # WHEN a tick runs once that witness has left what a tick reads, within an hour of the
    # first tick that found it missing
    later = world.now - timedelta(minutes=30) + timedelta(minutes=WITNESS_READ_MINUTES + 5)
    assert later - first < timedelta(minutes=NEW_MINUTES)
    store_delivered(world, later)
    _, lines = world.tick(later, SCALER_MODE="reactive")
    # THEN it is still held and counted: it went missing when its last datapoint stopped
    # being recent, not when a tick first read it so
    assert world.throughput(quiet) == (200, 200)
    assert emf(lines, quiet)["MetricsStalled"] == 2


def test_a_witness_delivered_keeps_no_state(world: World) -> None:
    # GIVEN an idle table whose witness is delivered
    idle = world.table("idle", 200, 200)
    on_time(world)
    writes: list[str] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        if params.get("TableName") == world.store.name:
            writes.append(params["Key"]["sk"]["S"])

    for call in ("PutItem", "UpdateItem", "DeleteItem"):
        world.store_ddb.meta.events.register(f"provide-client-params.dynamodb.{call}", record)
    # WHEN a tick lowers it
    world.tick(SCALER_MODE="reactive")
    # THEN the witness wrote nothing to the state store
    assert world.throughput(idle) == (5, 5)
    assert not [sk for sk in writes if sk.startswith(f"{MARKER}{MISSING_MARK}")]


def test_a_witness_found_missing_is_new_for_an_hour_from_when_it_was_first_found() -> None:
    now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    since = now - timedelta(minutes=30)
    began = now - DAY
    # none published: new while it was first found less than an hour ago
    assert verdict(None, now, since, began, missing=now) is Verdict.NEW
    assert verdict(None, now, since, began, missing=now - timedelta(minutes=59)) is Verdict.NEW
    late = now - timedelta(minutes=NEW_MINUTES)
    assert verdict(None, now, since, began, missing=late) is Verdict.STALLED
    # not known since when: a stall, as before
    assert verdict(None, now, since, began) is Verdict.STALLED
    # one published and stopped is a stall at once, found missing or not
    old = now - timedelta(minutes=WITNESS_MINUTES + 1)
    assert verdict(old, now, since, began, missing=now) is Verdict.STALLED
    # one published before the table last began to be provisioned is not its witness
    assert provisioned_newest(old, now - timedelta(minutes=10), now) is None
    assert provisioned_newest(old, now - timedelta(minutes=30), now) == old
    assert provisioned_newest(old, now + timedelta(minutes=10), now) == old  # began ahead
    # the read reaches past a stall's first hour: a stall found at its first tick stays one
    assert WITNESS_READ_MINUTES >= WITNESS_MINUTES + NEW_MINUTES


def test_a_marker_that_cannot_be_written_fails_the_table_and_counts_the_stall(
    world: World,
) -> None:
    # GIVEN the GSI of an older table not published yet, and the state store refusing the
    # marker of it
    table = gsi_just_added(world)
    fail_before(
        world.store_ddb,
        "UpdateItem",
        lambda params: MISSING_MARK in params["Key"]["sk"]["S"],
        client_error("InternalServerError", "UpdateItem"),
    )
    # WHEN a tick runs
    summary, lines = world.tick(SCALER_MODE="reactive")
    # THEN the GSI keeps its capacity; the table fails, naming the marker, and since when
    # its witness is missing is unknown: counted as a stall
    assert world.throughput(table, "byUser") == (100, 100)
    assert {f["table"] for f in summary["failures"]} == {table}
    assert all("witness marker" in f["reason"] for f in summary["failures"])
    assert emf(lines, table)["Failures"] == 1
    assert emf(lines, table)["MetricsStalled"] == 2


def test_markers_are_read_as_untrusted_and_of_this_provisioning_only() -> None:
    now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    key = ("orders", "byUser", "read")
    first = missing_mark(None, key, now - timedelta(minutes=40))
    later = missing_mark(None, key, now - timedelta(minutes=10))
    marks = [
        first,
        later,
        f"{MISSING_MARK}:here:index/byUser:read:soon",  # not a time
        f"{MISSING_MARK}:here:index/byUser:read:\u00b2",  # a digit, but not 0-9
        missing_mark(EU, key, now - DAY),  # another Region's
        missing_mark(None, (*key[:2], "write"), now - DAY),  # another dimension's
    ]
    found = missing_marks(marks, None, key)
    assert set(found) == {first, later, *marks[2:4]}
    assert found[marks[2]] is None and found[marks[3]] is None
    # the earliest sound one
    assert missing_since(found, now - DAY, now) == now - timedelta(minutes=40)
    # one before the table last began to be provisioned is of an earlier provisioning; a
    # tick's time may be up to a witness period before it (scheduled, then run)
    assert missing_since(found, now - timedelta(minutes=30), now) == now - timedelta(minutes=10)
    assert missing_since(found, now - timedelta(minutes=14), now) == now - timedelta(minutes=10)
    assert missing_since(found, now - timedelta(minutes=4), now) is None
    # one ahead of now by more than a period is not trusted; a began ahead of now is not
    ahead = {missing_mark(None, key, now + timedelta(minutes=6)): now + timedelta(minutes=6)}
    assert missing_since(ahead, None, now) is None
    assert missing_since(found, now + DAY, now) == now - timedelta(minutes=40)


def test_a_dry_run_keeps_no_marker_and_counts_a_witness_never_published(world: World) -> None:
    # GIVEN the GSI of an older table not published yet
    table = gsi_just_added(world)
    # WHEN a dry run ticks
    _, lines = world.tick(SCALER_MODE="reactive", SCALER_DRY_RUN="true")
    # THEN it writes no marker, so since when the witness is missing is not known: the
    # GSI's held decreases are counted, as a dry run changes nothing
    assert witness_marks(world, table) == []
    assert emf(lines, table)["MetricsStalled"] == 2
