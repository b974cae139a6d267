"""A Database Savings Plan beside reserved capacity (`ddb_capacity_tools.savings_plan`): the
commitment's bill, its least found exactly against brute force, the hours' per-hour spend it
is planned on, and ``reserve``'s options, words and JSON for it."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddb_capacity_tools import reserve, reserve_sizing, savings_plan
from ddb_capacity_tools.cli import main
from ddb_capacity_tools.savings_plan import Hour
from ddb_capacity_tools.simulator.prices import Prices
from tests.support.hypothesis_profiles import examples
from tests.support.reserve import START, result, trace_of, write_trace

PRICES = Prices()


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_a_commitment_covers_the_deeper_discount_first_and_is_paid_used_or_not() -> None:
    # one hour: $10 on-demand (18 % off: $8.20 of commitment), $10 provisioned (12 % off)
    hour = [Hour(1.0, 10.0, 10.0)]
    assert savings_plan.bill(hour, 0.0, PRICES) == pytest.approx(20.0)
    # $8.20 covers the on-demand $10 whole
    assert savings_plan.bill(hour, 8.2, PRICES) == pytest.approx(8.2 + 10.0)
    # $8.20 + $8.80 covers both; more is paid and covers nothing
    assert savings_plan.bill(hour, 17.0, PRICES) == pytest.approx(17.0)
    assert savings_plan.bill(hour, 18.0, PRICES) == pytest.approx(18.0)
    # an hour that holds half its minutes pays half the commitment
    assert savings_plan.bill([Hour(0.5, 0.0, 0.0)], 4.0, PRICES) == pytest.approx(2.0)


def test_a_commitment_an_idle_hour_pays_for_must_save_more_in_the_busy_ones() -> None:
    # one hour of $10 on-demand, one of none: each dollar committed saves 22 cents in the
    # first and loses a dollar in the second, so none is committed
    assert savings_plan.best([Hour(1.0, 10.0, 0.0), Hour(1.0, 0.0, 0.0)], PRICES) == 0.0
    # ten busy hours to one idle: the busy hours' discounted spend is committed
    busy = [Hour(1.0, 10.0, 0.0)] * 10 + [Hour(1.0, 0.0, 0.0)]
    assert savings_plan.best(busy, PRICES) == pytest.approx(8.2)


def _breakpoints(spend: list[Hour], prices: Prices) -> list[float]:
    """Every commitment where an hour's bill changes slope, and 0."""
    od, pv = prices.savings_plan_on_demand_discount, prices.savings_plan_provisioned_discount
    out = [0.0]
    for h in spend:
        out += [h.on_demand * (1 - od), h.provisioned * (1 - pv)]
        out.append(h.on_demand * (1 - od) + h.provisioned * (1 - pv))
    return out


spends = st.lists(
    st.builds(
        Hour,
        st.sampled_from([1.0, 0.5, 1 / 60]),
        st.one_of(st.just(0.0), st.floats(0, 50)),
        st.one_of(st.just(0.0), st.floats(0, 50)),
    ),
    max_size=6,
)
discounts = st.sampled_from([0.0, 0.12, 0.18, 0.5, 0.9])


@settings(max_examples=examples(200), deadline=None)
@given(spends, discounts, discounts)
def test_the_commitment_found_costs_no_more_than_any_other(
    spend: list[Hour], on_demand: float, provisioned: float
) -> None:
    prices = Prices(
        savings_plan_on_demand_discount=on_demand, savings_plan_provisioned_discount=provisioned
    )
    found = savings_plan.best(spend, prices)
    billed = savings_plan.bill(spend, found, prices)
    # brute force: every breakpoint (where the least of a piecewise linear bill lies), and a
    # grid over the whole range besides
    top = max(_breakpoints(spend, prices))
    tried = _breakpoints(spend, prices) + [top * i / 400 for i in range(401)] + [top + 1]
    least = min(savings_plan.bill(spend, c, prices) for c in tried)
    assert billed <= least + 1e-9 * (1 + least)
    # and a cent less costs no less: the least commitment of that bill
    less = savings_plan.bill(spend, max(0.0, found - 0.01), prices)
    assert found == 0 or less >= billed - 1e-9 * (1 + billed)


def test_an_hours_on_demand_dollars_are_kept_hour_by_hour() -> None:
    # 00:30 to 02:29; the write index on-demand the first 40 minutes: 30 in hour 0, 10 in hour 1
    index = result("write", [0] * 40 + [300] * 80, served=[50.0] * 120)
    hours = reserve_sizing.hourly([index], trace_of(120), 0, 120, PRICES)
    assert hours.on_demand == pytest.approx(
        [PRICES.on_demand("write", 30 * 50.0), PRICES.on_demand("write", 10 * 50.0), 0.0]
    )
    assert sum(hours.on_demand or []) == pytest.approx(hours.other_usd)


def test_what_a_reservation_never_covers_stays_eligible_hour_by_hour() -> None:
    # a replica's writes leave the reservation; the Savings Plan still covers them, the hour
    # they were provisioned in
    run_ = reserve.Run("stock:90", reserve_sizing.Hours([0, 0], [1_000, 0], [1.0, 1.0]), None, 0.0)
    replica = reserve.replicated_writes(reserve.TableHours("carts", run_, run_), PRICES)
    other = reserve_sizing.Hours([0, 0], [0, 0], [1.0, 1.0], 2.0)  # on-demand, spread evenly
    hours = replica.listed.plan + other
    assert hours.write == [0, 0]
    on_demand, outside = hours.other_hourly()
    assert on_demand == pytest.approx([1.0, 1.0])
    assert outside == pytest.approx([1_000 * PRICES.wcu_hour, 0.0])
    spend = savings_plan.eligible(hours, {"write": 100}, "1y", PRICES)
    assert [h.provisioned for h in spend] == pytest.approx([1_000 * PRICES.wcu_hour, 0.0])
    assert sum(h.weight * (h.on_demand + h.provisioned) for h in spend) == pytest.approx(
        hours.other_usd
    )


def test_the_savings_plan_covers_what_the_reservation_leaves() -> None:
    # 1,000 units every hour, 600 reserved: the commitment covers the 400 left each hour
    steady = reserve_sizing.Hours([1_000] * 24, [0] * 24, [1.0] * 24)
    spend = savings_plan.eligible(steady, {"read": 600}, "1y", PRICES)
    assert [h.provisioned for h in spend] == pytest.approx([400 * PRICES.rcu_hour] * 24)
    hourly = savings_plan.commitment(steady, {"read": 600}, "1y", PRICES)
    assert hourly == pytest.approx(400 * PRICES.rcu_hour * 0.88)
    assert savings_plan.fleet_bill_with(steady, {"read": 600}, "1y", PRICES, hourly) < (
        reserve_sizing.fleet_bill(steady, {"read": 600}, "1y", PRICES)
    )


def on_demand_table(name: str, usd: list[float]) -> reserve.TableHours:
    zeros = [0] * len(usd)
    hours = reserve_sizing.Hours(zeros, zeros, [1.0] * len(usd), sum(usd), list(usd))
    listed = reserve.Run("on-demand", hours, hours, 0.0)
    return reserve.TableHours(name, listed, listed)


def test_the_plan_commits_beside_the_reservation_unless_told_not_to() -> None:
    table = on_demand_table("events", [3.0, 4.0, 5.0] * 8)
    plan = reserve.plan_fleet([table], ["1y"], reserve.Setup())
    assert plan.term is None and plan.savings_plan_hourly == pytest.approx(3.0 * 0.82)
    f = reserve.figures(plan)
    assert f["monthly_usd"]["with_plan"] < f["monthly_usd"]["reservation_only"]
    assert f["hindsight"]["savings_plan_hourly"] == pytest.approx(3.0 * 0.82)
    alone = reserve.plan_fleet([table], ["1y"], reserve.Setup(savings_plan=False))
    assert alone.savings_plan_hourly == 0.0
    f = reserve.figures(alone)
    assert f["monthly_usd"]["with_plan"] == f["monthly_usd"]["reservation_only"]


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    return write_trace(tmp_path_factory.mktemp("sp") / "events.csv", 2 * 1440, 400, START)


def test_json_holds_the_commitment_and_its_discounts(trace_file: str, tmp_path: Path) -> None:
    page = tmp_path / "plan.html"
    args = ["reserve", "--trace", trace_file, "--policy", "on-demand", "--json", "--quiet"]
    code, out, err = run(*args, "--score-from", "2026-01-06T00:30", "--html", str(page))
    assert code == 0, err
    doc = json.loads(out)
    assert doc["plan"]["savings_plan_hourly"] > 0
    assert doc["prices"]["savings_plan"]["on_demand_discount"] == 0.18
    assert doc["prices"]["savings_plan"]["provisioned_discount"] == 0.12
    assert doc["prices"]["savings_plan_verified"] is False
    assert doc["monthly_usd"]["with_plan"] < doc["monthly_usd"]["reservation_only"]
    assert doc["hindsight"]["monthly_usd"] <= doc["monthly_usd"]["with_plan"] + 0.01
    html = page.read_text()
    assert "Savings Plan, an hour" in html and "18% off on-demand throughput" in html
    code, out, _ = run(*args, "--no-savings-plan")
    assert json.loads(out)["plan"]["savings_plan_hourly"] == 0.0
    code, out, _ = run(*args, "--price", "savings_plan_on_demand_discount=0")
    assert json.loads(out)["plan"]["savings_plan_hourly"] == 0.0


def test_words_show_each_instruments_fees_and_which_prices_are_unverified(
    trace_file: str,
) -> None:
    args = ["reserve", "--trace", trace_file, "--policy", "on-demand", "--quiet"]
    _, out, _ = run(*args)
    assert "and a Database Savings Plan: commit $" in out
    assert "fees: reserved capacity per 100 units, 1y: $150.00 up front + $0.0128 an hour" in out
    assert "18% off on-demand throughput, 12% off provisioned capacity" in out
    assert "the reserved fees and the Savings Plan's discounts are UNVERIFIED" in out
    given = [f"--price=savings_plan_{k}_discount=0.1" for k in ("on_demand", "provisioned")]
    _, out, _ = run(*args, *given)
    assert "the reserved fees are UNVERIFIED" in out and "discounts are UNVERIFIED" not in out


@pytest.mark.parametrize("value", ["1", "1.5", "-0.1", "nan", "much"])
@pytest.mark.parametrize(
    "key", ["savings_plan_on_demand_discount", "savings_plan_provisioned_discount"]
)
def test_a_discount_outside_0_to_1_is_refused_naming_it(
    trace_file: str, key: str, value: str
) -> None:
    code, out, err = run("reserve", "--trace", trace_file, "--quiet", "--price", f"{key}={value}")
    assert code == 2 and not out
    assert (
        f"--price {key}: got {value!r}; expected a fraction from 0 up to but not including 1" in err
    )
    assert err.count("\n") == 1
