"""The tune page's frontier in a real browser (headless Chromium): the candidates' labels
never overlap, however the points crowd, and every axis tick is a round number."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime
from pathlib import Path

from ddb_capacity_tools import cli, page
from ddb_capacity_tools.simulator import ModelParams
from ddb_capacity_tools.simulator.trace import Trace
from ddb_capacity_tools.simulator.tune import tune

from . import browser

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
    scale = {"k": 1e3, "M": 1e6}.get(raw[-1:], 1.0)
    value = round(float(raw.rstrip("kM")) * scale, 6)
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


def test_each_pages_header_says_what_its_run_did(tmp_path: Path) -> None:
    streamed = lead(
        simulate_page(tmp_path, "--policy", "autopilot+stock:70", "--stream-seconds", "2")
    )
    assert "read the table&#x27;s stream as a signal, seen 2 s late" in streamed or (
        "read the table's stream as a signal, seen 2 s late" in streamed
    ), streamed
    assert "Policies: autopilot+stock:70." in streamed and "schedule" not in streamed
    scheduled = lead(simulate_page(tmp_path, "--policy", "scheduled", "--policy", "stock:70"))
    assert "Policies: scheduled, stock:70." in scheduled and "stream" not in scheduled
    assert "scheduled follows the scenario&#x27;s" in scheduled or (
        "scheduled follows the scenario's" in scheduled
    ), scheduled
