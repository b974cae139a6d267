"""The report pages in a real browser (headless Chromium, tests/support/browser.py): they render
without a script error or a console message, their charts hold a series per policy with a
point per minute, the screenshot is not blank, the fleet page sorts and filters, stays small
for 1,000 tables, and a hostile name is shown as text and runs nothing."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from ddb_capacity_tools import cli, fleet, page
from ddb_capacity_tools.page.choice import HINDSIGHT
from ddb_capacity_tools.page.document import data_block
from ddb_capacity_tools.simulator import ModelParams
from ddb_capacity_tools.simulator.candidates import Candidate, with_frontier
from ddb_capacity_tools.simulator.ensemble import Spread
from ddb_capacity_tools.simulator.policies import parse
from ddb_capacity_tools.simulator.prices import Prices
from ddb_capacity_tools.simulator.run import simulate
from ddb_capacity_tools.simulator.trace import Trace
from ddb_capacity_tools.simulator.tune import tune
from tests.support import browser
from tests.support.cli import HistoryTable, a_day_of, history_table  # noqa: F401 (a fixture)
from tests.support.report_page import data_of, panels, series
from tests.support.shape import ROOT

HOSTILE = "</script><img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">"
SPIKE_POLICIES = ("stock:70", "throttle-aware+stock:70", "scheduled", "oracle", "bound")


def test_the_spike_page_renders_every_policy_and_minute_in_a_browser(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "spike.html"
    argv = ["simulate", "--scenario", "spike", "--quiet", "--workers", "1", "--html", str(out)]
    argv += [a for p in SPIKE_POLICIES for a in ("--policy", p)]
    assert cli.main(argv) == 0
    # the dollars are the trace's 3 hours', and the text table says so, as the page does
    words = capsys.readouterr().out
    assert " cost $ (trace) " in words.splitlines()[3]
    assert "cost $ (trace): the cost over the trace's 180 minutes, not a month" in words
    loaded = browser.load(out, tmp_path)
    assert loaded.console == []  # no script error, nothing logged
    assert 'data-rendered="ok"' in loaded.dom
    for chart in ("series-0", "series-1"):  # read, write
        strip, *policy_panels = panels(loaded.dom, chart)
        assert [name for name, _, _ in series(strip)] == list(SPIKE_POLICIES)
        assert len(policy_panels) == len(SPIKE_POLICIES)
        for svg in policy_panels:
            drawn = series(svg)
            assert {role for _, role, _ in drawn} >= {"demand", "throttled"}
            assert {points for _, _, points in drawn} == {180}  # a point a minute
        for svg in policy_panels:
            title = re.search(r'data-panel="([^"]*)"', svg)
            assert title is not None
            assert re.fullmatch(
                r"\S+: \d+ throttled min, \$[\d,.]+ over the trace( \(.*\))?", title.group(1)
            ), title.group(1)
        bound = policy_panels[SPIKE_POLICIES.index("bound")]
        assert "a floor on cost, not a plan" in bound and 'data-role="bound"' in bound
    # the writes throttle and are open; the reads never do and are folded away
    assert re.search(r"<details><summary>read: no policy throttles", loaded.dom)
    assert re.search(r"<details open=\"\"><summary>write: \d of 5 policies throttle", loaded.dom)
    # every policy is a point, the oracle and the bound drawn for reference, on no frontier
    points = drawn_points(loaded.dom)
    assert set(points) == set(SPIKE_POLICIES)
    assert {name for name, kinds in points.items() if "reference" in kinds} == set(HINDSIGHT)
    frontier = {name for name, kinds in points.items() if "on-frontier" in kinds}
    # the frontier of the deployable policies, as if the hindsight runs had not been there
    charted = {p["name"]: p for p in data_of(out.read_text())["charts"]["frontier"]["points"]}
    deployable = [placed(charted[n]) for n in SPIKE_POLICIES if n not in HINDSIGHT]
    assert frontier == {c.policy for c in with_frontier(deployable) if c.frontier}
    # which, had the oracle and the bound counted, would have had none of them
    every = with_frontier([placed(charted[n]) for n in SPIKE_POLICIES])
    assert frontier and not frontier & {c.policy for c in every if c.frontier}
    rows = frontier_rows(loaded.dom)
    assert {name for name, yes in rows if yes == "yes"} == frontier
    assert sorted(name for name, _ in rows if "hindsight" in name) == [
        "bound (hindsight: for reference)",
        "oracle (hindsight: for reference)",
    ]
    # the caption names what the chart draws: no recommendation, no hollow point here
    caption = caption_names_what_is_drawn(loaded.dom)
    assert "recommendation" not in caption and "hollow" not in caption
    shot = browser.screenshot(out, tmp_path)
    assert browser.not_blank(shot) > 100


#: What the frontier's caption says of each kind of point, and whether a point (its
#: classes as drawn) is of that kind.
KINDS: dict[str, Callable[[set[str]], bool]] = {
    "blue points are on the frontier": lambda c: "on-frontier" in c and "recommended" not in c,
    "the green point is the recommendation": lambda c: "recommended" in c,
    "grey points are beaten": lambda c: (
        not c & {"on-frontier", "recommended", "compared"} and "reference" not in c
    ),
    "hollow points are shown for comparison only": lambda c: "compared" in c,
    "purple points": lambda c: "reference" in c,
}


def drawn_points(dom: str) -> dict[str, set[str]]:
    """Each point the browser drew on the frontier: its name and its classes."""
    found = re.findall(r'<g class="point([^"]*)" data-point="([^"]*)"', panels(dom, "frontier")[0])
    return {name: set(classes.split()) for classes, name in found}


def frontier_rows(dom: str) -> list[tuple[str, str]]:
    """The frontier table's rows: (the policy cell, the "on the frontier" cell)."""
    table = dom[dom.index('data-chart="frontier"') :]
    return re.findall(r"<tr[^>]*><td>([^<]*)</td><td>([^<]*)</td>", table)


def caption_names_what_is_drawn(dom: str) -> str:
    """The frontier's caption, lower case, once checked to name each kind of point the
    chart draws and no other kind."""
    found = re.search(r"<h2>The frontier: cost against refusals</h2><p[^>]*>(.*?)</p>", dom)
    assert found is not None
    caption = unescape(found.group(1)).lower()
    drawn = drawn_points(dom).values()
    for words, kind in KINDS.items():
        assert (words in caption) == any(kind(c) for c in drawn), (words, caption)
    return caption


def placed(point: dict[str, Any]) -> Candidate:
    """A frontier point of the page's data as a candidate (its medians)."""
    refused, cost = Spread.of([point["refused"]]), Spread.of([point["cost"]])
    return Candidate(point["name"], refused, cost)


def test_an_ensembles_frontier_is_marked_without_the_plans_made_with_hindsight(
    tmp_path: Path,
) -> None:
    """Over an ensemble, as over one run: the oracle and the bound are charted for
    reference, on no frontier, and the frontier is the deployable policies' own."""
    out = tmp_path / "ensemble.html"
    argv = ["simulate", "--scenario", "spike", "--ensemble", "plausible", "--workers", "1"]
    argv += [a for p in ("stock:70", "stock:50", *HINDSIGHT) for a in ("--policy", p)]
    assert cli.main([*argv, "--quiet", "--html", str(out)], io.StringIO(), io.StringIO()) == 0
    points = {p["name"]: p for p in data_of(out.read_text())["charts"]["frontier"]["points"]}
    assert {name for name, p in points.items() if p["hindsight"]} == set(HINDSIGHT)
    assert not any(points[name]["frontier"] for name in HINDSIGHT)
    deployable = with_frontier([placed(points[name]) for name in ("stock:70", "stock:50")])
    frontier = {name for name, p in points.items() if p["frontier"]}
    assert frontier and frontier == {c.policy for c in deployable if c.frontier}


def small_trace(name: str = "steady", index: str | None = None) -> Trace:
    reads = [100.0 + (m % 60) * 5 for m in range(240)]
    writes = [50.0 if m < 120 else 400.0 for m in range(240)]
    return Trace(
        name, datetime(2026, 1, 5, tzinfo=UTC), {(index, "read"): reads, (index, "write"): writes}
    )


def test_the_tune_page_highlights_the_recommendation_on_the_frontier(tmp_path: Path) -> None:
    trace = small_trace()
    tuning = tune(trace, [ModelParams(), ModelParams(metric_delay_minutes=3)], ["autopilot:70"])
    out = page.write(tmp_path / "tune.html", page.tune_page(tuning, trace, "two", 2))
    loaded = browser.load(out, tmp_path)
    assert loaded.console == [] and 'data-rendered="ok"' in loaded.dom
    frontier = panels(loaded.dom, "frontier")[0]
    points = re.findall(r'<g class="point([^"]*)" data-point="([^"]*)"', frontier)
    assert len(points) == len(tuning.candidates)  # stock 30-90 %, autopilot:70, on-demand
    [picked] = [name for classes, name in points if "recommended" in classes]
    assert picked == tuning.recommended.policy
    assert "the green point is the recommendation" in caption_names_what_is_drawn(loaded.dom)
    assert "What to paste" in loaded.dom and tuning.recommended.policy in loaded.dom
    # tune's figures are a month's (730 hours), and the page says so
    assert "its cost a month" in loaded.dom and "over the trace" not in loaded.dom
    # the header says how they were made, as the terminal's first line does
    header = re.search(r'<p class="lead">(.*?)</p>', loaded.dom)
    assert header is not None and header.group(1) == (
        "240 minutes from 2026-01-05 00:00 UTC; ensemble two (2 settings); fitted on 120 "
        "minutes, chosen on the later 120 (from 2026-01-05 02:00 UTC); figures a month "
        "(730 h), scaled from the later part; billing basis hourly-max."
    )
    demand = panels(loaded.dom, "demand-0")[0]
    assert [p for _, _, p in series(demand)] == [240]
    # and the demand chart marks where the later part, the one chosen on, begins
    split = re.search(
        r'<line x1="([\d.]+)" x2="([\d.]+)"[^>]*class="split" data-minute="120"', demand
    )
    assert split is not None and split.group(1) == split.group(2)
    assert abs(float(split.group(1)) - (150 + 838 / 2)) < 1  # halfway across the plot
    assert ">chosen on the later part from here</text>" in demand
    assert demand.index('class="split"') > demand.index('data-role="demand"')  # drawn over it


def test_simulate_and_a_scored_runs_dollars_say_what_they_cover(tmp_path: Path) -> None:
    """A run scored from a minute on: its dollars cover the scored part, and the text
    table, the page's header, its panels and its frontier say so (as a backtest's do:
    the same code writes them)."""
    out, words = tmp_path / "scored.html", io.StringIO()
    argv = ["simulate", "--scenario", "spike", "--policy", "stock:70", "--quiet"]
    argv += ["--score-from", "2026-01-05T13:00Z", "--html", str(out)]
    assert cli.main(argv, words, io.StringIO()) == 0
    text = words.getvalue()
    assert " cost $ (scored) " in text
    assert (
        "cost $ (scored): the cost over the trace's scored 120 minutes (from minute 60 on), "
        "not a month" in text
    )
    html = out.read_text()
    assert "every cost is over the trace&#x27;s scored 120 minutes" in html
    charts = data_of(html)["charts"]
    titles = [p["title"] for c in charts.values() for p in c.get("panels", [])]
    assert titles and all("$" not in t or t.endswith(" over the scored part") for t in titles)
    assert charts["frontier"]["title"].startswith(
        "cost against refused units (over the scored part)"
    )
    whole = tmp_path / "whole.html"
    argv = ["simulate", "--scenario", "diurnal", "--policy", "stock:70", "--quiet"]
    assert cli.main([*argv, "--html", str(whole)], words, io.StringIO()) == 0
    assert "every cost is over the trace&#x27;s 7 days (10,080 minutes), not a month" in (
        whole.read_text()
    )
    assert "cost $ (trace): the cost over the trace's 7 days (10,080 minutes)" in words.getvalue()


def test_a_backtests_text_and_page_say_its_dollars_cover_the_history(
    history_table: HistoryTable,  # noqa: F811 (the fixture of test_cli)
    tmp_path: Path,
) -> None:
    """A backtest over a day of a table's history: its dollars are that day's, and its
    text table and page say so."""
    name, end, *_ = history_table
    out, words = tmp_path / "backtest.html", io.StringIO()
    argv = ["backtest", *a_day_of(name, end), "--policy", "stock:70", "--quiet"]
    assert cli.main([*argv, "--html", str(out)], words, io.StringIO()) == 0
    assert "cost $ (trace): the cost over the trace's 1 day (1,440 minutes)" in words.getvalue()
    html = out.read_text()
    assert "every cost is over the trace&#x27;s 1 day (1,440 minutes), not a month" in html
    charts = data_of(html)["charts"]
    titles = [p["title"] for c in charts.values() for p in c.get("panels", [])]
    assert any(t.startswith("stock:70: ") for t in titles)
    assert all("$" not in t or t.endswith(" over the trace") for t in titles)


def fleet_docs(tables: int) -> list[dict[str, Any]]:
    """``tables`` documents shaped as ``advise`` writes them, each saving a different sum."""
    docs = []
    for n in range(tables):
        now, after = 50.0 + n, 40.0 + (n * 7) % 90
        docs.append(
            {
                "table": f"orders-{n:04d}",
                "index": None,
                "status": "advised",
                "recommended": "autopilot+stock:70",
                "reason": "autopilot+stock:70 is the cheapest of the 14 candidate(s) that "
                "refuse no more than stock:30 refuses (0 units a month: the stock setting "
                f"that refuses least): ${after:,.2f} a month, 0 units a month refused.",
                "options": [
                    {"policy": "autopilot+stock:70", "usd_per_month": after, "refused_per_month": 0}
                ],
                "current": {"policy": "stock:70", "usd_per_month": now, "refused_per_month": 10},
            }
        )
    return docs


def synthetic_fleet(tables: int) -> fleet.Report:
    docs = fleet_docs(tables)
    return fleet.build(docs, {"days": 14, "ensemble": "plausible"}, missing=["late-table"])


#: Appended to a copy of the fleet page: sorts by the saving column, then filters, as a
#: person would click and type, and records what the page shows.
DRIVE = """<script>
var t = document.getElementById("fleet"), heads = t.querySelectorAll("th");
heads[6].click(); heads[6].click();
var firstAscending = t.tBodies[0].rows[0].cells[0].textContent;
var box = document.querySelector("[data-filter=fleet]");
box.value = "orders-0999"; box.dispatchEvent(new Event("input"));
var shown = Array.prototype.filter.call(t.tBodies[0].rows, function (r) { return !r.hidden; });
document.body.setAttribute("data-first-ascending", firstAscending);
document.body.setAttribute("data-shown-rows", shown.length);
</script></body>"""


def test_the_fleet_page_of_1000_tables_is_small_sorts_and_filters(tmp_path: Path) -> None:
    report = synthetic_fleet(1000)
    html = page.fleet_page(report)
    # the size the report pages guide says, within 10 %
    guide = " ".join((ROOT / "docs" / "guides" / "report-pages.md").read_text().split())
    said = re.search(r"1,000 tables make a page of about ([\d.]+) MB", guide)
    assert said is not None
    megabytes = len(html.encode()) / 1_000_000
    assert abs(float(said[1]) - megabytes) <= 0.1 * megabytes, (said[1], megabytes)
    out = tmp_path / "report.html"
    out.write_text(html.replace("</body>", DRIVE, 1), encoding="utf-8")
    loaded = browser.load(out, tmp_path)
    assert loaded.console == [] and 'data-rendered="ok"' in loaded.dom
    assert len(re.findall(r"<tr data-status=", loaded.dom)) == 1001
    assert loaded.dom.count('href="tables/orders-') == 1000  # the missing table links nowhere
    savings = [r.usd_saved_per_month or 0.0 for r in report.rows]
    least = report.rows[savings.index(min(savings))].table
    assert f'data-first-ascending="{least}"' in loaded.dom
    assert 'data-shown-rows="1"' in loaded.dom
    assert re.search(r"1 shown, \$[\d,.]+ a month to save among them", loaded.dom)


def test_a_hostile_name_is_text_everywhere_and_runs_nothing(tmp_path: Path) -> None:
    """A table, index and trace named to break out of the page: shown as text in every
    page, no element made of it, no script run."""
    trace = small_trace(HOSTILE, index=HOSTILE)
    params = ModelParams().for_trace(trace)
    results = simulate(
        trace, [parse("stock:70"), parse("bound")], params, Prices(), None, 5, workers=1
    )
    docs = [
        {"table": HOSTILE, "index": HOSTILE, "status": "failed", "reason": HOSTILE},
        {**fleet_docs(1)[0], "table": HOSTILE, "reason": HOSTILE},
    ]
    pages = {
        "run.html": page.run_page(results, trace),
        "fleet.html": page.fleet_page(fleet.build(docs, {"run": HOSTILE})),
    }
    for name, html in pages.items():
        assert HOSTILE not in html  # never raw, not even in the JSON block
        out = tmp_path / name
        out.write_text(html, encoding="utf-8")
        loaded = browser.load(out, tmp_path / name[:-5])
        assert loaded.console == [] and 'data-rendered="ok"' in loaded.dom
        body = re.search(r"<body[^>]*>", loaded.dom)
        assert body is not None and "data-pwned" not in body.group(0)  # nothing ran
        assert "<img" not in loaded.dom  # no element made of a name
        assert "&lt;/script&gt;&lt;img src=x onerror=" in loaded.dom  # as text, as given


@pytest.mark.parametrize("command", ["tune", "advise"])
def test_a_page_that_cannot_be_written_is_refused_before_any_work(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    where = ["--trace", "x.csv"] if command == "tune" else ["--table", "orders"]
    missing = str(tmp_path / "nowhere" / "page.html")
    assert cli.main([command, *where, "--html", missing]) == 2
    assert f"--html: got {missing!r}; the folder" in capsys.readouterr().err
    assert cli.main([command, *where, "--html", str(tmp_path / "page.png")]) == 2
    assert "expected a file name ending in .html" in capsys.readouterr().err


def test_the_page_data_block_cannot_be_closed_by_a_value() -> None:
    block = data_block({"name": "</script><!--&"})
    assert "</script><!--" not in block[: -len("</script>")]
    assert json.loads(block[block.index(">") + 1 : -len("</script>")]) == {"name": "</script><!--&"}


def test_readme_screenshot_exists_and_is_small() -> None:
    shot = ROOT / "docs" / "images" / "spike-page.png"
    assert shot.is_file() and shot.stat().st_size < 400_000
    assert "images/spike-page.png" in (shot.parents[2] / "docs" / "overview.md").read_text()


def test_the_png_leaves_out_dimensions_no_policy_throttles_on_and_labels_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The spike's reads never throttle: the PNG draws the writes alone (every dimension
    when none throttles), and the bound's panel says it is a floor, not a plan; each panel's
    dollars are labelled as over the trace."""
    from ddb_capacity_tools.simulator import chart
    from ddb_capacity_tools.simulator.scenarios import scenario

    trace = scenario("spike", 1)
    params = ModelParams().for_trace(trace)
    specs = [parse("stock:70"), parse("bound")]
    results = simulate(trace, specs, params, Prices(), None, 5, workers=1)
    assert chart.shown_keys(results, trace) == ([(None, "write")], [(None, "read")])
    calm = [r for r in results if r.policy == "bound"]
    assert chart.shown_keys(calm, trace) == ([(None, "read"), (None, "write")], [])
    assert "not a plan" in chart.ABOUT["bound"]
    titles: list[str] = []
    save = chart._save

    def saved(fig: Any, plt: Any, path: Path) -> Path:
        titles.extend(ax.get_title() for ax in fig.axes)
        return save(fig, plt, path)

    monkeypatch.setattr(chart, "_save", saved)
    assert chart.render(results, trace, tmp_path / "spike.png").stat().st_size > 10_000
    priced = [t for t in titles if "$" in t]
    assert priced and all(t.endswith(" over the trace") for t in priced), titles
