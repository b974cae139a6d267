"""The autopilot's forecast (core/forecast.py): properties on synthetic periodic series."""

from __future__ import annotations

import math
import random
import statistics
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddb_capacity_runtime.core.decreases import DecreaseLedger
from ddb_capacity_runtime.core.floorplan import MAX_RESERVE, PLAN_STEPS, FloorPlan, parse_plan
from ddb_capacity_runtime.core.forecast import (
    BASELINE_STEPS,
    EARNS,
    FLOOR_STEPS,
    IDLE,
    LEAD_MINUTES,
    LEAD_STEPS,
    LOOKBACK,
    MAX_ERROR,
    REFUSED_WEIGHT,
    SPREAD_MINUTES,
    SPREAD_STEPS,
    UNKNOWN,
    Forecast,
    Replay,
    _predict,
    apply_plans,
    backtest,
    forecast,
    forecast_due,
    forecast_minute,
    plan_floors,
    season_error,
    season_minutes,
)
from ddb_capacity_runtime.core.periods import find_period
from ddb_capacity_runtime.core.policy import MAX_AIM, aim_for, capacity_units, units_within
from ddb_capacity_runtime.core.table_limits import Limits
from ddb_capacity_runtime.core.tables import Dimension, ManagedTable
from tests.support.hypothesis_profiles import examples

STEP = 5
DAY = 1440 // STEP


@settings(max_examples=examples(30), deadline=None)
@given(
    profile=st.lists(st.floats(0, 5_000, allow_nan=False), min_size=DAY, max_size=DAY),
    days=st.integers(4, 9),
    ahead=st.integers(0, 40),
    window=st.integers(1, 24),
)
def test_an_exactly_daily_series_is_forecast_exactly(
    profile: list[float], days: int, ahead: int, window: int
) -> None:
    history = profile * days
    f = forecast(history, STEP, ahead, window)
    assert f.error == 0 and f.season in ("daily", "weekly")
    start = (len(history) + ahead) % DAY
    expected = max((profile * 2)[start : start + window])
    assert f.peak == pytest.approx(expected)


@settings(max_examples=examples(20), deadline=None)
@given(
    profile=st.lists(st.floats(1, 5_000, allow_nan=False), min_size=DAY, max_size=DAY),
    scale=st.floats(0.1, 10),
)
def test_the_forecast_scales_with_the_load(profile: list[float], scale: float) -> None:
    history = profile * 4
    base = forecast(history, STEP, 3, 12)
    scaled = forecast([v * scale for v in history], STEP, 3, 12)
    assert base.peak is not None and scaled.peak == pytest.approx(base.peak * scale)


def test_a_nightly_batch_is_forecast_ahead_and_quiet_hours_are_not() -> None:
    day = [20.0] * DAY
    day[24:48] = [8_000.0] * 24  # 02:00-04:00
    history = day * 5  # ends at midnight
    batch = forecast(history, STEP, 24, 12)  # 02:00-03:00 tomorrow
    quiet = forecast(history, STEP, 72, 12)  # 06:00-07:00
    assert batch.peak == 8_000 and quiet.peak == 20
    assert batch.reason.startswith(("daily", "weekly"))


def test_noise_is_no_forecast_and_says_why() -> None:
    rng = random.Random(3)
    history = [rng.choice([0.0, 10.0, 5_000.0]) for _ in range(DAY * 4)]
    f = forecast(history, STEP, 2, 1)  # one step: a spike is there or not, at random
    assert f.peak is None and f.error is not None and f.error > MAX_ERROR
    assert "error" in f.reason


def test_too_little_history_is_no_forecast() -> None:
    f = forecast([100.0] * (DAY + 10), STEP, 2, 6)
    assert f.peak is None and f.reason.startswith("not enough history")
    assert season_error([100.0] * (DAY + 10), STEP, "daily", 6) is None


def test_unknown_steps_are_skipped_not_read_as_zero() -> None:
    day = [100.0] * DAY
    history: list[float | None] = list(day * 4)
    history[-DAY + 10] = None  # yesterday, at the window's time
    f = forecast(history, STEP, 10, 1)
    assert f.peak == 100.0


def test_a_bad_step_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="step: got 7"):
        forecast([1.0], 7, 1, 1)


# ------------------------------------------------------------------ the plan of floors

PLAN = st.builds(
    FloorPlan,
    st.integers(0, 10**9).map(lambda m: m - m % STEP),
    st.lists(st.integers(1, 40_000), min_size=1, max_size=PLAN_STEPS).map(tuple),
    st.integers(20, 90),
    st.integers(0, MAX_RESERVE),
    st.integers(0, 40_000),
)


@settings(max_examples=examples(50), deadline=None)
@given(plan=PLAN)
def test_a_plan_reads_back_from_its_tag_exactly(plan: FloorPlan) -> None:
    assert parse_plan(plan.value(), 40_000) == plan


@settings(max_examples=examples(200), deadline=None)
@given(raw=st.text(max_size=120))
def test_anything_else_in_a_plan_tag_is_no_plan_and_never_an_error(raw: str) -> None:
    plan = parse_plan(raw, 40_000)
    assert plan is None or (
        plan.value() in (raw, _with_least_zero(raw))
        and plan.start % STEP == 0
        and 1 <= len(plan.floors) <= PLAN_STEPS
    )


def _with_least_zero(raw: str) -> str:
    """A plan tag as version 0.4.0 wrote it (no least fall), as it reads back."""
    fields = raw.split(":")
    return ":".join([*fields[:3], "0", *fields[3:]])


def test_a_plan_tag_without_the_least_fall_reads_as_not_known() -> None:
    # as version 0.4.0 wrote it: the reserve is then spent only for a large saving
    plan = parse_plan("100:80:2:5/6", 40_000)
    assert plan == FloorPlan(100, (5, 6), 80, 2, 0)
    assert plan.value() == "100:80:2:0:5/6"


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "100:70:5",
        "100:70:0:",
        ":70:0:5",
        "101:70:0:5",
        "-5:70:0:5",
        "100:70:0:0",
        "100:70:0:40001",
        "100:70:0:5/x",
        "100:70:0:5//6",
        "100:70:0:1.5",
        "100:19:0:5",
        "100:91:0:5",
        "100:070:0:5",
        "100:70:28:5",
        "100:70:-1:5",
        "100:70:0:5:6:7",
        "100:70:0:40001:5",
        "100:70:0:-1:5",
        "100:70:0::5",
        "100:70:0:1.5:5",
        "100:70:0:" + "/".join(["5"] * (PLAN_STEPS + 1)),
    ],
)
def test_plan_tags_out_of_bounds_are_no_plan(raw: str) -> None:
    assert parse_plan(raw, 40_000) is None


def test_a_plan_gives_the_floor_in_force_and_the_highest_ahead() -> None:
    plan = FloorPlan(100, (10, 50, 20))
    assert [plan.at(m) for m in (99, 100, 104, 105, 114, 115)] == [None, 10, 10, 50, 20, None]
    assert plan.highest(100, 5) == 10 and plan.highest(101, 5) == 50
    assert plan.highest(110, 30) == 20 and plan.highest(115, 30) is None
    assert plan.highest(50, 30) is None and plan.highest(80, 20) is None
    assert plan.highest(80, 21) == 10 and plan.highest(90, 100) == 50


@settings(max_examples=examples(200), deadline=None)
@given(
    floors=st.lists(st.integers(1, 100), min_size=1, max_size=PLAN_STEPS),
    minute=st.integers(0, 200),
    minutes=st.integers(0, 90),
)
def test_the_highest_floor_ahead_is_that_of_the_steps_the_span_overlaps(
    floors: list[int], minute: int, minutes: int
) -> None:
    plan = FloorPlan(100, tuple(floors))
    overlapping = [
        f
        for i, f in enumerate(floors)
        if 100 + i * STEP < minute + minutes and minute < 100 + (i + 1) * STEP
    ]
    assert plan.highest(minute, minutes) == (max(overlapping) if overlapping else None)


@settings(max_examples=examples(25), deadline=None)
@given(
    profile=st.lists(st.floats(0, 5_000, allow_nan=False), min_size=DAY, max_size=DAY),
    now=st.integers(0, DAY * STEP - 1),
)
def test_an_exactly_daily_series_is_planned_exactly(profile: list[float], now: int) -> None:
    """Each step's floor is the peak of the day before from SPREAD before the step to LEAD
    and SPREAD after it, at the aim an error of 0 allows (MAX_AIM)."""
    days = 4
    history = profile * days
    end = days * DAY * STEP
    plan, f = plan_floors(history, end, end + now, 0.7, 1, 40_000)
    assert f.error == 0
    spread, lead = SPREAD_MINUTES // STEP, LEAD_MINUTES // STEP
    expected = []
    for i in range(PLAN_STEPS):
        position = now // STEP + i
        window = [(profile * 3)[DAY + position + k] for k in range(-spread, 1 + lead + spread)]
        expected.append(max(1, min(40_000, capacity_units(max(window) / MAX_AIM))))
    if max(expected) <= 1:
        assert plan is None and "minimum covers it" in f.reason
    else:
        assert plan is not None and plan.start == end + now - now % STEP
        assert plan.aim == round(MAX_AIM * 100)
        assert list(plan.floors) == expected


def test_spikes_at_random_times_are_no_plan() -> None:
    rng = random.Random(5)
    history = [5_000.0 if rng.random() < 0.02 else 10.0 for _ in range(DAY * 4)]
    plan, f = plan_floors(history, len(history) * STEP, len(history) * STEP, 0.7, 1, 40_000)
    assert plan is None and f.error is not None and f.error > MAX_ERROR


@settings(max_examples=examples(100), deadline=None)
@given(error=st.floats(0, 10), target=st.floats(0.2, 0.9))
def test_a_plan_aims_higher_only_as_far_as_its_error_allows(error: float, target: float) -> None:
    aim = aim_for(error, target)
    assert int(target * 100) / 100 <= aim <= max(MAX_AIM, target)
    assert aim_for(error + 0.1, target) <= aim  # a worse forecast never aims higher


def test_a_plan_keeps_a_decrease_for_each_fall_the_day_still_has() -> None:
    """Two falls later in the UTC day (22:00 and 23:00, a fifth lower or more) are two
    decreases kept; past the plan's own hours only."""
    hour = 60 // STEP
    day = [100.0] * DAY
    day[20 * hour : 22 * hour] = [1_000.0] * (2 * hour)  # 20:00-22:00
    day[22 * hour : 23 * hour] = [500.0] * hour  # 22:00-23:00, then 100 again
    history = day * 4  # ends at midnight
    end = len(history) * STEP

    def reserve_at(minute_of_day: int) -> tuple[int, int]:
        plan, _ = plan_floors(
            history, end, end + minute_of_day, 0.7, 1, 40_000, minute_of_day=minute_of_day
        )
        assert plan is not None and plan.aim == 90  # an exact forecast
        return plan.reserve, plan.least

    # at noon: the falls at 22:00 (500/s) and 23:00 (400/s) are ahead; the smaller saves
    # 400 / 0.9 = 445 units
    assert reserve_at(12 * 60) == (2, 445)
    # the plan reaches 22:45: the 23:00 fall is left
    assert reserve_at(21 * 60 + 30) == (1, 445)
    assert reserve_at(22 * 60 + 50) == (0, 0)  # nothing falls after the plan's end


def test_a_tick_obeys_the_plan_in_force() -> None:
    """The floor in force is the minimum, the aim the target, and the keep, reserve and
    least fall reach the policy; a dimension without a plan, or past its plan, is as it was."""
    limits = Limits(min_capacity=5, max_capacity=1_000, target_utilization=0.7)

    def dim(name: str) -> Dimension:
        return Dimension("T", None, name, 100, DecreaseLedger(), None, limits)

    table = ManagedTable("T", "arn", {}, [dim("read"), dim("write")])
    plan = FloorPlan(600, (50, 300, 2_000), 85, 3, 120)
    (read, write) = apply_plans(table, {("T", None, "write"): plan}, 606).dimensions
    assert read == dim("read")
    assert write.limits == Limits(300, 1_000, 0.85)  # the floor, the quota's max keeps it
    assert (write.keep, write.reserve, write.least_fall) == (1_000, 3, 120)
    (_, ended) = apply_plans(table, {("T", None, "write"): plan}, 615).dimensions
    assert ended == dim("write")
    # a plan read back from the state store is untrusted: a floor above the dimension's
    # maximum lifts its minimum to the maximum, no higher, and an aim below the configured
    # target never lowers the target (it would lower the capacity it asks for)
    (_, highest) = apply_plans(table, {("T", None, "write"): plan}, 611).dimensions
    assert highest.limits == Limits(1_000, 1_000, 0.85)
    low = FloorPlan(600, (300,), 50, 3, 2_000)
    (_, lower) = apply_plans(table, {("T", None, "write"): low}, 601).dimensions
    assert lower.limits == Limits(300, 1_000, 0.7)


@settings(max_examples=examples(200), deadline=None)
@given(name=st.text(min_size=1, max_size=255), tick=st.integers(1, 60), phase=st.integers(0, 59))
def test_a_table_forecasts_once_an_hour_in_its_own_five_minute_slot(
    name: str, tick: int, phase: int
) -> None:
    minute = forecast_minute(name)
    assert minute % STEP == 0 and 0 <= minute < 60
    # ticks every `tick` minutes from any phase: one due about every hour, never two within
    # less than an hour less a tick; exactly hourly, in its slot, for a tick that divides it
    ticks = range(phase, phase + 60 * tick, tick)
    due = [m for m in ticks if forecast_due(name, m % 60, tick)]
    gaps = [b - a for a, b in zip(due, due[1:], strict=False)]
    assert due and all(60 - tick < g < 60 + tick for g in gaps)
    if 60 % tick == 0:
        assert set(gaps) <= {60} and all((m % 60 - minute) % 60 < tick for m in due)


def test_the_forecast_minute_is_stable_across_processes() -> None:
    # the CRC-32 of the name, not Python's salted hash(): every Lambda process agrees
    assert [forecast_minute(n) for n in ("simulated", "orders", "Orders")] == [20, 10, 40]


# ------------------------------------------------------------------ seasons shorter than a day


def bursts_every(period_minutes: int, steps: int, seed: int = 1) -> list[float | None]:
    """Noisy base load (400/s) with a burst of 5x for the first 10 minutes of every period."""
    rng = random.Random(seed)  # noqa: S311 (a reproducible series)
    burst_steps = 10 // STEP
    return [
        400 * rng.lognormvariate(0, 0.2) * (5 if i % (period_minutes // STEP) < burst_steps else 1)
        for i in range(steps)
    ]


@pytest.mark.parametrize("period", [60, 120, 180, 360])
def test_a_burst_every_few_hours_is_found_and_forecast_after_a_day(period: int) -> None:
    # GIVEN a day and a period of history of a load that bursts every `period` minutes
    history = bursts_every(period, DAY + period // STEP)
    # THEN the period is found, and its season forecasts the next burst, though no day
    # has repeated yet (the daily season has nothing to go on)
    assert find_period(history, STEP) == period
    f = forecast(history, STEP, ahead_steps=(period - 5) // STEP, window_steps=3)
    assert f.season == f"{period} min" and f.peak is not None and f.peak > 1_500
    assert forecast(history[: DAY - 1], STEP, 0, 3).season is None  # before: nothing


def test_the_shortest_of_equally_good_periods_is_taken() -> None:
    # a load that repeats every 2 hours repeats every 4, 6 and 12 as well
    assert find_period(bursts_every(120, 2 * DAY), STEP) == 120


@pytest.mark.parametrize("step", [0, -5, 7, 40])
def test_a_step_that_divides_no_bin_finds_no_period(step: int) -> None:
    # a step of no minutes, or one that does not divide a bin, reads no bins: no period,
    # never an error (the history's steps cannot be told apart)
    assert find_period(bursts_every(120, 2 * DAY), step) is None


def test_noise_and_unknown_steps_find_no_period() -> None:
    rng = random.Random(7)  # noqa: S311
    noise: list[float | None] = [400 * rng.lognormvariate(0, 0.3) for _ in range(2 * DAY)]
    assert find_period(noise, STEP) is None
    history = bursts_every(120, 2 * DAY)
    history[-3] = None  # a step CloudWatch gave no trusted value for
    assert find_period(history, STEP) is None
    assert find_period(bursts_every(120, DAY + 11), STEP) is None  # less than an hour before


def test_a_smooth_daily_swing_has_no_short_period() -> None:
    # GIVEN two days of a smooth daily swing: an hour earlier it correlates cos(2 pi / 24),
    # about 0.97, within the tie of the day's own 1.0, but half an hour earlier better still
    history: list[float | None] = [
        1_000 + 900 * math.sin(2 * math.pi * i / DAY) for i in range(2 * DAY)
    ]
    # THEN no lag is a period: none repeats the load better than its half does
    assert find_period(history, STEP) is None


def test_a_daily_load_keeps_its_daily_season() -> None:
    # GIVEN a week of a smooth daily swing (which any short lag also correlates with)
    rng = random.Random(3)  # noqa: S311
    history: list[float | None] = [
        (1_000 + 900 * math.sin(2 * math.pi * i / DAY)) * rng.lognormvariate(0, 0.05)
        for i in range(7 * DAY)
    ]
    # THEN the season judged best on the last day is still a day or a week
    assert forecast(history, STEP, 0, 3).season in ("daily", "weekly")


# In 15-minute steps each step is one bin of `find_period`, so a history reads as its bins.
BIN_STEP = 15
BIN_DAY = 1440 // BIN_STEP


def _lag_correlation(bins: list[float | None], lag: int) -> float:
    """The last day's correlation with itself ``lag`` bins earlier."""
    day = [float(v or 0.0) for v in bins[-BIN_DAY:]]
    earlier = [float(v or 0.0) for v in bins[-BIN_DAY - lag : -lag]]
    return statistics.correlation(day, earlier)


def _hourly_bursts(heights: list[float], days: int = 2) -> list[float | None]:
    """Bins of a burst at the start of each hour, of each hour's height over a base of 100;
    ``heights`` is one day's and repeats each day."""
    day: list[float | None] = []
    for height in heights:
        day += [100.0 + height, 100.0, 100.0, 100.0]
    return day * days


@pytest.mark.parametrize(("hours_as_before", "period"), [(18, 60), (17, None)])
def test_a_period_is_found_from_the_least_correlation_up(
    hours_as_before: int, period: int | None
) -> None:
    # GIVEN 25 hours (no whole day before the last) of four bins each, high-high-low-low
    # or the other way round: `hours_as_before` of the last day's 24 hours are the same
    # as the hour before it, the others are flipped
    bins: list[float | None] = []
    high_first = True
    for hour in range(25):
        if 0 < hour <= 24 - hours_as_before:
            high_first = not high_first
        bins += [500.0, 500.0, 100.0, 100.0] if high_first else [100.0, 100.0, 500.0, 500.0]
    # half of each day's bins are high (48 of 96); an hour apart two high bins meet twice
    # in each hour the same as the one before, so the hour's correlation is
    # (96 * 2h - 48 * 48) / (48 * 48): exactly 1/2 for 18 such hours, 5/12 for 17
    assert _lag_correlation(bins, 4) == pytest.approx((96 * 2 * hours_as_before - 48**2) / 48**2)
    # THEN the hour is a period from a correlation of MIN_CORRELATION (1/2) up, not below
    assert find_period(bins, BIN_STEP) == period


@pytest.mark.parametrize(("odd_height", "period"), [(1_500.0, 60), (2_300.0, None)])
def test_a_short_period_is_taken_only_within_the_tie_of_the_days_own(
    odd_height: float, period: int | None
) -> None:
    # GIVEN two identical days of a burst each hour, of 1,000 but for one hour a day:
    # the day repeats the load exactly, and every short lag a little less well (each
    # compares the odd hour with an ordinary one); a half hour earlier is a quiet bin
    bins = _hourly_bursts([1_000.0] * 23 + [odd_height])
    hour = _lag_correlation(bins, 4)
    assert _lag_correlation(bins, BIN_DAY) == pytest.approx(1.0)
    assert hour == pytest.approx(_lag_correlation(bins, 12)) and _lag_correlation(bins, 2) < 0
    # WHEN the odd hour is 500 higher, the hour repeats the load within CORRELATION_TIE
    # (0.05) of the day; when it is 1,300 higher, by more than that (though by less than
    # twice it, and well above 1/2)
    assert (hour > 0.95) == (period is not None) and hour > 0.9
    # THEN the hour is the period only in the first case: a load the day repeats clearly
    # better is left to the daily season
    assert find_period(bins, BIN_STEP) == period


def test_the_shortest_period_within_the_tie_is_taken_though_a_longer_one_repeats_better() -> None:
    # GIVEN two days of a burst every 2 hours, of heights 1,000, 1,100 and 1,200 in turn:
    # the load repeats exactly every 6 hours, and nearly every 2 (no burst is its neighbour's
    # height), while 1 and 3 hours earlier are quiet bins
    heights = [1_000.0, 1_100.0, 1_200.0]
    day: list[float | None] = []
    for burst in range(12):
        day += [100.0 + heights[burst % 3]] + [100.0] * 7
    bins = day * 2
    two_hours, six_hours = _lag_correlation(bins, 8), _lag_correlation(bins, 24)
    assert six_hours == pytest.approx(1.0) and 0.95 < two_hours < six_hours
    assert _lag_correlation(bins, 4) < 0 and _lag_correlation(bins, 12) < 0
    # THEN the 2 hours are taken: within CORRELATION_TIE of the best, and shorter
    assert find_period(bins, BIN_STEP) == 120


@pytest.mark.parametrize(
    ("pattern", "period"),
    [
        # every hour, 300-100-200-200: half an hour earlier is uncorrelated (exactly 0)
        ([300.0, 100.0, 200.0, 200.0], 60),
        # every 90 minutes, a 45-minute pattern 1300-700-1000 plus one that alternates each
        # bin by 70: 45 minutes earlier the alternation is reversed, a correlation of
        # (60000 - 70^2) / (60000 + 70^2), about 0.85: the period passes it by more than PEAK
        ([1_000.0 + s + a for s, a in zip([300, -300, 0] * 2, [70, -70] * 3, strict=True)], 90),
        # the same with an alternation of 40: (60000 - 40^2) / (60000 + 40^2), about 0.95,
        # is within PEAK (0.1) of the period's own 1: the load repeats at any short lag
        ([1_000.0 + s + a for s, a in zip([300, -300, 0] * 2, [40, -40] * 3, strict=True)], None),
    ],
)
def test_a_period_must_repeat_the_load_better_than_its_half_period_by_the_peak(
    pattern: list[float], period: int | None
) -> None:
    # GIVEN two days of a pattern repeated exactly
    bins: list[float | None] = list(pattern * (2 * BIN_DAY // len(pattern)))
    # THEN its period is found only when it repeats the load better than its half does by PEAK
    assert find_period(bins, BIN_STEP) == period


def test_a_period_shorter_than_an_hour_is_not_tried() -> None:
    # GIVEN two days of a burst every 45 minutes: an hour, 90 minutes and longer lags
    # either do not meet the bursts or repeat them no better than their half lags do
    bins: list[float | None] = [500.0, 100.0, 100.0] * (2 * BIN_DAY // 3)
    # THEN no period is found: periods start at an hour
    assert find_period(bins, BIN_STEP) is None


def test_a_last_day_without_variation_to_correlate_finds_no_period() -> None:
    # GIVEN a day of a burst every 2 hours and then a flat day, or two flat days but for a
    # burst in the very last bin (no earlier window sees it)
    bursts: list[float | None] = [500.0 if i % 8 == 0 else 100.0 for i in range(BIN_DAY)]
    flat: list[float | None] = [100.0] * BIN_DAY
    # THEN no period is found, and nothing fails for want of a correlation
    assert find_period(bursts + flat, BIN_STEP) is None
    assert find_period(flat + flat[:-1] + [900.0], BIN_STEP) is None


@pytest.mark.parametrize("offset", [0, 1, 2])
def test_a_five_minute_burst_counts_whichever_step_of_its_bin_it_falls_on(offset: int) -> None:
    # GIVEN two days of 5-minute steps with a 5-minute burst every hour, at step `offset`
    # of the three in its 15-minute bin
    history: list[float | None] = [900.0 if i % 12 == offset else 100.0 for i in range(2 * DAY)]
    # THEN its bin holds the burst wherever it falls, and the hour is found
    assert find_period(history, STEP) == 60


def test_a_step_that_does_not_divide_a_bin_finds_no_period() -> None:
    # GIVEN two days of 10-minute steps with a burst every hour (a 15-minute bin cannot be
    # made of whole steps)
    history: list[float | None] = [900.0 if i % 6 == 0 else 100.0 for i in range(2 * 144)]
    # THEN no period is found
    assert find_period(history, 10) is None


# ------------------------------------------------------------------ the gate: a forecast earns its place


def _noisy_level(sigma: float = 0.1, seed: int = 1) -> list[float | None]:
    """4 days of noise (lognormal, ``sigma``) around a daily swing whose level fell by a
    fifth after the first day: the highest of past seasons is a quarter above the load."""
    rng = random.Random(seed)
    levels = (1.0, 0.8, 0.8, 0.8)
    return [
        1_000
        * levels[i // DAY]
        * (1.5 + math.sin(2 * math.pi * i / DAY))
        * rng.lognormvariate(0, sigma)
        for i in range(DAY * 4)
    ]


def _nightly_batch(days: int = 4) -> list[float | None]:
    day: list[float | None] = [20.0] * DAY
    day[24:48] = [8_000.0] * 24  # 02:00-04:00
    return day * days  # ends at midnight


def _plan_now(history: list[float | None]) -> tuple[FloorPlan | None, Forecast]:
    end = len(history) * STEP
    return plan_floors(history, end, end, 0.7, 1, 40_000)


def test_a_forecast_that_beats_reacting_alone_plans_and_says_so() -> None:
    history = _nightly_batch()
    scores = backtest(history, "daily", 0.9, 0.7, 1, 40_000)
    assert scores is not None and scores[0] < scores[1]
    plan, f = _plan_now(history)
    assert plan is not None and f.gate == EARNS
    assert "beats reacting alone" in f.reason


def test_a_usable_forecast_that_does_not_beat_reacting_alone_is_not_used() -> None:
    """Noisy load a fifth below its first day: the season's error is within MAX_ERROR, so
    the forecast alone would plan, but its floors (the highest of past seasons) hold more
    than reacting does for no load they cover: it does not earn its place."""
    history = _noisy_level()
    plan, f = _plan_now(history)
    assert f.error is not None and f.error <= MAX_ERROR  # usable by its own error
    assert plan is None and f.gate == IDLE
    assert "does not beat reacting alone" in f.reason


def test_the_gate_scores_refused_load_above_provisioned_capacity() -> None:
    """A forecast whose floors cover load that reacting alone refuses earns its place
    even where its floors hold more units: a refused unit weighs REFUSED_WEIGHT."""
    history = _nightly_batch()
    with_forecast, without = backtest(history, "daily", 0.7, 0.7, 1, 40_000) or (0.0, 0.0)
    assert with_forecast < without
    # a flat load: the floors (at the target) hold what reacting holds, no more: no gain
    flat: list[float | None] = [500.0] * (DAY * 4)
    with_forecast, without = backtest(flat, "daily", 0.7, 0.7, 1, 40_000) or (0.0, 1.0)
    assert with_forecast == without


def test_a_forecast_that_only_ties_with_reacting_alone_is_not_used() -> None:
    """A forecast must score better than reacting alone to be used: one that scores the
    same holds nothing more for the load, and is off."""
    # GIVEN a flat load, exactly forecast, under a target already at the highest aim: the
    # plan's floors hold what reacting at the target holds
    flat: list[float | None] = [500.0] * (DAY * 4)
    with_forecast, without = backtest(flat, "daily", MAX_AIM, MAX_AIM, 1, 40_000) or (0.0, 1.0)
    assert with_forecast == without
    # WHEN its plan is made
    end = len(flat) * STEP
    plan, f = plan_floors(flat, end, end, MAX_AIM, 1, 40_000)
    # THEN there is none: the forecast, usable by its error, is off
    assert f.error == 0 and f.peak == 500
    assert plan is None and f.gate == IDLE
    assert "does not beat reacting alone" in f.reason


def test_unknown_data_never_turns_the_forecast_off_nor_raises_its_aim() -> None:
    """An unknown step in the backtest's day: the gate cannot judge, and the forecast is
    used (turning it off could lower capacity on unknown data), but only for what it adds:
    its floors at the target, never an aim above it (which would size decreases lower
    and retarget an owned policy upward, as a forecast that earned its place may)."""
    history = _noisy_level()
    assert _plan_now(history)[0] is None  # judged on known data, it does not earn its place
    history[-3] = None
    assert backtest(history, "daily", 0.9, 0.7, 1, 40_000) is None
    plan, f = _plan_now(history)
    assert plan is not None and f.gate == UNKNOWN
    assert "not backtested" in f.reason and "used at the target" in f.reason
    assert plan.aim == 70
    assert (plan.reserve, plan.least) == (MAX_RESERVE, 0)  # a decrease only for a large saving
    # AND one that earns its place (aiming above the target) keeps, unjudged, floors at least
    # as high, at the target
    batch = _nightly_batch()
    known, _ = _plan_now(batch)
    assert known is not None and known.aim > 70
    batch[-3] = None
    unjudged, f = _plan_now(batch)
    assert unjudged is not None and f.gate == UNKNOWN and unjudged.aim == 70
    assert all(u >= k for u, k in zip(unjudged.floors, known.floors, strict=True))


def _replayed(
    history: list[float | None], season: str, aim: float, target: float, lo: int, hi: int
) -> tuple[float, float] | None:
    """`backtest` as its docstring says it, step by step from `_predict`: the plain
    replay the fast one (sliding maxima, sizes a day at once) must equal exactly."""
    season_steps = season_minutes(season) // STEP
    lookback = LOOKBACK.get(season, LOOKBACK["daily"])
    n, reach = len(history), LEAD_STEPS + BASELINE_STEPS - 1
    if n < DAY + reach or any(v is None for v in history[n - DAY - reach :]):
        return None

    def units(value: float) -> int:
        return max(lo, min(hi, capacity_units(value)))

    with_forecast = without = 0.0
    for i in range(n - DAY, n):
        load = history[i]
        recent = max(history[i - reach : i - LEAD_STEPS + 1])  # type: ignore[type-var]
        assert load is not None and recent is not None
        alone = units(recent / target)
        peak = _predict(history, season_steps, lookback, i - SPREAD_STEPS, FLOOR_STEPS, known=i)
        if peak is None:
            return None
        planned = max(units(peak / aim), units(recent / aim))
        without += alone + REFUSED_WEIGHT * max(0.0, load - alone)
        with_forecast += planned + REFUSED_WEIGHT * max(0.0, load - planned)
    return with_forecast, without


@settings(max_examples=examples(40), deadline=None)
@given(
    seed=st.integers(0, 2**32),
    days=st.floats(1.02, 15.0),
    season=st.sampled_from(["daily", "weekly"]),
    holes=st.integers(0, 3),
    aim=st.sampled_from([0.7, 0.83, 0.9]),
    bounds=st.sampled_from([(1, 40_000), (40, 40_000), (1, 300), (5, 5)]),
)
def test_the_backtest_scores_exactly_as_a_plain_replay(
    seed: int, days: float, season: str, holes: int, aim: float, bounds: tuple[int, int]
) -> None:
    """Any history (short ones, ones a season's windows start before, unknown steps,
    ties, bounds that clip): the backtest's scores equal the plain replay's to the bit."""
    rng = random.Random(seed)
    levels = [0.0, 35.0, 84.0, 120.0, 700.0, 1_000.0]
    history: list[float | None] = [
        rng.choice(levels) * rng.choice([1.0, 1.0, 0.5, rng.uniform(0.5, 2.0)])
        for _ in range(int(days * DAY))
    ]
    for _ in range(holes):
        history[rng.randrange(len(history))] = None
    expected = _replayed(history, season, aim, 0.7, *bounds)
    assert backtest(history, season, aim, 0.7, *bounds) == expected


ASKED: dict[str, list[Any]] = {  # what forecasts ask the gate, the first value first
    "season": ["daily", "weekly", "120 min"],
    "aim": [0.74, 0.7, 0.83],
    "target": [0.7, 0.5],
    "bounds": [(1, 40_000), (40, 40_000), (1, 300)],
}


@settings(max_examples=examples(40), deadline=None)
@given(
    seed=st.integers(0, 2**32),
    days=st.floats(1.0, 8.5),
    keep=st.sampled_from([None, DAY + 30, 2 * DAY + 7, 4 * DAY]),
    forecasts=st.lists(
        st.tuples(
            st.sampled_from([0, 1, 7, 12, 12, 12, 12, 12, 50, DAY + 3]),  # steps since the last
            st.sampled_from([None, None, *ASKED]),  # what the forecast asks anew, if anything
            st.sampled_from([None] * 6 + ["hole", "rewrite", "phase", "back", "other"]),
        ),
        min_size=2,
        max_size=12,
    ),
)
def test_a_kept_replay_scores_every_forecast_exactly_as_a_plain_replay(
    seed: int,
    days: float,
    keep: int | None,
    forecasts: list[tuple[int, str | None, str | None]],
) -> None:
    """One dimension's `Replay`, kept from forecast to forecast as the simulator keeps it,
    over a varied history: forecasts an hour apart, or none, one or more than a day of steps
    apart, asking with another season, aim, target or bounds now and then (changing one at
    a time, so a part kept under the others is taken, or must not be), a history kept to its
    last ``keep`` steps (its start moves past windows floors read), an unknown step
    anywhere, a past step rewritten, an end on another minute of its step, an end steps
    earlier than the last, another history altogether (on the same clock). Every
    forecast's scores equal the plain replay's of that history, and a new backtest's, to
    the bit."""
    rng = random.Random(seed)
    levels = [0.0, 35.0, 84.0, 120.0, 700.0, 1_000.0]

    def step() -> float:
        return rng.choice(levels) * rng.choice([1.0, 1.0, 0.5, rng.uniform(0.5, 2.0)])

    steps: list[float | None] = [step() for _ in range(int(days * DAY))]
    replay, phase = Replay(), 0
    asks = {name: values[0] for name, values in ASKED.items()}
    for since, change, event in forecasts:
        if change is not None:
            asks[change] = rng.choice(ASKED[change])
        steps += [step() for _ in range(since)]
        if event == "hole":
            steps[rng.randrange(len(steps))] = None
        elif event == "rewrite":
            steps[rng.randrange(len(steps))] = step()
        elif event == "phase":
            phase = rng.randrange(1, STEP)
        elif event == "back":  # the history ends earlier than the last one did
            del steps[len(steps) - rng.randint(1, 2 * DAY) :]
        elif event == "other":  # another history ending at the same step
            steps = [step() for _ in range(len(steps))]
        history = steps[-keep:] if keep else list(steps)
        season, aim, target, bounds = asks["season"], asks["aim"], asks["target"], asks["bounds"]
        expected = _replayed(history, season, aim, target, *bounds)
        end = len(steps) * STEP + phase
        assert replay.scores(history, end, season, aim, target, *bounds) == expected
        assert backtest(history, season, aim, target, *bounds) == expected


@pytest.mark.parametrize(("season", "keep"), [("daily", 2 * DAY + 7), ("weekly", 14 * DAY + 100)])
def test_a_kept_replay_replays_the_floors_a_later_start_takes_windows_from(
    season: str, keep: int
) -> None:
    """A history kept to its last ``keep`` steps (as the Lambda keeps 14 days), a forecast
    an hour: each hour its start moves past the windows some of the day's floors read a
    season or two back, and those floors (the larger of what is left) are replayed. Every
    forecast's scores equal the plain replay's to the bit."""
    rng = random.Random(7)
    steps: list[float | None] = [rng.choice([0.0, 84.0, 700.0, 1_000.0]) for _ in range(keep)]
    replay = Replay()
    for _ in range(48):
        steps += [rng.choice([0.0, 84.0, 700.0, 1_000.0]) for _ in range(12)]
        history = steps[-keep:]
        expected = _replayed(history, season, 0.74, 0.7, 1, 40_000)
        assert expected is not None
        assert replay.scores(history, len(steps) * STEP, season, 0.74, 0.7, 1, 40_000) == expected


@given(
    wholes=st.lists(st.integers(0, 100_000), min_size=1, max_size=20),
    offsets=st.lists(
        st.sampled_from([0.0, 1e-7, 4.9e-7, 5e-7, 1e-6, 1.9e-6, 2e-6, 2.1e-6, 0.5, 1 - 1e-9]),
        min_size=20,
        max_size=20,
    ),
    divisor=st.sampled_from([1.0, 0.7, 0.9, 0.33]),
    bounds=st.sampled_from([(1, 40_000), (40, 400), (7, 7)]),
)
def test_units_within_sizes_each_value_as_capacity_units_and_clamps(
    wholes: list[int], offsets: list[float], divisor: float, bounds: tuple[int, int]
) -> None:
    values = [(w + o) / divisor for w, o in zip(wholes, offsets, strict=False)]
    lo, hi = bounds
    assert units_within(values, lo, hi) == [max(lo, min(hi, capacity_units(v))) for v in values]


def test_a_kept_replay_replays_a_rewritten_past_step_again() -> None:
    """A history that rewrites a step the last forecast scored (CloudWatch delivering a late
    datapoint) is not taken from what was kept: the scores are the plain replay's."""
    rng = random.Random(5)
    steps: list[float | None] = [
        100.0 + 80.0 * math.sin(2 * math.pi * i / DAY) + rng.uniform(0, 5) for i in range(3 * DAY)
    ]
    replay, args = Replay(), ("daily", 0.74, 0.7, 1, 40_000)
    assert replay.scores(steps, len(steps) * STEP, *args) == _replayed(steps, *args)
    steps += [100.0] * 12
    steps[-DAY // 2] = 5_000.0  # a step of the day already scored, now far higher
    expected = _replayed(steps, *args)
    assert replay.scores(steps, len(steps) * STEP, *args) == expected
    assert Replay().scores(steps, len(steps) * STEP, *args) == expected


def test_a_plan_never_asks_more_than_the_dimensions_maximum() -> None:
    # GIVEN a daily season whose peaks need more than 5,000 units, under a maximum of 1,000
    profile = [100.0] * (DAY // 2) + [5_000.0] * (DAY - DAY // 2)
    history = profile * 4
    end = len(history) * STEP
    floors = set()
    for now in range(0, DAY * STEP, 97 * STEP):
        plan, forecast = plan_floors(
            history, end, end + now, 0.7, 1, 1_000, minute_of_day=now % (24 * 60)
        )
        # THEN every floor, and the least fall kept a decrease for, is within the maximum
        assert plan is not None, forecast.reason
        assert max(plan.floors) <= 1_000 and plan.least <= 1_000
        floors.add(max(plan.floors))
    assert 1_000 in floors  # the peaks did ask for more


def test_a_fall_larger_than_the_maximum_keeps_a_decrease_for_the_maximums_saving() -> None:
    """The least fall a decrease is kept for is counted in units within the maximum: a
    decrease saves at most that."""
    # GIVEN a daily load of 5,000/s from 12:00 to 20:00 and 100/s otherwise: at 20:00 a
    # fall of 4,900/s, 5,445 units at the plan's aim of 90 %
    hour = 60 // STEP
    day = [100.0] * DAY
    day[12 * hour : 20 * hour] = [5_000.0] * (8 * hour)
    history = day * 4  # ends at midnight
    end = len(history) * STEP
    fall = capacity_units(4_900 / 0.9)
    for high, least in ((40_000, fall), (1_000, 1_000)):
        # WHEN the plan is made at noon under a maximum above that fall, and one below it
        plan, f = plan_floors(history, end, end + 12 * 60, 0.7, 1, high, minute_of_day=12 * 60)
        assert plan is not None and f.gate == EARNS and plan.aim == 90, f.reason
        # THEN the decrease kept for the fall is worth the fall's saving, within the maximum
        assert (plan.reserve, plan.least) == (1, least)


def test_a_season_whose_error_is_exactly_the_most_allowed_is_used() -> None:
    # GIVEN a daily load with noise, and the error its best season makes on the last day
    profile = [100.0 + 50 * (i % 7) for i in range(DAY)]
    history = [v * (1 + 0.05 * ((i * 7919) % 11 - 5) / 5) for i, v in enumerate(profile * 4)]
    plan, forecast = plan_floors(history, len(history) * STEP, len(history) * STEP, 0.7, 1, 40_000)
    assert forecast.error is not None and forecast.error > 0
    error = forecast.error
    # THEN that error as the most allowed still uses the season; a hair less does not
    at_most, _ = plan_floors(
        history, len(history) * STEP, len(history) * STEP, 0.7, 1, 40_000, max_error=error
    )
    below, why = plan_floors(
        history, len(history) * STEP, len(history) * STEP, 0.7, 1, 40_000, max_error=error * 0.999
    )
    assert at_most is not None and below is None and ">" in why.reason
