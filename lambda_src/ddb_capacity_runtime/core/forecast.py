"""Recurring load, learned from a table's own history: a seasonal forecast and its error.

Pure functions, no I/O. ``history`` is demand per step (units per second, oldest first,
ending now; ``None`` where it is not known), at ``step`` minutes per step, up to 14 days.

For each season (a day, a week) the forecast of a future window is the highest of that
window's peaks one, two and three seasons earlier (a week: one and two), so a pattern must
have shown up before to be forecast, and one quiet day does not hide it. The forecast is
judged by its own error: every window of the last day is forecast from the history before
it and compared with what came, ``sum |forecast - actual| / sum actual``. The season with
the smaller error is used, and only when that error is at most ``max_error``; otherwise
there is no forecast and the caller reacts as it would without one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from .policy import capacity_units
from .series import Key
from .tables import ManagedTable

DAY_MINUTES = 1440
SEASONS = {"daily": DAY_MINUTES, "weekly": 7 * DAY_MINUTES}
#: How many past seasons a window's forecast looks at.
LOOKBACK = {"daily": 3, "weekly": 2}
#: The forecast must be within this relative error on the last day to be used.
MAX_ERROR = 0.35
#: How the autopilot uses it: 5-minute steps (CloudWatch's 5-minute sums, as average units
#: per second), 14 days of them, a forecast at the first tick of every hour for the window
#: from LEAD_MINUTES to WINDOW_MINUTES ahead (the hour, and the next forecast's lead).
STEP_MINUTES = 5
HISTORY_DAYS = 14
WINDOW_MINUTES = 75
LEAD_MINUTES = 10


@dataclass(frozen=True)
class Forecast:
    """The forecast peak (units per second) of a window ahead, or None when there is no
    usable forecast; which season, and the error on the last day that decided it."""

    peak: float | None
    season: str | None
    error: float | None
    reason: str


def _window_peak(history: Sequence[float | None], start: int, length: int) -> float | None:
    values = [v for v in history[max(start, 0) : max(start + length, 0)] if v is not None]
    return max(values) if values and start >= 0 else None


def _predict(
    history: Sequence[float | None], season_steps: int, lookback: int, start: int, length: int
) -> float | None:
    """The forecast peak of steps [start, start + length), from past seasons only."""
    peaks = [
        p
        for k in range(1, lookback + 1)
        if start + length - k * season_steps <= len(history)
        and (p := _window_peak(history, start - k * season_steps, length)) is not None
    ]
    return max(peaks) if peaks else None


def season_error(
    history: Sequence[float | None], step: int, season: str, window_steps: int
) -> float | None:
    """The relative error of ``season``'s forecast over the last day, or None without
    enough history to judge it."""
    season_steps = SEASONS[season] // step
    lookback = LOOKBACK[season]
    n = len(history)
    day = DAY_MINUTES // step
    if n < season_steps + day:
        return None
    predicted = actual = 0.0
    starts = range(n - day, n - window_steps + 1, window_steps)
    judged = 0
    for start in starts:
        guess = _predict(history[:start], season_steps, lookback, start, window_steps)
        came = _window_peak(history, start, window_steps)
        if guess is None or came is None:
            continue  # a window nothing is known of is not judged
        judged += 1
        predicted += abs(guess - came)
        actual += came
    if judged * 2 < len(starts):
        return None  # too little of the last day is known to judge
    if actual == 0:
        return 0.0 if predicted == 0 else float("inf")
    return predicted / actual


def forecast(
    history: Sequence[float | None],
    step: int,
    ahead_steps: int,
    window_steps: int,
    max_error: float = MAX_ERROR,
) -> Forecast:
    """The peak of the window from ``ahead_steps`` to ``ahead_steps + window_steps`` steps
    after the end of ``history``, by the season that forecast the last day best."""
    if step <= 0 or DAY_MINUTES % step:
        raise ValueError(f"step: got {step!r}; expected minutes that divide a day")
    judged = {
        season: error
        for season in SEASONS
        if (error := season_error(history, step, season, window_steps)) is not None
    }
    if not judged:
        return Forecast(None, None, None, "not enough history (a day more than a season)")
    season = min(judged, key=lambda name: judged[name])
    error = judged[season]
    if error > max_error:
        return Forecast(None, season, error, f"{season} error {error:.0%} > {max_error:.0%}")
    start = len(history) + ahead_steps
    peak = _predict(history, SEASONS[season] // step, LOOKBACK[season], start, window_steps)
    if peak is None:
        return Forecast(None, season, error, "no past season covers the window")
    return Forecast(peak, season, error, f"{season}, error {error:.0%} on the last day")


def floor_for(
    history: Sequence[float | None],
    history_end: int,
    now: int,
    target_utilization: float,
    min_capacity: int,
    max_capacity: int,
) -> tuple[int | None, Forecast]:
    """The autopilot's floor: the capacity (units) the forecast peak needs at the target,
    within [min, max], or None without a usable forecast. ``history`` ends at minute
    ``history_end`` (exclusive) and ``now`` is the tick's minute, on the same clock."""
    ahead = -(-(now + LEAD_MINUTES - history_end) // STEP_MINUTES)
    f = forecast(history, STEP_MINUTES, max(ahead, 0), WINDOW_MINUTES // STEP_MINUTES)
    if f.peak is None:
        return None, f
    units = capacity_units(f.peak / target_utilization)
    return max(min_capacity, min(max_capacity, units)), f


def forecast_tick(minute_of_hour: int, tick_minutes: int) -> bool:
    """Whether a tick at ``minute_of_hour`` is the hour's first, when the autopilot
    forecasts."""
    return minute_of_hour < tick_minutes


def raise_to_floors(table: ManagedTable, floors: Mapping[Key, int]) -> ManagedTable:
    """``table`` with the minimum of each dimension under a scalable target raised to its
    floor, where the floor is above both the target's minimum and the capacity now. The
    floor only raises: once capacity is there, target tracking keeps it while the load comes,
    and the scaler restores the configured minimum at a later tick. Dimensions without a
    target are left as they are (the forecast needs a minimum that outlives the tick)."""
    dims = []
    for d in table.dimensions:
        floor = floors.get(d.key)
        if (
            floor is not None
            and d.target is not None
            and floor > d.target.min_capacity
            and floor > d.provisioned
        ):
            d = replace(d, limits=replace(d.limits, min_capacity=min(floor, d.limits.max_capacity)))
        dims.append(d)
    return replace(table, dimensions=dims)
