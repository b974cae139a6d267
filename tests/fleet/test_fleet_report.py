"""The fleet report's content from advise's per-table documents: savings against the
current settings, unknown current settings (never zero savings), failed and missing
tables, and untrusted names escaped in HTML and defused in CSV."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, datetime
from functools import partial
from typing import Any

import pytest

from ddb_capacity_tools import fleet
from ddb_capacity_tools.advise import Advice, Setup, advise_trace
from ddb_capacity_tools.fleet import COLUMNS, ReportError, destination
from ddb_capacity_tools.fleet_current import Current
from ddb_capacity_tools.page import fleet_page
from ddb_capacity_tools.simulator import ModelParams
from ddb_capacity_tools.simulator.ensemble import settings_of
from ddb_capacity_tools.simulator.trace import Trace


def advised(
    table: str, picked: str, options: dict[str, tuple[float, float]], current: Any
) -> dict[str, Any]:
    """A document shaped as ``advise`` writes one, ``current`` as its ``current`` field."""
    return {
        "table": table,
        "index": None,
        "status": "advised",
        "recommended": picked,
        "reason": f"{picked} is the cheapest",
        "options": [
            {"policy": p, "usd_per_month": usd, "refused_per_month": refused}
            for p, (usd, refused) in options.items()
        ],
        "current": current,
    }


OPTIONS = {"stock:70": (120.0, 500.0), "autopilot:70": (80.0, 100.0), "on-demand": (300.0, 0.0)}


def sample() -> fleet.Report:
    docs = [
        advised(
            "Orders",
            "autopilot:70",
            OPTIONS,
            {"policy": "stock:70", "usd_per_month": 120.0, "refused_per_month": 500.0},
        ),
        advised(
            "<script>alert(1)</script>",
            "on-demand",
            OPTIONS,
            {"policy": "fixed:10", "usd_per_month": 200.0, "refused_per_month": 9000.0},
        ),
        advised(
            "Unknown",
            "autopilot:70",
            OPTIONS,
            {
                "policy": "unknown",
                "usd_per_month": None,
                "refused_per_month": None,
                "reason": "AccessDeniedException: <b>no</b>",
            },
        ),
        {"table": "=HYPERLINK(1)", "index": None, "status": "failed", "reason": "Throttled & <x>"},
        {"table": "Garbled", "status": "strange"},
    ]
    return fleet.build(docs, {"days": 1}, missing=["Late"])


def test_rows_say_savings_against_the_current_settings_and_unknown_is_not_zero() -> None:
    rows = {r.table: r for r in sample().rows}
    orders = rows["Orders"]
    assert (orders.current, orders.recommended) == ("stock:70", "autopilot:70")
    assert orders.usd_saved_per_month == pytest.approx(120.0 - 80.0)
    assert orders.refusals_avoided_per_month == pytest.approx(500.0 - 100.0)
    costly = rows["<script>alert(1)</script>"]
    assert costly.usd_saved_per_month == pytest.approx(200.0 - 300.0)  # costs more, refuses less
    assert costly.refusals_avoided_per_month == pytest.approx(9000.0)
    unknown = rows["Unknown"]
    assert unknown.current == "unknown" and unknown.usd_saved_per_month is None
    assert unknown.refusals_avoided_per_month is None
    assert "current settings unknown: AccessDeniedException" in unknown.reason
    assert rows["=HYPERLINK(1)"].status == "failed"
    assert rows["Garbled"].status == "failed" and "not advise's" in rows["Garbled"].reason
    assert rows["Late"].status == "missing"
    totals = sample().totals()
    assert totals == {
        "tables": 6,
        "advised": 3,
        "failed": 2,
        "missing": 1,
        "current_unknown": 1,
        "usd_per_month_current": 320.0,
        "usd_per_month_recommended": 380.0,
        "usd_saved_per_month": -60.0,
        "refusals_avoided_per_month": 9400.0,
    }


def test_csv_and_json_hold_every_row_with_unknown_left_empty() -> None:
    report = sample()
    parsed = list(csv.DictReader(io.StringIO(fleet.as_csv(report))))
    assert tuple(parsed[0]) == COLUMNS
    by = {r["table"]: r for r in parsed}
    assert by["Orders"]["usd_saved_per_month"] == "40.00"
    assert by["Unknown"]["usd_saved_per_month"] == "" and by["Unknown"]["current"] == "unknown"
    assert "'=HYPERLINK(1)" in by  # a formula is defused
    assert by["Late"]["status"] == "missing"
    doc = json.loads(fleet.as_json(report))
    assert doc["days"] == 1 and doc["totals"]["missing"] == 1
    [unknown] = [t for t in doc["tables"] if t["table"] == "Unknown"]
    assert unknown["usd_saved_per_month"] is None  # null, not 0


def test_html_escapes_every_name_and_reason_and_links_each_table_page() -> None:
    page = fleet_page(sample())
    body = page[: page.index('<script type="application/json"')]
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert "<b>no</b>" not in page and "Throttled &amp; &lt;x&gt;" in body
    rows = re.findall(r"<tr data-status=\"(\w+)\" data-saved=\"(-?[\d.]+)\">", body)
    assert len(rows) == 6  # every table, one row each
    assert [float(saved) for _, saved in rows][:2] == [40.0, 0.0]  # largest saving first
    # a table name links its page; a name that is not one, and a missing table, do not
    assert '<a href="tables/Orders.html">Orders</a>' in body
    assert '<a href="tables/Late.html">' not in body and 'href="tables/%3C' not in body
    assert "$40.00" in body and "-$100.00" in body


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("s3://Bad_Bucket/x", "--report: got 's3://Bad_Bucket/x'; expected s3://BUCKET/PREFIX"),
        ("s3://", "--report: got 's3://'; expected s3://BUCKET/PREFIX"),
        ("", "--report: got ''; expected a directory or s3://BUCKET/PREFIX"),
    ],
)
def test_a_bad_destination_is_named(given: str, message: str) -> None:
    with pytest.raises(ReportError) as caught:
        destination(given)
    assert message in str(caught.value)


def test_destinations() -> None:
    assert destination("s3://my-bucket/a/b/") == fleet.Destination("a/b", "my-bucket")
    assert destination("out/dir") == fleet.Destination("out/dir")


def test_current_settings_the_simulator_cannot_run_are_unknown_and_the_table_advised() -> None:
    """A table's advice stands when its current settings cannot be placed (here fixed
    capacity above the model's maximum); they are unknown, with the reason."""
    trace = Trace(
        "t",
        datetime(2026, 1, 1, tzinfo=UTC),
        {(None, "read"): [50.0] * 240, (None, "write"): [20.0] * 240},
    )
    setup = Setup(
        1,
        None,
        partial(settings_of, "plausible", ModelParams()),
        ModelParams(),
        ["on-demand"],
        workers=1,
        current=True,
    )
    too_big = Current({(None, "read"): "fixed:99999", (None, "write"): "fixed:10"})
    advice = advise_trace(trace, "Orders", None, setup, lambda keys: too_big)
    assert isinstance(advice, Advice) and advice.current_figures is None
    assert advice.current is not None and not advice.current.known
    assert advice.current.reason.startswith(  # the message, no class name (PolicyError)
        "fixed:99999 (read); fixed:10 (write): --policy 'fixed:99999': fixed capacity 99999 is "
        "outside 1 to 40000"
    )
    [row] = fleet.build([advice], {}).rows
    assert row.status == "advised" and row.current == "unknown" and row.usd_saved_per_month is None
    # and settings it can run: two groups placed apart and added
    mixed = Current({(None, "read"): "fixed:100", (None, "write"): "stock:70"})
    placed = advise_trace(trace, "Orders", None, setup, lambda keys: mixed)
    assert isinstance(placed, Advice) and placed.current_figures is not None
    assert placed.current_figures.policy == "fixed:100 (read); stock:70 (write)"
    assert placed.current_figures.cost > 0


@pytest.mark.parametrize(
    "figure",
    [1.7e308, -1.7e308, 1e16, 10**400, float("inf"), True, -0.01, -1e12],
    ids=["largest", "smallest", "1e16", "int-1e400", "inf", "bool", "below-zero", "-1e12"],
)
def test_a_figure_beyond_the_largest_fails_its_row_and_json_stays_json(figure: float) -> None:
    # GIVEN advise's documents, one of which carries an absurd figure for its current
    # settings beside a table with one for its recommended option
    docs = [
        advised(
            "Tampered",
            "on-demand",
            OPTIONS,
            {"policy": "fixed:1", "usd_per_month": figure, "refused_per_month": 0.0},
        ),
        advised("Other", "on-demand", {"on-demand": (-1.7e308, 0.0)}, None),
    ]
    # WHEN the report is built and written as JSON
    report = fleet.build(docs, {"days": 1})
    text = fleet.as_json(report)
    # THEN both rows fail with a reason naming the figure, and the JSON has no Infinity
    assert [r.status for r in report.rows] == ["failed", "failed"]
    assert all("usd_per_month" in r.reason for r in report.rows)
    assert "Infinity" not in text and json.loads(text)["totals"]["usd_saved_per_month"] == 0
    assert fleet.refused_figures(docs[0]) == (
        f"the result's usd_per_month is {figure!r:.40}; expected a number from 0 to 1e+15"
    )
