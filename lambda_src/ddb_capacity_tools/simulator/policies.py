"""Runs in: workstation (the `ddb-capacity` command).

The policies a trace is replayed through, named as on the command line.

``fixed:N``, ``stock:T``, ``scheduled`` (or ``scheduled:T``), ``throttle-aware``,
``throttle-aware+stock:T``, ``on-demand``, ``oracle`` and ``bound`` (not a policy: the
proven lower bound on any zero-throttle plan's cost, `bound`). The throttle-aware
policy is the scaler Lambda's own code: `ddb_capacity_runtime.core.plan.plan_table` with the
run-time policy and quota ledger. It reads the throttles by cause, as the Lambda does where
DynamoDB publishes them; with the suffix ``+lumped`` (``autopilot+stock:70+lumped``) it
reads only the lumped throttle events, as before the causes were published. With the
suffix ``+reserved``, written last (``stock:70+reserved``, ``autopilot+stock:70+reserved``),
a provisioned policy is reservation-aware: it never lowers a dimension's provisioned total
(table and GSIs) below the model's reserved units (`ModelParams.reserved_read_units`),
cutting its decreases at `ddb_capacity_runtime.core.reservation.Floor`, the scaler's own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

from ddb_capacity_runtime.core import plan as core_plan
from ddb_capacity_runtime.core import settings
from ddb_capacity_runtime.core.delivery import (
    WITNESS_PERIOD_MINUTES,
    Verdict,
    decided_from,
    hold_unwitnessed,
    verdict,
)
from ddb_capacity_runtime.core.floorplan import STEP_MINUTES, FloorPlan
from ddb_capacity_runtime.core.forecast import (
    HISTORY_DAYS,
    Forecast,
    Replay,
    apply_plans,
    forecast_due,
    plan_asks,
    plan_floors,
)
from ddb_capacity_runtime.core.names import resource_id, scalable_dimension
from ddb_capacity_runtime.core.ownership import retargets
from ddb_capacity_runtime.core.plan import (
    SCALABLE_TARGET,
    Change,
    every_dimension_read,
    floor_planned,
    plan_table,
    read_anyway,
    reservation_floor,
    throttles_due,
)
from ddb_capacity_runtime.core.policy import HOLD, Decision, PolicyConfig
from ddb_capacity_runtime.core.reservation import Floor
from ddb_capacity_runtime.core.series import Key as SeriesKey
from ddb_capacity_runtime.core.series import Series, tell_causes, window
from ddb_capacity_runtime.core.settings import ScalerConfig
from ddb_capacity_runtime.core.table_limits import Limits
from ddb_capacity_runtime.core.tables import Dimension, ManagedTable, ScalableTarget, TrackingPolicy

from ..tool_errors import PolicyError as PolicyError
from .fast_path_model import FastPath, sources
from .model import SimulatedTable
from .params import ModelParams
from .stock import EXTRA_PERIODS as EXTRA_PERIODS
from .stock import HIGH_DATAPOINTS as HIGH_DATAPOINTS
from .stock import LOW_DATAPOINTS as LOW_DATAPOINTS
from .stock import LOW_MARGIN as LOW_MARGIN
from .stock import AutoScaling as AutoScaling
from .stock import clamp
from .trace import MINUTE, Key, Trace

SIMULATED_TABLE = "simulated"
TABLE_ARN = f"arn:simulated:table/{SIMULATED_TABLE}"
HISTORY_STEPS = HISTORY_DAYS * 1440 // STEP_MINUTES
"""The autopilot's history: 14 days of 5-minute steps (core.forecast)."""
DEFAULT_TICK_MINUTES = settings.DEFAULT_TICK_MINUTES  # the Lambda's and the construct's
SPEC_HELP = (
    "fixed:N, stock:T, scheduled, scheduled:T, throttle-aware, "
    "throttle-aware+stock:T, autopilot, autopilot:T, autopilot+stock:T, hybrid, hybrid:T, "
    "windows, windows:T, on-demand, oracle or bound (N capacity units, 1 to the maximum "
    "capacity; T a target utilization in percent, 20 to 90); a throttle-aware or autopilot "
    "policy + '+lumped' reads throttles without their causes; autopilot+stock:T + '+owned' "
    "owns target tracking's target value; any of them but fixed:N, hybrid, windows, "
    "on-demand, oracle and bound + '+reserved' (written last) never lowers the total below "
    "the reserved units"
)

LUMPED = "+lumped"
"""The suffix of a throttle-aware or autopilot policy that reads only lumped throttles."""
OWNED = "+owned"
"""The suffix of an autopilot on stock that owns target tracking's target value (the scaler's
``own_target``)."""
RESERVED = "+reserved"
"""The suffix of a reservation-aware provisioned policy (written last)."""
COMPOSED = frozenset({"hybrid", "windows"})
"""The kinds composed from an autopilot run and an on-demand run, minute by minute (`hybrid`): the
hybrid learns its on-demand hours each day, the declared windows (``windows``) keep the same hours
every day."""
_COMPILED = not __file__.endswith(".py")
"""Whether this module runs compiled (`ddb_capacity_tools.compiled`): its classes then have no
``__dict__`` to copy."""
_NAMED_KINDS = COMPOSED | {
    "on-demand",
    "oracle",
    "bound",
    "throttle-aware",
    "scheduled",
    "autopilot",
}
"""The kinds a policy is named by alone (no ``:N`` or ``:T``)."""
RESERVABLE = frozenset({"stock", "scheduled", "throttle-aware", "autopilot"})
"""The kinds ``+reserved`` applies to: those that decrease capacity."""


SIMULATED_POLICY = TrackingPolicy("simulated", "DynamoDBCapacityUtilization")
"""The target-tracking policy of an owned simulated target (its name and metric are never read: the
simulated auto scaling tracks its target directly)."""


class Policy(Protocol):
    def initial(self, trace: Trace, params: ModelParams) -> dict[Key, int]: ...

    def act(self, sim: SimulatedTable, t: int) -> None: ...


@dataclass(frozen=True)
class Spec:
    """A parsed ``--policy`` value."""

    text: str
    kind: str  # fixed | stock | scheduled | throttle-aware | autopilot | hybrid | on-demand | ...
    value: int | None = None  # N for fixed, T for stock/scheduled
    with_stock: bool = False
    lumped: bool = False  # throttle-aware / autopilot: throttles read without their causes
    owned: bool = False  # autopilot on stock: the scaler owns target tracking's target value
    noise_aim: bool | None = None
    """the autopilot's noise aim (PolicyConfig.noise_aim) on or off; None: the mode's own. Not
    written on the command line: a benchmark measures the policy with and without it"""
    forecast: bool = True
    """the autopilot's forecast on (the default) or off, and replacements of its policy's fields
    (PolicyConfig): not written on the command line either, a benchmark turns each part off in turn
    to measure what it buys (``benchmarks/padding.py``)"""
    tweaks: tuple[tuple[str, Any], ...] = ()
    reserved: bool = False
    """reservation-aware (``+reserved``): no decrease takes a dimension's total below the
    model's reserved units"""


def _target(text: str, number: str, option: str) -> int:
    value = int(number)
    if not 20 <= value <= 90:
        raise PolicyError(
            f"{option} {text!r}: target utilization {value} is outside 20 to 90 "
            f"(Application Auto Scaling's range)"
        )
    return value


_NUMBERED = (
    (r"(stock|scheduled|autopilot|hybrid|windows):(-?\d+)", None, False),
    (r"throttle-aware\+stock:(-?\d+)", "throttle-aware", True),
    (r"autopilot\+stock:(-?\d+)", "autopilot", True),
)
"""Each policy that takes a number: its pattern (a minus sign taken, so that a negative number is
told its range), kind and whether it runs on stock auto scaling."""


def parse(
    text: str, max_capacity: int | None = 40_000, option: str = "--policy", expected: str = ""
) -> Spec:
    """Parse one ``--policy`` value (or the value of ``option``, which names it in errors);
    [`PolicyError`][ddb_capacity_tools.simulator.PolicyError] names what is allowed
    (``expected``, by default every policy, `SPEC_HELP`). A ``fixed:N`` is checked against
    ``max_capacity`` (None: not checked, for a name checked when it was given)."""
    t = text.strip()
    if t.endswith(RESERVED):
        spec = parse(t[: -len(RESERVED)], max_capacity, option, expected)
        if spec.kind not in RESERVABLE:
            raise PolicyError(
                f"{option}: got {text!r}; {RESERVED!r} applies to stock, scheduled, "
                "throttle-aware and autopilot policies only (those that lower capacity), "
                "written last"
            )
        return replace(spec, text=text, reserved=True)
    if t.endswith(OWNED):
        spec = parse(t[: -len(OWNED)], max_capacity, option, expected)
        if not (spec.kind == "autopilot" and spec.with_stock):
            raise PolicyError(
                f"{option}: got {text!r}; {OWNED!r} applies to autopilot+stock:T only (the "
                "target value of stock target tracking)"
            )
        return replace(spec, text=text, owned=True)
    if t.endswith(LUMPED):
        spec = parse(t[: -len(LUMPED)], max_capacity, option, expected)
        if spec.kind not in ("throttle-aware", "autopilot"):
            raise PolicyError(
                f"{option}: got {text!r}; {LUMPED!r} applies to throttle-aware and autopilot "
                f"policies only"
            )
        return Spec(text, spec.kind, spec.value, spec.with_stock, lumped=True)
    if t in _NAMED_KINDS:
        return Spec(text, t, 70 if t == "scheduled" else None)
    if m := re.fullmatch(r"fixed:(-?\d+)", t):
        n = int(m.group(1))
        if not 1 <= n <= (n if max_capacity is None else max_capacity):
            raise PolicyError(
                f"{option} {text!r}: fixed capacity {n} is outside 1 to {max_capacity} "
                f"(capacity units)"
            )
        return Spec(text, "fixed", n)
    for pattern, kind, with_stock in _NUMBERED:
        if m := re.fullmatch(pattern, t):
            value = _target(text, m.group(m.lastindex or 1), option)
            return Spec(text, kind or m.group(1), value, with_stock=with_stock)
    raise PolicyError(f"{option}: got {text!r}; expected {expected or SPEC_HELP}")


class Fixed:
    def __init__(self, n: int) -> None:
        self.n = n

    def initial(self, trace: Trace, params: ModelParams) -> dict[Key, int]:
        return {k: min(self.n, params.max_capacity) for k in trace.demand}

    def act(self, sim: SimulatedTable, t: int) -> None:
        return None


def _policy(
    autopilot: bool,
    tick: int,
    target: float,
    noise_aim: bool | None,
    tweaks: tuple[tuple[str, Any], ...],
) -> PolicyConfig:
    """The Lambda's own policy for the mode and tick, with a benchmark's changes."""
    mode = settings.Mode.AUTOPILOT if autopilot else settings.Mode.REACTIVE
    policy = settings.for_mode(mode, tick, target)
    if noise_aim is not None:
        policy = replace(policy, noise_aim=noise_aim)
    return replace(policy, **dict(tweaks)) if tweaks else policy


class ThrottleAware:
    """The scaler Lambda, ticking every ``tick`` minutes: discovery is replaced by the
    simulated DescribeTable, CloudWatch by the delayed datapoints; the decisions are
    `ddb_capacity_runtime.core.plan.plan_table`'s. With ``stock`` it moves the
    scalable targets' minimum (the base minimum is remembered as the state store does),
    else it calls UpdateTable. With ``causes`` (the default) its series carry the throttles
    by cause, as the Lambda reads them; else only the lumped throttle events. With
    ``reserved``, its decreases are cut at the model's reservation as the Lambda's are
    (`ddb_capacity_runtime.core.plan.floor_planned`; its tables: this one); stock target
    tracking beneath it scales in as stock does. A decrease that rests on minutes read as
    idle waits for the delivery witness as the Lambda's does (`core.delivery`)."""

    def __init__(
        self,
        tick: int,
        target_percent: int,
        params: ModelParams,
        stock: AutoScaling | None = None,
        autopilot: bool = False,
        causes: bool = True,
        own_target: bool = False,
        noise_aim: bool | None = None,
        forecast: bool = True,
        tweaks: tuple[tuple[str, Any], ...] = (),
        reserved: bool = False,
    ) -> None:
        self.fast = FastPath(params) if sources(params) else None
        """The fast path's signals function, when the model has a signal for it
        (``fast_path_seconds``, ``stream_seconds``)."""
        self._now = 0
        """The minute of the tick under way."""
        self.tick = tick
        self.causes = causes
        self.params = params
        self.stock = stock
        self.own_target = own_target and stock is not None and autopilot
        """it owns stock target tracking's target value (the scaler's ``own_target``)"""
        self.target = target_percent / 100
        policy = _policy(autopilot, tick, self.target, noise_aim, tweaks)
        self.config = ScalerConfig(
            tables=(SIMULATED_TABLE,),
            tag_key=None,
            default_min=params.min_capacity,
            default_max=params.max_capacity,
            tick_minutes=tick,
            policy=policy,
            reserved_read_units=params.reserved_read_units if reserved else 0,
            reserved_write_units=params.reserved_write_units if reserved else 0,
        )
        self.base_min: dict[Key, int] = {}
        self.decisions = 0
        self.autopilot = autopilot
        self.forecasting = autopilot and forecast
        """the autopilot plans by its forecast (off: it reacts alone)"""
        self._init_forecasts()
        self._dims: dict[Key, tuple[tuple[Any, ...], Dimension]] = {}
        """Per key, the dimension last described and what it was made from."""
        self._shift: int | None = None
        """A tick's first minute read, relative to the tick (None until known)."""
        self._described: ManagedTable | None = None
        """The table last described, and the last one `apply_plans` made from it with what the plans
        asked (`_apply_plans`)."""
        self._planned: tuple[ManagedTable, list[Any], ManagedTable] | None = None
        self._verdicts: dict[tuple[int, int, int], bool] = {}
        """The delivery verdict per phase of a tick's time (`delivered`)."""
        # what a tick reads: its window and the newest minutes (the metric lag's), the newest
        # of them still arriving; and the reservation its decreases are cut at
        self._history_minutes = self.config.history_minutes + self.config.metric_lag_minutes
        self._arriving = self.config.arriving_minutes
        self._reservation = self.config.reservation
        self.throttle_reads = [0, 0]
        """The dimensions' reads of throttle events, of the dimensions' ticks."""

    def _init_forecasts(self) -> None:
        """What the autopilot's forecasts keep from tick to tick."""
        self._steps: dict[Key, list[float | None]] = {}
        """The autopilot's history: per key, each 5-minute step's average consumption, as
        CloudWatch's 5-minute sums give it to the Lambda."""
        self._next_step: int | None = None
        self.forecasts: list[tuple[int, Key, Forecast, FloorPlan | None]] = []
        """Every forecast made: (minute, key, forecast, plan)."""
        self.plans: dict[tuple[str, str | None, str], FloorPlan] = {}
        """Each dimension's plan, kept between ticks as the Lambda keeps it in a tag."""
        self._replays: dict[Key, Replay] = {}
        """Each dimension's forecast gate (`Replay`), kept from one forecast to the next: the
        same verdicts as the Lambda's replay of the whole day, the steps since replayed."""

    def initial(self, trace: Trace, params: ModelParams) -> dict[Key, int]:
        if self.stock is not None:
            return self.stock.initial(trace, params)
        return {
            k: clamp(d[0] / self.target, params.min_capacity, params.max_capacity)
            for k, d in trace.demand.items()
        }

    def _series(
        self,
        sim: SimulatedTable,
        key: Key,
        t: int,
        window: tuple[int, int],
        newest: int | None,
        arriving: int,
    ) -> Series:
        """What the Lambda's GetMetricData would return for the ``window`` (its first minute
        and how many), ``newest`` the newest minute its batch holds a datapoint of
        (`SimulatedTable.delivered_through`): a minute up to it without a datapoint reads 0,
        known (idle), but among the newest ``arriving`` minutes (whose datapoints may still
        be on their way: `ScalerConfig.arriving_minutes`), where it reads 0, unknown (late,
        or idle: the Lambda cannot tell); the minutes after ``newest`` are not delivered
        yet, left out of the lists as the tick would leave them out (unknown: they read 0
        and forbid any decrease). Where the table has a hot partition and a minute is
        throttled, the causes are told apart as ``fetch_causes`` tells them: ``unfixable``
        and ``key_range`` hold the key-range throttle events (the model's only cause that
        capacity cannot fix)."""
        first, count = window
        consumed, throttles, unknown, undelivered = sim.metrics(
            key, first, count, t, newest, arriving
        )
        listed = count - undelivered
        times = sim.times(first, listed)
        if not self.causes or sim.partitions is None or not any(throttles):
            return Series(times, consumed, throttles, unknown, undelivered=undelivered)
        # the model publishes key-range events; the provisioned-throughput ones are the rest
        unfixable = [
            (tell_causes(n, max(0.0, n - k), k, 0.0) or (0.0, 0.0))[0] if n > 0 else 0.0
            for k, n in zip(sim.key_range_events(key, first, listed, t), throttles, strict=True)
        ]
        return Series(times, consumed, throttles, unknown, unfixable, unfixable, 0, undelivered)

    def act(self, sim: SimulatedTable, t: int) -> None:
        if t % self.tick == 0:
            self._tick(sim, t)
        if self.stock is not None:
            self.stock.act(sim, t)
        if self.fast is not None:
            self.fast.act(sim, t, self.target, self.stock.set_surge if self.stock else None)

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
                used = sim.known(key, self._next_step, STEP_MINUTES, t)  # all known, mostly
                if used is None:
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
                replay=self._replays.setdefault(key, Replay()),
            )
            self.forecasts.append((t, key, f, plan))
            if plan is not None:
                self.plans[d.key] = plan
            else:
                self.plans.pop(d.key, None)

    def _tick(self, sim: SimulatedTable, t: int) -> None:
        self._now = t
        if self.autopilot:
            self._learn(sim, t)
        if sim.busy(None, t):
            return  # DescribeTable says UPDATING: the tick skips the table
        table, series = self._describe(sim, t)
        now = sim.time(t)
        if self.autopilot:
            if self.forecasting and forecast_due(SIMULATED_TABLE, now.minute, self.tick):
                self._plan(table.dimensions, t, now.hour * 60 + now.minute)
            table = self._apply_plans(table, t)
            if self.own_target:
                self._retarget(table)
        floor = reservation_floor(self._reservation, [table])  # its tables: this one
        delivered = self.delivered(sim, t, now)  # every dimension's witness, as one

        # the first decision, on consumption alone, only picks the throttles read (as the
        # Lambda's `read_throttles`); the one made with them is the tick's, which is the
        # first itself where `_reused` makes it
        first = self._reused(table, series, now, floor)
        due = (
            self._due(table, series, now, floor)
            if first is None
            else self._picked(first, series, now)
        )
        series = self._read(series, due)
        read = series

        def plan(read_now: Mapping[SeriesKey, Series]) -> list[tuple[Change, Decision]]:
            if first is not None and read_now is read:
                return first
            return plan_table(table, read_now, self.config, now, floor=floor)  # this module's name

        # as the Lambda's tick: idle minutes lower nothing unwitnessed, then the floor
        planned, _ = hold_unwitnessed(plan, series, lambda _: delivered)
        if floor is not None:
            planned, _ = floor_planned(planned, floor)
        self._carry_out(sim, t, planned)

    @staticmethod
    def _assumed(series: Mapping[SeriesKey, Series]) -> dict[SeriesKey, Series]:
        """What the Lambda's first decision reads: consumption, throttles taken for 0."""
        return {k: _consumption(s) for k, s in series.items()}

    def _due(
        self,
        table: ManagedTable,
        series: Mapping[SeriesKey, Series],
        now: datetime,
        floor: Floor | None,
    ) -> set[SeriesKey]:
        """The keys whose throttles the Lambda reads (`throttles_due`) after its first
        decision, on consumption alone (`_assumed`): that decision is made only when some
        dimension's read depends on it, one set by UpdateTable not read whatever it decides
        (`read_anyway`, or every one on one tick in `THROTTLE_READ_TICKS`). One under a
        scalable target that is not read anyway has its minimum not held raised, and
        `decide_scalable_min` never lowers that (its result is never below the configured
        minimum), so the first decision never makes it due."""
        every = every_dimension_read(now, self.tick)
        due = set()
        for d in table.dimensions:
            if every or read_anyway(d, series[d.key]):
                due.add(d.key)
            elif d.target is None:
                return self._due_decided(table, series, now, floor)
        return due

    def _due_decided(
        self,
        table: ManagedTable,
        series: Mapping[SeriesKey, Series],
        now: datetime,
        floor: Floor | None,
    ) -> set[SeriesKey]:
        """`_due` by the first decision itself, always made (its reference)."""
        first = core_plan.plan_table(table, self._assumed(series), self.config, now, floor=floor)
        return self._picked(first, series, now)

    def _reused(
        self,
        table: ManagedTable,
        series: Mapping[SeriesKey, Series],
        now: datetime,
        floor: Floor | None,
    ) -> list[tuple[Change, Decision]] | None:
        """The first decision, made as the tick's own (this module's `plan_table`, so it is
        the tick's one call), where the decision made with the throttles read would be the
        same: no series holds a throttle event or a cause (each due dimension then reads
        the series the first decision read), every dimension is set by UpdateTable and no
        reservation floor cuts a decrease (a dimension not due was not lowered by the first
        decision, and `decide` reads that its throttles were not read only to hold a
        decrease). Else None: the first decision is made only where needed (`_due`)."""
        if floor is not None or any(d.target is not None for d in table.dimensions):
            return None
        if any(_consumption(s) is not s for s in series.values()):
            return None
        return plan_table(table, series, self.config, now)  # this module's name

    def _picked(
        self,
        first: list[tuple[Change, Decision]],
        series: Mapping[SeriesKey, Series],
        now: datetime,
    ) -> set[SeriesKey]:
        """The keys whose throttles the Lambda reads after its ``first`` decision."""
        return set(throttles_due(first, series, now, self.tick))

    def _read(
        self, series: Mapping[SeriesKey, Series], due: set[SeriesKey]
    ) -> dict[SeriesKey, Series]:
        """``series`` with the throttles read of the ``due`` keys (counted in
        ``throttle_reads``); the others' read 0 (`_assumed`), not read (never lowered)."""
        self.throttle_reads[0] += len(due)
        self.throttle_reads[1] += len(series)
        return {k: s if k in due else _unread(_consumption(s)) for k, s in series.items()}

    def delivered(self, sim: SimulatedTable, t: int, now: datetime) -> bool:
        """`delivered_now`, kept per phase of ``now`` in the witness period (its minute
        within the period, its second and microsecond): the witness's timestamp, the
        decided-from minute and the verdict's limits all move with ``now`` by whole
        minutes, aligned on periods that divide an hour, so a tick a whole number of
        periods later has the same verdict."""
        phase = (now.minute % WITNESS_PERIOD_MINUTES, now.second, now.microsecond)
        known = self._verdicts.get(phase)
        if known is None:
            known = self._verdicts[phase] = self.delivered_now(sim, t, now)
        return known

    def delivered_now(self, sim: SimulatedTable, t: int, now: datetime) -> bool:
        """Whether the tick at ``t`` (at ``now``) finds the table's delivery witnessed
        (`verdict` DELIVERED) for the minutes its decreases are decided on."""
        since = decided_from(now, self.config)
        return verdict(sim.witness_through(t), now, since) is Verdict.DELIVERED

    def _apply_plans(self, table: ManagedTable, t: int) -> ManagedTable:
        """`apply_plans` at ``t``: the table it made last while the table described,
        each dimension's plan and what the plan asks (`plan_asks`) are the same, as
        on most ticks of a plan's step (it would make an equal one)."""
        plans = self.plans
        if not plans:
            return table
        asks = []
        for d in table.dimensions:
            plan = plans.get(d.key)
            asks.append((plan, plan_asks(plan, t)) if plan is not None else None)
        last = self._planned
        if last is not None and last[0] is table and last[1] == asks:
            return last[2]
        planned = apply_plans(table, plans, t)
        self._planned = (table, asks, planned)
        return planned

    def _retarget(self, table: ManagedTable) -> None:
        """Set each owned target's target value to what its dimension aims at, as the
        scaler's tick does (`ddb_capacity_runtime.core.ownership.retargets`: the
        plan's aim while its floor is in force, else the configured target)."""
        assert self.stock is not None
        for r in retargets(table):
            self.stock.targets[(r.dimension.index, r.dimension.dimension)] = r.new / 100

    def _window(self, sim: SimulatedTable, t: int) -> tuple[int, int]:
        """The first minute and the number of minutes a tick at ``t`` reads, as the Lambda
        computes them (`window`); the same for every dimension. On a trace that starts
        on a whole minute the window keeps its place relative to the tick."""
        if self._shift is not None:
            return t + self._shift, self._history_minutes
        start, end = window(
            sim.time(t), self.config.history_minutes, self.config.metric_lag_minutes
        )
        first = int((start - sim.trace.start) / MINUTE)
        if sim.trace.start.second == 0 and sim.trace.start.microsecond == 0:
            self._shift = first - t
        return first, int((end - start) / MINUTE)

    def _describe(
        self, sim: SimulatedTable, t: int
    ) -> tuple[ManagedTable, dict[SeriesKey, Series]]:
        """The table as the Lambda's discovery and GetMetricData show it at ``t``: every
        dimension not UPDATING, and its window of minutes. The table is the one described
        last while its dimensions are the same (it is read only)."""
        window = self._window(sim, t)
        newest = sim.delivered_through(t, self.tick)
        arriving = self._arriving
        dims, series = [], {}
        busy_until = sim.busy_until
        for key in sim.keys:
            if busy_until and sim.busy(key[0], t):
                continue
            d = self._dimension(sim, key)
            dims.append(d)
            series[(SIMULATED_TABLE, key[0], key[1])] = self._series(
                sim, key, t, window, newest, arriving
            )
        last = self._described
        if last is None or last.dimensions != dims:  # else the same table again
            last = self._described = _Described(SIMULATED_TABLE, TABLE_ARN, {}, dims)
        return last, series

    def _dimension(self, sim: SimulatedTable, key: Key) -> Dimension:
        """``key``'s dimension as discovery reads it: the same object while nothing it holds
        has changed (it is immutable)."""
        index, dim = key
        d, stock = sim.dims[key], self.stock
        ledger = sim.ledgers[index]
        held: tuple[Any, ...] = (d.provisioned, ledger, d.last_increase)
        floor = self.fast.floor(key, self._now) if self.fast is not None else 0
        if floor:
            held += (floor,)
        if stock is not None:
            held += (stock.min[key], stock.max[key], self.base_min.get(key))
            if self.own_target:
                held += (stock.targets.get(key),)
        cached = self._dims.get(key)
        if cached is not None and cached[0] == held:
            return cached[1]
        target = None
        lo, hi = self.params.min_capacity, self.params.max_capacity
        if stock is not None:
            owned = (
                (round(stock.targets.get(key, stock.target) * 100), SIMULATED_POLICY)
                if self.own_target
                else (None, None)
            )
            target = ScalableTarget(
                resource_id(SIMULATED_TABLE, index),
                scalable_dimension(index, dim),
                stock.min[key],
                stock.max[key],
                True,
                *owned,
            )
            lo, hi = self.base_min.get(key, stock.min[key]), stock.max[key]
        if floor > lo:  # a surge holds: the tick neither lowers nor caps it (holds.lift)
            lo, hi = floor, max(hi, floor)
        limits = Limits(lo, hi, self.target)
        made = Dimension(
            SIMULATED_TABLE,
            index,
            dim,
            d.provisioned,
            ledger,
            d.last_increase,
            limits,
            target,
            owned_target=self.target if self.own_target else None,
        )
        self._dims[key] = (held, made)
        return made

    def _carry_out(
        self, sim: SimulatedTable, t: int, planned: list[tuple[Change, Decision]]
    ) -> None:
        """Make the tick's changes: a scalable target's minimum (remembering the base
        minimum, as the state store does), or one UpdateTable per table or GSI."""
        updates: dict[str | None, dict[str, int]] = {}
        for change, _ in planned:
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


def _consumption(s: Series) -> Series:
    """``s`` read on consumption alone: its throttles 0, no cause known (``s`` itself when it
    has none to zero)."""
    if not s.unfixable and not s.key_range and not any(s.throttles):
        return s
    return _read_as(s, [0.0] * len(s.throttles), [], [], s.throttles_read)


def _unread(s: Series) -> Series:
    """``s`` (read on consumption alone) with its throttles not read (`Series.throttles_read`)."""
    return _read_as(s, s.throttles, s.unfixable, s.key_range, False)


def _read_as(
    s: Series,
    throttles: list[float],
    unfixable: list[float],
    key_range: list[float],
    throttles_read: bool,
) -> Series:
    """``s`` with what its throttles read set, every other field kept: `dataclasses.replace`
    made by position, which costs a tick less (`SERIES_FIELDS`, checked by a test, is the
    order it copies)."""
    return Series(
        s.minute_starts,
        s.consumed,
        throttles,
        s.unknown,
        unfixable,
        key_range,
        s.causes_unknown,
        s.undelivered,
        s.untrusted,
        throttles_read,
    )


SERIES_FIELDS = (
    "minute_starts",
    "consumed",
    "throttles",
    "unknown",
    "unfixable",
    "key_range",
    "causes_unknown",
    "undelivered",
    "untrusted",
    "throttles_read",
)
"""`Series`' fields in the order `_read_as` passes them."""


class _Described(ManagedTable):
    """The simulated DescribeTable's table. Its shallow copy (`apply_plans` makes one
    each tick) is `copy.copy`'s, without the generic protocol's cost."""

    def __copy__(self) -> _Described:
        if _COMPILED:
            return replace(self)
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        return clone


class OnDemand:
    """Pay per request: every request is served within on-demand's limits, which the model
    applies (`on_demand.on_demand_refusals`); no capacity to set."""

    def initial(self, trace: Trace, params: ModelParams) -> dict[Key, int]:
        return {k: 0 for k in trace.demand}

    def act(self, sim: SimulatedTable, t: int) -> None:
        return None
