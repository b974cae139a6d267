"""The fast path's rule (``core.surge.surge_level``) and the simulator's fast path: a change
that lands inside a minute, surges that only the library's policies make, sized from the
reports (and the share they tell while throttled), never for key-range throttles, held
for a few minutes under a scalable target, and the ensemble's spread."""

from __future__ import annotations

import io
import math
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ddb_capacity_runtime.core.surge import (
    DEFAULT_SURGE_MINUTES,
    MIN_SEEN_SHARE,
    SURGE_LIFETIME_MINUTES,
    Combined,
    surge_level,
)
from ddb_capacity_tools.cli import main
from ddb_capacity_tools.simulator import ModelError, ModelParams, Prices, parse, scenario
from ddb_capacity_tools.simulator.ensemble import settings_of
from ddb_capacity_tools.simulator.fast_path_model import FastPath, Source
from ddb_capacity_tools.simulator.model import SimulatedTable
from ddb_capacity_tools.simulator.run import run_policy
from ddb_capacity_tools.simulator.scenarios import START
from ddb_capacity_tools.simulator.trace import Trace
from tests.support.fast_path_sim import WRITE, _surges


def _step(before: float, after: float, at: int = 30, minutes: int = 90) -> Trace:
    """Writes at ``before`` units/s, then ``after`` from minute ``at`` on."""
    demand = [before] * at + [after] * (minutes - at)
    return Trace("step", START, {WRITE: demand})


def _run(policy: str, trace: Trace, **model: object) -> tuple[float, float]:
    params = ModelParams(warmup_minutes=30, **model).validate()  # type: ignore[arg-type]
    (r,) = run_policy(parse(policy), trace, params, Prices())
    return r.throttled_requests, r.cost_usd


# ---------------------------------------------------------------- the rule


def test_no_surge_below_the_provisioned_capacity_and_one_at_it() -> None:
    assert surge_level(Combined(demand=999.0), 1000, 0.7, 40_000) is None
    assert surge_level(Combined(demand=1000.0), 1000, 0.7, 40_000) == math.ceil(1000 / 0.7)
    assert surge_level(Combined(demand=2800.0), 1000, 0.7, 40_000) == 4000


def test_key_range_throttles_alone_never_make_a_surge() -> None:
    hot = Combined(demand=500.0, throttled=0.0, key_range=5_000.0, consumed=500.0)
    assert surge_level(hot, 1000, 0.7, 40_000) is None


def test_provisioned_throttles_make_a_surge_sized_by_the_share_they_tell() -> None:
    # half the traffic reports: at 1,000 provisioned (all served, bucket empty) the
    # reports consumed 500 and were refused 700 more: the demand is 2,400
    seen = Combined(demand=1200.0, throttled=700.0, consumed=500.0)
    assert surge_level(seen, 1000, 0.7, 40_000) == math.ceil(2400 / 0.7)
    # told the share, the same
    assert surge_level(seen, 1000, 0.7, 40_000, share=0.5) == math.ceil(2400 / 0.7)


def test_a_share_seen_very_low_counts_as_the_least_one() -> None:
    # the reports consumed 50 of the 1,000 served: a share of 0.05, taken as 0.1
    low = Combined(demand=500.0, throttled=450.0, consumed=50.0)
    assert surge_level(low, 1000, 1.0, 40_000) == math.ceil(500 / MIN_SEEN_SHARE)


def test_the_cap_and_the_maximum_bound_a_surge() -> None:
    huge = Combined(demand=1e9)
    assert surge_level(huge, 1000, 0.7, 40_000) == 40_000
    assert surge_level(huge, 1000, 0.7, 40_000, cap=500) == 1500
    assert surge_level(huge, 40_000, 0.7, 40_000) is None  # at the maximum already


@pytest.mark.parametrize("share", [0.0, -0.5, 1.5, math.nan])
def test_a_share_out_of_range_is_refused(share: float) -> None:
    with pytest.raises(ValueError, match="share: got"):
        surge_level(Combined(demand=1.0), 1, 0.7, 10, share=share)


@given(
    demand=st.floats(0, 1e7),
    throttled=st.floats(0, 1e6),
    consumed=st.floats(0, 1e7),
    key_range=st.floats(0, 1e7),
    provisioned=st.integers(1, 40_000),
    target=st.floats(0.2, 0.9),
    cap=st.none() | st.integers(1, 100_000),
)
def test_a_surge_only_ever_raises_within_its_bounds(
    demand: float,
    throttled: float,
    consumed: float,
    key_range: float,
    provisioned: int,
    target: float,
    cap: int | None,
) -> None:
    seen = Combined(demand, throttled, key_range, 1, consumed)
    level = surge_level(seen, provisioned, target, 40_000, cap=cap)
    if level is not None:
        assert provisioned < level <= 40_000
        assert cap is None or level <= provisioned + cap
    without_key_range = replace(seen, key_range=0.0)
    assert surge_level(without_key_range, provisioned, target, 40_000, cap=cap) == level


# ---------------------------------------------------------------- the model


def test_a_change_sent_inside_a_minute_lands_as_far_into_its_minute() -> None:
    trace = _step(100.0, 100.0, minutes=10)
    params = ModelParams(warmup_minutes=0, burst_seconds=0, update_minutes=1)
    sim = SimulatedTable(trace, params, {WRITE: 50})
    sim.begin_minute(0)
    assert sim.update_table(0, None, {"write": 100}, second=20) == "applied"
    sim.end_minute(0)
    assert sim.busy(None, 1)  # UPDATING until 20 s into minute 1
    sim.begin_minute(1)
    assert sim.dims[WRITE].provisioned == 50
    sim.end_minute(1)
    d = sim.dims[WRITE]
    assert d.provisioned == 100
    # minute 1: 20 s at 50 (50 refused a second), 40 s at 100
    assert d.served[1] == pytest.approx((50 * 20 + 100 * 40) / 60)
    assert d.throttled[1] == pytest.approx(50 * 20 / 60)
    assert d.provisioned_at[1] == 100
    assert not sim.busy(None, 2)


def _two_dimensions(**model: Any) -> SimulatedTable:
    """Reads and writes at 100 units/s for 10 minutes, each provisioned at 50."""
    read = (None, "read")
    trace = Trace("both", START, {read: [100.0] * 10, WRITE: [100.0] * 10})
    params = ModelParams(warmup_minutes=0, burst_seconds=0, update_minutes=1, **model)
    return SimulatedTable(trace, params.validate(), {read: 50, WRITE: 50})


def test_a_table_is_active_from_the_second_its_update_lands() -> None:
    # GIVEN a write raise sent 5 s into minute 0, landing 5 s into minute 1
    sim = _two_dimensions()
    sim.begin_minute(0)
    assert sim.update_table(0, None, {"write": 100}, second=5) == "applied"
    sim.end_minute(0)
    sim.begin_minute(1)
    # THEN the table is UPDATING until then, and ACTIVE after it, in the same minute
    assert sim.busy(None, 1, 4) and not sim.busy(None, 1, 5) and not sim.busy(None, 1, 20)
    # WHEN a read raise is sent 20 s into minute 1
    assert sim.update_table(1, None, {"read": 100}, second=20) == "applied"
    assert sim.busy(None, 1, 21) and sim.busy(None, 2, 19) and not sim.busy(None, 2, 20)
    sim.end_minute(1)
    # THEN the write raise is not lost: it served from 5 s into minute 1
    w, r = sim.dims[WRITE], sim.dims[(None, "read")]
    assert w.provisioned == 100 and w.pending is None
    assert w.served[1] == pytest.approx((50 * 5 + 100 * 55) / 60)
    assert w.provisioned_at[1] == 100
    # and the read raise is in flight until 20 s into minute 2
    assert (r.provisioned, r.pending, r.served[1]) == (50, 100, 50)
    sim.begin_minute(2)
    sim.end_minute(2)
    assert (r.provisioned, r.pending) == (100, None)
    assert r.served[2] == pytest.approx((50 * 20 + 100 * 40) / 60)
    assert not sim.busy(None, 3)


def test_three_changes_of_a_minute_are_served_each_from_its_second() -> None:
    # GIVEN raises within the warm throughput (landing 5 s after they are sent)
    sim = _two_dimensions(warm_update_seconds=5)
    for dim in ("read", "write"):
        sim.dims[(None, dim)].warm = 1_000.0
    sim.begin_minute(0)
    # WHEN the write goes to 80 at 0 s (lands at 5 s), to 90 at 10 s (lands at 15 s),
    # and the read to 100 at 20 s (lands at 25 s)
    for second, values in ((0, {"write": 80}), (10, {"write": 90}), (20, {"read": 100})):
        assert sim.update_table(0, None, values, second=second) == "applied"
    sim.end_minute(0)
    # THEN each part of the minute is served at the capacity then in force
    w, r = sim.dims[WRITE], sim.dims[(None, "read")]
    assert w.served[0] == pytest.approx((50 * 5 + 80 * 10 + 90 * 45) / 60)
    assert r.served[0] == pytest.approx((50 * 25 + 100 * 35) / 60)
    assert (w.provisioned, r.provisioned, w.pending, r.pending) == (90, 100, None, None)
    assert not sim.busy(None, 0, 25) and not sim.busy(None, 1)


def test_a_change_landing_at_the_next_minutes_start_serves_all_of_it() -> None:
    # GIVEN a write raise landing 5 s into minute 0 (sent at its start, within the warm
    # throughput), then another sent 55 s in, landing at minute 1's very start
    sim = _two_dimensions(warm_update_seconds=5)
    sim.dims[WRITE].warm = 1_000.0
    sim.begin_minute(0)
    assert sim.update_table(0, None, {"write": 80}) == "applied"
    assert sim.update_table(0, None, {"write": 100}, second=55) == "applied"
    sim.end_minute(0)
    w = sim.dims[WRITE]
    assert w.served[0] == pytest.approx((50 * 5 + 80 * 55) / 60)
    assert (w.provisioned, w.pending) == (80, 100)
    # THEN minute 1 is served at 100 from its start, not from the first change's second
    sim.begin_minute(1)
    assert w.provisioned == 100
    sim.end_minute(1)
    assert w.served[1] == pytest.approx(100)


def test_a_look_later_in_a_minute_sees_the_capacity_that_landed_in_it() -> None:
    # GIVEN writes of 100 units/s on 50, no bucket, and a raise to 200 landing 5 s into
    # minute 1
    trace = _step(100.0, 100.0, minutes=5)
    params = ModelParams(warmup_minutes=0, burst_seconds=0, update_minutes=1, fast_path_seconds=20)
    sim = SimulatedTable(trace, params.validate(), {WRITE: 50})
    sim.begin_minute(0)
    assert sim.update_table(0, None, {"write": 200}, second=5) == "applied"
    sim.end_minute(0)
    sim.begin_minute(1)
    # WHEN the hook's reports of minute 1 are read 20 s into it, the raise a surge's
    fast, hook = FastPath(params), Source(0, 20, 1.0, False)
    fast.holds[WRITE] = (200, 10, 50, 0)
    seen = fast.seen(sim, WRITE, 1, hook)
    # THEN they show the 5 s at 50 refused (50 a second over 5 of 20 s), not 20 s of it,
    # in the demand, but not as throttles: those were reported before the capacity rose
    # (DescribeTable's LastIncreaseDateTime), and DescribeTable's capacity then is the new one
    assert seen is not None
    assert seen.consumed == pytest.approx(100 - 50 * 5 / 20)
    assert seen.demand == pytest.approx(100) and seen.throttled == 0
    # (with no surge held, a new one's throttles count whatever the last increase)
    del fast.holds[WRITE]
    unheld = fast.seen(sim, WRITE, 1, hook)
    assert unheld is not None and unheld.throttled == pytest.approx(50 * 5 / 20)
    assert sim.in_force(WRITE, 1, 20) == 200 and sim.in_force(WRITE, 1, 4) == 50


def test_the_bucket_carries_over_inside_a_minute() -> None:
    trace = _step(200.0, 200.0, minutes=3)
    params = ModelParams(warmup_minutes=0, burst_seconds=300, update_minutes=0)
    sim = SimulatedTable(trace, params, {WRITE: 100})
    sim.dims[WRITE].bucket = 1_000.0  # 10 s of the 100 missing
    sim.begin_minute(0)
    sim.update_table(0, None, {"write": 200}, second=30)
    sim.end_minute(0)
    # 30 s at 100: 10 s from the bucket, 20 s refused; then 30 s at 200
    assert sim.dims[WRITE].throttled[0] == pytest.approx(100 * 20 / 60)
    assert sim.dims[WRITE].provisioned == 200


def test_fast_path_params_are_checked_by_name() -> None:
    with pytest.raises(ModelError, match="fast_path_seconds: got 0"):
        ModelParams(fast_path_seconds=0).validate()
    with pytest.raises(ModelError, match="fast_path_share: got 1.5"):
        ModelParams(fast_path_share=1.5).validate()
    out, err = io.StringIO(), io.StringIO()
    code = main(["simulate", "--scenario", "spike", "--fast-path-seconds", "0"], out=out, err=err)
    assert code == 2
    assert "--fast-path-seconds: got 0; expected a whole number from 1 to 600" in err.getvalue()


# ---------------------------------------------------------------- the policies


def test_the_fast_path_catches_a_jump_the_scaler_reacts_to_minutes_late() -> None:
    trace = _step(1_000.0, 4_000.0)
    slow = _run("autopilot+stock:70", trace)
    fast = _run("autopilot+stock:70", trace, fast_path_seconds=20)
    assert slow[0] > 0
    assert fast[0] == 0  # the bucket (166 s at 1,429) outlasts 20 s + a 1-minute update
    assert fast[1] <= slow[1] * 1.05


def test_a_report_a_minute_late_lands_a_minute_later() -> None:
    trace = _step(1_000.0, 4_000.0)
    params = dict(burst_seconds=30)
    refused = [
        _run("throttle-aware", trace, fast_path_seconds=s, **params)[0] for s in (10, 50, 70)
    ]
    assert refused[0] < refused[1] < refused[2]


def test_stock_policies_ignore_the_fast_path() -> None:
    trace = _step(1_000.0, 2_800.0)
    assert _run("stock:70", trace) == _run("stock:70", trace, fast_path_seconds=5)


def test_a_share_that_reports_sees_less_and_the_throttles_tell_the_rest() -> None:
    # 1,429 provisioned, then 2,400 asked: half the traffic shows 1,200, below it, until
    # the bucket (60 s) runs dry and the throttles show the rest
    trace = _step(1_000.0, 2_400.0)
    full = _run("throttle-aware", trace, fast_path_seconds=20, burst_seconds=60)
    half = _run(
        "throttle-aware", trace, fast_path_seconds=20, fast_path_share=0.5, burst_seconds=60
    )
    slow = _run("throttle-aware", trace, burst_seconds=60)
    assert full[0] == 0 < half[0] < slow[0]


def test_a_surge_holds_the_targets_minimum_then_ends_by_itself() -> None:
    burst = [1_000.0] * 30 + [2_800.0] * 20 + [1_000.0] * 70  # minutes 30 to 49
    _, floors, sim = _surges(burst)
    assert floors[29] == 0
    assert floors[30] == 4000  # the jump's own minute, 20 s in: 2,800 at 70 %
    held = [t for t, f in floors.items() if f]
    # renewed while the demand would drain the 1,429 it falls back to (to minute 49),
    # then it expires 5 minutes later and ends at the next restore (every 5 minutes)
    assert held == list(range(30, 50 + DEFAULT_SURGE_MINUTES))
    assert sim.dims[WRITE].provisioned_at[sim.offset + 31] >= 4000


def test_a_held_surge_is_renewed_at_its_level_and_raised_only_for_more() -> None:
    demand = [1_000.0] * 30 + [2_800.0] * 10 + [2_000.0] * 10 + [4_000.0] * 10 + [1_000.0] * 30
    levels, _, _ = _surges(demand)
    assert {levels[t] for t in range(30, 50)} == {4000}  # 2,000 renews it, never lowers it
    assert levels[50] == math.ceil(4000 / 0.7)


def test_a_surge_lasts_at_most_its_lifetime() -> None:
    floors, _, _ = _surges([1_000.0] * 30 + [2_800.0] * 150)
    # the plateau keeps it due, but it is not renewed from minute 30 + 60 on: it expires
    # 5 minutes after its last renewal and ends at the next restore
    last = 30 + SURGE_LIFETIME_MINUTES - 1
    assert floors[last] > 0
    assert all(floors[t] == 0 for t in range(last + DEFAULT_SURGE_MINUTES + 1, 180))


def test_the_surge_cap_bounds_a_surge_from_the_capacity_it_started_from() -> None:
    demand = [1_000.0] * 30 + [4_000.0] * 20 + [1_000.0] * 30
    uncapped, _, _ = _surges(demand)
    capped, _, _ = _surges(demand, fast_path_cap=500)
    assert max(uncapped.values()) == math.ceil(4000 / 0.7)
    assert max(capped.values()) == math.ceil(1000 / 0.7) + 500  # 1,429 + 500


def test_no_surge_for_a_hot_key() -> None:
    trace = scenario("hot-key")
    slow = run_policy(parse("autopilot"), trace, ModelParams().validate(), Prices())
    fast = run_policy(
        parse("autopilot"), trace, ModelParams(fast_path_seconds=20).validate(), Prices()
    )
    assert sum(r.throttled_by_cause["key_range"] for r in slow) > 0
    assert [r.cost_usd for r in fast] == [r.cost_usd for r in slow]


# ---------------------------------------------------------------- the ensemble


def test_the_ensemble_spreads_the_delay_and_the_share_only_when_the_fast_path_is_on() -> None:
    on = settings_of("plausible", ModelParams(fast_path_seconds=20, fast_path_share=1.0))
    assert min(p.fast_path_seconds or 0 for p in on) == 5
    assert max(p.fast_path_seconds or 0 for p in on) == 30
    assert {p.fast_path_share for p in on} == {0.5, 0.75, 1.0}
    off = settings_of("plausible", ModelParams())
    assert {p.fast_path_seconds for p in off} == {None}
    assert {p.fast_path_share for p in off} == {1.0}


def test_the_signals_look_in_time_order_and_one_raise_holds_back_the_other() -> None:
    # the stream (5 s) sees the crowd's writes before the hook (20 s) sees its reads: its
    # write raise, above the warm throughput, leaves the table updating when the hook
    # looks, and DynamoDB takes no second update meanwhile, so the reads wait for it to
    # land (a minute later, 5 s into the minute), and the hook raises them at its next
    # look (20 s): not at the scaler's tick, which reads CloudWatch minutes late
    trace = scenario("flash-crowd")
    alone = _refused_by_dimension(trace, fast_path_seconds=20)
    both = _refused_by_dimension(trace, fast_path_seconds=20, stream_seconds=5)
    assert both["write"] < alone["write"] / 2
    assert alone["read"] * 1.1 < both["read"] < alone["read"] * 1.5


def _refused_by_dimension(trace: Trace, **model: int) -> dict[str, float]:
    """Units ``autopilot+stock:70`` refuses on ``trace``, per dimension."""
    params = ModelParams(**model).validate()  # type: ignore[arg-type]
    runs = run_policy(parse("autopilot+stock:70"), trace, params, Prices())
    return {r.key[1]: r.throttled_requests for r in runs}


def test_a_surge_raise_refused_while_the_table_updates_is_sent_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # on the flash crowd with both signals and updates of 2 minutes, the hook's raise of
    # the reads to what CloudWatch confirms meets the table still updating from its first
    # raise: each refused raise is sent again as soon as the table takes one (the update
    # under way lands within `update_minutes`), not left to a later renewal
    sent: list[tuple[int, int, dict[str, int], str]] = []
    update = SimulatedTable.update_table

    def recorded(
        sim: SimulatedTable, t: int, index: str | None, values: Any, second: int = 0
    ) -> str:
        answer = update(sim, t, index, values, second=second)
        if second:  # the fast path's, inside its minute
            sent.append((t, second, dict(values), answer))
        return answer

    monkeypatch.setattr(SimulatedTable, "update_table", recorded)
    params = ModelParams(fast_path_seconds=20, stream_seconds=5, update_minutes=2).validate()
    run_policy(parse("autopilot:70"), scenario("flash-crowd"), params, Prices())
    refused = [(t, v) for t, _, v, answer in sent if answer == "in-use"]
    assert refused
    soon = params.update_minutes + 1
    for t, values in refused:
        assert any(
            t < later <= t + soon
            and answer == "applied"
            and all(v.get(d, 0) >= n for d, n in values.items())
            for later, _, v, answer in sent
        ), (t, values)
