"""The fast path's signals function against real parts: tables and scalable targets in a
moto server, the state store in dynalite (atomic conditional writes, as DynamoDB's are)
where threads race; botocore's Stubber only for what moto never does (a refused
UpdateTable, a table that is UPDATING)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.stub import Stubber

from ddb_capacity_runtime.aws import combiner
from ddb_capacity_runtime.aws.clients import Clients
from ddb_capacity_runtime.aws.store import HoldLimits, HoldStore
from ddb_capacity_runtime.core.holds import Hold
from ddb_capacity_runtime.core.report_batch import reports_of
from ddb_capacity_runtime.core.surge import UNBOUNDED, Rates, combine
from ddb_capacity_runtime.core.surge_report import (
    FRESH_SECONDS,
    MAX_UNITS_PER_SECOND,
)
from ddb_capacity_runtime.events import event_fields
from ddb_capacity_runtime.fast_path.signals_function import signals_handler
from ddb_capacity_runtime.fast_path.surge_raise import OWN_UPDATE_S, take_report
from ddb_capacity_runtime.fast_path.surge_settings import SURGE_HOLD, SURGE_LIFETIME, SurgeSettings
from ddb_capacity_runtime.requests import restore_expired
from ddb_capacity_runtime.requests.broker import BrokerConfigError
from ddb_capacity_tools.local_aws import create_store_table
from tests.support.moto_world import World
from tests.support.surge_server import (
    SETTINGS,
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

# ------------------------------------------------------------------ the rule, end to end


def test_one_report_over_provisioned_raises_the_minimum_and_the_table(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a table provisioned at 100 write units under a target (70 %)
    name = a_table(world, "Over")
    # WHEN one process reports 200 units/s
    answer = send(world, report(name, write(200)), served(name))
    # THEN the minimum and the table go to 200 / 0.7 at once, held as a surge
    (row,) = answer["dimensions"]
    assert (row["status"], row["to"]) == ("applied", 286)
    assert world.target_min(name, "write") == 286
    assert world.throughput(name) == (50, 286)
    hold = surge_of(world, name)
    assert hold is not None and (hold.baseline, hold.units) == (100, 186)
    assert hold.token_hash is None  # nobody releases it: it ends at its expiry
    left = (hold.expires - datetime.now(UTC)).total_seconds()
    assert 4 * 60 < left <= 5 * 60
    assert counted(capsys.readouterr().out, "SurgesApplied") == 1


def test_a_report_below_provisioned_changes_nothing(world: World) -> None:
    name = a_table(world, "Below")
    answer = send(world, report(name, write(60)), served(name))
    assert [r["status"] for r in answer["dimensions"]] == ["none"]
    assert world.target_min(name, "write") == 100
    assert world.throughput(name) == (50, 100)
    assert not getattr(world.store.get(name, None, "write"), "holding", False)


def test_provisioned_throughput_throttles_raise_even_below_provisioned(world: World) -> None:
    name = a_table(world, "Throttled")
    event = write(20, throttles={"provisioned": 60}, failed=30)
    send(world, report(name, event), served(name))
    # the rule: 23 units/s of demand (30 requests failed in 10 s; their 60 throttled
    # attempts are not demand twice), seen as a fifth of the traffic (20 of the 100
    # provisioned consumed), so 115 / 0.7
    assert world.target_min(name, "write") == 165
    assert world.throughput(name) == (50, 165)
    # throttled attempts whose retries were served add no demand: 20 seen as a fifth
    retried = a_table(world, "Retried")
    send(world, report(retried, write(20, throttles={"provisioned": 60})), served(retried))
    assert world.target_min(retried, "write") == 143


def test_while_throttled_the_reports_consumption_tells_the_share_that_reports(
    world: World,
) -> None:
    # GIVEN a table at 100, throttled, whose one reporting process consumes 20 units/s
    name = a_table(world, "Seen")
    event = write(20, throttles={"provisioned": 300}, failed=100)
    before = time.time()
    send(world, report(name, event), served(name))
    after = time.time()
    # THEN its consumption, kept by the combiner, says it makes a fifth of the traffic:
    # its demand of 30 units/s is taken as 150, and the surge is 150 / 0.7
    assert world.target_min(name, "write") == 215
    item = world.store_ddb.get_item(
        TableName=world.store.name, Key=combiner.combiner_key(name, "table:write")
    )["Item"]
    kept = combiner.entries(item, time.time()).rates["p1"]
    assert kept.consumed == 20
    # and its 10 seconds began 10 seconds before the function received it
    assert before - 10 <= kept.since <= after - 10


def test_key_range_throttles_alone_never_raise(world: World) -> None:
    name = a_table(world, "HotKey")
    answer = send(
        world,
        report(name, write(60, throttles={"key_range": 50_000, "other": 10})),
        served(name),
    )
    assert [r["status"] for r in answer["dimensions"]] == ["none"]
    assert world.target_min(name, "write") == 100
    assert not getattr(world.store.get(name, None, "write"), "holding", False)


def test_a_table_without_a_target_is_raised_with_update_table(world: World) -> None:
    name = world.table("NoTarget", 50, 100, tagged=False)
    (row,) = send(world, report(name, write(200)), served(name))["dimensions"]
    assert row["status"] == "applied"
    assert [c["via"] for c in row["changes"]] == ["update-table"]
    assert world.throughput(name) == (50, 286)
    assert world.store.get(name, None, "write").base == 100  # type: ignore[union-attr]


# ------------------------------------------------------------------ processes add up


def test_many_processes_reporting_at_once_add_up_in_one_surge(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a table at 100 write units, and 20 processes that each see 10 units/s
    name = a_table(world, "Many")
    assert world.store.table(name) == []  # the store exists before the threads start
    processes = [f"worker-{i}" for i in range(20)]
    errors: list[BaseException] = []

    def go(process: str) -> None:
        try:
            send(world, report(name, write(10), process=process), served(name))
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    # WHEN they all report at once
    threads = [threading.Thread(target=go, args=(p,)) for p in processes]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    # THEN every process's entry is kept, and the combined demand is their sum
    item = world.store_ddb.get_item(
        TableName=world.store.name,
        Key=combiner.combiner_key(name, "table:write"),
        ConsistentRead=True,
    )["Item"]
    found = combiner.entries(item, time.time())
    assert sorted(found.rates) == sorted(processes)
    total = combine(found.rates.values(), time.time())
    assert (round(total.demand, 6), total.processes) == (200.0, 20)
    # one surge: one hold, the minimum at its level, raised past 100 / 0.7 and at most 200 / 0.7
    (state,) = world.store.table(name)
    assert [h.id for h in state.holds] == [SURGE_HOLD]
    level = state.holds[0].baseline + state.holds[0].units
    assert world.target_min(name, "write") == level
    assert 143 <= level <= 286
    assert counted(capsys.readouterr().out, "SurgesFailed") == 0


def test_share_scales_the_raise(world: World) -> None:
    # GIVEN processes that make half the traffic, reporting 80 units/s
    name = a_table(world, "Half")
    event = report(name, write(80))
    # THEN at share 1 nothing is due; at share 0.5 the demand is 160 units/s
    assert send(world, event, served(name))["dimensions"][0]["status"] == "none"
    send(world, event, served(name), SurgeSettings(share=0.5))
    assert world.target_min(name, "write") == 229  # 160 / 0.7


def test_the_surge_cap_and_the_targets_max_bound_a_lying_report(world: World) -> None:
    # GIVEN two tables at 100, one with a target max of 400
    capped = a_table(world, "Capped")
    maxed = a_table(world, "Maxed", write_max=400)
    lie = write(MAX_UNITS_PER_SECOND, throttles={"provisioned": 10_000_000})
    # WHEN a process lies (the most units a report may carry, and throttles)
    send(world, report(capped, lie), served(capped), SurgeSettings(cap=50))
    send(world, report(maxed, lie), served(maxed))
    # THEN the raise stops at the cap over provisioned, and at the target's max
    assert world.target_min(capped, "write") == 150
    assert world.throughput(capped) == (50, 150)
    assert world.target_min(maxed, "write") == 400
    # and the hold ends by itself: a restore after expiry brings the minimum back
    later: Callable[[], float] = lambda: time.time() + 6 * 60  # noqa: E731
    for name in (capped, maxed):
        (row,) = restore_expired(name, clients=world.clients, store=world.store, clock=later)
        assert (row["status"], row["to"]) == ("applied", 100)
        assert world.target_min(name, "write") == 100
        assert not any(s.holding for s in world.store.table(name))


def test_a_renewal_pushes_the_expiry_and_never_lowers_the_level(world: World) -> None:
    # GIVEN a surge to 429 (300 units/s)
    name = a_table(world, "Renewed")
    send(world, report(name, write(300)), served(name))
    first = surge_of(world, name)
    assert first is not None and first.baseline + first.units == 429
    # and the table lowered below it meanwhile (the minimum stays)
    world.ddb.update_table(
        TableName=name, ProvisionedThroughput={"ReadCapacityUnits": 50, "WriteCapacityUnits": 150}
    )
    # WHEN two minutes later a report asks for less than the surge holds (200 / 0.7 = 286)
    two_minutes_on: Callable[[], float] = lambda: time.time() + 120  # noqa: E731
    event = report(name, write(200), process="p2", sent=two_minutes_on())
    (row,) = send(world, event, served(name), clock=two_minutes_on)["dimensions"]
    # THEN the surge is renewed at its level, two minutes later, and nothing is lowered
    renewed = surge_of(world, name)
    assert renewed is not None and renewed.baseline + renewed.units == 429
    assert renewed.expires - first.expires >= timedelta(seconds=110)
    assert world.target_min(name, "write") == 429
    assert (row["status"], row["to"]) == ("applied", 429)
    assert world.throughput(name) == (50, 429)  # raised back to the surge's level


def test_a_surge_beside_a_request_brings_the_level_of_every_hold_to_the_rule(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a request holding 200 units over the 100 it saw (a minimum of 300), and the
    # table raised by auto scaling above that, to 500
    name = world.table("Beside", 50, 500, tagged=False)
    world.target(name, "write", 300, 10_000)
    expires = datetime.now(UTC) + timedelta(hours=1)
    with world.store.lease(name, None, "write", deadline=time.time() + 5) as lease:
        lease.write(100, [Hold("request", None, "write", 200, expires, 100)], set_to=300)
    # WHEN a report asks for 1,000 (700 units/s at 70 %)
    (row,) = send(world, report(name, write(700)), served(name))["dimensions"]
    # THEN every hold together holds 1,000: the surge adds what the request does not
    assert (row["status"], row["to"]) == ("applied", 1_000)
    assert world.target_min(name, "write") == 1_000
    assert world.throughput(name) == (50, 1_000)
    hold = surge_of(world, name)
    assert hold is not None and hold.units == 700
    assert counted(capsys.readouterr().out, "SurgesApplied") == 1


def test_an_expired_surge_not_yet_restored_keeps_its_baseline_under_the_cap(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a liar's surge capped at 50 over 100, expired and not yet restored, and CloudWatch
    # delivering the minutes
    name = a_table(world, "Liar")
    store_reads(world, range(-10, 25))
    lie = write(MAX_UNITS_PER_SECOND, throttles={"provisioned": 10_000_000}, failed=1_000_000)
    settings = SurgeSettings(cap=50)
    send(world, report(name, lie), served(name), settings)
    assert world.target_min(name, "write") == 150
    capsys.readouterr()
    for minutes in (6, 12, 18):

        def later(m: int = minutes) -> float:
            return time.time() + m * 60

        # WHEN the liar reports again, each time after the surge expired
        (row,) = send(world, report(name, lie, sent=later()), served(name), settings, clock=later)[
            "dimensions"
        ]
        # THEN the surge goes no further: CloudWatch shows nothing served, so it is left to
        # expire at its level, and the cap still counts from 100
        assert (row["status"], row["to"]) == ("unconfirmed", 150)
        assert world.target_min(name, "write") == 150
        assert world.throughput(name) == (50, 150)
        hold = surge_of(world, name)
        assert hold is not None and (hold.baseline, hold.units) == (100, 50)
    # AND each look that read CloudWatch counted it (a minute apart at least)
    assert counted(capsys.readouterr().out, "SurgesUnconfirmed") == 3


def test_throttles_seen_before_the_raise_never_raise_again(world: World) -> None:
    # GIVEN a surge made by a throttled process: 30 units/s, a fifth of the traffic, 215
    name = a_table(world, "Ratchet")
    before = time.time() - 1
    event = write(20, throttles={"provisioned": 300}, failed=100)
    send(world, report(name, event, sent=before), served(name))
    assert world.target_min(name, "write") == 215
    # WHEN another process reports after the raise, unthrottled, while the first one's
    # report (throttled before the raise) is still fresh
    (row,) = send(world, report(name, write(1), process="p2"), served(name))["dimensions"]
    # THEN the old throttles are not counted against the new capacity: no second raise
    assert row["status"] == "none"
    assert world.target_min(name, "write") == 215
    # and a throttled report sent after the raise is counted again
    (row,) = send(world, report(name, event, process="p3"), served(name))["dimensions"]
    assert row["status"] in ("applied", "renewed")


def test_unknown_throttles_renew_at_the_same_level_and_only_for_a_lifetime(
    world: World,
) -> None:
    # GIVEN throttles of no known cause, below provisioned: a surge is due, of one unit, and
    # CloudWatch shows the table serving what it has (the surge is confirmed)
    name = a_table(world, "Unknown")
    served_writes(world, name, 100, range(-5, 65))
    start = time.time()
    at: Callable[[float], Callable[[], float]] = lambda minutes: lambda: start + minutes * 60  # noqa: E731
    event = write(60, throttles={"unknown": 500})
    (row,) = send(world, report(name, event, sent=start), served(name), clock=at(0))["dimensions"]
    assert (row["status"], row["to"]) == ("applied", 101)
    # WHEN they go on: every renewal keeps the level (no unit more each time)
    for minutes in (4, 8, 40):
        (row,) = send(
            world, report(name, event, sent=at(minutes)()), served(name), clock=at(minutes)
        )["dimensions"]
        assert (row["status"], row["to"]) == ("renewed", 101)
    assert world.target_min(name, "write") == 101
    # a renewal never pushes the expiry past the surge's lifetime (an hour)
    (row,) = send(world, report(name, event, sent=at(58)()), served(name), clock=at(58))[
        "dimensions"
    ]
    assert row["status"] == "renewed"
    hold = surge_of(world, name)
    assert hold is not None
    assert hold.expires <= datetime.fromtimestamp(start, UTC) + SURGE_LIFETIME
    # THEN after an hour the surge is no longer renewed: it ends at its expiry
    (row,) = send(world, report(name, event, sent=at(61)()), served(name), clock=at(61))[
        "dimensions"
    ]
    assert row["status"] == "ended"
    (done,) = restore_expired(name, clients=world.clients, store=world.store, clock=at(62))
    assert (done["status"], done["to"]) == ("applied", 100)
    assert not getattr(world.store.get(name, None, "write"), "holding", False)


def test_a_sustained_burst_on_a_table_without_a_target_keeps_its_surge(world: World) -> None:
    # GIVEN a table without a target (and no scaler) at 100, surged to 286 by a burst that
    # CloudWatch shows served (200 units/s)
    name = world.table("Sustained", 50, 100, tagged=False)
    served_writes(world, name, 200, range(-5, 25))
    start = time.time()
    at: Callable[[float], Callable[[], float]] = lambda minutes: lambda: start + minutes * 60  # noqa: E731
    send(world, report(name, write(200), sent=start), served(name), clock=at(0))
    assert world.throughput(name) == (50, 286)
    # WHEN the burst goes on (its demand under what the surge provides, over the base),
    # and the restore runs between the reports
    for minutes in (4, 8, 12, 16):
        (row,) = send(
            world, report(name, write(200), sent=at(minutes)()), served(name), clock=at(minutes)
        )["dimensions"]
        assert (row["status"], row["to"]) == ("renewed", 286)
        later = at(minutes + 3)
        assert restore_expired(name, clients=world.clients, store=world.store, clock=later) == []
        # THEN the surge holds: no expiry, no decrease
        assert world.throughput(name) == (50, 286)
    # and once the burst is over, the restore lowers it at the surge's expiry, not before
    assert restore_expired(name, clients=world.clients, store=world.store, clock=at(20)) == []
    (row,) = restore_expired(name, clients=world.clients, store=world.store, clock=at(22))
    assert (row["status"], row["to"]) == ("applied", 100)
    assert world.throughput(name) == (50, 100)


def test_a_renewal_makes_no_control_plane_call(world: World) -> None:
    # GIVEN a surge to 429
    name = a_table(world, "Quiet")
    send(world, report(name, write(300)), served(name))
    calls: list[str] = []

    def note(**kwargs: Any) -> None:
        calls.append(kwargs["model"].name)

    # WHEN a report asks for what it holds already
    for client in (world.clients.dynamodb, world.clients.autoscaling):
        client.meta.events.register("before-call", note)
    try:
        (row,) = send(world, report(name, write(300)), served(name))["dimensions"]
    finally:
        for client in (world.clients.dynamodb, world.clients.autoscaling):
            client.meta.events.unregister("before-call", note)
    # THEN it is renewed with one DescribeTable: no tags, no target read, no change
    assert (row["status"], row["to"], row["changes"]) == ("renewed", 429, [])
    assert calls == ["DescribeTable"]


def test_a_raise_of_less_than_a_step_over_the_surge_is_a_renewal(world: World) -> None:
    # GIVEN a surge to 429 (300 units/s at 70 %)
    name = a_table(world, "Step")
    send(world, report(name, write(300)), served(name))
    # WHEN a report asks for 4 % more (312 units/s: 446 units), nothing throttled
    later = time.time() + 1
    (row,) = send(world, report(name, write(312), sent=later), served(name))["dimensions"]
    # THEN the surge is renewed at its level: no update keeps the table busy for 17 units
    assert (row["status"], row["to"], row["changes"]) == ("renewed", 429, [])
    assert world.throughput(name) == (50, 429)
    assert world.target_min(name, "write") == 429
    # and a report asking for a step more (10 %: 472 units and over) raises it
    event = report(name, write(331), sent=later + 1)
    (row,) = send(world, event, served(name))["dimensions"]
    assert (row["status"], row["to"]) == ("applied", 473)
    assert world.throughput(name) == (50, 473)


def test_a_raise_refused_for_an_update_under_way_is_sent_again_at_the_next_report(
    world: World,
) -> None:
    # GIVEN a surge to 286, then a report asking for 429 whose UpdateTable DynamoDB refuses
    # once (ResourceInUseException: another update of the table under way)
    name = a_table(world, "InUse")
    send(world, report(name, write(200)), served(name))
    refused: list[str] = []

    def in_use(**_: Any) -> Any:  # a response short-circuits the call
        if refused:
            return None
        refused.append("UpdateTable")
        error = {"Code": "ResourceInUseException", "Message": "Attempt to change a resource"}
        return AWSResponse("", 400, HTTPHeaders(), None), {"Error": error, "ResponseMetadata": {}}

    event = "before-call.dynamodb.UpdateTable"
    world.clients.dynamodb.meta.events.register(event, in_use)
    try:
        later = time.time() + 1
        (row,) = send(world, report(name, write(300), sent=later), served(name))["dimensions"]
    finally:
        world.clients.dynamodb.meta.events.unregister(event, in_use)
    # THEN the surge is held at 429 but the table stays at 286 (deferred, not failed)
    assert refused and row["status"] == "deferred"
    assert surge_of(world, name) is not None and world.throughput(name) == (50, 286)
    # WHEN the next report asks for the same
    event2 = report(name, write(300), sent=later + 1)
    (row,) = send(world, event2, served(name))["dimensions"]
    # THEN it is not taken as a renewal of what is held: the raise is sent again
    assert row["status"] == "applied" and world.throughput(name) == (50, 429)


@contextlib.contextmanager
def increase_said(world: World, name: str, increased: datetime) -> Iterator[None]:
    """DescribeTable of table ``name`` saying its capacity last rose at ``increased``."""

    def landed(parsed: dict[str, Any], **_: Any) -> None:
        if parsed.get("Table", {}).get("TableName") == name:
            parsed["Table"]["ProvisionedThroughput"]["LastIncreaseDateTime"] = increased

    event = "after-call.dynamodb.DescribeTable"
    world.clients.dynamodb.meta.events.register(event, landed)
    try:
        yield
    finally:
        world.clients.dynamodb.meta.events.unregister(event, landed)


@pytest.mark.parametrize(
    ("rose", "counted"),
    [(+1, False), (-1, False), (-11, True)],
    ids=["after the report", "within its 10 seconds", "before them"],
)
def test_throttles_reported_before_the_capacity_last_rose_are_not_counted(
    world: World, rose: int, counted: bool
) -> None:
    # GIVEN a surge to 286 (200 units/s at 70 %), and a report of 10 seconds of 100 units/s
    # served and as many refused: what the table served at its 100 units before the raise
    # landed, if it landed after those seconds began
    name = a_table(world, "Landed")
    send(world, report(name, write(200)), served(name))
    sent = time.time() + 1
    throttled = write(100, throttles={"provisioned": 1_000})
    # WHEN DescribeTable says the capacity last rose ``rose`` seconds from its sending
    with increase_said(world, name, datetime.fromtimestamp(sent + rose, UTC)):
        later: Callable[[], float] = lambda: sent + 5  # noqa: E731
        answer = send(world, report(name, throttled, sent=sent), served(name), clock=later)
    (row,) = answer["dimensions"]
    if not counted:
        # THEN its throttles are set aside (and said so): its 200 units/s of demand need no
        # more than the 286 held (they saw 100, not 286: counted, they would read as a share
        # of 35 % of the traffic, and ask for nearly three times as much, up to the cap)
        assert (row["status"], row["to"], row["set_aside"]) == ("renewed", 286, 100)
        assert world.throughput(name) == (50, 286)
    else:  # all its seconds after the raise landed: its throttles count, and size the surge
        assert row["status"] == "applied" and row["to"] > 286 and "set_aside" not in row


def test_a_process_clock_ahead_cannot_place_its_throttles_after_the_increase(
    world: World,
) -> None:
    # GIVEN a surge to 286, and a process whose clock is 20 s ahead of the function's
    name = a_table(world, "Ahead")
    send(world, report(name, write(200)), served(name))
    now = time.time()
    throttled = write(100, throttles={"provisioned": 1_000})
    # WHEN its report of the 10 seconds to now (sent "at now + 20") comes after the
    # capacity rose 5 seconds ago
    with increase_said(world, name, datetime.fromtimestamp(now - 5, UTC)):
        clock: Callable[[], float] = lambda: now  # noqa: E731
        answer = send(world, report(name, throttled, sent=now + 20), served(name), clock=clock)
    # THEN its seconds are placed on the function's clock, straddling the increase: its
    # throttles are set aside, as an honest clock's would be
    (row,) = answer["dimensions"]
    assert (row["status"], row["to"], row["set_aside"]) == ("renewed", 286, 100)


def test_throttles_of_a_new_surge_count_whatever_the_last_increase(world: World) -> None:
    # GIVEN a table at 100 write units, its processes reporting a fifth of the traffic:
    # 30 units/s of it served, with throttles (the table serves its 100 units)
    name = a_table(world, "Fresh")
    sent = time.time()
    throttled = write(30, throttles={"provisioned": 300})
    # WHEN DescribeTable says the capacity rose a second before (its reads, say)
    with increase_said(world, name, datetime.fromtimestamp(sent - 1, UTC)):
        (row,) = send(world, report(name, throttled, sent=sent), served(name))["dimensions"]
    # THEN no surge is held, so nothing is set aside: the throttles make the surge due
    assert row["status"] == "applied" and row["to"] > 100 and "set_aside" not in row, row


def test_a_busy_lease_defers_the_surge_and_a_renewal_never_waits(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    name = a_table(world, "Leased")
    slept: list[float] = []

    def sleep(seconds: float) -> None:  # the signals function's store clock moves on instead
        slept.append(seconds)

    store = dataclasses.replace(world.store, clock=lambda: time.time() + sum(slept))
    # GIVEN the dimension's lease held by another update (a request, a restore)
    with world.store.lease(name, None, "write", deadline=time.time() + 5):
        # WHEN a report makes a surge due
        (row,) = send(world, report(name, write(300)), served(name), store=store, sleep=sleep)[
            "dimensions"
        ]
    # THEN it is deferred (the next report tries again) after a short wait, not failed
    assert row["status"] == "deferred"
    assert sum(slept) <= 3
    out = capsys.readouterr().out
    assert (counted(out, "SurgesDeferred"), counted(out, "SurgesFailed")) == (1, 0)
    # AND once surged, a renewal that finds the lease taken does not wait at all
    send(world, report(name, write(300)), served(name))
    slept.clear()
    with world.store.lease(name, None, "write", deadline=time.time() + 5):
        (row,) = send(world, report(name, write(300)), served(name), store=store, sleep=sleep)[
            "dimensions"
        ]
    assert (row["status"], slept) == ("deferred", [])


@pytest.mark.parametrize("raised_ago", [0, OWN_UPDATE_S])
def test_a_surge_its_table_being_updated_defers_is_counted_as_a_busy_hold(
    world: World,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    raised_ago: int,
) -> None:
    # GIVEN a table surged once, ``raised_ago`` seconds ago, then found UPDATING (moto's
    # tables never are) when the reports ask for more
    name = a_table(world, "Stays")
    (row,) = send(world, report(name, write(200)), served(name))["dimensions"]
    assert row["status"] == "applied"
    key = combiner.combiner_key(name, "table:write")
    item = world.store_ddb.get_item(TableName=world.store.name, Key=key)["Item"]
    raised = float(item["surge_raised"]["N"]) - raised_ago
    world.store_ddb.update_item(
        TableName=world.store.name,
        Key=key,
        UpdateExpression="SET surge_raised = :r",
        ExpressionAttributeValues={":r": {"N": repr(raised)}},
    )
    capsys.readouterr()

    def updating(parsed: dict[str, Any], **_: Any) -> None:
        if parsed.get("Table", {}).get("TableName") == name:
            parsed["Table"]["TableStatus"] = "UPDATING"

    event = "after-call.dynamodb.DescribeTable"
    world.clients.dynamodb.meta.events.register(event, updating)
    try:
        with caplog.at_level("INFO", logger="ddb_capacity_runtime"):
            # WHEN a report makes a larger surge due
            (row,) = send(world, report(name, write(600)), served(name))["dimensions"]
    finally:
        world.clients.dynamodb.meta.events.unregister(event, updating)
    # THEN it is deferred, not failed
    stuck = raised_ago >= OWN_UPDATE_S
    assert (row["status"], row["busy"]) == ("deferred", stuck) and "UPDATING" in row["reason"]
    assert world.throughput(name) == (50, 286)
    # AND, its last raise long past, counted as a hold whose table is not ACTIVE, which the
    # HoldsBusy alarm watches when it lasts (a throttled table that stays so), and said apart
    # from other deferrals; right after its own raise (whose update it may be), a deferral
    # like any other: a burst that keeps growing never raises the alarm
    out = capsys.readouterr().out
    assert (counted(out, "SurgesDeferred"), counted(out, "HoldsBusy")) == (1, int(stuck))
    assert counted(out, "SurgesFailed") == 0
    said = [(r.levelname, f) for r in caplog.records if (f := event_fields(r)) is not None]
    busy = [f for level, f in said if f["event"] == "surge-busy" and level == "WARNING"]
    deferred = [f for _, f in said if f["event"] == "surge-deferred"]
    assert (len(busy), len(deferred)) == ((1, 0) if stuck else (0, 1))
    assert ((busy or deferred)[0]["table"], (busy or deferred)[0]["dimension"]) == (name, "write")


def test_a_surge_deferred_for_a_busy_lease_is_no_busy_hold(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a surged table whose dimension's lease another update holds
    name = a_table(world, "Leased")
    send(world, report(name, write(200)), served(name))
    capsys.readouterr()
    with world.store.lease(name, None, "write", deadline=time.time() + 5):
        # WHEN a report makes a larger surge due
        (row,) = send(world, report(name, write(600)), served(name))["dimensions"]
    # THEN it is deferred, and not counted as a busy table
    assert row["status"] == "deferred" and "busy" not in row
    out = capsys.readouterr().out
    assert (counted(out, "SurgesDeferred"), counted(out, "HoldsBusy")) == (1, 0)


# ------------------------------------------------------------------ untrusted input


def test_out_of_scope_and_malformed_reports_are_refused_and_counted(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    name = world.table("Scoped", 50, 100, gsi=(10, 10), tagged=False)
    other = world.table("Other", 50, 100, tagged=False)
    huge = write(200)
    # a table it does not serve, a report that breaks the contract, a JSON that is no report
    for event in (
        report(other, huge),
        {**report(name, huge), "seconds": 0},
        "not a report",
        {**report(name, huge), "v": 2},
    ):
        answer = send(world, event, served(name))
        assert answer["ok"] is False or answer["dimensions"][0]["status"] == "refused"
    # an index it does not serve: that dimension alone is refused
    answer = send(world, report(name, write(200, index="byUser"), read(10)), served(name))
    assert [r["status"] for r in answer["dimensions"]] == ["refused", "none"]
    out = capsys.readouterr().out
    # the malformed ones are alarmed; the tables and indexes not served are not
    assert (counted(out, "ReportsRefused"), counted(out, "ReportsNotServed")) == (3, 2)
    assert counted(out, "SurgesApplied") == 0
    assert world.throughput(name, "byUser") == (10, 10)
    assert world.throughput(other) == (50, 100)
    assert not any(s.holding for s in world.store.table(name)) and not any(
        s.holding for s in world.store.table(other)
    )


def test_a_hostile_combiner_item_is_ignored_counted_and_cleaned(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a combiner item someone wrote: huge, future, broken and nameless entries
    name = a_table(world, "Hostile")
    key = combiner.combiner_key(name, "table:write")
    now = time.time()

    def entry(d: str, at: float) -> dict[str, Any]:
        return {"M": {"d": {"N": d}, "t": {"N": "0"}, "k": {"N": "0"}, "at": {"N": str(at)}}}

    world.store_ddb.put_item(
        TableName=world.store.name,
        Item={
            **key,
            "reports": {
                "M": {
                    "liar": entry("1e30", now),
                    "future": entry("100000", now + 3600),
                    "junk": {"S": "junk"},
                    "x" * 65: entry("5000", now),
                    "old": entry("5000", now - FRESH_SECONDS - 5),
                    "unknowing": {"M": {**entry("1", now)["M"], "u": {"N": "1e30"}}},
                    # seconds that began after the report was sent
                    "backwards": {"M": {**entry("1", now)["M"], "s": {"N": str(now + 100)}}},
                }
            },
            # a surge's marks out of bounds: a raise in the future, an aim over 100 %
            "surge_raised": {"N": str(now + 3600)},
            "surge_started": {"N": "-5"},
            "surge_aim": {"N": "5"},
            "surge_max": {"N": "1e9"},
        },
    )
    found = combiner.entries(
        world.store_ddb.get_item(TableName=world.store.name, Key=key)["Item"], now
    )
    assert found.mark == combiner.SurgeMark()
    # WHEN an honest process reports below provisioned
    answer = send(world, report(name, write(50)), served(name))
    # THEN nothing is raised; the entries are ignored, counted and removed
    assert [r["status"] for r in answer["dimensions"]] == ["none"]
    assert world.target_min(name, "write") == 100
    assert counted(capsys.readouterr().out, "SurgeEntriesIgnored") == 6
    item = world.store_ddb.get_item(TableName=world.store.name, Key=key, ConsistentRead=True)
    assert sorted(item["Item"]["reports"]["M"]) == ["p1"]
    # AND an item whose map is no map is reset, not obeyed
    world.store_ddb.put_item(TableName=world.store.name, Item={**key, "reports": {"S": "x"}})
    assert send(world, report(name, write(50)), served(name))["dimensions"][0]["status"] == "none"
    item = world.store_ddb.get_item(TableName=world.store.name, Key=key, ConsistentRead=True)
    assert sorted(item["Item"]["reports"]["M"]) == ["p1"]


def test_a_full_combiner_hears_a_newcomer_through_the_shared_entry(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a dimension whose combiner holds 100 made-up processes, fresh and quiet
    name = a_table(world, "Full")
    key = combiner.combiner_key(name, "table:write")
    now = time.time()
    fresh = {
        f"w{i}": {"M": {"d": {"N": "0"}, "t": {"N": "0"}, "k": {"N": "0"}, "at": {"N": str(now)}}}
        for i in range(combiner.MAX_PROCESSES)
    }
    world.store_ddb.put_item(TableName=world.store.name, Item={**key, "reports": {"M": fresh}})
    # WHEN a real process reports 500 units/s
    answer = send(world, report(name, write(500), process="newcomer"), served(name))
    # THEN it is heard, through the one shared entry, and the table is raised (500 / 0.7)
    (row,) = answer["dimensions"]
    assert (row["status"], row.get("to")) == ("applied", 715), row.get("reason")
    out = capsys.readouterr().out
    assert (counted(out, "ReportsRefused"), counted(out, "CombinerFull")) == (0, 1)
    item = world.store_ddb.get_item(TableName=world.store.name, Key=key, ConsistentRead=True)
    listed = item["Item"]["reports"]["M"]
    assert len(listed) == combiner.MAX_PROCESSES + 1 and combiner.OVERFLOW in listed
    # AND a process already in it is still heard under its own id
    assert send(world, report(name, write(1), process="w7"), served(name))["ok"]
    # AND once entries are stale, a newcomer gets an entry of its own again
    later: Callable[[], float] = lambda: time.time() + FRESH_SECONDS + 5  # noqa: E731
    event = report(name, write(500), process="late", sent=later())
    send(world, event, served(name), clock=later)
    item = world.store_ddb.get_item(TableName=world.store.name, Key=key, ConsistentRead=True)
    assert "late" in item["Item"]["reports"]["M"]


def test_a_corrupt_combiner_is_repaired_and_the_report_taken(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a combiner item holding 500 stale entries and 20 malformed ones beside two
    # fresh ones, and a surge budget the repair must keep
    name = a_table(world, "Corrupt")
    key = combiner.combiner_key(name, "table:write")
    now = time.time()

    def entry(at: float) -> dict[str, Any]:
        return {"M": {"d": {"N": "1"}, "t": {"N": "0"}, "k": {"N": "0"}, "at": {"N": str(at)}}}

    listed = {f"old{i}": entry(now - 3_600) for i in range(500)}
    listed |= {f"bad{i}": {"M": {"d": {"S": "lots"}}} for i in range(20)}
    listed |= {"p2": entry(now), "p3": entry(now)}
    budget = {"S": f"{int(now)}:100:50"}
    item = {**key, "reports": {"M": listed}, "surge_budget": budget}
    world.store_ddb.put_item(TableName=world.store.name, Item=item)
    # WHEN a process reports
    (row,) = send(world, report(name, write(300)), served(name))["dimensions"]
    # THEN the report is taken (the dimension is raised), the item repaired and counted
    assert row["status"] == "applied"
    out = capsys.readouterr().out
    assert counted(out, "SurgeEntriesIgnored") == 520 and counted(out, "SurgesFailed") == 0
    after = world.store_ddb.get_item(TableName=world.store.name, Key=key, ConsistentRead=True)
    assert sorted(after["Item"]["reports"]["M"]) == ["p1", "p2", "p3"]
    assert after["Item"]["surge_budget"]["S"].split(":")[1] == "100"


def test_every_field_of_a_processs_rates_survives_the_combiner(world: World) -> None:
    """A field the report's contract adds to Rates is kept by the combiner too."""
    now = time.time()
    values = {f.name: 1.25 + i for i, f in enumerate(dataclasses.fields(Rates))}
    mine = Rates(**{**values, "at": round(now, 3)})
    key = combiner.combiner_key(world.name("Fields"), "table:write")
    assert world.store.table("none") == []
    found = combiner.record(world.store_ddb, world.store.name, key, "p1", mine, now)
    assert found is not None and found.rates == {"p1": mine}


def test_an_older_report_never_overwrites_a_newer_one_of_the_same_process(
    world: World,
) -> None:
    # GIVEN a process's report, and an earlier one of the same process arriving after it
    name = a_table(world, "Order")
    now = time.time()
    send(world, report(name, write(300), sent=now), served(name))
    (row,) = send(world, report(name, write(1), sent=now - 5), served(name))["dimensions"]
    # THEN the newer entry stays (the older report is ignored), and so does the surge
    key = combiner.combiner_key(name, "table:write")
    item = world.store_ddb.get_item(TableName=world.store.name, Key=key, ConsistentRead=True)
    assert combiner.entries(item["Item"], time.time()).rates["p1"].demand == 300
    assert row["status"] in ("renewed", "applied")
    assert world.target_min(name, "write") == 429
    # the same report delivered twice is ignored too
    found = combiner.record(
        world.store_ddb,
        world.store.name,
        key,
        "p1",
        Rates(5.0, 0.0, 0.0, round(now, 3), 5.0),
        time.time(),
    )
    assert found is not None and found.rates["p1"].demand == 300


def test_a_contended_combiner_is_a_failure_not_a_full_one(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    name = a_table(world, "Contended")

    def contended(*args: Any, **kwargs: Any) -> None:
        raise combiner.CombinerContended("the combiner item changed under each of 4 attempts")

    monkeypatch.setattr(combiner, "record", contended)
    (row,) = send(world, report(name, write(300)), served(name))["dimensions"]
    assert row["status"] == "failed" and "changed under each" in row["reason"]
    assert "500" not in row["reason"]
    out = capsys.readouterr().out
    assert (counted(out, "SurgesFailed"), counted(out, "CombinerFull")) == (1, 0)


def test_combiner_items_are_invisible_to_the_store_and_the_restore(world: World) -> None:
    # GIVEN a dimension with a combiner item beside an expired hold
    name = a_table(world, "Beside")
    send(world, report(name, write(300)), served(name))
    assert world.target_min(name, "write") == 429
    # THEN the store's readers see the hold's item only
    held, markers = world.store.scan()
    assert [(h.index, h.dimension) for h in held[name]] == [(None, "write")]
    assert markers == set()
    assert world.store._parse(combiner.combiner_key(name, "table:write")) is None
    # and the restore ends the surge as any hold, leaving the combiner item alone
    later: Callable[[], float] = lambda: time.time() + 6 * 60  # noqa: E731
    (row,) = restore_expired(name, clients=world.clients, store=world.store, clock=later)
    assert (row["from"], row["to"]) == (429, 100)
    assert not any(s.holding for s in world.store.table(name))
    item = world.store_ddb.get_item(
        TableName=world.store.name, Key=combiner.combiner_key(name, "table:write")
    )
    assert list(item["Item"]["reports"]["M"]) == ["p1"]


# ------------------------------------------------------------------ failures


def test_a_limit_that_leaves_no_room_fails_one_dimension_and_not_the_other(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a table whose read dimension holds a request that uses the store's whole room
    name = world.table("Room", 100, 100, tagged=False)
    world.target(name, "read", 100, 10_000)
    world.target(name, "write", 100, 10_000)
    store = HoldStore(world.store_ddb, world.store.name, HoldLimits(max_total_units=1_000))
    expires = datetime.now(UTC) + timedelta(hours=1)
    with store.lease(name, None, "read", deadline=time.time() + 5) as lease:
        lease.write(100, [Hold("request", None, "read", 1_000, expires, 100)])
    # WHEN one report asks for both
    answer = take_report(
        report(name, read(300), write(300)),
        served(name),
        SETTINGS,
        clients=world.clients,
        store=store,
    )
    # THEN read fails, counted, and write surges all the same
    rows = {r["dimension"]: r for r in answer["dimensions"]}
    assert rows["read"]["status"] == "failed" and "no room" in rows["read"]["reason"]
    assert rows["write"]["status"] == "applied"
    assert world.target_min(name, "write") == 429
    out = capsys.readouterr().out
    assert (counted(out, "SurgesFailed"), counted(out, "SurgesApplied")) == (1, 1)


def test_a_served_index_the_table_lacks_fails_naming_it(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    name = a_table(world, "NoIndex")
    event = report(name, write(200, index="gone"), write(200))
    rows = send(world, event, served(name, indexes=("gone",)))["dimensions"]
    assert [r["status"] for r in rows] == ["failed", "applied"]
    assert rows[0]["reason"] == f"index: table {name} has no index 'gone'"
    out = capsys.readouterr().out
    assert (counted(out, "SurgesFailed"), counted(out, "SurgesApplied")) == (1, 1)


def _table(status: str = "ACTIVE") -> dict[str, Any]:
    return {
        "Table": {
            "TableName": "Orders",
            "TableStatus": status,
            "TableArn": "arn:aws:dynamodb:us-east-1:123456789012:table/Orders",
            "ProvisionedThroughput": {"ReadCapacityUnits": 10, "WriteCapacityUnits": 10},
        }
    }


@pytest.fixture
def stubbed(aws_client: Any, prompt_store: Any) -> Iterator[tuple[Stubber, Clients, HoldStore]]:
    """A stubbed DynamoDB client for the table 'Orders' beside moto's Application Auto
    Scaling and a state store in dynalite."""
    name = f"holds-{uuid.uuid4().hex[:8]}"
    create_store_table(prompt_store, name)
    ddb = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stub = Stubber(ddb)
    # no tagging client: nothing here looks tables up by tag
    clients = Clients(ddb, aws_client("application-autoscaling"), aws_client("cloudwatch"), None)  # type: ignore[arg-type]
    with stub:
        yield stub, clients, HoldStore(prompt_store, name)
    stub.assert_no_pending_responses()


def _raise_read(stub: Stubber, *, first: bool = True) -> None:
    """What raising one dimension of 'Orders' costs: DescribeTable (is it due? read once for
    a report's dimensions: ``first``), reading the table under the lease (DescribeTable,
    its tags), the actuator's fresh read."""
    if first:
        stub.add_response("describe_table", _table())
    stub.add_response("describe_table", _table())
    stub.add_response("list_tags_of_resource", {"Tags": []})
    stub.add_response("describe_table", _table())


def test_a_refused_raise_counts_and_the_other_dimension_still_surges(
    stubbed: tuple[Stubber, Clients, HoldStore], capsys: pytest.CaptureFixture[str]
) -> None:
    stub, clients, store = stubbed
    # read: the account's limit refuses the raise
    _raise_read(stub)
    stub.add_client_error(
        "update_table", "LimitExceededException", "Subscriber limit exceeded", 400
    )
    # write: raised, on the report's one first-look description
    _raise_read(stub, first=False)
    stub.add_response("update_table", {})
    answer = take_report(
        report("Orders", read(100), write(100)),
        served("Orders"),
        SETTINGS,
        clients=clients,
        store=store,
    )
    rows = {r["dimension"]: r for r in answer["dimensions"]}
    assert rows["read"]["status"] == "failed"
    assert "LimitExceededException" in rows["read"]["reason"]
    assert rows["write"]["status"] == "applied"
    out = capsys.readouterr().out
    assert (counted(out, "SurgesFailed"), counted(out, "SurgesApplied")) == (1, 1)


def test_a_table_being_updated_fails_the_surge_unless_it_is_ours(
    stubbed: tuple[Stubber, Clients, HoldStore], capsys: pytest.CaptureFixture[str]
) -> None:
    stub, clients, store = stubbed
    stub.add_response("describe_table", _table("UPDATING"))
    (row,) = take_report(
        report("Orders", write(100)), served("Orders"), SETTINGS, clients=clients, store=store
    )["dimensions"]
    assert row["status"] == "failed" and "UPDATING" in row["reason"]
    assert counted(capsys.readouterr().out, "SurgesFailed") == 1
    # while our own surge's raise is under way, it is not a failure
    expires = datetime.now(UTC) + timedelta(minutes=5)
    with store.lease("Orders", None, "write", deadline=time.time() + 5) as lease:
        lease.write(10, [Hold(SURGE_HOLD, None, "write", 100, expires, 10)])
    stub.add_response("describe_table", _table("UPDATING"))
    (row,) = take_report(
        report("Orders", write(200)), served("Orders"), SETTINGS, clients=clients, store=store
    )["dimensions"]
    assert row["status"] == "deferred"
    out = capsys.readouterr().out
    assert (counted(out, "SurgesFailed"), counted(out, "SurgesDeferred")) == (0, 1)


def test_every_state_store_call_is_one_the_signals_role_may_make(world: World) -> None:
    """dynalite checks no IAM: the calls a surge, its renewal and its refusal make on the
    state store are recorded and checked against what the construct grants the function."""
    from constructs_pkg.fast_path._fast_path import SIGNALS_STORE_ACTIONS

    calls: set[str] = set()

    def note(**kwargs: Any) -> None:
        calls.add(kwargs["model"].name)

    name = a_table(world, "Granted")
    assert not any(s.holding for s in world.store.table(name))
    world.store_ddb.meta.events.register("before-call.dynamodb", note)
    try:
        send(world, report(name, write(300)), served(name))
        send(world, report(name, write(600, throttles={"provisioned": 5})), served(name))
        send(world, report(name, write(1)), served(name))
    finally:
        world.store_ddb.meta.events.unregister("before-call.dynamodb", note)
    granted = {a.split(":", 1)[1] for a in SIGNALS_STORE_ACTIONS}
    assert {"GetItem", "UpdateItem"} <= calls <= granted, calls


# ------------------------------------------------------------------ settings


def test_the_entry_point_reads_its_configuration_from_the_environment(
    aws_client: Any, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the function's environment as the construct writes it (store in moto too)
    world = World(aws_client)
    try:
        for key, value in aws_env.items():
            monkeypatch.setenv(key, value)
        name = a_table(world, "Entry")
        monkeypatch.setenv("CAPACITY_HOLDS_TABLE", world.store.name)
        monkeypatch.setenv("CAPACITY_SCOPES", json.dumps([{"table": name}]))
        monkeypatch.setenv("CAPACITY_MAX_UNITS", "5000")
        monkeypatch.setenv("CAPACITY_SURGE_CAP", "50")
        # WHEN a report arrives, THEN the surge obeys the configured cap
        (row,) = signals_handler(report(name, write(300)), None)["dimensions"]
        assert (row["status"], row["to"]) == ("applied", 150)
        assert world.target_min(name, "write") == 150
        # a broken configuration fails the invocation (alarmed), naming the variable
        monkeypatch.setenv("CAPACITY_SURGE_SHARE", "2")
        with pytest.raises(BrokerConfigError, match="CAPACITY_SURGE_SHARE: got '2'"):
            signals_handler(report(name, write(300)), None)
        monkeypatch.delenv("CAPACITY_SURGE_SHARE")
        monkeypatch.delenv("CAPACITY_SCOPES")
        with pytest.raises(BrokerConfigError, match="CAPACITY_SCOPES: got ''"):
            signals_handler(report(name, write(300)), None)
    finally:
        world.close()


def test_the_client_hook_reports_through_lambda_and_the_table_is_raised(
    aws_client: Any, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end: a process's DynamoDB client watched by the client hook, whose reports go
    as asynchronous invocations over HTTP to the signals function (the local Lambda
    stand-in runs it), which raises the table's minimum."""
    from ddb_capacity_runtime.fast_path.hook import watch
    from ddb_capacity_tools import local_aws
    from tests.support.local_lambda import local_lambda

    world = World(aws_client)
    try:
        for key, value in aws_env.items():
            monkeypatch.setenv(key, value)
        # GIVEN a table at 1 write unit under a target, served by the signals function
        name = a_table(world, "Hooked", write_min=1, write_max=1_000)
        monkeypatch.setenv("CAPACITY_HOLDS_TABLE", world.store.name)
        monkeypatch.setenv("CAPACITY_SCOPES", json.dumps([{"table": name}]))
        received: list[Any] = []

        def function(event: Any, context: Any) -> Any:
            received.append(event)
            return signals_handler(event, context)

        with local_lambda({"capacity-signals": function}) as url:
            monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", url)
            ddb = local_aws.client(aws_env["AWS_ENDPOINT_URL"], "dynamodb")
            # WHEN a watched process writes 40 items at once (its reports one after the
            # other: the watcher's next timed send is a minute away; flush sends now, and
            # stop the rate brought to zero. Racing reports are the lease's tests, on
            # dynalite)
            watcher = watch(ddb, function="capacity-signals", interval=60)
            for i in range(40):
                ddb.put_item(TableName=name, Item={"pk": {"S": f"k{i}"}})
            watcher.flush()
            watcher.stop()
        # THEN its report arrived, and the minimum went up within the call
        assert watcher.failed_sends == 0 and received
        raw = [r for batch in received for r in reports_of(batch)]
        reports = [r for r in raw if isinstance(r, dict)]
        assert len(reports) == len(raw)  # each a JSON object
        assert {r["table"] for r in reports} == {name}
        assert sum(dim["units"] for r in reports for dim in r["dims"]) == 40
        assert world.target_min(name, "write") > 1
        assert world.throughput(name)[1] == world.target_min(name, "write")
    finally:
        world.close()


def test_settings_round_trip_through_the_environment() -> None:
    settings = SurgeSettings(share=0.5, surge_minutes=10, cap=2_000)
    assert SurgeSettings.from_env(settings.to_env()) == settings
    for other in (
        SurgeSettings(scale=2.5, budget=5_000),
        SurgeSettings(scale=None, budget=UNBOUNDED),
        SurgeSettings(cap=300, budget=UNBOUNDED),
    ):
        assert SurgeSettings.from_env(other.to_env()) == other
    assert SurgeSettings.from_env({}) == SurgeSettings()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"CAPACITY_SURGE_SHARE": "0"},
            "CAPACITY_SURGE_SHARE: got '0'; expected a number over 0, at most 1",
        ),
        (
            {"CAPACITY_SURGE_SHARE": "half"},
            "CAPACITY_SURGE_SHARE: got 'half'; expected a number over 0, at most 1",
        ),
        (
            {"CAPACITY_SURGE_MINUTES": "0"},
            "CAPACITY_SURGE_MINUTES: got '0'; expected a whole number from 1 to 1440",
        ),
        (
            {"CAPACITY_SURGE_MINUTES": "2.5"},
            "CAPACITY_SURGE_MINUTES: got '2.5'; expected a whole number from 1 to 1440",
        ),
        (
            {"CAPACITY_SURGE_CAP": "x"},
            "CAPACITY_SURGE_CAP: got 'x'; expected a whole number from 1 to 1000000, "
            "'unbounded' (no cap), or unset (the default cap: CAPACITY_SURGE_SCALE x the "
            "start)",
        ),
        (
            {"CAPACITY_SURGE_SCALE": "1"},
            "CAPACITY_SURGE_SCALE: got '1'; expected a number over 1, at most 100",
        ),
        (
            {"CAPACITY_SURGE_BUDGET": "0"},
            "CAPACITY_SURGE_BUDGET: got '0'; expected a whole number from 1 to 10000000, "
            "'unbounded', or unset (the default budget)",
        ),
    ],
)
def test_a_bad_setting_fails_the_invocation_naming_it(env: dict[str, str], message: str) -> None:
    with pytest.raises(BrokerConfigError) as info:
        SurgeSettings.from_env(env)
    assert str(info.value) == message
