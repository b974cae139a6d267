"""Runs in: workers (the user's own processes).

The fast path's sums of one process, per table and dimension, and when each table's
report is due (docs/guides/fast-path.md#how-the-hook-counts).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..core.surge_report import (
    FRESH_SECONDS,
    MAX_DIMENSIONS,
    MAX_REQUESTS_PER_SECOND,
    MAX_UNITS_PER_SECOND,
    MAX_WINDOW_SECONDS,
    MIN_WINDOW_SECONDS,
    DimensionReport,
    Report,
)
from .parse import _Key

CHANGE = 0.2
"""A report is due when a dimension's rate changed by this share of the last reported one and by at
least `MIN_CHANGE` units per second."""
MIN_CHANGE = 1.0
KEEPALIVE_SECONDS = 30.0
"""A busy table is reported at least this often, well within the signals function's
`core.surge_report.FRESH_SECONDS`."""
MAX_TABLES = 1_000
"""The most tables one watcher tracks at once."""


def report_due(
    elapsed: float,
    since_report: float,
    rates: Mapping[_Key, float],
    reported: Mapping[_Key, float],
    *,
    throttles: bool,
    traffic: bool,
) -> bool:
    """Whether a table's report is due: a throttle (``throttles``); a dimension whose
    rate over the ``elapsed`` window (``rates``, units per second) moved from the last
    reported one by `CHANGE` of it and at least `MIN_CHANGE`; or ``traffic``
    and `KEEPALIVE_SECONDS` ``since_report``."""
    if elapsed <= 0:
        return False
    if throttles:
        return True
    for key in set(rates) | set(reported):
        now, before = rates.get(key, 0.0), reported.get(key, 0.0)
        if abs(now - before) >= max(CHANGE * before, MIN_CHANGE):
            return True
    return traffic and since_report >= KEEPALIVE_SECONDS


@dataclass
class _Sums:
    units: float = 0.0
    requests: int = 0
    throttles: dict[str, int] = field(default_factory=dict)
    failed: int = 0


@dataclass
class _Table:
    since: float  # the start of the window the sums cover (monotonic seconds)
    last: float | None = None  # the last report (monotonic seconds)
    sums: dict[_Key, _Sums] = field(default_factory=dict)
    reported: dict[_Key, float] = field(default_factory=dict)  # units per second, not 0


def _throttled(state: _Table) -> bool:
    return any(any(s.throttles.values()) or s.failed for s in state.sums.values())


def _last(state: _Table) -> float:
    return state.last if state.last is not None else state.since


class Ledger:
    """The sums of one process, per table and dimension, and when each is reported. Times
    are monotonic seconds passed in; not thread-safe (a [`Watcher`][] holds a lock)."""

    def __init__(self, start: float, interval: float, max_tables: int = MAX_TABLES) -> None:
        self.start = start
        self.interval = interval
        self.max_tables = max_tables
        self.tables: dict[str, _Table] = {}
        self.dropped = 0

    def add(
        self,
        now: float,
        table: str,
        index: str | None,
        dimension: str,
        *,
        units: float = 0.0,
        requests: int = 0,
        cause: str | None = None,
        failed: int = 0,
    ) -> bool:
        """Add to a dimension's sums; False (and counted in `dropped`) when that
        would track more than `max_tables` tables or one report's dimensions."""
        state = self.tables.get(table)
        if state is None:
            if len(self.tables) >= self.max_tables:
                self.dropped += 1
                return False
            state = self.tables[table] = _Table(since=self.start)
        key = (index, dimension)
        sums = state.sums.get(key)
        if sums is None:
            others = sum(1 for k in state.reported if k not in state.sums)
            if len(state.sums) + others + (key not in state.reported) > MAX_DIMENSIONS:
                self.dropped += 1
                return False
            if not state.sums:  # traffic resumes: the window starts one interval back
                state.since = max(state.since, now - self.interval)
            sums = state.sums[key] = _Sums()
        sums.units += units
        sums.requests += requests
        sums.failed += failed
        if cause is not None:
            sums.throttles[cause] = sums.throttles.get(cause, 0) + 1
        return True

    def _due(self, state: _Table, now: float) -> bool:
        elapsed = now - state.since
        rates = {k: s.units / elapsed for k, s in state.sums.items()} if elapsed > 0 else {}
        return report_due(
            elapsed,
            now - _last(state),
            rates,
            state.reported,
            throttles=_throttled(state),
            traffic=bool(state.sums),
        )

    def due(self, now: float) -> list[str]:
        """The tables whose report is due at ``now``, the throttled first, then the ones
        reported longest ago; forgets the tables quiet for `core.surge_report.FRESH_SECONDS` with
        nothing left to report."""
        for name, state in list(self.tables.items()):
            quiet = now - _last(state)
            if not state.sums and not state.reported and quiet >= FRESH_SECONDS:
                del self.tables[name]
        due = [(name, state) for name, state in self.tables.items() if self._due(state, now)]
        due.sort(key=lambda ns: (not _throttled(ns[1]), _last(ns[1])))
        return [name for name, _state in due]

    def take(self, table: str, now: float, sent: float, process: str) -> Report | None:
        """``table``'s report at ``now`` (``sent``: seconds since the epoch), its sums
        reset; None if it has nothing to say (no traffic, no rate to bring to zero)."""
        state = self.tables.get(table)
        if state is None:
            return None
        keys = [*state.sums, *(k for k in state.reported if k not in state.sums)]
        if not keys:
            return None
        elapsed = max(0.0, now - state.since)
        seconds = min(max(elapsed, MIN_WINDOW_SECONDS), MAX_WINDOW_SECONDS)
        scale = seconds / elapsed if elapsed > MAX_WINDOW_SECONDS else 1.0
        most = int(MAX_REQUESTS_PER_SECOND * seconds)
        dims = []
        for index, dimension in keys[:MAX_DIMENSIONS]:
            s = state.sums.get((index, dimension)) or _Sums()
            units = min(s.units * scale, MAX_UNITS_PER_SECOND * seconds)
            throttles = {c: min(math.ceil(n * scale), most) for c, n in s.throttles.items()}
            requests = min(round(s.requests * scale), most)
            failed = min(math.ceil(s.failed * scale), most)
            dims.append(DimensionReport(index, dimension, units, requests, throttles, failed))
        state.reported = {(d.index, d.dimension): d.units / seconds for d in dims if d.units}
        state.sums = {}
        state.since = state.last = now
        return Report(table, process, seconds, sent, tuple(dims))
