"""The scaler's running cost: the docs' figures are computed from ``monthly_scaler_cost``, its
assumptions are the construct's and the tick's, and tune, advise and reserve charge it to the
policies that run the scaler, and to no other."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from aws_cdk import Stack

from constructs_pkg import ThrottleAwareScaler
from constructs_pkg.common._alarm_summary import MAX_METRICS
from constructs_pkg.scaler._scaler import MEMORY_MB as SCALER_MEMORY_MB
from ddb_capacity_runtime.aws.metrics import queries
from ddb_capacity_runtime.core.settings import DEFAULT_TICK_MINUTES
from ddb_capacity_tools import reserve
from ddb_capacity_tools.simulator import run
from ddb_capacity_tools.simulator.candidates import MONTH_MINUTES, scaled
from ddb_capacity_tools.simulator.ensemble import settings_of
from ddb_capacity_tools.simulator.params import ModelParams
from ddb_capacity_tools.simulator.policies import ThrottleAware, parse
from ddb_capacity_tools.simulator.prices import Prices
from ddb_capacity_tools.simulator.scaler_cost import (
    CHECKS_PER_ALARM,
    MEMORY_MB,
    QUERIES_PER_DIMENSION,
    TABLE_METRICS,
    TICK_MINUTES,
    monthly_fixed_cost,
    monthly_scaler_cost,
    throttle_reads,
)
from ddb_capacity_tools.simulator.scenarios import SCENARIOS, scenario
from ddb_capacity_tools.simulator.tune import tune
from ddb_capacity_tools.simulator.tune_runs import place, scaler_dollars
from ddb_capacity_tools.simulator.tune_words import _rows, terms
from tests.support.alarm_style import summary_app
from tests.support.scaler_construct import feed
from tests.support.shape import ROOT

DOCS = ROOT / "docs" / "guides"


def flat(text: str) -> str:
    return " ".join(text.split())


def test_the_documented_costs_are_computed() -> None:
    scaler = flat((DOCS / "scaler.md").read_text())
    tune = flat((DOCS / "tune.md").read_text())
    for dims, label in (
        (2, "A table without GSIs (2 dimensions)"),
        (4, "with one GSI (4 dimensions)"),
    ):
        c = monthly_scaler_cost(dims)
        parts = f"${c.metrics:.2f}, ${c.reads:.2f}, ${c.alarms:.2f} and ${c.invocations:.2f}"
        assert f"{label}: {parts}, **${c.total:.2f} a month**" in scaler
    assert f"the {TABLE_METRICS} metrics of a steady table's record" in scaler
    assert f"**${monthly_fixed_cost():.2f} a month** (`monthly_fixed_cost`)" in scaler
    two, four = monthly_scaler_cost(2).total, monthly_scaler_cost(4).total
    assert f"about ${two:.2f} a month for a table without GSIs and ${four:.2f} with one" in tune
    alone = monthly_scaler_cost(2, table=False).total
    assert f"its two `SustainedThrottling` alarms, about ${alone:.2f} a month in autopilot" in tune
    overview = flat((DOCS.parent / "overview.md").read_text())
    assert (
        f"the scaler costs ${two:.2f} a month for a table without GSIs and ${four:.2f} for one "
        "with a GSI" in overview
    )
    simulator = flat((DOCS / "simulator.md").read_text())
    assert (
        f"about ${two:.2f} a month more for a table without GSIs (${four:.2f} with one)"
        in simulator
    )


def test_the_cost_assumes_the_scalers_memory_tick_and_reads() -> None:
    assert MEMORY_MB == SCALER_MEMORY_MB
    assert TICK_MINUTES == DEFAULT_TICK_MINUTES
    assert len(queries([("orders", None, "read")], ("consumed",))) == QUERIES_PER_DIMENSION


def test_the_share_of_ticks_reading_throttles_is_what_the_simulated_scaler_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN the simulator's scenarios under the scaler's policies, at the default tick (each
    # run's policy kept: `run.build`'s own, as it made it)
    made: list[ThrottleAware] = []

    def build(*args: Any, **kwargs: Any) -> Any:
        policy = real_build(*args, **kwargs)
        assert isinstance(policy, ThrottleAware)
        made.append(policy)
        return policy

    real_build = run.build
    monkeypatch.setattr(run, "build", build)
    policies = ("throttle-aware", "autopilot", "autopilot+stock:70", "throttle-aware+stock:70")
    for name in SCENARIOS:
        for text in policies:
            run.run_policy(parse(text), scenario(name), ModelParams(), Prices(), tick=TICK_MINUTES)
    read = sum(p.throttle_reads[0] for p in made)
    ticks = sum(p.throttle_reads[1] for p in made)
    assert len(made) == len(SCENARIOS) * len(policies) and ticks > 0
    # THEN the throttle events a dimension's tick reads are what the cost charges, within 1 %
    # of the ticks (the periodic tick's, and the due share of the others')
    assert read / ticks >= 1 / 4
    assert read / ticks == pytest.approx(throttle_reads(), abs=0.01)
    with pytest.raises(ValueError, match=r"due: got 1.5; the share of ticks must be from 0 to 1"):
        monthly_scaler_cost(2, due=1.5)


def test_the_alarms_charged_are_the_share_of_an_alarm_a_managed_tables_checks_take() -> None:
    # GIVEN a table with a GSI (4 dimensions) under a scaler, with the default summary alarms
    stack = Stack(summary_app(), "Shop")
    scaler = ThrottleAwareScaler(stack, "Scaler")
    feed(stack).enable_throttle_aware_scaling(scaler)
    # THEN the table's checks, one per dimension and one for a hot key, share one alarm,
    # and the cost charges that share of it
    per_table = [k for k in scaler.alarms if k.startswith(("SustainedThrottling/", "HotKey/"))]
    assert len(per_table) == 5
    assert len({id(scaler.alarms[k]) for k in per_table}) == 1
    assert CHECKS_PER_ALARM == MAX_METRICS
    share = 5 / CHECKS_PER_ALARM * Prices().alarm_month
    assert monthly_scaler_cost(4).alarms == pytest.approx(share)


def test_each_part_follows_the_mode_the_tick_and_the_prices() -> None:
    auto, reactive = monthly_scaler_cost(2), monthly_scaler_cost(2, autopilot=False)
    # reactive mode: no history read (and no metric either way: ForecastsOn is logged)
    assert auto.metrics == reactive.metrics == 0
    assert auto.reads - reactive.reads == pytest.approx(2 * 730 / 1_000 * 0.01)
    # a tick every minute: twice the tick's reads and invocations
    fast = monthly_scaler_cost(2, autopilot=False, tick_minutes=1)
    assert fast.reads == pytest.approx(2 * reactive.reads)
    assert fast.invocations == pytest.approx(2 * reactive.invocations)
    dear = monthly_scaler_cost(2, prices=Prices(custom_metric_month=0.60, alarm_month=0.20))
    assert dear.alarms == pytest.approx(2 * auto.alarms)
    for bad in ({"dimensions": 0}, {"dimensions": 2, "tick_minutes": 0}):
        with pytest.raises(ValueError, match="must be 1 or more"):
            monthly_scaler_cost(**bad)  # type: ignore[arg-type]


def test_the_policies_that_run_the_scaler_pay_for_it_and_no_other() -> None:
    trace = scenario("flash-crowd")
    minutes = trace.minutes - 120
    dims = len(trace.demand)
    names = ["stock:70", "on-demand", "autopilot+stock:70", "throttle-aware", "hybrid:70"]
    settings = settings_of("plausible", ModelParams(), trace)[:1]
    placed = {c.policy: c for c in place(trace, names, settings, None, 5, 1, score_from=120)}
    assert placed["stock:70"].running_usd == placed["on-demand"].running_usd == 0
    for name, autopilot in (("autopilot+stock:70", True), ("throttle-aware", False)):
        monthly = monthly_scaler_cost(dims, autopilot=autopilot, tick_minutes=5).total
        assert placed[name].running_usd == pytest.approx(monthly * minutes / MONTH_MINUTES)
        assert scaler_dollars(name, trace, minutes, Prices(), 5) == placed[name].running_usd
    assert placed["hybrid:70"].running_usd == placed["autopilot+stock:70"].running_usd
    # scaled to a month, the running cost is a month's
    month = scaled(placed["throttle-aware"], MONTH_MINUTES / minutes)
    assert month.running_usd == pytest.approx(
        monthly_scaler_cost(dims, autopilot=False, tick_minutes=5).total
    )


def test_a_reservation_discounts_the_capacity_and_not_the_functions() -> None:
    trace = scenario("flash-crowd")
    settings = settings_of("plausible", ModelParams(), trace)[:1]
    [c] = place(trace, ["autopilot+stock:70"], settings, None, 2, 1)
    capacity = c.cost - c.running_usd
    assert c.running_usd > 0
    assert reserve._at_rate(c, 0.5).cost == pytest.approx(capacity * 0.5 + c.running_usd)


def test_tune_shows_a_months_running_cost_and_says_what_it_is() -> None:
    trace = scenario("flash-crowd")
    settings = settings_of("plausible", ModelParams(), trace)[:1]
    tuning = tune(trace, settings, ["autopilot+stock:70"], workers=1)
    header, *rows = _rows(tuning, "a month")
    assert header[-1] == "of which functions $"
    shown = {r[0].split(" ")[0]: r[-1] for r in rows}
    monthly = monthly_scaler_cost(len(trace.demand)).total
    assert shown.pop("autopilot+stock:70") == f"{monthly:,.2f}"
    assert set(shown.values()) == {""}  # the stock settings and on-demand run nothing
    assert any(line.startswith("- functions: the scaler's running cost") for line in terms(tuning))


def test_a_table_class_is_weighed_on_the_tables_throughput_without_the_functions() -> None:
    # GIVEN the nightly batch, where every stock target refuses and the autopilot is picked
    trace = scenario("nightly-batch")
    settings = settings_of("plausible", ModelParams(), trace)[:1]
    tuning = tune(trace, settings, ["autopilot+stock:90"], workers=1, size_gb=100)
    pick = tuning.recommended
    assert pick.policy == "autopilot+stock:90" and pick.running_usd > 0
    assert tuning.table_class is not None
    throughput = pick.cost - pick.running_usd  # Standard-IA's 25 % more is on this alone
    assert tuning.table_class.standard.throughput_usd == pytest.approx(throughput)
    assert tuning.table_class.infrequent.throughput_usd == pytest.approx(1.25 * throughput)


def test_a_trace_of_one_dimension_pays_for_both_which_the_scaler_reads() -> None:
    trace = scenario("flash-crowd")
    reads = replace(trace, demand={k: v for k, v in trace.demand.items() if k[1] == "read"})
    month = MONTH_MINUTES
    both = monthly_scaler_cost(2, tick_minutes=2).total
    assert scaler_dollars("autopilot+stock:70", reads, month, Prices(), 2) == pytest.approx(both)
    assert scaler_dollars("autopilot+stock:70", trace, month, Prices(), 2) == pytest.approx(both)


def test_a_gsi_advised_alone_is_charged_what_the_scaler_adds_for_it() -> None:
    # GIVEN the trace of one GSI without its table (advise --table T --index G)
    trace = scenario("flash-crowd")
    gsi = replace(trace, demand={("byCustomer", d): v for (_, d), v in trace.demand.items()})
    month = MONTH_MINUTES
    # THEN it pays what a GSI adds to its table's cost: its reads and its two alarms, not the
    # table's record metrics, HotKey alarm and invocations
    added = (
        monthly_scaler_cost(4, tick_minutes=2).total - monthly_scaler_cost(2, tick_minutes=2).total
    )
    charged = scaler_dollars("autopilot+stock:70", gsi, month, Prices(), 2)
    assert charged == pytest.approx(added)
    alone = monthly_scaler_cost(2, tick_minutes=2, table=False)
    assert (alone.metrics, alone.invocations) == (0, 0)
    assert alone.alarms == pytest.approx(2 / CHECKS_PER_ALARM * Prices().alarm_month)
    # its dimensions' reads: what two more dimensions add to a table's (not the state
    # store's read, which is the table's)
    two_more = monthly_scaler_cost(4, tick_minutes=2).reads - monthly_scaler_cost(2).reads
    assert alone.reads == pytest.approx(two_more)
    # AND a table with that GSI pays the whole of its cost, as before
    both = replace(trace, demand={**trace.demand, **gsi.demand})
    whole = monthly_scaler_cost(4, tick_minutes=2).total
    assert scaler_dollars("autopilot+stock:70", both, month, Prices(), 2) == pytest.approx(whole)
