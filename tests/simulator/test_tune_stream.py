"""``tune``'s default candidates include the winners: ``autopilot+stock:90``, and the
library's policies with the table's own stream as a write signal (``+stream``), priced with
the stream reader's own cost; the answer says the stream sees writes only. Pre-warming is
priced as an hour provisioned at the marks unless the warm-throughput prices are given."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import pytest

from ddb_capacity_tools.cli import main
from ddb_capacity_tools.simulator import ModelParams, Prices, parse, scenario, simulate
from ddb_capacity_tools.simulator.candidates import (
    CANDIDATES,
    MONTH_MINUTES,
    PREWARM,
    STREAM,
    STREAM_SECONDS,
    spec_of,
    split_prewarm,
    streamed,
    suffixes,
)
from ddb_capacity_tools.simulator.ensemble import settings_of
from ddb_capacity_tools.simulator.stream_cost import monthly_stream_cost
from ddb_capacity_tools.simulator.tune import tune
from ddb_capacity_tools.simulator.tune_runs import (
    place,
    prewarm_charge,
    scaler_dollars,
    stream_dollars,
)


def test_the_defaults_hold_the_winners() -> None:
    assert "autopilot+stock:90" in CANDIDATES
    assert {"autopilot+stock:80+stream", "autopilot+stock:90+stream"} <= set(CANDIDATES)


def test_the_suffixes_come_in_any_order_and_name_the_policy_they_follow() -> None:
    for name in ("autopilot+stock:90+prewarm+stream", "autopilot+stock:90+stream+prewarm"):
        assert suffixes(name) == ("autopilot+stock:90", frozenset({PREWARM, STREAM}))
        assert split_prewarm(name) == ("autopilot+stock:90", True) and streamed(name)
        assert spec_of(name).text == "autopilot+stock:90"
    assert suffixes("autopilot:70") == ("autopilot:70", frozenset())
    assert not streamed("autopilot+stock:90+prewarm")


def test_a_stream_candidate_pays_for_its_reader_over_the_minutes_it_is_scored() -> None:
    trace = scenario("flash-crowd")
    writes = trace.demand[(None, "write")]
    monthly = monthly_stream_cost(sum(writes) / len(writes)).total
    assert stream_dollars("autopilot+stock:90+stream", trace, 180, Prices()) == pytest.approx(
        monthly * 180 / MONTH_MINUTES
    )
    assert stream_dollars("autopilot+stock:90", trace, 180, Prices()) == 0.0


def test_a_stream_candidate_runs_with_the_stream_and_its_cost_added() -> None:
    trace = scenario("flash-crowd")
    settings = settings_of("plausible", ModelParams(), trace)[:1]
    [placed] = place(trace, ["autopilot+stock:80+stream"], settings, None, 5, 1, score_from=120)
    # the same policy simulated with the stream, by hand
    streaming = replace(settings[0], stream_seconds=STREAM_SECONDS)
    runs = simulate(
        trace, [parse("autopilot+stock:80")], streaming, Prices(), tick=5, score_from=120
    )
    extra = stream_dollars(placed.policy, trace, trace.minutes - 120, Prices())
    # and the scaler's, which the autopilot runs, at the tick it was simulated with
    scaler = scaler_dollars(placed.policy, trace, trace.minutes - 120, Prices(), 5)
    assert extra > 0 and scaler > 0
    assert placed.cost == pytest.approx(sum(r.cost_usd for r in runs) + extra + scaler)
    assert placed.running_usd == pytest.approx(extra + scaler)
    assert placed.refused == pytest.approx(sum(r.throttled_requests for r in runs))
    # and the stream changed what it refused: the flash crowd's writes surge from it
    plain = simulate(
        trace, [parse("autopilot+stock:80")], settings[0], Prices(), tick=5, score_from=120
    )
    assert placed.refused < sum(r.throttled_requests for r in plain)


def test_given_signals_leave_the_stream_candidates_out() -> None:
    trace = scenario("flash-crowd")
    base = replace(ModelParams(), stream_seconds=5)
    tuning = tune(trace, settings_of("plausible", base, trace)[:1], workers=1)
    shown = [c.policy for c in tuning.candidates]
    assert "autopilot+stock:90" in shown and not any(streamed(p) for p in shown)


def _csv(tmp_path: Path) -> Path:
    """The flash-crowd scenario as a trace file."""
    trace = scenario("flash-crowd")
    rows = ["timestamp,read,write"]
    reads, writes = trace.demand[(None, "read")], trace.demand[(None, "write")]
    for m in range(trace.minutes):
        rows.append(f"{trace.time(m).isoformat()},{reads[m]:.1f},{writes[m]:.1f}")
    path = tmp_path / "flash.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_tune_says_the_stream_sees_writes_only(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    args = ["tune", "--trace", str(_csv(tmp_path)), "--quiet", "--workers", "1"]
    code = main([*args, "--candidate", "autopilot+stock:90+stream"], out, err)
    assert code == 0, err.getvalue()
    text = " ".join(out.getvalue().split())
    assert "The stream sees writes only: reads need the client hook" in text
    assert "the stream reader's own cost" in text


def test_the_code_of_a_stream_recommendation_deploys_the_stream_reader() -> None:
    from ddb_capacity_tools.simulator.tune_code import code_for

    trace = scenario("flash-crowd")
    pasted = code_for(spec_of("autopilot+stock:90"), trace, ModelParams(), extras=("stream",))
    assert "fast_path=FastPath(stream=True)" in pasted
    assert "it sees writes only, reads need the hook" in pasted
    assert "FastPath(" not in code_for(spec_of("autopilot+stock:90"), trace, ModelParams())


@pytest.mark.parametrize("name", ["stock:70+stream", "on-demand+stream", "hybrid:70+stream"])
def test_the_stream_is_refused_for_policies_that_see_no_signal(tmp_path: Path, name: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = main(["tune", "--trace", str(_csv(tmp_path)), "--candidate", name], out, err)
    assert code == 2
    message = err.getvalue()
    assert "--candidate" in message and repr(name) in message and "+stream" in message


def test_pre_warming_is_priced_as_an_hour_at_the_marks_or_by_warm_throughput() -> None:
    prices = Prices()
    hour = 400 * prices.unit_hour("read") + 100 * prices.unit_hour("write")
    charge, way = prewarm_charge(400, 100, prices)
    assert charge == pytest.approx(hour) and way == "PROVISION_THEN_SETTLE"
    warm = Prices(warm_read_unit=0.001, warm_write_unit=0.005)
    charge, way = prewarm_charge(400, 100, warm)
    assert charge == pytest.approx(0.9) and way == "WARM_THROUGHPUT"
