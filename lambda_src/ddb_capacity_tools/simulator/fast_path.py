"""Runs in: workstation (the `ddb-capacity` command).

The fast path in the simulator: the application's processes report what they consume and
the throttles they meet (``ddb_capacity_runtime.signals.watch``), and the signals function
raises a dimension at once when the reports call for it
(:func:`ddb_capacity_runtime.core.surge.surge_level`, the deployed rule).

What the model assumes (``ModelParams.fast_path_seconds`` S and ``fast_path_share`` F):

- the reports of a moment's traffic reach the signals function S seconds later (the
  hook's report interval, the asynchronous invocation and the function's own time);
- the reporting processes carry the share F of every dimension's traffic, evenly; the
  signals function is not told F (as deployed by default), so it sees F x the demand;
- what they report of a minute: the demand capacity could serve (consumed units, and the
  units of provisioned-throughput throttles), and the key-range throttles apart, which
  never raise anything;
- a surge is sent S seconds into the minute whose traffic called for it (or into a later
  minute when S is a minute or more), and lands ``update_minutes`` later at that second:
  the minute it lands in is served in two parts (``SimulatedTable.update_table``);
- under a scalable target, the surge raises the target's minimum as a hold, which auto
  scaling then keeps (``AutoScaling.surge``); without one, it is an UpdateTable, and the
  scaler's tick does not lower the dimension below it while it holds;
- a surge is renewed while its dimension's demand would drain the capacity it falls
  back to (or throttles), and raised further only when the reports ask for more than it
  holds; it expires :data:`~ddb_capacity_runtime.core.surge.DEFAULT_SURGE_MINUTES`
  minutes after the last minute that called for it, and ends at the next restore
  (every :data:`RESTORE_MINUTES`, the restorer's default); it is not renewed
  :data:`~ddb_capacity_runtime.core.surge.SURGE_LIFETIME_MINUTES` after its first raise,
  and a new one may start once it has ended;
- a dimension being updated (UPDATING) starts no surge: the signals function counts it
  and the next report tries again.
"""

from __future__ import annotations

from collections.abc import Callable

from ddb_capacity_runtime.core.surge import (
    DEFAULT_SURGE_MINUTES,
    SURGE_LIFETIME_MINUTES,
    Combined,
    surge_level,
)

from .model import ModelParams, SimulatedTable
from .trace import Key

#: How often the restorer ends expired holds (``CapacityRequests``' default).
RESTORE_MINUTES = 5


class FastPath:
    """The signals function over one simulated table: per dimension, the surge it holds
    (its level, and the first minute it no longer holds)."""

    def __init__(self, params: ModelParams, surge_minutes: int = DEFAULT_SURGE_MINUTES) -> None:
        assert params.fast_path_seconds is not None
        self.delay, self.second = divmod(params.fast_path_seconds, 60)
        self.share = params.fast_path_share
        self.surge_minutes = surge_minutes
        self.max_capacity = params.max_capacity
        self.cap = params.fast_path_cap
        #: Per dimension, its surge: the level held, the first minute it no longer holds,
        #: the capacity it falls back to, and the minute of its first raise.
        self.holds: dict[Key, tuple[int, int, int, int]] = {}

    def floor(self, key: Key, t: int) -> int:
        """The level ``key``'s surge holds at minute ``t`` (0: none)."""
        held = self.holds.get(key)
        return held[0] if held is not None and t < held[1] else 0

    def _ends(self, t: int) -> int:
        """The minute a surge renewed at ``t`` ends: the first restore after it expires."""
        expires = t + self.surge_minutes
        return -(-expires // RESTORE_MINUTES) * RESTORE_MINUTES

    def seen(self, sim: SimulatedTable, key: Key, m: int) -> Combined | None:
        """What the reports tell of ``key``'s minute ``m``, ``self.second`` seconds into
        it when it is the minute under way (``self.delay`` 0); None before the simulation."""
        d, share = sim.dims[key], self.share
        if self.delay:
            i = m + sim.offset
            if i < 0 or i >= len(d.served):
                return None
            key_range = d.key_range[i] if d.key_range else 0.0
            short = max(0.0, d.throttled[i] - key_range)
            served = d.served[i]
            return Combined(
                share * (served + short), share * short, share * key_range, 1, share * served
            )
        minute = m if m > 0 else 0
        wanted = sim.trace.demand[key][minute]
        key_range = sim.key_range_refusal(key, wanted, minute)
        fixable = wanted - key_range
        seconds = float(self.second)
        bucket = min(d.bucket, sim.params.burst * d.provisioned)
        short = max(0.0, (fixable - d.provisioned) * seconds - bucket) / seconds
        served = fixable - short
        return Combined(share * fixable, share * short, share * key_range, 1, share * served)

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
        raises: dict[str | None, dict[str, int]] = {}
        for key in sim.keys:
            combined = self.seen(sim, key, t - self.delay)
            if combined is None:
                continue
            # the capacity in force, as DescribeTable shows it (an update in flight is not)
            provisioned, held = sim.dims[key].provisioned, self.floor(key, t)
            if not held and sim.busy(key[0], t):
                continue  # UPDATING: no surge starts
            if held and t - self.holds[key][3] >= SURGE_LIFETIME_MINUTES:
                continue  # it has lasted its longest: it expires, and may start again
            _, _, base, started = self.holds[key] if held else (0, 0, provisioned, t)
            level = surge_level(
                combined,
                provisioned,
                target,
                self.max_capacity,
                cap=self.cap,
                held=held,
                base=base,
            )
            if level is None:
                continue
            self.holds[key] = (level, self._ends(t), base, started)
            if level > held:
                if raise_floor is not None:
                    raise_floor(key, level)
                if level > sim.current(key):
                    raises.setdefault(key[0], {})[key[1]] = level
        for index, values in raises.items():
            sim.update_table(t, index, values, second=self.second)
