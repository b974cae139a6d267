"""``ddb-capacity tune --score-from T``: the choice made on the minutes before ``T`` only,
the pick, every stock setting and on-demand scored on the minutes from ``T`` on."""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ddb_capacity_tools.simulator import ModelParams, Prices, parse, simulate
from ddb_capacity_tools.simulator.candidates import MONTH_MINUTES, STOCK, Candidate, Rule
from ddb_capacity_tools.simulator.ensemble import Spread, settings_of
from ddb_capacity_tools.simulator.trace import read_csv
from ddb_capacity_tools.simulator.tune_scored import hold
from tests.support import browser
from tests.support.cli import run

START = datetime(2026, 1, 5, tzinfo=UTC)
DAY = 1440
SCORE_FROM = "2026-01-07T00:00Z"  # minute 2,880: two days to choose on, one to score on


def write_trace(
    tmp_path: Path, name: str, minutes: int, demand: Callable[[int], tuple[float, float]]
) -> Path:
    rows = ["timestamp,read,write"]
    for m in range(minutes):
        read, write = demand(m)
        rows.append(f"{(START + timedelta(minutes=m)).isoformat()},{read:.1f},{write:.1f}")
    path = tmp_path / name
    path.write_text("\n".join(rows) + "\n")
    return path


def calm(m: int) -> tuple[float, float]:
    return 200.0, 100.0


def calm_then_bursts(m: int) -> tuple[float, float]:
    """Two calm days, then a day with an hour at 2.5 x every four hours."""
    if m >= 2 * DAY and m % 240 < 60:
        return 500.0, 250.0
    return calm(m)


def tune(path: Path, *more: str) -> dict[str, object]:
    code, out, err = run(
        "tune", "--trace", str(path), "--candidate", "stock:90", "--workers", "2", "--quiet",
        "--json", *more,
    )  # fmt: skip
    assert code == 0, err
    doc: dict[str, object] = json.loads(out)
    return doc


def test_the_choice_is_made_on_the_minutes_before_the_time_only(tmp_path: Path) -> None:
    # GIVEN two calm days, then a day of bursts
    whole = write_trace(tmp_path, "orders.csv", 3 * DAY, calm_then_bursts)
    first = write_trace(tmp_path, "orders.csv.first", 2 * DAY, calm_then_bursts)
    # WHEN tune chooses on the calm days and scores from the bursts on
    scored = tune(whole, "--score-from", SCORE_FROM)
    # THEN its choice is the one made on the calm days alone, to every figure and the code
    alone = tune(first)
    assert {k: v for k, v in scored.items() if k != "scored"} == {
        k: v for k, v in alone.items() if k != "scored"
    }
    assert alone["scored"] is None  # without --score-from: nothing scored
    # AND it is not the choice that sees the bursts (tune over the whole trace, validated)
    assert scored["recommended"] == "stock:90" != tune(whole)["recommended"]


def test_a_pick_that_did_not_hold_names_the_stock_setting_that_would_have(
    tmp_path: Path,
) -> None:
    path = write_trace(tmp_path, "orders.csv", 3 * DAY, calm_then_bursts)
    doc = tune(path, "--score-from", SCORE_FROM, "--ensemble", "plausible")
    s = doc["scored"]
    assert isinstance(s, dict)
    assert set(s) == {
        "score_from",
        "chosen_minutes",
        "scored_minutes",
        "month_hours",
        "candidates",
        "recommended",
        "rule",
        "times_limit",
        "held",
        "instead",
        "summary",
    }
    # the minutes chosen on are those before the time: its minute of the trace too
    assert s["score_from"] == SCORE_FROM
    assert (s["chosen_minutes"], s["scored_minutes"], s["month_hours"]) == (2 * DAY, DAY, 730)
    assert s["recommended"] == doc["recommended"] == "stock:90"
    by = {c["policy"]: c for c in s["candidates"]}
    # the pick first, then every stock setting and on-demand (the pick, a stock setting, once)
    assert list(by) == ["stock:90", *(p for p in STOCK if p != "stock:90"), "on-demand"]
    median = {p: c["throttled_requests"]["median"] for p, c in by.items()}
    cost = {p: c["cost_usd"]["median"] for p, c in by.items()}
    # the limit its own rule sets on the scored day: the stock setting refusing least there,
    # plus the floor of the units asked for there (a month)
    best = min(STOCK, key=lambda p: (median[p], cost[p]))
    requested = sum(sum(calm_then_bursts(m)) for m in range(2 * DAY, 3 * DAY)) * 60
    requested *= MONTH_MINUTES / DAY
    limit = median[best] + 0.0002 * requested
    assert s["rule"] == {
        "best_stock": best,
        "refusal_tolerance": 0.0,
        "refusal_floor": 0.0002,
        "requested_units": pytest.approx(requested),
        "refusal_limit": pytest.approx(limit),
        "refusal_price": None,
    }
    # the pick refused far past it; the cheapest stock setting within it would have held
    assert s["held"] is False and median["stock:90"] > 10 * limit
    assert s["times_limit"] == pytest.approx(median["stock:90"] / limit)
    within = [p for p in STOCK if median[p] <= limit]
    assert s["instead"] == min(within, key=lambda p: cost[p]) != "stock:90"
    assert s["summary"] == (
        f"On the days after {SCORE_FROM} the pick stock:90 refused {median['stock:90']:,.0f} "
        f"units a month, {median['stock:90'] / limit:,.1f} times the limit its rule sets on "
        f"those days ({limit:,.0f}, from {best}'s {median[best]:,.0f}, the least refused "
        f"there); "
        f"{s['instead']} would have held it at ${cost[s['instead']]:,.2f} a month (refusing "
        f"{median[s['instead']]:,.0f}), against the pick's ${cost['stock:90']:,.2f}."
    )


def test_the_scored_figures_are_simulates_from_the_time_on_a_month(tmp_path: Path) -> None:
    # GIVEN a calm trace: the pick (stock:90) held
    path = write_trace(tmp_path, "orders.csv", 3 * DAY, calm)
    doc = tune(path, "--score-from", SCORE_FROM)
    s = doc["scored"]
    assert isinstance(s, dict)
    assert s["held"] is True and s["instead"] is None
    by = {c["policy"]: c for c in s["candidates"]}
    assert s["summary"] == (
        f"On the days after {SCORE_FROM} the pick stock:90 held its rule: it refused 0 units a "
        f"month, within the limit its rule sets on those days "
        f"({s['rule']['refusal_limit']:,.0f}, from stock:90's 0, the least refused there), at "
        f"${by['stock:90']['cost_usd']['median']:,.2f} a month."
    )
    # AND each stock setting's figures are what simulate counts from that minute on, each
    # policy run over the whole trace, under each of the ensemble's settings, a month
    trace = read_csv(path)
    for name in ("stock:30", "stock:70"):
        costs = []
        for setting in settings_of("plausible", ModelParams(), trace):
            ran = simulate(trace, [parse(name)], setting, Prices(), score_from=2 * DAY)
            costs.append(sum(r.cost_usd for r in ran) * MONTH_MINUTES / DAY)
        assert by[name]["cost_usd"]["median"] == pytest.approx(statistics.median(costs))


def test_the_text_and_the_page_show_the_scored_part(tmp_path: Path) -> None:
    path = write_trace(tmp_path, "orders.csv", 3 * DAY, calm_then_bursts)
    page = tmp_path / "tune.html"
    args = ["tune", "--trace", str(path), "--candidate", "stock:90", "--workers", "2"]
    code, out, err = run(*args, "--score-from", SCORE_FROM, "--html", str(page), "--quiet")
    assert code == 0, err
    _, doc, _ = run(*args, "--score-from", SCORE_FROM, "--quiet", "--json")
    scored = json.loads(doc)["scored"]
    # the choice as ever, on the two days before the time; then the scored part
    choice, held = out.split("\nscored on the days after: ")
    # the first line says the minutes chosen on are those before the time, of the whole
    assert "orders.csv: 2,880 minutes before --score-from (of 4,320), ensemble" in choice
    assert "Use stock:90" in choice
    periods = (
        "chosen on 2 days (2,880 minutes), 2026-01-05T00:00Z to 2026-01-07T00:00Z; scored on "
        "1 day (1,440 minutes), 2026-01-07T00:00Z to 2026-01-08T00:00Z"
    )
    assert held.startswith(periods)
    assert "figures a month (730 h), scaled from the 1,440 scored minutes" in held
    assert "refused units a month (min / median / max)" in held
    assert re.search(r"^stock:90 <- recommended ", held, re.M)
    assert "the rule's limit on refused units a month: " in held
    assert f"{scored['rule']['refusal_limit']:,.0f} on the scored part" in held
    assert held.rstrip().endswith(scored["summary"])
    # the page: a section for the scored part, its header naming the two periods
    html = page.read_text()
    assert f"<h2>The pick on the days after: {periods}</h2>" in html
    assert scored["summary"].replace("'", "&#x27;") in html
    # and the demand, the whole trace's, with a line where the scored part begins
    assert '{"minute":2880,"before":"","after":"scored from here"}' in html
    loaded = browser.load(page, tmp_path)  # drawn in a browser, without a script error
    assert loaded.console == [] and 'data-rendered="ok"' in loaded.dom
    assert "scored from here" in loaded.dom
    # without --score-from: no scored part
    code, out, err = run(*args, "--quiet")
    assert code == 0 and "scored on the days after" not in out
    assert "orders.csv: 4,320 minutes, ensemble" in out and "--score-from" not in out


def test_the_progress_bar_of_the_scoring_runs_says_they_are_the_scoring_s(
    tmp_path: Path,
) -> None:
    # GIVEN a terminal's stderr
    path = write_trace(tmp_path, "orders.csv", 3 * DAY, calm_then_bursts)
    args = ["tune", "--trace", str(path), "--candidate", "stock:90", "--workers", "2"]
    # WHEN tune chooses, then scores the pick from a time on
    code, _, err = run(*args, "--score-from", SCORE_FROM, "--json", terminal=True)
    assert code == 0, err
    # THEN the choosing runs have their bar and the scoring runs one of their own, named
    # so: no bar seems to start over
    bars = re.findall(r"\r(tune[^[]*) \[[# ]*\] (\d+)/(\d+) runs", err)
    named = [(name, int(total)) for name, _, total in bars]
    choosing, scoring = named[0], named[-1]
    assert choosing[0] == "tune" and scoring[0] == f"tune, scoring from {SCORE_FROM}"
    assert [n for n in named if n != choosing] == [scoring] * (len(named) - named.count(choosing))
    assert f"\rtune [{'#' * 30}] {choosing[1]}/{choosing[1]} runs" in err
    assert f"\r{scoring[0]} [{'#' * 30}] {scoring[1]}/{scoring[1]} runs" in err


def test_under_the_price_rule_the_pick_held_unless_a_stock_setting_did_better_at_it(
    tmp_path: Path,
) -> None:
    path = write_trace(tmp_path, "orders.csv", 3 * DAY, calm_then_bursts)
    doc = tune(path, "--score-from", SCORE_FROM, "--refusal-price", "1")
    s = doc["scored"]
    assert isinstance(s, dict)
    by = {c["policy"]: c for c in s["candidates"]}

    def at_price(p: str) -> float:
        return float(by[p]["cost_usd"]["median"] + by[p]["throttled_requests"]["median"] / 1e6)

    better = min(STOCK, key=at_price)
    assert (s["held"], s["instead"], s["times_limit"]) == (False, better, None)
    assert s["rule"]["refusal_limit"] is None and s["rule"]["refusal_price"] == 1
    assert s["summary"].endswith(
        f"; {better} would have done better at that price: ${at_price(better):,.2f} "
        f"(${by[better]['cost_usd']['median']:,.2f} a month, refusing "
        f"{by[better]['throttled_requests']['median']:,.0f})."
    )
    # at a price that makes refusals nearly free, the cheapest (the pick) held
    doc = tune(path, "--score-from", SCORE_FROM, "--refusal-price", "0.001")
    s = doc["scored"]
    assert isinstance(s, dict)
    assert (s["held"], s["instead"]) == (True, None)
    assert s["summary"].endswith(": no stock setting did better at that price, so it held.")


ALLOWED = (
    "expected an ISO-8601 time from 2026-01-06T00:00Z to 2026-01-07T23:00Z (at least 1 day "
    "(1,440 minutes) before it to choose on and 60 minutes from it on to score on, of the "
    "trace's 4,320 from 2026-01-05T00:00Z)"
)


@pytest.mark.parametrize(
    "given",
    [
        "2026-01-04T23:59Z",  # before the trace
        "2026-01-08T00:00Z",  # after its last minute
        "2026-01-05T12:00Z",  # leaves half a day to choose on
        "2026-01-07T23:30Z",  # leaves half an hour to score on
        "tomorrow",
    ],
)
def test_a_time_that_leaves_too_little_is_refused_before_any_run(
    tmp_path: Path, given: str
) -> None:
    path = write_trace(tmp_path, "orders.csv", 3 * DAY, calm)
    code, out, err = run(
        "tune", "--trace", str(path), "--candidate", "stock:90", "--score-from", given,
        terminal=True,
    )  # fmt: skip
    assert (code, out) == (2, "")
    assert err == f"ddb-capacity: error: --score-from: got {given!r}; {ALLOWED}\n"  # no bar


def test_a_trace_too_short_for_both_parts_says_so(tmp_path: Path) -> None:
    path = write_trace(tmp_path, "orders.csv", DAY, calm)
    code, out, err = run("tune", "--trace", str(path), "--score-from", "2026-01-05T12:00Z")
    assert (code, out) == (2, "")
    assert err == (
        "ddb-capacity: error: --score-from: got '2026-01-05T12:00Z'; expected an ISO-8601 time "
        "that leaves at least 1 day (1,440 minutes) before it to choose on and 60 minutes "
        "from it on to score on, of the trace's 1,440 from 2026-01-05T00:00Z: this trace is "
        "too short\n"
    )


def test_a_tables_score_from_is_checked_before_its_history_is_read() -> None:
    code, out, err = run("tune", "--table", "Orders", "--score-from", "soon")
    assert (code, out) == (2, "")
    assert err == (
        "ddb-capacity: error: --score-from: got 'soon'; expected an ISO-8601 time within the "
        "history (--days to --end)\n"
    )


def _c(name: str, refused: float, cost: float) -> Candidate:
    return Candidate(name, Spread(refused, refused, refused), Spread(cost, cost, cost))


def test_hold_judges_the_pick_by_its_own_rule_on_the_scored_minutes() -> None:
    stock = [_c(p, 100 + 10 * n, 50 - n) for n, p in enumerate(STOCK)]  # stock:30 least
    # the limit rule: stock:30's 100 plus the floor, 0.02 % of 1,000,000 units: 300
    held = hold(_c("autopilot:70", 300, 40), stock, Rule(), 1_000_000)
    assert (held.held, held.limit, held.best.policy, held.instead) == (True, 300, "stock:30", None)
    past = hold(_c("autopilot:70", 301, 40), stock, Rule(), 1_000_000)
    assert (past.held, past.instead) == (False, stock[-1])  # the cheapest within: stock:90
    # the price rule: held unless a stock setting scores better at the price
    priced = Rule(price=1_000.0)  # $0.001 a unit
    assert hold(_c("on-demand", 0, 44.1), stock, priced, 0).held  # stock:90: 44 + 0.16
    beaten = hold(_c("on-demand", 0, 44.2), stock, priced, 0)
    assert (beaten.held, beaten.limit, beaten.instead) == (False, None, stock[-1])
