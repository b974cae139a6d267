"""The tune page's frontier in a real browser (headless Chromium): the candidates' labels
never overlap each other nor the axes' labels, however the points crowd; every point is
named, even one hidden under another; every axis tick is a round number, written in one
compact style, and the cost axis holds every point."""

from __future__ import annotations

import html
import io
import json
import math
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ddb_capacity_tools import cli, page
from ddb_capacity_tools.page.choice import frontier_section
from ddb_capacity_tools.page.document import document
from ddb_capacity_tools.simulator import ModelParams
from ddb_capacity_tools.simulator.candidates import Candidate, with_frontier
from ddb_capacity_tools.simulator.ensemble import Spread
from ddb_capacity_tools.simulator.trace import Trace
from ddb_capacity_tools.simulator.tune import tune
from tests.support import browser

#: Appended to a copy of the page: measures every frontier label's box as drawn, and
#: records the pairs that overlap and every axis tick's text.
MEASURE = """<script>
var labels = document.querySelectorAll('[data-chart="frontier"] g.point text');
var boxes = Array.prototype.map.call(labels, function (t) { return t.getBBox(); });
var clashes = 0;
for (var i = 0; i < boxes.length; i++) {
  for (var j = i + 1; j < boxes.length; j++) {
    var a = boxes[i], b = boxes[j];
    if (a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height &&
        b.y < a.y + a.height) { clashes++; }
  }
}
var ticks = Array.prototype.map.call(
  document.querySelectorAll('svg.panel > text.tick[text-anchor="end"]'),
  function (t) { return t.textContent; });
document.body.setAttribute("data-labels", labels.length);
document.body.setAttribute("data-clashes", clashes);
document.body.setAttribute("data-ticks", ticks.join("|"));
</script></body>"""


def crowded_trace() -> Trace:
    """A steady trace on which most stock targets cost nearly the same and refuse nothing:
    their points crowd together."""
    reads = [9_981.0 + (m % 7) for m in range(240)]
    writes = [4_451.0 + (m % 5) for m in range(240)]
    return Trace(
        "crowded",
        datetime(2026, 1, 5, tzinfo=UTC),
        {(None, "read"): reads, (None, "write"): writes},
    )


def is_round(text: str) -> bool:
    """Whether a tick reads as a round number: two significant digits at most (a multiple of
    a step of 1, 2, 2.5 or 5 times a power of ten; never 9,981 or 4,451)."""
    raw = text.lstrip("$").replace(",", "")
    scale = {"k": 1e3, "M": 1e6, "B": 1e9}.get(raw[-1:], 1.0)
    value = round(float(raw.rstrip("kMB")) * scale, 6)
    if value == 0:
        return True
    digits = f"{value:.6e}".split("e")[0].replace(".", "").rstrip("0")
    return len(digits) <= 2


def test_the_frontiers_labels_never_overlap_and_its_ticks_are_round(tmp_path: Path) -> None:
    trace = crowded_trace()
    params = [ModelParams(), ModelParams(metric_delay_minutes=3)]
    tuning = tune(trace, params, ["autopilot:70", "autopilot:80"])
    html = page.tune_page(tuning, trace, "crowded", 2)
    out = tmp_path / "tune.html"
    out.write_text(html.replace("</body>", MEASURE, 1), encoding="utf-8")
    loaded = browser.load(out, tmp_path)
    assert loaded.console == [] and 'data-rendered="ok"' in loaded.dom
    shown = int(re.search(r'data-labels="(\d+)"', loaded.dom).group(1))  # type: ignore[union-attr]
    assert shown == len(tuning.candidates) >= 8
    assert 'data-clashes="0"' in loaded.dom
    found = re.search(r'data-ticks="([^"]*)"', loaded.dom).group(1).split("|")  # type: ignore[union-attr]
    ticks = [t for t in found if ":" not in t]  # the time axis's last label is anchored so too
    assert ticks and all(is_round(t) for t in ticks), [t for t in ticks if not is_round(t)]


def simulate_page(tmp_path: Path, *args: str) -> str:
    out = tmp_path / "run.html"
    code = cli.main(
        ["simulate", "--scenario", "spike", *args, "--html", str(out), "--quiet"],
        io.StringIO(),
        io.StringIO(),
    )
    assert code == 0
    return out.read_text()


def lead(html: str) -> str:
    return " ".join(re.findall(r'<p class="lead">(.*?)</p>', html))


def heading(page_html: str) -> tuple[str, str]:
    """The page's title and its h1, unescaped."""
    title = re.search(r"<title>(.*?)</title>", page_html)
    h1 = re.search(r"<h1>(.*?)</h1>", page_html)
    assert title is not None and h1 is not None
    return html.unescape(title.group(1)), html.unescape(h1.group(1))


def test_each_pages_header_says_what_its_run_did(tmp_path: Path) -> None:
    with_stream = simulate_page(tmp_path, "--policy", "autopilot+stock:70", "--stream-seconds", "2")
    said = "spike: simulation with the table's stream as a signal"
    assert heading(with_stream) == (said, said)
    assert heading(simulate_page(tmp_path, "--policy", "stock:70")) == ("spike: simulation",) * 2
    streamed = lead(with_stream)
    assert "read the table&#x27;s stream as a signal, seen 2 s late" in streamed or (
        "read the table's stream as a signal, seen 2 s late" in streamed
    ), streamed
    assert "Policies: autopilot+stock:70." in streamed and "schedule" not in streamed
    scheduled = lead(simulate_page(tmp_path, "--policy", "scheduled", "--policy", "stock:70"))
    assert "Policies: scheduled, stock:70." in scheduled and "stream" not in scheduled
    assert "scheduled follows the scenario&#x27;s" in scheduled or (
        "scheduled follows the scenario's" in scheduled
    ), scheduled


#: Appended to a copy of a page: records, for the frontier, every text drawn outside the
#: points (title, ticks, the axis's name) and each point's circle, label(s) and leader line,
#: with the boxes the browser laid them out in.
DRAWN = """<script>
(function () {
  var svg = document.querySelector('[data-chart="frontier"] svg');
  var box = function (e) { var b = e.getBBox(); return [b.x, b.y, b.width, b.height]; };
  var view = svg.getAttribute("viewBox").split(" ").map(Number);
  var axes = Array.prototype.map.call(svg.querySelectorAll(":scope > text"), function (t) {
    return {text: t.textContent, box: box(t)};
  });
  var points = Array.prototype.map.call(svg.querySelectorAll("g.point"), function (g) {
    var c = g.querySelector("circle");
    return {
      name: g.getAttribute("data-point"),
      circle: [Number(c.getAttribute("cx")), Number(c.getAttribute("cy")),
        Number(c.getAttribute("r"))],
      labels: Array.prototype.map.call(g.querySelectorAll("text"), function (t) {
        return {text: t.textContent, box: box(t)};
      }),
      leader: g.querySelector(".leader") !== null,
      classes: g.getAttribute("class").split(" ")
    };
  });
  var line = svg.querySelector(".frontier-line").getAttribute("d");
  document.body.setAttribute("data-drawn",
    JSON.stringify({view: view, axes: axes, points: points, line: line}));
}());
</script></body>"""

#: A tick as the page writes every one: a dollar sign on the cost axis, then a number with
#: no separator and no trailing zero, then k, M or B from a thousand on (0, 500, 2.5k, 1M).
COMPACT = re.compile(r"^\$?(0|[1-9]\d{0,2}(\.\d*[1-9])?|0\.\d*[1-9])[kMB]?$")


def made(name: str, refused: float, cost: float, spread: float = 0.0) -> Candidate:
    return Candidate(
        name,
        Spread(refused, refused, refused),
        Spread(cost - spread, cost, cost + spread),
    )


def awkward() -> list[Candidate]:
    """Candidates as a user met them: costs from $55 to $266 (the old axis stopped at
    $200), refusals up to 9M beside the axis's last tick, two points at one place (the
    recommendation hiding another), and refusals at 100k and 1M."""
    return with_frontier(
        [
            made("stock:30", 0, 224, 6),
            made("on-demand", 0, 266),
            made("stock:50", 0, 150, 4),
            made("autopilot:70", 0, 120, 3),
            made("autopilot+stock:70", 0, 120, 3),
            made("stock:70", 100_000, 95, 2),
            made("stock:90", 1_000_000, 70, 2),
            made("autopilot:80", 2_000_000, 62, 1),
            made("autopilot+stock:80", 9_000_000, 57, 2),
        ]
    )


def overlap(a: list[float], b: list[float]) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def drawn_frontier(candidates: list[Candidate], pick: Candidate, tmp: Path) -> dict[str, Any]:
    body, charts = frontier_section(candidates, pick, "a month")
    out = tmp / "frontier.html"
    out.write_text(document("frontier", body, {"charts": charts}).replace("</body>", DRAWN, 1))
    loaded = browser.load(out, tmp)
    assert loaded.console == [] and 'data-rendered="ok"' in loaded.dom
    found = re.search(r'data-drawn="([^"]*)"', loaded.dom)
    assert found is not None
    drawn: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return drawn


def value(tick: str) -> float:
    raw = tick.lstrip("$")
    return float(raw.rstrip("kMB")) * {"k": 1e3, "M": 1e6, "B": 1e9}.get(raw[-1:], 1.0)


def test_every_point_is_named_clear_of_the_axes_on_an_axis_that_holds_it(tmp_path: Path) -> None:
    candidates = awkward()
    pick = next(c for c in candidates if c.policy == "autopilot+stock:70")
    drawn = drawn_frontier(candidates, pick, tmp_path)
    _, _, width, height = drawn["view"]
    ticks = [a for a in drawn["axes"] if re.fullmatch(r"\$?[\d.,]+[kMB]?", a["text"])]
    costs = [value(t["text"]) for t in ticks if t["text"].startswith("$")]
    refused = [t["text"] for t in ticks if not t["text"].startswith("$")]
    # one compact style on both axes: never 1,000 beside 10k, nor 100k beside 1.0M
    assert refused == ["0", "10", "100", "1k", "10k", "100k", "1M", "10M"]
    assert all(COMPACT.match(t["text"]) for t in ticks), [t["text"] for t in ticks]
    # the cost axis holds every point, whiskers included, between two of its round ticks
    assert min(costs) <= min(c.cost_usd.min for c in candidates)
    assert max(costs) >= max(c.cost_usd.max for c in candidates)  # $272, not $200
    assert all(is_round(t["text"]) for t in ticks)
    # every point named, inside the chart, clear of every tick, title and other label
    labels = []
    for p in drawn["points"]:
        mine = [t for t in p["labels"] if p["name"] in t["text"]]
        assert len(mine) == 1, p
        x, y, w, h = mine[0]["box"]
        assert w > 0 and 0 <= x and x + w <= width and 0 <= y and y + h <= height, p
        labels.append(mine[0]["box"])
    assert {p["name"] for p in drawn["points"]} == {c.policy for c in candidates}
    for n, a in enumerate(labels):
        assert not any(overlap(a, t["box"]) for t in drawn["axes"]), a
        assert not any(overlap(a, b) for b in labels[n + 1 :]), a
    # the point under the recommendation: both named, one led to by a line
    same = [p for p in drawn["points"] if p["circle"][:2] == drawn["points"][-1]["circle"][:2]]
    assert sorted(p["name"] for p in same) == ["autopilot+stock:70", "autopilot:70"]
    assert any(p["leader"] for p in same)


def crosses(box: list[float], a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether the segment from ``a`` to ``b`` passes through ``box`` (sampled every 0.5 px)."""
    steps = max(1, int(math.hypot(b[0] - a[0], b[1] - a[1]) * 2))
    return any(
        box[0] < a[0] + (b[0] - a[0]) * s / steps < box[0] + box[2]
        and box[1] < a[1] + (b[1] - a[1]) * s / steps < box[1] + box[3]
        for s in range(steps + 1)
    )


def test_no_label_crosses_the_frontier_and_no_point_hides_another(tmp_path: Path) -> None:
    # GIVEN the awkward candidates and two more at one place with others: scheduled where
    # stock:70 is (a point off the frontier under one on it, as a spike run drew them)
    candidates = with_frontier([*awkward(), made("scheduled", 100_000, 96)])
    pick = next(c for c in candidates if c.policy == "autopilot+stock:70")
    drawn = drawn_frontier(candidates, pick, tmp_path)
    # THEN no label, beside its point, crosses the dashed frontier line
    corners = [
        (float(xy.split(",")[0]), float(xy.split(",")[1]))
        for xy in re.findall(r"[ML]([^ML]+)", drawn["line"])
    ]
    assert len(corners) >= 3
    for p in drawn["points"]:
        for t in p["labels"]:
            for a, b in zip(corners, corners[1:], strict=False):
                assert not crosses(t["box"], a, b), (p["name"], t["box"], a, b)
    # AND points at one place are each seen: a ring around the ones drawn before it, wider,
    # and a point off the frontier is never drawn over one on it
    at: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for p in drawn["points"]:
        cx, cy, _ = p["circle"]
        near = [k for k in at if math.hypot(k[0] - cx, k[1] - cy) < 8]
        at.setdefault(near[0] if near else (round(cx), round(cy)), []).append(p)
    stacks = [s for s in at.values() if len(s) > 1]
    assert {tuple(sorted(p["name"] for p in s)) for s in stacks} >= {
        ("autopilot+stock:70", "autopilot:70"),
        ("scheduled", "stock:70"),
    }
    for stack in stacks:
        radii = [p["circle"][2] for p in stack]
        assert radii == sorted(radii) and len(set(radii)) == len(radii), stack
        assert all("stacked" in p["classes"] for p in stack[1:]), stack
        on = [i for i, p in enumerate(stack) if "on-frontier" in p["classes"]]
        off = [i for i, p in enumerate(stack) if "on-frontier" not in p["classes"]]
        assert not on or not off or max(off) < min(on), stack


def test_a_point_with_no_room_beside_it_is_listed_under_the_chart(tmp_path: Path) -> None:
    """A hundred and forty-two candidates at one place: every one is named, beside the
    point while there is room, then listed under the chart with its figures."""
    names = [f"{kind}:{t}" for kind in ("stock", "autopilot") for t in range(20, 91)]
    candidates = with_frontier([made(name, 0, 100) for name in names])
    drawn = drawn_frontier(candidates, candidates[0], tmp_path)
    _, _, width, height = drawn["view"]
    boxes = [t["box"] for p in drawn["points"] for t in p["labels"]]
    assert len(boxes) == len(candidates)
    for n, a in enumerate(boxes):
        assert 0 <= a[0] and a[0] + a[2] <= width and 0 <= a[1] and a[1] + a[3] <= height
        assert not any(overlap(a, b) for b in boxes[n + 1 :])
    listed = [t["text"] for p in drawn["points"] for t in p["labels"] if "no room" in t["text"]]
    assert listed and all(re.search(r": \$100\.00, 0 refused", t) for t in listed)


@pytest.mark.parametrize("low", [1_000.0, 12_340.0])
def test_ticks_on_a_narrow_cost_range_are_told_apart(tmp_path: Path, low: float) -> None:
    """Costs within 1 % of each other: the cost axis's ticks are close together, and each
    still reads differently (with the digits that tell them apart), in order."""
    candidates = with_frontier(
        [
            made("stock:30", 0, low),
            made("stock:50", 10, low * 1.004),
            made("autopilot:70", 100, low * 1.007),
            made("stock:70", 1_000, low * 1.01),
        ]
    )
    drawn = drawn_frontier(candidates, candidates[0], tmp_path)
    costs = [a["text"] for a in drawn["axes"] if a["text"].startswith("$")]
    assert len(costs) >= 3 and len(set(costs)) == len(costs), costs
    assert [value(c) for c in costs] == sorted(value(c) for c in costs)


@pytest.mark.parametrize("period", ["a month", "over the trace"])
def test_every_figure_of_the_frontier_says_what_it_covers(period: str) -> None:
    body, charts = frontier_section(awkward(), None, period)
    headers = re.findall(r"<th[^>]*>(.*?)</th>", body)
    assert [h for h in headers if "refused" in h or "cost" in h] == [
        f"refused units {period}",
        f"cost {period}",
        f"cost {period}, min to max",
    ]
    assert charts["frontier"]["x_label"].startswith(f"refused units {period} (")
    assert f"refused units ({period})" in charts["frontier"]["title"]
