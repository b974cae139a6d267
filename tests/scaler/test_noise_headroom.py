"""The noise aim (``PolicyConfig.noise_aim``, off by default: measured, it refused more where
load jumped from a smooth level): outside a plan, a dimension set by UpdateTable aims above
its target as far as the traffic's noise over the settle span allows, while that span is
unthrottled and fully known; throttles, unknown minutes and target tracking keep the
target."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddb_capacity_runtime.core.policy import (
    DECREASE,
    HOLD,
    INCREASE,
    MAX_AIM,
    PolicyConfig,
    aim_for,
    autopilot_config,
    capacity_units,
    decide,
    decide_scalable_min,
    noise,
    noise_aim,
)
from ddb_capacity_runtime.core.settings import Mode, for_mode
from ddb_capacity_tools.simulator import ModelParams, Prices, parse
from ddb_capacity_tools.simulator.run import build, run_policy
from ddb_capacity_tools.simulator.trace import Trace
from tests.support.hypothesis_profiles import examples
from tests.support.policy import NOON, state

OFF = autopilot_config()
ON = replace(OFF, noise_aim=True)
SPAN = ON.settle_minutes


@pytest.mark.parametrize("mode", list(Mode))
def test_no_mode_aims_by_noise_by_default(mode: Mode) -> None:
    # the default is the better one as measured (benchmarks/noise_headroom.py)
    assert for_mode(mode).noise_aim is False
    assert PolicyConfig().noise_aim is False


# ------------------------------------------------------------------ the rule


def test_a_flat_unthrottled_load_aims_at_the_highest_aim() -> None:
    # GIVEN 60 units/s for the whole span on 100 units (60 %, above target - buffer)
    flat = state(100, [60.0] * (SPAN + 2))
    # THEN its noise is 0 and it aims at MAX_AIM: a decrease to 60 / 0.9
    assert noise(flat.consumed[-SPAN:]) == 0
    assert noise_aim(flat, ON, 0.7) == MAX_AIM
    d = decide(flat, ON)
    assert d.action == DECREASE and d.capacity == capacity_units(60 / MAX_AIM) == 67
    assert "aiming at 90%" in d.reason
    # AND without the noise aim it holds: 60 % is within target
    assert decide(flat, OFF).action == HOLD


def test_a_span_of_exactly_the_settle_minutes_is_enough_to_aim_by_noise() -> None:
    # GIVEN a flat load for exactly the settle span, no minute more
    exact = state(100, [60.0] * SPAN)
    # THEN the span is known in full: it aims at MAX_AIM and lowers to 60 / 0.9
    assert noise_aim(exact, ON, 0.7) == MAX_AIM
    assert decide(exact, ON).capacity == 67
    # AND a minute short of the span keeps the target
    assert noise_aim(state(100, [60.0] * (SPAN - 1)), ON, 0.7) == 0.7


def test_a_little_noise_aims_between_the_target_and_the_highest_aim() -> None:
    # GIVEN a load alternating 50 and 60 (peak over median: 60 / 55)
    load = [50.0, 60.0] * ((SPAN + 2) // 2)
    s = state(120, load)
    expected = aim_for(60 / 55 - 1, 0.7)
    assert 0.7 < expected < MAX_AIM
    assert noise_aim(s, ON, 0.7) == expected
    # WHEN the settled load (two minutes in three: 60) is low on 120 units
    d = decide(s, ON)
    # THEN the decrease goes to 60 / that aim, below the target's 60 / 0.7
    assert d.action == DECREASE and d.capacity == capacity_units(60 / expected)
    assert d.capacity < capacity_units(60 / 0.7)


def test_a_raise_above_the_aim_is_sized_at_the_aim() -> None:
    # GIVEN a smooth load at the whole of its 90 units (served from the burst bucket)
    s = state(90, [90.0] * (SPAN + 2))
    d = decide(s, ON)
    # THEN the raise is to 90 / 0.9, not 90 / 0.7
    assert d.action == INCREASE and d.capacity == capacity_units(90 / MAX_AIM) == 100
    assert decide(s, OFF).capacity == capacity_units(90 / 0.7)


def test_noisy_traffic_aims_at_the_target() -> None:
    # GIVEN bursts of twice the median in the span
    load = [40.0, 40.0, 80.0] * ((SPAN + 3) // 3)
    s = state(200, load)
    assert noise(load[-SPAN:]) == pytest.approx(1.0)
    assert noise_aim(s, ON, 0.7) == 0.7
    assert decide(s, ON) == decide(s, OFF)


def test_a_throttle_anywhere_in_the_span_keeps_the_target() -> None:
    # GIVEN a flat load throttled once, 20 minutes ago (older than the raise's minutes)
    load = [60.0] * (SPAN + 2)
    throttles = [0.0] * len(load)
    throttles[-20] = 5.0
    s = state(100, load, throttles=throttles)
    # THEN it aims at the target, and decides as without the noise aim
    assert noise_aim(s, ON, 0.7) == 0.7
    assert decide(s, ON) == decide(s, OFF)


def test_a_raise_for_throttles_is_sized_at_the_target_however_flat_the_load() -> None:
    # GIVEN a load capped at 100 units (it looks flat) and throttled in the newest minute
    load = [100.0] * (SPAN + 2)
    throttles = [0.0] * len(load)
    throttles[-1] = 3000.0  # 50 units/s refused
    d = decide(state(100, load, throttles=throttles), ON)
    # THEN the raise is (100 + 50) / 0.7, as without the noise aim
    assert d.action == INCREASE and d.capacity == capacity_units(150 / 0.7) == 215


def test_unknown_minutes_or_a_failed_call_keep_the_target() -> None:
    load = [60.0] * (SPAN + 2)
    for s in (
        state(100, load, unknown_minutes=1),
        state(100, load, decreases_allowed=False),
        state(100, load[: SPAN - 1]),  # less than the span known
    ):
        assert noise_aim(s, ON, 0.7) == 0.7
        assert decide(s, ON) == decide(s, OFF)


def test_an_idle_span_has_infinite_noise() -> None:
    assert noise([0.0] * 10 + [5.0]) == math.inf
    assert noise([]) == math.inf
    assert noise_aim(state(100, [0.0] * (SPAN - 1) + [50.0]), ON, 0.7) == 0.7


def test_a_dimension_under_target_tracking_aims_at_its_policys_target() -> None:
    # GIVEN a smooth load whose policy aims at 50 %, rising above it
    s = state(100, [60.0] * (SPAN + 2), target_utilization=0.5)
    # WHEN it is decided as a dimension under target tracking
    tracked = decide(s, ON, tracked=True)
    minimum = decide_scalable_min(s, 100, ON)
    # THEN it raises for 50 %, as auto scaling will: 60 / 0.5; UpdateTable's would aim higher
    assert tracked.capacity == minimum.capacity == 120
    assert decide(s, ON).capacity == capacity_units(60 / MAX_AIM) < 120


# ------------------------------------------------------------------ property


@settings(max_examples=examples(300), deadline=None)
@given(
    provisioned=st.integers(1, 5_000),
    load=st.lists(st.floats(0, 6_000, allow_nan=False), min_size=SPAN, max_size=SPAN + 4),
    throttled_at=st.integers(1, SPAN),
    events=st.floats(0.001, 10_000, allow_nan=False),
    unknown=st.integers(0, 5),
    use_throttle=st.booleans(),
    target=st.sampled_from([0.2, 0.5, 0.7, 0.9]),
)
def test_throttles_or_unknown_data_never_lower_capacity_below_the_targets(
    provisioned: int,
    load: list[float],
    throttled_at: int,
    events: float,
    unknown: int,
    use_throttle: bool,
    target: float,
) -> None:
    """While the span holds a throttle or an unknown minute, the noise aim leaves the
    decision as the configured target makes it: never lower."""
    throttles = [0.0] * len(load)
    if use_throttle:
        throttles[-throttled_at] = events
    else:
        unknown = unknown or 1
    s = state(
        provisioned,
        load,
        throttles=throttles,
        unknown_minutes=unknown,
        target_utilization=target,
    )
    on, off = decide(s, ON), decide(s, OFF)
    assert on.capacity >= off.capacity
    assert on == off


@settings(max_examples=examples(200), deadline=None)
@given(
    load=st.lists(st.floats(0, 6_000, allow_nan=False), min_size=1, max_size=40),
    target=st.sampled_from([0.2, 0.5, 0.7, 0.9]),
)
def test_the_aim_is_between_the_target_and_the_highest_aim(
    load: list[float], target: float
) -> None:
    aim = noise_aim(state(100, load), ON, target)
    assert int(target * 100) / 100 <= aim <= max(MAX_AIM, target)


# ------------------------------------------------------------------ the simulator


def smooth(minutes: int) -> Trace:
    """A slow swing of +-10 % around 1,000 units/s: noise about 0.1 over half an hour."""
    load = [1_000 * (1 + 0.1 * math.sin(m / 90)) for m in range(minutes)]
    return Trace("smooth", NOON, {(None, "read"): load, (None, "write"): [200.0] * minutes})


def test_the_simulator_runs_the_noise_aim_when_its_spec_asks() -> None:
    # GIVEN the autopilot's spec as parsed (the Lambda's policy: no noise aim), and with it
    trace, params = smooth(6 * 60), ModelParams()
    auto = parse("autopilot:70")
    default = build(auto, trace, params, Prices(), None, 2)
    assert default.config.policy == for_mode(Mode.AUTOPILOT)  # type: ignore[attr-defined]
    on_spec = replace(auto, text="on", noise_aim=True)
    assert build(on_spec, trace, params, Prices(), None, 2).config.policy == replace(  # type: ignore[attr-defined]
        for_mode(Mode.AUTOPILOT), noise_aim=True
    )
    # WHEN both run over smooth traffic
    on = run_policy(on_spec, trace, params, Prices())
    off = run_policy(auto, trace, params, Prices())
    # THEN the noise aim costs less on each dimension and refuses nothing either way
    for a, b in zip(on, off, strict=True):
        assert a.throttled_requests == b.throttled_requests == 0
        assert a.cost_usd < b.cost_usd
    # AND on stock target tracking (every dimension tracked) it changes nothing
    stock = parse("autopilot+stock:70")
    tracked_on = run_policy(replace(stock, noise_aim=True), trace, params, Prices())
    tracked_off = run_policy(stock, trace, params, Prices())
    assert [r.cost_usd for r in tracked_on] == [r.cost_usd for r in tracked_off]
