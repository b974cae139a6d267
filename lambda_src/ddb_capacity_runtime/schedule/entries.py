"""Runs in: CDK app (synth time), workstation (simulator).

Scheduled scaling: Application Auto Scaling expressions, entries, windows, and the
timeline they make, checked at build time and previewed.

Expressions are Application Auto Scaling's: ``cron(minutes hours day-of-month month
day-of-week year)`` with ``?`` in day-of-month or day-of-week (day-of-week 1-7 = SUN-SAT),
``at(yyyy-mm-ddThh:mm:ss)`` and ``rate(N minute[s]|hour[s]|day[s])``. Cron occurrences are
computed by cronsim, in the entry's IANA time zone.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from ..core.decreases import DecreaseLedger
from ..core.errors import CapacityConfigError, shown
from ..core.errors import ScheduleError as ScheduleError
from ..core.names import MAX_SCHEDULED_ACTIONS
from ..core.validators import is_whole
from .expressions import YEARS, Expression, parse, zone, zone_name


@dataclass(frozen=True, kw_only=True)
class ScheduleEntry:
    """One scheduled action on one dimension: at ``schedule``, set min and/or max.

    :param name: unique per scalable target (table or GSI, read or write).
    :param schedule: ``cron(...)``, ``at(...)`` or ``rate(...)`` (module docstring), as a
        string, from [`cron`][ddb_capacity_runtime.schedule.expressions.cron] fields, or an
        ``aws_applicationautoscaling.Schedule``.
    :param min_capacity, max_capacity: at least one. A max may go above the range the
        table was configured with (a seasonal ceiling).
    :param time_zone: IANA name, or a ``cdk.TimeZone``. Default: ``"UTC"``.
    :param start_time, end_time: when the entry is in force. Default: always.
    """

    name: str
    schedule: str
    min_capacity: int | None = None
    max_capacity: int | None = None
    time_zone: str = "UTC"
    start_time: datetime | None = None
    end_time: datetime | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "time_zone", zone_name(self.time_zone))


@dataclass(frozen=True)
class PlacedEntry:
    """An entry placed on a dimension, parsed; ``window`` names the window it belongs to."""

    entry: ScheduleEntry
    index: str | None
    dimension: str
    expression: Expression
    tz: ZoneInfo
    window: str | None = None

    def occurrences(self, start: datetime, end: datetime) -> Iterator[datetime]:
        begin = max(start, self.entry.start_time) if self.entry.start_time else start
        stop = min(end, self.entry.end_time) if self.entry.end_time else end
        if begin < stop:
            yield from self.expression.occurrences(self.tz, begin, stop, self.entry.start_time)


@dataclass(frozen=True)
class Event:
    """One firing, with the effective range of its dimension after it."""

    when: datetime
    placed: PlacedEntry
    min_capacity: int
    max_capacity: int


@dataclass
class Timeline:
    """Every firing of a table's schedule over a horizon, replayed in order."""

    events: list[Event] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def replay(
    placed: Sequence[PlacedEntry],
    ranges: dict[tuple[str | None, str], tuple[int, int]],
    start: datetime,
    end: datetime,
) -> Timeline:
    """Apply every firing in time order to each dimension's (min, max), starting from the
    configured ranges; record the effective range after each and every contradiction."""
    firings = sorted(
        (
            (when.astimezone(UTC), i, p)
            for i, p in enumerate(placed)
            for when in p.occurrences(start, end)
        ),
        key=lambda f: (f[0], f[1]),
    )
    state = dict(ranges)
    timeline = Timeline()
    seen: dict[tuple[datetime, str | None, str], PlacedEntry] = {}
    reported: set[tuple[str, str | None, str, str]] = set()

    def error(p: PlacedEntry, kind: str, message: str) -> None:
        """Each contradiction once, at its first firing (it recurs with the schedule)."""
        if (p.entry.name, p.index, p.dimension, kind) not in reported:
            reported.add((p.entry.name, p.index, p.dimension, kind))
            timeline.errors.append(message)

    for when, _, p in firings:
        key = (p.index, p.dimension)
        mn, mx = state[key]
        other = seen.get((when, *key))
        if other is not None and (other.entry.min_capacity, other.entry.max_capacity) != (
            p.entry.min_capacity,
            p.entry.max_capacity,
        ):
            error(
                p,
                "same-time",
                f"{_label(p)}: {other.entry.name!r} and {p.entry.name!r} both fire at "
                f"{when:%Y-%m-%d %H:%M} UTC with different capacities; the order between them "
                f"is not defined",
            )
        seen[(when, *key)] = p
        mn = p.entry.min_capacity if p.entry.min_capacity is not None else mn
        mx = p.entry.max_capacity if p.entry.max_capacity is not None else mx
        state[key] = (mn, mx)
        if mn > mx:
            error(
                p,
                "min-above-max",
                f"{_label(p)}: after {p.entry.name!r} at {when:%Y-%m-%d %H:%M} UTC, min ({mn}) "
                f"would be above max ({mx})",
            )
        timeline.events.append(Event(when, p, mn, mx))
    return timeline


def _label(p: PlacedEntry) -> str:
    return f"{'table' if p.index is None else 'index ' + repr(p.index)} {p.dimension}"


def decrease_warnings(
    timeline: Timeline, ranges: dict[tuple[str | None, str], tuple[int, int]]
) -> list[str]:
    """Where lowering the range would need more decreases than DynamoDB allows.

    Every firing that lowers a dimension's minimum (or its maximum) lets auto scaling
    decrease capacity, which spends a decrease of that table's or GSI's counter; this
    replays them through the same quota ledger the scaler uses."""
    ledgers: dict[str | None, DecreaseLedger] = {}
    previous = dict(ranges)
    warnings: dict[tuple[str, str | None, str], str] = {}
    for event in timeline.events:
        key = (event.placed.index, event.placed.dimension)
        was_min, was_max = previous[key]
        previous[key] = (event.min_capacity, event.max_capacity)
        if event.min_capacity >= was_min and event.max_capacity >= was_max:
            continue
        ledger = ledgers.get(event.placed.index, DecreaseLedger())
        if not ledger.can_decrease(event.when):
            p = event.placed
            warnings.setdefault(  # once per entry: it recurs with the schedule
                (p.entry.name, p.index, p.dimension),
                f"{_label(p)}: {p.entry.name!r} lowers capacity more often than the decrease "
                f"quota allows (4, then 1 an hour, 27 a UTC day); some decreases would wait",
            )
            continue
        ledgers[event.placed.index] = ledger.spend(event.when)
    return list(warnings.values())


def _check_fires(placed: PlacedEntry, now: datetime, where: str) -> str | None:
    """Raise [`ScheduleError`][] if ``placed`` never fires at all (from its start_time,
    before its end_time); a warning (None: none) if it fired once but has no firing left
    from ``now`` on, by the synth's clock: its scheduled action would deploy and never run.
    An app that synthesized yesterday still does today; the warning says to remove it."""
    entry, expression = placed.entry, placed.expression
    origin = entry.start_time or datetime(YEARS[0], 1, 1, tzinfo=UTC)
    why = _no_firing(placed, origin, "from its start_time on" if entry.start_time else "")
    if why is not None:
        raise ScheduleError(
            f"{where}: schedule {expression.text!r} never fires: {why}; give a time that "
            f"comes, or remove the entry"
        )
    start = max(now, entry.start_time) if entry.start_time else now
    why = _no_firing(placed, start, "from now on")
    if why is None:
        return None
    return (
        f"{where}: schedule {expression.text!r} has no firing left: {why} (now is "
        f"{now.astimezone(UTC):%Y-%m-%dT%H:%M:%S} UTC by the clock of the machine running the "
        f"synth); its scheduled action is deployed and never runs: remove the entry"
    )


def _no_firing(placed: PlacedEntry, start: datetime, since: str) -> str | None:
    """Why ``placed`` has no firing from ``start`` (``since`` says what it is) on before
    its end_time; None if it has."""
    entry, expression = placed.entry, placed.expression
    first = expression.first_from(placed.tz, start)
    if first is not None and (entry.end_time is None or first < entry.end_time):
        return None
    if first is not None:
        return (
            f"its end_time ({entry.end_time.isoformat() if entry.end_time else ''}) comes "
            f"before its first firing ({first.isoformat()})"
        )
    if since.startswith("from its start_time"):
        return f"it has no firing from its start_time ({start.isoformat()}) on"
    if expression.at is not None:
        return f"{expression.text} in {entry.time_zone} is in the past"
    return f"its year field holds no firing {since}".rstrip()


WEEKDAYS = ("MON", "TUE", "WED", "THU", "FRI")
"""Monday to Friday: the ``week_days`` of a capacity window by default."""
EVERY_DAY = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
"""Every day of the week, as the ``week_days`` of a capacity window."""
HHMM = re.compile(r"([01]\d|2[0-3]):([0-5]\d)")
NAME_CHARS = r"[\w.#-]"
"""What a schedule's (and a window's) name is made of: Application Auto Scaling refuses ':',
'/' and '|' in a scheduled action's name."""
MAX_NAME = 200
"""The longest schedule name; a window's two actions add `-raise` and `-restore` to its own."""
MAX_WINDOW_NAME = MAX_NAME - len("-restore")
NAME_RULE = "(Application Auto Scaling refuses ':', '/' and '|' in a scheduled action's name)"
HORIZON = timedelta(days=28)


@dataclass(frozen=True)
class CapacityWindow:
    """ "Be ready for ``capacity`` units from ``start`` for ``duration`` on ``week_days``":
    the minimum is raised ``lead`` before the start and restored at the end; neither sets
    it below what another window active at that moment needs."""

    name: str
    index: str | None
    dimension: str
    capacity: int
    start: str
    duration: timedelta
    lead: timedelta
    week_days: tuple[str, ...]
    time_zone: str

    @property
    def raise_schedule(self) -> str:
        return weekly_cron(self.start, -self.lead, self.week_days)

    @property
    def restore_schedule(self) -> str:
        return weekly_cron(self.start, self.duration, self.week_days)


def weekly_cron(start: str, offset: timedelta, week_days: Sequence[str]) -> str:
    """The cron expression of ``offset`` from ``start`` (HH:MM) on each of ``week_days``,
    in the window's own time zone: an offset past midnight moves the days with it."""
    hh, mm = (int(x) for x in start.split(":"))
    at = timedelta(hours=hh, minutes=mm) + offset
    shift = at.days  # whole days before (negative) or after the start day
    minute_of_day = int(at.total_seconds() // 60) % 1440
    days = ",".join(EVERY_DAY[(EVERY_DAY.index(d) + shift) % 7] for d in week_days)
    return f"cron({minute_of_day % 60} {minute_of_day // 60} ? * {days} *)"


def check_week(
    label: str,
    start: object,
    duration: timedelta,
    week_days: Sequence[str],
    words: tuple[str, str, str] = ("lead + duration", "raise", "restore"),
) -> None:
    """A weekly window's start (HH:MM), its days, and its length (``duration``, a capacity
    window's lead included) shorter than the gap between two of its starts; ``words`` name
    its length, its start and its end in the message."""
    if not isinstance(start, str) or not HHMM.fullmatch(start):
        raise ScheduleError(f"{label}: start must be HH:MM (24-hour); got {start!r}")
    bad = [d for d in week_days if d not in EVERY_DAY]
    if not week_days or bad:
        raise ScheduleError(
            f"{label}: week_days must be names from {', '.join(EVERY_DAY)}; got {list(week_days)!r}"
        )
    days = sorted({EVERY_DAY.index(d) for d in week_days})
    gaps = [((days[(i + 1) % len(days)] - d) % 7 or 7, d) for i, d in enumerate(days)]
    gap, first = min(gaps)
    if duration >= timedelta(days=gap):  # a tie: in no set order
        second = EVERY_DAY[(first + gap) % 7]
        length, begins, ends = words
        raise ScheduleError(
            f"{label}: {length} ({duration}) is not shorter "
            f"than the {timedelta(days=gap)} between two of its {begins}s ({EVERY_DAY[first]} "
            f"and {second} {start}); the next {begins} would come at or before the "
            f"{ends}. Shorten it, or give fewer week_days"
        )


WindowKey = tuple[str | None, str, str]


def _key(window: CapacityWindow) -> WindowKey:
    """Windows are told apart by where they apply and their name: one name may serve
    several dimensions."""
    return (window.index, window.dimension, window.name)


def _is_whole_in(value: object, most: int) -> bool:
    """``value`` is an int (not a bool) from 1 to ``most``."""
    return is_whole(value, 1, most)


def _check_times(where: str, entry: ScheduleEntry) -> None:
    """``entry``'s start and end, when set, are timezone-aware, the start first."""
    for name in ("start_time", "end_time"):
        value = getattr(entry, name)
        if value is not None and (not isinstance(value, datetime) or value.tzinfo is None):
            raise ScheduleError(f"{where}: {name} must be a timezone-aware datetime; got {value!r}")
    if entry.start_time and entry.end_time and entry.start_time >= entry.end_time:
        raise ScheduleError(
            f"{where}: start_time ({entry.start_time.isoformat()}) must be "
            f"before end_time ({entry.end_time.isoformat()})"
        )


class TableSchedule:
    """The scheduled actions of one ProvisionedTable, rendered onto its scalable targets."""

    def __init__(
        self,
        where: str,
        ranges: dict[tuple[str | None, str], tuple[int, int]],
        quota: int,
        *,
        now: datetime | None = None,
    ) -> None:
        """``now``: the moment the schedule is deployed from (a synth's real clock): an entry
        that never fires at all is refused, one with no firing left from then on is a
        warning of [`check`][]. None (a simulation of the past): neither is checked."""
        self._where = where
        self._ranges = ranges
        self._quota = quota
        self._now = now
        # the entries (by id) with no firing left by the synth's clock, and the warning
        self._stale: dict[int, str] = {}
        self._entries: list[PlacedEntry] = []
        self._windows: list[CapacityWindow] = []

    # ---------------------------------------------------------------- adding

    def add_entry(self, entry: ScheduleEntry, index: str | None, dimension: str) -> PlacedEntry:
        placed, stale = self.check_entry(entry, index, dimension)
        if stale:
            self._stale[id(placed)] = stale
        self._entries.append(placed)
        return placed

    def check_entry(
        self, entry: ScheduleEntry, index: str | None, dimension: str
    ) -> tuple[PlacedEntry, str | None]:
        """Every check of `add_entry`, adding nothing: the entry as it would be placed, and
        the warning it would bring (no firing left), if any. Raises ScheduleError as
        `add_entry` does."""
        label = f"{self._where} {'table' if index is None else 'index ' + repr(index)} {dimension}"
        where = f"{label} schedule {getattr(entry, 'name', entry)!r}"
        self._check_name(label, where, entry, index, dimension)
        self._check_range(label, index, dimension)
        self._check_capacities(where, entry)
        _check_times(where, entry)
        placed = PlacedEntry(
            entry, index, dimension, parse(entry.schedule, where), zone(entry.time_zone, where)
        )
        stale = _check_fires(placed, self._now, where) if self._now is not None else None
        return placed, stale

    def _check_name(
        self, label: str, where: str, entry: object, index: str | None, dimension: str
    ) -> None:
        """``entry`` is a ScheduleEntry whose name is well formed and new on its dimension."""
        if not isinstance(entry, ScheduleEntry):
            raise ScheduleError(f"{label}: entry must be a ScheduleEntry; got {entry!r}")
        if not isinstance(entry.name, str) or not re.fullmatch(
            f"{NAME_CHARS}{{1,{MAX_NAME}}}", entry.name
        ):
            raise ScheduleError(
                f"{label}: schedule name must be 1 to {MAX_NAME} letters, digits or _ . # - "
                f"{NAME_RULE}; got {entry.name!r}"
            )
        if entry.name in self._names(index, dimension):
            raise ScheduleError(
                f"{where}: the name is already used on this dimension; names "
                f"must be unique per scalable target"
            )

    def _check_range(self, label: str, index: str | None, dimension: str) -> tuple[int, int] | None:
        """The dimension's configured minimum and maximum (None: not scheduled here), whole
        numbers: a schedule is replayed against them as the app is built, so one known at
        deploy time only (a CfnParameter's value, which reaches here as the number CDK
        encodes it as) cannot be, and a restore to it would be a restore to nothing."""
        known = self._ranges.get((index, dimension))
        if known is None:
            return None
        for name, value in zip(("min_capacity", "max_capacity"), known, strict=True):
            if not is_whole(value, 1):
                raise ScheduleError(
                    f"{label}: the dimension's configured {name} must be a whole number known "
                    f"when the app is built for a schedule on it; got {value!r}, a value "
                    f"known at deploy time only (a token): give a number, or no schedule on "
                    f"this dimension"
                )
        return known

    def _check_capacities(self, where: str, entry: ScheduleEntry) -> None:
        """``entry`` sets a min, a max or both, each whole from 1 to the quota, min <= max."""
        if entry.min_capacity is None and entry.max_capacity is None:
            raise ScheduleError(f"{where}: set min_capacity, max_capacity or both; got neither")
        for name in ("min_capacity", "max_capacity"):
            value = getattr(entry, name)
            if value is not None and not _is_whole_in(value, self._quota):
                raise ScheduleError(
                    f"{where}: {name} must be a whole number from 1 to {self._quota}; got {value!r}"
                )
        if (
            entry.min_capacity is not None
            and entry.max_capacity is not None
            and entry.min_capacity > entry.max_capacity
        ):
            raise ScheduleError(
                f"{where}: min_capacity ({entry.min_capacity}) must be lower "
                f"than or equal to max_capacity ({entry.max_capacity})"
            )

    def add_window(self, window: CapacityWindow) -> None:
        self.check_window(window)
        self._windows.append(window)

    def check_window(self, window: CapacityWindow) -> None:
        """Every check of `add_window`, adding nothing; raises ScheduleError as it does."""
        scope = "table" if window.index is None else f"index {window.index!r}"
        label = f"{self._where} {scope} {window.dimension} window {window.name!r}"
        _check_window_name(label, window.name)
        if not isinstance(window.start, str) or not HHMM.fullmatch(window.start):
            raise ScheduleError(f"{label}: start must be HH:MM (24-hour); got {window.start!r}")
        if not timedelta(minutes=1) <= window.duration <= timedelta(days=6):
            raise ScheduleError(
                f"{label}: duration must be from 1 minute to 6 days; got {window.duration}"
            )
        if not timedelta(0) <= window.lead <= timedelta(days=1):
            raise ScheduleError(f"{label}: lead must be from 0 to 24 hours; got {window.lead}")
        check_week(label, window.start, window.duration + window.lead, window.week_days)
        known = self._check_range(label, window.index, window.dimension)
        cap = window.capacity
        if not is_whole(cap, 1, self._quota):
            raise ScheduleError(
                f"{label}: capacity must be a whole number from 1 to {self._quota}; got {cap!r}"
            )
        if known is not None and cap <= known[0]:
            raise ScheduleError(
                f"{label}: capacity: got {cap}; a window raises the minimum, which is "
                f"{known[0]} already: give more than {known[0]}, or lower the configured "
                "minimum"
            )
        zone(window.time_zone, label)
        taken = self._names(window.index, window.dimension)
        for suffix in ("raise", "restore"):
            if f"{window.name}-{suffix}" in taken:
                raise ScheduleError(
                    f"{label}: the name {window.name}-{suffix} is already used "
                    f"on this dimension; names must be unique per scalable target"
                )

    def _names(self, index: str | None, dimension: str) -> set[str]:
        """Entry names used on one dimension, windows' included (names need no replay)."""
        names = {
            p.entry.name for p in self._entries if (p.index, p.dimension) == (index, dimension)
        }
        for w in self._windows:
            if (w.index, w.dimension) == (index, dimension):
                names |= {f"{w.name}-raise", f"{w.name}-restore"}
        return names

    # ---------------------------------------------------------------- the model

    def _window_entries(self, window: CapacityWindow, values: tuple[int, int]) -> list[PlacedEntry]:
        """The raise and restore entries of ``window`` setting min to ``values``."""
        raise_min, restore_min = values
        base_max = self._ranges[(window.index, window.dimension)][1]
        tz = zone(window.time_zone, window.name)
        # a minimum above the configured max brings the max along (a seasonal ceiling);
        # the restore lowers that ceiling back, never under the minimum it restores
        raised = raise_min > base_max
        restore_max = max(base_max, restore_min) if raised or restore_min > base_max else None
        make = [
            (
                f"{window.name}-raise",
                window.raise_schedule,
                raise_min,
                raise_min if raised else None,
            ),
            (f"{window.name}-restore", window.restore_schedule, restore_min, restore_max),
        ]
        return [
            PlacedEntry(
                ScheduleEntry(
                    name=name,
                    schedule=expr,
                    min_capacity=mn,
                    max_capacity=mx,
                    time_zone=window.time_zone,
                ),
                window.index,
                window.dimension,
                parse(expr, name),
                tz,
                window.name,
            )
            for name, expr, mn, mx in make
        ]

    def _intervals(
        self, window: CapacityWindow, start: datetime, end: datetime
    ) -> list[tuple[datetime, datetime]]:
        raise_, restore = self._window_entries(window, (1, 1))
        ends = sorted(restore.occurrences(start - timedelta(days=7), end + timedelta(days=7)))
        out = []
        for begin in raise_.occurrences(start - timedelta(days=7), end):
            finish = next((e for e in ends if e > begin), None)
            if finish is not None:
                out.append((begin.astimezone(UTC), finish.astimezone(UTC)))
        return out

    def _analyse(
        self, start: datetime, end: datetime
    ) -> tuple[
        dict[WindowKey, list[tuple[datetime, datetime]]],
        dict[WindowKey, tuple[int, int]],
        list[str],
    ]:
        """Per window, the minimum its raise and its restore set: its own capacity (at the
        raise) or the operating min (at the restore), but never less than another window on
        the dimension needs at that moment. Errors where that differs from day to day (the
        windows contradict each other). Returns the windows' intervals too."""
        intervals = {_key(w): self._intervals(w, start, end) for w in self._windows}
        values, errors = {}, []
        for w in self._windows:
            others = [
                o
                for o in self._windows
                if o is not w and (o.index, o.dimension) == (w.index, w.dimension)
            ]

            def needed(t: datetime, others: list[CapacityWindow] = others) -> int:
                return max(
                    [o.capacity for o in others if any(b <= t < e for b, e in intervals[_key(o)])],
                    default=0,
                )

            base = self._ranges[(w.index, w.dimension)][0]
            at_raise = {
                max(w.capacity, needed(b)) for b, _ in intervals[_key(w)] if start <= b < end
            }
            at_restore = {max(base, needed(e)) for _, e in intervals[_key(w)] if start <= e < end}
            for moment, found in (("start", at_raise), ("end", at_restore)):
                if len(found) > 1:
                    errors.append(
                        f"{self._where} window {w.name!r}: its {moment} falls inside other "
                        f"windows on some days and not others (it would set {sorted(found)} "
                        f"on different days); align the windows or split them by week day"
                    )
            values[_key(w)] = (max(at_raise, default=w.capacity), max(at_restore, default=base))
        return intervals, values, errors

    def _placed_with(self, values: dict[WindowKey, tuple[int, int]]) -> list[PlacedEntry]:
        out = list(self._entries)
        for w in self._windows:
            out += self._window_entries(w, values[_key(w)])
        return out

    def placed(self, start: datetime | None = None) -> list[PlacedEntry]:
        """Every entry, windows expanded with their computed minimums."""
        start = start or _horizon_start()
        _, values, _ = self._analyse(start, start + HORIZON)
        return self._placed_with(values)

    def timeline(self, start: datetime, end: datetime) -> Timeline:
        return replay(self.placed(start), self._ranges, start, end)

    def preview(self, count: int, start: datetime) -> list[Event]:
        """The next ``count`` firings from ``start`` (a construct's ``schedule_preview``),
        each with its dimension's effective min and max after it; a ``count`` that is not a
        whole number of 1 or more is refused, naming it."""
        if not is_whole(count, 1):
            raise CapacityConfigError(
                f"{self._where}: schedule_preview: count must be a whole number of 1 or more "
                f"(the firings to list); got {shown(count)}"
            )
        return self.timeline(start, start + HORIZON).events[:count]

    def check(
        self, start: datetime | None = None, own: dict[tuple[str | None, str], int] | None = None
    ) -> tuple[list[str], list[str]]:
        """(errors, warnings) of the whole schedule over the horizon; ``own``: the actions
        each scalable target has of its own besides (`_too_many_actions`)."""
        start = start or _horizon_start()
        end = start + HORIZON
        intervals, values, errors = self._analyse(start, end)
        placed = self._placed_with(values)
        timeline = replay(placed, self._ranges, start, end)
        errors = errors + timeline.errors + self._too_many_actions(placed, own)
        warnings = [*self._stale.values(), *decrease_warnings(timeline, self._ranges)]
        warnings += self._never_restored(placed)
        for w in self._windows:
            for o in self._windows:
                if o is w or (o.index, o.dimension) != (w.index, w.dimension):
                    continue
                inside = intervals[_key(w)] and all(
                    any(ob <= b and e <= oe for ob, oe in intervals[_key(o)])
                    for b, e in intervals[_key(w)]
                )
                if inside and w.capacity <= o.capacity:
                    warnings.append(
                        f"{self._where} window {w.name!r} is always inside window "
                        f"{o.name!r} with no more capacity ({w.capacity} <= "
                        f"{o.capacity}); it has no effect"
                    )
        return errors, warnings

    def _never_restored(self, placed: Sequence[PlacedEntry]) -> list[str]:
        """Per dimension, the entries raising its minimum above the configured one when no
        entry ever sets it back (an entry with no firing left aside: its own warning says
        so): a scheduled action stays in force until another changes
        it, so the first raise keeps the minimum up for good. Labelled as the replay's
        messages are (the dimension, not the construct: a global table's replicas share
        one message)."""
        out = []
        for key, (base, _) in self._ranges.items():
            mins = [
                p
                for p in placed
                if (p.index, p.dimension) == key
                and p.entry.min_capacity is not None
                and id(p) not in self._stale  # warned of: no firing left
            ]
            if mins and all((p.entry.min_capacity or 0) > base for p in mins):
                names = ", ".join(repr(p.entry.name) for p in mins)
                verb = "raises" if len(mins) == 1 else "raise"
                out.append(
                    f"{_label(mins[0])}: {names} {verb} the minimum above "
                    f"{base} and no entry sets it back: a scheduled action stays in force, so "
                    f"the minimum stays raised from the first run on (add an entry with "
                    f"min_capacity={base}, or use add_capacity_window, which makes both)"
                )
        return out

    def _too_many_actions(
        self, placed: Sequence[PlacedEntry], own: dict[tuple[str | None, str], int] | None
    ) -> list[str]:
        """An error for each scalable target whose actions (one a ``placed`` entry, as
        `actions` renders them), with ``own`` more of its own (``scale_on_schedule``'s), pass
        Application Auto Scaling's 200."""
        errors = []
        counts = Counter((p.index, p.dimension) for p in placed)
        for (index, dimension), count in sorted(
            counts.items(), key=lambda kv: (kv[0][0] or "", kv[0][1])
        ):
            theirs = (own or {}).get((index, dimension), 0)
            if count + theirs > MAX_SCHEDULED_ACTIONS:
                label = "table" if index is None else f"index {index!r}"
                added = f" and {theirs} of scale_on_schedule" if theirs else ""
                errors.append(
                    f"{self._where} {label} {dimension}: {count} scheduled actions "
                    f"(a window counts 2: its raise and its restore){added}; Application Auto "
                    f"Scaling keeps at most {MAX_SCHEDULED_ACTIONS} a scalable target"
                )
        return errors

    def actions(self) -> dict[tuple[str | None, str], list[dict[str, object]]]:
        """The ScheduledActions of each scheduled scalable target, as CloudFormation takes
        them (one replay serves every dimension)."""
        out: dict[tuple[str | None, str], list[dict[str, object]]] = {}
        for p in self.placed():
            action: dict[str, object] = {}
            if p.entry.min_capacity is not None:
                action["MinCapacity"] = p.entry.min_capacity
            if p.entry.max_capacity is not None:
                action["MaxCapacity"] = p.entry.max_capacity
            rendered: dict[str, object] = {
                "ScheduledActionName": p.entry.name,
                "Schedule": p.expression.text,
                "ScalableTargetAction": action,
                "Timezone": p.entry.time_zone,
            }
            if p.entry.start_time:
                rendered["StartTime"] = p.entry.start_time.astimezone(UTC).strftime(
                    "%Y-%m-%dT%H:%M:%SZ"
                )
            if p.entry.end_time:
                rendered["EndTime"] = p.entry.end_time.astimezone(UTC).strftime(
                    "%Y-%m-%dT%H:%M:%SZ"
                )
            out.setdefault((p.index, p.dimension), []).append(rendered)
        return out


def _horizon_start() -> datetime:
    return datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def _check_window_name(label: str, name: object) -> None:
    """A window's name: its actions are NAME-raise and NAME-restore, which Application Auto
    Scaling refuses with ':', '/' or '|' in them."""
    if not isinstance(name, str) or not re.fullmatch(f"{NAME_CHARS}{{1,{MAX_WINDOW_NAME}}}", name):
        raise ScheduleError(
            f"{label}: name must be 1 to {MAX_WINDOW_NAME} letters, digits or _ . # - (its "
            f"actions are named NAME-raise and NAME-restore, and {NAME_RULE[1:-1]}); got "
            f"{name!r}"
        )
