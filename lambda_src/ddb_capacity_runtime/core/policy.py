"""Runs in: scaler Lambda, broker Lambda, workers (the user's own jobs, in direct mode), CDK
app (synth: the modes' policies), workstation (simulator).

The throttle-aware scaling policy: pure functions, no I/O.

One call decides one dimension (read or write of a table or GSI) from what CloudWatch
showed and what DynamoDB reports. The Lambda and the simulator run this same code.

Rules, in order:

=====================  ========================================================
provisioned < min      raise to min
throttled              raise at once to demand / target, demand = served + refused
                       (refused = throttle events x units per request), by at least
                       the minimum step; throttles older than the last increase
                       raise only past what the capacity now serves at the target
                       (no step), and those capacity cannot fix (a hot key's
                       key-range throttles: ``unfixable``) never do
above target           raise to peak consumed / aim
provisioned > max      lower to max (quota permitting)
sustained low          every minute of the last K ticks below aim - buffer, no
                       throttle of any cause in them, no increase within the hysteresis time:
                       lower to peak / aim (min if idle), when the quota ledger
                       allows it and the saving is worth a decrease
otherwise              hold
=====================  ========================================================

The aim is the target, except with ``PolicyConfig.noise_aim`` (off in every mode: measured,
it refused more wherever load jumped from a smooth level) on a dimension set by UpdateTable
(not one under target tracking, which aims at its policy's target): there, while the settle
span has no throttle and no unknown minute, the aim rises with how smooth the traffic was,
as a plan's does with its forecast's error (`aim_for` of the span's peak over its
median, minus 1: up to ``MAX_AIM``). Raises for throttles are always sized at the target.

All results are clamped to [min, max].
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

from .bucket import Bucket, advance, would_empty
from .decreases import NO_DECREASES, DecreaseLedger, utc
from .records import direct_init


class Action(StrEnum):
    """What a decision does to a dimension's capacity (or its scalable target's minimum)."""

    HOLD = "hold"
    INCREASE = "increase"
    DECREASE = "decrease"


HOLD, INCREASE, DECREASE = Action.HOLD, Action.INCREASE, Action.DECREASE
SETTLE_QUANTILE = 2 / 3
"""The share of a settle span's minutes a decrease leaves enough capacity for: two in three."""
SMALL_RAISE = 0.1
"""The autopilot makes no raise smaller than this (of the capacity) while not throttled."""
HEADROOM = 0.1
"""The autopilot aims higher than its target where load has been predictable (a plan's forecast was
right, or the traffic was smooth): 1 / (1 + error + HEADROOM), at most MAX_AIM (`aim_for`). The
headroom a target leaves is for load that comes before a raise can; load that was predictable needs
less of it."""
MAX_AIM = 0.9


@dataclass(frozen=True)
class PolicyConfig:
    """Tuning of the policy; every field is documented below.

    :param target_utilization: consumed / provisioned to aim for (0.2 to 0.9). Default 0.7.
    :param buffer: lower target = target - buffer; consumption must stay below it to
        decrease. Default 0.2 (as stock target tracking's scale-in alarm).
    :param recent_minutes: minutes whose peak decides an increase. Default 2.
    :param scale_down_minutes: minutes that must all be low before a decrease (K ticks x
        tick length). Default 15.
    :param hysteresis: no decrease this soon after an increase. Default 30 minutes.
    :param min_step_fraction, min_step_units: the smallest raise while throttled: the larger
        of the fraction of provisioned and the units. Default 20 % and 1 unit.
    :param units_per_throttled_request: capacity units one refused request would have
        used. Default 1.
    :param min_saving_fraction: a decrease must save at least this much of provisioned.
        Default 0.2.
    :param reserve_decreases: decreases kept for the rest of the UTC day. Default 2.
    :param large_saving_fraction: a saving that may spend the reserve. Default 0.5.
    :param autopilot: raises are sized by the newest ``recent_minutes`` only: throttles
        older than that are a burst already over, and are not chased; no raise above target
        without throttles unless every one of those minutes is above it (as target
        tracking's high alarm), nor of less than ``SMALL_RAISE`` (an update in flight
        blocks the next one); only throttles within ``scale_down_minutes`` stop a decrease.
        Default False.
    :param settle_minutes: a decrease goes no lower than the load of two minutes in three
        (``SETTLE_QUANTILE``) of the last ``settle_minutes``, at the target, so load that
        comes and goes is not given back between its peaks, while a burst shorter than a
        third of the span is. 0 (the default): no such bound.
    :param noise_aim: on a dimension set by UpdateTable, aim above the target as far as the
        traffic's noise over the settle span (``settle_minutes``, else
        ``scale_down_minutes``) allows, while that span has no throttle and no unknown
        minute (`noise_aim`). Default False.
    """

    target_utilization: float = 0.7
    buffer: float = 0.2
    recent_minutes: int = 2
    scale_down_minutes: int = 15
    hysteresis: timedelta = timedelta(minutes=30)
    min_step_fraction: float = 0.2
    min_step_units: int = 1
    units_per_throttled_request: float = 1.0
    min_saving_fraction: float = 0.2
    reserve_decreases: int = 2
    large_saving_fraction: float = 0.5
    autopilot: bool = False
    settle_minutes: int = 0
    noise_aim: bool = False


@direct_init
@dataclass(frozen=True)
class DimensionState:
    """What one tick knows about one dimension.

    ``consumed`` (capacity units per second) and ``throttles`` (events per minute) are
    per complete minute, oldest first, zero-filled; ``minute_starts`` gives each minute's
    start. ``min_capacity`` and ``max_capacity`` bound the result.
    """

    provisioned: int
    consumed: Sequence[float]
    throttles: Sequence[float]
    minute_starts: Sequence[datetime]
    min_capacity: int
    max_capacity: int
    now: datetime
    ledger: DecreaseLedger = NO_DECREASES  # immutable: one shared empty ledger
    last_increase: datetime | None = None
    target_utilization: float | None = None  # overrides PolicyConfig's when set
    unknown_minutes: int = 0  # minutes of the window whose data is not known
    decreases_allowed: bool = True  # False when a call the tick shares failed
    keep: int = 0  # no decrease below this: what the forecast needs within the half hour
    reserve: int | None = None  # decreases kept for later today; None: the configured ones
    least_fall: int = 0  # the capacity the smallest fall the reserve is kept for saves
    # per minute, the throttle events more capacity could not serve (key-range, account
    # limit, on-demand maximum): never a reason to raise, still a reason not to lower.
    # Empty: none known (every throttle is taken for a provisioned-throughput one)
    unfixable: Sequence[float] = ()
    # the newest minutes of the window that CloudWatch may not have finished (the metric
    # lag's): a raise reads them, a decrease does not (a partial minute would read low)
    fresh: int = 0
    throttles_read: bool = True  # False: throttles not read this tick (never lowered)


@direct_init
@dataclass(frozen=True)
class Decision:
    """The capacity to set and why. ``free_decrease`` is where the dimension would go if
    its counter spends a decrease anyway (another dimension of the same table or GSI is
    decreasing in the same UpdateTable); None when it has no reason to go lower."""

    capacity: int
    reason: str
    action: Action
    throttles_seen: float = 0.0
    free_decrease: int | None = None


def autopilot_config(target_utilization: float = 0.7) -> PolicyConfig:
    """The autopilot's policy: raises sized by the newest minutes only (no chasing a burst
    that is over), and a decrease as soon as 4 minutes are low and 5 have passed since the
    last raise, so a burst's capacity is not paid for long after it, but never below the
    load of two minutes in three of the last half hour, so noisy load is not given back
    between its peaks (the decrease quota and the saving rules still decide whether a
    decrease is worth it). Its forecast's plan comes from `forecast`. Outside a plan
    it aims at the target (``noise_aim`` off: measured by ``benchmarks/noise_headroom.py``,
    `noise_aim` refused more wherever load jumped from a smooth level)."""
    return PolicyConfig(
        target_utilization=target_utilization,
        autopilot=True,
        hysteresis=timedelta(minutes=5),
        scale_down_minutes=4,
        settle_minutes=30,
    )


FLOAT_NOISE = 2e-6
"""Beyond this far above a whole number a value is never that number's float noise (no
rounding to 6 decimal places brings it down to it); within it, `capacity_units` rounds the
value to 6 decimal places first (7.0000001 is 7 units, 7.000001 is 8)."""


def capacity_units(value: float) -> int:
    """Whole capacity units covering ``value``, ignoring float noise (84 / 0.7 is 120)."""
    whole = math.floor(value)
    if value - whole > FLOAT_NOISE:  # beyond any noise: rounding to 6 places could not lower it
        return whole + 1
    return math.ceil(round(value, 6))  # (round is slow, and each tick sizes many raises)


def units_within(values: Sequence[float], lowest: int, highest: int) -> list[int]:
    """`capacity_units` of each of ``values``, within [``lowest``, ``highest``]: one pass
    over many (a backtest sizes hundreds at once)."""
    wholes = [
        whole + 1 if value - whole > FLOAT_NOISE else capacity_units(value)
        for value, whole in zip(values, map(math.floor, values), strict=True)
    ]
    # max(lowest, min(highest, w)), without two calls a value
    return [lowest if (x := highest if w > highest else w) < lowest else x for w in wholes]


def aim_for(error: float, target_utilization: float) -> float:
    """The target utilization to aim at when load may exceed what was foreseen by ``error``
    (relative; a plan's forecast error, or the traffic's `noise`): never below
    ``target_utilization``, higher as the error is lower, at most MAX_AIM; whole percent."""
    aim = max(target_utilization, min(MAX_AIM, 1 / (1 + error + HEADROOM)))
    return int(aim * 100) / 100


def noise(consumed: Sequence[float]) -> float:
    """The traffic's noise over ``consumed``: its peak over its median, minus 1 (0 for a
    flat load); infinite when the median is not above 0 (idle, or mostly so)."""
    ordered = sorted(consumed)
    n = len(ordered)
    if not n:
        return math.inf
    median = (ordered[(n - 1) // 2] + ordered[n // 2]) / 2
    return ordered[-1] / median - 1 if median > 0 else math.inf


def noise_aim(state: DimensionState, config: PolicyConfig, target: float) -> float:
    """The aim of a dimension the autopilot sets by UpdateTable (``config.noise_aim``):
    `aim_for` of the traffic's `noise` over the settle span, while every minute
    of that span is known, none is throttled (by any cause) and the tick's calls answered;
    else ``target``. A throttled minute's consumption is capped, so it looks smooth:
    throttles keep the target's headroom, as unknown data does."""
    span = config.settle_minutes or config.scale_down_minutes
    consumed, throttles = state.consumed, state.throttles
    if (
        not config.noise_aim
        or state.unknown_minutes
        or not state.decreases_allowed
        or len(consumed) < span
        or any(t != 0 for t in throttles[-span:])  # a NaN counts as a throttle
    ):
        return target
    return aim_for(noise(consumed[-span:]), target)


def _clamp(value: float, state: DimensionState) -> int:
    # max(min, min(max, units)) as conditionals: Python's min and max of two cost more, and
    # a tick decides every dimension (the same on a tie)
    units = capacity_units(value)
    units = units if units < state.max_capacity else state.max_capacity
    return int(units if units > state.min_capacity else state.min_capacity)


def decide(
    state: DimensionState, config: PolicyConfig = PolicyConfig(), *, tracked: bool = False
) -> Decision:
    """Decide one dimension: the first rule of `RULES` (the module docstring's table,
    in order) that decides, else hold. ``tracked``: the dimension is under target tracking,
    which aims at its own policy's target (the state's): no `noise_aim`."""
    view = _View(state, config, tracked)
    for rule in RULES:
        decision = rule(view)
        if decision is not None and decision.action == DECREASE and not state.throttles_read:
            return view.decision(view.provisioned, "no decrease: throttles not read this tick")
        if decision is not None:
            return decision
    return view.decision(view.provisioned, "within target")


class _View:
    """What every rule of `decide` reads of one dimension (read only; a plain class
    with slots, as one is made per decision)."""

    __slots__ = (
        "state",
        "config",
        "now",
        "target",
        "aim",
        "provisioned",
        "consumed",
        "throttles",
        "fixable",
        "seen",
        "since",
        "tracked",
    )

    def __init__(self, state: DimensionState, config: PolicyConfig, tracked: bool = False) -> None:
        consumed, throttles = state.consumed, state.throttles
        self.state = state
        self.config = config
        self.tracked = tracked
        self.now: datetime = utc(state.now)
        self.target: float = state.target_utilization or config.target_utilization
        # what raises above target and decreases size by: the target, or the noise's aim
        self.aim: float = (
            noise_aim(state, config, self.target)
            if config.noise_aim and not tracked
            else self.target
        )
        self.provisioned: int = state.provisioned
        # the rules only read them: a list is kept as it is, any other sequence copied
        self.consumed: list[float] = consumed if type(consumed) is list else list(consumed)
        self.throttles: list[float] = throttles if type(throttles) is list else list(throttles)
        unfixable = state.unfixable
        # the throttles more capacity would have served: those a raise is sized by
        self.fixable: list[float] = (
            _fixable(self.throttles, unfixable) if unfixable else self.throttles
        )
        self.seen: float = float(sum(self.throttles))
        self.since: datetime | None = utc(state.last_increase) if state.last_increase else None

    def decision(self, capacity: int, reason: str, free: int | None = None) -> Decision:
        provisioned = self.provisioned
        # the module's names of the actions (an enum's member read through the class costs
        # more, and a decision is made per dimension each tick)
        action = (
            INCREASE if capacity > provisioned else DECREASE if capacity < provisioned else HOLD
        )
        return Decision(capacity, reason, action, self.seen, free)


def _fixable(throttles: list[float], unfixable: Sequence[float]) -> list[float]:
    """Per minute, the throttle events capacity could fix: all but the unfixable ones (a
    minute ``unfixable`` does not reach has none)."""
    out = list(throttles)
    for i, u in enumerate(unfixable[: len(out)]):
        out[i] = max(0.0, out[i] - u) if u > 0 else out[i]
    return out


def _below_min(v: _View) -> Decision | None:
    """provisioned < min: raise to min."""
    if v.provisioned < v.state.min_capacity:
        return v.decision(v.state.min_capacity, f"below min {v.state.min_capacity}")
    return None


def _throttled(v: _View) -> Decision | None:
    """Throttled: raise at once to demand / target, by at least the minimum step; only
    throttles after the last increase count in full (what the current capacity failed to
    serve). Those before it count only as far as their demand is above what the current
    capacity serves at the target: a raise sized by served load alone (above target) is
    topped up once the throttles of its minutes arrive, and one sized by them is not
    raised again. Only throttles capacity can fix count (a hot key's do not:
    `DimensionState.unfixable`)."""
    config, state, throttles = v.config, v.state, v.fixable
    first = max(0, len(throttles) - config.recent_minutes) if config.autopilot else 0
    recent = throttles[first:]
    if not recent or max(recent) <= 0:  # none above 0 (max is one if any is)
        return None
    fresh: list[int] = []
    older: list[int] = []
    for i in range(first, len(throttles)):
        if throttles[i] > 0:
            new = v.since is None or utc(state.minute_starts[i]) >= v.since
            (fresh if new else older).append(i)
    per = config.units_per_throttled_request / 60
    before = max((v.consumed[i] + throttles[i] * per for i in older), default=0.0)
    if not fresh:
        wanted = _clamp(before / v.target, state)
        if wanted <= v.provisioned:  # served at the target now (or at the max): no raise
            return None
        events = sum(throttles[i] for i in older)
        return v.decision(
            wanted, f"throttled before the last raise: {events:g} events, demand ~{before:.1f}/s"
        )
    demand = max(max(v.consumed[i] + throttles[i] * per for i in fresh), before)
    step = max(config.min_step_units, capacity_units(v.provisioned * config.min_step_fraction))
    wanted = _clamp(max(demand / v.target, v.provisioned + step), state)
    events = sum(throttles[i] for i in fresh)
    if wanted <= v.provisioned:
        return v.decision(
            v.provisioned, f"throttled ({events:g} events) at max {state.max_capacity}"
        )
    return v.decision(wanted, f"throttled: {events:g} events, demand ~{demand:.1f}/s")


def _above_target(v: _View) -> Decision | None:
    """Above the aim: raise to peak consumed / aim. The autopilot raises only when every
    one of the recent minutes is above the aim, as target tracking's high alarm does (one
    noisy minute is no reason to buy capacity; a throttled one raises by `_throttled`),
    and makes no small raise."""
    recent = v.consumed[-v.config.recent_minutes :]
    recent_peak = max(recent) if recent else 0.0
    aim = v.aim
    if recent_peak <= v.provisioned * aim:
        return None
    if v.config.autopilot and min(recent) <= v.provisioned * aim:
        return None  # not every recent minute above the aim: no raise (the later rules
        # lower nothing while one is above it)
    over = recent_peak > v.provisioned
    if v.tracked and v.config.autopilot and over and _bucket_lasts(v, recent_peak):
        return None  # over the capacity, but the burst bucket lasts: no raise (nor a decrease)
    wanted = _clamp(recent_peak / aim, v.state)
    smallest = capacity_units(v.provisioned * (1 + SMALL_RAISE))  # 100 x 1.1 is not 110
    if v.config.autopilot and v.provisioned < wanted < smallest:
        # not throttled: a small raise is not worth the update slot it takes, in which a
        # larger one that may be coming would have to wait
        return v.decision(v.provisioned, f"above target by less than a step ({wanted})")
    if wanted > v.provisioned:
        return v.decision(wanted, f"above target: peak {recent_peak:.1f}/s > {aim:.0%}")
    return None


LOOK_SECONDS = 180
"""How far ahead the autopilot looks when it asks whether the burst bucket lasts: CloudWatch's lag
(its newest minute is about two old) and the next tick."""


def _bucket_lasts(v: _View, peak: float) -> bool:
    """Whether the burst bucket, estimated from the window's consumption against what is
    provisioned now (`core.bucket`, the fast path's rule; unknown at the window's start:
    empty), outlasts ``peak`` (the recent minutes') until a raise at the next tick would
    land. A window with an unknown minute or a throttle never does. Asked only of an
    autopilot on target tracking, over the capacity: load the bucket absorbs is noise a
    raise would pay for and prevent nothing, and target tracking scales out by its own alarm
    if it lasts. Load above the aim but within the capacity drains nothing, and is raised
    for as before (the headroom the target leaves); the autopilot alone, whose raises are
    the only ones, raises as before too."""
    if v.state.unknown_minutes or v.seen > 0 or not v.state.throttles_read:
        return False
    estimate: Bucket | None = None
    for i, used in enumerate(v.consumed):
        estimate = advance(estimate, v.provisioned, used, 60.0 * i)
    return not would_empty(estimate, peak, v.provisioned, None, LOOK_SECONDS)


def _no_evidence(v: _View) -> Decision | None:
    """Only decreases remain, and only on evidence: none while minutes are unknown or a
    call the tick shares failed (nor, in `decide`, without the throttles read)."""
    state = v.state
    if not state.unknown_minutes and state.decreases_allowed:
        return None
    why = (
        f"{state.unknown_minutes} minute(s) of the window unknown"
        if state.unknown_minutes
        else "a call the tick shares failed"
    )
    return v.decision(v.provisioned, f"no decrease: {why}")


def _above_max(v: _View) -> Decision | None:
    """provisioned > max: lower to max (quota permitting)."""
    if v.provisioned <= v.state.max_capacity:
        return None
    return _decrease(v, v.state.max_capacity, f"above max {v.state.max_capacity}", True)


def _sustained_low(v: _View) -> Decision | None:
    """Sustained low: every minute of the last K ticks below aim - buffer: lower to
    peak / aim (min if idle; never below the settle span's load nor what the forecast
    needs soon), when `_decrease` allows it. None: within target."""
    config, state, aim = v.config, v.state, v.aim
    # finished minutes only: a minute CloudWatch may still be adding to reads low
    done = v.consumed[: len(v.consumed) - state.fresh] if state.fresh else v.consumed
    window = done[-config.scale_down_minutes :]
    if len(window) < config.scale_down_minutes:
        return v.decision(v.provisioned, "not enough history to decrease")
    peak = max(window)
    if peak >= v.provisioned * (aim - config.buffer):
        return None
    if config.settle_minutes:
        span = sorted(done[-config.settle_minutes :])
        settled = span[int(SETTLE_QUANTILE * (len(span) - 1))]
        peak = settled if settled > peak else peak  # max(peak, settled)
    candidate = _clamp(peak / aim, state) if peak > 0 else state.min_capacity
    why = "idle" if peak == 0 else f"sustained below {aim - config.buffer:.0%}"
    if aim > v.target and peak > 0:
        why = f"{why}, aiming at {aim:.0%} (smooth traffic)"
    if state.keep > candidate:
        if state.keep >= v.provisioned:
            return v.decision(v.provisioned, f"no decrease: the forecast needs {state.keep} soon")
        candidate, why = state.keep, f"{why}, to {state.keep} the forecast needs soon"
    if candidate >= v.provisioned:
        return None
    return _decrease(v, candidate, why, False)


def _decrease(v: _View, candidate: int, why: str, always_worth: bool) -> Decision:
    """Lower to ``candidate``: not while throttled, nor within the hysteresis time, nor
    for a saving not worth a decrease (unless ``always_worth``), nor past the quota."""
    config, state, provisioned = v.config, v.state, v.provisioned
    blocking = sum(v.throttles[-config.scale_down_minutes :]) if config.autopilot else v.seen
    if blocking > 0:
        return v.decision(
            provisioned, f"no decrease while throttled ({blocking:g} events in window)"
        )
    if v.since is not None and v.now - v.since < config.hysteresis:
        return v.decision(
            provisioned,
            f"increased {int((v.now - v.since).total_seconds() // 60)} "
            f"min ago; no decrease before {config.hysteresis}",
        )
    saving = (provisioned - candidate) / provisioned
    if not always_worth and saving < config.min_saving_fraction:
        return v.decision(provisioned, f"saving {saving:.0%} not worth a decrease", candidate)
    allowed, why_quota = state.ledger.allows(
        v.now,
        saving,
        reserve=config.reserve_decreases if state.reserve is None else state.reserve,
        large_saving_fraction=config.large_saving_fraction,
        saving_units=provisioned - candidate,
        least_fall=state.least_fall,
    )
    if not allowed:
        return v.decision(provisioned, why_quota)
    return v.decision(candidate, f"{why}; {why_quota}", candidate)


RULES: tuple[Callable[[_View], Decision | None], ...] = (
    _below_min,
    _throttled,
    _above_target,
    _no_evidence,
    _above_max,
    _sustained_low,
)
"""The rules of the module docstring's table, tried in order; "otherwise hold" is `decide`'s own."""


def combine_counter(
    decisions: Mapping[str, Decision], provisioned: Mapping[str, int]
) -> dict[str, Decision]:
    """Read and write of one table or GSI share a decrease counter: when one of them is
    decreasing, the other's pending decrease rides along in the same UpdateTable for free."""
    if not any(d.action == DECREASE for d in decisions.values()):
        return dict(decisions)
    out = {}
    for dim, d in decisions.items():
        free = d.free_decrease
        if d.action == HOLD and free is not None and free < provisioned[dim]:
            d = replace(
                d,
                capacity=free,
                action=DECREASE,
                reason=f"{d.reason}; joins a decrease already spent",
            )
        out[dim] = d
    return out


def _calm(state: DimensionState, config: PolicyConfig, d: Decision) -> bool:
    """No throttles in the window, every minute known, the tick's calls answered and the
    hysteresis time past since the last increase: the raised minimum may come down."""
    since = utc(state.last_increase) if state.last_increase else None
    throttled = (
        sum(state.throttles[-config.scale_down_minutes :]) if config.autopilot else d.throttles_seen
    )
    return (
        throttled == 0
        and state.unknown_minutes == 0
        and state.decreases_allowed
        and state.throttles_read
        and (since is None or utc(state.now) - since >= config.hysteresis)
    )


def decide_scalable_min(
    state: DimensionState, current_min: int, config: PolicyConfig = PolicyConfig()
) -> Decision:
    """For a dimension under Application Auto Scaling: the MinCapacity to set.

    ``state.min_capacity`` is the configured (base) minimum and ``current_min`` the target's
    minimum now. An increase raises the minimum, so auto scaling performs the raise and
    knows it (the AWS spikes post, design 7); once there is no throttling in the window and the
    hysteresis time has passed, the base minimum is restored and auto scaling scales in
    by its own rules. The result is never below the base minimum.
    """
    d = decide(state, config, tracked=True)
    if d.action == INCREASE and d.capacity > current_min:
        return Decision(d.capacity, f"raise min: {d.reason}", INCREASE, d.throttles_seen)
    if state.min_capacity > current_min:  # a forecast floor above the target's minimum
        return Decision(
            state.min_capacity,
            f"raise min to floor {state.min_capacity}",
            INCREASE,
            d.throttles_seen,
        )
    # min(max(min_capacity, keep), current_min), as conditionals (see _clamp)
    lowest = state.keep if state.keep > state.min_capacity else state.min_capacity
    lowest = current_min if current_min < lowest else lowest
    if current_min > lowest and _calm(state, config, d):
        why = (
            "pressure gone: restore configured min"
            if lowest == state.min_capacity
            else f"pressure gone: min to {lowest}, what the forecast needs"
        )
        return Decision(lowest, why, DECREASE, d.throttles_seen)
    return Decision(current_min, f"min held: {d.reason}", HOLD, d.throttles_seen)
