"""Declared on-demand windows as a candidate (``windows:T``): the autopilot on stock at T,
on-demand at the same hours every day, learned once from the history before the scored
part, and pasted as ``add_on_demand_window`` calls."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ddb_capacity_tools.simulator import ModelParams, Prices, parse, run_policy
from ddb_capacity_tools.simulator.candidates import compared_only
from ddb_capacity_tools.simulator.hybrid import (
    DAY,
    SWITCH_MINUTES,
    best_of,
    compose,
    daily,
    fixed_hours,
    led,
    switched,
    windows_of,
)
from ddb_capacity_tools.simulator.model import Recorded
from ddb_capacity_tools.simulator.policies import DEFAULT_TICK_MINUTES
from ddb_capacity_tools.simulator.run import hybrid_base, learned_hours, recovery_minutes
from ddb_capacity_tools.simulator.scenarios import scenario
from ddb_capacity_tools.simulator.trace import Trace
from ddb_capacity_tools.simulator.tune_code import code_for
from ddb_capacity_tools.simulator.tune_runs import place, run_candidate
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


def _daily_spike(days: int = 7) -> Trace:
    """Reads at 100/s, writes at 50/s but 3,000/s from 12:00 to 12:20 UTC every day."""
    writes = [3000.0 if 720 <= m % DAY < 740 else 50.0 for m in range(days * DAY)]
    reads = [100.0] * len(writes)
    return Trace(
        "daily-spike",
        datetime(2026, 1, 5, tzinfo=UTC),
        {(None, "read"): reads, (None, "write"): writes},
    )


def test_the_windows_run_the_autopilot_on_stock_with_fixed_hours_learned_before_scoring() -> None:
    trace = _daily_spike()
    params, prices, split = ModelParams(), Prices(), 2 * DAY
    assert hybrid_base(parse("windows:60")).text == "autopilot+stock:60"
    out = run_policy(parse("windows:70"), trace, params, prices, score_from=split)
    base = run_policy(parse("autopilot+stock:70"), trace, params, prices, score_from=split)
    od = run_policy(parse("on-demand"), trace, params, prices, score_from=split)
    recovery = recovery_minutes(params, DEFAULT_TICK_MINUTES)
    hours = learned_hours(base, od, trace, prices, split, recovery, params.billing)
    assert all(r.hours == tuple(hours) for r in out)
    assert hours[12] and not all(hours)  # the spike's hour is on-demand
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
    trace = _daily_spike()
    path = _trace_file(tmp_path, trace)
    candidates = ("windows:70", "autopilot+stock:70", "autopilot:70")
    given = [a for c in candidates for a in ("--candidate", c)]
    code, out, err = run("tune", "--trace", str(path), "--json", *given)
    assert code == 0, err
    doc = json.loads(out)
    by = {c["policy"]: c for c in doc["candidates"]}
    windows = by["windows:70"]
    assert windows["compared_only"] is False
    assert windows["on_demand_windows"] == [{"start": "11:00", "hours": 2}]  # the spike's
    assert by["autopilot+stock:70"]["on_demand_windows"] is None
    # on-demand through the daily spike costs less than provisioning for it, refusing none
    for rival in candidates[1:] + ("on-demand",):
        assert windows["cost_usd"]["median"] < by[rival]["cost_usd"]["median"], rival
    assert windows["throttled_requests"]["median"] == 0
    assert doc["recommended"] == "windows:70"
    ast.parse(doc["code"])
    assert re.findall(r"add_on_demand_window\((.*)\)", doc["code"]) == [
        "'OnDemand1', start='10:55', duration=Duration.minutes(125), week_days=EVERY_DAY"
    ]


def test_a_picks_hours_are_run_again_as_they_were_not_learned_again() -> None:
    """``tune --score-from``, ``reserve`` and ``advise`` run a pick again on other minutes:
    its windows keep the pick's hours."""
    trace, params, prices = _daily_spike(), ModelParams(), Prices()
    picked = tuple(h == 3 for h in range(24))  # not what this traffic teaches
    [c] = place(trace, ["windows:70"], [params], prices, workers=1, learned={"windows:70": picked})
    assert c.hours == picked
    again = run_candidate(
        "windows:70", trace, params, prices, tick=2, score_from=None, hours=picked
    )
    assert again and all(r.hours == picked for r in again)
    learned = run_candidate("windows:70", trace, params, prices, tick=2, score_from=None)
    assert learned[0].hours != picked and learned[0].hours[12]


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
        + ["cron(7/15 * * * ? *)"]  # the check that ends a missed window
    )
    assert code_for(parse("windows:70"), trace, ModelParams()).endswith("no on-demand window\n")


def compared_only_policy(name: str) -> bool:
    from ddb_capacity_tools.simulator.candidates import Candidate
    from ddb_capacity_tools.simulator.ensemble import Spread

    zero = Spread.of([0.0])
    return compared_only(Candidate(name, zero, zero))


@pytest.mark.parametrize("name", ["hybrid:70", "windows:70"])
def test_neither_the_learned_nor_the_declared_windows_are_compared_only(name: str) -> None:
    assert compared_only_policy(name) is False


def _one_day(levels: list[int], demand: list[float]) -> Recorded:
    """A run of ``demand`` at ``levels`` (0 a minute: on-demand, serving it all)."""
    served = [min(d, float(p)) if p else d for d, p in zip(demand, levels, strict=True)]
    throttled = [d - s for d, s in zip(demand, served, strict=True)]
    return Recorded(list(demand), served, throttled, list(levels), [0.0] * len(demand))


def test_a_window_returns_the_table_at_its_level_of_the_switchs_start() -> None:
    # the autopilot raised from 100 to 1,000 at 02:00 for a burst; a window 01:00-02:00
    # suspends the targets from 00:55 and returns the table at 100, held 4 minutes
    levels = [1000 if 120 <= m < 180 else 100 for m in range(DAY)]
    demand = [900.0 if 120 <= m < 180 else 50.0 for m in range(DAY)]
    key = (None, "write")
    base, od = _one_day(levels, demand), _one_day([0] * DAY, demand)
    hours = [h == 1 for h in range(24)]
    out = compose({key: base}, {key: od}, Prices(), hours=hours, recovery=4)[key].recorded
    assert out.provisioned[55:60] == [100] * 5  # the switch's own minutes
    assert out.provisioned[60:120] == [0] * 60  # on-demand
    assert out.provisioned[120:124] == [100] * 4 and out.provisioned[124] == 1000
    assert out.throttled[120:124] == [800.0] * 4 and out.throttled[124] == 0.0
    # the same window without the hold: the table at the autopilot's level as the window ends
    assert compose({key: base}, {key: od}, Prices(), hours=hours)[key].recorded.throttled[120] == 0


def test_the_learned_windows_leave_out_one_that_refuses_or_costs_more_around_it() -> None:
    # the autopilot raises at 01:30 for a burst at 02:00: hour 1 is billed at 1,000 units,
    # which on-demand's few requests undercut
    levels = [1000 if 90 <= m % DAY < 180 else 100 for m in range(2 * DAY)]
    demand = [900.0 if 120 <= m % DAY < 180 else 50.0 for m in range(2 * DAY)]
    key = (None, "write")
    base, od = _one_day(levels, demand), _one_day([0] * 2 * DAY, demand)
    hour_1 = [h == 1 for h in range(24)]
    kept = best_of(hour_1, {key: base}, {key: od}, Prices(), 0, 2 * DAY, 4, "hourly-max")
    assert not any(kept)  # returned at 100 as the burst starts: it would refuse
    # were the table at the autopilot's level as soon as the window ends, it would save
    assert best_of(hour_1, {key: base}, {key: od}, Prices(), 0, 2 * DAY, 0, "hourly-max") == hour_1


def test_with_a_reservation_neither_the_hybrid_nor_the_windows_is_tried() -> None:
    from ddb_capacity_tools.simulator.candidates import CANDIDATES, tried

    assert {"hybrid:70", "windows:70"} <= set(tried(CANDIDATES, ModelParams()))
    reserved = tried(CANDIDATES, ModelParams(reserved_read_units=100))
    assert not {"hybrid:70", "windows:70"} & set(reserved)
    assert "on-demand" in reserved and "stock:30" in reserved


def test_a_part_of_an_hour_at_either_end_is_not_taken_for_the_hour() -> None:
    # the trace starts at 05:50; on-demand is a little dearer in hour 5 of the whole day
    # after, and free in the 10 minutes of hour 5 that start the trace: taken for an hour,
    # those minutes would make hour 5's median saving positive
    start, minutes = 5 * 60 + 50, 2 * DAY - (5 * 60 + 50)
    paid = [2.0] * minutes
    charged = [2.1 if (start + m) // 60 % 24 == 5 else 3.0 for m in range(minutes)]
    charged[:10] = [0.0] * 10
    assert not any(fixed_hours(paid, charged, offset=start))
    # the same free minutes in a whole hour do count
    day_1_05 = DAY + 5 * 60 - start
    charged[:10], charged[day_1_05 : day_1_05 + 60] = [2.1] * 10, [0.0] * 60
    assert fixed_hours(paid, charged, offset=start)[5]


def test_the_windows_refusal_slack_is_the_rules_floor() -> None:
    from ddb_capacity_tools.simulator.candidates import REFUSAL_FLOOR
    from ddb_capacity_tools.simulator.hybrid import REFUSAL_SLACK

    assert REFUSAL_SLACK == REFUSAL_FLOOR
