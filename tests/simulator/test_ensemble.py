"""The ensemble: every policy over a documented set of model settings, reported as minimum,
median and maximum in the text, the JSON and the chart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ddb_capacity_tools.simulator import ModelParams, parse, scenario, simulate
from ddb_capacity_tools.simulator.ensemble import (
    EnsembleError,
    run_ensemble,
    settings_of,
)
from tests.support.cli import run


def test_plausible_spans_the_documented_ranges() -> None:
    settings = settings_of("plausible", ModelParams())
    assert len(settings) == 8
    delays = {s.metric_delay_minutes + k for s in settings for k in (0, s.delay_spread_minutes)}
    updates = {s.update_minutes + k for s in settings for k in (0, s.update_spread_minutes)}
    assert min(delays) == 1 and max(delays) == 3
    assert min(updates) == 1 and max(updates) == 5
    assert {s.burst_fraction for s in settings} >= {0.0, 1.0}
    assert {s.retries for s in settings} >= {0, 2}
    assert {s.units_per_request for s in settings} >= {1.0, 2.0}
    # the command line's other fields are kept
    assert {s.max_capacity for s in settings_of("plausible", ModelParams(max_capacity=9_000))} == {
        9_000
    }


def test_min_median_max_summarize_the_runs_and_workers_do_not_change_them() -> None:
    trace = scenario("flash-crowd")
    specs = [parse("stock:70"), parse("throttle-aware+stock:70"), parse("oracle")]
    settings = settings_of("plausible", ModelParams())
    here = run_ensemble(trace, specs, settings, workers=1)
    pooled = run_ensemble(trace, specs, settings, workers=2)
    assert [r.as_json() for r in here] == [r.as_json() for r in pooled]
    for r in here:
        costs = sorted(x.cost_usd for x in r.runs)
        assert (r.cost_usd.min, r.cost_usd.max) == (costs[0], costs[-1])
        assert r.cost_usd.min <= r.cost_usd.median <= r.cost_usd.max
        assert len(r.runs) == 8
    # each run is the plain simulation under its setting
    stock_write = next(r for r in here if r.policy == "stock:70" and r.key[1] == "write")
    alone = simulate(trace, [parse("stock:70")], settings[5], progress=None)[1]
    assert stock_write.runs[5].throttled_requests == alone.throttled_requests
    # the settings differ where it matters: stock throttles more with no burst
    assert stock_write.throttled_requests.max > stock_write.throttled_requests.min


def test_the_cli_reports_the_ensemble_in_text_json_and_chart(tmp_path: Path) -> None:
    code, out, err = run(
        "simulate", "--scenario", "spike", "--policy", "stock:70", "--ensemble", "plausible"
    )
    assert code == 0, err
    assert "ensemble plausible: 8 model settings" in out
    line = next(x for x in out.splitlines() if x.startswith("stock:70") and " / " in x)
    assert line.count(" / ") == 4
    code, out, err = run(
        "simulate",
        "--scenario",
        "spike",
        "--policy",
        "stock:70",
        "--ensemble",
        "plausible",
        "--json",
        "--chart",
        str(tmp_path / "ensemble.png"),
    )
    assert code == 0, err
    doc = json.loads(out)
    assert len(doc["ensemble"]["settings"]) == 8
    (read, write) = doc["ensemble"]["policies"]
    assert write["throttled_requests"]["max"] >= write["throttled_requests"]["median"] > 0
    assert set(write["cost_usd"]) == {"min", "median", "max"}
    assert doc["policies"][1]["policy"] == "stock:70"  # the single run is still there
    assert (tmp_path / "ensemble.png").stat().st_size > 10_000


def test_an_unknown_ensemble_is_named() -> None:
    with pytest.raises(EnsembleError, match="--ensemble: got 'wild'; expected one of plausible"):
        settings_of("wild", ModelParams())
    code, _, err = run("simulate", "--scenario", "spike", "--ensemble", "wild")
    assert code == 2 and "--ensemble: got 'wild'" in err


def test_figure_3_is_reproduced_under_the_ensembles_fastest_cloudwatch() -> None:
    """The AWS post's 60 % run had no throttles; the model's defaults give one throttled
    minute, and the setting with CloudWatch at 1 minute gives none (docs: Simulator, "Fidelity")."""
    settings = settings_of("plausible", ModelParams())
    (_, write) = run_ensemble(scenario("spike"), [parse("stock:60")], settings, workers=1)
    assert write.throttled_requests.min == 0
    assert write.runs[0].throttled_requests == 0  # CloudWatch at 1 minute
    assert write.runs[1].throttled_minutes == 1  # the defaults
