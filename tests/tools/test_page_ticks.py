"""The axes of the report pages in a real browser (headless Chromium). The time axis's
ticks fall on round times (a step of 1, 2, 5, 10, 15 or 30 minutes, 1, 2, 3, 6 or 12
hours, 1 or 2 days, 1, 2 or 4 weeks; each a multiple of its step in UTC), about 4 to 8 of
them, over the whole trace and over every window a drag zooms to. Each series panel's
value axis ticks round values (1, 2, 2.5 or 5 times a power of ten) from 0, at least 4 of
them, the top one at or above the panel's peak."""

from __future__ import annotations

import html
import io
import json
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ddb_capacity_tools import cli
from ddb_capacity_tools.page.document import document
from ddb_capacity_tools.page.timeline import SPLIT_AFTER, demand_section
from ddb_capacity_tools.simulator.trace import Key, Trace
from tests.support import browser
from tests.support.hypothesis_profiles import examples
from tests.support.report_page import data_of

STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 2880, 10080, 20160, 40320]
"""The round steps of the time axis, in minutes."""
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MONDAY = 4 * 1440
"""1970-01-05, the first Monday: weeks are counted from it."""

#: Appended to a copy of a page: records the time ticks of one chart's first panel with a
#: time axis as drawn, then zooms to each window (fractions of the plot's width, dragged
#: across the panel as a person would) and records them again with the window shown.
DRIVE = r"""<script>
(function () {
  var chart = document.querySelector('[data-chart="%(chart)s"]'), out = [];
  function record() {
    var times = function (s) {
      return Array.prototype.filter.call(s.querySelectorAll("text.tick"), function (t) {
        return /\d\d:\d\d$/.test(t.textContent);
      });
    };
    var svg = Array.prototype.filter.call(chart.querySelectorAll("svg.panel"),
      function (s) { return times(s).length; })[0];
    out.push({
      status: chart.querySelector(".zoom-status").textContent,
      ticks: times(svg).map(function (t) { return t.textContent; }),
      marks: Array.prototype.map.call(svg.querySelectorAll("line.split"), function (l) {
        return Number(l.getAttribute("data-minute"));
      })
    });
    return svg;
  }
  function drag(svg, a, b) {
    var r = svg.getBoundingClientRect();
    var at = function (f) { return r.left + (150 + f * 838) / 1000 * r.width; };
    svg.dispatchEvent(new MouseEvent("mousedown", {clientX: at(a), bubbles: true}));
    svg.dispatchEvent(new MouseEvent("mousemove", {clientX: at(b), bubbles: true}));
    svg.dispatchEvent(new MouseEvent("mouseup", {clientX: at(b), bubbles: true}));
  }
  var svg = record();
  %(windows)s.forEach(function (w) {
    chart.querySelector(".zoom-reset").click();
    drag(chart.querySelector("svg.panel"), w[0], w[1]);
    record();
  });
  document.body.setAttribute("data-time-ticks", JSON.stringify(out));
}());
</script></body>"""


def probed(page: str, script: str, attribute: str, tmp: Path) -> Any:
    """The JSON ``script`` leaves in the body's ``attribute`` once the browser has drawn
    ``page`` with it (the page rendered without a console message)."""
    out = tmp / "probed.html"
    out.write_text(page.replace("</body>", script, 1), encoding="utf-8")
    loaded = browser.load(out, tmp)
    assert loaded.console == [] and 'data-rendered="ok"' in loaded.dom
    found = re.search(rf'{attribute}="([^"]*)"', loaded.dom)
    assert found is not None
    return json.loads(html.unescape(found.group(1)))


def drawn(page: str, chart: str, windows: list[tuple[float, float]], tmp: Path) -> list[Any]:
    """What the browser drew: per view (the whole trace, then each zoomed window), the
    zoom status and the time ticks' text of the chart's first time axis."""
    script = DRIVE % {"chart": chart, "windows": json.dumps(windows)}
    views: list[Any] = probed(page, script, "data-time-ticks", tmp)
    assert len(views) == len(windows) + 1
    return views


def window(view: dict[str, Any], minutes: int) -> tuple[int, int]:
    """The window a view shows, from its zoom status."""
    if view["status"].startswith("all "):
        return 0, minutes
    found = re.fullmatch(r"minutes (\d+) to (\d+) of \d+", view["status"])
    assert found is not None, view["status"]
    return int(found.group(1)), int(found.group(2))


def shortest_step(since: int, lo: int, hi: int) -> int:
    """The shortest step of `STEPS` with at most 8 of its multiples (minutes since the
    epoch; a week's from a Monday) from ``since + lo`` to ``since + hi``."""
    for step in STEPS:
        phase = MONDAY if step % 10080 == 0 else 0
        first = -((phase - since - lo) // step)  # the ceiling
        if (since + hi - phase) // step - first + 1 <= 8:
            return step
    raise AssertionError("no step of STEPS fits")


def assert_round(view: dict[str, Any], trace: Trace) -> int:
    """The view's ticks: at the shortest round step of `STEPS` giving at most 8, each a
    multiple of it in UTC, 4 to 8 of them covering the window, each label the time at its
    minute; the step."""
    lo, hi = window(view, trace.minutes)
    minutes = [minute_of(t, trace) for t in view["ticks"]]
    assert 4 <= len(minutes) <= 8, view
    steps = {b - a for a, b in zip(minutes, minutes[1:], strict=False)}
    assert len(steps) == 1, view
    [step] = steps
    since = int((trace.start - EPOCH).total_seconds() // 60)
    assert step == shortest_step(since, lo, hi), view
    phase = MONDAY if step % 10080 == 0 else 0
    assert all((since + m - phase) % step == 0 for m in minutes), view
    assert lo <= minutes[0] < lo + step and hi - step < minutes[-1] <= hi, view
    return int(step)


def minute_of(tick: str, trace: Trace) -> int:
    """The trace minute a tick's text names: ``HH:MM`` on a trace within a day (from its
    start on), ``MM-DD HH:MM`` on a longer one (in its start's year)."""
    if trace.minutes > 1440:
        when = datetime.strptime(f"{trace.start.year}-{tick}", "%Y-%m-%d %H:%M")
    else:
        when = datetime.strptime(f"{trace.start:%Y-%m-%d} {tick}", "%Y-%m-%d %H:%M")
        if when.replace(tzinfo=UTC) < trace.start:
            when += timedelta(days=1)
    return int((when.replace(tzinfo=UTC) - trace.start).total_seconds() // 60)


def test_the_spikes_time_axis_falls_on_round_times_whole_and_zoomed(tmp_path: Path) -> None:
    """The spike (2026-01-05 12:00 to 15:00): every 30 minutes, not at fifths of the window
    (12:36, 13:12...); zoomed, at a shorter round step."""
    out = tmp_path / "spike.html"
    argv = ["simulate", "--scenario", "spike", "--policy", "stock:70", "--quiet"]
    assert cli.main([*argv, "--html", str(out)], io.StringIO(), io.StringIO()) == 0
    from ddb_capacity_tools.simulator.scenarios import scenario

    trace = scenario("spike", 1)
    windows = [(0.1, 0.4), (0.33, 0.37), (0.05, 0.95), (0.71, 0.99)]
    views = drawn(out.read_text(), "series-1", windows, tmp_path)
    whole = views[0]["ticks"]
    assert whole == ["12:00", "12:30", "13:00", "13:30", "14:00", "14:30", "15:00"]
    assert [assert_round(v, trace) for v in views[:1]] == [30]
    assert all(assert_round(v, trace) < 30 for v in views[1:3])  # zoomed in: shorter
    assert all(v["status"].startswith("minutes ") for v in views[1:])


def three_days() -> Trace:
    start = datetime(2026, 11, 20, tzinfo=UTC)
    reads = [2_000.0 + (m % 1440) for m in range(4_320)]
    return Trace("three-days", start, {(None, "read"): reads, (None, "write"): reads[::-1]})


def test_a_three_day_traces_time_axis_is_every_12_hours_and_zooms_to_round_times(
    tmp_path: Path,
) -> None:
    """Three days: 11-20 00:00, 11-20 12:00, 11-21 00:00... (not 11-20 14:24, 11-21
    04:48); the line where tune split the history moves with the zoom."""
    trace = three_days()
    body, charts = demand_section(trace, 2_160)
    page = document("three days", body, {"charts": charts})
    assert SPLIT_AFTER in json.dumps(charts)
    windows = [(0.2, 0.3), (0.0, 0.55), (0.49, 0.52), (0.9, 1.0)]
    views = drawn(page, "demand-0", windows, tmp_path)
    whole = views[0]["ticks"]
    assert whole == [
        "11-20 00:00",
        "11-20 12:00",
        "11-21 00:00",
        "11-21 12:00",
        "11-22 00:00",
        "11-22 12:00",
        "11-23 00:00",
    ]
    assert [assert_round(v, trace) for v in views][:3] == [720, 60, 360]
    assert all(assert_round(v, trace) < 60 for v in views[3:4])
    assert all(v["status"].startswith("minutes ") for v in views[1:])
    assert [v["marks"] for v in views] == [[2_160], [], [2_160], [2_160], []]


def test_a_fortnights_time_axis_steps_by_whole_days(tmp_path: Path) -> None:
    """Fifteen days from a Wednesday noon: every 2 days at 00:00 UTC."""
    start = datetime(2026, 11, 4, 12, tzinfo=UTC)
    minutes = 15 * 1440
    trace = Trace("fortnight", start, {(None, "read"): [10.0] * minutes})
    body, charts = demand_section(trace)
    views = drawn(document("fortnight", body, {"charts": charts}), "demand-0", [], tmp_path)
    assert assert_round(views[0], trace) == 2880
    assert views[0]["ticks"][0] == "11-05 00:00"


#: Appended to a copy of a page: records, for every panel of every time series chart (not
#: the frontier), the values of its value axis's ticks as drawn (none on a strip of
#: throttled minutes).
LEVELS = r"""<script>
(function () {
  var out = {};
  document.querySelectorAll("[data-chart]").forEach(function (chart) {
    if (chart.querySelector("svg.frontier")) { return; }
    out[chart.getAttribute("data-chart")] = Array.prototype.map.call(
      chart.querySelectorAll("svg.panel"), function (svg) {
        return Array.prototype.map.call(svg.querySelectorAll("text.axis-y"), function (t) {
          return t.getAttribute("data-value");
        });
      });
  });
  document.body.setAttribute("data-levels", JSON.stringify(out));
}());
</script></body>"""

ROUND_DIGITS = {(1,), (2,), (2, 5), (5,)}
"""A round step's significant digits: 1, 2, 2.5 or 5 times a power of ten."""


def drawn_levels(page: str, tmp: Path) -> dict[str, list[list[Decimal]]]:
    """Per chart, per panel, the value axis's ticks the browser drew (exactly, from each
    tick's data-value)."""
    charts: dict[str, list[list[str]]] = probed(page, LEVELS, "data-levels", tmp)
    return {chart: [[Decimal(v) for v in panel] for panel in p] for chart, p in charts.items()}


def peaks(chart: dict[str, Any]) -> list[float]:
    """Each series panel's highest value over the whole chart, as the page's data has it."""
    out = []
    for panel in chart["panels"]:
        if panel.get("strip"):
            continue
        values = [0.0]
        for s in panel["series"]:
            values += chart["shared"][s["shared"]] if "shared" in s else []
            values += [v for _, v in s.get("steps", []) + s.get("sparse", [])]
        out.append(max(values))
    return out


def assert_round_levels(ticks: list[Decimal], peak: float) -> None:
    """A value axis's ticks: from 0, 4 or 5 of them at one round step, the top one the
    first at or above ``peak``."""
    assert 4 <= len(ticks) <= 5, (ticks, peak)
    step = ticks[1] - ticks[0]
    assert ticks[0] == 0 and step > 0, (ticks, peak)
    assert ticks == [step * k for k in range(len(ticks))], (ticks, peak)
    assert step.normalize().as_tuple().digits in ROUND_DIGITS, (ticks, peak)
    assert ticks[-1] >= Decimal(repr(peak)), (ticks, peak)
    assert peak == 0 or ticks[-2] < Decimal(repr(peak)), (ticks, peak)


ROUND_PEAKS = st.builds(
    lambda m, e: round(m * 10.0**e, 2),
    st.sampled_from([1, 1.5, 2, 2.5, 3, 4, 5, 7.5, 9]),
    st.integers(-2, 7),
)
"""Peaks at a round value, where a tick may fall exactly on the peak."""


@settings(max_examples=examples(6))
@given(st.lists(st.floats(0, 1e8).map(lambda v: round(v, 2)) | ROUND_PEAKS, max_size=24))
@example([36_000.0, 40_000.0, 1_500.0, 1_512.34, 0.0, 0.01, 1.0, 99.99, 1e7, 2.5e-2])
def test_every_series_panels_value_axis_ticks_round_to_its_peak(
    tmp_path_factory: pytest.TempPathFactory, tops: list[float]
) -> None:
    """Each panel's value axis (a panel per dimension here, each peaking at one of
    ``tops``): at least 4 ticks at 1, 2, 2.5 or 5 times a power of ten, the top one at or
    above the peak (a 36,000 peak: 0, 10k ... 40k, not 0, 20k; 1,500: 0, 500, 1k, 1.5k)."""
    tmp = tmp_path_factory.mktemp("levels")
    start = datetime(2026, 1, 5, tzinfo=UTC)
    shape = [0.0, 0.25, 1.0, 0.5, 0.75, 0.0]
    demand: dict[Key, list[float]] = {(None, "read"): [0.0] * len(shape)} if not tops else {}
    demand.update(((f"gsi{n}", "read"), [top * f for f in shape]) for n, top in enumerate(tops))
    trace = Trace("levels", start, demand)
    body, charts = demand_section(trace)
    drawn = drawn_levels(document("levels", body, {"charts": charts}), tmp)
    assert set(drawn) == set(charts)
    for chart_id, chart in charts.items():
        [peak] = peaks(chart)
        [ticks] = drawn[chart_id]
        assert_round_levels(ticks, peak)


def test_the_spike_pages_panels_tick_round_values_up_to_their_peaks(tmp_path: Path) -> None:
    """Every series panel of a simulate page, whichever policy and dimension; a panel
    peaking near 1.5k reads 0, 500, 1k, 1.5k, 2k (not 0, 1k)."""
    out = tmp_path / "spike.html"
    argv = ["simulate", "--scenario", "spike", "--policy", "stock:70", "--policy", "oracle"]
    assert cli.main([*argv, "--quiet", "--html", str(out)], io.StringIO(), io.StringIO()) == 0
    page = out.read_text()
    charts = {k: c for k, c in data_of(page)["charts"].items() if c["kind"] == "series"}
    drawn = drawn_levels(page, tmp_path)
    checked = 0
    for chart_id, chart in charts.items():
        ticks = [t for t in drawn[chart_id] if t]  # the strip has none
        assert len(ticks) == len(peaks(chart)) == 2
        for panel, peak in zip(ticks, peaks(chart), strict=True):
            assert_round_levels(panel, peak)
            checked += 1
    assert checked == 4
    # the reads' stock:70 panel, peaking between 1k and 2k: 0, 500, 1k, 1.5k, 2k
    reads = peaks(charts["series-0"])[0]
    assert 1_000 < reads < 2_000
    assert drawn["series-0"][1] == [0, 500, 1_000, 1_500, 2_000]
