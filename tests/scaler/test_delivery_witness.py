"""A tick lowers a table on minutes without a datapoint (read as idle) only once the table's
delivery witness, its provisioned capacity that DynamoDB publishes every 5 minutes whatever
the traffic, shows CloudWatch still delivering its metrics: against a moto server, the
witness published (or withheld) with put_metric_data as DynamoDB would publish it."""

from __future__ import annotations

import json
import math
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ddb_capacity_runtime.aws.metrics import fetch_witness
from ddb_capacity_runtime.core.delivery import (
    WITNESS_MINUTES,
    WITNESS_PERIOD_MINUTES,
    Verdict,
    decided_from,
    is_new,
    verdict,
)
from ddb_capacity_runtime.core.series import Key
from ddb_capacity_runtime.core.settings import ScalerConfig
from ddb_capacity_runtime.core.tables import began_of
from ddb_capacity_tools.local_aws import put_traffic, put_witness
from ddb_capacity_tools.simulator import ModelParams, policies
from ddb_capacity_tools.simulator.model import SimulatedTable
from ddb_capacity_tools.simulator.scenarios import START
from ddb_capacity_tools.simulator.trace import Trace
from tests.support.delivery_witness import decisions, newest_of, on_time, stalled
from tests.support.delivery_witness import world as world  # noqa: F401 (fixture)
from tests.support.faults import client_error, emf, fail_before
from tests.support.moto_world import LAG, World
from tests.support.replica_scaler import EU, US
from tests.support.replica_scaler import worlds as worlds  # noqa: F401 (fixture)


def test_a_stalled_table_is_not_lowered_and_a_witnessed_idle_one_beside_it_is(
    world: World,
) -> None:
    # GIVEN a table whose metrics stopped arriving 25 minutes ago: its minutes read as idle
    # beyond the arriving window, and its witness's newest datapoint is over 20 minutes old
    quiet = stalled(world)
    # AND an idle table beside it whose witness is delivered, and a busy one on time
    idle = world.table("idle", 200, 200)
    busy = on_time(world)
    # WHEN a tick runs
    summary, lines = world.tick(SCALER_MODE="reactive")
    # THEN the stalled table keeps its capacity: its idle minutes are unknown
    assert world.throughput(quiet) == (200, 200)
    # AND the idle one is lowered as before, its witness recent: one table's stale witness
    # holds no other table's decrease; the busy one is lowered on its own datapoints
    assert world.throughput(idle) == (5, 5)
    assert world.throughput(busy) == (43, 43)
    # AND the held decreases are counted for the stalled table alone, and logged
    assert emf(lines, quiet)["MetricsStalled"] == 2
    assert "MetricsStalled" not in emf(lines, idle)
    assert "MetricsStalled" not in emf(lines, busy)
    held = decisions(lines, "metrics-stalled", quiet)
    assert {(e["dimension"], e["from"], e["to"], e["status"]) for e in held} == {
        ("read", 200, 5, "held"),
        ("write", 200, 5, "held"),
    }
    assert all(
        e["witness"] < (world.now - timedelta(minutes=WITNESS_MINUTES)).isoformat() for e in held
    )
    assert {e["status"] for e in decisions(lines, "decision", quiet)} == {"held"}
    # AND it is not a failure: CloudWatch answered, it has nothing recent
    assert summary["failures"] == [] and summary["shared_failures"] == []


def test_a_witness_delivered_within_its_minutes_lowers_as_before(world: World) -> None:
    # GIVEN the stalled table of the test above, but for its witness: its newest datapoint
    # from 15 to 20 minutes old (the 5-minute period that ended 10 to 15 minutes ago:
    # CloudWatch slow with it, not stopped)
    quiet = world.table("late-witness", 200, 200, witness=False)
    for dimension in ("read", "write"):
        put_traffic(world.cw, quiet, dimension, 120, end=world.now, minutes=range(25, 60))
    put_witness(world.cw, quiet, end=world.now - timedelta(minutes=10), units=(200, 200))
    on_time(world)
    # WHEN a tick runs
    summary, lines = world.tick(SCALER_MODE="reactive")
    # THEN the table is lowered: its minutes without a datapoint are known idle
    assert world.throughput(quiet) == (5, 5)
    assert "MetricsStalled" not in emf(lines, quiet)
    assert summary["failures"] == []


def witness_queries(params: dict[str, Any]) -> bool:
    """GetMetricData calls that read the delivery witness (provisioned capacity)."""
    return all(
        q["MetricStat"]["Metric"]["MetricName"].startswith("Provisioned")
        for q in params["MetricDataQueries"]
    )


@pytest.mark.parametrize("code", ["ThrottlingException", "InternalServerError"])
def test_a_witness_that_cannot_be_read_holds_and_fails_the_tables_it_was_read_for(
    world: World, code: str
) -> None:
    # GIVEN an idle table whose witness CloudWatch has, and a busy one on time
    idle = world.table("idle", 200, 200)
    busy = on_time(world)
    # AND every call for the witness fails, after botocore's retries
    fail_before(world.cw, "GetMetricData", witness_queries, client_error(code, "x"))
    # WHEN a tick runs
    summary, lines = world.tick(SCALER_MODE="reactive")
    # THEN the idle table is not lowered: its minutes without a datapoint are unknown
    assert world.throughput(idle) == (200, 200)
    # AND it is a failure of that table, counted, naming the witness and the error; not a
    # stall (CloudWatch did not answer: nothing says the table's metrics stopped)
    (failure,) = summary["failures"]
    assert failure["table"] == idle and "delivery witness" in failure["reason"]
    assert code in failure["reason"]
    assert emf(lines, idle)["Failures"] == 1 and "MetricsStalled" not in emf(lines, idle)
    assert not decisions(lines, "metrics-stalled", idle)
    awaited = decisions(lines, "witness-awaited", idle)
    assert {(e["dimension"], e["verdict"]) for e in awaited} == {
        ("read", "unread"),
        ("write", "unread"),
    }
    # AND the busy table, whose decrease rests on its own datapoints, is lowered as usual
    assert world.throughput(busy) == (43, 43)
    assert emf(lines, busy)["Failures"] == 0
    # AND no other decision is stopped: it is no shared failure
    assert summary["shared_failures"] == []


def answer_partial_for(world: World, table: str) -> None:
    """CloudWatch answers ``table``'s witness queries ``PartialData``, the others as they
    are."""
    ids: dict[str, str] = {}

    def before(params: dict[str, Any], **_: Any) -> None:
        for q in params["MetricDataQueries"]:
            dims = q["MetricStat"]["Metric"]["Dimensions"]
            ids[q["Id"]] = next(d["Value"] for d in dims if d["Name"] == "TableName")

    def after(parsed: dict[str, Any], **_: Any) -> None:
        for result in parsed.get("MetricDataResults", []):
            if result["Id"].startswith("p") and ids.get(result["Id"]) == table:
                result["StatusCode"] = "PartialData"

    world.cw.meta.events.register("before-parameter-build.cloudwatch.GetMetricData", before)
    world.cw.meta.events.register("after-call.cloudwatch.GetMetricData", after)


def test_a_witness_answered_in_part_holds_its_table_alone(world: World) -> None:
    # GIVEN two idle tables whose witnesses are read in the same call, one answered in part
    partial = world.table("partial", 200, 200)
    idle = world.table("idle", 200, 200)
    on_time(world)
    answer_partial_for(world, partial)
    # WHEN a tick runs
    summary, lines = world.tick(SCALER_MODE="reactive")
    # THEN the table answered in part keeps its capacity, and fails
    assert world.throughput(partial) == (200, 200)
    (failure,) = summary["failures"]
    assert failure["table"] == partial and "not complete" in failure["reason"]
    # AND the other, in the same call, is lowered
    assert world.throughput(idle) == (5, 5)
    assert "MetricsStalled" not in emf(lines, idle)


def test_a_steady_fleet_reads_no_witness(world: World) -> None:
    # GIVEN tables with a datapoint in every minute (none of their decreases rests on a
    # minute read as idle), one of them lowered on them
    busy = on_time(world)
    for dimension in ("read", "write"):
        put_traffic(world.cw, busy, dimension, 30, end=world.now, minutes=range(LAG, 3))
    steady = world.table("steady", 100, 100)
    for dimension in ("read", "write"):
        put_traffic(world.cw, steady, dimension, 60, end=world.now, minutes=range(LAG, 40))
    asked: list[list[str]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        asked.append([q["MetricStat"]["Metric"]["MetricName"] for q in params["MetricDataQueries"]])

    world.cw.meta.events.register("provide-client-params.cloudwatch.GetMetricData", record)
    # WHEN a tick runs
    world.tick(SCALER_MODE="reactive")
    # THEN the busy table is lowered, and no call asked for a witness
    assert world.throughput(busy) == (43, 43)
    assert world.throughput(steady) == (100, 100)
    assert not [names for names in asked if any(n.startswith("Provisioned") for n in names)]


@pytest.mark.parametrize("stopped", [False, True])
def test_the_simulated_scaler_waits_for_the_witness_as_the_lambda_does(
    stopped: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a simulated table busy for half an hour, then idle for an hour
    demand = [1_000.0] * 30 + [0.0] * 60
    trace = Trace("busy-then-idle", START, {(None, "read"): demand, (None, "write"): demand})
    params = ModelParams().validate()
    policy = policies.ThrottleAware(2, 70, params)
    sim = SimulatedTable(trace, params, policy.initial(trace, params))
    # AND, when ``stopped``, CloudWatch delivering none of its provisioned capacity for 30
    # minutes at every tick (the model's own witness is on time)
    if stopped:
        monkeypatch.setattr(SimulatedTable, "witness_through", lambda self, t: self.time(t - 30))
    # WHEN the scaler ticks through it
    for t in range(-params.warmup_minutes, trace.minutes):
        sim.begin_minute(t)
        policy.act(sim, t)
        sim.end_minute(t)
    # THEN it lowers the idle table to its minimum only while the witness is delivered
    lowered = {key: d.provisioned for key, d in sim.dims.items()}
    high = round(1_000 / 0.7)
    expected = high if stopped else params.min_capacity
    assert lowered == {(None, "read"): expected, (None, "write"): expected}


def stopped_at(world: World, base: str, minutes: int) -> str:
    """A table busy (120 of 200 reads and writes) until ``minutes`` ago, of which
    CloudWatch has delivered nothing since, its provisioned capacity included: the newest
    witness period ended ``minutes`` ago at the latest, and is recent."""
    table = world.table(base, 200, 200, witness=False)
    for dimension in ("read", "write"):
        put_traffic(world.cw, table, dimension, 120, end=world.now, minutes=range(minutes, 60))
    put_witness(world.cw, table, end=world.now - timedelta(minutes=minutes), units=(200, 200))
    return table


def test_a_short_window_waits_for_a_witness_that_reaches_into_it(world: World) -> None:
    # GIVEN a table whose metrics (and witness) stopped 10 minutes ago: its newest witness
    # datapoint is 15 to 19 minutes old (within 20), but its period ended before the
    # minutes a 2-minute scale-down window decides on (those before the arriving 4)
    quiet = stopped_at(world, "stopped", 10)
    idle = world.table("idle", 200, 200)
    on_time(world)
    # WHEN a reactive tick runs with one tick of low consumption before a decrease
    summary, lines = world.tick(SCALER_MODE="reactive", SCALER_SCALE_DOWN_TICKS="1")
    # THEN the stopped table keeps its capacity: its window holds no delivered minute
    assert world.throughput(quiet) == (200, 200)
    # AND it is not counted as a stall (its witness is recent), but logged
    assert "MetricsStalled" not in emf(lines, quiet)
    awaited = decisions(lines, "witness-awaited", quiet)
    assert {(e["dimension"], e["verdict"], e["to"]) for e in awaited} == {
        ("read", "awaited", 5),
        ("write", "awaited", 5),
    }
    # AND an idle table whose witness is delivered is lowered beside it
    assert world.throughput(idle) == (5, 5)
    assert summary["failures"] == []


def test_the_minutes_a_decrease_is_decided_on_are_the_window_or_the_settle_span() -> None:
    now = START + timedelta(minutes=3, seconds=30)
    reactive = ScalerConfig.from_env(
        {"SCALER_TABLES": "t", "SCALER_MODE": "reactive", "SCALER_SCALE_DOWN_TICKS": "1"}
    )
    autopilot = ScalerConfig.from_env({"SCALER_TABLES": "t", "SCALER_MODE": "autopilot"})
    # the arriving minutes (4), then a 2-minute window; the autopilot's 30-minute settle span
    assert decided_from(now, reactive) == START + timedelta(minutes=3 - 4 - 2)
    assert decided_from(now, autopilot) == START + timedelta(minutes=3 - 4 - 30)
    since = decided_from(now, reactive)
    # a witness period ending within those minutes is delivered; one ending at their start
    # is awaited; one older than WITNESS_MINUTES is stalled, wherever it ends
    assert verdict(since - timedelta(minutes=4), now, since) is Verdict.DELIVERED
    assert verdict(since - timedelta(minutes=5), now, since) is Verdict.AWAITED
    old = now - timedelta(minutes=WITNESS_MINUTES + 1)
    assert verdict(old, now, old) is Verdict.STALLED


def test_a_new_table_without_a_witness_yet_is_held_and_not_taken_for_a_stall(
    world: World,
) -> None:
    # GIVEN a table just created, idle, of which DynamoDB has published no provisioned
    # capacity yet (as it may not, for a while, for a new table)
    new = world.table("new", 200, 200, witness=False)
    on_time(world)
    # WHEN a tick runs
    summary, lines = world.tick(SCALER_MODE="reactive")
    # THEN it keeps its capacity, and is not counted as a stall: an info event says why
    assert world.throughput(new) == (200, 200)
    assert "MetricsStalled" not in emf(lines, new)
    assert not decisions(lines, "metrics-stalled", new)
    awaited = decisions(lines, "witness-awaited", new)
    assert {(e["dimension"], e["verdict"], e["witness"]) for e in awaited} == {
        ("read", "new", None),
        ("write", "new", None),
    }
    assert summary["failures"] == []
    # WHEN a tick runs two hours later, the table still without a witness in the hour
    later = world.now + timedelta(hours=2)
    put_traffic(world.cw, world.store.name, "read", 0.5, end=later, minutes=range(3, 40))
    summary, lines = world.tick(later, SCALER_MODE="reactive")
    # THEN it is held, and now counted: it is no longer new
    assert world.throughput(new) == (200, 200)
    assert emf(lines, new)["MetricsStalled"] == 2
    assert {e["dimension"] for e in decisions(lines, "metrics-stalled", new)} == {"read", "write"}


def test_a_table_begins_at_its_creation_or_its_last_switch_from_on_demand() -> None:
    created = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
    switched = created + timedelta(days=3)
    billing = {"BillingMode": "PROVISIONED", "LastUpdateToPayPerRequestDateTime": switched}
    assert began_of({"CreationDateTime": created}) == created
    assert began_of({"CreationDateTime": created, "BillingModeSummary": billing}) == switched
    # untrusted: what is not a timestamp is not taken
    assert began_of({"CreationDateTime": "yesterday", "BillingModeSummary": "x"}) is None
    # new within the hour after it began; one ahead of now by more than a period is not
    assert is_new(switched, switched + timedelta(minutes=59))
    assert not is_new(switched, switched + timedelta(minutes=60))
    assert not is_new(switched, switched - timedelta(minutes=6))
    assert not is_new(None, switched)


def replica_idle_here(worlds: dict[str, World], eu_witness: bool) -> tuple[str, str]:
    """Two global tables, each a replica in each Region, 200 reads and writes, no scalable
    target. The first idle in us-east-1, its witness delivered there; in eu-west-1 busy
    writing (120 a second) until 25 minutes ago and nothing delivered since, with its
    witness stopped 30 minutes ago unless ``eu_witness`` (then delivered on time). The
    second busy in both Regions, delivered up to the newest minute: eu-west-1's CloudWatch
    delivers, so the first's minutes without a datapoint there read as idle."""
    us, eu = worlds[US], worlds[EU]
    name, busy = us.table("orders", 200, 200, tagged=False), us.table("busy", 200, 200)
    assert eu.table("orders", 200, 200, tagged=False, witness=eu_witness) == name
    assert eu.table("busy", 200, 200) == busy
    put_traffic(us.cw, us.store.name, "read", 0.5, end=us.now, minutes=range(3, 40))
    put_traffic(eu.cw, name, "write", 120, end=eu.now, minutes=range(25, 60))
    if not eu_witness:
        put_witness(eu.cw, name, end=eu.now - timedelta(minutes=30), units=(200, 200))
    for region in (us, eu):
        for dimension in ("read", "write"):
            put_traffic(region.cw, busy, dimension, 120, end=region.now, minutes=range(LAG, 60))
    return name, busy


def replica_tick(
    worlds: dict[str, World], tables: tuple[str, str]
) -> tuple[dict[str, Any], list[Any]]:
    """us-east-1's reactive tick of the replicas, told of eu-west-1's."""
    return worlds[US].tick(
        SCALER_MODE="reactive",
        SCALER_TABLES=",".join(tables),
        SCALER_TAG_KEY="",
        SCALER_REPLICAS=json.dumps({t: {"regions": [EU]} for t in tables}),
    )


def test_a_replicas_writes_wait_for_the_witness_of_every_region(
    worlds: dict[str, World],
) -> None:
    # GIVEN a global table idle here, whose eu-west-1 replica's metrics stopped arriving
    # 25 minutes ago: its minutes read as idle there, and are merged into the writes here
    tables = replica_idle_here(worlds, eu_witness=False)
    name = tables[0]
    asked: list[int] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        if witness_queries(params):
            asked.append(len(params["MetricDataQueries"]))

    worlds[EU].cw.meta.events.register("provide-client-params.cloudwatch.GetMetricData", record)
    # WHEN us-east-1's scaler ticks
    summary, lines = replica_tick(worlds, tables)
    # THEN its writes are not lowered on eu-west-1's unknown minutes; its own reads are
    assert worlds[US].throughput(name) == (5, 200)
    # AND the held write is counted as a stall of eu-west-1's metrics, and logged
    assert emf(lines, name)["MetricsStalled"] == 1
    (held,) = decisions(lines, "metrics-stalled", name)
    assert (held["dimension"], held["region"], held["from"], held["to"]) == (
        "write",
        EU,
        200,
        5,
    )
    assert summary["failures"] == []
    # AND eu-west-1's witness was read once, for the write alone
    assert asked == [1]


def test_a_replica_regions_witness_not_read_holds_the_writes_and_fails_the_table(
    worlds: dict[str, World],
) -> None:
    # GIVEN the global table idle here and its eu-west-1 replica's witness delivered, but
    # every read of it in eu-west-1 failing
    tables = replica_idle_here(worlds, eu_witness=True)
    name = tables[0]
    fail_before(
        worlds[EU].cw,
        "GetMetricData",
        witness_queries,
        client_error("InternalServerError", "GetMetricData"),
    )
    # WHEN us-east-1's scaler ticks
    summary, lines = replica_tick(worlds, tables)
    # THEN its writes are held, its reads lowered; the table fails, naming the Region
    assert worlds[US].throughput(name) == (5, 200)
    (failure,) = summary["failures"]
    assert failure["table"] == name
    assert "replica eu-west-1 table write" in failure["reason"]
    assert "delivery witness" in failure["reason"]
    # AND it is the table's failure alone, not a stall
    assert emf(lines, name)["Failures"] == 1 and "MetricsStalled" not in emf(lines, name)
    (awaited,) = decisions(lines, "witness-awaited", name)
    assert (awaited["dimension"], awaited["region"], awaited["verdict"]) == (
        "write",
        EU,
        "unread",
    )


# ------------------------------------------------------------------ reading the witness


def test_a_gsis_witness_is_its_own_not_its_tables(aws_client: Any) -> None:
    # GIVEN a table whose provisioned capacity stopped 40 minutes ago, and its GSI's on time
    cw, now = aws_client("cloudwatch"), datetime.now(UTC).replace(second=0, microsecond=0)
    table = f"witnessed-{uuid.uuid4().hex[:8]}"
    put_witness(cw, table, end=now - timedelta(minutes=40))
    put_witness(cw, table, end=now, index="byUser")
    # WHEN the witness of each is read
    errors: dict[Key, str] = {}
    keys: list[Key] = [(table, None, "read"), (table, "byUser", "read")]
    read = fetch_witness(cw, keys, now, errors=errors)
    # THEN each is its own
    assert errors == {}
    assert read == {
        keys[0]: newest_of(now - timedelta(minutes=40)),
        keys[1]: newest_of(now),
    }


@pytest.mark.parametrize("answer", ["nan", "twice", "ahead"])
def test_an_untrusted_newest_datapoint_is_no_witness(aws_client: Any, answer: str) -> None:
    # GIVEN a table's witness on time, whose newest datapoint CloudWatch answers NaN, or
    # twice, or whose answer holds one after the minutes asked for
    cw, now = aws_client("cloudwatch"), datetime.now(UTC).replace(second=0, microsecond=0)
    table = f"untrusted-{uuid.uuid4().hex[:8]}"
    put_witness(cw, table, end=now)
    newest = newest_of(now)

    def after(parsed: dict[str, Any], **_: Any) -> None:
        for result in parsed.get("MetricDataResults", []):
            stamps, values = result["Timestamps"], result["Values"]
            assert max(stamps) == newest
            if answer == "nan":
                values[stamps.index(newest)] = math.nan
            elif answer == "twice":
                stamps.append(newest)
                values.append(values[stamps.index(newest)])
            else:
                stamps.append(now + timedelta(minutes=5))
                values.append(1.0)

    cw.meta.events.register("after-call.cloudwatch.GetMetricData", after)
    # WHEN its witness is read
    errors: dict[Key, str] = {}
    key: Key = (table, None, "read")
    read = fetch_witness(cw, [key], now, errors=errors)
    # THEN the datapoint is not taken for the newest: the one before is (or, ahead, the
    # newest asked for)
    assert errors == {}
    before = newest if answer == "ahead" else newest - timedelta(minutes=WITNESS_PERIOD_MINUTES)
    assert read == {key: before}


@pytest.mark.parametrize(("metric_delay", "witness_delay"), [(2, 7), (9, 9)])
def test_the_models_witness_comes_no_sooner_than_7_minutes_after_its_period(
    metric_delay: int, witness_delay: int
) -> None:
    # GIVEN the model, its per-minute metrics delivered ``metric_delay`` minutes late
    trace = Trace("idle", START, {(None, "read"): [0.0] * 60, (None, "write"): [0.0] * 60})
    params = ModelParams(metric_delay_minutes=metric_delay).validate()
    sim = SimulatedTable(trace, params, {(None, "read"): 100, (None, "write"): 100})
    # WHEN its witness is read at each minute of an hour
    newest = {t: sim.witness_through(t) for t in range(60)}
    # THEN its newest datapoint's period ended 7 minutes before at the earliest (the
    # latest reported for the metric), or the per-minute metrics' delay when later
    for t, stamp in newest.items():
        ended = stamp + timedelta(minutes=WITNESS_PERIOD_MINUTES)
        assert sim.time(t) - ended >= timedelta(minutes=witness_delay)
        assert sim.time(t) - ended < timedelta(minutes=witness_delay + WITNESS_PERIOD_MINUTES)
