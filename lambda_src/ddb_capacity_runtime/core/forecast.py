"""Runs in: scaler Lambda, workstation (simulator).

Recurring load, learned from a table's own history: a seasonal forecast and its error.

Pure functions, no I/O. ``history`` is demand per step (units per second, oldest first,
ending now; ``None`` where it is not known), at ``step`` minutes per step, up to 14 days.

For each season (a day, a week, and the period from an hour to a day that the history's
own last day repeats best, `find_period`) the forecast of a future window is the
highest of that window's peaks one, two and three seasons earlier (a week: one and two), so
a pattern must have shown up before to be forecast, and one quiet season does not hide it.
The forecast is judged by its own error: every window of the last day is forecast from the
history before it and compared with what came, ``sum |forecast - actual| / sum actual``.
The season with the smallest error is used, and only when that error is at most
``max_error``; otherwise there is no forecast and the caller reacts as it would without one.

A forecast must also earn its place (`backtest`): replayed over the last day of the
history, the capacity its plans would have held (the floors, and the aim they allow) must
score better than its own no-forecast baseline, the capacity reacting alone would have
held at the target, where a unit refused counts as ``REFUSED_WEIGHT`` units provisioned.
A forecast that does not is not used: the dimension reacts alone. One the backtest cannot
judge (an unknown step) is used as before, since unknown data never lowers capacity.
"""

from __future__ import annotations

import functools
import operator
import zlib
from collections.abc import Callable, Mapping, Sequence
from copy import copy
from dataclasses import dataclass, replace
from typing import ClassVar, TypeVar

from .floorplan import MAX_RESERVE, PLAN_MINUTES, PLAN_STEPS, STEP_MINUTES, FloorPlan
from .periods import DAY_MINUTES, find_period
from .policy import aim_for, capacity_units, units_within
from .series import Key
from .table_limits import Limits
from .tables import Dimension, ManagedTable

SEASONS = {"daily": DAY_MINUTES, "weekly": 7 * DAY_MINUTES}
LOOKBACK = {"daily": 3, "weekly": 2}
"""How many past seasons a window's forecast looks at (a season shorter than a day: as the daily
one)."""
MAX_ERROR = 0.35
"""The forecast must be within this relative error on the last day to be used."""
HISTORY_DAYS = 14
"""How the autopilot uses it: 5-minute steps (CloudWatch's 5-minute sums, as average units per
second), 14 days of them, and a forecast once an hour (forecast_minute). That forecast is a plan: a
floor for each step from the tick's step to PLAN_MINUTES later (the hour until the next forecast,
and a spare quarter hour should that one fail)."""
LEAD_MINUTES = 10
"""A step's floor covers the load forecast until LEAD_MINUTES after the step: what a raise needs to
land before the load (the next tick, and UpdateTable's latency)."""
SPREAD_MINUTES = 10
"""A step's forecast is the peak of past seasons within SPREAD_MINUTES either side of it, so a
pattern that comes a little early or late is still covered; the season's error is judged on windows
of that width."""
SPREAD_STEPS = SPREAD_MINUTES // STEP_MINUTES
"""A plan's floor for a step covers the forecast peak of this many steps: the step, its lead and
SPREAD_MINUTES either side, from SPREAD_STEPS before it."""
LEAD_STEPS = -(-LEAD_MINUTES // STEP_MINUTES)
FLOOR_STEPS = 1 + LEAD_STEPS + 2 * SPREAD_STEPS
KEEP_MINUTES = 30
"""Decreases look this far ahead in the plan: no decrease below what the forecast needs within it (a
decrease spent now would be undone by the raise, and the quota is daily)."""
FALL_FRACTION = 0.2
"""While a plan is in force the dimension aims higher than its target, as far as the forecast's own
error allows: `policy.aim_for` (1 / (1 + error + HEADROOM), at most MAX_AIM). The headroom a target
leaves is for load that comes before a raise can; a forecast that was right needs less of it. A fall
the plan keeps a decrease for: an hour whose forecast peak is at least this much below the hour's
before it."""
REFUSED_WEIGHT = 100.0
"""The backtest (`backtest`): a unit of demand the capacity did not cover for a step counts as this
many units provisioned for it. High, as 5-minute steps hide the minutes of a burst that are refused
(benchmarks/padding.py: with 10, noisy diurnal traffic lost the forecast that kept its refusals
below stock target tracking's)."""
BASELINE_STEPS = 3
"""The backtest's no-forecast baseline holds the peak of this many steps, ending LEAD_MINUTES before
the step, at the target: a raise lands LEAD_MINUTES after the load that asks for it, and a decrease
waits for a quarter hour of low load, as target tracking's do."""
EARNS, IDLE, UNKNOWN = "earns", "off", "unknown"
"""The gate's states (`Forecast.gate`, the ``forecast`` event and the decisions)."""


@dataclass(frozen=True)
class Forecast:
    """The forecast peak (units per second) of a window ahead, or None when there is no
    usable forecast; which season, and the error on the last day that decided it."""

    peak: float | None
    season: str | None
    error: float | None
    reason: str
    gate: str = UNKNOWN
    """whether the forecast earned its place (`backtest`): EARNS, IDLE (it did not: no plan),
    UNKNOWN (not judged: an unknown step, or no plan was made to judge)"""


def _known_peak(window: Sequence[float | None]) -> float | None:
    """The highest known value of a non-empty ``window``; None if none is known."""
    try:
        return max(window)  # type: ignore[type-var]
    except TypeError:  # unknown steps among them: skipped
        values = [v for v in window if v is not None]
        return max(values) if values else None


def _window_peak(history: Sequence[float | None], start: int, length: int) -> float | None:
    """The highest known value of steps [start, start + length); None if none is known."""
    if start < 0:
        return None
    window = history[start : start + length]
    return _known_peak(window) if window else None


def _predict(
    history: Sequence[float | None],
    season_steps: int,
    lookback: int,
    start: int,
    length: int,
    known: int | None = None,
) -> float | None:
    """The forecast peak of steps [start, start + length), from past seasons only, as known
    from the first ``known`` steps of ``history`` (all of it by default): the highest of the
    windows' peaks, the first of equal ones (as `max` picks)."""
    limit = (len(history) if known is None else known) - start - length
    best: float | None = None
    for back in range(season_steps, (lookback + 1) * season_steps, season_steps):
        first = start - back
        if -back > limit or first < 0:
            continue
        window = history[first : first + length]
        if not window:
            continue
        try:
            p = max(window)  # type: ignore[type-var]
        except TypeError:
            p = _known_peak(window)
        if p is not None and (best is None or p > best):
            best = p
    return best


def _window_peaks(
    history: Sequence[float | None], first: int, count: int, length: int
) -> list[float | None] | None:
    """The peaks of ``count`` adjacent windows of ``length`` steps from step ``first`` (None
    for a window starting before the history), or None when one of them is not whole or
    holds an unknown step: the caller then takes them one by one (`_window_peak`)."""
    skipped = min(count, max(0, -(first // length))) if first < 0 else 0
    start = first + skipped * length
    chunk = history[start : start + (count - skipped) * length]
    if length < 2 or len(chunk) != (count - skipped) * length:
        return None
    try:  # each window's max over its steps in order, as max(window) takes it
        peaks: list[float | None] = list(map(max, *(chunk[i::length] for i in range(length))))
    except TypeError:  # an unknown step
        return None
    return [None] * skipped + peaks


def _judge(
    history: Sequence[float | None], season_steps: int, lookback: int, starts: range
) -> tuple[int, float, float] | None:
    """`season_error`'s sums over the adjacent windows ``starts`` (judged windows,
    sum |forecast - actual|, sum actual), from whole windows' peaks; None when a window is
    not whole or holds an unknown step, or a season is shorter than a window."""
    length, count = starts.step, len(starts)
    if length > season_steps or not count:
        return None
    came = _window_peaks(history, starts.start, count, length)
    pasts = [
        _window_peaks(history, starts.start - k * season_steps, count, length)
        for k in range(1, lookback + 1)
    ]
    if came is None or any(p is None for p in pasts):
        return None
    judged, predicted, actual = 0, 0.0, 0.0
    for j, actual_peak in enumerate(came):
        guess: float | None = None
        for past in pasts:
            p = past[j]  # type: ignore[index]
            if p is not None and (guess is None or p > guess):
                guess = p
        if guess is None or actual_peak is None:
            continue
        judged += 1
        predicted += abs(guess - actual_peak)
        actual += actual_peak
    return judged, predicted, actual


def season_minutes(season: str) -> int:
    """The length of ``season``: ``daily``, ``weekly``, or a short period named by
    `period_name` (``"120 min"``)."""
    known = SEASONS.get(season)
    return known if known is not None else int(season.split()[0])


def period_name(minutes: int) -> str:
    """The name of a season of ``minutes`` (shorter than a day)."""
    return f"{minutes} min"


def _lookback(season: str) -> int:
    return LOOKBACK.get(season, LOOKBACK["daily"])


def season_error(
    history: Sequence[float | None], step: int, season: str, window_steps: int
) -> float | None:
    """The relative error of ``season``'s forecast over the last day, or None without
    enough history to judge it."""
    season_steps = season_minutes(season) // step
    lookback = _lookback(season)
    n = len(history)
    day = DAY_MINUTES // step
    if n < season_steps + day:
        return None
    starts = range(n - day, n - window_steps + 1, window_steps)
    sums = _judge(history, season_steps, lookback, starts)
    if sums is None:  # window by window
        sums = 0, 0.0, 0.0
        for start in starts:
            guess = _predict(history, season_steps, lookback, start, window_steps, known=start)
            came = _window_peak(history, start, window_steps)
            if guess is None or came is None:
                continue  # a window nothing is known of is not judged
            sums = sums[0] + 1, sums[1] + abs(guess - came), sums[2] + came
    judged, predicted, actual = sums
    if judged * 2 < len(starts):
        return None  # too little of the last day is known to judge
    if actual == 0:
        return 0.0 if predicted == 0 else float("inf")
    return predicted / actual


def _season(
    history: Sequence[float | None], step: int, window_steps: int, max_error: float
) -> tuple[str | None, float | None, str, bool]:
    """The season that forecast the last day best, its error, why, and whether it is good
    enough to use (its error at most ``max_error``)."""
    if step <= 0 or DAY_MINUTES % step:
        raise ValueError(f"step: got {step!r}; expected minutes that divide a day")
    seasons = list(SEASONS)
    short = find_period(history, step)
    if short is not None and short // step >= window_steps:
        seasons.append(period_name(short))
    judged = {
        season: error
        for season in seasons
        if (error := season_error(history, step, season, window_steps)) is not None
    }
    if not judged:
        return None, None, "not enough history (a day more than a season)", False
    season = min(judged, key=lambda name: judged[name])
    error = judged[season]
    if error > max_error:
        return season, error, f"{season} error {error:.0%} > {max_error:.0%}", False
    return season, error, f"{season}, error {error:.0%} on the last day", True


def forecast(
    history: Sequence[float | None],
    step: int,
    ahead_steps: int,
    window_steps: int,
    max_error: float = MAX_ERROR,
) -> Forecast:
    """The peak of the window from ``ahead_steps`` to ``ahead_steps + window_steps`` steps
    after the end of ``history``, by the season that forecast the last day best."""
    season, error, reason, usable = _season(history, step, window_steps, max_error)
    if season is None or not usable:
        return Forecast(None, season, error, reason)
    start = len(history) + ahead_steps
    peak = _predict(history, season_minutes(season) // step, _lookback(season), start, window_steps)
    if peak is None:
        return Forecast(None, season, error, "no past season covers the window")
    return Forecast(peak, season, error, reason)


def falls_ahead(
    history: Sequence[float | None], season: str, position: int, steps: int
) -> list[float]:
    """The falls the season forecasts in the ``steps`` from ``position`` (history steps, the
    first one future), each as the load it takes away (units per second): hours whose
    forecast peak is at least FALL_FRACTION below the hour's before. Each will want a
    decrease, worth its size."""
    hour = 60 // STEP_MINUTES
    season_steps = season_minutes(season) // STEP_MINUTES
    peaks = [
        _predict(
            history, season_steps, _lookback(season), start, min(hour, position + steps - start)
        )
        for start in range(position, position + steps, hour)
    ]
    return [
        before - after
        for before, after in zip(peaks, peaks[1:], strict=False)
        if before is not None and after is not None and after < before * (1 - FALL_FRACTION)
    ]


def _plan_peaks(
    history: Sequence[float | None], history_end: int, season: str, first: int
) -> list[float] | None:
    """The forecast peak of each of a plan's steps from minute ``first`` (`plan_floors`),
    widened by SPREAD_MINUTES either side; None when no past season covers one."""
    season_steps = season_minutes(season) // STEP_MINUTES
    lookback = _lookback(season)
    peaks: list[float] = []
    for i in range(PLAN_STEPS):
        position = len(history) + (first + i * STEP_MINUTES - history_end) // STEP_MINUTES
        peak = _predict(history, season_steps, lookback, position - SPREAD_STEPS, FLOOR_STEPS)
        if peak is None:
            return None
        peaks.append(peak)
    return peaks


def plan_floors(
    history: Sequence[float | None],
    history_end: int,
    now: int,
    target_utilization: float,
    min_capacity: int,
    max_capacity: int,
    max_error: float = MAX_ERROR,
    *,
    minute_of_day: int | None = None,
    replay: Replay | None = None,
) -> tuple[FloorPlan | None, Forecast]:
    """The autopilot's plan at minute ``now``: for each step from the one holding ``now``
    to PLAN_MINUTES later, the capacity the forecast peak from that step to LEAD_MINUTES
    after it needs at the target (within [min, max]), each forecast widened by
    SPREAD_MINUTES either side. None without a usable forecast, or when the minimum
    covers all of it. With ``minute_of_day`` (``now``'s, on the decrease quota's UTC day),
    the plan's reserve is the falls the forecast sees from the plan's end to the day's end.
    ``history`` ends at minute ``history_end`` (exclusive), on the same clock as ``now``;
    the plan's steps are the history's. The gate replays with ``replay``, the dimension's
    kept from its last forecast (the same verdict, the steps since replayed), or anew."""
    season, error, reason, usable = _season(history, STEP_MINUTES, 2 * SPREAD_STEPS + 1, max_error)
    if season is None or not usable:
        return None, Forecast(None, season, error, reason)
    assert error is not None
    aim = aim_for(error, target_utilization)
    first = now - (now - history_end) % STEP_MINUTES  # on the history's steps
    peaks = _plan_peaks(history, history_end, season, first)
    if peaks is None:
        return None, Forecast(None, season, error, "no past season covers the plan")

    def floors_at(aim: float) -> list[int]:
        return [max(min_capacity, min(max_capacity, capacity_units(p / aim))) for p in peaks]

    floors = floors_at(aim)
    if max(floors) <= min_capacity:
        return None, Forecast(max(peaks), season, error, f"{reason}; the minimum covers it")
    scores = (replay or Replay()).scores(
        history, history_end, season, aim, target_utilization, min_capacity, max_capacity
    )
    if scores is not None and scores[0] >= scores[1]:
        why = f"{reason}; {gate_reason(scores)}"
        return None, Forecast(max(peaks), season, error, why, IDLE)
    reason = f"{reason}; {gate_reason(scores)}"
    if scores is None:  # not judged: the plan only adds: floors at the target, no higher aim,
        aim = target_utilization  # and (below) every decrease kept for a large saving
        floors = floors_at(aim)
    falls: list[float] = []
    if minute_of_day is not None and scores is not None:  # the falls to the UTC day's end
        left = DAY_MINUTES - (minute_of_day - (now - first) + PLAN_MINUTES)
        end = len(history) + (first + PLAN_MINUTES - history_end) // STEP_MINUTES
        falls = falls_ahead(history, season, end, max(left, 0) // STEP_MINUTES)
        falls = sorted(falls, reverse=True)[:MAX_RESERVE]
    # the smallest fall's saving, in units at the aim (at most the quota, as a floor)
    least = min(max_capacity, capacity_units(falls[-1] / aim)) if falls else 0
    reserve = len(falls) if scores is not None else MAX_RESERVE
    plan = FloorPlan(first, tuple(floors), round(aim * 100), reserve, least)
    return plan, Forecast(max(peaks), season, error, reason, UNKNOWN if scores is None else EARNS)


def backtest(
    history: Sequence[float | None],
    season: str,
    aim: float,
    target_utilization: float,
    min_capacity: int,
    max_capacity: int,
) -> tuple[float, float] | None:
    """Whether the forecast earns its place: the last day of ``history`` replayed twice,
    step by step. Without the forecast (its baseline), the capacity holds the peak of the
    BASELINE_STEPS steps ending LEAD_STEPS before each step, at the target; with it, the
    larger of that peak at ``aim`` and the plan's floor for the step (``season``'s
    forecast, from the history before the step, at ``aim``). Each is scored as the units
    it held plus REFUSED_WEIGHT times the load it did not cover, summed over the steps;
    returns (the score with the forecast, the score without): it earns its place when the
    first is lower. None when a step it reads is unknown or no past season covers a step
    (not judged). A new `Replay`'s, which replays the whole day."""
    return Replay().scores(
        history,
        len(history) * STEP_MINUTES,
        season,
        aim,
        target_utilization,
        min_capacity,
        max_capacity,
    )


class Replay:
    """`backtest`'s replay of one dimension, kept from one forecast to the next (the
    simulator keeps one a dimension; the scaler Lambda reads its history afresh each hour
    and replays it whole). Each step of the day replayed is sized and scored once: a later
    forecast, whose history ends whole steps later and equals this one's where the two
    overlap, replays only the steps that came since and takes the rest as kept. The scores
    are a whole replay's to the bit: a step's baseline peak, floor and two scores depend
    only on the history before it and on what they were made with (the season; the aim,
    the target and the bounds), so each is kept under those, and the day's scores are
    summed over its steps in order. Any other history (not later, different where it
    overlaps, or starting later past a window a floor read) is replayed whole, or the
    floors it changes are."""

    KEPT: ClassVar[int] = 16
    """The most parts of each kind kept (the least recently used goes first): the aims an
    hourly forecast moves between, at most."""

    def __init__(self) -> None:
        self._seen: tuple[int, int, list[float | None]] | None = None
        """the last history given: its end (a step number), the end's minute within its
        step, and a copy of it"""
        self._recents: dict[None, tuple[int, list[float]]] = {}
        """each step's baseline peak (under None)"""
        self._floors: dict[str, tuple[int, list[float | None]]] = {}
        """each step's floor peak, per season"""
        self._alone: dict[tuple[float, int, int], tuple[int, list[float]]] = {}
        """each step's score without the forecast, per (target, bounds)"""
        self._planned: dict[tuple[str, float, int, int], tuple[int, list[float]]] = {}
        """each step's score with it, per (season, aim, bounds)"""

    def scores(
        self,
        history: Sequence[float | None],
        end: int,
        season: str,
        aim: float,
        target_utilization: float,
        min_capacity: int,
        max_capacity: int,
    ) -> tuple[float, float] | None:
        """`backtest`'s scores of ``history``, which ends at minute ``end`` (on any clock
        the histories given share)."""
        last = self._follow(history, end)
        day = DAY_MINUTES // STEP_MINUTES
        n = len(history)
        reach = LEAD_STEPS + BASELINE_STEPS - 1
        if n < day + reach or None in history[n - day - reach :]:
            return None
        first, at = last - day, n - last  # step s is history[s + at]
        known: Sequence[float] = history[n - day - reach :]  # type: ignore[assignment]
        steps, lookback = season_minutes(season) // STEP_MINUTES, _lookback(season)
        found = _kept(
            self._floors, season, last, lambda s: _floors(history, steps, lookback, s + at)
        )
        if None in found:
            return None
        floors: list[float] = found  # type: ignore[assignment]  # (none unknown: checked)
        recents = _kept(
            self._recents,
            None,
            last,
            lambda s: _sliding_maxima(known, s - first, last - s, BASELINE_STEPS),
        )
        loads, bounds = known[reach:], (min_capacity, max_capacity)
        alone = _kept(
            self._alone,
            (target_utilization, *bounds),
            last,
            lambda s: _scored(
                loads[s - first :], recents[s - first :], None, target_utilization, *bounds
            ),
        )
        planned = _kept(
            self._planned,
            (season, aim, *bounds),
            last,
            lambda s: _scored(
                loads[s - first :], recents[s - first :], floors[s - first :], aim, *bounds
            ),
        )
        return functools.reduce(operator.add, planned, 0.0), functools.reduce(
            operator.add, alone, 0.0
        )

    def _follow(self, history: Sequence[float | None], end: int) -> int:
        """The step number ``history`` ends at; forgets every part kept that it does not
        bear out."""
        last, phase = divmod(end, STEP_MINUTES)
        now = list(history)
        start, seen, self._seen = last - len(now), self._seen, (last, phase, now)
        if seen is None:
            return last
        was_last, was_phase, was = seen
        was_start = was_last - len(was)
        if (
            phase != was_phase
            or not was_start <= start < was_last <= last
            or now[: was_last - start] != was[start - was_start :]
        ):
            self._recents.clear()
            self._floors.clear()
            self._alone.clear()
            self._planned.clear()
        elif start > was_start:
            self._started(was_start, start)
        return last

    def _started(self, was_start: int, start: int) -> None:
        """Forget the floors, and the scores made with them, of steps whose windows start
        from step ``was_start`` up to ``start``: a history that starts later no longer
        holds them (`_predict` skips them)."""
        for season, (last, floors) in list(self._floors.items()):
            if _crossed(season, last - len(floors), last, was_start, start):
                del self._floors[season]
        for key, (last, scores) in list(self._planned.items()):
            if _crossed(key[0], last - len(scores), last, was_start, start):
                del self._planned[key]


def _crossed(season: str, first: int, last: int, was_start: int, start: int) -> bool:
    """Whether a floor of a step from ``first`` to ``last`` (exclusive) reads a window of
    ``season`` that starts from step ``was_start`` up to ``start``."""
    steps, lookback = season_minutes(season) // STEP_MINUTES, _lookback(season)
    return any(
        first < start + SPREAD_STEPS + back and was_start + SPREAD_STEPS + back < last
        for back in range(steps, (lookback + 1) * steps, steps)
    )


_K = TypeVar("_K")
_V = TypeVar("_V")


def _kept(
    kept: dict[_K, tuple[int, list[_V]]],
    key: _K,
    last: int,
    make: Callable[[int], list[_V]],
) -> list[_V]:
    """The values of the day's steps, the day ending at step ``last``: those ``kept``
    under ``key`` still in the day, and ``make(s)``'s, the steps from ``s`` on, for the
    rest (kept in turn)."""
    first = last - DAY_MINUTES // STEP_MINUTES
    end, values = kept.pop(key, (last, []))
    if end - len(values) <= first <= end <= last:
        values = values[len(values) - (end - first) :]
        if end < last:
            values += make(end)
    else:
        values = make(first)
    kept[key] = last, values
    while len(kept) > Replay.KEPT:
        del kept[next(iter(kept))]
    return values


def _floors(
    history: Sequence[float | None], season_steps: int, lookback: int, first: int
) -> list[float | None]:
    """The plan's floor peak of each step from ``first`` to the history's end, as
    `_predict` gives it from the history before the step."""
    floors = _floor_peaks(history, season_steps, lookback, first)
    if floors is None:  # step by step
        floors = [
            _predict(history, season_steps, lookback, i - SPREAD_STEPS, FLOOR_STEPS, known=i)
            for i in range(first, len(history))
        ]
    return floors


def _scored(
    loads: Sequence[float],
    recents: Sequence[float],
    floors: Sequence[float] | None,
    utilization: float,
    min_capacity: int,
    max_capacity: int,
) -> list[float]:
    """Each step's score: the units held at ``utilization`` (the baseline's peak, or the
    larger of it and the floor's: units are monotone, so those of the larger load), plus
    REFUSED_WEIGHT times the load they did not cover."""
    if floors is None:
        sizes = [recent / utilization for recent in recents]
    else:
        sizes = [load / utilization for load in map(max, floors, recents)]
    units = units_within(sizes, min_capacity, max_capacity)
    return [
        u + REFUSED_WEIGHT * (load - u) if load > u else u
        for load, u in zip(loads, units, strict=True)
    ]


def _floor_peaks(
    history: Sequence[float | None], season_steps: int, lookback: int, first: int
) -> list[float | None] | None:
    """For each step ``i`` from ``first`` to the history's end, what `_predict` gives
    for the plan's floor there (``i - SPREAD_STEPS``, FLOOR_STEPS steps, known up to
    ``i``): per season back, the sliding maximum over the windows those steps read, and
    the first largest of the seasons. None when one of those steps is unknown, a season is
    not longer than a floor's window, or a season's windows start before the history for
    some of the steps only (the caller then asks `_predict` step by step)."""
    n = len(history)
    if season_steps <= FLOOR_STEPS:
        return None
    columns: list[list[float]] = []
    for back in range(season_steps, (lookback + 1) * season_steps, season_steps):
        start, end = first - SPREAD_STEPS - back, n - SPREAD_STEPS - back
        if end <= 0:
            continue  # no step's window for this season starts in the history
        if start < 0:
            return None
        try:  # each window's maximum, window j starting at step start + j
            columns.append(_sliding_maxima(history, start, end - start, FLOOR_STEPS))  # type: ignore[arg-type]
        except TypeError:  # an unknown step
            return None
    if not columns:
        return [None] * (n - first)
    # the first largest, as max() takes it
    return list(columns[0]) if len(columns) == 1 else list(map(max, *columns))


def _sliding_maxima(values: Sequence[float], first: int, count: int, length: int) -> list[float]:
    """The maxima of the ``count`` windows of ``length`` steps of ``values`` that start at
    steps ``first``, ``first + 1``, ..., each the first largest (as max() takes it), in one
    pass; raises TypeError where a window holds an unknown step (None)."""
    return list(map(max, *(values[first + k : first + k + count] for k in range(length))))


def gate_reason(scores: tuple[float, float] | None) -> str:
    """The gate's verdict in words, from `backtest`'s scores."""
    if scores is None:
        return (
            "not backtested (an unknown step): used at the target, its floors only (every "
            "decrease kept for a large saving)"
        )
    with_forecast, without = scores
    verb = "beats" if with_forecast < without else "does not beat"
    return f"{verb} reacting alone over the last day (score {with_forecast:,.0f} vs {without:,.0f})"


@functools.lru_cache(maxsize=1024)  # asked each tick; the answer never changes
def forecast_minute(table: str) -> int:
    """The minute of the hour from which ``table`` forecasts: one of the hour's 5-minute
    steps, picked by the CRC-32 of its name (stable across runs and processes), so the
    tables of an account spread their forecasts, 14-day history reads (25 dimensions a
    GetMetricData call) and plan writes over the hour."""
    return zlib.crc32(table.encode()) % (60 // STEP_MINUTES) * STEP_MINUTES


def forecast_due(table: str, minute_of_hour: int, tick_minutes: int) -> bool:
    """Whether a tick at ``minute_of_hour`` is ``table``'s forecast tick: the first at or
    after its `forecast_minute` (one tick an hour, whatever the tick's length)."""
    return (minute_of_hour - forecast_minute(table)) % 60 < min(tick_minutes, 60)


def _with(d: Dimension, **changes: object) -> Dimension:
    """``dataclasses.replace(d, **changes)`` for a `Dimension`, whose fields are all
    init fields without a ``__post_init__``: the same object, made by copying its fields
    (a tick's hot path)."""
    made: Dimension = object.__new__(type(d))
    made.__dict__.update(d.__dict__, **changes)
    return made


def plan_asks(plan: FloorPlan, minute: int) -> tuple[int | None, int | None]:
    """What ``plan`` asks of its dimension at ``minute`` (all `apply_plans` reads of
    it besides its aim, reserve and least fall): the floor in force (None outside the
    plan), and the highest floor of the next KEEP_MINUTES (None once the plan has ended)."""
    return plan.at(minute), plan.highest(minute, KEEP_MINUTES)


def with_plans(table: ManagedTable, fresh: Mapping[Key, FloorPlan | None]) -> ManagedTable:
    """``table`` with this hour's plans ``fresh``: every dimension the forecast reached gets
    its new plan, or loses its old one (None); the others keep theirs. The tick decides on
    them before it keeps them in the state store (`scaler.plans.keep_plans`)."""
    if not any(d.key in fresh for d in table.dimensions):
        return table
    dims = [replace(d, plan=fresh[d.key]) if d.key in fresh else d for d in table.dimensions]
    return replace(table, dimensions=dims)


def apply_plans(table: ManagedTable, plans: Mapping[Key, FloorPlan], minute: int) -> ManagedTable:
    """``table`` as the plans ask at ``minute``: each planned dimension's minimum raised to
    the floor in force (never lowered: the configured minimum stays the least), and its
    ``keep``, the highest floor of the next KEEP_MINUTES, under which no decrease goes. A
    dimension under a scalable target gets the floor as the target's minimum, so target
    tracking cannot scale in below it; one without gets it as an UpdateTable raise."""
    if not plans:
        return table
    dims = []
    for d in table.dimensions:
        plan = plans.get(d.key)
        floor, keep = plan_asks(plan, minute) if plan else (None, None)
        if plan is None or keep is None:  # no plan, or one that has ended
            dims.append(d)
            continue
        limits = d.limits
        if floor is not None:
            limits = Limits(
                max(limits.min_capacity, min(floor, limits.max_capacity)),
                limits.max_capacity,
                max(limits.target_utilization, plan.aim / 100),
            )
        dims.append(
            _with(
                d,
                limits=limits,
                keep=min(keep, limits.max_capacity),
                reserve=plan.reserve,
                least_fall=plan.least,
            )
        )
    planned = copy(table)  # a shallow copy with the new dimensions (a tick's hot path)
    planned.dimensions = dims
    return planned
