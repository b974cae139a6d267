"""The simulator's model, policies and oracle (no AWS: time-dependent behaviour)."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddb_capacity_runtime.core import decreases as quota
from ddb_capacity_runtime.core import plan as core_plan
from ddb_capacity_runtime.core import policy
from ddb_capacity_runtime.core.forecast import EARNS, IDLE, Replay, forecast_minute
from ddb_capacity_tools.simulator import (
    DimensionResult,
    ModelError,
    ModelParams,
    PolicyError,
    PriceError,
    Prices,
    oracle,
    parse,
    run_policy,
    scenario,
    serve,
    simulate,
)
from ddb_capacity_tools.simulator import policies as sim_policies
from ddb_capacity_tools.simulator.model import SimulatedTable
from ddb_capacity_tools.simulator.oracle import plan
from ddb_capacity_tools.simulator.scenarios import SCENARIOS, diurnal, nightly_batch
from ddb_capacity_tools.simulator.trace import Trace
from tests.support.hypothesis_profiles import examples

START = datetime(2026, 1, 5, 12, tzinfo=UTC)
units = st.floats(min_value=0, max_value=50_000, allow_nan=False)


# ---------------------------------------------------------------- the burst bucket


@given(
    demand=units,
    provisioned=st.integers(1, 40_000),
    bucket=st.floats(0, 2e7),
    burst=st.integers(0, 600),
)
def test_serve_conserves_demand_and_bounds_the_bucket(
    demand: float, provisioned: int, bucket: float, burst: int
) -> None:
    m = serve(demand, provisioned, bucket, burst)
    cap = burst * provisioned
    assert m.served + m.throttled == pytest.approx(demand, rel=1e-9, abs=1e-6)
    assert 0 <= m.served <= demand + 1e-9
    assert m.served <= provisioned + min(bucket, cap) / 60 + 1e-6
    assert -1e-6 <= m.bucket <= cap + 1e-6
    if demand <= provisioned:
        assert m.throttled == 0
        assert m.bucket == pytest.approx(min(cap, min(bucket, cap) + (provisioned - demand) * 60))
    else:
        assert m.bucket == pytest.approx(min(bucket, cap) - (m.served - provisioned) * 60, abs=1e-6)


@settings(max_examples=examples(60))
@given(
    demands=st.lists(units, min_size=1, max_size=120),
    provisioned=st.integers(1, 20_000),
    burst=st.integers(0, 600),
)
def test_over_any_stretch_served_never_exceeds_capacity_plus_the_stored_burst(
    demands: list[float], provisioned: int, burst: int
) -> None:
    bucket = float(burst * provisioned)
    served = 0.0
    for d in demands:
        m = serve(d, provisioned, bucket, burst)
        served += m.served * 60
        bucket = m.bucket
    assert served <= provisioned * 60 * len(demands) + burst * provisioned + 1e-3


def test_a_full_bucket_covers_300_seconds_of_excess_then_demand_is_throttled() -> None:
    bucket, served, throttled = 300 * 7_500.0, [], []
    for _ in range(5):
        m = serve(18_000, 7_500, bucket, 300)
        bucket = m.bucket
        served.append(m.served)
        throttled.append(m.throttled)
    # 2,250,000 unit-seconds at 10,500/s of excess: 214 s.
    assert served[:3] == [18_000, 18_000, 18_000]
    assert served[3] == pytest.approx(7_500 + (2_250_000 - 3 * 630_000) / 60)
    assert served[4] == 7_500 and throttled[4] == 10_500


# ---------------------------------------------------------------- parameters and names


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            ModelParams(metric_delay_minutes=-1),
            "metric_delay_minutes: got -1; expected a whole number from 0 to 15",
        ),
        (ModelParams(update_minutes=2.5), "update_minutes: got 2.5; expected a whole number"),  # type: ignore[arg-type]
        (
            ModelParams(units_per_request=0),
            "units_per_request: got 0; expected a number from 0.001",
        ),
        (
            ModelParams(min_capacity=10, max_capacity=5),
            "min_capacity: got 10; expected at most max_capacity (5)",
        ),
    ],
)
def test_model_parameters_are_checked_by_name(params: ModelParams, message: str) -> None:
    with pytest.raises(ModelError, match=message.replace("(", r"\(").replace(")", r"\)")):
        params.validate()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("stok:70", "--policy: got 'stok:70'; expected fixed:N, stock:T"),
        ("stock:95", "--policy 'stock:95': target utilization 95 is outside 20 to 90"),
        ("fixed:0", "--policy 'fixed:0': fixed capacity 0 is outside 1 to 40000"),
        ("throttle-aware+stock:10", "target utilization 10 is outside 20 to 90"),
        ("stock:19", "target utilization 19 is outside 20 to 90"),
        ("stock:91", "target utilization 91 is outside 20 to 90"),
        ("fixed:40001", "fixed capacity 40001 is outside 1 to 40000"),
    ],
)
def test_bad_policy_names_say_what_is_allowed(text: str, message: str) -> None:
    with pytest.raises(PolicyError, match=message.replace("+", r"\+")):
        parse(text)


@pytest.mark.parametrize("text", ["stock:20", "stock:90", "fixed:1", "fixed:40000"])
def test_a_policy_at_the_edge_of_its_range_is_taken(text: str) -> None:
    assert parse(text) is not None


def test_policy_names_parse() -> None:
    assert parse("throttle-aware+stock:60") == sim_policies.Spec(
        "throttle-aware+stock:60", "throttle-aware", 60, True
    )
    assert parse("scheduled").value == 70
    assert parse("fixed:250").value == 250


def test_prices_have_one_overridable_home() -> None:
    p = Prices().overridden(["wcu_hour=0.001", "read_request_million=0.5"])
    assert (p.wcu_hour, p.rcu_hour, p.read_request_million) == (0.001, 0.00013, 0.5)
    with pytest.raises(PriceError, match="--price: got 'wcu=1'; expected NAME=VALUE"):
        Prices().overridden(["wcu=1"])
    with pytest.raises(PriceError, match="--price wcu_hour: got '-1'; expected a number"):
        Prices().overridden(["wcu_hour=-1"])


# ---------------------------------------------------------------- DynamoDB as simulated


def _flat(minutes: int = 10, value: float = 100.0) -> Trace:
    return Trace(
        "flat",
        START,
        {
            (None, "read"): [value] * minutes,
            (None, "write"): [value] * minutes,
            ("ByCustomer", "read"): [value] * minutes,
            ("ByCustomer", "write"): [value] * minutes,
        },
    )


def test_update_table_is_asynchronous_and_refuses_a_second_update_in_flight() -> None:
    sim = SimulatedTable(_flat(), ModelParams(update_minutes=2), {k: 100 for k in _flat().demand})
    assert sim.update_table(0, None, {"write": 500}) == "applied"
    assert sim.dims[(None, "write")].provisioned == 100 and sim.current((None, "write")) == 500
    assert sim.update_table(1, None, {"read": 500}) == "in-use"
    assert sim.update_table(1, "ByCustomer", {"read": 500}) == "applied"  # its own counter
    sim.begin_minute(2)
    assert sim.dims[(None, "write")].provisioned == 500
    assert sim.dims[(None, "write")].last_increase == START + timedelta(minutes=2)


def test_decreases_over_the_quota_fail_as_dynamodb_refuses_them() -> None:
    sim = SimulatedTable(_flat(), ModelParams(update_minutes=0), {k: 1000 for k in _flat().demand})
    results = [sim.update_table(t, None, {"read": 900 - t, "write": 900 - t}) for t in range(5)]
    assert results == ["applied"] * 4 + ["quota"]  # read + write in one call: one decrease each
    assert sim.rejected_decreases[(None, "read")] == 1
    assert sim.update_table(5, None, {"read": 2000}) == "applied"  # increases at any time
    assert sim.update_table(3 + 60, None, {"read": 500}) == "applied"  # an hour after the 4th
    assert sim.update_table(3 + 61, None, {"read": 400}) == "quota"


# ---------------------------------------------------------------- policies


def test_throttle_aware_runs_the_lambdas_own_policy_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """The simulator's throttle-aware policy goes through core.plan.plan_table, which calls
    the run-time policy module; counting those calls proves there is no second copy."""
    # the names each module imported (and does not export), read from its namespace
    assert vars(sim_policies)["plan_table"] is core_plan.plan_table
    calls: Counter[str] = Counter()
    real_decide: Callable[..., policy.Decision] = vars(core_plan)["decide"]
    real_min: Callable[..., policy.Decision] = vars(core_plan)["decide_scalable_min"]

    def decide(*args: Any, **kwargs: Any) -> policy.Decision:
        calls["decide"] += 1
        return real_decide(*args, **kwargs)

    def decide_min(*args: Any, **kwargs: Any) -> policy.Decision:
        calls["decide_scalable_min"] += 1
        return real_min(*args, **kwargs)

    monkeypatch.setattr(core_plan, "decide", decide)
    monkeypatch.setattr(core_plan, "decide_scalable_min", decide_min)
    trace = scenario("flash-crowd")
    simulate(trace, [parse("throttle-aware")], progress=None)
    ticks = (trace.minutes + ModelParams().warmup_minutes) // 2
    assert calls["decide"] >= ticks * 2 * 0.9  # read and write, every tick it is not UPDATING
    simulate(trace, [parse("throttle-aware+stock:70")], progress=None)
    assert calls["decide_scalable_min"] >= ticks * 2 * 0.9
    # And a policy that always holds makes the scaler inert: the decisions are the module's.
    monkeypatch.setattr(
        core_plan,
        "decide",
        lambda state, config: policy.Decision(state.provisioned, "held by test", policy.HOLD),
    )
    held = simulate(trace, [parse("throttle-aware")], progress=None)
    assert all(r.decreases == 0 and r.peak_provisioned == r.recorded.provisioned[0] for r in held)


def test_the_quota_the_simulated_table_enforces_is_the_runtime_ledger(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(quota.DecreaseLedger, "can_decrease", lambda self, now: False)
    results = simulate(scenario("spike"), [parse("stock:70")], progress=None)
    write = next(r for r in results if r.key == (None, "write"))
    assert write.decreases == 0 and write.rejected_decreases > 0


def _by(
    results: list[DimensionResult], policy_name: str, dimension: str = "write"
) -> DimensionResult:
    return next(r for r in results if r.policy == policy_name and r.key == (None, dimension))


def test_spike_timeline_follows_the_aws_posts_figures() -> None:
    """Figures 2, 3 and 7 of "Handle traffic spikes with Amazon DynamoDB provisioned capacity",
    from the mechanics alone (docs: Simulator, "Fidelity")."""
    trace = scenario("spike")
    results = simulate(
        trace, [parse(p) for p in ("stock:70", "stock:60", "scheduled")], progress=None
    )
    s70, s60, sched = (_by(results, p) for p in ("stock:70", "stock:60", "scheduled"))
    # 70 %: throttling starts 3-4 minutes after the 13:00 jump, lasts about 2 minutes, and
    # capacity lands near 18,000 / 0.7.
    assert s70.first_throttle_minute is not None
    assert 62 <= s70.first_throttle_minute <= 64
    assert 1 <= s70.throttled_minutes <= 3
    landed = s70.recorded.provisioned[70]
    assert 25_000 <= landed <= 27_000
    # Before the jump: provisioned near peak quiet consumption / target.
    assert 6_500 <= s70.recorded.provisioned[55] <= 7_500
    assert 7_700 <= s60.recorded.provisioned[55] <= 8_800
    # 60 %: more padding, more burst: far fewer refused units.
    assert s60.throttled_requests < s70.throttled_requests / 2
    # A schedule two minutes ahead: no throttles, then target tracking adds padding on top.
    assert sched.throttled_minutes == 0
    assert sched.recorded.provisioned[59] == 18_000
    assert sched.peak_provisioned > 18_000
    # Scale-in waits for 15 low datapoints after the spike ends at minute 120.
    drop = next(m for m in range(120, 180) if s70.recorded.provisioned[m] < 20_000)
    assert drop >= 120 + 15


def test_throttle_aware_answers_an_unannounced_crowd_faster_than_stock() -> None:
    results = simulate(
        scenario("flash-crowd"),
        [parse(p) for p in ("stock:70", "throttle-aware", "throttle-aware+stock:70")],
        progress=None,
    )
    for dim in ("read", "write"):
        stock = _by(results, "stock:70", dim)
        for p in ("throttle-aware", "throttle-aware+stock:70"):
            assert _by(results, p, dim).throttled_requests < stock.throttled_requests / 2


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_oracle_never_throttles_keeps_the_quota_and_is_cheapest(name: str) -> None:
    trace = scenario(name)
    names = ["oracle", "stock:70", "stock:60", "throttle-aware+stock:70", "fixed:40000"]
    if trace.schedule:
        names.append("scheduled")
    results = simulate(trace, [parse(p) for p in names], progress=None)
    for key in trace.demand:
        oracle = next(r for r in results if r.policy == "oracle" and r.key == key)
        # a hot key's partition refuses what no capacity serves: the oracle never refuses
        # anything else (and, on every scenario without a hot key, nothing at all)
        assert oracle.throttled_by_cause["provisioned"] == 0 and oracle.rejected_decreases == 0
        assert oracle.throttled_minutes == 0 or trace.key_skew > 0
        for r in results:
            if r.key == key and r.throttled_minutes == 0:
                assert oracle.cost_usd <= r.cost_usd + 1e-9, (r.policy, key)


def test_oracle_plan_spends_at_most_27_decreases_a_day_and_covers_demand() -> None:
    trace = scenario("diurnal")
    p = plan(trace, ModelParams(), Prices())
    for key, capacity in p.items():
        demand = trace.demand[key]
        assert all(c >= d for c, d in zip(capacity, demand, strict=True))
        per_day: Counter[int] = Counter()
        for m in range(1, len(capacity)):
            if capacity[m] < capacity[m - 1]:
                per_day[m // 1440] += 1
        assert max(per_day.values()) <= quota.MAX_DECREASES_PER_DAY


def test_a_new_day_starts_from_the_first_count_that_is_cheapest_once_the_segment_is_added() -> None:
    """A new UTC day takes the first count (in the order reached) whose cost, with the
    segment's added, is the least. Two costs that differ by one unit in the last place
    can tie once added: the earlier one is taken, as when each is added."""
    # GIVEN two counts at block 0: count 1 reached first, a hair costlier than count 0,
    # and blocks 1 and 2 on the next UTC day, each costing 1.0
    reached = oracle._Reached.empty(3)
    reached.order[0] += [1, 0]
    reached.cost[0][1], reached.cost[0][0] = 1.0 + 2**-52, 1.0
    # WHEN the segments from block 0 are taken
    oracle._segments_from(0, reached, [[1], [1], [1]], [1.0], [0, 1, 1], 3, 4, [1.0] * 3)
    # THEN both sums round to 2.0 (a tie), and block 1's count 0 comes from count 1
    assert (1.0 + 2**-52) + 1.0 == 1.0 + 1.0
    assert reached.cost[1][0] == 2.0
    assert divmod(reached.came[1][0], oracle.CAME) == (0, 1)


def test_on_demand_is_priced_per_request_and_never_throttles() -> None:
    trace = _flat(60, 1000)
    (read, write, *_) = simulate(trace, [parse("on-demand")], progress=None)
    assert read.cost_usd == pytest.approx(1000 * 60 * 60 * 0.125 / 1e6)
    assert write.cost_usd == pytest.approx(1000 * 60 * 60 * 0.625 / 1e6)
    assert write.throttled_requests == 0 and write.provisioned_unit_hours == 0


def test_fixed_capacity_throttles_exactly_what_exceeds_it_once_the_bucket_is_empty() -> None:
    trace = Trace(
        "step", START, {(None, "read"): [0.0] * 30, (None, "write"): [100.0] * 10 + [200.0] * 20}
    )
    (_, write) = simulate(trace, [parse("fixed:150")], ModelParams(warmup_minutes=0), progress=None)
    # Bucket: 300 x 150 = 45,000 unit-seconds; 50/s of excess uses 3,000 a minute, so it
    # lasts 15 minutes from minute 10, and minutes 25-29 refuse 50/s each.
    assert write.first_throttle_minute == 25
    assert write.throttled_minutes == 5
    assert write.throttled_requests == pytest.approx(5 * 50 * 60)
    assert write.provisioned_unit_hours == pytest.approx(150 * 30 / 60)
    assert write.cost_usd == pytest.approx(150 * 30 / 60 * 0.00065)


def test_gsis_are_simulated_with_their_own_counter() -> None:
    trace = _flat(30, 100)
    results = simulate(trace, [parse("stock:70")], progress=None)
    assert {r.key for r in results} == set(trace.demand)
    gsi = next(r for r in results if r.key == ("ByCustomer", "write"))
    assert gsi.peak_provisioned == 143  # 100 / 0.7


# ---------------------------------------------------------------- model fidelity parameters


def test_burst_fraction_is_the_share_of_the_bucket_dynamodb_leaves_you() -> None:
    trace = Trace(
        "step", START, {(None, "read"): [0.0] * 30, (None, "write"): [100.0] * 10 + [200.0] * 20}
    )

    def first_throttle(fraction: float) -> int | None:
        params = ModelParams(warmup_minutes=0, burst_fraction=fraction)
        (_, write) = simulate(trace, [parse("fixed:150")], params, progress=None)
        return write.first_throttle_minute

    # the full bucket lasts 15 minutes of 50/s excess, a third of it 5, none of it 0
    assert [first_throttle(f) for f in (1.0, 1 / 3, 0.0)] == [25, 15, 10]


def test_retries_count_every_attempt_and_lose_what_is_given_up() -> None:
    trace = Trace("over", START, {(None, "read"): [0.0] * 10, (None, "write"): [200.0] * 10})
    runs = {
        retries: simulate(
            trace,
            [parse("fixed:100")],
            ModelParams(warmup_minutes=0, burst_seconds=0, retries=retries, units_per_request=2),
            progress=None,
        )[1]
        for retries in (0, 3)
    }
    # the same units are refused (and lost), but CloudWatch sees 4 attempts for each request
    assert runs[0].throttled_requests == runs[3].throttled_requests == pytest.approx(100 * 60 * 10)
    per_minute = 100 * 60 / 2  # refused units / units per request
    assert runs[0].recorded.throttle_events == pytest.approx([per_minute] * 10)
    assert runs[3].recorded.throttle_events == pytest.approx([4 * per_minute] * 10)
    assert runs[3].as_json()["throttle_events"] == pytest.approx(4 * per_minute * 10)


def test_delays_and_update_latency_are_drawn_reproducibly_from_their_ranges() -> None:
    trace = scenario("spike")

    def run(**kwargs: Any) -> list[int]:
        params = ModelParams(**kwargs)
        return simulate(trace, [parse("stock:70")], params, progress=None)[1].recorded.provisioned

    fixed = run()
    drawn = run(delay_spread_minutes=2, update_spread_minutes=4, model_seed=7)
    assert drawn == run(delay_spread_minutes=2, update_spread_minutes=4, model_seed=7)
    assert drawn != fixed
    assert drawn != run(delay_spread_minutes=2, update_spread_minutes=4, model_seed=8)


def test_stock_scale_in_keeps_the_peak_of_the_window_it_judged() -> None:
    # a quiet hour whose datapoints alternate 100 and 300: the low alarm fires on all 15,
    # and scale-in sizes on the window's peak (300 / 0.7), not on the latest datapoint
    quiet = [100.0 if m % 2 else 300.0 for m in range(120)]
    trace = Trace("noisy", START, {(None, "read"): [0.0] * 120, (None, "write"): quiet})
    params = ModelParams(warmup_minutes=0, min_capacity=1)
    (_, write) = simulate(trace, [parse("fixed:2000")], params, progress=None)
    assert write.peak_provisioned == 2000
    (_, stock) = simulate(trace, [parse("stock:70")], params, progress=None)
    assert min(stock.recorded.provisioned) >= 300 / 0.7
    p = stock.recorded.provisioned
    ups = sum(1 for i in range(1, len(p)) if p[i] > p[i - 1])
    assert ups == 0  # no scale-in it has to undo


def test_stock_does_not_scale_in_through_minutes_without_traffic() -> None:
    # an hour of 1,000 writes a second, then two idle hours: DynamoDB publishes no datapoint
    # for an idle minute, so the low alarm has nothing to fire on (AWS: auto scaling does
    # not scale down when consumed capacity becomes zero); it used to scale in to 1
    writes = [1_000.0] * 60 + [0.0] * 120
    trace = Trace("idle", START, {(None, "read"): [5.0] * 180, (None, "write"): writes})
    (_, write) = simulate(trace, [parse("stock:70")], ModelParams(), progress=None)
    assert write.decreases == 0
    assert min(write.recorded.provisioned[60:]) >= 1_000 / 0.7


def test_stock_still_scales_in_on_low_traffic_that_is_not_zero() -> None:
    writes = [1_000.0] * 60 + [10.0] * 120
    trace = Trace("low", START, {(None, "read"): [5.0] * 180, (None, "write"): writes})
    (_, write) = simulate(trace, [parse("stock:70")], ModelParams(), progress=None)
    assert write.decreases >= 1
    assert write.recorded.provisioned[-1] == math.ceil(10 / 0.7)


def _stock_asks(datapoints: list[float], provisioned: int = 1_000) -> int:
    """The capacity stock:70 asks for once these minutes (oldest first; 0: a minute without
    traffic, so no datapoint) are delivered: its alarms' evaluation."""
    n, key = len(datapoints), (None, "write")
    trace = Trace("alarm", START, {(None, "read"): [1.0] * n, key: [1.0] * n})
    params = ModelParams(warmup_minutes=0, metric_delay_minutes=0, throttle_delay_minutes=0)
    stock = sim_policies.AutoScaling(70, params, list(trace.demand))
    sim = SimulatedTable(trace, params, {k: provisioned for k in trace.demand})
    sim.dims[key].served = list(datapoints)
    stock.act(sim, n)
    return sim.current(key)


def test_stock_alarms_look_back_over_missing_minutes_within_their_evaluation_range() -> None:
    low, high, none = 100.0, 800.0, 0.0  # at 1,000 units: high above 700, low below 500
    # the high alarm: its 2 datapoints within the last 4 minutes, a missing one between
    assert _stock_asks([low, high, none, high]) == math.ceil(high / 0.7)
    assert _stock_asks([high, none, none, high]) == math.ceil(high / 0.7)
    assert _stock_asks([high, high, none, none, none, high]) == 1_000  # one in range
    # the low alarm: its 15 most recent datapoints within the last 17 minutes
    two_missing = [low] * 7 + [none] + [low] * 7 + [none, low]
    assert _stock_asks([high] * 20 + two_missing) == math.ceil(low / 0.7)
    three_missing = [low] * 6 + [none] + [low] * 7 + [none, none, low]
    assert _stock_asks([low] * 20 + three_missing) == 1_000  # 14 within the range
    assert _stock_asks([low] * 30 + [none] * 17) == 1_000  # an idle range: no action
    # a missing minute is no load: it sizes the scale-in on the peak of those present
    peaked = [low] * 7 + [none, 400.0] + [low] * 6 + [none, low]
    assert _stock_asks(peaked) == math.ceil(400 / 0.7)


def test_dimensions_sharing_a_table_take_turns_whatever_their_order() -> None:
    """With 2-minute updates, read and write of one table both growing: neither starves,
    and swapping the columns swaps the results (no order artifact)."""
    ramp = [1_000.0 + 40.0 * m for m in range(180)]
    steady = [900.0 + 40.0 * m for m in range(180)]
    params = ModelParams(update_minutes=2)
    forward = Trace("f", START, {(None, "read"): ramp, (None, "write"): steady})
    swapped = Trace("s", START, {(None, "read"): steady, (None, "write"): ramp})
    a = {r.key[1]: r for r in simulate(forward, [parse("stock:70")], params, progress=None)}
    b = {r.key[1]: r for r in simulate(swapped, [parse("stock:70")], params, progress=None)}
    for dim, other in (("read", "write"), ("write", "read")):
        assert a[dim].throttled_requests == pytest.approx(b[other].throttled_requests, rel=0.1)
    assert a["write"].throttled_requests <= 2 * a["read"].throttled_requests + 1


# ---------------------------------------------------------------- the bound


@settings(max_examples=examples(40), deadline=None)
@given(
    demand=st.lists(st.floats(0, 3_000, allow_nan=False), min_size=30, max_size=150),
    burst_fraction=st.sampled_from([0.0, 0.5, 1.0]),
    max_capacity=st.sampled_from([3_000, 40_000]),
    policy=st.sampled_from(["fixed:3000", "fixed:1200", "stock:60", "stock:80", "oracle"]),
    warmup=st.sampled_from([0, 30]),
)
def test_no_zero_throttle_run_costs_less_than_the_bound(
    demand: list[float], burst_fraction: float, max_capacity: int, policy: str, warmup: int
) -> None:
    trace = Trace("random", START, {(None, "read"): demand, (None, "write"): demand[::-1]})
    params = ModelParams(
        burst_fraction=burst_fraction, max_capacity=max_capacity, warmup_minutes=warmup
    )
    runs = simulate(trace, [parse(policy), parse("bound")], params, progress=None)
    floor = {r.key: r.cost_usd for r in runs if r.policy == "bound"}
    for r in runs:
        if r.policy != "bound" and r.throttled_minutes == 0:
            assert r.cost_usd >= floor[r.key] * (1 - 1e-9), (r.policy, r.key)


def test_the_bound_is_each_minutes_demand_without_burst_and_below_the_oracle() -> None:
    trace = scenario("nightly-batch")
    params = ModelParams(burst_fraction=0, billing="per-minute")  # the bound's own unit-minutes
    runs = simulate(trace, [parse("oracle"), parse("bound")], params, progress=None)
    by = {(r.policy, r.key[1]): r for r in runs}
    write = trace.demand[(None, "write")]
    assert by[("bound", "write")].provisioned_unit_hours == pytest.approx(
        sum(max(1, math.ceil(d)) for d in write) / 60
    )
    for dim in ("read", "write"):
        gap = by[("oracle", dim)].cost_usd / by[("bound", dim)].cost_usd
        assert 1.0 <= gap < 1.5


@pytest.mark.parametrize(
    ("burst_fraction", "max_capacity", "least_share"),
    [(0.0, 40_000, 1.0), (1.0, 1_000, 0.95)],
)
def test_the_bound_is_tight_where_a_plan_can_meet_it(
    burst_fraction: float, max_capacity: int, least_share: float
) -> None:
    """Flat demand: provisioning exactly the demand never throttles, and the bound is that
    plan's cost (without burst) or within the bucket it may start with (with burst)."""
    trace = Trace("flat", START, {(None, "read"): [0.0] * 120, (None, "write"): [1_000.0] * 120})
    params = ModelParams(burst_fraction=burst_fraction, max_capacity=max_capacity)
    runs = simulate(trace, [parse("fixed:1000"), parse("bound")], params, progress=None)
    fixed, floor = (r for r in runs if r.key[1] == "write")
    assert fixed.throttled_minutes == 0
    assert least_share * fixed.cost_usd <= floor.cost_usd <= fixed.cost_usd


def test_figures_5_and_6_of_the_aws_post_follow_from_the_mechanics() -> None:
    """Figure 5: the work paced to 14,000 WCU never throttles at 70 % and peaks near 20,000
    (down from 26,000). Figure 6: ramped over 11 minutes, it reaches 18,000 WCU served
    without a throttle."""
    (_, paced) = simulate(scenario("spike-14000"), [parse("stock:70")], progress=None)
    assert paced.throttled_minutes == 0
    assert 19_000 <= paced.peak_provisioned <= 21_500
    (_, spike) = simulate(scenario("spike"), [parse("stock:70")], progress=None)
    assert spike.peak_provisioned > paced.peak_provisioned + 5_000
    (_, ramped) = simulate(scenario("slow-start"), [parse("stock:70")], progress=None)
    assert ramped.throttled_minutes == 0
    assert max(ramped.recorded.served) >= 17_500


# ---------------------------------------------------------------- autopilot


def test_autopilot_runs_the_lambdas_autopilot_policy_and_learns_the_nightly_batch() -> None:
    trace = scenario("nightly-batch")
    spec = parse("autopilot+stock:70")
    assert (spec.kind, spec.with_stock, spec.value) == ("autopilot", True, 70)
    assert parse("autopilot").with_stock is False
    policy = sim_policies.ThrottleAware(2, 70, ModelParams(), autopilot=True)
    assert policy.config.policy.autopilot and policy.config.policy.scale_down_minutes == 4
    runs = simulate(trace, [parse("throttle-aware+stock:70"), spec], progress=None)
    by = {(r.policy, r.key[1]): r for r in runs}
    reacting = by[("throttle-aware+stock:70", "write")].throttled_requests
    learned = by[(spec.text, "write")].throttled_requests
    assert learned < 0.5 * reacting
    # from the third night on the batch is forecast (a day of history and a day to judge
    # the forecast by): the minimum is raised at 01:00, and the batch at 02:00 is refused
    # less than a quarter of the first night's units (stock scales in once the minimum is
    # restored, before the batch comes: README, "Autopilot")
    per_day = [
        sum(by[(spec.text, "write")].recorded.throttled[d * 1440 : (d + 1) * 1440])
        for d in range(7)
    ]
    assert per_day[0] > 0 and max(per_day[2:]) < 0.25 * per_day[0]


@pytest.mark.parametrize("mode", ["reactive", "autopilot"])
def test_the_simulator_runs_the_policy_the_lambda_builds(mode: str) -> None:
    """Each mode's whole policy, as the construct's environment makes the Lambda build it,
    is the one the simulator runs."""
    from ddb_capacity_runtime.core.settings import ScalerConfig, scale_down_ticks

    env = {
        "SCALER_TABLES": "feed",
        "SCALER_MODE": mode,
        "SCALER_SCALE_DOWN_TICKS": str(scale_down_ticks(2, mode)),
    }
    lambda_policy = ScalerConfig.from_env(env).policy
    simulated = sim_policies.ThrottleAware(2, 70, ModelParams(), autopilot=mode == "autopilot")
    assert simulated.config.policy == lambda_policy


def _gates(trace: Trace) -> Counter[str]:
    """The simulated autopilot over ``trace``: its forecasts' gates from the third day on
    (the first day the backtest has a day to replay), read and write."""
    policy = sim_policies.ThrottleAware(5, 70, ModelParams(), autopilot=True)
    sim = SimulatedTable(trace, ModelParams(), policy.initial(trace, ModelParams()))
    for t in range(-ModelParams().warmup_minutes, trace.minutes):
        sim.begin_minute(t)
        policy.act(sim, t)
        sim.end_minute(t)
    return Counter(f.gate for t, _, f, _ in policy.forecasts if t >= 2 * 1440)


def _noisy() -> Trace:
    """Noise (lognormal, sigma 0.25 a minute) on a daily swing whose level fell by a fifth
    after its first day: each season's own error is small enough to plan, but the highest
    of past seasons holds more than reacting needs."""
    rng = random.Random(4)
    levels = (1.0, 0.8, 0.8)

    def noisy_minute(m: int, base: float) -> float:
        swing = 1.5 + math.sin(2 * math.pi * m / 1440)
        return base * levels[m // 1440] * swing * rng.lognormvariate(0, 0.25)

    return Trace(
        "noisy",
        scenario("diurnal").start,
        {
            (None, "read"): [noisy_minute(m, 3_000) for m in range(3 * 1440)],
            (None, "write"): [noisy_minute(m, 750) for m in range(3 * 1440)],
        },
    )


def test_noisy_traffic_leaves_the_forecast_off_and_a_clean_periodic_one_turns_it_on() -> None:
    gates = _gates(_noisy())
    assert gates and set(gates) <= {IDLE}
    # a clean nightly batch: the plan is there before the load, reacting alone is not
    batch = nightly_batch(1, days=3)
    gates = _gates(batch)
    assert gates[EARNS] >= 24  # the write dimension's every hour of the third day


def _autopilot_run(
    trace: Trace, kept: bool, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[tuple[float, float] | None], list[DimensionResult]]:
    """The autopilot over ``trace``: every score its gate got, and its results (each
    minute's capacity and what it refused among them); its dimensions' replays kept from
    forecast to forecast (``kept``, as the simulator keeps them), or each forecast's
    made anew (as the scaler Lambda's, which replay the whole day)."""
    got: list[tuple[float, float] | None] = []

    class Recording(Replay):
        def scores(self, *asked: Any) -> tuple[float, float] | None:
            scores = super().scores(*asked) if kept else Replay().scores(*asked)
            got.append(scores)
            return scores

    monkeypatch.setattr(sim_policies, "Replay", Recording)
    results = run_policy(parse("autopilot"), trace, ModelParams(), Prices())
    return got, results


@pytest.mark.parametrize(
    ("name", "earns"), [("nightly-batch", True), ("diurnal, 16 days", True), ("noisy", False)]
)
def test_a_kept_replay_leaves_every_simulated_decision_as_a_whole_replay(
    name: str, earns: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The autopilot on the built-in nightly-batch scenario (7 days), the built-in diurnal
    one over 16 days (past 14: its history's start moves past windows the floors read),
    and noisy traffic its gate turns off, run twice: its gate's replays kept from forecast
    to forecast, then made anew for each forecast. The same scores to the bit, each
    forecast judged, and the same run, minute by minute."""
    made = {"nightly-batch": lambda: scenario(name), "diurnal, 16 days": lambda: diurnal(1, 16)}
    trace = made.get(name, _noisy)()
    kept, results = _autopilot_run(trace, True, monkeypatch)
    whole, whole_results = _autopilot_run(trace, False, monkeypatch)
    assert kept == whole
    judged = [(a < b) == earns for a, b in filter(None, kept)]
    assert judged and any(judged)
    assert results == whole_results


def test_the_simulated_autopilot_forecasts_once_an_hour_at_its_tables_minute() -> None:
    trace = scenario("nightly-batch")
    policy = sim_policies.ThrottleAware(
        2,
        70,
        ModelParams(),
        stock=sim_policies.AutoScaling(70, ModelParams(), list(trace.demand)),
        autopilot=True,
    )
    sim = SimulatedTable(trace, ModelParams(), policy.initial(trace, ModelParams()))
    for t in range(-ModelParams().warmup_minutes, 3 * 1440):
        sim.begin_minute(t)
        policy.act(sim, t)
        sim.end_minute(t)
    # at the simulated table's minute of the hour (20), as the Lambda forecasts a table
    slot = forecast_minute(sim_policies.SIMULATED_TABLE)
    minutes = {t for t, *_ in policy.forecasts}
    assert slot == 20 and all(0 <= sim.time(t).minute - slot < 2 for t in minutes)
    assert len(minutes) == 3 * 24 + 1  # every hour of the 3 days, and the warm-up's
    # from the third day, the write dimension's 01:20 plan floors the batch from 01:40
    # (its lead and spread) and not before
    plans = [
        (t - sim.time(t).minute, plan)
        for t, key, f, plan in policy.forecasts
        if key == (None, "write") and t >= 2 * 1440 and sim.time(t).hour == 1
    ]
    assert plans
    for one, kept in plans:
        assert kept is not None
        ahead, floor = kept.highest(one, 30), kept.at(one + 45)
        assert ahead is not None and ahead < 1_000
        assert floor is not None and floor >= 8_000 / (kept.aim / 100) * 0.95
    # and the raise comes from the kept plan, at a tick that made no forecast: the write
    # capacity is there before 02:00 on the third day, and no write is refused that night
    night = 2 * 1440 + next(m for m in range(1440) if sim.time(m).hour == 2)
    write = sim.recorded[(None, "write")]
    assert write.provisioned[night - 5] >= 8_400  # the batch's highest minute
    assert sum(write.throttled[night : night + 120]) == 0


def test_minutes_cloudwatch_has_not_delivered_yet_do_not_stop_every_decrease() -> None:
    """CloudWatch 3 minutes late, beyond the scaler's 2-minute lag: the newest minute of
    every window is unknown. The tick decides on the minutes before it, so a table that
    went quiet is still lowered (it never was, before)."""
    busy, quiet = [3_000.0] * 120, [100.0] * 240
    trace = Trace("late", START, {(None, "read"): [0.0] * 360, (None, "write"): busy + quiet})
    params = ModelParams(metric_delay_minutes=3, throttle_delay_minutes=3)
    (_, write) = simulate(trace, [parse("throttle-aware")], params, progress=None)
    assert write.decreases >= 1 and write.recorded.provisioned[-1] < 1_000


def test_delivered_trims_only_the_newest_unknown_minutes_and_no_more_than_late_ones() -> None:
    from ddb_capacity_runtime.core.plan import delivered
    from ddb_capacity_runtime.core.series import Series

    starts = [START + timedelta(minutes=m) for m in range(5)]
    late = Series(starts, [1.0] * 5, [0.0] * 5, [False, True, False, True, True])
    trimmed, stopped = delivered(late)
    assert trimmed.minute_starts == starts[:3] and trimmed.unknown_minutes == 1 and not stopped
    nothing = Series(starts, [0.0] * 5, [0.0] * 5, [True] * 5)
    assert delivered(nothing) == (nothing, 0)  # nothing known stays wholly unknown
    # data that stopped (more unknown minutes at the end than CloudWatch's lateness, 3
    # minutes): the known minutes are decided on, and the minutes beyond it are counted
    halted = Series(starts, [1.0] * 5, [0.0] * 5, [False, True, True, True, True])
    trimmed, stopped = delivered(halted)
    assert trimmed.minute_starts == starts[:1] and stopped == 1
    # no more unknown minutes at the end than that lateness: nothing stopped
    assert delivered(Series(starts, [1.0] * 5, [0.0] * 5, [False, False, True, True, True]))[1] == 0
    known = Series(starts, [1.0] * 5, [0.0] * 5, [])
    assert delivered(known) == (known, 0)


def test_delivered_decides_on_the_minutes_listed_before_the_undelivered_ones() -> None:
    from ddb_capacity_runtime.core.plan import delivered
    from ddb_capacity_runtime.core.series import Series
    from ddb_capacity_runtime.core.settings import DELIVERY_MINUTES, LATE_MINUTES

    starts = [START + timedelta(minutes=m) for m in range(5)]
    # every listed minute known (told either way), the newest ones not delivered yet
    for unknown in ([], [False] * 5):
        pending = Series(starts, [1.0] * 5, [0.0] * 5, unknown, undelivered=DELIVERY_MINUTES)
        trimmed, stopped = delivered(pending)
        # within CloudWatch's lateness (3 minutes, with no metric lag): the listed minutes
        # are all known, nothing stopped
        assert trimmed.minute_starts == starts and trimmed.unknown_minutes == 0 and not stopped
        # the minutes beyond the lateness are counted as stopped: beyond 3 minutes with a lag
        # of 0 or 1, beyond the lag and LATE_MINUTES with a longer one
        halted = Series(starts, [1.0] * 5, [0.0] * 5, unknown, undelivered=LATE_MINUTES + 3)
        assert [delivered(halted, lag_minutes=lag)[1] for lag in (0, 1, 2)] == [2, 2, 1]


def test_the_padding_benchmark_runs_in_its_quick_mode(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import padding

    padding.main(["--quick", "--workers", "1", "--targets", "70"])
    out = capsys.readouterr().out
    assert "smooth-diurnal (smooth)" in out and "noisy-flat (noisy)" in out
    assert "extra by cause" in out and "forecast " in out and "reaction " in out
    assert "autopilot:T <= 1.0x stock:T at equal refusals, smooth: PASS" in out
