"""Declared on-demand windows as a candidate (``windows:T``): the autopilot on stock at T,
on-demand at the same hours every day, learned once from the history before the scored
part, and pasted as ``add_on_demand_window`` calls."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from ddb_capacity_tools.simulator import ModelParams, Prices, parse, run_policy
from ddb_capacity_tools.simulator.candidates import compared_only
from ddb_capacity_tools.simulator.hybrid import (
    DAY,
    SWITCH_MINUTES,
    daily,
    fixed_hours,
    led,
    switched,
    windows_of,
)
from ddb_capacity_tools.simulator.run import hybrid_base, learned_hours
from ddb_capacity_tools.simulator.scenarios import scenario
from ddb_capacity_tools.simulator.trace import Trace
from ddb_capacity_tools.simulator.tune_code import code_for
from tests.support.cli import run
from tests.support.pasted import synthesized_stack


def _costs(cheap_by_day: list[set[int]]) -> tuple[list[float], list[float]]:
    """Per minute: provisioned pays 2; on-demand charges 1 in the day's cheap hours, 3
    elsewhere."""
    paid, charged = [], []
    for cheap in cheap_by_day:
        for m in range(DAY):
            paid.append(2.0)
            charged.append(1.0 if m // 60 in cheap else 3.0)
    return paid, charged


def test_the_hours_are_learned_from_the_minutes_before_the_scored_part_only() -> None:
    paid, charged = _costs([{10}, {10}, {10}, {15}, {15}, {15}, {15}])
    hours = fixed_hours(paid, charged, until=3 * DAY)
    assert [h for h in range(24) if hours[h]] == [10]
    # over every day, hour 15 is cheap on 4 of 7: its median saves; hour 10's does not
    assert [h for h in range(24) if fixed_hours(paid, charged)[h]] == [15]


def test_a_window_lasts_under_a_day_even_when_every_hour_saves() -> None:
    paid, charged = _costs([set(range(24))] * 2)
    charged[7 * 60 : 8 * 60] = [1.5] * 60  # hour 7 saves least
    hours = fixed_hours(paid, charged)
    assert hours.count(False) == 1 and not hours[7]
    assert windows_of(hours) == [(8, 23)]  # one window, through midnight


def test_windows_are_runs_of_hours_and_a_run_through_midnight_is_one() -> None:
    hours = [h in {22, 23, 0, 1, 5, 6} for h in range(24)]
    assert windows_of(hours) == [(5, 2), (22, 4)]
    assert windows_of([False] * 24) == []


def test_each_switch_starts_early_and_keeps_its_own_minutes_provisioned() -> None:
    mask = daily([h == 1 for h in range(24)], offset=30, minutes=DAY)
    assert mask[30:90] == [True] * 60 and not mask[29] and not mask[90]
    asked = led(mask)
    assert asked[30 - SWITCH_MINUTES : 90] == [True] * (60 + SWITCH_MINUTES)
    assert sum(asked) == 60 + SWITCH_MINUTES
    assert switched(asked) == mask  # on-demand exactly on the hour
    served = switched(mask)  # a switch started on the hour loses its first minutes
    assert served[30 : 30 + SWITCH_MINUTES] == [False] * SWITCH_MINUTES
    assert sum(served) == 60 - SWITCH_MINUTES
    assert led([True, True, False]) == [True, True, False]  # nothing before the first minute


def test_the_windows_run_the_autopilot_on_stock_with_fixed_hours_learned_before_scoring() -> None:
    trace = scenario("nightly-batch")
    params, prices, split = ModelParams(), Prices(), 3 * DAY
    assert hybrid_base(parse("windows:60")).text == "autopilot+stock:60"
    out = run_policy(parse("windows:70"), trace, params, prices, score_from=split)
    base = run_policy(parse("autopilot+stock:70"), trace, params, prices, score_from=split)
    od = run_policy(parse("on-demand"), trace, params, prices, score_from=split)
    hours = learned_hours(base, od, trace, prices, split)
    assert all(r.hours == tuple(hours) for r in out)
    assert any(hours) and not all(hours)
    expected = daily(hours, 0, trace.minutes)  # the switches start early: on the hour
    for r in out:
        on_demand = [p == 0 for p in r.recorded.provisioned]
        assert on_demand == expected
    # the traffic after the split moves no hour: the batch moved to 14:00 there is not learned
    moved = {
        k: v[:split] + [v[split + (m - 12 * 60) % DAY] for m in range(len(v) - split)]
        for k, v in trace.demand.items()
    }
    later = run_policy(
        parse("windows:70"), replace(trace, demand=moved), params, prices, score_from=split
    )
    assert all(r.hours == tuple(hours) for r in later)


def _trace_file(tmp_path: Path, trace: Trace) -> Path:
    path = tmp_path / "batch.csv"
    rows = ["timestamp,read,write"]
    for m in range(trace.minutes):
        read, write = trace.demand[(None, "read")][m], trace.demand[(None, "write")][m]
        rows.append(f"{trace.time(m).isoformat()},{read:.1f},{write:.1f}")
    path.write_text("\n".join(rows) + "\n")
    return path


def test_tune_offers_the_windows_as_a_deployable_candidate_with_code(tmp_path: Path) -> None:
    trace = scenario("nightly-batch")
    path = _trace_file(tmp_path, trace)
    args = ("tune", "--trace", str(path), "--score-from", f"{trace.time(3 * DAY):%Y-%m-%dT%H:%MZ}")
    code, out, err = run(
        *args, "--candidate", "windows:70", "--candidate", "autopilot+stock:70", "--json"
    )
    assert code == 0, err
    doc = json.loads(out)
    [windows] = [c for c in doc["candidates"] if c["policy"] == "windows:70"]
    assert windows["compared_only"] is False
    declared = windows["on_demand_windows"]
    assert declared and all(w["start"].endswith(":00") for w in declared)
    [stock] = [c for c in doc["candidates"] if c["policy"] == "autopilot+stock:70"]
    assert stock["on_demand_windows"] is None
    # on-demand after the batch, while stock keeps its capacity, costs less, refusing no more
    assert windows["cost_usd"]["median"] < stock["cost_usd"]["median"]
    assert windows["throttled_requests"]["median"] <= stock["throttled_requests"]["median"]
    assert doc["recommended"] == "windows:70"
    ast.parse(doc["code"])
    pasted = re.findall(r"add_on_demand_window\((.*)\)", doc["code"])
    assert len(pasted) == len(declared)
    for n, (call, w) in enumerate(zip(pasted, declared, strict=True), 1):
        hour = int(w["start"][:2])
        start = (hour * 60 - SWITCH_MINUTES) % DAY
        assert call == (
            f"'OnDemand{n}', start='{start // 60:02d}:{start % 60:02d}', "
            f"duration=Duration.minutes({w['hours'] * 60 + SWITCH_MINUTES}), week_days=EVERY_DAY"
        )


def test_the_windows_pasted_code_deploys_the_switch() -> None:
    trace = scenario("diurnal")
    hours = tuple(h in {2, 3, 22} for h in range(24))
    code = code_for(parse("windows:70"), trace, ModelParams(), hours=hours)
    assert not compared_only_policy("windows:70")
    template = synthesized_stack(code)
    schedules = template.find_resources("AWS::Scheduler::Schedule")
    expressions = sorted(s["Properties"]["ScheduleExpression"] for s in schedules.values())
    days = "SUN,MON,TUE,WED,THU,FRI,SAT"
    assert expressions == sorted(
        [f"cron({m} {h} ? * {days} *)" for m, h in ((55, 1), (0, 4), (55, 21), (0, 23))]
        + ["rate(15 minutes)"]  # the check that ends a missed window
    )
    assert code_for(parse("windows:70"), trace, ModelParams()).endswith("no on-demand window\n")


def compared_only_policy(name: str) -> bool:
    from ddb_capacity_tools.simulator.candidates import Candidate
    from ddb_capacity_tools.simulator.ensemble import Spread

    zero = Spread.of([0.0])
    return compared_only(Candidate(name, zero, zero))


@pytest.mark.parametrize("name", ["hybrid:70", "windows:70"])
def test_only_the_learned_hybrid_is_compared_only(name: str) -> None:
    assert compared_only_policy(name) is (name == "hybrid:70")
