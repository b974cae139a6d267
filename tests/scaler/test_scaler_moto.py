"""The scaler's tick, in-process, against a moto server on 127.0.0.1: real DynamoDB,
Application Auto Scaling, CloudWatch and tagging APIs, traffic written as CloudWatch data."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from ddb_capacity_runtime.core.names import resource_id, scalable_dimension
from ddb_capacity_runtime.core.plan import every_dimension_read
from tests.support.moto_world import World


@pytest.fixture
def world(aws_client: Any) -> Iterator[World]:
    made = World(aws_client)
    yield made
    made.close()


def test_a_tick_scales_each_table_by_its_own_evidence(world: World) -> None:
    # GIVEN a throttled table with an idle GSI, an idle table, a steady one, and a bad override
    throttled = world.table("orders", 100, 100, gsi=(50, 50))
    world.traffic(throttled, "write", 100, minutes=range(1, 16))
    world.traffic(throttled, "write", 0, throttles=3000, minutes=range(1, 3))
    world.traffic(throttled, "read", 60)
    idle = world.table("archive", 200, 200)
    steady = world.table("sessions", 100, 100)
    world.traffic(steady, "read", 60)
    world.traffic(steady, "write", 55)
    broken = world.table("broken", 10, 10, tags={"ddb-capacity:min": "lots"})
    # WHEN one tick runs
    summary, lines = world.tick()
    # THEN the throttled write jumps to (served 100 + refused 50) / 0.7 at once
    assert world.throughput(throttled) == (100, 215)
    # AND the idle GSI and the idle table go to the minimum, both dimensions in one update
    assert world.throughput(throttled, "byUser") == (5, 5)
    assert world.throughput(idle) == (5, 5)
    # AND the steady table holds; the broken tag is ignored with a warning, and its idle
    # table is decided on the defaults like the others
    assert world.throughput(steady) == (100, 100)
    assert world.throughput(broken) == (5, 5)
    (ignored,) = [line for line in lines if line.get("event") == "tag-ignored"]
    assert (ignored["table"], ignored["key"], ignored["value"]) == (
        broken,
        "ddb-capacity:min",
        "lots",
    )
    assert summary["skipped"] == [] and summary["failures"] == []
    assert summary["tables"] == 4 and summary["failed"] == []
    # AND there is one decision line per dimension and one EMF record per table
    decisions = [line for line in lines if line.get("event") == "decision"]
    assert len(decisions) == 2 * 2 + 2 + 2 + 2
    write = next(
        d
        for d in decisions
        if d["table"] == throttled and d["index"] is None and d["dimension"] == "write"
    )
    assert (write["from"], write["to"], write["action"], write["status"]) == (
        100,
        215,
        "increase",
        "applied",
    )
    assert write["throttles_seen"] == 6000 and write["reason"].startswith("throttled")
    emf = [line for line in lines if "_aws" in line]
    assert {line.get("TableName") for line in emf} == {throttled, idle, steady, broken, None}
    (tick_emf,) = [line for line in emf if "TableName" not in line]
    assert (tick_emf["Failures"], tick_emf["SharedFailures"], tick_emf["TablesManaged"]) == (
        0,
        0,
        4,
    )
    # the tick's own record is its deployment's: dimension StateStore, its state store; a
    # healthy tick's counts are 0, and TablesManaged a field of the line only: no metric
    assert tick_emf["StateStore"] == world.store.name
    assert tick_emf["_aws"]["CloudWatchMetrics"] == []
    orders_emf = next(line for line in emf if line["TableName"] == throttled)
    assert orders_emf["ThrottleEventsSeen"] == 6000 and orders_emf["Decisions"] == 3
    assert orders_emf["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "DynamoDBCapacity"


def test_tables_under_auto_scaling_get_their_minimum_moved_then_restored(world: World) -> None:
    # GIVEN an explicitly listed table whose read is under target tracking, being throttled
    name = world.table("catalog", 100, 20, tagged=False)
    world.target(name, "read", 10, 1000)
    world.traffic(name, "read", 100)
    world.traffic(name, "read", 0, throttles=1200, minutes=range(1, 2))
    # WHEN a tick runs
    summary, _ = world.tick(SCALER_TABLES=name, SCALER_TAG_KEY="")
    # THEN the target's minimum is raised (auto scaling performs it), not the table directly
    assert world.target_min(name, "read") == 172  # (100 + 1200 / 60) / 0.7
    assert world.throughput(name)[0] == 100
    assert world.memory(name, "read") == "10:172"  # the base, the min set (state store)
    assert not [k for k in world.tags(name) if k.startswith("ddb-capacity:")]  # no tag
    assert {(c["via"], c["to"]) for c in summary["changes"]} >= {("scalable-target", 172)}
    # WHEN a later tick sees no throttling in its window (and light traffic up to its end)
    later = world.now + timedelta(minutes=45)
    world.traffic(name, "read", 5, minutes=range(-44, -28))
    world.tick(later, SCALER_TABLES=name, SCALER_TAG_KEY="")
    # THEN the configured minimum is restored and the memory forgotten
    assert world.target_min(name, "read") == 10
    assert world.memory(name, "read") is None
    assert not any(s.holding for s in world.store.table(name))


def test_library_tags_on_a_later_page_of_the_tag_listing_are_read(world: World) -> None:
    # GIVEN a table with 14 tags of its own (moto lists 10 a page, as AWS may page them) and
    # its write max in a 15th, on the listing's second page; its writes are throttled
    tags = {f"team-{i:02d}": "x" for i in range(14)}
    tags["ddb-capacity:write-max"] = "150"
    name = world.table("paged", 100, 100, tagged=False, tags=tags)
    world.traffic(name, "write", 100)
    world.traffic(name, "write", 0, throttles=30_000, minutes=range(1, 2))
    # WHEN a tick runs (the default max is 1,000)
    world.tick(SCALER_TABLES=name, SCALER_TAG_KEY="")
    # THEN the raise stops at the tagged max: every page of the listing was read
    assert world.throughput(name)[1] == 150


def test_the_tags_the_constructs_write_are_not_counted_as_ignored(world: World) -> None:
    # GIVEN a table pre-warmed by the constructs (they tag it ddb-capacity:prewarm), beside
    # one with a tag the library does not know
    warm = world.table("warm", 100, 100, tags={"ddb-capacity:prewarm": "PROVISION_THEN_SETTLE"})
    odd = world.table("odd", 100, 100, tags={"ddb-capacity:prewarmed": "yes"})
    # WHEN a tick runs
    summary, events = world.tick()
    # THEN only the unknown tag is reported and counted
    ignored = [(e["table"], e["key"]) for e in events if e.get("event") == "tag-ignored"]
    assert ignored == [(odd, "ddb-capacity:prewarmed")]
    counted = {e["TableName"]: e.get("IgnoredTags") for e in events if "Decisions" in e}
    assert counted == {warm: None, odd: 1}  # sent only while it happens
    assert summary["failures"] == []


def test_a_max_tag_below_the_load_is_refused_for_its_dimension_and_counted(
    world: World,
) -> None:
    # GIVEN two tables of 1,000 WCU writing 500/s (715 WCU at the 70 % target), one tagged
    # write-max=10, the other write-max=800; and, on the first, a GSI writing 5/s
    cut = world.table("cut", 100, 1000, gsi=(10, 1000), tags={"ddb-capacity:write-max": "10"})
    fair = world.table("fair", 100, 1000, tags={"ddb-capacity:write-max": "800"})
    for name in (cut, fair):
        world.traffic(name, "read", 50)
        world.traffic(name, "write", 500)
    world.traffic(cut, "read", 5, index="byUser")
    world.traffic(cut, "write", 5, index="byUser")
    # WHEN a tick runs
    summary, events = world.tick()
    # THEN the tag that would cut the table's write from 1,000 to 10 is not obeyed: the
    # write keeps the default max and stays where its load has it
    assert world.throughput(cut)[1] == 1000
    # AND the same tag is obeyed where the load fits under it: the GSI's write goes to 10
    assert world.throughput(cut, "byUser")[1] == 10
    # AND a max above the load is obeyed: 800 (>= 715)
    assert world.throughput(fair)[1] == 800
    # AND the refusal is counted for its table and says what it refused and why
    counted = {e["TableName"]: e.get("RefusedTags") for e in events if "Decisions" in e}
    assert counted[cut] == 1 and counted[fair] is None  # sent only while it happens
    (refused,) = [e for e in events if e.get("event") == "tag-refused"]
    assert (refused["table"], refused["index"], refused["dimension"]) == (cut, None, "write")
    assert (refused["key"], refused["value"], refused["consumed"], refused["needs"]) == (
        "ddb-capacity:write-max",
        10,
        500.0,
        715,
    )
    assert refused["reason"] == (
        "ddb-capacity:write-max=10 would lower the dimension's max below what it needs: it "
        "consumes up to 500.0 units/s, 715 units at its 70% target. Not obeyed: the max "
        "stays 1000"
    )
    assert summary["failures"] == []


def test_dry_run_decides_and_changes_nothing(world: World) -> None:
    name = world.table("dry", 100, 100)
    world.traffic(name, "write", 100)
    world.traffic(name, "write", 0, throttles=600, minutes=range(1, 2))
    summary, lines = world.tick(SCALER_DRY_RUN="true")
    assert world.throughput(name) == (100, 100)
    assert summary["dry_run"] is True
    assert [(c["to"], c["status"]) for c in summary["changes"] if c["dimension"] == "write"] == [
        (158, "dry-run")
    ]  # (100 + 10) / 0.7


def test_overrides_from_configuration_bound_the_decision(world: World) -> None:
    name = world.table("capped", 100, 100)
    world.traffic(name, "write", 100)
    world.traffic(name, "write", 0, throttles=30_000, minutes=range(1, 2))
    world.tick(SCALER_OVERRIDES=json.dumps({name: {"write": {"max": 180}}}))
    # write stops at its override's max; the idle read goes to the default min
    assert world.throughput(name) == (5, 180)


def test_a_missing_explicit_table_is_a_failure_and_the_others_go_on(world: World) -> None:
    name = world.table("present", 300, 300)
    world.traffic(name, "read", 1)
    summary, _ = world.tick(SCALER_TABLES=world.name("absent"))
    assert world.throughput(name) == (5, 5)  # nearly idle, tag-discovered
    (failure,) = summary["failures"]
    assert failure["table"] == world.name("absent")
    assert failure["reason"].startswith("ResourceNotFoundException")


def test_metrics_are_fetched_in_batches_of_500(world: World) -> None:
    # GIVEN 130 tables with a GSI each (520 dimensions, 520 consumed-capacity queries)
    names = [world.table(f"many{i}", 5, 5, gsi=(5, 5)) for i in range(130)]
    assert world.store.table("nothing") == []  # the hold store exists before counting
    calls: dict[str, int] = {}

    def count(event_name: str, **_: Any) -> None:
        op = event_name.rsplit(".", 1)[1]
        calls[op] = calls.get(op, 0) + 1

    for client in (
        world.clients.cloudwatch,
        world.clients.dynamodb,
        world.clients.tagging,
        world.clients.autoscaling,
    ):
        client.meta.events.register("before-call.*.*", count)
    # WHEN a tick runs that is no table's forecast tick (which reads history besides)
    # (tables forecast in 5-minute slots with 2-minute ticks: none at minute 33), nor one
    # that reads every dimension's throttles by the clock (at minute 33: of an even hour)
    at = world.now.replace(minute=33) - timedelta(hours=1)
    at -= timedelta(hours=1) if every_dimension_read(at, 2) else timedelta(0)
    summary, _ = world.tick(at)
    # THEN two GetMetricData calls serve them all (none near its capacity nor lowered: no
    # throttles read); DescribeTable is one per table; tag discovery pages 100 tables at a
    # time
    assert summary["dimensions"] == 4 * len(names)
    assert calls["GetMetricData"] == 2
    assert calls["DescribeTable"] == len(names)
    assert calls["GetResources"] == 2


def test_the_scaler_aims_at_the_target_of_the_tables_own_policy(world: World) -> None:
    # GIVEN a read target whose target-tracking policy aims at 50 %, being throttled
    name = world.table("aim", 100, 20, tagged=False)
    world.target(name, "read", 10, 1000, target_percent=50)
    world.traffic(name, "read", 100)
    world.traffic(name, "read", 0, throttles=1200, minutes=range(1, 2))
    # WHEN a tick runs (the scaler's own default target is 70 %)
    world.tick(SCALER_TABLES=name, SCALER_TAG_KEY="")
    # THEN it sizes the raise for 50 %, as auto scaling will: (100 + 20) / 0.5
    assert world.target_min(name, "read") == 240


# ------------------------------------------------------------------ the autopilot's forecast


AUTOPILOT = {"SCALER_MODE": "autopilot", "SCALER_TAG_KEY": "", "SCALER_DEFAULT_MAX": "20000"}


def test_the_autopilot_plans_the_hour_keeps_the_plan_in_a_tag_and_raises_ahead_of_the_peak(
    world: World,
) -> None:
    # GIVEN a write spike at 40-70 minutes past the hour on each of the last 3 days, on a
    # table under a scalable target and on one without
    hour = world.now.replace(minute=0)
    targeted = world.table("Daily", 10, 10, tagged=False, forecast_minute=0)
    world.target(targeted, "write", 10, 20_000)
    direct = world.table("Direct", 10, 10, tagged=False, forecast_minute=0)
    for name in (targeted, direct):
        world.daily_spikes(name, hour, first_minute=40, per_second=6_000)
    env = {**AUTOPILOT, "SCALER_TABLES": f"{targeted},{direct}"}
    # a tick later in the hour, before any forecast: nothing read, nothing planned
    _, events = world.tick(hour + timedelta(minutes=4), **env)
    assert not [e for e in events if e.get("event") == "forecast"]
    # WHEN the first tick of the hour runs
    _, events = world.tick(hour, **env)
    # THEN it reads 14 days, forecasts every dimension and logs each plan: 6,000 / 0.9 (the
    # aim of a forecast without error) from the step 20 minutes (lead and spread) before
    # the spike
    forecasts = {(e["table"], e["dimension"]): e for e in events if e.get("event") == "forecast"}
    assert set(forecasts) == {(n, d) for n in (targeted, direct) for d in ("read", "write")}
    write = forecasts[(targeted, "write")]
    assert write["season"] == "daily" and write["error"] == 0
    assert write["peak"] == pytest.approx(6_000) and write["floor"] == 6_667
    start = int(hour.timestamp() // 60)
    floors = [10] * 4 + [6_667] * 11  # steps 0-15; 20-70 (the spike, lead and spread)
    assert write["plan"] == f"{start}:90:0:0:" + "/".join(map(str, floors))
    # each write plan is kept in the state store; a plan that never rises above the
    # minimum (the reads) is none; nothing is raised before it is needed
    for name in (targeted, direct):
        assert world.plan(name, "write") == forecasts[(name, "write")]["plan"]
        assert world.plan(name, "read") is None
        assert forecasts[(name, "read")]["plan"] is None
    assert world.target_min(targeted, "write") == 10
    assert world.throughput(direct)[1] == 10
    # WHEN a later tick, which reads no history, comes to the planned step
    _, events = world.tick(hour + timedelta(minutes=20), **env)
    assert not [e for e in events if e.get("event") == "forecast"]
    # THEN the kept plan raises the target's minimum, and the other table by UpdateTable
    assert world.target_min(targeted, "write") == 6_667
    assert world.throughput(direct)[1] == 6_667
    # and the base under the raised minimum is remembered as before
    assert world.memory(targeted, "write") == "10:6667"


def test_each_table_forecasts_in_its_own_slot_of_the_hour(world: World) -> None:
    # GIVEN two tables whose names put their forecasts at minutes 0 and 30 of the hour
    hour = world.now.replace(minute=0)
    early = world.table("Early", 10, 10, tagged=False, forecast_minute=0)
    late = world.table("Late", 10, 10, tagged=False, forecast_minute=30)
    env = {**AUTOPILOT, "SCALER_TABLES": f"{early},{late}"}

    def forecast(minute: int) -> set[str]:
        _, events = world.tick(hour + timedelta(minutes=minute), **env)
        return {e["table"] for e in events if e.get("event") == "forecast"}

    # WHEN ticks run through the hour: THEN each table is forecast at its own tick only, so
    # an account's history reads and plan tags spread over the hour
    assert forecast(0) == {early} and forecast(1) == {early}
    assert forecast(2) == set() and forecast(29) == set()
    assert forecast(30) == {late} and forecast(32) == set()


def test_a_table_with_fifty_tags_of_its_own_is_raised_and_keeps_its_plans(
    world: World,
) -> None:
    # GIVEN a table with 50 tags of its own (DynamoDB's limit) and a GSI, both writes under
    # scalable targets and both with a daily spike; a plan is kept for an index since
    # deleted
    hour = world.now.replace(minute=0)
    own = {f"cost-centre-{i:02d}": "x" for i in range(50)}
    name = world.table("Crowded", 10, 10, gsi=(10, 10), tagged=False, tags=own, forecast_minute=0)
    for index, peak in ((None, 6_000), ("byUser", 3_000)):
        world.target(name, "write", 10, 20_000, index=index)
        world.daily_spikes(name, hour, first_minute=40, per_second=peak, index=index)
    world.set_plan(name, "write", f"{int(hour.timestamp() // 60) - 60}:70:0:0:500", "Gone")
    env = {**AUTOPILOT, "SCALER_TABLES": name}
    # WHEN the hour's forecast runs
    _, events = world.tick(hour, **env)
    # THEN both plans are kept in the state store, and the deleted index's plan is gone
    plans = {e["index"]: e["plan"] for e in events if e.get("event") == "forecast"}
    assert world.plan(name, "write") == plans[None] is not None
    assert world.plan(name, "write", "byUser") == plans["byUser"] is not None
    assert world.plan(name, "write", "Gone") is None
    assert not [e for e in events if e.get("event") == "plans-not-kept"]
    (emf,) = [e for e in events if e.get("TableName") == name and "_aws" in e]
    assert "PlansNotKept" not in emf and emf["Failures"] == 0
    # WHEN a later tick comes to the planned step
    _, events = world.tick(hour + timedelta(minutes=20), **env)
    # THEN both minimums are raised, their memories in the store and no tag written
    assert world.target_min(name, "write") == 6_667
    assert world.target_min(name, "write", "byUser") == 3_334
    assert world.memory(name, "write") == "10:6667"
    assert world.memory(name, "write", "byUser") == "10:3334"
    assert world.tags(name) == own
    # WHEN the index, scaled out to its minimum by auto scaling (moto's targets move no
    # table), is throttled in the newest minutes: it is raised further
    world.provision(name, "byUser", 10, 3_334)
    world.traffic(name, "write", 3_334, throttles=300_000, minutes=range(1, 3), index="byUser")
    summary, _ = world.tick(**env)
    assert world.target_min(name, "write", "byUser") > 3_334 and not summary["failed"]
    assert world.tags(name) == own


def test_a_plan_the_store_cannot_keep_now_is_obeyed_and_counted(world: World) -> None:
    # GIVEN a table with a daily spike whose dimension's state a capacity request holds
    # (its lease) while the hour's forecast runs
    hour = world.now.replace(minute=0)
    name = world.table("Busy", 10, 10, tagged=False, forecast_minute=0)
    world.target(name, "write", 10, 20_000)
    world.daily_spikes(name, hour, first_minute=40, per_second=6_000)
    env = {**AUTOPILOT, "SCALER_TABLES": name}
    with world.store.lease(name, None, "write", deadline=time.time() + 5):
        _, events = world.tick(hour, **env)
    # THEN the plan is not kept, and that is said and counted
    assert world.plan(name, "write") is None
    (warning,) = [e for e in events if e.get("event") == "plans-not-kept"]
    assert warning["not_kept"] == 1
    (emf,) = [e for e in events if e.get("TableName") == name and "_aws" in e]
    assert emf["PlansNotKept"] == 1 and emf["Failures"] == 0
    # AND published for the scaler's deployment too (dimension StateStore), the worst
    # table's, which the PlansNotKept alarm watches (a per-table metric cannot be alarmed on
    # for every table at once)
    worst = emf["_aws"]["CloudWatchMetrics"][1]
    assert worst["Dimensions"] == [["StateStore"]] and emf["StateStore"] == world.store.name
    assert {"Name": "PlansNotKept", "Unit": "Count"} in worst["Metrics"]


def test_a_falling_plan_lowers_the_minimum_in_steps_and_remembers_the_base(world: World) -> None:
    # GIVEN a write target (minimum 10) with capacity and quiet traffic, at a minute that is
    # not the hour's first (no forecast runs: the plans below are the kept ones)
    now = world.now - timedelta(minutes=3) if world.now.minute < 2 else world.now
    name = world.table("Falling", 10, 9_000, tagged=False, forecast_minute=0)
    world.target(name, "write", 10, 20_000)
    world.traffic(name, "write", 100, minutes=range(1, 40))
    start = int(now.timestamp() // 60)
    start -= start % 5

    def plan(*floors: int) -> None:
        world.set_plan(name, "write", f"{start}:70:0:" + "/".join(map(str, floors)))

    env = {**AUTOPILOT, "SCALER_TABLES": name}
    # WHEN the plan's floor now is 8,572: the minimum is raised to it, the base remembered
    plan(8_572, 8_572)
    world.tick(now, **env)
    assert world.target_min(name, "write") == 8_572
    assert world.memory(name, "write") == "10:8572"
    # WHEN it falls, with 4,000 still needed within the half hour: the minimum goes to
    # 4,000, and the base is still remembered under it
    plan(10, 10, 10, 4_000)
    world.tick(now, **env)
    assert world.target_min(name, "write") == 4_000
    assert world.memory(name, "write") == "10:4000"
    # WHEN nothing is planned any more: the configured minimum is back, the memory gone
    world.set_plan(name, "write", None)
    world.tick(now, **env)
    assert world.target_min(name, "write") == 10
    assert world.memory(name, "write") is None
    assert not any(s.holding for s in world.store.table(name))


def test_a_kept_plan_that_is_not_one_is_ignored_and_counted(world: World) -> None:
    # GIVEN plans in the state store that are not plans: a floor over the quota, a start
    # that is no minute
    minute = int(world.now.timestamp() // 60)
    name = world.table("Planted", 10, 10, tagged=False, forecast_minute=0)
    world.set_plan(name, "write", f"{minute - minute % 5}:70:0:40001")
    world.set_plan(name, "read", "soon:9000")
    # WHEN a tick that does not forecast runs
    _, events = world.tick(world.now + timedelta(minutes=4), **AUTOPILOT, SCALER_TABLES=name)
    # THEN neither is obeyed, and both are counted
    assert world.throughput(name) == (10, 10)
    (record,) = [e for e in events if e.get("TableName") == name and "IgnoredTags" in e]
    assert record["IgnoredTags"] == 2 and record["Failures"] == 0
    # each says what a plan must be, in the format the scaler writes
    ignored = [e for e in events if e.get("event") == "plan-ignored"]
    assert {e["dimension"] for e in ignored} == {"read", "write"}
    (reason,) = {e["reason"] for e in ignored}
    assert reason.startswith("expected <start minute>:<aim %>:<reserve>:<least fall>:<floor>/...")


def test_the_reactive_mode_never_reads_the_history(world: World) -> None:
    name = world.table("Reactive", 10, 10, tagged=False, forecast_minute=0)
    world.target(name, "write", 10, 20_000)
    hour = world.now.replace(minute=0)
    world.daily_spikes(name, hour, first_minute=20, per_second=6_000)
    _, events = world.tick(
        hour,
        SCALER_MODE="reactive",
        SCALER_TABLES=name,
        SCALER_TAG_KEY="",
        SCALER_DEFAULT_MAX="20000",
    )
    assert not [e for e in events if e.get("event") == "forecast"]
    assert world.target_min(name, "write") == 10


# ------------------------------------------------------------------ owned target values


def policy_target(world: World, name: str, dimension: str, index: str | None = None) -> float:
    (policy,) = world.aas.describe_scaling_policies(
        ServiceNamespace="dynamodb",
        ResourceId=resource_id(name, index),
        ScalableDimension=scalable_dimension(index, dimension),
    )["ScalingPolicies"]
    config = policy["TargetTrackingScalingPolicyConfiguration"]
    assert config["PredefinedMetricSpecification"] == {
        "PredefinedMetricType": f"DynamoDB{dimension.capitalize()}CapacityUtilization"
    }
    return float(config["TargetValue"])


def test_an_owned_policy_aims_at_the_plans_aim_and_is_set_back_after(world: World) -> None:
    # GIVEN a write target whose policy aims at 70 %, owned by the autopilot at 70, and a
    # read target whose policy is not owned
    now = world.now - timedelta(minutes=3) if world.now.minute < 2 else world.now
    name = world.table("Owned", 10, 9_000, tagged=False, forecast_minute=0)
    world.target(name, "write", 10, 20_000)
    world.target(name, "read", 10, 20_000, target_percent=60)
    world.traffic(name, "write", 100, minutes=range(1, 40))
    start = int(now.timestamp() // 60)
    start -= start % 5
    owned = json.dumps({name: {"write": 70}})
    env = {**AUTOPILOT, "SCALER_TABLES": name, "SCALER_OWNED_TARGETS": owned}
    # WHEN a plan aiming at 90 % is in force
    world.set_plan(name, "write", f"{start}:90:0:0:8000/8000")
    _, events = world.tick(now, **env)
    # THEN the owned policy aims at 90, the other is left at its own 60
    assert policy_target(world, name, "write") == 90
    assert policy_target(world, name, "read") == 60
    (said,) = [e for e in events if e.get("event") == "target-value"]
    assert (said["old"], said["new"], said["dimension"]) == (70, 90, "write")
    # WHEN the plan ends: the configured 70 is back (not the 90 the policy has now)
    world.set_plan(name, "write", None)
    world.tick(now, **env)
    assert policy_target(world, name, "write") == 70
    # WHEN nothing changes, nothing is written
    _, events = world.tick(now, **env)
    assert not [e for e in events if e.get("event") == "target-value"]


def test_an_owned_policy_is_written_back_with_its_cooldowns_and_scale_in_setting(
    world: World,
) -> None:
    # GIVEN a read target whose policy has cooldowns and scale-in disabled, owned at 70
    now = world.now - timedelta(minutes=3) if world.now.minute < 2 else world.now
    name = world.table("Cooled", 10, 9_000, tagged=False, forecast_minute=0)
    world.target(name, "read", 10, 20_000)
    kept = {"ScaleInCooldown": 120, "ScaleOutCooldown": 30, "DisableScaleIn": True}
    world.aas.put_scaling_policy(
        PolicyName=f"{name}-None-read",
        ServiceNamespace="dynamodb",
        ResourceId=resource_id(name, None),
        ScalableDimension=scalable_dimension(None, "read"),
        PolicyType="TargetTrackingScaling",
        TargetTrackingScalingPolicyConfiguration={
            "TargetValue": 70.0,
            "PredefinedMetricSpecification": {
                "PredefinedMetricType": "DynamoDBReadCapacityUtilization"
            },
            **kept,
        },
    )
    start = int(now.timestamp() // 60)
    start -= start % 5
    owned = json.dumps({name: {"read": 70}})
    # WHEN a plan aiming at 90 % is in force
    world.set_plan(name, "read", f"{start}:90:0:0:8000/8000")
    world.tick(now, **AUTOPILOT, SCALER_TABLES=name, SCALER_OWNED_TARGETS=owned)
    # THEN the policy aims at 90 on the read metric, and nothing else of it has changed
    assert policy_target(world, name, "read") == 90
    (policy,) = world.aas.describe_scaling_policies(
        ServiceNamespace="dynamodb", ResourceId=resource_id(name, None)
    )["ScalingPolicies"]
    config = policy["TargetTrackingScalingPolicyConfiguration"]
    assert {k: config.get(k) for k in kept} == kept


def test_without_ownership_or_in_dry_run_no_policy_is_written(world: World) -> None:
    now = world.now - timedelta(minutes=3) if world.now.minute < 2 else world.now
    name = world.table("NotOwned", 10, 9_000, tagged=False, forecast_minute=0)
    world.target(name, "write", 10, 20_000)
    start = int(now.timestamp() // 60)
    start -= start % 5
    world.set_plan(name, "write", f"{start}:90:0:0:8000/8000")
    world.tick(now, **AUTOPILOT, SCALER_TABLES=name)
    assert policy_target(world, name, "write") == 70
    owned = json.dumps({name: {"write": 70}})
    _, events = world.tick(
        now, **AUTOPILOT, SCALER_TABLES=name, SCALER_OWNED_TARGETS=owned, SCALER_DRY_RUN="true"
    )
    assert policy_target(world, name, "write") == 70
    (said,) = [e for e in events if e.get("event") == "target-value"]
    assert said["dry_run"] is True and said["new"] == 90


def test_an_owned_target_value_without_a_policy_to_write_is_counted(world: World) -> None:
    # GIVEN a write target whose target value the autopilot is to own, but whose
    # target-tracking policy is gone (deleted by hand, say), beside one with its policy
    now = world.now - timedelta(minutes=3) if world.now.minute < 2 else world.now
    name = world.table("Unowned", 10, 9_000, tagged=False, forecast_minute=0)
    world.target(name, "write", 10, 20_000)
    world.target(name, "read", 10, 20_000)
    world.aas.delete_scaling_policy(
        PolicyName=f"{name}-None-write",
        ServiceNamespace="dynamodb",
        ResourceId=resource_id(name, None),
        ScalableDimension=scalable_dimension(None, "write"),
    )
    owned = json.dumps({name: {"write": 70, "read": 70}})
    # WHEN a tick runs
    _, events = world.tick(now, **AUTOPILOT, SCALER_TABLES=name, SCALER_OWNED_TARGETS=owned)
    # THEN the dimension is left as it is, logged and counted in the table's record (its
    # alarm, with own_target), and the other is owned as ever
    (said,) = [e for e in events if e.get("event") == "target-not-owned"]
    assert (said["table"], said["dimension"]) == (name, "write")
    (record,) = [e for e in events if e.get("TableName") == name and "Decisions" in e]
    assert record["TargetsNotOwned"] == 1


def test_a_failed_policy_write_is_a_counted_failure_of_its_table_alone(world: World) -> None:
    # GIVEN two tables whose write policies the autopilot owns, both with a plan at 90 %,
    # and Application Auto Scaling refusing to write the first table's policy
    now = world.now - timedelta(minutes=3) if world.now.minute < 2 else world.now
    start = int(now.timestamp() // 60)
    start -= start % 5
    names = [world.table(n, 10, 9_000, tagged=False, forecast_minute=0) for n in ("Fails", "Fine")]
    for name in names:
        world.target(name, "write", 10, 20_000)
        world.set_plan(name, "write", f"{start}:90:0:0:8000/8000")
    failing, fine = names

    def refuse(params: dict[str, Any], **_: Any) -> Any:
        if params.get("ResourceId") == resource_id(failing, None):
            raise world.aas.exceptions.ConcurrentUpdateException(
                {"Error": {"Code": "ConcurrentUpdateException", "Message": "busy"}},
                "PutScalingPolicy",
            )
        return None

    hook = "provide-client-params.application-auto-scaling.PutScalingPolicy"
    world.aas.meta.events.register(hook, refuse)
    owned = json.dumps({n: {"write": 70} for n in names})
    env = {**AUTOPILOT, "SCALER_TABLES": ",".join(names), "SCALER_OWNED_TARGETS": owned}
    try:
        summary, events = world.tick(now, **env)
    finally:
        world.aas.meta.events.unregister(hook, refuse)
    # THEN the failure is the first table's alone, counted, and the other table's policy
    # and both raises were still made
    (failure,) = summary["failures"]
    assert failure["table"] == failing
    assert failure["reason"].startswith("target value 70.0 -> 90: ConcurrentUpdateException")
    (record,) = [e for e in events if e.get("TableName") == failing and "Failures" in e]
    assert record["Failures"] == 1
    assert policy_target(world, failing, "write") == 70
    assert policy_target(world, fine, "write") == 90
    assert [e["table"] for e in events if e.get("event") == "target-value-failed"] == [failing]
    assert [world.target_min(n, "write") for n in names] == [8_000, 8_000]
