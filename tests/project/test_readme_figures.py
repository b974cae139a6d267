"""The figures the README and the scaler's guide state are measured here: the scaler
asset's zipped size, and the custom metrics a managed table's record makes in the default
mode (a real tick against moto) with what they cost, and those of the scaler's deployment."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from constructs_pkg.common._runtime import staged_asset
from ddb_capacity_tools.simulator.scaler_cost import (
    DEPLOYMENT_METRICS,
    TABLE_METRICS,
    monthly_fixed_cost,
)
from tests.support.assets import SCALER, zipped_size
from tests.support.moto_world import World
from tests.support.shape import ROOT

README = (ROOT / "README.md").read_text()
OVERVIEW = (ROOT / "docs" / "overview.md").read_text()
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
    measured = zipped_size(staged_asset(SCALER)) / 1_000
    assert abs(measured - int(kb)) <= 0.05 * measured, (kb, measured)


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
    (count,) = stated(r"\((\d+) custom metrics in a steady tick\)", README)
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
    (fixed,) = stated(r"\$([\d.]+) a month a scaler whatever the number of its tables", README)
    assert float(fixed) == pytest.approx(round(monthly_fixed_cost(), 2))
