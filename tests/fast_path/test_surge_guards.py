"""What the signals function does with what it cannot trust, against real parts (tables,
targets and CloudWatch in a moto server, the state store in dynalite; a botocore hook only to
fail a call as moto never does, to let a restore run as a report takes its lease, or to count
calls): a report it has no room to hear, a dimension whose state store fails while the others
go on, made-up combiner entries, an on-demand table; every refusal of the surge cap counted,
an explicit budget never widened; a surge raised on the reports alone goes on only while
DynamoDB's own measure (CloudWatch's last minutes, or the stream's rate) confirms it, and a
read that fails never ends it; a surge held never cut; the hook's report kept within the
contract, and a setting over its bound refused naming its variable."""

from __future__ import annotations

import dataclasses
import math
import re
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from ddb_capacity_runtime.aws import combiner
from ddb_capacity_runtime.aws.clients import Clients
from ddb_capacity_runtime.aws.store import HoldLimits
from ddb_capacity_runtime.core.bucket import Bucket
from ddb_capacity_runtime.core.surge import TRUSTED_MINUTES, UNBOUNDED
from ddb_capacity_runtime.core.surge_report import MAX_UNITS_PER_SECOND, parse_report
from ddb_capacity_runtime.events import event_fields
from ddb_capacity_runtime.fast_path.ledger import Ledger
from ddb_capacity_runtime.fast_path.surge_raise import last_increase
from ddb_capacity_runtime.fast_path.surge_settings import TRUSTED_LAG_MINUTES, SurgeSettings
from ddb_capacity_runtime.requests import restore_expired
from ddb_capacity_runtime.requests.broker import BrokerConfigError
from tests.support.faults import client_error, fail_before
from tests.support.moto_world import World
from tests.support.surge_guards import untrusted_cloudwatch
from tests.support.surge_runtime_rules import (
    EVERY,
    Clock,
    consumed,
    hook_report,
    metric_calls,
    plain_table,
    put_bucket,
    stored_bucket,
    stream_look,
    stream_table,
    unreachable_cloudwatch,
    warm_table,
)
from tests.support.surge_server import (
    a_table,
    counted,
    read,
    report,
    send,
    served,
    served_writes,
    store_reads,
    surge_of,
    write,
)
from tests.support.surge_server import prompt_store as prompt_store  # noqa: F401 (fixture)
from tests.support.surge_server import world as world  # noqa: F401 (fixture)


def fresh_entry(at: float) -> dict[str, Any]:
    """A process's quiet entry in a combiner item, as the signals function writes one."""
    return {"M": {"d": {"N": "0"}, "t": {"N": "0"}, "k": {"N": "0"}, "at": {"N": str(at)}}}


def test_a_combiner_with_no_room_even_to_share_refuses_the_report_and_counts_it(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a dimension whose combiner item holds 101 fresh made-up processes and no shared
    # entry: no room for a newcomer, not even through the shared one
    name = a_table(world, "NoRoom")
    key = combiner.combiner_key(name, "table:write")
    now = time.time()
    crowd = {f"w{i}": fresh_entry(now) for i in range(combiner.MAX_PROCESSES + 1)}
    world.store_ddb.put_item(TableName=world.store.name, Item={**key, "reports": {"M": crowd}})
    # WHEN a newcomer reports 500 units/s
    (row,) = send(world, report(name, write(500), process="newcomer"), served(name))["dimensions"]
    # THEN its dimension is refused, nothing raised, and the full combiner counted (alarmed)
    assert row["status"] == "refused"
    assert world.target_min(name, "write") == 100
    out = capsys.readouterr().out
    assert (counted(out, "CombinerFull"), counted(out, "ReportsRefused")) == (1, 0)


def test_a_state_store_error_on_one_dimension_fails_it_alone(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a table whose reads and writes are both under targets at 100 units, and a state
    # store that fails every read of the read dimension's holds (an error moto never returns)
    name = world.table("OneFails", 100, 100, tagged=False)
    world.target(name, "read", 100, 10_000)
    world.target(name, "write", 100, 10_000)
    sort_key = world.store.sort_key(None, "read")
    disarm = fail_before(
        world.store_ddb,
        "GetItem",
        lambda p: p["Key"]["pk"]["S"] == name and p["Key"]["sk"]["S"] == sort_key,
        client_error("InternalServerError", "GetItem"),
    )
    try:
        # WHEN one report asks both dimensions for 200 units/s
        answer = send(world, report(name, read(200), write(200)), served(name))
    finally:
        disarm()
    # THEN the read dimension fails, counted, and the write dimension is raised all the same
    rows = {r["dimension"]: r for r in answer["dimensions"]}
    assert rows["read"]["status"] == "failed"
    assert "InternalServerError" in rows["read"]["reason"]
    assert (rows["write"]["status"], rows["write"]["to"]) == ("applied", 286)
    assert world.target_min(name, "write") == 286
    out = capsys.readouterr().out
    assert (counted(out, "SurgesFailed"), counted(out, "SurgesApplied")) == (1, 1)


@pytest.mark.parametrize("told", [10**15, -100, "100", None])
def test_a_capacity_described_unsoundly_fails_the_dimension_counted(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
    told: Any,
) -> None:
    # GIVEN a table at 100 write units whose DescribeTable tells its writes as `told`
    name = world.table("UnsoundUnits", 100, 100, tagged=False)
    world.target(name, "write", 100, 10_000)

    def forge(parsed: dict[str, Any], **_: Any) -> None:
        table = parsed.get("Table", {})
        if table.get("TableName") == name:
            table["ProvisionedThroughput"]["WriteCapacityUnits"] = told

    world.ddb.meta.events.register("after-call.dynamodb.DescribeTable", forge)
    try:
        # WHEN a report asks for 200 write units/s
        (row,) = send(world, report(name, write(200)), served(name))["dimensions"]
    finally:
        world.ddb.meta.events.unregister("after-call.dynamodb.DescribeTable", forge)
    # THEN the dimension fails, counted, naming the field; nothing is raised on it (a
    # capacity told as 10^15 had read as no surge needed)
    assert row["status"] == "failed"
    assert f"DescribeTable {name} table: WriteCapacityUnits is" in row["reason"]
    assert world.target_min(name, "write") == 100
    assert world.throughput(name) == (100, 100)
    assert counted(capsys.readouterr().out, "SurgesFailed") == 1


def test_made_up_entries_are_removed_even_with_no_stale_ones_beside_them(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a combiner item holding entries that are no process's rates within bounds, and
    # no stale entry
    name = a_table(world, "Junk")
    key = combiner.combiner_key(name, "table:write")
    now = time.time()
    liar = {"M": {**fresh_entry(now)["M"], "d": {"N": "1e30"}}}
    junk = {"liar": liar, "junk": {"S": "junk"}, "future": fresh_entry(now + 3600)}
    world.store_ddb.put_item(TableName=world.store.name, Item={**key, "reports": {"M": junk}})
    # WHEN an honest process reports below provisioned, twice
    for _ in range(2):
        answer = send(world, report(name, write(50), sent=time.time()), served(name))
        assert [r["status"] for r in answer["dimensions"]] == ["none"]
    # THEN the entries were counted once and removed: the item holds the honest one alone
    assert counted(capsys.readouterr().out, "SurgeEntriesIgnored") == 3
    item = world.store_ddb.get_item(TableName=world.store.name, Key=key, ConsistentRead=True)
    assert sorted(item["Item"]["reports"]["M"]) == ["p1"]
    assert world.target_min(name, "write") == 100


def test_an_on_demand_table_is_never_raised_nor_switched(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a served table billed on demand
    name = world.table("OnDemand", 50, 100, tagged=False)
    world.ddb.update_table(TableName=name, BillingMode="PAY_PER_REQUEST")
    # WHEN a process reports 2,000 units/s and throttles
    event = report(name, write(2_000, throttles={"provisioned": 500}))
    (row,) = send(world, event, served(name))["dimensions"]
    # THEN nothing is done: no surge, no failure, the table still on demand
    assert row["status"] == "none"
    assert surge_of(world, name) is None
    table = world.ddb.describe_table(TableName=name)["Table"]
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    out = capsys.readouterr().out
    assert (counted(out, "SurgesApplied"), counted(out, "SurgesFailed")) == (0, 0)


def test_every_report_an_absolute_cap_refuses_is_counted_over_budget(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a table at 100 write units whose surges may add 300 units at most, surged to
    # 400 by a lie, the surge ended and restored, the table left at 400 (auto scaling has
    # not scaled it in yet)
    name = a_table(world, "Capped")
    settings = SurgeSettings(cap=300)
    start = time.time()

    def lie(at: float) -> str:
        event = report(name, write(2_000), sent=at)
        (row,) = send(world, event, served(name), settings, clock=lambda: at)["dimensions"]
        return str(row["status"])

    assert lie(start) == "applied"
    later = start + 11 * 60
    restore_expired(name, clients=world.clients, store=world.store, clock=lambda: later)
    assert world.target_min(name, "write") == 100 and world.throughput(name)[1] == 400
    capsys.readouterr()
    # WHEN the process goes on lying, seconds apart
    rows = [lie(later + 5 * n) for n in range(4)]
    # THEN every lie is refused by the cap, and each is counted (the SurgeBudget alarm)
    assert rows == ["limited"] * 4
    assert world.target_min(name, "write") == 100
    assert counted(capsys.readouterr().out, "SurgesOverBudget") == 4


def test_the_bucket_estimate_counts_the_traffic_the_reports_do_not_see(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    # GIVEN a table at 100 write units (warm to 1,000) whose reporting processes make half
    # its traffic, its stored estimate at 350 unit-seconds, 10 units/s consumed 5 s ago
    name = warm_table(world, "Half")
    clock = Clock(world.now.timestamp())
    put_bucket(world, name, {"S": Bucket(350, clock() - EVERY, 100, 10.0).text()})
    # WHEN a report says 60 units/s: the table serves 120, so the 5 s took (120 - 100) x 5,
    # and 250 left is less than a raise sent at the next look needs, (120 - 100) x (5 + 10)
    row = hook_report(world, name, clock, 60, settings=SurgeSettings(share=0.5))
    # THEN it surges, to 120 / 0.7, and the estimate stored is the 250 left
    assert (row["status"], row.get("to")) == ("applied", math.ceil(120 / 0.7))
    kept = stored_bucket(world, name, clock())
    assert kept is not None and kept.level == 250


def test_a_renewal_that_finds_its_surge_restored_meanwhile_decides_again(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a surge of a minute to 286 (200 units/s at 70 %), expired and not yet restored
    name = a_table(world, "Restored")
    minute = SurgeSettings(surge_minutes=1, scale=None, budget=UNBOUNDED)
    start = time.time()
    send(world, report(name, write(200), sent=start), served(name), minute, clock=lambda: start)
    later = start + 2 * 60
    hold_key = world.store.sort_key(None, "write")
    restored: list[dict[str, Any]] = []
    armed = [True]

    def restore(params: dict[str, Any], **_: Any) -> None:
        if armed[0] and params["Key"]["sk"]["S"] == hold_key:  # the report takes the lease
            armed[0] = False
            ends = restore_expired(
                name, store=world.store, clients=world.clients, clock=lambda: later
            )
            restored.extend(ends)
            capsys.readouterr()

    hook = "before-parameter-build.dynamodb.UpdateItem"
    world.store_ddb.meta.events.register(hook, restore)
    try:
        # WHEN a report still asks for it, and the restore ends the surge between the
        # report's first look (a renewal) and its taking the lease
        event = report(name, write(200), sent=later)
        (row,) = send(world, event, served(name), minute, clock=lambda: later)["dimensions"]
    finally:
        world.store_ddb.meta.events.unregister(hook, restore)
    # THEN the report decides again on what it reads under the lease: a new surge, no failure
    assert restored and world.target_min(name, "write") == 100
    # THEN the report decides again on what it reads under the lease: the table still at
    # 286 serves the demand, so nothing is due, and nothing failed
    assert row["status"] == "none"
    assert surge_of(world, name) is None
    assert counted(capsys.readouterr().out, "SurgesFailed") == 0


def test_a_lower_limit_on_the_holds_never_cuts_a_surge_held(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    # GIVEN a surge of 186 units over 100 (200 units/s at 70 %)
    name = a_table(world, "Lowered")
    send(world, report(name, write(200)), served(name))
    # WHEN the holds of a dimension may now add up to 150 units at most (the construct
    # redeployed with a lower limit), and a report asks for 300 units/s
    lower = dataclasses.replace(world.store, limits=HoldLimits(max_total_units=150))
    event = report(name, write(300), sent=time.time() + 1)
    (row,) = send(world, event, served(name), store=lower)["dimensions"]
    # THEN the surge is renewed at its level: its units, the level reported and the minimum
    # all as they were
    assert (row["status"], row["to"]) == ("renewed", 286)
    hold = surge_of(world, name)
    assert hold is not None and (hold.baseline, hold.units) == (100, 186)
    assert world.target_min(name, "write") == 286


def test_a_confirmation_lapses_when_cloudwatch_stops_showing_the_demand(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a table at 100 write units whose writes CloudWatch shows served at 300 units/s
    # up to the minute its surge starts, and nothing after
    name = a_table(world, "Lapsed")
    served_writes(world, name, 300, range(-5, 1))
    store_reads(world, range(-8, 20))  # the minutes delivered: the table served nothing
    start = world.now.timestamp() + 30
    statuses = []
    # WHEN its processes report 300 units/s and throttles every minute for 15 minutes
    clock = Clock(start)
    for minute in range(16):
        clock.t = start + minute * 60
        event = report(name, write(300, throttles={"provisioned": 100}), sent=clock())
        (row,) = send(world, event, served(name), SurgeSettings(), clock=clock)["dimensions"]
        statuses.append(row["status"])
    # THEN the surge goes on while CloudWatch confirmed it in the last 5 minutes: each read
    # takes the last 5 minutes known delivered, leaving out the newest 3 where the
    # dimension shows nothing of its own (they may not be delivered for it yet), so the
    # last that sees the 300 is at minute 8; from minute 13 the confirmation is 5 minutes
    # old, and the surge is left to expire
    assert statuses[0] == "applied"
    assert "unconfirmed" not in statuses[:13]
    assert statuses[13:] == ["unconfirmed"] * 3
    assert counted(capsys.readouterr().out, "SurgesUnconfirmed") == 3


def test_a_surge_on_the_streams_own_measure_needs_no_cloudwatch_confirmation(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a table at 100 write units whose stream shows 200 units/s served, while
    # CloudWatch shows nothing (its minutes not delivered yet)
    name, arn = stream_table(world, "StreamOwn")
    clock = Clock(world.now.timestamp() // 10 * 10)
    start = clock()
    # WHEN the stream reader looks at windows across 6 minutes of the surge
    rows = []
    for seconds in (0, 100, 200, 310, 360):
        clock.t = start + seconds
        rows.append(stream_look(world, name, arn, clock, 200))
    # THEN the surge raised at the first goes on past 5 minutes: DynamoDB's own measure is
    # its confirmation
    assert [r["status"] for r in rows] == ["applied"] + ["renewed"] * 4
    assert world.target_min(name, "write") == math.ceil(200 / 0.7)
    assert counted(capsys.readouterr().out, "SurgesUnconfirmed") == 0


def reports_every(
    world: World, name: str, seconds: list[float], start: float
) -> list[dict[str, Any]]:
    """One process's report of 200 units/s at each of ``seconds`` after ``start`` (the
    deployed defaults); each answer's one row."""
    rows = []
    clock = Clock(start)
    for s in seconds:
        clock.t = start + s
        event = report(name, write(200), sent=clock())
        (row,) = send(world, event, served(name), SurgeSettings(), clock=clock)["dimensions"]
        rows.append(dict(row))
    return rows


def test_an_unconfirmed_surge_stays_unconfirmed_between_two_reads(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a surge raised on reports of 200 units/s that CloudWatch never shows served
    name = a_table(world, "Between")
    store_reads(world, range(-8, 10))  # the minutes delivered
    calls = metric_calls(world)
    start = world.now.timestamp() + 5
    # WHEN the reports go on every minute for 5 minutes, then every 10 s
    rows = reports_every(world, name, [0, 60, 120, 180, 240, 300, 310, 320, 330], start)
    # THEN from 5 minutes on each is refused its renewal: the read at 5 minutes showed
    # nothing, and the looks within the minute after it read nothing that would say more
    assert [r["status"] for r in rows[:5]] == ["applied"] + ["renewed"] * 4
    assert [r["status"] for r in rows[5:]] == ["unconfirmed"] * 4
    assert calls() == 1
    assert counted(capsys.readouterr().out, "SurgesUnconfirmed") == 1


def test_a_confirmed_surge_goes_on_between_two_reads(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a surge raised on reports of 200 units/s that CloudWatch shows served
    name = a_table(world, "Confirmed")
    served_writes(world, name, 200, range(-8, 10))
    calls = metric_calls(world)
    start = world.now.timestamp() + 5
    # WHEN the reports go on every minute for 5 minutes, then every 10 s
    rows = reports_every(world, name, [0, 60, 120, 180, 240, 300, 310, 320, 330], start)
    # THEN every one renews it: the read at 5 minutes confirmed it, for the next 5 minutes
    assert [r["status"] for r in rows] == ["applied"] + ["renewed"] * 8
    assert calls() == 1
    assert counted(capsys.readouterr().out, "SurgesUnconfirmed") == 0


def test_a_confirming_read_that_fails_is_counted_and_the_surge_goes_on(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a surge raised on reports of 200 units/s, renewed for 5 minutes
    name = a_table(world, "CannotConfirm")
    start = world.now.timestamp() + 5
    rows = reports_every(world, name, [0, 60, 120, 180, 240], start)
    assert [r["status"] for r in rows] == ["applied"] + ["renewed"] * 4
    capsys.readouterr()
    # WHEN CloudWatch is out of reach when the surge must be confirmed, and the reports go on
    # within the minute after
    world.clients = Clients(world.ddb, world.aas, unreachable_cloudwatch(), world.clients.tagging)
    rows = reports_every(world, name, [300, 310, 330], start)
    # THEN the surge goes on (unknown never lowers), at every look in that minute, and the
    # failed read is counted once
    assert [(r["status"], r["to"]) for r in rows] == [("renewed", 286)] * 3
    out = capsys.readouterr().out
    assert (counted(out, "CorroborationFailed"), counted(out, "SurgesUnconfirmed")) == (1, 0)


@pytest.mark.parametrize("status", ["PartialData", "InternalError"])
def test_an_answer_not_to_be_trusted_is_counted_and_the_surge_goes_on(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    status: str,
) -> None:
    # GIVEN a surge raised on reports of 200 units/s, renewed for 5 minutes
    name = a_table(world, f"Untrusted{status}")
    start = world.now.timestamp() + 5
    rows = reports_every(world, name, [0, 60, 120, 180, 240], start)
    assert [r["status"] for r in rows] == ["applied"] + ["renewed"] * 4
    capsys.readouterr()
    # WHEN CloudWatch's answer, when the surge must be confirmed, is not to be trusted
    cloudwatch, stub = untrusted_cloudwatch(status)
    world.clients = Clients(world.ddb, world.aas, cloudwatch, world.clients.tagging)
    rows = reports_every(world, name, [300, 310, 330], start)
    stub.assert_no_pending_responses()
    # THEN the surge goes on (unknown never lowers), at every look in the minute after the
    # one read, and the answer is counted as a failed read
    assert [(r["status"], r["to"]) for r in rows] == [("renewed", 286)] * 3
    out = capsys.readouterr().out
    assert (counted(out, "CorroborationFailed"), counted(out, "SurgesUnconfirmed")) == (1, 0)
    (failed,) = [f for r in caplog.records if (f := event_fields(r)) and "reason" in f]
    assert failed["event"] == "corroboration-failed"
    window = TRUSTED_MINUTES + TRUSTED_LAG_MINUTES  # every minute of the one read
    assert failed["reason"] == f"CloudWatch's answer left {window} minute(s) unknown"


def test_an_answer_not_to_be_trusted_leaves_the_capped_surge_and_is_counted(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN CloudWatch answering, with a status not to be trusted, that 200 units/s were served
    name = plain_table(world, "UntrustedCap")
    cloudwatch, stub = untrusted_cloudwatch("InternalError")
    world.clients = Clients(world.ddb, world.aas, cloudwatch, world.clients.tagging)
    # WHEN a report asks for 2,000 units/s, past the default cap (4 x 100)
    row = hook_report(world, name, Clock(world.now.timestamp() + 30), 2_000)
    stub.assert_no_pending_responses()
    # THEN the capped surge is applied, and the read that could not widen it is counted
    assert (row["status"], row["to"]) == ("applied", 400)
    out = capsys.readouterr().out
    assert (counted(out, "CorroborationFailed"), counted(out, "SurgesCorroborated")) == (1, 0)


def test_a_capped_surge_is_renewed_without_control_plane_calls_between_two_reads(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    # GIVEN a surge the default cap holds at 400 (4 x 100) while a report asks 2,000 units/s,
    # CloudWatch read for it (it shows nothing served)
    name = plain_table(world, "CappedRenewal")
    clock = Clock(world.now.timestamp() + 30)
    assert hook_report(world, name, clock, 2_000)["to"] == 400
    calls: list[str] = []

    def note(**kwargs: Any) -> None:
        calls.append(kwargs["model"].name)

    clients = (world.clients.dynamodb, world.clients.autoscaling, world.clients.cloudwatch)
    for client in clients:
        client.meta.events.register("before-call", note)
    try:
        # WHEN the report comes again every 5 s within the minute
        rows = []
        for _ in range(3):
            clock.tick(EVERY)
            rows.append(hook_report(world, name, clock, 2_000))
    finally:
        for client in clients:
            client.meta.events.unregister("before-call", note)
    # THEN each is renewed at 400 with one DescribeTable: CloudWatch is not read again
    # within the minute, so there is nothing to decide again on the live table
    assert [(r["status"], r["to"]) for r in rows] == [("renewed", 400)] * 3
    assert calls == ["DescribeTable"] * 3


def test_an_explicit_budget_is_never_widened_nor_cloudwatch_read(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a table at 100 write units whose surges may add 150 units an hour, and
    # CloudWatch showing 400 units/s served
    name = plain_table(world, "Budgeted")
    consumed(world, name, 400, 2)
    calls = metric_calls(world)
    clock = Clock(world.now.timestamp() + 30)
    # WHEN a report asks for 200 units/s (200 / 0.7 = 286, within the default cap of 400)
    row = hook_report(world, name, clock, 200, settings=SurgeSettings(budget=150))
    # THEN the budget alone cuts it, at 250, counted; CloudWatch is not read for it
    assert (row["status"], row["to"]) == ("applied", 250)
    assert calls() == 0
    out = capsys.readouterr().out
    assert (counted(out, "SurgesOverBudget"), counted(out, "SurgesCorroborated")) == (1, 0)


def test_cloudwatch_minutes_not_delivered_yet_never_hide_the_last_ones_it_shows(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    # GIVEN a table at 100 write units that CloudWatch last showed served at 400 units/s 6
    # minutes ago, the minutes since not delivered yet (CloudWatch late)
    name = plain_table(world, "Late")
    consumed(world, name, 400, 6)
    clock = Clock(world.now.timestamp() + 30)
    # WHEN a report asks for 2,000 units/s
    row = hook_report(world, name, clock, 2_000)
    # THEN the cap counts from the 400 of the last minutes CloudWatch shows: 4 x 400
    assert (row["status"], row["to"]) == ("applied", 1_600)


def test_the_trusted_demand_is_the_last_five_minutes_cloudwatch_shows(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    # GIVEN a table at 100 write units that CloudWatch showed served at 400 units/s 8
    # minutes ago, and at 50 in every minute since
    name = plain_table(world, "Older")
    consumed(world, name, 400, 8)
    for minutes_ago in range(1, 8):
        consumed(world, name, 50, minutes_ago)
    clock = Clock(world.now.timestamp() + 30)
    # WHEN a report asks for 2,000 units/s
    row = hook_report(world, name, clock, 2_000)
    # THEN the older minute is not the demand served now: the cap stays 4 x the start
    assert (row["status"], row["to"]) == ("applied", 400)


def test_a_read_that_widened_a_surge_confirms_it_too(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a table at 100 write units that CloudWatch shows served at 400 units/s
    name = plain_table(world, "Widened")
    consumed(world, name, 400, 2)
    clock = Clock(world.now.timestamp() + 30)
    start = clock()
    rows = []
    # WHEN a report asks for 2,000 units/s about every minute (CloudWatch read for its cap
    # at each), then once more 50 s after the last read, past the surge's first 5 minutes
    for seconds in (0, 65, 130, 195, 260, 310):
        clock.t = start + seconds
        rows.append(hook_report(world, name, clock, 2_000))
    # THEN the surge goes on: the reads that widened it saw the demand served, and confirm it
    assert [r["status"] for r in rows] == ["applied"] + ["renewed"] * 5
    assert world.target_min(name, "write") == 1_600
    assert counted(capsys.readouterr().out, "SurgesUnconfirmed") == 0


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"CAPACITY_SURGE_CAP": "1000001"}, "CAPACITY_SURGE_CAP: got '1000001'"),
        ({"CAPACITY_SURGE_BUDGET": "10000001"}, "CAPACITY_SURGE_BUDGET: got '10000001'"),
        ({"CAPACITY_SURGE_SCALE": "101"}, "CAPACITY_SURGE_SCALE: got '101'"),
        ({"CAPACITY_SURGE_MINUTES": "1441"}, "CAPACITY_SURGE_MINUTES: got '1441'"),
    ],
)
def test_a_setting_over_its_bound_fails_naming_the_variable(
    env: dict[str, str], named: str
) -> None:
    # GIVEN a setting one over the most it may be WHEN the function reads its environment
    # THEN it fails naming the variable, the value and what is allowed
    with pytest.raises(BrokerConfigError, match=re.escape(named) + "; expected "):
        SurgeSettings.from_env(env)


def test_a_huge_consumed_capacity_still_makes_a_report_the_function_takes() -> None:
    # GIVEN a process whose responses said they consumed far more than any table serves
    # (ConsumedCapacity is untrusted), and whose requests met throttles
    ledger = Ledger(start=1_000.0, interval=5)
    ledger.add(1_001.0, "t", None, "write", units=1e12, requests=10, cause="provisioned")
    # WHEN its 10 s are reported
    made = ledger.take("t", 1_010.0, time.time(), "p")
    assert made is not None
    # THEN the report keeps to the contract: the signals function takes it, its units at
    # the most a process may report, its throttle still in it
    taken = parse_report(made.as_json(), time.time())
    (d,) = taken.dims
    assert d.units == MAX_UNITS_PER_SECOND * 10
    assert d.throttles["provisioned"] == 1


def break_marks(world: World, name: str, *which: str) -> None:
    """The surge marks ``which`` of the table's writes (all without) out of their bounds
    (someone wrote them): read as none."""
    now = time.time()
    marks = {"surge_raised": now + 3600, "surge_started": -5, "surge_aim": 5, "surge_max": 1e9}
    marks = {k: v for k, v in marks.items() if not which or k in which}
    world.store_ddb.update_item(
        TableName=world.store.name,
        Key=combiner.combiner_key(name, "table:write"),
        UpdateExpression="SET " + ", ".join(f"{k} = :{k}" for k in marks),
        ExpressionAttributeValues={f":{k}": {"N": str(v)} for k, v in marks.items()},
    )


def test_a_surge_whose_start_was_lost_is_bounded_from_its_next_renewal(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a surge raised on reports of 200 units/s that CloudWatch never shows served,
    # its start then found out of bounds (unknown)
    name = a_table(world, "Unmarked")
    store_reads(world, range(-8, 10))  # the minutes delivered
    start = world.now.timestamp() + 5
    assert reports_every(world, name, [0], start)[0]["status"] == "applied"
    break_marks(world, name, "surge_started")
    # WHEN the reports go on every minute
    rows = reports_every(world, name, [60, 120, 180, 240, 300, 360], start)
    # THEN the first renewal starts the surge's clock again: 5 minutes on, CloudWatch must
    # confirm it, and as it shows nothing the surge is left to expire
    assert [r["status"] for r in rows] == ["renewed"] * 5 + ["unconfirmed"]
    assert counted(capsys.readouterr().out, "SurgesUnconfirmed") == 1


def test_a_raise_that_changes_nothing_is_a_renewal_not_a_surge_applied(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a surge to 286 (200 units/s at 70 %), its marks then found out of bounds (the
    # target it was sized with unknown: the next look decides again on the live table)
    name = a_table(world, "Unchanged")
    send(world, report(name, write(200)), served(name))
    break_marks(world, name)
    capsys.readouterr()
    # WHEN a report asks for the same
    (row,) = send(world, report(name, write(200), sent=time.time() + 1), served(name))["dimensions"]
    # THEN the level stands as it was: renewed, no change made, no surge counted applied
    assert (row["status"], row["to"], row["changes"]) == ("renewed", 286, [])
    assert world.target_min(name, "write") == 286
    assert counted(capsys.readouterr().out, "SurgesApplied") == 0


def test_the_capacitys_last_increase_is_read_as_untrusted() -> None:
    now = datetime(2026, 5, 1, 12, 0, tzinfo=UTC).timestamp()

    def described(at: object, index: str | None = None) -> dict[str, Any]:
        throughput = {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5, "LastIncreaseDateTime": at}
        gsi = {"IndexName": "byUser", "ProvisionedThroughput": throughput}
        return {
            "TableName": "T",
            "ProvisionedThroughput": throughput,
            "GlobalSecondaryIndexes": [gsi],
        }

    a_minute_ago = datetime(2026, 5, 1, 11, 59, tzinfo=UTC)
    assert last_increase(described(a_minute_ago), None, now) == now - 60
    assert last_increase(described(a_minute_ago), "byUser", now) == now - 60
    assert last_increase(described(a_minute_ago.replace(tzinfo=None)), None, now) == now - 60
    # a time to come, a string, a number, nothing, an unknown index: not known
    assert last_increase(described(datetime(2026, 5, 1, 12, 1, tzinfo=UTC)), None, now) is None
    assert last_increase(described("2026-05-01T11:59:00Z"), None, now) is None
    assert last_increase(described(now - 60), None, now) is None
    assert last_increase({"TableName": "T"}, None, now) is None
    assert last_increase({"TableName": "T", "ProvisionedThroughput": []}, None, now) is None
    assert last_increase(described(a_minute_ago), "other", now) is None
