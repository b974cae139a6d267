"""Runs in: scaler Lambda, workstation (simulator).

The period shorter than a day that a load repeats at (`find_period`): one of the forecast's
seasons (core.forecast), learned from the last day of a history of 5-minute steps. Pure
functions, no I/O.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

DAY_MINUTES = 1440
"""A day, the longest season (core.forecast's daily one), in minutes."""
BIN_MINUTES = 15
"""`find_period` compares the load of BIN_MINUTES bins (bursts of a few minutes still show in them,
and the search costs a third of what 5-minute steps would)."""
SHORT_PERIODS = tuple(m for m in range(60, DAY_MINUTES, BIN_MINUTES) if DAY_MINUTES % m == 0)
"""The periods shorter than a day `find_period` tries, in minutes: from an hour, every whole number
of bins that divides a day (the periods of jobs a scheduler starts every N minutes or hours)."""
MIN_CORRELATION = 0.5
"""A short period is tried only if the last day repeats it at least this well (the correlation of
each bin with the bin one period earlier), and better than a day."""
CORRELATION_TIE = 0.05
"""Periods whose correlations are within this of the best one's tie: the shortest is taken."""
PEAK = 0.1
"""A period's correlation must pass its half period's by this much: a load that repeats does so at
its period, not at every lag (as a smooth one seems to)."""


def find_period(history: Sequence[float | None], step: int) -> int | None:
    """The period of `SHORT_PERIODS` (minutes) that the last day of ``history``
    repeats best, in `BIN_MINUTES` bins: the correlation of each bin with the bin one
    period earlier, at least `MIN_CORRELATION` and not below the day's own (a load
    the day repeats clearly better is left to the daily season); of periods within
    `CORRELATION_TIE` of the best, the shortest (a load that repeats every 2 hours
    repeats every 4 as well). A period must repeat better than its half period, by
    `PEAK`: a smooth load correlates with itself at any short lag, and has no period.
    Only periods the history covers before its last day are tried. None if none qualifies,
    or when a step it reads is unknown."""
    bins = _bins(history, step)
    if bins is None:
        return None
    values, before = bins
    periods = [m for m in SHORT_PERIODS if m // BIN_MINUTES <= before]
    if not periods:
        return None
    r = _lag_correlations(values, before, periods)
    daily = r.get(DAY_MINUTES)
    found = {
        m: c
        for m in periods
        if (c := r[m]) is not None and c >= MIN_CORRELATION and c > (r[m // 2] or 0.0) + PEAK
    }
    best = max(found.values(), default=None)
    if best is None or (daily is not None and best < daily - CORRELATION_TIE):
        return None
    return min(m for m, c in found.items() if c >= best - CORRELATION_TIE)


def _bins(history: Sequence[float | None], step: int) -> tuple[list[float], int] | None:
    """The `BIN_MINUTES` bins `find_period` reads: each bin's sum over the last day of
    ``history`` and as much before it as is known, up to a day, and how many bins come
    before the last day. None when ``step`` does not divide a bin, or a step it reads is
    unknown."""
    per_bin = BIN_MINUTES // step if step > 0 and BIN_MINUTES % step == 0 else 0
    if not per_bin:
        return None
    day = DAY_MINUTES // BIN_MINUTES
    before = min(day, len(history) // per_bin - day)
    if before <= 0:
        return [], 0
    span = history[len(history) - (day + before) * per_bin :]
    try:  # each bin's sum (an unknown step fails it)
        bins: list[float] = list(span[0::per_bin])  # type: ignore[arg-type]
        for k in range(1, per_bin):
            bins = list(map(operator.add, bins, span[k::per_bin]))
    except TypeError:
        return None
    return bins, before


def _lag_correlations(
    bins: Sequence[float], before: int, periods: Sequence[int]
) -> dict[int, float | None]:
    """The last day's correlation (of `_bins`) with itself each period earlier, and each
    half period earlier (a period repeats better than its half does: a smooth load, which
    any short lag correlates with, has no period), and a day earlier when a whole day
    precedes it (minutes -> correlation)."""
    day = DAY_MINUTES // BIN_MINUTES
    minutes = sorted({*periods, *(m // 2 for m in periods)}) + (
        [DAY_MINUTES] if before == day else []
    )
    lagged = [bins[before - m // BIN_MINUTES : before - m // BIN_MINUTES + day] for m in minutes]
    return dict(zip(minutes, _correlations(bins[before:], lagged), strict=True))


def _correlations(a: Sequence[float], others: Sequence[Sequence[float]]) -> list[float | None]:
    """Pearson's correlation of ``a`` with each of ``others`` (each of ``a``'s length); None
    where either does not vary."""
    count = len(a)
    sum_a = sum(a)
    var_a = sum(map(operator.mul, a, a)) - sum_a * sum_a / count
    out: list[float | None] = []
    for b in others:
        sum_b = sum(b)
        var_b = sum(map(operator.mul, b, b)) - sum_b * sum_b / count
        if var_a <= 1e-9 * (1 + sum_a * sum_a / count) or var_b <= 1e-9 * (
            1 + sum_b * sum_b / count
        ):
            out.append(None)
            continue
        cov = sum(map(operator.mul, a, b)) - sum_a * sum_b / count
        out.append(float(cov / (var_a * var_b) ** 0.5))
    return out
