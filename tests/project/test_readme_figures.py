"""The figures the README and the scaler's guide state are measured here: the scaler
asset's zipped size, and the custom metrics a managed table's record makes in the default
mode (a real tick against moto) with what they cost, and those of the scaler's deployment."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from constructs_pkg.common._runtime import staged_asset
from ddb_capacity_tools.simulator.scaler_cost import DEPLOYMENT_METRICS, TABLE_METRICS
from tests.support.assets import SCALER, zipped_size
from tests.support.moto_world import World
from tests.support.shape import ROOT

README = (ROOT / "README.md").read_text()
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


def test_the_scaler_asset_size_is_what_the_readme_says() -> None:
    (kb,) = stated(r"the scaler's is about (\d+) KB zipped", README)
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


def test_a_tables_metrics_and_their_price_are_what_the_docs_say(world: World) -> None:
    # GIVEN a steady table, nothing wrong with it, in the default mode
    name = world.table("steady", 100, 100)
    world.traffic(name, "read", 60)
    world.traffic(name, "write", 55)
    # WHEN a tick runs
    _, lines = world.tick()
    (record,) = [r for r in lines if "_aws" in r and r.get("TableName") == name]
    metrics = {m["Name"] for m in record["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    # THEN the docs state that many metrics, and the dollars they cost
    n = len(metrics)
    assert n == TABLE_METRICS + 1  # the scaler's running cost counts them (and ForecastsOn)
    for text in (README, SCALER_GUIDE):
        (count,) = stated(r"(\d+) (?:CloudWatch )?custom metrics", text)
        assert int(count) == n, metrics
        per_table, fleet = stated(
            r"about \$([\d.]+) a table a month[;,] (?:and )?about "
            r"\$([\d,]+) a month at 2,500 tables",
            text,
        )[0]
        assert float(per_table) == pytest.approx(monthly(n, 1))
        assert float(fleet.replace(",", "")) == pytest.approx(monthly(n, 2_500))


def test_a_scalers_own_metrics_and_their_price_are_what_the_docs_say(world: World) -> None:
    # GIVEN two steady tables, nothing wrong with them, in the default mode
    for name in (world.table("steady-a", 100, 100), world.table("steady-b", 100, 100)):
        world.traffic(name, "read", 60)
        world.traffic(name, "write", 55)
    # WHEN a tick runs
    _, lines = world.tick()
    # THEN the metrics of the deployment (dimension StateStore), whatever the number of its
    # tables, are the ones the cost model and the docs count
    deployment = {
        m["Name"]
        for r in lines
        if "_aws" in r
        for group in r["_aws"]["CloudWatchMetrics"]
        if group["Dimensions"] == [["StateStore"]]
        for m in group["Metrics"]
    }
    assert deployment == {"CapacityAtMax", "Failures", "SharedFailures", "TablesManaged"}
    assert len(deployment) == DEPLOYMENT_METRICS
    (count, names, dollars) = stated(
        r"Once a scaler, whatever the number of its tables, (\d+) metrics of its deployment "
        r"\(dimension `StateStore`\) have data every tick: ([^:]+): \$([\d.]+) a month",
        SCALER_GUIDE,
    )[0]
    assert int(count) == len(deployment)
    assert set(re.findall(r"`(\w+)`", names)) == deployment
    assert float(dollars) == pytest.approx(monthly(len(deployment), 1))
    (readme_count, readme_dollars) = stated(
        r"(\d+) metrics of its own \(\$([\d.]+) a month a scaler", README
    )[0]
    assert (int(readme_count), float(readme_dollars)) == (len(deployment), float(dollars))
