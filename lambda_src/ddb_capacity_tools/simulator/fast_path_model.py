"""Runs in: workstation (the `ddb-capacity` command).

The fast path in the simulator: the application's processes report what they consume and
the throttles they meet (``ddb_capacity_runtime.fast_path.hook.watch``), and the signals function
raises a dimension at once when the reports call for it
(`ddb_capacity_runtime.core.surge.surge_level`, the deployed rule).

What the model assumes (``ModelParams.fast_path_seconds`` S and ``fast_path_share`` F):

- the reports of a moment's traffic reach the signals function S seconds later (the
  hook's report interval, the asynchronous invocation and the function's own time);
- the reporting processes carry the share F of every dimension's traffic, evenly; the
  signals function is not told F (as deployed by default), so it sees F x the demand;
- what they report of a minute: the demand capacity could serve (consumed units, and the
  units of provisioned-throughput throttles), and the key-range throttles apart, which
  never raise anything;
- a surge is sent S seconds into the minute whose traffic called for it (or into a later
  minute when S is a minute or more), and lands as any UpdateTable does
  (``SimulatedTable.update_table``): within the warm throughput, seconds later; above it,
  ``update_minutes`` later at that second; the minute it lands in is served in two parts;
- under a scalable target, the surge raises the target's minimum as a hold, which auto
  scaling then keeps (``AutoScaling.surge``); without one, it is an UpdateTable, and the
  scaler's tick does not lower the dimension below it while it holds;
- a surge is renewed while its dimension's demand would drain the capacity it falls
  back to (or throttles), and raised further only when the reports ask for a step more
  than it holds (`surge_level`: 10 %, unless they throttle); it expires `DEFAULT_SURGE_MINUTES`
  minutes after the last minute that called for it, and ends at the next restore
  (every `RESTORE_MINUTES`, the restorer's default); it is not renewed
  `SURGE_LIFETIME_MINUTES` after its first raise,
  and a new one may start once it has ended;
- a dimension being updated (UPDATING) starts no surge: the signals function counts it
  and the next report tries again;
- a surge is bounded as the signals function bounds it by default
  (`cap_room`,
  `budget_left`, the same code): at most 4x the
  capacity it started from (at least 100 units more), or ``fast_path_cap`` units more
  when set, and at most twice that per dimension an hour (its budget window); the default
  cap and budget reach the dimension's warm throughput, as DescribeTable shows it (the
  highest level it ever had, or was pre-warmed to), since a raise to it lands at once.
  With ``warm_update_seconds`` None (the model before warm throughput) it is not known.

The table's stream as a signal (``ModelParams.stream_seconds`` S'): the stream reader
sees every write the table (and each GSI) served, S' seconds after it, and nothing else:
no reads, no refused writes, no throttles. It feeds the same rule
(`surge_level`) with the served writes as the
demand: served writes at or above the capacity a surge falls back to mean the burst
bucket is draining, and the surge sizes the capacity for them at the target; while
throttled, the served writes are about the capacity itself, so each raise lifts it by
1 / target until the demand is met. With both signals on, each is read at its own time
and the surges they make are one (the larger holds).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ddb_capacity_runtime.core.bucket import Bucket, Drain, advance
from ddb_capacity_runtime.core.surge import (
    DEFAULT_SURGE_MINUTES,
    DEFAULT_SURGE_SCALE,
    SURGE_LIFETIME_MINUTES,
    TRUSTED_MINUTES,
    Budget,
    Combined,
    budget_left,
    budget_window,
    cap_room,
    surge_level,
)

from .model import SimulatedTable
from .params import ModelParams
from .trace import Key

RESTORE_MINUTES = 5
"""How often the restorer ends expired holds (``CapacityRequests``' default)."""
LOOK_SECONDS = 60
"""How often the simulated signals function looks at a source: once a minute (the deployed one
looks at every report, seconds apart, so the bucket rule here errs towards more surges)."""


class Source(NamedTuple):
    """One signal: minutes and seconds from a moment until it is seen, the share of the
    traffic it sees, and whether it sees served writes only (the stream)."""

    delay: int
    second: int
    share: float
    stream: bool


def sources(params: ModelParams) -> list[Source]:
    """The signals ``params`` turn on (none: the fast path is off), in the order they look
    within a minute (by second; the hook's first at the same second): a raise one makes
    leaves the table UPDATING when a later one looks, as in DynamoDB."""
    out = []
    if params.fast_path_seconds is not None:
        out.append(Source(*divmod(params.fast_path_seconds, 60), params.fast_path_share, False))
    if params.stream_seconds is not None:
        out.append(Source(*divmod(params.stream_seconds, 60), 1.0, True))
    return sorted(out, key=lambda source: source.second)


class FastPath:
    """The signals function over one simulated table: per dimension, the surge it holds
    (its level, and the first minute it no longer holds)."""

    def __init__(self, params: ModelParams, surge_minutes: int = DEFAULT_SURGE_MINUTES) -> None:
        self.sources = sources(params)
        if not self.sources:
            raise ValueError("FastPath: neither fast_path_seconds nor stream_seconds is set")
        self.surge_minutes = surge_minutes
        self.max_capacity = params.max_capacity
        self.cap = params.fast_path_cap
        """the surge cap as the signals function's settings give it: units when set, else the
        default scale (``SurgeSettings``' defaults)"""
        self.scale = DEFAULT_SURGE_SCALE if self.cap is None else None
        self.warm_known = params.warm_update_seconds is not None
        """whether DescribeTable's warm throughput is modelled (and so known)"""
        self.budgets: dict[Key, Budget] = {}
        """Per dimension, its surge budget window (as the combiner item keeps it)."""
        self.holds: dict[Key, tuple[int, int, int, int]] = {}
        """Per dimension, its surge: the level held, the first minute it no longer holds, the
        capacity it falls back to, and the minute of its first raise."""
        self.buckets: dict[tuple[Key, bool], Bucket] = {}
        """Per dimension and source (the stream: True), the bucket rule's estimate
        (`core.bucket`), as the state store keeps it."""
        self.metric_delay = params.metric_delay_minutes

    def floor(self, key: Key, t: int) -> int:
        """The level ``key``'s surge holds at minute ``t`` (0: none)."""
        held = self.holds.get(key)
        return held[0] if held is not None and t < held[1] else 0

    def _ends(self, t: int) -> int:
        """The minute a surge renewed at ``t`` ends: the first restore after it expires."""
        expires = t + self.surge_minutes
        return -(-expires // RESTORE_MINUTES) * RESTORE_MINUTES

    def seen(self, sim: SimulatedTable, key: Key, m: int, source: Source) -> Combined | None:
        """What ``source`` tells of ``key``'s minute ``m``, ``source.second`` seconds into
        it when it is the minute under way (``source.delay`` 0); None before the simulation,
        and for a dimension the source cannot see (the stream's reads)."""
        d, share = sim.dims[key], source.share
        if source.stream and key[1] != "write":
            return None
        if source.delay:
            i = m + sim.offset
            if i < 0 or i >= len(d.served):
                return None
            key_range = d.key_range[i] if d.key_range else 0.0
            short = max(0.0, d.throttled[i] - key_range)
            served, counted = d.served[i], short
        else:
            minute = m if m > 0 else 0
            wanted = sim.trace.demand[key][minute]
            key_range = sim.key_range_refusal(key, wanted, minute)
            fixable = wanted - key_range
            # while it holds a surge, the throttles of reports of seconds before the capacity
            # last rose are set aside (DescribeTable's LastIncreaseDateTime): they saw the
            # capacity before it
            served, short, since = sim.so_far(key, fixable, m, source.second)
            counted = since if self.floor(key, m) else short
        if source.stream:  # what was written, and nothing of what was refused
            return Combined(served, 0.0, 0.0, 1, served)
        return Combined(
            share * (served + short), share * counted, share * key_range, 1, share * served
        )

    def trusted(self, sim: SimulatedTable, key: Key, t: int, source: Source, seen: float) -> float:
        """The demand DynamoDB itself measured served on ``key`` as the signals function
        can know it at minute ``t`` (`core.surge.TRUSTED_SOURCES`): for the stream, what
        it saw served (``seen``); for the hook, CloudWatch's busiest consumed minute of the
        last `TRUSTED_MINUTES` it shows (``metric_delay_minutes`` late)."""
        if source.stream:
            return seen
        served = sim.dims[key].served
        end = t + sim.offset - self.metric_delay
        return max(served[max(0, end - TRUSTED_MINUTES) : max(0, end)], default=0.0)

    def _drain(
        self,
        sim: SimulatedTable,
        key: Key,
        source: Source,
        combined: Combined,
        now: tuple[int, int],
    ) -> Drain:
        """The bucket rule's view of ``key`` at ``now`` (seconds into the run, and the
        capacity in force then): its estimate advanced by what ``source`` saw consumed."""
        d = sim.dims[key]
        mine, provisioned = (key, source.stream), now[1]
        # the hook's throttles show the bucket empty; the stream sees none (`Drain.blind`)
        refused = not source.stream and (combined.throttled > 0 or combined.unknown > 0)
        bucket = advance(self.buckets.get(mine), provisioned, combined.consumed, now[0], refused)
        self.buckets[mine] = bucket
        warm = max(int(d.warm), provisioned) if self.warm_known else None
        return Drain(bucket, warm, LOOK_SECONDS, blind=source.stream)

    def _level(
        self,
        sim: SimulatedTable,
        key: Key,
        combined: Combined,
        target: float,
        stands: tuple[int, int],
        now: tuple[int, int],
        seen: tuple[Drain, float],
    ) -> int | None:
        """The signals function's level for ``key`` at ``now`` (seconds into the run,
        and the capacity in force then), its surge ``stands`` (the level held, the
        capacity it falls back to) and what it ``seen`` of the dimension (the bucket rule's
        view, the trusted demand): the rule within the surge cap, then within what the
        dimension's budget window leaves (the units it adds spent from it)."""
        (held, base), (drain, trusted), (at, provisioned) = stands, seen, now
        warm = max(int(sim.dims[key].warm), provisioned) if self.warm_known else None
        window = budget_window(self.budgets.get(key), at, base)
        room = cap_room(base, window.level, self.cap, self.scale, warm, trusted)
        level = surge_level(
            combined,
            provisioned,
            target,
            self.max_capacity,
            cap=room,
            held=held,
            base=base,
            drain=drain,
        )
        if level is None:
            return None
        left = budget_left(window, None, self.cap, self.scale, warm, trusted)
        start = max(held, base)
        if left is not None:
            level = max(held, min(level, start + left))
        if not held and level <= provisioned:
            return None  # the budget is spent: no surge starts
        self.budgets[key] = Budget(window.start, window.level, window.used + level - start)
        return level

    def act(
        self,
        sim: SimulatedTable,
        t: int,
        target: float,
        raise_floor: Callable[[Key, int], None] | None = None,
    ) -> None:
        """Minute ``t``: end the surges that ran out, then raise every dimension the
        reports call for. ``raise_floor`` (a scalable target's): keeps the raised level as
        the target's minimum while the surge holds."""
        for key, (_, until, _, _) in list(self.holds.items()):
            if until <= t:
                del self.holds[key]
                if raise_floor is not None:
                    raise_floor(key, 0)
        for source in self.sources:
            self._surge(sim, t, target, raise_floor, source)

    def _surge(
        self,
        sim: SimulatedTable,
        t: int,
        target: float,
        raise_floor: Callable[[Key, int], None] | None,
        source: Source,
    ) -> None:
        """Raise every dimension ``source``'s view of minute ``t`` calls for."""
        raises: dict[str | None, dict[str, int]] = {}
        for key in sim.keys:
            combined = self.seen(sim, key, t - source.delay, source)
            if combined is None:
                continue
            # the capacity in force, as DescribeTable shows it (an update in flight is not)
            provisioned, held = sim.in_force(key, t, source.second), self.floor(key, t)
            now = (t * 60 + source.second, provisioned)
            drain = self._drain(sim, key, source, combined, now)  # every look counts
            if not held and sim.busy(key[0], t, source.second):
                continue  # UPDATING: no surge starts
            if held and t - self.holds[key][3] >= SURGE_LIFETIME_MINUTES:
                continue  # it has lasted its longest: it expires, and may start again
            _, _, base, started = self.holds[key] if held else (0, 0, provisioned, t)
            seen = (drain, self.trusted(sim, key, t, source, combined.consumed))
            level = self._level(sim, key, combined, target, (held, base), now, seen)
            if level is None:
                continue
            self.holds[key] = (level, self._ends(t), base, started)
            if level > held and raise_floor is not None:
                raise_floor(key, level)
            if level > sim.current(key):  # a raise refused while the table was updating too
                raises.setdefault(key[0], {})[key[1]] = level
        for index, values in raises.items():
            sim.update_table(t, index, values, second=source.second)
