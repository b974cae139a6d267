"""The policies a trace is replayed through, named as on the command line.

``fixed:N``, ``stock:T``, ``scheduled`` (or ``scheduled:T``), ``throttle-aware``,
``throttle-aware+stock:T``, ``on-demand``, ``oracle`` and ``bound`` (not a policy: the
proven lower bound on any zero-throttle plan's cost, :mod:`.bound`). The throttle-aware
policy is the scaler Lambda's own code: :func:`ddb_capacity_runtime.core.plan.plan_table` with the
run-time policy and quota ledger.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol

from ddb_capacity_runtime.core import settings
from ddb_capacity_runtime.core.floorplan import STEP_MINUTES, FloorPlan
from ddb_capacity_runtime.core.forecast import (
    HISTORY_DAYS,
    Forecast,
    apply_plans,
    forecast_due,
    plan_floors,
)
from ddb_capacity_runtime.core.names import resource_id, scalable_dimension
from ddb_capacity_runtime.core.plan import SCALABLE_TARGET, plan_table
from ddb_capacity_runtime.core.policy import HOLD, PolicyConfig, autopilot_config, capacity_units
from ddb_capacity_runtime.core.series import Series, window
from ddb_capacity_runtime.core.settings import Limits, ScalerConfig
from ddb_capacity_runtime.core.tables import Dimension, ManagedTable, ScalableTarget

from .model import ModelParams, SimulatedTable
from .schedules import Firing
from .trace import MINUTE, Key, Trace

SIMULATED_TABLE = "simulated"
#: The autopilot's history: 14 days of 5-minute steps (core.forecast).
HISTORY_STEPS = HISTORY_DAYS * 1440 // STEP_MINUTES
#: Application Auto Scaling's alarms for target tracking on DynamoDB (DESIGN.md, "Facts").
HIGH_DATAPOINTS, LOW_DATAPOINTS, LOW_MARGIN = 2, 15, 0.20
DEFAULT_TICK_MINUTES = settings.DEFAULT_TICK_MINUTES  # the Lambda's and the construct's
SPEC_HELP = (
    "fixed:N, stock:T, scheduled, scheduled:T, throttle-aware, "
    "throttle-aware+stock:T, autopilot, autopilot:T, autopilot+stock:T, on-demand, oracle "
    "or bound (T a target utilization in percent, 20 to 90)"
)


class PolicyError(ValueError):
    """A policy name the simulator does not know, or that cannot run on this input."""


class Policy(Protocol):
    def initial(self, trace: Trace, params: ModelParams) -> dict[Key, int]: ...

    def act(self, sim: SimulatedTable, t: int) -> None: ...


@dataclass(frozen=True)
class Spec:
    """A parsed ``--policy`` value."""

    text: str
    kind: str  # fixed | stock | scheduled | throttle-aware | on-demand | oracle | bound
    value: int | None = None  # N for fixed, T for stock/scheduled
    with_stock: bool = False


def _target(text: str, number: str) -> int:
    value = int(number)
    if not 20 <= value <= 90:
        raise PolicyError(
            f"--policy {text!r}: target utilization {value} is outside 20 to 90 "
            f"(Application Auto Scaling's range)"
        )
    return value


def parse(text: str, max_capacity: int = 40_000) -> Spec:
    """Parse one ``--policy`` value; :class:`PolicyError` names what is allowed."""
    t = text.strip()
    if t in ("on-demand", "oracle", "bound", "throttle-aware", "scheduled"):
        return Spec(text, t, 70 if t == "scheduled" else None)
    if m := re.fullmatch(r"fixed:(\d+)", t):
        n = int(m.group(1))
        if not 1 <= n <= max_capacity:
            raise PolicyError(
                f"--policy {text!r}: fixed capacity {n} is outside 1 to {max_capacity}"
            )
        return Spec(text, "fixed", n)
    if m := re.fullmatch(r"(stock|scheduled):(\d+)", t):
        return Spec(text, m.group(1), _target(text, m.group(2)))
    if m := re.fullmatch(r"throttle-aware\+stock:(\d+)", t):
        return Spec(text, "throttle-aware", _target(text, m.group(1)), with_stock=True)
    if t == "autopilot":
        return Spec(text, "autopilot")
    if m := re.fullmatch(r"autopilot:(\d+)", t):
        return Spec(text, "autopilot", _target(text, m.group(1)))
    if m := re.fullmatch(r"autopilot\+stock:(\d+)", t):
        return Spec(text, "autopilot", _target(text, m.group(1)), with_stock=True)
    raise PolicyError(f"--policy: got {text!r}; expected {SPEC_HELP}")


def _clamp(value: float, lo: int, hi: int) -> int:
    return max(lo, min(hi, capacity_units(value)))


class Fixed:
    def __init__(self, n: int) -> None:
        self.n = n

    def initial(self, trace: Trace, params: ModelParams) -> dict[Key, int]:
        return {k: min(self.n, params.max_capacity) for k in trace.demand}

    def act(self, sim: SimulatedTable, t: int) -> None:
        return None


class AutoScaling:
    """Application Auto Scaling target tracking on every dimension, with scheduled actions.

    Each dimension is its own scalable target. Each minute, per dimension: a scheduled action
    in force sets min/max and capacity outside the range is moved into it at once; the high
    alarm (the last 2 visible datapoints above target x provisioned) scales out to the latest
    datapoint / target; the low alarm (the last 15 below (target - 20 points) x provisioned)
    scales in, but only to the highest of those 15 datapoints / target. Target tracking does
    not scale in so far that the metric would likely go back above the target; sizing on the
    window's peak is how the model reads that rule (README, "The model").

    A refused UpdateTable (another update of the table or GSI in flight, or the decrease
    quota) is retried the next minute, as the alarm stays in ALARM and Application Auto
    Scaling retries the scaling activity. Targets that share a table (its read and write, or
    a GSI's) are served oldest-waiting first, so neither starves the other whatever the
    order of the dimensions.
    """

    def __init__(
        self,
        target_percent: int,
        params: ModelParams,
        keys: Sequence[Key],
        firings: Sequence[Firing] = (),
        scale_in: bool = True,
    ) -> None:
        self.target = target_percent / 100
        self.params = params
        self.scale_in = scale_in
        self.min = {k: params.min_capacity for k in keys}
        self.max = {k: params.max_capacity for k in keys}
        #: The minute each target's refused change was first asked for (oldest goes first).
        self.waiting: dict[Key, int] = {}
        self.firings: dict[int, list[Firing]] = {}
        for f in firings:
            self.firings.setdefault(f.minute, []).append(f)
        earliest = -params.warmup_minutes
        for f in sorted((f for f in firings if f.minute < earliest), key=lambda f: f.minute):
            self.min[f.key], self.max[f.key] = f.min_capacity, f.max_capacity

    def initial(self, trace: Trace, params: ModelParams) -> dict[Key, int]:
        return {
            k: _clamp(d[0] / self.target, self.min[k], self.max[k]) for k, d in trace.demand.items()
        }

    def set_min(self, sim: SimulatedTable, t: int, key: Key, value: int) -> None:
        self.min[key] = value
        self._enforce(sim, t, key)

    def _enforce(self, sim: SimulatedTable, t: int, key: Key) -> bool:
        current = sim.current(key)
        wanted = min(max(current, self.min[key]), self.max[key])
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
        for f in self.firings.get(t, ()):
            self.min[f.key], self.max[f.key] = f.min_capacity, f.max_capacity
        order = sorted(sim.keys, key=lambda k: self.waiting.get(k, t))  # stable: ties keep order
        for key in order:
            if self._enforce(sim, t, key) or sim.dims[key].pending is not None:
                continue
            # The alarms see the newest datapoints CloudWatch has delivered (delays vary).
            newest = self._newest(sim, key, t)
            if newest is None:
                continue
            provisioned = sim.dims[key].provisioned
            latest = sim.visible(key, newest, t)
            assert latest is not None
            threshold = (self.target - LOW_MARGIN) * provisioned
            if latest <= self.target * provisioned and (not self.scale_in or latest >= threshold):
                continue  # neither alarm can be in ALARM: the newest datapoint rules both out
            high, unknown = sim.datapoints(key, newest - HIGH_DATAPOINTS + 1, HIGH_DATAPOINTS, t)
            if not any(unknown) and min(high) > self.target * provisioned:
                wanted = _clamp(high[-1] / self.target, self.min[key], self.max[key])
                if wanted > provisioned:
                    self._update(sim, t, key, wanted)
                continue
            if not self.scale_in:
                continue
            low, unknown = sim.datapoints(key, newest - LOW_DATAPOINTS + 1, LOW_DATAPOINTS, t)
            if not any(unknown) and max(low) < threshold:
                peak = max(low)
                wanted = _clamp(peak / self.target, self.min[key], self.max[key])
                if wanted < provisioned:
                    self._update(sim, t, key, wanted)

    def _newest(self, sim: SimulatedTable, key: Key, t: int) -> int | None:
        """The newest minute whose datapoint is visible at ``t``."""
        m = t - 1 - self.params.metric_delay_minutes
        for candidate in range(m, m - self.params.delay_spread_minutes - 1, -1):
            if sim.visible(key, candidate, t) is not None:
                return candidate
        return None


class ThrottleAware:
    """The scaler Lambda, ticking every ``tick`` minutes: discovery is replaced by the
    simulated DescribeTable, CloudWatch by the delayed datapoints; the decisions are
    :func:`handler.plan_table`'s. With ``stock`` it moves the scalable targets' minimum (the
    base minimum is remembered as the actuator's tag does), else it calls UpdateTable."""

    def __init__(
        self,
        tick: int,
        target_percent: int,
        params: ModelParams,
        stock: AutoScaling | None = None,
        autopilot: bool = False,
    ) -> None:
        self.tick = tick
        self.params = params
        self.stock = stock
        self.target = target_percent / 100
        self.config = ScalerConfig(
            tables=(SIMULATED_TABLE,),
            tag_key=None,
            default_min=params.min_capacity,
            default_max=params.max_capacity,
            tick_minutes=tick,
            # the Lambda's own policy for this mode and tick (ScalerConfig.from_env)
            policy=replace(
                autopilot_config(self.target)
                if autopilot
                else PolicyConfig(target_utilization=self.target),
                scale_down_minutes=tick
                * settings.scale_down_ticks(tick, "autopilot" if autopilot else "reactive"),
            ),
        )
        self.base_min: dict[Key, int] = {}
        self.decisions = 0
        self.autopilot = autopilot
        #: The autopilot's history: per key, each 5-minute step's average consumption, as
        #: CloudWatch's 5-minute sums give it to the Lambda.
        self._steps: dict[Key, list[float | None]] = {}
        self._next_step: int | None = None
        #: Every forecast made: (minute, key, forecast, plan).
        self.forecasts: list[tuple[int, Key, Forecast, FloorPlan | None]] = []
        #: Each dimension's plan, kept between ticks as the Lambda keeps it in a tag.
        self.plans: dict[tuple[str, str | None, str], FloorPlan] = {}

    def initial(self, trace: Trace, params: ModelParams) -> dict[Key, int]:
        if self.stock is not None:
            return self.stock.initial(trace, params)
        return {
            k: _clamp(d[0] / self.target, params.min_capacity, params.max_capacity)
            for k, d in trace.demand.items()
        }

    def _series(
        self, sim: SimulatedTable, key: Key, t: int, minutes: range, starts: list[datetime]
    ) -> Series:
        """What the Lambda's GetMetricData would return: minutes not delivered yet are
        unknown (they read 0 and forbid any decrease, as at run time)."""
        first, count = minutes.start, len(minutes)
        consumed, late = sim.datapoints(key, first, count, t)
        throttles, late_events = sim.datapoints(key, first, count, t, throttles=True)
        unknown = [a or b for a, b in zip(late, late_events, strict=True)]
        return Series(starts, consumed, throttles, unknown if any(unknown) else [])

    def act(self, sim: SimulatedTable, t: int) -> None:
        self._tick(sim, t)
        if self.stock is not None:
            self.stock.act(sim, t)

    def _learn(self, sim: SimulatedTable, t: int) -> None:
        """Add every 5-minute step CloudWatch has delivered: the average consumption of its
        minutes (a 5-minute sum / 300 s, as the Lambda reads it; a minute not delivered
        counts 0, as a missing datapoint does there). Throttle events are not read: the
        forecast learns consumption only (core.forecast)."""
        if self._next_step is None:
            self._next_step = -sim.offset
        lag = self.config.metric_lag_minutes
        while self._next_step + STEP_MINUTES + lag <= t:
            for key in sim.keys:
                used, _ = sim.datapoints(key, self._next_step, STEP_MINUTES, t)
                self._steps.setdefault(key, []).append(sum(used) / STEP_MINUTES)
            self._next_step += STEP_MINUTES

    def _plan(self, dims: list[Dimension], t: int, minute_of_day: int) -> None:
        """The Lambda's forecast tick: each dimension's plan from its own history."""
        assert self._next_step is not None
        for d in dims:
            key = (d.index, d.dimension)
            plan, f = plan_floors(
                self._steps.get(key, [])[-HISTORY_STEPS:],
                self._next_step,
                t,
                d.limits.target_utilization or self.target,
                d.limits.min_capacity,
                d.limits.max_capacity,
                minute_of_day=minute_of_day,
            )
            self.forecasts.append((t, key, f, plan))
            if plan is not None:
                self.plans[d.key] = plan
            else:
                self.plans.pop(d.key, None)

    def _tick(self, sim: SimulatedTable, t: int) -> None:
        if t % self.tick:
            return
        if self.autopilot:
            self._learn(sim, t)
        if sim.busy(None, t):
            return  # DescribeTable says UPDATING: the tick skips the table
        # The minutes a tick reads, as the Lambda computes them; the same for every dimension.
        start, end = window(
            sim.time(t), self.config.history_minutes, self.config.metric_lag_minutes
        )
        first = int((start - sim.trace.start) / MINUTE)
        minutes = range(first, first + int((end - start) / MINUTE))
        starts = sim.times(first, len(minutes))
        dims, series = [], {}
        for key in sim.keys:
            index, dim = key
            if sim.busy(index, t):
                continue
            d = sim.dims[key]
            target = None
            lo = self.params.min_capacity
            hi = self.params.max_capacity
            if self.stock is not None:
                target = ScalableTarget(
                    resource_id(SIMULATED_TABLE, index),
                    scalable_dimension(index, dim),
                    self.stock.min[key],
                    self.stock.max[key],
                    True,
                )
                lo, hi = self.base_min.get(key, self.stock.min[key]), self.stock.max[key]
            dims.append(
                Dimension(
                    SIMULATED_TABLE,
                    index,
                    dim,
                    d.provisioned,
                    sim.ledgers[index],
                    d.last_increase,
                    Limits(lo, hi, self.target),
                    target,
                )
            )
            series[(SIMULATED_TABLE, index, dim)] = self._series(sim, key, t, minutes, starts)
        table = ManagedTable(SIMULATED_TABLE, f"arn:simulated:table/{SIMULATED_TABLE}", {}, dims)
        if self.autopilot:
            if forecast_due(SIMULATED_TABLE, sim.time(t).minute, self.tick):
                moment = sim.time(t)
                self._plan(dims, t, moment.hour * 60 + moment.minute)
            table = apply_plans(table, self.plans, t)
        updates: dict[str | None, dict[str, int]] = {}
        for change, _ in plan_table(table, series, self.config, sim.time(t)):
            if change.action == HOLD or change.new == change.old:
                continue
            self.decisions += 1
            key = (change.dimension.index, change.dimension.dimension)
            if change.via == SCALABLE_TARGET:
                assert self.stock is not None
                base = self.base_min.get(key, change.old)
                if change.new > change.old:
                    self.base_min[key] = base
                elif change.new <= base:
                    self.base_min.pop(key, None)
                self.stock.set_min(sim, t, key, change.new)
            else:
                updates.setdefault(key[0], {})[key[1]] = change.new
        for index, values in updates.items():
            sim.update_table(t, index, values)


class OnDemand:
    """Pay per request: every request is served (see the README for what this leaves out)."""

    def initial(self, trace: Trace, params: ModelParams) -> dict[Key, int]:
        return {k: 0 for k in trace.demand}

    def act(self, sim: SimulatedTable, t: int) -> None:
        return None
