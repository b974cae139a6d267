"""The autopilot's forecast (core/forecast.py): properties on synthetic periodic series."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddb_capacity_runtime.core.forecast import MAX_ERROR, forecast, season_error

STEP = 5
DAY = 1440 // STEP


@settings(max_examples=30, deadline=None)
@given(
    profile=st.lists(st.floats(0, 5_000, allow_nan=False), min_size=DAY, max_size=DAY),
    days=st.integers(4, 9),
    ahead=st.integers(0, 40),
    window=st.integers(1, 24),
)
def test_an_exactly_daily_series_is_forecast_exactly(profile, days, ahead, window):
    history = profile * days
    f = forecast(history, STEP, ahead, window)
    assert f.error == 0 and f.season in ("daily", "weekly")
    start = (len(history) + ahead) % DAY
    expected = max((profile * 2)[start : start + window])
    assert f.peak == pytest.approx(expected)


@settings(max_examples=20, deadline=None)
@given(
    profile=st.lists(st.floats(1, 5_000, allow_nan=False), min_size=DAY, max_size=DAY),
    scale=st.floats(0.1, 10),
)
def test_the_forecast_scales_with_the_load(profile, scale):
    history = profile * 4
    base = forecast(history, STEP, 3, 12)
    scaled = forecast([v * scale for v in history], STEP, 3, 12)
    assert base.peak is not None and scaled.peak == pytest.approx(base.peak * scale)


def test_a_nightly_batch_is_forecast_ahead_and_quiet_hours_are_not():
    day = [20.0] * DAY
    day[24:48] = [8_000.0] * 24  # 02:00-04:00
    history = day * 5  # ends at midnight
    batch = forecast(history, STEP, 24, 12)  # 02:00-03:00 tomorrow
    quiet = forecast(history, STEP, 72, 12)  # 06:00-07:00
    assert batch.peak == 8_000 and quiet.peak == 20
    assert batch.reason.startswith(("daily", "weekly"))


def test_noise_is_no_forecast_and_says_why():
    rng = random.Random(3)
    history = [rng.choice([0.0, 10.0, 5_000.0]) for _ in range(DAY * 4)]
    f = forecast(history, STEP, 2, 1)  # one step: a spike is there or not, at random
    assert f.peak is None and f.error is not None and f.error > MAX_ERROR
    assert "error" in f.reason


def test_too_little_history_is_no_forecast():
    f = forecast([100.0] * (DAY + 10), STEP, 2, 6)
    assert f.peak is None and f.reason.startswith("not enough history")
    assert season_error([100.0] * (DAY + 10), STEP, "daily", 6) is None


def test_unknown_steps_are_skipped_not_read_as_zero():
    day = [100.0] * DAY
    history: list[float | None] = list(day * 4)
    history[-DAY + 10] = None  # yesterday, at the window's time
    f = forecast(history, STEP, 10, 1)
    assert f.peak == 100.0


def test_a_bad_step_is_refused_by_name():
    with pytest.raises(ValueError, match="step: got 7"):
        forecast([1.0], 7, 1, 1)
