"""Runs in: workstation (the `ddb-capacity` command).

Stock target tracking as the simulator replays it (``stock:T``, ``scheduled``, and beneath
the autopilot in ``autopilot+stock:T``): Application Auto Scaling's alarms on the delayed
datapoints, its scale-out and scale-in, scheduled actions and refused updates retried."""

from __future__ import annotations

from collections.abc import Sequence

from ddb_capacity_runtime.core.policy import capacity_units
from ddb_capacity_runtime.core.reservation import Floor, Reservation

from .model import SimulatedTable
from .params import ModelParams
from .schedules import Firing
from .trace import Key, Trace

HIGH_DATAPOINTS, LOW_DATAPOINTS, LOW_MARGIN = 2, 15, 0.20
"""Application Auto Scaling's alarms for target tracking on DynamoDB (DESIGN.md, "Facts")."""
EXTRA_PERIODS = 2
"""How many minutes further back than its evaluation periods an alarm looks for datapoints (its
evaluation range: 4 minutes for the high alarm, 17 for the low). CloudWatch retrieves more
datapoints than the evaluation periods and, where some are missing, evaluates the most recent ones
it has; it documents the range by its example only, 3 evaluation periods and 5 datapoints
("Configuring how CloudWatch alarms treat missing data"): the model takes the same 2 more."""

Bounds = tuple[int, int]
"""A target's [min, max] (capacity units)."""


def clamp(value: float, lo: int, hi: int) -> int:
    """``value`` in whole capacity units, within [``lo``, ``hi``]."""
    units = capacity_units(value)  # max(lo, min(hi, units)), as conditionals (a hot path)
    units = units if units < hi else hi
    return units if units > lo else lo


class AutoScaling:
    """Application Auto Scaling target tracking on every dimension, with scheduled actions.

    Each dimension is its own scalable target. Each minute, per dimension: a scheduled action
    in force sets min/max and capacity outside the range is moved into it at once; the high
    alarm (the last 2 datapoints CloudWatch holds above target x provisioned) scales out to
    the latest datapoint / target; the low alarm (the last 15 below (target - 20 points) x
    provisioned) scales in, but only to the highest of those 15 datapoints / target. A minute
    without traffic has no datapoint: each alarm evaluates the most recent datapoints within
    its evaluation range (`EXTRA_PERIODS` more minutes than it needs), and with too few there
    it takes no action, so an idle table is not scaled in. Target tracking does
    not scale in so far that the metric would likely go back above the target; sizing on the
    window's peak is how the model reads that rule (docs/guides/simulator.md#stock-target-tracking).

    A refused UpdateTable (another update of the table or GSI in flight, or the decrease
    quota) is retried the next minute, as the alarm stays in ALARM and Application Auto
    Scaling retries the scaling activity. Targets that share a table (its read and write, or
    a GSI's) are served oldest-waiting first, so neither starves the other whatever the
    order of the dimensions.

    With a ``reservation`` (``stock:T+reserved``), a scale-in is cut so that the
    dimension's total over the table and its GSIs stays at or above the reserved units
    (`Floor`, a change in flight counted at the lower of its old and new capacity):
    target tracking as it would be if it knew the reservation. The library deploys no
    such target tracking; the scaler's floor holds its own decreases.
    """

    def __init__(
        self,
        target_percent: int,
        params: ModelParams,
        keys: Sequence[Key],
        firings: Sequence[Firing] = (),
        scale_in: bool = True,
        reservation: Reservation | None = None,
    ) -> None:
        self.target = target_percent / 100
        self.reservation = reservation if reservation else None
        """scale-in never takes a dimension's total below it (None: no floor)"""
        self.targets: dict[Key, float] = {}
        """per target, a target value (a fraction) other than ``target``: an owned one, as the
        scaler set it (``own_target``)"""
        self.params = params
        self.scale_in = scale_in
        self.min = {k: params.min_capacity for k in keys}
        self.max = {k: params.max_capacity for k in keys}
        self.surge: dict[Key, int] = {}
        """Per target, the minimum a surge of the fast path holds it at, above ``min``."""
        self.waiting: dict[Key, int] = {}
        """The minute each target's refused change was first asked for (oldest goes first)."""
        self.held: dict[Key, tuple[int, float]] = {}
        """Per target, until which minute (exclusive) its low alarm cannot fire at a
        threshold up to the value given (`_hold`)."""
        self.firings: dict[int, list[Firing]] = {}
        for f in firings:
            self.firings.setdefault(f.minute, []).append(f)
        earliest = -params.warmup_minutes
        for f in sorted((f for f in firings if f.minute < earliest), key=lambda f: f.minute):
            self.min[f.key], self.max[f.key] = f.min_capacity, f.max_capacity

    def initial(self, trace: Trace, params: ModelParams) -> dict[Key, int]:
        return {
            k: clamp(d[0] / self.target, self.min[k], self.max[k]) for k, d in trace.demand.items()
        }

    def set_min(self, sim: SimulatedTable, t: int, key: Key, value: int) -> None:
        self.min[key] = value
        self._enforce(sim, t, key)

    def set_surge(self, key: Key, level: int) -> None:
        """Hold ``key``'s minimum at ``level`` (0: no longer) while a surge lasts; the
        target keeps the larger of it and its own minimum."""
        if level:
            self.surge[key] = level
        else:
            self.surge.pop(key, None)

    def _enforce(self, sim: SimulatedTable, t: int, key: Key) -> bool:
        current = sim.current(key)
        wanted = min(max(current, self.min[key], self.surge.get(key, 0)), self.max[key])
        if wanted != current:
            self._update(sim, t, key, wanted)
            return True
        return False

    def _update(self, sim: SimulatedTable, t: int, key: Key, wanted: int) -> None:
        """One scaling activity's UpdateTable; a refused one waits for the next minute."""
        if sim.update_table(t, key[0], {key[1]: wanted}) == "applied":
            self.waiting.pop(key, None)
        else:
            self.waiting.setdefault(key, t)

    def act(self, sim: SimulatedTable, t: int) -> None:
        firings = self.firings.get(t)
        if firings:
            for f in firings:
                self.min[f.key], self.max[f.key] = f.min_capacity, f.max_capacity
        waiting = self.waiting
        # stable: ties keep order
        order = sorted(sim.keys, key=lambda k: waiting.get(k, t)) if waiting else sim.keys
        for key in order:
            self._act_on(sim, t, key)

    def _act_on(self, sim: SimulatedTable, t: int, key: Key) -> None:
        """One target's minute: capacity moved into [min, max], else its alarms."""
        target = self.targets.get(key, self.target) if self.targets else self.target
        d = sim.dims[key]
        # _enforce, inline: capacity outside [min, max] (what is in flight counts)
        pending = d.pending
        current = d.provisioned if pending is None else pending
        # its [min, max], a surge's minimum where it is higher (inline: a target's minute)
        lo, hi, surge = self.min[key], self.max[key], self.surge
        if surge and surge.get(key, 0) > lo:
            lo = surge[key]
        wanted = current if current >= lo else lo  # min(max(current, lo), hi)
        wanted = hi if hi < wanted else wanted
        if wanted != current:
            self._update(sim, t, key, wanted)
            return
        if pending is not None:
            return
        # The alarms evaluate the newest datapoints CloudWatch holds (delays vary; a minute
        # without traffic has none). The low alarm's 15 datapoints within its 17 minutes
        # include some of the high alarm's 4, whose newest ends both: none there, no action.
        latest = sim.newest_present(key, t, HIGH_DATAPOINTS + EXTRA_PERIODS)
        if latest is None:
            return
        provisioned = d.provisioned
        if latest > target * provisioned:
            high = sim.present(key, t, HIGH_DATAPOINTS + EXTRA_PERIODS)
            self._scale_out(sim, t, key, high, target, (lo, hi))
        elif self.scale_in and latest < (target - LOW_MARGIN) * provisioned:
            self._scale_in(sim, t, key, target, (lo, hi))

    def _scale_out(
        self,
        sim: SimulatedTable,
        t: int,
        key: Key,
        datapoints: list[float],
        target: float,
        bounds: Bounds,
    ) -> None:
        """The high alarm: the last HIGH_DATAPOINTS of its evaluation range's
        ``datapoints`` above target x provisioned scale out to the latest / target (fewer
        datapoints: no action, as CloudWatch's alarms on DynamoDB's metrics keep their state
        on missing data and target tracking has nothing to size a change on)."""
        provisioned = sim.dims[key].provisioned
        if len(datapoints) < HIGH_DATAPOINTS:
            return
        if min(datapoints[-HIGH_DATAPOINTS:]) > target * provisioned:
            wanted = clamp(datapoints[-1] / target, *bounds)
            if wanted > provisioned:
                self._update(sim, t, key, wanted)

    def _scale_in(
        self, sim: SimulatedTable, t: int, key: Key, target: float, bounds: Bounds
    ) -> None:
        """The low alarm: the last LOW_DATAPOINTS its evaluation range holds, all below
        (target - LOW_MARGIN) x provisioned, scale in to the highest of them / target. A
        minute without a datapoint counts for nothing, neither in the 15 nor in their peak:
        fewer than 15 in the range (a table idle most of the last 17 minutes) and the alarm
        does not fire, so an idle table is never scaled in (AWS: auto scaling does not scale
        down when consumed capacity becomes zero)."""
        provisioned = sim.dims[key].provisioned
        threshold = (target - LOW_MARGIN) * provisioned
        held = self.held.get(key)
        if held is not None and t < held[0] and threshold <= held[1]:
            return  # a datapoint at or above the threshold is still among the newest 15
        low = sim.present(key, t, LOW_DATAPOINTS + EXTRA_PERIODS)
        if len(low) < LOW_DATAPOINTS:
            return
        peak = max(low[-LOW_DATAPOINTS:])
        if peak >= threshold:
            self._hold(sim, t, key, threshold)
            return
        wanted = clamp(peak / target, *bounds)
        if wanted < provisioned and self.reservation is not None:
            wanted = self._floor(sim).cut(key[1], provisioned, wanted)
        if wanted < provisioned:
            self._update(sim, t, key, wanted)

    def _hold(self, sim: SimulatedTable, t: int, key: Key, threshold: float) -> None:
        """Note until when ``key``'s low alarm, found not firing at ``t`` on a datapoint at
        or above ``threshold``, cannot fire (`held`), so that the minutes until then skip
        its evaluation: with datapoints delivered in order (no ``delay_spread_minutes``),
        the newest such datapoint among the window's newest `LOW_DATAPOINTS` minutes stays
        among the alarm's newest `LOW_DATAPOINTS` datapoints until that many minutes follow
        it in the window, and holds the alarm at any threshold up to its value. Datapoints
        never change once published."""
        p = sim.params
        if p.delay_spread_minutes:
            return
        served = sim.dims[key].served
        stop = min(t + sim.offset - p.metric_delay_minutes, len(served))  # as `present`
        for i in range(stop - 1, max(stop - LOW_DATAPOINTS, 0) - 1, -1):
            value = served[i]
            if value and value >= threshold:
                # the window at minute u ends (exclusive) at u + offset - delay
                until = i + LOW_DATAPOINTS + 1 + p.metric_delay_minutes - sim.offset
                self.held[key] = (until, value)
                return

    def _floor(self, sim: SimulatedTable) -> Floor:
        """The reservation floor over every dimension now (a change in flight counted at
        the lower of its old and new capacity)."""
        assert self.reservation is not None
        capacities = []
        for key in sim.keys:
            d = sim.dims[key]
            level = d.provisioned if d.pending is None else min(d.provisioned, d.pending)
            capacities.append((key[1], level))
        return Floor.over(self.reservation, capacities)
