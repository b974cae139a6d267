"""The one billing basis of provisioned capacity (`simulator.billing`): what each basis bills,
that every command takes and says it, and that tune's monthly figure for a policy is
reserve's on the same minutes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from ddb_capacity_tools.cli import main
from ddb_capacity_tools.simulator import ModelError, ModelParams, Prices, parse, simulate
from ddb_capacity_tools.simulator.billing import billed_hours, charged_above, unit_hours
from ddb_capacity_tools.simulator.trace import Trace


def test_a_level_held_ten_minutes_is_billed_the_whole_hour_by_its_highest_level() -> None:
    levels = [10] * 50 + [70] * 10 + [10] * 60
    assert billed_hours(levels, 0, "hourly-max") == ([70, 10], [1.0, 1.0])
    assert unit_hours(levels, 0, "hourly-max") == 80
    assert unit_hours(levels, 0, "per-minute") == pytest.approx((500 + 700 + 600) / 60)


def test_an_hour_the_minutes_hold_only_part_of_is_weighted_by_those_minutes() -> None:
    # the first level is at minute 45 of its clock hour: 15 minutes, then a whole hour
    units, weights = billed_hours([5] * 15 + [7] * 60, 45, "hourly-max")
    assert units == [5, 7] and weights == [0.25, 1.0]


def test_reserved_units_are_charged_by_each_hours_highest_total() -> None:
    # two keys peak in different minutes of one hour: their peaks add up, 120 above 100
    a, b = [60] * 30 + [10] * 30, [10] * 30 + [60] * 30
    assert charged_above([a, b], 100, 0, "hourly-max") == pytest.approx([10.0, 10.0])
    # by the minute, the total is 70 each minute: under the reservation, nothing charged
    assert charged_above([a, b], 100, 0, "per-minute") == [0.0, 0.0]


def _stepped() -> Trace:
    """Two hours, demand high in ten minutes of each."""
    demand = ([20.0] * 50 + [400.0] * 10) * 2
    return Trace("stepped", datetime(2024, 1, 1, tzinfo=UTC), {(None, "read"): demand})


def test_simulate_bills_each_clock_hour_at_its_highest_level_by_default() -> None:
    trace = _stepped()
    by = {
        basis: simulate(trace, [parse("fixed:300")], ModelParams(billing=basis), progress=None)
        for basis in ("hourly-max", "per-minute")
    }
    [hourly], [minute] = by["hourly-max"], by["per-minute"]
    # a fixed level is the same either way
    assert hourly.cost_usd == pytest.approx(minute.cost_usd)
    [oracle_h] = simulate(trace, [parse("oracle")], ModelParams(), progress=None)
    [oracle_m] = simulate(
        trace, [parse("oracle")], ModelParams(billing="per-minute"), progress=None
    )
    assert oracle_h.cost_usd > oracle_m.cost_usd


def test_a_bad_basis_is_refused_naming_the_field_the_value_and_the_bases() -> None:
    with pytest.raises(
        ModelError, match=r"billing: got 'hourly'; expected hourly-max .* per-minute"
    ):
        ModelParams(billing="hourly").validate()


@pytest.mark.parametrize("command", ["simulate", "tune", "reserve"])
def test_every_command_refuses_a_bad_billing_option(command: str, capsys: Any) -> None:
    where = ["--scenario", "diurnal"] if command == "simulate" else ["--trace", "missing.csv"]
    assert main([command, *where, "--billing", "weekly"]) != 0
    err = capsys.readouterr().err
    assert "--billing: got 'weekly'; expected hourly-max" in err


def test_simulate_says_its_basis_in_words_and_json(capsys: Any) -> None:
    args = ["simulate", "--scenario", "diurnal", "--policy", "stock:70", "--quiet"]
    assert main([*args, "--billing", "per-minute"]) == 0
    assert "Billing basis: per-minute" in capsys.readouterr().out
    assert main([*args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["billing_basis"] == "hourly-max"


def test_tunes_monthly_figure_for_a_policy_is_reserves_within_half_a_percent() -> None:
    from benchmarks import billing_granularity
    from ddb_capacity_tools.simulator.scenarios import diurnal

    rows = billing_granularity.tune_and_reserve(
        diurnal(1, days=2), ["stock:70", "autopilot:70"], Prices()
    )
    for policy, tuned, reserved in rows:
        assert abs(reserved / tuned - 1) <= billing_granularity.GOAL_PERCENT / 100, policy
