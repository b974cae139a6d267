"""Runs in: workers (the user's own processes, through the client hook,
[`fast_path.hook`][ddb_capacity_runtime.fast_path.hook]), signals Lambda, workstation (simulator).

The fast path's one rule: how the reports of many processes (`core.surge_report`) add up
(`combine`), and when and how far that raises a dimension (`surge_level`), within the surge
cap and the hourly budget. The client hook, the signals function and the simulator all call
these, so the simulator's fast path is the deployed one. A process that lies can ask for at
most what `surge_level` allows, which the construct's limits and the surge cap bound, and
only for as long as a surge lasts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, Protocol, TypeVar

from ..core.errors import SurgeReportError as SurgeReportError
from .bucket import Drain
from .holds import Holding, level
from .names import MAX_TABLE_QUOTA
from .policy import SMALL_RAISE, capacity_units
from .surge_report import CLOCK_SKEW_SECONDS, FRESH_SECONDS, DimensionReport

SURGE_AT = 1.0
"""A surge is due when the estimated demand reaches this share of the provisioned capacity (the
burst bucket starts to drain at 1.0), or when provisioned-throughput throttles appear."""
NEAR_CAPACITY = 0.95
"""A held surge whose demand is at least this share of what it holds is raised for any step
(`surge_level`): a signal blind to refusals (the stream, whose units are estimated from its
records) may read a dimension pinned at its capacity a few percent under it."""
MIN_SEEN_SHARE = 0.1
"""The smallest share of the traffic a throttled dimension's reports are taken to make
(`surge_level`): a surge sized from them is at most 1 / this x their demand."""
SURGE_LIFETIME_MINUTES = 60
"""The longest a surge lasts from its first raise, renewals included (or the hold store's longest
hold, if shorter): throttles no capacity fixes, or a process that keeps lying, cannot hold a
dimension raised for longer. A new surge may start once it is restored."""
DEFAULT_SURGE_MINUTES = 5
"""How long a surge holds the raised capacity after the last report that asked for it."""
DEFAULT_SURGE_SCALE = 4.0
"""The default surge cap: a surge takes a dimension to at most this multiple of the capacity it had
when the surge started (its start)..."""
MIN_SURGE_ROOM = 100
"""... and may always add this many units (a dimension at 1 unit can still surge)."""
MAX_SURGE_SCALE = 100.0
"""The largest multiple a surge cap may be set to."""
BUDGET_WINDOW_SECONDS = 3600
"""The window of a dimension's surge budget: the units its surges add within one window are bounded
(`budget_left`)."""
DEFAULT_BUDGET_SURGES = 2
"""The default budget: this many times what one surge may add from the window's start."""
UNBOUNDED = "unbounded"
"""What a setting says to turn a default bound off (the surge cap, the budget)."""
TRUSTED_SOURCES = ("stream", "cloudwatch")
"""Where the demand that widens the default surge cap (`surge_room`'s ``trusted``) comes from:
the table's stream (the writes DynamoDB served, as the stream reader counts them) and
CloudWatch's consumed-capacity metrics. Both are DynamoDB's own measures: no process can forge
them. A process's report is not among them."""
TRUSTED_MINUTES = 5
"""How far back CloudWatch's consumed capacity is read for the trusted demand: its busiest minute
of the last five it shows."""


@dataclass(frozen=True)
class Rates:
    """One process's view of one dimension as the combiner keeps it, per second: the
    demand it estimates (consumed units, plus its failed requests at its average units
    per request: retried attempts are not demand twice), its throttled attempts for
    provisioned throughput, its key-range ones; ``at``: when it was sent; ``consumed``:
    the units it consumed; ``unknown``: its throttled attempts of no known cause;
    ``since``: when the seconds it tells of began, on the signals function's clock (0: not
    known, taken as ``at``)."""

    demand: float
    throttled: float
    key_range: float
    at: float
    consumed: float = 0.0
    unknown: float = 0.0
    since: float = 0.0


def rates(d: DimensionReport, seconds: float, at: float, received: float | None = None) -> Rates:
    """What one dimension of one report adds to its dimension's sum; its seconds began
    ``seconds`` before it was ``received`` on the signals function's clock (by default
    ``at``, the process's): a process's clock may be a little ahead or behind."""
    per_request = d.units / d.requests if d.requests else 1.0
    per_request = min(max(per_request, 0.5), 400.0)  # a 400 KB item's write is 400 units
    demand = (d.units + d.failed * per_request) / seconds
    return Rates(
        demand,
        d.throttles.get("provisioned", 0) / seconds,
        d.throttles.get("key_range", 0) / seconds,
        at,
        d.units / seconds,
        d.throttles.get("unknown", 0) / seconds,
        max(0.0, (at if received is None else received) - seconds),
    )


@dataclass(frozen=True)
class Combined:
    """Every fresh report of one dimension, added up: estimated demand and throttled
    attempts per second, how many processes reported, and the units they consumed per
    second."""

    demand: float = 0.0
    throttled: float = 0.0
    key_range: float = 0.0
    processes: int = 0
    consumed: float = 0.0
    unknown: float = 0.0


def combine(reports: Iterable[Rates], now: float, fresh: float = FRESH_SECONDS) -> Combined:
    """The sum of the reports sent within ``fresh`` seconds before ``now`` (one per
    process: its last)."""
    demand = throttled = key_range = consumed = unknown = 0.0
    n = 0
    for r in reports:
        if now - fresh <= r.at <= now + CLOCK_SKEW_SECONDS:
            demand += r.demand
            throttled += r.throttled
            key_range += r.key_range
            consumed += r.consumed
            unknown += r.unknown
            n += 1
    return Combined(demand, throttled, key_range, n, consumed, unknown)


def surge_level(
    combined: Combined,
    provisioned: int,
    target_utilization: float,
    max_capacity: int,
    share: float = 1.0,
    cap: int | None = None,
    held: int = 0,
    base: int | None = None,
    drain: Drain | None = None,
) -> int | None:
    """The level a dimension's surge holds, or None when none is due.

    ``combined`` is what the reporting processes saw, ``share`` the part of the traffic
    they make as configured (their demand is scaled up by 1 / ``share``). ``held`` is the
    level of the dimension's active surge (0: none), ``base`` the capacity it had before
    (by default ``provisioned``): what it falls back to when the surge ends.

    A surge is due when the estimated demand reaches `SURGE_AT` x ``base`` (the
    burst bucket is draining, or would be again without the surge), or when throttles for
    provisioned throughput, or of no known cause, appear. Key-range throttles never make
    one due, nor count towards its size. With ``drain`` (the bucket rule,
    `core.bucket`), a new surge (none ``held``) that no throttle calls for is due only
    when the bucket would empty before a raise lands: noise the bucket absorbs raises
    nothing.

    While throttled for provisioned throughput, a dimension serves about what is
    provisioned (its bucket is empty), so the reports' own consumption against it tells
    the share of the traffic that reports, whatever ``share`` says: the demand is then
    taken as at least ``provisioned`` x their demand / their consumption (a share seen
    below `MIN_SEEN_SHARE` counts as that). Throttles of no known cause make a surge
    due, but never size one so (they may be a hot key's).

    The level brings the demand to ``target_utilization``; a first surge adds at least a
    unit over ``provisioned``; it is never over ``max_capacity`` (the construct's limit)
    or ``base`` + ``cap`` (the surge cap), and never below ``held``: a due surge whose
    level is ``held`` is renewed, not raised; so is one that asks for less than a step more
    (`_held_level`)."""
    if not 0 < share <= 1:
        raise ValueError(f"share: got {share!r}; expected a number over 0, at most 1")
    base = provisioned if base is None else base
    demand = combined.demand / share
    throttled = combined.throttled > 0 or combined.unknown > 0
    if demand < SURGE_AT * base and not throttled:
        return None
    if not held and not throttled and drain is not None and not drain.due(demand, provisioned):
        return None  # the bucket lasts until a raise sent later lands
    if combined.throttled > 0 and combined.consumed > 0 and provisioned > 0:
        seen = max(MIN_SEEN_SHARE, min(1.0, combined.consumed / provisioned))
        demand = max(demand, combined.demand / seen)
    want = math.ceil(demand / target_utilization - 1e-9)
    if not held:
        want = max(want, provisioned + 1)
    if cap is not None:
        want = min(want, base + cap)
    want = min(want, max_capacity)
    if held:
        return _held_level(want, held, demand, throttled)
    return want if want > provisioned else None


def _held_level(want: int, held: int, demand: float, throttled: bool) -> int:
    """A held surge's level for ``want``: ``held`` when ``want`` is no more, or less than
    `SMALL_RAISE` more (the autopilot's own step) while nothing is throttled and the demand
    is under `NEAR_CAPACITY` of it: the update would keep the table busy for minutes, and a
    raise of its other dimension, or of a GSI, that comes meanwhile would wait for it."""
    if want <= held:
        return held
    small = want < capacity_units(held * (1 + SMALL_RAISE))
    return held if small and not throttled and demand < NEAR_CAPACITY * held else want


def surge_room(
    start: int,
    cap: int | None,
    scale: float | None,
    warm: int | None = None,
    trusted: float = 0.0,
) -> int | None:
    """The most units one surge may add over ``start`` (the capacity its dimension had
    when it started): ``cap`` when given; else ``scale`` x ``start`` less ``start``, at
    least `MIN_SURGE_ROOM`, at least up to ``warm``, the dimension's warm
    throughput when known, and at least up to ``scale`` x ``trusted``, the demand (units a
    second) that DynamoDB itself measured served; None when neither ``cap`` nor ``scale``
    is given (no cap).

    Why the scaled cap counts from the trusted demand (`TRUSTED_SOURCES`): the cap is
    there because a process's report may lie, and a lie can ask for anything. What
    DynamoDB served, as its stream records it or CloudWatch counts it, no process can
    forge: a flash crowd that the table serves at 400 units is one, whatever the surge
    started from, so a surge may reach ``scale`` x 400 while a lying report on a quiet
    table still gets ``scale`` x its start. The budget counts the same way
    (`budget_left`).

    Why the scaled cap reaches the warm throughput: a raise to it lands at once (its
    partitions already serve it: no split, no minutes of UPDATING), so a burst that needs
    it gets it in one step, instead of one capped raise now and the rest minutes later
    from the scaler's tick. It stays a bound: the warm throughput is the highest level the
    dimension was ever provisioned or pre-warmed to (the owner's own high-water mark), and
    the construct's max and the surge's lifetime still hold. An explicit ``cap`` in units
    is the owner's word and is never widened; an unknown warm throughput (None) widens
    nothing."""
    if cap is not None:
        return cap
    if scale is None:
        return None
    room = max(math.floor(scale * start) - start, MIN_SURGE_ROOM)
    if trusted > start:
        room = max(room, math.floor(scale * trusted) - start)
    return room if warm is None else max(room, warm - start)


def cap_room(
    start: int,
    since: int | None,
    cap: int | None,
    scale: float | None,
    warm: int | None = None,
    trusted: float = 0.0,
) -> int | None:
    """The most units one surge may add over ``start`` (`surge_room`; None: no cap);
    with ``since`` (the level its budget window counts from), its level also stays within
    what the cap allows over ``since``: lies repeated after each restore, while auto
    scaling has not yet scaled in, cannot climb (nor past the warm throughput, nor past
    ``scale`` x the ``trusted`` demand: a level within them is allowed from any start)."""
    room = surge_room(start, cap, scale, warm, trusted)
    if room is None or since is None or since >= start:
        return room
    again = surge_room(since, cap, scale, warm, trusted) or 0
    return max(0, min(room, since + again - start))


@dataclass(frozen=True)
class Budget:
    """A dimension's surge budget window: when it began (``start``, epoch seconds), the
    level its budget counts from (``level``) and the units its surges added (``used``)."""

    start: float
    level: int
    used: int

    def text(self) -> str:
        """As the combiner item keeps it."""
        return f"{self.start:.0f}:{self.level}:{self.used}"


def read_budget(text: object, now: float) -> Budget | None:
    """A budget window as `Budget.text` wrote it, checked (None when it is not one)."""
    parts = text.split(":") if isinstance(text, str) and len(text) <= 64 else []
    if len(parts) != 3 or not all(p.isdigit() and len(p) <= 12 for p in parts):
        return None
    start, level, used = (int(p) for p in parts)
    if start > now + CLOCK_SKEW_SECONDS or not 1 <= level <= 10 * MAX_TABLE_QUOTA:
        return None
    return Budget(float(start), level, used)


def budget_window(
    kept: Budget | None, now: float, level: int, window: float = BUDGET_WINDOW_SECONDS
) -> Budget:
    """The budget window in force at ``now`` for a surge that starts from ``level``:
    ``kept`` while it lasts; else a new one from ``now`` with nothing used, counting from
    ``level``, or from ``kept``'s level when that is lower and ``kept`` ended less than a
    window ago: windows back to back never count from a level the surges of the last one
    raised (a lie repeated every hour cannot climb)."""
    if kept is not None and now < kept.start + window:
        return kept
    if kept is not None and now < kept.start + 2 * window:
        level = min(level, kept.level)
    return Budget(float(int(now)), level, 0)


def budget_left(
    window: Budget,
    budget: int | None,
    cap: int | None,
    scale: float | None,
    warm: int | None = None,
    trusted: float = 0.0,
) -> int | None:
    """The units the surges of ``window`` may still add: ``budget`` (units a window) when
    given, else `DEFAULT_BUDGET_SURGES` x what one surge may add from the window's
    level (`surge_room`, the warm throughput ``warm`` and the ``trusted`` demand
    included: the default budget never cuts short a raise that lands at once, nor one
    that DynamoDB's own measure of the demand calls for); None: no budget (no budget
    given, and no cap)."""
    if budget is None:
        room = surge_room(window.level, cap, scale, warm, trusted)
        if room is None:
            return None
        budget = DEFAULT_BUDGET_SURGES * room
    return max(0, budget - window.used)


# The surge decision. The signals function (and the stream reader) read what a report's
# dimension needs (the combined reports and their surge mark, the table, the state store's
# item), decide here on that plain data, and only then write. A decision taken before the
# dimension's lease is taken again on what is read under it (the lease is the condition of
# every write): `first_look` says whether to take the lease at all, `plan_raise` what
# to write under it.

NO_LIMIT = 1_000_000_000
"""A bound no table reaches: the first look asks only whether a surge is due at all."""


class HoldLike(Holding, Protocol):
    """A hold as the surge decision reads it: a `core.holds.Holding` (its units over its
    baseline) that ends (the state store's holds are such)."""

    @property
    def expires(self) -> datetime: ...


HoldT = TypeVar("HoldT", bound=HoldLike)


class MarkLike(Protocol):
    """What a combiner item remembers of its dimension's surge (`aws.combiner.SurgeMark`)."""

    @property
    def started(self) -> float | None: ...
    @property
    def aim(self) -> float | None: ...
    @property
    def max_capacity(self) -> int | None: ...
    @property
    def budget(self) -> Budget | None: ...


class HoldBounds(Protocol):
    """The state store's bounds on holds (`aws.store.HoldLimits`)."""

    @property
    def max_units(self) -> int: ...
    @property
    def max_total_units(self) -> int: ...
    @property
    def max_hold(self) -> timedelta: ...


@dataclass(frozen=True)
class Held:
    """A hold as plain data: ``units`` over ``baseline``, until ``expires``."""

    units: int
    baseline: int
    expires: datetime


@dataclass(frozen=True)
class SurgeBounds:
    """How far a surge may go: ``share`` is the part of the traffic the reporting
    processes make (0 to 1), ``surge_minutes`` how long a surge holds after the last
    report that asked for it. The surge cap: ``cap`` units over the capacity its dimension
    had when it started; without one, ``scale`` x that capacity (`surge_room`);
    neither: no cap. ``budget``: the most units the surges of one dimension add in a
    window of `BUDGET_WINDOW_SECONDS` (None: the default, `budget_left`;
    `UNBOUNDED`: no budget)."""

    share: float = 1.0
    surge_minutes: int = DEFAULT_SURGE_MINUTES
    cap: int | None = None
    scale: float | None = DEFAULT_SURGE_SCALE
    budget: int | str | None = None

    def room(
        self,
        start: int,
        since: int | None = None,
        warm: int | None = None,
        trusted: float = 0.0,
    ) -> int | None:
        """The most units one surge may add over ``start`` (None: no cap), within what
        the cap allows over ``since`` (`cap_room`); the default cap reaches the
        dimension's warm throughput ``warm`` when known, and ``scale`` x the ``trusted``
        demand."""
        scale = None if self.cap is not None else self.scale
        return cap_room(start, since, self.cap, scale, warm, trusted)

    def budget_left(
        self, window: Budget, warm: int | None = None, trusted: float = 0.0
    ) -> int | None:
        """The units ``window``'s surges may still add (None: no budget); the default
        budget counts the warm throughput ``warm``, and the ``trusted`` demand's room, as
        one surge's room."""
        if self.budget == UNBOUNDED:
            return None
        budget = self.budget if isinstance(self.budget, int) else None
        scale = None if self.cap is not None else self.scale
        return budget_left(window, budget, self.cap, scale, warm, trusted)


@dataclass(frozen=True)
class Live:
    """A dimension as read: its provisioned units, the target utilization (``aim``) and
    max its surge is sized with, its warm throughput (None: unknown) and its scalable
    target's max (None: no target); ``drain``, the bucket rule's view of it (None: a
    surge is due as soon as the demand reaches the capacity), and ``trusted``, the demand
    DynamoDB itself measured served, in units a second (`TRUSTED_SOURCES`; 0: none)."""

    provisioned: int
    aim: float = 1.0
    max_capacity: int = NO_LIMIT
    warm: int | None = None
    target_max: int | None = None
    drain: Drain | None = None
    trusted: float = 0.0


@dataclass(frozen=True)
class Standing(Generic[HoldT]):
    """Where a dimension's surge stands: its hold as recorded (active, or expired but not
    yet restored while the dimension stays raised over its baseline; None: no surge), the
    baseline the rule counts from, the level held (0: no surge) and the other active
    holds."""

    surge: HoldT | None
    baseline: int
    held: int
    others: tuple[HoldT, ...]

    def same(self, other: Standing[Any]) -> bool:
        """Whether ``other`` holds the same level from the same base."""
        mine = (self.baseline, self.held, self.surge is None)
        return mine == (other.baseline, other.held, other.surge is None)


def standing(
    surge: HoldT | None,
    others: Iterable[HoldT],
    set_to: int | None,
    provisioned: int,
    now: datetime,
) -> Standing[HoldT]:
    """Where the surge stands at ``now``: ``surge`` is its hold as recorded (None: none),
    ``others`` the dimension's other holds, ``set_to`` the minimum the library set (None:
    none), ``provisioned`` the dimension's units."""
    active = tuple(h for h in others if now < h.expires)
    current = max(provisioned, set_to or 0)
    if surge is not None and now >= surge.expires and current <= surge.baseline:
        surge = None  # expired, and its raise is gone: a new surge starts from here
    if surge is None:
        return Standing(None, min(provisioned, MAX_TABLE_QUOTA), 0, active)
    return Standing(surge, surge.baseline, level([*active, surge]), active)


def since_raise(
    reports: Iterable[Rates], raised: float | None, now: float, increased: float | None = None
) -> Combined:
    """The sum of the fresh ``reports``, their throttles counted only when sent after
    the surge's last raise ``raised`` and telling of seconds all after the capacity's
    last increase ``increased`` (None: none; the others describe the capacity before
    it, which a raise above the warm throughput keeps for minutes after it is sent)."""
    kept = [r if _after(r, raised, increased) else _no_throttles(r) for r in reports]
    return combine(kept, now)


def _after(r: Rates, raised: float | None, increased: float | None) -> bool:
    """Whether ``r``'s throttles saw the capacity after ``raised`` and ``increased``."""
    began = r.since if r.since > 0 else r.at
    return (raised is None or r.at >= raised) and (increased is None or began >= increased)


def _no_throttles(r: Rates) -> Rates:
    return Rates(r.demand, 0.0, r.key_range, r.at, r.consumed, 0.0, r.since)


def surge_lifetime(max_hold: timedelta) -> timedelta:
    """The longest a surge lasts: `SURGE_LIFETIME_MINUTES`, within the longest hold."""
    return min(timedelta(minutes=SURGE_LIFETIME_MINUTES), max_hold)


def surge_expiry(now: datetime, started: float, minutes: int, max_hold: timedelta) -> datetime:
    """A surge's expiry from ``now``: ``minutes`` on, within the longest hold
    ``max_hold`` and the surge's lifetime from ``started`` (epoch seconds)."""
    surge_for = min(timedelta(minutes=minutes), max_hold)
    last = datetime.fromtimestamp(started, UTC) + surge_lifetime(max_hold)
    return datetime.fromtimestamp(int(min(now + surge_for, last).timestamp()), UTC)


@dataclass(frozen=True)
class Look:
    """The first look at a due report: ``none`` (no surge due), ``limited`` (one is, but the
    surge cap leaves it no room: ``reason``), ``ended`` (the surge has lasted its longest:
    ``reason``), ``renew`` (the surge holds what is due: its expiry pushed) or ``raise``
    (the rule, on the live table under the lease)."""

    status: str
    reason: str = ""


def first_look(
    combined: Combined,
    live: Live,
    now: float,
    stands: Standing[Any],
    mark: MarkLike,
    bounds: SurgeBounds,
    lifetime: timedelta,
) -> Look:
    """Whether ``combined`` makes a surge due on the dimension ``live`` (its target and
    limits not read yet: whatever they are) as it ``stands`` at ``now``, and if so what
    the lease is taken for."""
    since = budget_window(mark.budget, now, stands.baseline).level
    room = bounds.room(stands.baseline, since, live.warm, live.trusted)
    due = surge_level(
        combined,
        live.provisioned,
        1.0,
        NO_LIMIT,
        bounds.share,
        room,
        held=stands.held,
        base=stands.baseline,
        drain=live.drain,
    )
    if due is None:
        return _not_looked(combined, live, stands, bounds, room, since)
    if stands.surge is not None and mark.started is not None:
        if now >= mark.started + lifetime.total_seconds():
            minutes = int(lifetime.total_seconds() // 60)
            return Look(
                "ended",
                f"the surge has lasted its longest ({minutes} minutes): it ends at its "
                f"expiry, and a new one may start once it is restored",
            )
    renewal = (
        stands.surge is not None
        and mark.aim is not None
        and mark.max_capacity is not None
        and live.provisioned >= stands.held
        and surge_level(
            combined,
            live.provisioned,
            mark.aim,
            mark.max_capacity,
            bounds.share,
            room,
            held=stands.held,
            base=stands.baseline,
        )
        == stands.held
    )
    return Look("renew" if renewal else "raise")


@dataclass(frozen=True)
class SurgePlan:
    """What to write for a due surge, under the dimension's lease. ``status``: ``none``
    (no surge due after all), ``limited`` (the budget refuses a new one), ``refused`` (the
    limits leave it no room: ``reason``) or ``raise``: the surge hold at ``units`` until
    ``expires`` (its baseline the standing's), ``added`` units over what it held, to spend
    from the budget window ``spend`` (None: nothing to spend), ``started`` (``fresh``: a
    new surge, its start to remember), the level ``before`` and ``applied``;
    ``over_budget``: cut short, or refused, by the budget."""

    status: str
    want: int = 0
    units: int = 0
    expires: datetime | None = None
    added: int = 0
    spend: Budget | None = None
    started: float = 0.0
    fresh: bool = False
    before: int = 0
    applied: int = 0
    over_budget: bool = False
    reason: str = ""


def plan_raise(
    combined: Combined,
    live: Live,
    now: float,
    stands: Standing[Any],
    mark: MarkLike,
    bounds: SurgeBounds,
    limits: HoldBounds,
    base: int,
) -> SurgePlan:
    """The surge the rule asks of the dimension ``live`` (its target and limits read)
    as it ``stands`` at ``now``, over its configured ``base`` (the surge cap counts from it,
    or from the budget window's level when lower: a dimension that surges left high, auto
    scaling not yet scaled in, cannot climb from there; a surge the cap leaves no room is
    ``limited``, counted over budget): made or renewed so that the
    level of every active hold reaches the rule's level; its units never fewer than the
    surge's, clamped to the surge cap, the budget left, the hold store's ``limits`` and the
    target's max; its expiry ``surge_minutes`` on (never earlier than it was, never past
    its lifetime). Never lowers anything."""
    window = budget_window(mark.budget, now, stands.baseline)
    since = min(window.level, base) if base >= 1 else window.level
    room = bounds.room(stands.baseline, since, live.warm, live.trusted)
    want = _rule(combined, live, stands, bounds, room)
    if want is None:
        return _not_due(combined, live, stands, bounds, room, since)
    left = bounds.budget_left(window, live.warm, live.trusted)
    refused = left == 0 and want > stands.held
    if refused and stands.surge is None:
        return SurgePlan("limited", want, over_budget=True, reason=budget_spent(window))
    started = mark.started if stands.surge is not None and mark.started is not None else now
    units = _surge_units(live, stands, want, room, left, limits)
    if units < 1:
        return SurgePlan("refused", want, over_budget=refused, reason=_no_room(want, stands))
    at = datetime.fromtimestamp(now, UTC)
    expires = surge_expiry(at, started, bounds.surge_minutes, limits.max_hold)
    if stands.surge is not None:  # never earlier than it was
        expires = max(expires, stands.surge.expires)
    added = units - (stands.surge.units if stands.surge is not None else 0)
    new = Held(units, stands.baseline, expires)
    return SurgePlan(
        "raise",
        want,
        units,
        expires,
        added,
        replace(window, used=window.used + added) if added > 0 else None,
        started,
        stands.surge is None or mark.started is None,
        max(base, stands.held or level(stands.others)),
        max(base, level([h for h in (*stands.others, new) if at < h.expires])),
        refused or (added > 0 and left is not None and added >= left),
    )


def _surge_units(
    live: Live,
    stands: Standing[Any],
    want: int,
    cap: int | None,
    left: int | None,
    limits: HoldBounds,
) -> int:
    """The units of a surge hold that bring the level of every active hold to ``want``,
    never fewer than the surge holds already, within the bounds."""
    held: int = stands.surge.units if stands.surge is not None else 0
    others: int = sum(h.units for h in stands.others)
    floor: int = min([stands.baseline, *(h.baseline for h in stands.others)])
    units = max(want - floor - others, held)
    room = [limits.max_units, limits.max_total_units - others]
    if cap is not None:  # a cap that moved (the trusted demand fell) never cuts the hold
        room.append(max(cap, held))
    if left is not None:  # the budget: what the surge holds already, and what is left
        room.append(held + left)
    if live.target_max is not None:  # the level of every hold stays within the target's max
        room.append(live.target_max - floor - others)
    return min(units, *room)


def _not_looked(
    combined: Combined,
    live: Live,
    stands: Standing[Any],
    bounds: SurgeBounds,
    room: int | None,
    since: int,
) -> Look:
    """No lease to take: ``limited`` when the surge cap alone leaves a new surge the rule
    asks for no room (the signals function counts it over budget), else ``none``."""
    plan = _not_due(
        combined, replace(live, aim=1.0, max_capacity=NO_LIMIT), stands, bounds, room, since
    )
    return Look(plan.status, plan.reason)


def _rule(
    combined: Combined, live: Live, stands: Standing[Any], bounds: SurgeBounds, cap: int | None
) -> int | None:
    """`surge_level` on the dimension ``live`` as it ``stands``, within ``cap``."""
    return surge_level(
        combined,
        live.provisioned,
        live.aim,
        live.max_capacity,
        bounds.share,
        cap,
        held=stands.held,
        base=stands.baseline,
        drain=live.drain,
    )


def _not_due(
    combined: Combined,
    live: Live,
    stands: Standing[Any],
    bounds: SurgeBounds,
    room: int | None,
    since: int,
) -> SurgePlan:
    """No raise: ``limited`` (counted over budget) when the surge cap alone leaves a new
    surge the rule asks for no room; ``refused`` when the dimension's max does (a due surge
    clamped to nothing: counted as a surge not applied, never passed over); else ``none``."""
    if room == 0 and stands.surge is None and _rule(combined, live, stands, bounds, None):
        return SurgePlan("limited", over_budget=True, reason=_capped(since, stands))
    if live.max_capacity < NO_LIMIT:
        want = _rule(combined, replace(live, max_capacity=NO_LIMIT), stands, bounds, room)
        if want is not None:
            return SurgePlan("refused", want, reason=_at_max(want, live))
    return SurgePlan("none")


def _at_max(want: int, live: Live) -> str:
    """Why the dimension's max leaves a due surge no room."""
    return (
        f"the dimension's max ({live.max_capacity:,}: its scalable target's, or the table "
        f"quota without one) leaves no room for a surge to {want:,} over the "
        f"{live.provisioned:,} units provisioned"
    )


def _capped(since: int, stands: Standing[Any]) -> str:
    """Why the surge cap leaves a new surge no room."""
    return (
        f"the surge cap counts from the dimension's configured base ({since:,}): it is at "
        f"{stands.baseline:,} already, as far as a surge may take it without DynamoDB's own "
        "measure of a larger demand"
    )


def _no_room(want: int, stands: Standing[Any]) -> str:
    return (
        f"the hold store's limits or the scalable target's max leave no room for a surge "
        f"to {want:,} over {stands.baseline:,}"
    )


def budget_spent(window: Budget) -> str:
    """Why the budget ``window`` refuses a new surge."""
    return (
        f"the dimension's surge budget is spent: {window.used:,} units added since "
        f"{datetime.fromtimestamp(window.start, UTC).isoformat()}, counting from "
        f"{window.level:,}; a new window begins an hour after that"
    )


def renewed_until(
    expires: datetime, now: datetime, started: float, minutes: int, max_hold: timedelta
) -> datetime:
    """A renewed surge's expiry: pushed ``minutes`` on from ``now`` (`surge_expiry`),
    never earlier than ``expires``, its expiry so far."""
    return max(expires, surge_expiry(now, started, minutes, max_hold))
