"""The time axis of the report pages in a real browser (headless Chromium): its ticks fall
on round times (a step of 1, 2, 5, 10, 15 or 30 minutes, 1, 2, 3, 6 or 12 hours, 1 or 2
days, 1, 2 or 4 weeks; each a multiple of its step in UTC), about 4 to 8 of them, over the
whole trace and over every window a drag zooms to."""

from __future__ import annotations

import html
import io
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ddb_capacity_tools import cli
from ddb_capacity_tools.page.document import document
from ddb_capacity_tools.page.timeline import SPLIT_AFTER, demand_section
from ddb_capacity_tools.simulator.trace import Trace

from . import browser

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


def drawn(page: str, chart: str, windows: list[tuple[float, float]], tmp: Path) -> list[Any]:
    """What the browser drew: per view (the whole trace, then each zoomed window), the
    zoom status and the time ticks' text of the chart's first time axis."""
    script = DRIVE % {"chart": chart, "windows": json.dumps(windows)}
    out = tmp / "page.html"
    out.write_text(page.replace("</body>", script, 1), encoding="utf-8")
    loaded = browser.load(out, tmp)
    assert loaded.console == [] and 'data-rendered="ok"' in loaded.dom
    found = re.search(r'data-time-ticks="([^"]*)"', loaded.dom)
    assert found is not None
    views: list[Any] = json.loads(html.unescape(found.group(1)))
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
