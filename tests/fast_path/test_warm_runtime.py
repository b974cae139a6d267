"""Warm throughput at run time: each dimension's ``WarmThroughput`` read from DescribeTable
as untrusted input (unknown unless it is a whole number within the table quota, in force),
raises within it reported (``within_warm``, ``RaisesWithinWarm``), and the surge cap and
budget reaching it, so a burst gets the level it needs in one step; the simulator's fast
path bounded by the same cap and budget. Against a moto server with a real boto3 client
(its DynamoDB keeps WarmThroughput on CreateTable and UpdateTable)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddb_capacity_runtime.aws import discovery
from ddb_capacity_runtime.core.bucket import Drain
from ddb_capacity_runtime.core.names import DEFAULT_TABLE_QUOTA
from ddb_capacity_runtime.core.settings import ScalerConfig
from ddb_capacity_runtime.core.surge import (
    Combined,
    budget_left,
    budget_window,
    cap_room,
    surge_room,
)
from ddb_capacity_runtime.core.tables import warm_of
from ddb_capacity_runtime.fast_path.surge_settings import SurgeSettings
from ddb_capacity_tools.simulator import ModelParams
from ddb_capacity_tools.simulator.fast_path_model import FastPath
from ddb_capacity_tools.simulator.model import SimulatedTable
from ddb_capacity_tools.simulator.scenarios import START
from ddb_capacity_tools.simulator.trace import Trace
from tests.support.broker import request, serve_table
from tests.support.fast_path_sim import WRITE, _surges
from tests.support.hypothesis_profiles import examples
from tests.support.moto_world import World
from tests.support.surge_server import a_table, counted, report, send, served, write
from tests.support.surge_server import prompt_store as prompt_store  # noqa: F401 (fixture)
from tests.support.surge_server import world as world  # noqa: F401 (fixture)


def _spec(**warm: object) -> dict[str, Any]:
    return {"WarmThroughput": warm}


# ------------------------------------------------------------------ the untrusted parse


def test_an_active_warm_throughput_is_read_per_dimension() -> None:
    spec = _spec(ReadUnitsPerSecond=12_000, WriteUnitsPerSecond=4_000, Status="ACTIVE")
    assert warm_of(spec, "read", DEFAULT_TABLE_QUOTA) == 12_000
    assert warm_of(spec, "write", DEFAULT_TABLE_QUOTA) == 4_000


@pytest.mark.parametrize(
    "spec",
    [
        {},  # missing
        {"WarmThroughput": None},
        {"WarmThroughput": "4000"},
        {"WarmThroughput": [4_000]},
        _spec(WriteUnitsPerSecond=4_000),  # no status
        _spec(WriteUnitsPerSecond=4_000, Status="UPDATING"),  # not in force yet
        _spec(WriteUnitsPerSecond=4_000, Status="active"),
        _spec(ReadUnitsPerSecond=4_000, Status="ACTIVE"),  # the other dimension only
        _spec(WriteUnitsPerSecond="4000", Status="ACTIVE"),
        _spec(WriteUnitsPerSecond=4_000.0, Status="ACTIVE"),
        _spec(WriteUnitsPerSecond=True, Status="ACTIVE"),
        _spec(WriteUnitsPerSecond=0, Status="ACTIVE"),
        _spec(WriteUnitsPerSecond=-5, Status="ACTIVE"),
        _spec(WriteUnitsPerSecond=DEFAULT_TABLE_QUOTA + 1, Status="ACTIVE"),  # absurd
        _spec(WriteUnitsPerSecond=10**40, Status="ACTIVE"),
        _spec(WriteUnitsPerSecond=None, Status="ACTIVE"),
    ],
)
def test_a_missing_malformed_or_absurd_warm_throughput_is_unknown(spec: dict[str, Any]) -> None:
    assert warm_of(spec, "write", DEFAULT_TABLE_QUOTA) is None


def test_the_table_quota_bounds_what_is_believed() -> None:
    spec = _spec(WriteUnitsPerSecond=60_000, Status="ACTIVE")
    assert warm_of(spec, "write", DEFAULT_TABLE_QUOTA) is None
    assert warm_of(spec, "write", 80_000) == 60_000


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=6,
)
_VALUES = st.integers(-(10**6), 10**6) | _JSON


@settings(max_examples=examples(300))
@given(
    warm=st.dictionaries(
        st.sampled_from(["ReadUnitsPerSecond", "WriteUnitsPerSecond", "Status"]),
        _VALUES | st.sampled_from(["ACTIVE", "UPDATING"]),
    )
    | _JSON,
    quota=st.integers(1, 1_000_000),
)
def test_whatever_describe_table_says_the_warm_throughput_is_a_unit_count_within_the_quota_or_unknown(
    warm: object, quota: int
) -> None:
    for dimension, field in (("read", "ReadUnitsPerSecond"), ("write", "WriteUnitsPerSecond")):
        got = warm_of({"WarmThroughput": warm}, dimension, quota)
        valid = (
            isinstance(warm, dict)
            and warm.get("Status") == "ACTIVE"
            and type(warm.get(field)) is int
            and 1 <= warm[field] <= quota
        )
        assert got == (warm[field] if valid else None)  # type: ignore[index]


# ------------------------------------------------------------------ the cap and the budget


@settings(max_examples=examples(300))
@given(
    start=st.integers(1, 40_000),
    since=st.none() | st.integers(1, 40_000),
    warm=st.integers(1, 40_000),
)
def test_a_known_warm_throughput_only_widens_the_default_cap_and_unknown_changes_nothing(
    start: int, since: int | None, warm: int
) -> None:
    plain = cap_room(start, since, None, 4.0)
    assert cap_room(start, since, None, 4.0, None) == plain  # unknown: exactly as before
    widened = cap_room(start, since, None, 4.0, warm)
    assert plain is not None and widened is not None
    assert widened >= plain  # never narrower
    assert start + widened <= max(start + plain, warm)  # never past the warm throughput
    assert cap_room(start, since, 250, 4.0, warm) == cap_room(start, since, 250, 4.0)


def test_the_default_cap_and_budget_reach_the_warm_throughput() -> None:
    # 100 units: the default cap allows 400; warm at 1,000, a surge may reach 1,000
    assert surge_room(100, None, 4.0) == 300
    assert surge_room(100, None, 4.0, 1_000) == 900
    assert surge_room(100, None, 4.0, 200) == 300  # below the cap: the cap
    window = budget_window(None, 0.0, 100)
    assert budget_left(window, None, None, 4.0) == 600
    assert budget_left(window, None, None, 4.0, 1_000) == 1_800
    assert budget_left(window, 500, None, 4.0, 1_000) == 500  # a set budget is kept
    assert SurgeSettings().room(100, None, 1_000) == 900
    assert SurgeSettings(cap=50).room(100, None, 1_000) == 50  # a set cap is kept


# ------------------------------------------------------------------ moto: reading it


def test_discovery_reads_the_warm_throughput_of_the_table_and_each_gsi(world: World) -> None:
    # GIVEN a provisioned table and GSI created warm, with a real boto3 client on moto
    name = world.name("WarmRead")
    ddb = world.clients.dynamodb
    ddb.create_table(
        TableName=name,
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "user", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        ProvisionedThroughput={"ReadCapacityUnits": 10, "WriteCapacityUnits": 20},
        WarmThroughput={"ReadUnitsPerSecond": 3_000, "WriteUnitsPerSecond": 2_000},
        GlobalSecondaryIndexes=[
            {
                "IndexName": "byUser",
                "KeySchema": [{"AttributeName": "user", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
                "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 6},
                "WarmThroughput": {"ReadUnitsPerSecond": 1_500, "WriteUnitsPerSecond": 700},
            }
        ],
    )
    config = ScalerConfig(tables=(name,))

    def warm() -> dict[tuple[str | None, str], int | None]:
        managed = discovery.describe_table(ddb, name, {}, config, {}, datetime.now(UTC))
        return {(d.index, d.dimension): d.warm for d in managed.dimensions}

    # WHEN the scaler describes it, THEN each dimension carries its own warm throughput
    assert warm() == {
        (None, "read"): 3_000,
        (None, "write"): 2_000,
        ("byUser", "read"): 1_500,
        ("byUser", "write"): 700,
    }
    # AND a pre-warm (UpdateTable WarmThroughput) is what the next read sees
    ddb.update_table(
        TableName=name, WarmThroughput={"ReadUnitsPerSecond": 3_000, "WriteUnitsPerSecond": 5_000}
    )
    assert warm()[(None, "write")] == 5_000


# ------------------------------------------------------------------ moto: one step


def _prewarm(world: World, name: str, write_units: int) -> None:
    world.clients.dynamodb.update_table(
        TableName=name,
        WarmThroughput={"ReadUnitsPerSecond": 50, "WriteUnitsPerSecond": write_units},
    )


@pytest.fixture
def garbled_warm(world: World) -> Iterator[None]:
    """DescribeTable answers with a malformed WarmThroughput (what moto cannot send):
    injected into the parsed response with botocore's events, as AWS could answer it."""

    def garble(parsed: dict[str, Any], **_: Any) -> None:
        table = parsed.get("Table")
        if table is not None:
            table["WarmThroughput"] = {"WriteUnitsPerSecond": "1000", "Status": "ACTIVE"}

    events = world.clients.dynamodb.meta.events
    events.register("after-call.dynamodb.DescribeTable", garble)
    yield
    events.unregister("after-call.dynamodb.DescribeTable", garble)


def test_a_burst_within_the_warm_throughput_is_raised_in_one_step(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a table at 100 write units (target 70 %), pre-warmed to 1,000
    name = a_table(world, "WarmStep", write_max=40_000)
    _prewarm(world, name, 1_000)
    # WHEN one report says the demand is 600 units/s
    (row,) = send(world, report(name, write(600)), served(name), SurgeSettings())["dimensions"]
    # THEN the surge goes to 600 / 0.7 = 858 at once, past the default cap's 400,
    # since the table's partitions already serve it
    assert (row["status"], row["to"], row["within_warm"]) == ("applied", 858, True)
    assert world.throughput(name)[1] == 858
    assert [c["within_warm"] for c in row["changes"]] == [True, True]
    out = capsys.readouterr().out
    assert counted(out, "RaisesWithinWarm") == 1
    assert counted(out, "SurgeUnits") == 758


def test_a_burst_beyond_the_warm_throughput_stops_at_it_or_at_the_cap(world: World) -> None:
    # GIVEN a table at 100 pre-warmed to 600; WHEN the demand needs 1,429
    name = a_table(world, "WarmPast", write_max=40_000)
    _prewarm(world, name, 600)
    (row,) = send(world, report(name, write(1_000)), served(name), SurgeSettings())["dimensions"]
    # THEN the surge reaches the warm throughput (above the cap's 400), and no further
    assert (row["to"], row["within_warm"]) == (600, True)


def test_an_unknown_warm_throughput_changes_nothing(world: World, garbled_warm: None) -> None:
    # GIVEN a table at 100 pre-warmed to 1,000, whose DescribeTable's WarmThroughput is
    # malformed (a string)
    name = a_table(world, "WarmGarbled", write_max=40_000)
    _prewarm(world, name, 1_000)
    # WHEN the same burst is reported
    (row,) = send(world, report(name, write(600)), served(name), SurgeSettings())["dimensions"]
    # THEN the default cap holds as it does without warm throughput: 4 x 100
    assert (row["status"], row["to"], row["within_warm"]) == ("applied", 400, False)
    assert world.throughput(name)[1] == 400


def test_the_tick_reports_a_raise_within_the_warm_throughput(world: World) -> None:
    # GIVEN a throttled table at 100 write units, pre-warmed to 1,000
    name = world.table("WarmTick", 100, 100)
    _prewarm(world, name, 1_000)
    world.traffic(name, "write", 100, minutes=range(1, 16))
    world.traffic(name, "write", 0, throttles=3000, minutes=range(1, 3))
    world.traffic(name, "read", 60)
    # WHEN a tick raises it
    _, lines = world.tick()
    # THEN its decision and its table's EMF record say the raise was within it
    (raised,) = [
        line
        for line in lines
        if line.get("event") == "decision"
        and line["table"] == name
        and line["action"] == "increase"
    ]
    assert (raised["to"], raised["within_warm"]) == (215, True)
    (emf,) = [line for line in lines if "_aws" in line and line.get("TableName") == name]
    assert emf["RaisesWithinWarm"] == 1
    assert "RaisesWithinWarm" in json.dumps(emf["_aws"])


def test_a_capacity_request_within_the_warm_throughput_says_so_and_is_counted(
    world: World,
    aws_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a brokered table at 100 write units (50 of traffic), pre-warmed to 1,000
    name = serve_table(world, monkeypatch, aws_env)
    _prewarm(world, name, 1_000)
    # WHEN a worker asks for 500 more: a level of 550, within the warm throughput
    answer = request(world, name, write=500)
    # THEN the answer's rows say the raise was within it, and the broker counts one
    assert answer["ok"] is True
    changes = answer["hold"]["changes"]
    assert [(c["to"], c["within_warm"]) for c in changes] == [(550, True), (550, True)]
    assert counted(capsys.readouterr().out, "RaisesWithinWarm") == 1
    # AND a request past it says it was not
    answer = request(world, name, write=1_500)
    assert [c["within_warm"] for c in answer["hold"]["changes"]] == [False, False]
    assert counted(capsys.readouterr().out, "RaisesWithinWarm") == 0


# ------------------------------------------------------------------ the simulator


def test_the_simulators_fast_path_applies_the_default_cap() -> None:
    # GIVEN writes at 1,000 that jump to 10,000, with no warm throughput beyond the
    # capacity the table has had (its warm-up's 1,429)
    demand = [1_000.0] * 30 + [10_000.0] * 20 + [1_000.0] * 30
    levels, _, sim = _surges(demand)
    # THEN the first surge stops at 4 x the level it started from, as the signals
    # function's default cap does (the burst would need 14,286)
    start = math.ceil(1_000 / 0.7)
    first = next(level for _, level in sorted(levels.items()) if level)
    assert first == 4 * start
    # AND it goes higher only once the scaler's tick has provisioned more (so the
    # dimension is warm to it): never past the highest level it has had
    assert max(levels.values()) <= sim.dims[WRITE].warm


def test_the_simulators_fast_path_reaches_a_warm_level_in_one_step() -> None:
    # GIVEN the same jump on a table pre-warmed to 20,000 write units
    demand = [1_000.0] * 30 + [10_000.0] * 20 + [1_000.0] * 30
    levels, _, _ = _surges(demand, warm_write_units=20_000)
    # THEN the first surge is the level the burst needs at the target, at once
    first = next(level for _, level in sorted(levels.items()) if level)
    assert first == math.ceil(10_000 / 0.7)
    # AND with the model before warm throughput (not known), the cap holds: the first
    # surge stops at 4 x the level it started from
    capped, _, sim = _surges(demand, warm_write_units=20_000, warm_update_seconds=None)
    raised = [(t, level) for t, level in sorted(capped.items()) if level]
    assert raised[0] == (30, 4 * math.ceil(1_000 / 0.7))
    # until CloudWatch shows the jump's first minute served (2 minutes late: at minute
    # 33), which no process can forge: the cap then counts from 4 x that served demand,
    # and the surge takes the level the burst needs
    served = sim.recorded[WRITE].served[30]
    assert served > 4 * math.ceil(1_000 / 0.7) / 4
    assert [level for t, level in raised if t < 33] == [4 * math.ceil(1_000 / 0.7)] * 3
    assert capped[33] == math.ceil(10_000 / 0.7) <= 4 * served


def test_the_simulators_fast_path_spends_the_default_budget() -> None:
    # GIVEN a simulated table at 1,000 write units, warm throughput not modelled
    trace = Trace("flat", START, {WRITE: [1_000.0] * 120})
    params = ModelParams(
        warmup_minutes=0, fast_path_seconds=20, warm_update_seconds=None
    ).validate()
    sim = SimulatedTable(trace, params, {WRITE: 1_000})
    fast = FastPath(params)
    lie = Combined(demand=40_000.0, processes=1)
    # (the bucket not known, and no demand DynamoDB measured: a lie's view)
    unseen = (Drain(None, None, 60), 0.0)
    # WHEN three surges start from 1,000 within an hour
    levels = [
        fast._level(sim, WRITE, lie, 0.7, (0, 1_000), (at, 1_000), unseen) for at in (0, 600, 1_200)
    ]
    # THEN the first two add 3,000 each (the cap) and the third finds the budget spent
    assert levels == [4_000, 4_000, None]
    # AND a new window, an hour on, allows a surge again
    assert fast._level(sim, WRITE, lie, 0.7, (0, 1_000), (3_600, 1_000), unseen) == 4_000
