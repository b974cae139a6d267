"""A tick lowers a table on minutes without a datapoint (read as idle) only once the table's
delivery witness, its provisioned capacity that DynamoDB publishes every 5 minutes whatever
the traffic, shows CloudWatch still delivering its metrics: against a moto server, the
witness published (or withheld) with put_metric_data as DynamoDB would publish it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from ddb_capacity_runtime.core.delivery import WITNESS_MINUTES
from ddb_capacity_tools.local_aws import put_traffic, put_witness
from ddb_capacity_tools.simulator import ModelParams, policies
from ddb_capacity_tools.simulator.model import SimulatedTable
from ddb_capacity_tools.simulator.scenarios import START
from ddb_capacity_tools.simulator.trace import Trace
from tests.moto_world import LAG, World
from tests.test_faults import client_error, emf, fail_before


@pytest.fixture
def world(aws_client: Any) -> Iterator[World]:
    made = World(aws_client)
    yield made
    made.close()


def on_time(world: World) -> str:
    """A table busy at 30 of 200 reads, delivered up to 3 minutes ago, and the state
    store's reads: the batch shows its minutes delivered, and this table's decrease rests
    on none without a datapoint."""
    table = world.table("on-time", 200, 200)
    put_traffic(world.cw, table, "read", 30, end=world.now, minutes=range(3, 40))
    put_traffic(world.cw, table, "write", 30, end=world.now, minutes=range(3, 40))
    put_traffic(world.cw, world.store.name, "read", 0.5, end=world.now, minutes=range(3, 40))
    return table


def stalled(world: World, base: str = "stalled") -> str:
    """A table busy (120 of 200 reads and writes) until 25 minutes ago, of which CloudWatch
    has delivered nothing since: no consumption, and no provisioned capacity for the last
    30 minutes (its metric stream stopped). Every minute of the tick's window reads as
    idle."""
    table = world.table(base, 200, 200, witness=False)
    for dimension in ("read", "write"):
        put_traffic(world.cw, table, dimension, 120, end=world.now, minutes=range(25, 60))
    put_witness(world.cw, table, end=world.now - timedelta(minutes=30), units=(200, 200))
    return table


def decisions(lines: list[dict[str, Any]], event: str, table: str) -> list[dict[str, Any]]:
    return [e for e in lines if e.get("event") == event and e.get("table") == table]


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
    # AND it is a failure of that table, counted, naming the witness and the error
    (failure,) = summary["failures"]
    assert failure["table"] == idle and "delivery witness" in failure["reason"]
    assert code in failure["reason"]
    assert emf(lines, idle)["Failures"] == 1 and emf(lines, idle)["MetricsStalled"] == 2
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
