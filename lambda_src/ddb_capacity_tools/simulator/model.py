"""Runs in: workstation (the `ddb-capacity` command).

The simulated table: DynamoDB's capacity mechanics minute by minute, and CloudWatch as
policies see it. Every assumption is a field of
[`ModelParams`][ddb_capacity_tools.simulator.ModelParams] (`params`); a hot key's
partitions are modelled in `partitions`, an on-demand table in `on_demand`.

Per dimension and minute, in this order:

1. changes whose UpdateTable latency has passed take effect;
2. the policy acts on what it can see (delayed CloudWatch datapoints, DescribeTable);
3. a hot key's partition refuses what it cannot serve (key-range throttles, `partitions`); the
   rest of the demand is served from provisioned capacity, then from the burst bucket, and
   what neither serves is throttled (provisioned-throughput throttles,
   [`serve`][ddb_capacity_tools.simulator.serve]);
4. the minute's served consumption and throttle events are published, to become visible
   ``metric_delay_minutes`` / ``throttle_delay_minutes`` (plus a draw from 0 to
   ``delay_spread_minutes``) after the minute ends. As DynamoDB publishes them, a minute
   that served nothing has no consumed datapoint, and one without throttles no throttle
   events: stock target tracking's alarms evaluate the datapoints there are (`present`),
   and the scaler reads a minute without one as its GetMetricData does (`metrics`).

UpdateTable is asynchronous: a change takes ``update_minutes`` (plus a draw from 0 to
``update_spread_minutes``) to apply, and the table or GSI rejects another change meanwhile
(ResourceInUseException). A raise that stays within each changed dimension's warm
throughput (the highest capacity it has ever had provisioned, or ``warm_*_units`` when
higher: its partitions already serve it) lands ``warm_update_seconds`` after it is sent
instead ("Understanding DynamoDB warm throughput in different scenarios": a provisioned
table "can instantly scale" up to its warm throughput); the minute it lands in is served
in parts, each at the capacity in force, and the table is ACTIVE again from that second
(another change may be sent later in the minute). ``warm_update_seconds`` None turns that
off: every change takes ``update_minutes``. Draws come from one random generator seeded
with ``model_seed``, so a run is reproducible. Decreases are checked against the run-time
`DecreaseLedger` when requested, as DynamoDB does: one over the quota fails. Read and
write of the table (or of one GSI) share a decrease counter.

Both kinds of throttle events are published together, with the same delays; a
throttle-aware policy reads them by cause as the scaler Lambda does. The hot partition
does not lean on the burst bucket (a partition's limit is a hard one), and on a trace from
a table's history (`Trace.key_range`) the key-range refusals DynamoDB published are
refused again first, whatever the capacity.
"""

from __future__ import annotations

import operator
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import accumulate, repeat
from typing import NamedTuple

from ddb_capacity_runtime.core.decreases import DecreaseLedger
from ddb_capacity_runtime.core.delivery import WITNESS_LAG_MINUTES, WITNESS_PERIOD_MINUTES
from ddb_capacity_runtime.core.periods import DAY_MINUTES
from ddb_capacity_runtime.core.series import step_start

from .params import ModelParams
from .partitions import HotPartition
from .trace import MINUTE, Key, Trace


class Minute(NamedTuple):
    """One minute of one dimension: served and throttled in units per second, and the burst
    bucket (unit-seconds) left after it."""

    served: float
    throttled: float
    bucket: float


def serve(
    demand: float, provisioned: float, bucket: float, burst_seconds: float, seconds: float = 60.0
) -> Minute:
    """Serve ``demand`` (units/s) for ``seconds``: from provisioned capacity first, then from
    the bucket; what neither covers is throttled. Unused capacity refills the bucket, which
    holds at most ``burst_seconds`` x provisioned."""
    return Minute(*_serve(demand, provisioned, bucket, burst_seconds, seconds))


def _serve(
    demand: float, provisioned: float, bucket: float, burst_seconds: float, seconds: float = 60.0
) -> tuple[float, float, float]:
    """[`serve`][ddb_capacity_tools.simulator.serve] as a plain (served, throttled, bucket) tuple:
    the simulator's hot path."""
    cap = burst_seconds * provisioned
    bucket = min(max(bucket, 0.0), cap)
    if demand <= provisioned:
        return demand, 0.0, min(cap, bucket + (provisioned - demand) * seconds)
    used = min(bucket, (demand - provisioned) * seconds)
    served = provisioned + used / seconds
    return served, max(0.0, demand - served), bucket - used


@dataclass
class SimulatedDimension:
    """DynamoDB's view of one dimension, plus what was published to CloudWatch. The lists
    hold one entry per simulated minute, warm-up first."""

    key: Key
    provisioned: int
    bucket: float
    last_increase: datetime | None = None
    pending: int | None = None
    served: list[float] = field(default_factory=list)
    throttle_events: list[float] = field(default_factory=list)
    visible_at: list[int] = field(default_factory=list)
    """The first minute at whose start each published datapoint is visible; kept only when delays
    are drawn (``delay_spread_minutes``), else it is the minute plus the delay."""
    throttles_visible_at: list[int] = field(default_factory=list)
    decreases: int = 0
    throttled: list[float] = field(default_factory=list)
    """Refused units per second, and the capacity in force, each minute."""
    provisioned_at: list[int] = field(default_factory=list)
    key_range: list[float] = field(default_factory=list)
    """Of the refused units, those the hot partition refused (key-range throttles), and their
    throttle events; kept only when the partition model is on."""
    key_range_events: list[float] = field(default_factory=list)
    warm: float = 0.0
    """Its warm throughput: the highest capacity it has had provisioned or warmed. A raise up to it
    lands within seconds (``ModelParams.warm_update_seconds``)."""


@dataclass
class Recorded:
    """What a run keeps per dimension for results and charts (trace minutes only)."""

    demand: list[float] = field(default_factory=list)
    served: list[float] = field(default_factory=list)
    throttled: list[float] = field(default_factory=list)
    provisioned: list[int] = field(default_factory=list)
    throttle_events: list[float] = field(default_factory=list)
    key_range: Sequence[float] = field(default=(), repr=False, compare=False)
    """Of ``throttled``, per minute, what the hot partition refused (key-range throttles). Set
    (`with_key_range`) only by a run with the partition model on; else empty: nothing was refused by
    key range."""
    on_demand: Sequence[float] = field(default=(), repr=False, compare=False)
    """Of ``throttled``, per minute, what on-demand's limits refused: over double the previous peak
    and the warm throughput (``on_demand``), over the maximum throughput (``max_on_demand``). Set
    (`with_on_demand`) only by an on-demand run that refused some; else empty."""
    max_on_demand: Sequence[float] = field(default=(), repr=False, compare=False)

    def with_key_range(self, refused: Sequence[float]) -> Recorded:
        """This record, with the key-range refusals of each minute."""
        self.key_range = list(refused)
        return self

    def with_on_demand(self, over_peak: Sequence[float], over_cap: Sequence[float]) -> Recorded:
        """This record, with what on-demand's limits refused each minute."""
        self.on_demand = list(over_peak)
        self.max_on_demand = list(over_cap)
        return self


class SimulatedTable:
    """One table and its GSIs under simulation. Minute ``t`` counts from the trace start;
    warm-up minutes are negative. Decreases applied, and decreases refused, are counted
    from minute ``score_from`` on (the results' first minute)."""

    def __init__(
        self, trace: Trace, params: ModelParams, initial: Mapping[Key, int], score_from: int = 0
    ) -> None:
        self.trace = trace
        self.params = params
        self.score_from = score_from
        self.keys: list[Key] = list(trace.demand)
        self.offset = params.warmup_minutes
        warm = {"read": params.warm_read_units, "write": params.warm_write_units}
        self.dims = {
            k: SimulatedDimension(
                k, initial[k], params.burst * initial[k], warm=max(initial[k], warm[k[1]])
            )
            for k in self.keys
        }
        self.rng = random.Random(params.model_seed)  # noqa: S311 (a reproducible model, not a secret)
        self.ledgers: dict[str | None, DecreaseLedger] = {k[0]: DecreaseLedger() for k in self.keys}
        self.busy_until: dict[str | None, int] = {}
        """Per table or GSI, the second of the run (minute x 60 + second) its update in flight
        lands at: UPDATING before it (`busy`)."""
        self.apply_at: dict[str | None, int] = {}
        self.mid: dict[str | None, int] = {}
        """Of the changes in ``apply_at``, those that land that many seconds into their minute (the
        fast path's), not at its start."""
        self.landed: dict[str | None, tuple[list[tuple[int, dict[str, int]]], frozenset[str]]] = {}
        """Per table or GSI, the changes that landed seconds into the minute under way when
        another UpdateTable was sent later in it: each the second it landed at and the values
        then in force, and the dimensions the latest update changes (`_land_first`). The
        minute is served with each from its second (`end_minute`); the last is applied at the
        minute's end."""
        self.rejected_decreases = {k: 0 for k in self.keys}
        self._refused: dict[str | None, tuple[DecreaseLedger, int]] = {}
        """Per table or GSI, its ledger when it last refused a decrease, and the minute until
        which (exclusive) that ledger refuses one (`_refused_until`)."""
        self._times: list[datetime] = list(
            accumulate(
                repeat(MINUTE, self.offset + trace.minutes),
                operator.add,
                initial=trace.time(-self.offset),
            )
        )
        """every minute's start, warm-up first (minute t at index t + offset) (each a minute after
        the one before: whole minutes add exactly, as trace.time's)"""
        self._served = [(self.dims[k], trace.demand[k]) for k in self.keys]
        """per dimension, in key order: its state and its demand per trace minute"""
        self._burst = params.burst
        self._attempts = (1 + params.retries) * 60 / params.units_per_request
        self.partitions = self._partitions(initial)
        """per table or GSI, its partitions as the hot key meets them; None: the model is off"""
        self._key_range = trace.key_range or {}

    def _partitions(self, initial: Mapping[Key, int]) -> dict[str | None, HotPartition] | None:
        p, trace = self.params, self.trace
        skew = p.skew(trace)
        if skew <= 0 and not trace.key_range:
            return None
        out: dict[str | None, HotPartition] = {}
        for index, dim in self.keys:
            part = out.get(index)
            if part is None:
                part = out[index] = HotPartition(skew, p.split_minutes, p.table_size_gb)
                part.grow("read", p.warm_read_units)
                part.grow("write", p.warm_write_units)
            part.grow(dim, initial[(index, dim)])
        return out

    @property
    def recorded(self) -> dict[Key, Recorded]:
        """Per dimension, what the trace's minutes (not the warm-up) recorded so far."""
        out = {}
        for k, d in self.dims.items():
            i = self.offset
            out[k] = Recorded(
                self.trace.demand[k][: max(0, len(d.served) - i)],
                d.served[i:],
                d.throttled[i:],
                d.provisioned_at[i:],
                d.throttle_events[i:],
            )
            if d.key_range:
                out[k].with_key_range(d.key_range[i:])
        return out

    # ------------------------------------------------------------------ time and data

    def time(self, t: int) -> datetime:
        i = t + self.offset
        return self._times[i] if 0 <= i < len(self._times) else self.trace.time(t)

    def times(self, first: int, count: int) -> list[datetime]:
        """The starts of minutes ``first`` .. ``first + count - 1``."""
        i = first + self.offset
        if i < 0 or i + count > len(self._times):
            return [self.trace.time(t) for t in range(first, first + count)]
        return self._times[i : i + count]

    def datapoints(
        self,
        key: Key,
        first: int,
        count: int,
        t: int,
        throttles: bool = False,
        key_range: bool = False,
    ) -> tuple[list[float], list[bool]]:
        """The datapoints of minutes ``first`` .. ``first + count - 1`` as seen at the start of
        minute ``t``, and which of them are unknown (not delivered yet, or before the
        simulation): those read 0, as the run-time reads them. With ``key_range`` (and
        ``throttles``): the key-range throttle events, published with the lumped ones."""
        d, p = self.dims[key], self.params
        series = d.key_range_events if key_range else d.throttle_events if throttles else d.served
        start = first + self.offset
        stop = start + count
        lo = max(start, 0)
        delay = p.throttle_delay_minutes if throttles else p.metric_delay_minutes
        if p.delay_spread_minutes == 0:  # delivered in order: one cut
            last = min(stop, t - delay + self.offset, len(series))  # exclusive
        else:
            last = min(stop, len(series))
            # a minute is visible at most delay + spread after it ends (`end_minute`), so
            # only the minutes from ``sure`` on can be unknown yet
            sure = min(max(lo, t + self.offset - delay - p.delay_spread_minutes), last)
            at = d.throttles_visible_at if throttles else d.visible_at
            tail = at[sure:last]
            if any(a > t for a in tail):
                late = [a > t for a in tail]
                values = [0.0] * (lo - start) + series[lo:sure]
                values += [0.0 if u else v for u, v in zip(late, series[sure:last], strict=True)]
                after = stop - last
                unknown = [True] * (lo - start) + [False] * (sure - lo) + late
                return values + [0.0] * after, unknown + [True] * after
        hi = max(lo, last)
        before, after = lo - start, stop - hi
        values = [0.0] * before + series[lo:hi] + [0.0] * after
        return values, [True] * before + [False] * (hi - lo) + [True] * after

    def known(
        self, key: Key, first: int, count: int, t: int, throttles: bool = False
    ) -> list[float] | None:
        """The datapoints of minutes ``first`` .. ``first + count - 1`` as seen at the start
        of minute ``t`` when every one of them is known, else None."""
        p = self.params
        if p.delay_spread_minutes:
            values, unknown = self.datapoints(key, first, count, t, throttles)
            return None if any(unknown) else values
        d = self.dims[key]
        series = d.throttle_events if throttles else d.served
        delay = p.throttle_delay_minutes if throttles else p.metric_delay_minutes
        start = first + self.offset
        stop = start + count
        if start < 0 or stop > len(series) or stop > t - delay + self.offset:
            return None
        return series[start:stop]

    def metrics(
        self, key: Key, first: int, count: int, t: int, newest: int | None, arriving: int = 0
    ) -> tuple[list[float], list[float], list[bool], int]:
        """Consumed and throttle events of minutes ``first`` .. ``first + count - 1`` as the
        run-time's GetMetricData reads them at the start of minute ``t`` (`metrics.fetch`),
        ``newest`` the newest minute its batch holds a datapoint of (`delivered_through`):
        a minute up to it without a datapoint (no traffic, or not delivered yet) reads 0 and
        is known, but for the newest ``arriving`` minutes of the window, where it is unknown
        (late, or idle); the minutes after it are left out, not delivered yet (their number
        is returned: `Series.undelivered`). Also returned: per minute whether it is unknown
        (before the simulation, or without a datapoint among the newest; empty when none
        is). A window with no minute up to ``newest`` lists every minute, unknown."""
        start = first + self.offset
        stop = start + count
        end = (
            stop if newest is None or newest + self.offset + 1 > stop else newest + self.offset + 1
        )
        lo = start if start > 0 else 0
        if newest is None or end <= lo:
            return [0.0] * count, [0.0] * count, [True] * count, 0
        d, p = self.dims[key], self.params
        consumed = self._delivered(d.served, d.visible_at, lo, end, t, p.metric_delay_minutes)
        throttles = self._delivered(
            d.throttle_events, d.throttles_visible_at, lo, end, t, p.throttle_delay_minutes
        )
        late = stop - arriving - lo  # the first of the newest minutes, in the lists read
        unknown = [True] * (lo - start) + [False] * (end - lo) if lo > start else []
        if late < end - lo:
            for i in range(late if late > 0 else 0, end - lo):
                if not consumed[i] and not throttles[i]:  # no datapoint of its own
                    unknown = unknown or [False] * (end - start)
                    unknown[lo - start + i] = True
        if lo == start:
            return consumed, throttles, unknown, stop - end
        before = [0.0] * (lo - start)
        return before + consumed, before + throttles, unknown, stop - end

    def _delivered(
        self, series: list[float], at: list[int], lo: int, end: int, t: int, delay: int
    ) -> list[float]:
        """``series[lo:end]`` as CloudWatch holds it at the start of minute ``t``: a value not
        delivered yet reads 0 (no datapoint)."""
        p = self.params
        if not p.delay_spread_minutes:
            seen = t + self.offset - delay  # exclusive
            if end <= seen:
                return series[lo:end]
            return series[lo:seen] + [0.0] * (end - seen) if seen > lo else [0.0] * (end - lo)
        sure = t + self.offset - delay - p.delay_spread_minutes  # delivered whatever the draw
        sure = lo if sure < lo else end if sure > end else sure
        late = [v if a <= t else 0.0 for v, a in zip(series[sure:end], at[sure:end], strict=True)]
        return series[lo:sure] + late

    def delivered_through(self, t: int, every: int) -> int:
        """The newest minute of which CloudWatch holds a datapoint, at the start of minute ``t``,
        among those a tick's GetMetricData batch reads (`metrics.fetch`): any dimension's
        consumed capacity or throttle events (a minute without traffic publishes neither), and
        the state store's consumed reads, its witness: every tick (each ``every`` minutes)
        reads the store in its own minute, delivered ``metric_delay_minutes`` late (never
        drawn later). Minutes after it read as not delivered yet, the ones up to it as
        known."""
        p = self.params
        witnessed = t - 1 - p.metric_delay_minutes
        witnessed -= witnessed % every
        delays = (p.metric_delay_minutes, p.throttle_delay_minutes)
        newest = t - 1 - min(delays)
        spread = p.delay_spread_minutes
        for minute in range(newest, witnessed, -1):
            i = minute + self.offset
            if i < 0:
                break
            for d in self.dims.values():
                if i >= len(d.served):
                    continue
                if d.served[i] and (
                    minute + 1 + p.metric_delay_minutes <= t if not spread else d.visible_at[i] <= t
                ):
                    return minute
                if d.throttle_events[i] and (
                    minute + 1 + p.throttle_delay_minutes <= t
                    if not spread
                    else d.throttles_visible_at[i] <= t
                ):
                    return minute
        return witnessed

    @property
    def witness_delay(self) -> int:
        """Minutes after its 5-minute period ends before a provisioned-capacity datapoint
        is visible: `WITNESS_LAG_MINUTES` (the latest reported for that metric), or
        ``metric_delay_minutes`` when later (the model's CloudWatch is never quicker with
        it than with the per-minute ones)."""
        return max(self.params.metric_delay_minutes, WITNESS_LAG_MINUTES)

    def witness_through(self, t: int) -> datetime:
        """The timestamp of the newest provisioned-capacity datapoint CloudWatch holds at the
        start of minute ``t``, every dimension's delivery witness
        (`ddb_capacity_runtime.core.delivery`): DynamoDB publishes one every 5 minutes,
        traffic or not, stamped with the start of its period, delivered `witness_delay`
        minutes after the period ends (never drawn later: the model's CloudWatch stops for
        no table)."""
        ended = t - self.witness_delay - WITNESS_PERIOD_MINUTES
        return step_start(self.time(ended), WITNESS_PERIOD_MINUTES)

    def key_range_events(self, key: Key, first: int, count: int, t: int) -> list[float]:
        """Key-range throttle events of minutes ``first`` .. ``first + count - 1`` as seen at
        the start of minute ``t``: DynamoDB publishes them with the lumped throttle events,
        so they are delivered with the same delays; a minute not delivered reads 0. The
        provisioned-throughput throttle events are the lumped ones less these."""
        if not self.dims[key].key_range_events:
            return [0.0] * count
        return self.datapoints(key, first, count, t, throttles=True, key_range=True)[0]

    def present(self, key: Key, t: int, count: int) -> list[float]:
        """The consumed datapoints CloudWatch holds at the start of minute ``t`` for the
        ``count`` minutes ending with the newest one it may have delivered (the minute
        ``metric_delay_minutes`` before ``t``'s last), oldest first: an alarm's evaluation
        range. A minute without traffic has no datapoint, and neither has one not delivered
        yet: the list holds only the datapoints there are."""
        d = self.dims[key]
        served = d.served
        stop = t + self.offset - self.params.metric_delay_minutes  # exclusive
        start = stop - count
        start = start if start > 0 else 0
        stop = stop if stop < len(served) else len(served)
        values = served[start:stop]
        if self.params.delay_spread_minutes:
            at = d.visible_at[start:stop]
            return [v for v, a in zip(values, at, strict=True) if v and a <= t]
        return [v for v in values if v] if 0.0 in values else values

    def newest_present(self, key: Key, t: int, count: int) -> float | None:
        """The newest of `present`'s datapoints (None: it has none), read without listing
        them when the newest minute it may hold has one."""
        served = self.dims[key].served
        stop = t + self.offset - self.params.metric_delay_minutes  # exclusive, as `present`
        if 0 < stop <= len(served) and count > 0 and not self.params.delay_spread_minutes:
            value = served[stop - 1]
            if value:
                return value
        values = self.present(key, t, count)
        return values[-1] if values else None

    # ------------------------------------------------------------------ DynamoDB API

    def busy(self, index: str | None, t: int, second: int = 0) -> bool:
        """Whether ``index`` is UPDATING ``second`` seconds into minute ``t``: an update in
        flight lands later (a change landing seconds into a minute leaves the table ACTIVE
        from that second)."""
        return t * 60 + second < self.busy_until.get(index, -(10**9))

    def current(self, key: Key) -> int:
        """Provisioned capacity, or the value an UpdateTable in flight will set."""
        d = self.dims[key]
        return d.pending if d.pending is not None else d.provisioned

    def update_table(
        self, t: int, index: str | None, values: Mapping[str, int], second: int = 0
    ) -> str:
        """UpdateTable on the table (``index`` None) or one GSI: ``applied``, ``in-use``
        (an update is in flight) or ``quota`` (a decrease over the quota). ``second``: sent
        that many seconds (0 to 59) into minute ``t``; it lands as many seconds into its
        minute, which is then served in two parts (`end_minute`)."""
        if self.busy(index, t, second):
            return "in-use"
        lo, hi, dims = self.params.min_capacity, self.params.max_capacity, self.dims
        landed = self.mid.get(index) if self.apply_at.get(index) == t else None
        now = self._landed_values(index) if landed is not None else {}
        changes: dict[str, int] = {}
        lower = False
        for dim, value in values.items():
            v = int(value)
            v = v if v < hi else hi  # max(lo, min(hi, v)), as conditionals
            v = v if v > lo else lo
            provisioned = now.get(dim, dims[(index, dim)].provisioned)
            if v != provisioned:
                changes[dim] = v
                lower = lower or v < provisioned
        if not changes:
            return "applied"
        if lower and not self._spend_decrease(t, index, changes, second):
            return "quota"
        if landed is not None:  # an earlier change landed this minute, at that second
            steps = self.landed[index][0] if index in self.landed else []
            self.landed[index] = ([*steps, (landed, now)], frozenset(changes))
        for dim, v in changes.items():
            self.dims[(index, dim)].pending = v
        latency, second = self._latency(index, changes, lower, second)
        self.busy_until[index] = (t + latency) * 60 + second
        self.apply_at[index] = t + latency
        if second:
            self.mid[index] = second
        else:  # at a minute's start (a change that landed earlier in this one is in `landed`)
            self.mid.pop(index, None)
            if latency == 0:
                self._apply(index, t)
        return "applied"

    def _spend_decrease(
        self, t: int, index: str | None, changes: Mapping[str, int], second: int = 0
    ) -> bool:
        """Spend one of ``index``'s decreases at minute ``t`` if the quota allows (True);
        else count each lowered dimension's refused decrease (from ``score_from`` on), sent
        ``second`` seconds in."""
        ledger = self.ledgers[index]
        refused = self._refused.get(index)
        if refused is None or refused[0] is not ledger or t >= refused[1]:
            now = self.time(t)
            if ledger.can_decrease(now):
                self.ledgers[index] = ledger.spend(now)
                return True
            self._refused[index] = (ledger, self._refused_until(ledger, t))
        for dim, v in changes.items():
            if v < self.in_force((index, dim), t, second) and t >= self.score_from:
                self.rejected_decreases[(index, dim)] += 1
        return False

    def _refused_until(self, ledger: DecreaseLedger, t: int) -> int:
        """The first minute after ``t`` at which ``ledger`` allows a decrease, ``ledger``
        refusing one at ``t``: a ledger that refuses one refuses it until some moment and
        allows it from then on (an hour after its last decrease, or at the next 00:00
        UTC, when its count starts again), at most a day later, so it is searched for
        with the ledger's own rule, in steps that double, then by halves. ``t`` itself
        when none is found within the day (a refusal then is asked of the ledger again)."""
        low, step = t, 1  # refused at low
        while not ledger.can_decrease(self.time(t + step)):
            low = t + step
            if step >= DAY_MINUTES:
                return t
            step *= 2
        high = t + step  # allowed at high
        while high - low > 1:
            middle = (low + high) // 2
            if ledger.can_decrease(self.time(middle)):
                high = middle
            else:
                low = middle
        return high

    def _latency(
        self, index: str | None, changes: Mapping[str, int], lower: bool, second: int
    ) -> tuple[int, int]:
        """Minutes until ``changes`` (sent ``second`` seconds into the minute) land, and the
        second of that minute they land at: a raise within every changed dimension's warm
        throughput in ``warm_update_seconds``, any other change in ``update_minutes`` plus
        a draw from 0 to ``update_spread_minutes``, landing at the second it was sent. A
        change that landed earlier in the minute (`landed`) counts as provisioned."""
        p, dims = self.params, self.dims
        quick = p.warm_update_seconds
        steps = self.landed[index][0] if index in self.landed else []
        if (
            quick is not None
            and not lower
            and all(
                v <= max([dims[(index, d)].warm] + [values.get(d, 0) for _, values in steps])
                for d, v in changes.items()
            )
        ):
            return divmod(second + quick, 60)
        latency = p.update_minutes
        if p.update_spread_minutes:
            latency += self.rng.randint(0, p.update_spread_minutes)
        return latency, second

    def in_force(self, key: Key, t: int, second: int) -> int:
        """``key``'s capacity in force ``second`` seconds into minute ``t`` (the minute
        under way), as DescribeTable shows it then: a change that landed by then in the
        minute counts (`_steps`), else what is provisioned."""
        return [capacity for at, capacity in self._steps(key, t) if at <= second][-1]

    def so_far(self, key: Key, wanted: float, t: int, second: int) -> tuple[float, float, float]:
        """What ``key`` serves of ``wanted`` units a second over the first ``second``
        seconds (at least 1) of minute ``t``, the minute under way, and what it refuses,
        per second: each part at the capacity in force then (`_steps`), the burst bucket
        carried over; and of what it refuses, what it refused since the capacity last rose
        in those seconds (all of it when it did not)."""
        steps = [(at, capacity) for at, capacity in self._steps(key, t) if at <= second]
        served, refused, since, _ = self._serve_steps(self.dims[key], wanted, steps, second)
        return served / second, refused / second, since / second

    def _steps(self, key: Key, t: int) -> list[tuple[int, int]]:
        """``key``'s capacity over minute ``t``, the minute under way: (the second it is in
        force from, the capacity), first what is provisioned, then each change that landed
        in it before another was sent (`landed`), then the change landing in it
        (`apply_at`, `mid`; a dimension it leaves as it was keeps its capacity)."""
        d, index = self.dims[key], key[0]
        steps = [(0, d.provisioned)]
        for at, values in self.landed[index][0] if index in self.landed else ():
            steps.append((at, values.get(key[1], steps[-1][1])))
        landing = self.mid.get(index) if self.apply_at.get(index) == t else None
        if landing is not None:
            steps.append((landing, d.pending if d.pending is not None else steps[-1][1]))
        return steps

    def _serve_steps(
        self, d: SimulatedDimension, wanted: float, steps: Sequence[tuple[int, int]], end: int
    ) -> tuple[float, float, float, float]:
        """Serve ``wanted`` units a second from ``steps``' first second to ``end``, each
        part at its capacity (`_steps`), the burst bucket carried over from ``d``'s.
        Returns the units served and refused, those refused since the capacity last rose,
        and the bucket after."""
        ends = [at for at, _ in steps[1:]] + [end]
        bucket, served, refused, since = d.bucket, 0.0, 0.0, 0.0
        before = steps[0][1]
        for (start, capacity), stop in zip(steps, ends, strict=True):
            since = 0.0 if capacity > before else since  # a raise that landed by then
            before = capacity
            if stop > start:
                part = _serve(wanted, capacity, bucket, self._burst, float(stop - start))
                served += part[0] * (stop - start)
                refused += part[1] * (stop - start)
                since += part[1] * (stop - start)
                bucket = part[2]
        return served, refused, since, bucket

    def _landed_values(self, index: str | None) -> dict[str, int]:
        """``index``'s changes in flight (each dimension's value), as they land."""
        return {
            k[1]: d.pending for k, d in self.dims.items() if k[0] == index and d.pending is not None
        }

    def _apply(self, index: str | None, t: int) -> None:
        self.apply_at.pop(index, None)
        self.mid.pop(index, None)
        if index in self.landed:  # each change that landed before, in order
            self._land_steps(index, self.landed.pop(index)[0], t)
        for key in self.keys:
            d = self.dims[key]
            if key[0] != index or d.pending is None:
                continue
            self._set(d, d.pending, t)
            d.pending = None
            d.bucket = min(d.bucket, self.params.burst * d.provisioned)

    def _set(self, d: SimulatedDimension, value: int, t: int) -> None:
        """``d``'s capacity becomes ``value`` at minute ``t``'s end (or start); its burst
        bucket is the caller's (a minute served in parts carried it over each)."""
        if value > d.provisioned:
            d.last_increase = self.time(t)
            d.warm = d.warm if d.warm > value else float(value)
            if self.partitions is not None:
                self.partitions[d.key[0]].grow(d.key[1], value)
        elif value < d.provisioned:
            d.decreases += 1 if t >= self.score_from else 0
        d.provisioned = value

    def _land_first(self, index: str | None, t: int) -> None:
        """At minute ``t``'s end, the change that landed in it before a later one was sent
        (`landed`): applied, the later one still in flight."""
        steps, later = self.landed.pop(index)
        self._land_steps(index, steps, t)
        for dim in steps[-1][1]:
            d = self.dims[(index, dim)]
            d.bucket = min(d.bucket, self.params.burst * d.provisioned)
            if dim not in later:
                d.pending = None

    def _land_steps(
        self, index: str | None, steps: Sequence[tuple[int, dict[str, int]]], t: int
    ) -> None:
        """Each of ``index``'s changes that landed in minute ``t`` (`landed`), in order."""
        for _, values in steps:
            for dim, value in values.items():
                self._set(self.dims[(index, dim)], value, t)

    # ------------------------------------------------------------------ the minute

    def begin_minute(self, t: int) -> None:
        if not self.apply_at:
            return
        for index, at in list(self.apply_at.items()):
            if at < t or (at == t and index not in self.mid):
                self._apply(index, t)

    def end_minute(self, t: int) -> None:
        p = self.params
        burst, attempts, spread = self._burst, self._attempts, p.delay_spread_minutes
        minute = t if t > 0 else 0  # the warm-up repeats the trace's first minute
        parts = self.partitions
        landing, changing = self._changing(t)
        for d, demand in self._served:
            wanted, provisioned = demand[minute], d.provisioned
            if parts is not None:  # the hot partition refuses first (key-range throttles)
                wanted -= self._refused_by_key_range(d, parts, wanted, minute)
            if changing and d.key[0] in changing:  # in parts, each at its capacity
                steps = self._steps(d.key, t)
                served, throttled, _, d.bucket = self._serve_steps(d, wanted, steps, 60)
                served, throttled, provisioned = served / 60.0, throttled / 60.0, steps[-1][1]
            else:
                # _serve inline (a minute of each dimension: the hottest loop)
                # (min and max of two, as conditionals: the same one is picked on a tie)
                cap = burst * provisioned
                bucket = d.bucket
                bucket = 0.0 if 0.0 > bucket else bucket
                bucket = cap if cap < bucket else bucket
                if wanted <= provisioned:
                    served, throttled = wanted, 0.0
                    refill = bucket + (provisioned - wanted) * 60.0
                    d.bucket = refill if refill < cap else cap
                else:
                    short = (wanted - provisioned) * 60.0
                    used = short if short < bucket else bucket
                    served = provisioned + used / 60.0
                    refused = wanted - served
                    throttled = refused if refused > 0.0 else 0.0
                    d.bucket = bucket - used
            if parts is not None:
                key_range = d.key_range[-1]
                throttled += key_range
                d.key_range_events.append(key_range * attempts)
            d.served.append(served)
            d.throttled.append(throttled)
            d.throttle_events.append(throttled * attempts)
            d.provisioned_at.append(provisioned)
            if spread:
                jitter = self.rng.randint(0, spread)
                d.visible_at.append(t + 1 + p.metric_delay_minutes + jitter)
                d.throttles_visible_at.append(t + 1 + p.throttle_delay_minutes + jitter)
        for index in landing:
            self._apply(index, t)
        for index in list(self.landed):  # a later change still in flight
            self._land_first(index, t)
        self._end_partitions()

    def _end_partitions(self) -> None:
        """Each hot partition counts the minute towards a split for heat (none with the
        partition model off)."""
        if self.partitions is not None:
            for part in self.partitions.values():
                part.end_minute()

    def _changing(self, t: int) -> tuple[dict[str | None, int], set[str | None]]:
        """Of the tables and GSIs, those whose change lands seconds into minute ``t`` (and
        that second), and those whose capacity changes in it (those, and `landed`)."""
        if not self.mid and not self.landed:
            return {}, set()
        landing = {i: s for i, s in self.mid.items() if self.apply_at[i] == t}
        return landing, set(landing) | set(self.landed)

    def _refused_by_key_range(
        self,
        d: SimulatedDimension,
        parts: dict[str | None, HotPartition],
        wanted: float,
        minute: int,
    ) -> float:
        """What ``d``'s hot partition refuses of ``wanted`` this minute (recorded in
        ``d.key_range``): the trace's own key-range refusals, then what the hot key's
        partition cannot serve of the rest."""
        refused = parts[d.key[0]].refuse(d.key[1], wanted, self._given(d.key, minute))
        d.key_range.append(refused)
        return refused

    def key_range_refusal(self, key: Key, wanted: float, minute: int) -> float:
        """What ``key``'s hot partition would refuse of ``wanted`` in trace minute
        ``minute``, as `_refused_by_key_range` refuses it, but recording nothing
        (0 with the partition model off)."""
        if self.partitions is None:
            return 0.0
        return self.partitions[key[0]].would_refuse(key[1], wanted, self._given(key, minute))

    def _given(self, key: Key, minute: int) -> float:
        """The key-range refusals the trace itself gives for ``key``'s ``minute`` (0: none
        known)."""
        given = self._key_range.get(key)
        return given[minute] if given else 0.0
