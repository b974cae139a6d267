"""The figures the docs give for the autopilot's calls and a settle step's hour at the mark
are the code's: each is computed here from the constants and functions that make it, and
must appear in the page as written, so a change that moves one fails until the page says
the new figure."""

from __future__ import annotations

import pytest

from ddb_capacity_runtime.aws.metrics import HISTORY_QUERIES_PER_CALL
from ddb_capacity_runtime.core.floorplan import STEP_MINUTES
from ddb_capacity_runtime.core.forecast import HISTORY_DAYS, forecast_due, forecast_minute
from ddb_capacity_tools.simulator.prices import Prices
from tests.support.shape import ROOT

DAY = 24 * 60
MONTH_DAYS = 30
GET_METRIC_DATA_PER_1000 = 0.01
"""CloudWatch's list price for GetMetricData, dollars per 1,000 metrics requested."""


def said(page: str) -> str:
    """The page's text, its lines joined as one (figures may wrap)."""
    return " ".join((ROOT / page).read_text().split())


@pytest.mark.parametrize("tick", [1, 2, 5, 60])
def test_a_table_forecasts_once_an_hour_whatever_its_tick(tick: int) -> None:
    forecasts = sum(forecast_due("orders", minute % 60, tick) for minute in range(0, DAY, tick))
    assert forecasts == 24


def test_the_autopilots_call_figures_are_the_codes() -> None:
    page = said("docs/guides/autopilot.md")
    forecasts_a_day = sum(forecast_due("orders", m % 60, 2) for m in range(0, DAY, 2))
    month = forecasts_a_day * MONTH_DAYS
    assert month * GET_METRIC_DATA_PER_1000 / 1000 < 0.01
    slots = len({forecast_minute(f"table-{n}") for n in range(1000)})
    assert slots == 60 // STEP_MINUTES
    for text in (
        f"Per dimension and day: {forecasts_a_day} GetMetricData queries for the history "
        f"({HISTORY_QUERIES_PER_CALL} dimensions a call; under $0.01 a month per dimension",
        f"about {month} writes a dimension a month",
        f"{HISTORY_DAYS} days of history is {HISTORY_DAYS * DAY // STEP_MINUTES:,} datapoints "
        f"a dimension, {HISTORY_QUERIES_PER_CALL} dimensions a GetMetricData call; spread over "
        f"{slots} slots, 2,500 tables are about {round(2_500 / slots, -1):.0f} tables a slot",
    ):
        assert text in page


def test_the_overviews_hour_at_the_mark_is_the_price_list() -> None:
    prices = Prices()
    hour = 8_000 * prices.unit_hour("read") + 2_000 * prices.unit_hour("write")
    assert f"8,000 RCU + 2,000 WCU is ${hour:.2f}" in said("docs/overview.md")
