"""The figures the overview, the design page and the scaler's guide state are measured
here: the scaler asset's zipped size and its parts, and the custom metrics a managed table's
record makes in the default mode (a real tick against moto) with what they cost, and those
of the scaler's deployment."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb

from constructs_pkg import Capacity, ProvisionedTable, ThrottleAwareScaler
from constructs_pkg.common._runtime import RUNTIME_PACKAGE, staged_asset
from constructs_pkg.requests._capacity_requests import DEFAULT_RESTORE_EVERY
from ddb_capacity_runtime.core.names import is_table_name
from ddb_capacity_runtime.core.settings import DEFAULT_TABLES_PER_BATCH, DEFAULT_TICK_MINUTES
from ddb_capacity_runtime.scaler.shard import MAX_TABLES, Batch
from ddb_capacity_tools.simulator.candidates import MONTH_MINUTES
from ddb_capacity_tools.simulator.prices import Prices
from ddb_capacity_tools.simulator.scaler_cost import (
    CHECKS_PER_ALARM,
    DEPLOYMENT_METRICS,
    TABLE_METRICS,
    monthly_fixed_cost,
)
from tests.support.alarm_style import summary_app
from tests.support.assets import SCALER, zipped_size
from tests.support.moto_world import World
from tests.support.shape import ROOT

OVERVIEW = (ROOT / "docs" / "overview.md").read_text()
DESIGN = (ROOT / "docs" / "index.md").read_text()
FLEET_GUIDE = (ROOT / "docs" / "guides" / "fleet-scale.md").read_text()
SCALER_GUIDE = (ROOT / "docs" / "guides" / "scaler.md").read_text()
METRIC_DOLLARS = 0.30
"""A custom metric a month for an account's first 10,000 (us-east-1), and beyond."""
METRIC_DOLLARS_BEYOND = 0.10
FIRST_TIER = 10_000


def stated(pattern: str, text: str) -> list[Any]:
    """Every match of ``pattern`` in ``text`` (its whitespace as single spaces), as
    re.findall gives them: a string each for one group, a tuple of strings for more."""
    found = re.findall(pattern, " ".join(text.split()))
    assert found, pattern
    return found


def test_the_scaler_asset_size_is_what_the_overview_says() -> None:
    (kb,) = stated(r"the scaler's is about (\d+) KB zipped", OVERVIEW)
    size = zipped_size(staged_asset(SCALER))
    assert close(kb, size), (kb, size)


def close(stated_kb: str, measured_bytes: int) -> bool:
    """A size the docs state in KB within 5 % of the one measured."""
    measured = measured_bytes / 1_000
    return abs(measured - float(stated_kb)) <= 0.05 * measured


def test_the_scaler_asset_and_its_parts_are_what_the_design_page_says() -> None:
    # GIVEN the design page's sizes: the asset, its source, its bytecode, the whole package
    ((asset, source, bytecode, package),) = stated(
        r"measures the scaler's asset at ([\d.]+) KB zipped \(its source ([\d.]+) KB zipped, "
        r"the tick's bytecode, ([\d.]+) KB unzipped, the rest; the whole package's source, "
        r"as every function would carry it otherwise, ([\d.]+) KB zipped\)",
        DESIGN,
    )
    # WHEN the asset is staged as the constructs stage it, and measured as the benchmark does
    staged = staged_asset(SCALER)
    measured = {
        "asset": (asset, zipped_size(staged)),
        "source": (source, zipped_size(staged, only_source=True)),
        "bytecode": (bytecode, sum(p.stat().st_size for p in staged.rglob("*.pyc"))),
        "package": (package, zipped_size(RUNTIME_PACKAGE, only_source=True)),
    }
    # THEN each is within 5 % of what the page says
    off = {k: v for k, v in measured.items() if not close(*v)}
    assert off == {}, off


def units(written: str) -> int:
    """A count as the docs write it, with thousands separators."""
    return int(written.replace(",", ""))


def test_the_overviews_costs_are_the_librarys_defaults_and_prices() -> None:
    # GIVEN the overview's costs section
    text = OVERVIEW[OVERVIEW.index("## Costs") : OVERVIEW.index("### What `cdk destroy`")]
    # THEN the unit prices are the simulator's (the settle step's hour at the mark is checked
    # in test_doc_call_figures)
    prices = Prices()
    ((wcu, rcu),) = stated(r"\(\$([\d.]+) per WCU-hour, \$([\d.]+) per RCU-hour", text)
    assert (float(wcu), float(rcu)) == (prices.wcu_hour, prices.rcu_hour)
    # AND the scaler's tick and the checks an alarm watches are the library's
    (tick,) = stated(r"one Lambda invocation per tick \((\d+) minutes\)", text)
    assert int(tick) == DEFAULT_TICK_MINUTES
    (checks,) = stated(r"a `Throttled` for every (\d+) checks of its tables", text)
    assert int(checks) == CHECKS_PER_ALARM
    # AND the capacity requests' runs are a month of the default restore interval, within 2 %
    ((every, runs),) = stated(r"at the default (\d+) minutes, about ([\d,]+) runs", text)
    minutes = DEFAULT_RESTORE_EVERY.to_minutes()
    assert int(every) == minutes
    expected = MONTH_MINUTES / minutes
    assert abs(units(runs) - expected) <= 0.02 * expected, (runs, expected)


STACK_RESOURCES = 500
"""CloudFormation's most resources a stack."""


def scaled_stack(tables: int, app: cdk.App) -> tuple[int, int]:
    """Resources and alarms of a stack of ``tables`` ProvisionedTables without GSIs under one
    scaler."""
    stack = cdk.Stack(app, "Shop")
    units = Capacity(min_capacity=5, max_capacity=100)
    key = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
    made = [
        ProvisionedTable(stack, f"T{i}", partition_key=key, read=units, write=units)
        for i in range(tables)
    ]
    ThrottleAwareScaler(stack, "Scaler", tables=made)
    resources = cdk.assertions.Template.from_stack(stack).to_json()["Resources"]
    alarms = [r for r in resources.values() if r["Type"] == "AWS::CloudWatch::Alarm"]
    return len(resources), len(alarms)


def test_the_scaler_guides_tables_a_stack_holds_are_measured() -> None:
    # GIVEN the guide's checks a table brings, the resources it is, and the tables a stack holds
    ((checks, per_alarm),) = stated(
        r"(\d+) checks for a table without GSIs, a `Throttled` alarm every (\d+) checks",
        SCALER_GUIDE,
    )
    ((each, fill),) = stated(
        r"under a scaler is about ([\d.]+) of them .*?, so about (\d+) such tables fill a stack",
        SCALER_GUIDE,
    )
    # WHEN one table and then 11 are under a scaler, in the default alarms and the detailed
    one, _ = scaled_stack(1, summary_app())
    many, _ = scaled_stack(11, summary_app())
    _, alarms_one = scaled_stack(1, cdk.App())
    _, alarms_two = scaled_stack(2, cdk.App())
    # THEN a table's checks are its detailed alarms, and an alarm holds as many as the guide says
    assert int(checks) == alarms_two - alarms_one
    assert int(per_alarm) == CHECKS_PER_ALARM
    # AND a table is as many resources as it says, and that many tables fill a stack, within 5 %
    per_table = (many - one) / 10
    assert abs(float(each) - per_table) <= 0.05 * per_table, (each, per_table)
    fits = 1 + (STACK_RESOURCES - one) / per_table
    assert abs(int(fill) - fits) <= 0.05 * fits, (fill, fits)


def test_the_fleet_scale_guides_message_sizes_are_measured() -> None:
    # GIVEN the guide's payload figures: a tick's list and a batch's message of names of a
    # length, and the largest message, of the longest names
    ((listed, length, batch, kb),) = stated(
        r"256 KiB state payload at about ([\d,]+) table names of (\d+) characters, .*? A batch "
        r"of (\d+) such names \(the default `tables_per_batch`\) is one SQS message of about "
        r"([\d.]+) KB",
        FLEET_GUIDE,
    )
    ((most, most_kb, longest),) = stated(
        r"a message is at most (\d+) table names \((\d+) KB at (\d+) characters a name", FLEET_GUIDE
    )
    assert (int(batch), int(most)) == (DEFAULT_TABLES_PER_BATCH, MAX_TABLES)
    longest_name = int(longest)
    assert is_table_name("0" * longest_name) and not is_table_name("0" * (longest_name + 1))

    def names(count: int, size: int) -> tuple[str, ...]:
        return tuple(f"{i:0{size}d}" for i in range(count))

    def message(count: int, size: int) -> int:
        tick = datetime(2026, 1, 1, tzinfo=UTC)
        made = Batch(
            tick,
            tick + timedelta(minutes=2),
            1,
            1,
            names(count, size),
            (40_000, 40_000),
            (0, 1_000),
        )
        return len(made.to_message().encode())

    # THEN the messages, as the scaler writes them, are the sizes the guide says, within 5 %
    assert close(kb, message(int(batch), int(length)))
    assert close(most_kb, message(MAX_TABLES, longest_name))
    # AND the tick's list, as JSON, fills Step Functions' 256 KiB at about as many names
    each = len(json.dumps(names(1000, int(length)), separators=(",", ":"))) / 1000
    fits = 256 * 1024 / each
    assert abs(units(listed) - fits) <= 0.05 * fits, (listed, fits)


@pytest.fixture
def world(aws_client: Any) -> Iterator[World]:
    made = World(aws_client)
    yield made
    made.close()


def monthly(metrics: int, tables: int) -> float:
    total = metrics * tables
    first = min(total, FIRST_TIER)
    return first * METRIC_DOLLARS + (total - first) * METRIC_DOLLARS_BEYOND


def test_a_steady_tables_record_sends_no_metric_as_the_docs_say(world: World) -> None:
    # GIVEN a steady table, nothing wrong with it, in the default mode
    name = world.table("steady", 100, 100)
    world.traffic(name, "read", 60)
    world.traffic(name, "write", 55)
    # WHEN a tick runs
    _, lines = world.tick()
    (record,) = [r for r in lines if "_aws" in r and r.get("TableName") == name]
    # THEN its record declares no metric, its counts (0) and levels are fields of the line
    assert record["_aws"]["CloudWatchMetrics"] == []
    assert record["Decisions"] == 0 and record["DecreasesLeft"] > 0 and "ForecastsOn" in record
    assert TABLE_METRICS == 0  # the scaler's running cost counts none
    (count,) = stated(r"\((\d+) custom metrics in a steady tick\)", OVERVIEW)
    assert int(count) == TABLE_METRICS
    assert "A steady table's record sends no custom metric" in " ".join(SCALER_GUIDE.split())


def test_a_busy_tables_counts_are_metrics_while_they_happen(world: World) -> None:
    # GIVEN a table throttled on its reads
    name = world.table("busy", 100, 20)
    world.traffic(name, "read", 100, throttles=600)
    # WHEN a tick runs
    _, lines = world.tick()
    (record,) = [r for r in lines if "_aws" in r and r.get("TableName") == name]
    # THEN the counts not 0 are its metrics, the levels never
    sent = {m["Name"] for g in record["_aws"]["CloudWatchMetrics"] for m in g["Metrics"]}
    assert {"Decisions", "ThrottleEventsSeen"} <= sent
    assert not sent & {"DecreasesLeft", "ForecastsOn", "Failures"}


def test_a_scalers_own_metrics_are_none_in_a_steady_tick(world: World) -> None:
    # GIVEN two steady tables, nothing wrong with them, in the default mode
    for name in (world.table("steady-a", 100, 100), world.table("steady-b", 100, 100)):
        world.traffic(name, "read", 60)
        world.traffic(name, "write", 55)
    # WHEN a tick runs
    _, lines = world.tick()
    # THEN the deployment (dimension StateStore) has no metric; the tick's line its counts
    deployment = {
        m["Name"]
        for r in lines
        if "_aws" in r
        for group in r["_aws"]["CloudWatchMetrics"]
        if group["Dimensions"] == [["StateStore"]]
        for m in group["Metrics"]
    }
    assert deployment == set() and DEPLOYMENT_METRICS == 0
    (tick,) = [r for r in lines if "_aws" in r and "TableName" not in r]
    assert tick["TablesManaged"] == 2
    (fixed,) = stated(r"\$([\d.]+) a month a scaler whatever the number of its tables", OVERVIEW)
    assert float(fixed) == pytest.approx(round(monthly_fixed_cost(), 2))
