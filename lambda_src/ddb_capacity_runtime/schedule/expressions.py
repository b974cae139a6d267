"""Runs in: CDK app (synth time), workstation (simulator), fleet advisor Lambda.

Application Auto Scaling's schedule expressions (``cron(...)``, ``at(...)``, ``rate(...)``)
read and checked as the service reads them (`parse`, `Expression`), in a time zone (`zone`),
with every refusal a `ScheduleError` naming the field, the value and what is allowed.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from cronsim import CronSim, CronSimError

from ..core.errors import ScheduleError as ScheduleError
from ..core.names import MAX_SCHEDULE_TEXT

CRON = re.compile(r"cron\((.*)\)")


AT = re.compile(r"at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)")


RATE = re.compile(r"rate\((\d+) (minute|minutes|hour|hours|day|days)\)")


RATE_UNITS = {"minute": 60, "hour": 3600, "day": 86400}


DOW_NUMBER = re.compile(r"(?<![#/0-9])([0-9]+)")


DIGITS = re.compile(r"[0-9]+")


DOW_STEP = re.compile(r"^([0-9]+)/([0-9]+)$")
"""A day-of-week step from one day (``2/2``): to the week's end, Saturday (AAS's 7)."""


DOW_NAMES = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
"""Day-of-week names in Application Auto Scaling's numbering: SUN is 1, SAT is 7."""


DOW_NAME = re.compile("|".join(DOW_NAMES), re.IGNORECASE)


NEAREST_WEEKDAY = re.compile(r"([0-9]+)W", re.IGNORECASE)
"""Day-of-month ``nW``: the weekday (Monday to Friday) nearest day n of the month."""


YEARS = (1970, 2199)


CRON_FIELDS = (
    ("minutes", "0-59"),
    ("hours", "0-23"),
    ("day-of-month", "1-31, L, LW, nW (the weekday nearest day n) or ?"),
    ("month", "1-12 or JAN-DEC"),
)
"""The first four cron fields, each with what it allows; checked one at a time (with ``*`` in the
others) before the ``?`` rule, so an error names the field that is wrong."""


EXPECTED = (
    "cron(minutes hours day-of-month month day-of-week year) with ? in day-of-month "
    "or day-of-week, at(yyyy-mm-ddThh:mm:ss) or rate(N minutes|hours|days)"
)


def zone_name(value: object) -> object:
    """A time zone as its IANA name: a string as it is, or the name of a ``cdk.TimeZone``
    (anything with a ``timezone_name``); anything else is returned for [`zone`][] to
    refuse."""
    name = getattr(value, "timezone_name", None)
    return name if isinstance(name, str) else value


def zone(name: object, where: str) -> ZoneInfo:
    """The IANA time zone ``name``; a clear error for anything else."""
    name = zone_name(name)
    if not isinstance(name, str) or name not in available_timezones():
        raise ScheduleError(
            f"{where}: time_zone must be an IANA time zone name such as "
            f"'UTC' or 'Europe/Paris'; got {name!r}"
        )
    try:
        return ZoneInfo(name)
    except ZoneInfoNotFoundError:  # pragma: no cover (listed but not loadable)
        raise ScheduleError(f"{where}: time_zone {name!r} cannot be loaded") from None


@dataclass(frozen=True)
class Expression:
    """A parsed Application Auto Scaling schedule expression."""

    text: str
    cron5: str | None = None
    years: frozenset[int] | None = None
    at: datetime | None = None
    rate: timedelta | None = None
    nearest_weekday: int | None = None
    """Day-of-month ``nW``: n. The cron fires on the weekday nearest day n of a month,
    never in another month (`nearest_weekday`); ``cron5`` then has ``*`` for the day."""

    def occurrences(
        self, tz: ZoneInfo, start: datetime, end: datetime, anchor: datetime | None = None
    ) -> Iterator[datetime]:
        """Firing times in [start, end), aware, in ``tz``. A rate counts from ``anchor``
        (the entry's start time) or, unknown until deployment, from ``start``."""
        start, end = start.astimezone(tz), end.astimezone(tz)
        if self.at is not None:
            moment = self.at.replace(tzinfo=tz)
            if start <= moment < end:
                yield moment
        elif self.rate is not None:
            moment = (anchor or start).astimezone(tz)
            while moment < start:
                moment += self.rate
            while moment < end:
                yield moment
                moment += self.rate
        else:
            for moment in self._firings(tz, start):
                if moment >= end:
                    return
                yield moment

    def first_from(self, tz: ZoneInfo, moment: datetime) -> datetime | None:
        """The first firing at or after ``moment`` (aware), in ``tz``; None if there is
        none: an ``at`` before it, or a cron whose years hold no firing from then on. A
        rate fires from ``moment`` on (its anchor is known at deployment only)."""
        moment = moment.astimezone(tz)
        if self.at is not None:
            at = self.at.replace(tzinfo=tz)
            return at if at >= moment else None
        if self.rate is not None:
            return moment
        return next(self._firings(tz, moment), None)

    def _firings(self, tz: ZoneInfo, start: datetime) -> Iterator[datetime]:
        """The cron's firings at or after ``start`` (aware, in ``tz``), in order, in the
        years of its year field only (a year left out is skipped, not searched)."""
        if self.years is None:
            yield from self._cron_from(tz, start)
            return
        for year in sorted(y for y in self.years if y >= start.year):
            for moment in self._cron_from(tz, max(start, datetime(year, 1, 1, tzinfo=tz))):
                if moment.year != year:
                    break
                yield moment

    def _cron_from(self, tz: ZoneInfo, start: datetime) -> Iterator[datetime]:
        """The firings of the first five fields (and ``nW``) at or after ``start``."""
        assert self.cron5 is not None
        if self.nearest_weekday is None:
            yield from CronSim(self.cron5, start - timedelta(seconds=1))
            return
        month = datetime(start.year, start.month, 1, tzinfo=tz)
        while month.year <= YEARS[1]:
            day = nearest_weekday(month.year, month.month, self.nearest_weekday)
            if day is not None:
                begin = max(start, month.replace(day=day))
                for moment in CronSim(self.cron5, begin - timedelta(seconds=1)):
                    if (moment.year, moment.month, moment.day) != (month.year, month.month, day):
                        break
                    yield moment
            month = (month + timedelta(days=32)).replace(day=1)


def nearest_weekday(year: int, month: int, day: int) -> int | None:
    """The day of ``month`` that day-of-month ``{day}W`` means: ``day`` on a weekday; the
    Friday before a Saturday, or the Monday after a Sunday, staying in the month (a
    Saturday the 1st gives Monday the 3rd; a Sunday the last day, Friday two days before).
    None when the month has no such day (``31W`` in April), as for ``31``."""
    last = calendar.monthrange(year, month)[1]
    if day > last:
        return None
    weekday = calendar.weekday(year, month, day)
    if weekday == calendar.SATURDAY:
        return day + 2 if day == 1 else day - 1
    if weekday == calendar.SUNDAY:
        return day - 2 if day == last else day + 1
    return day


def _years(field: str, where: str, text: str) -> frozenset[int] | None:
    if field in ("*", "?"):
        return None
    years: set[int] = set()
    for part in field.split(","):
        span, slash, step = part.partition("/")
        bounds = span.split("-")
        if not (
            (span == "*" or (all(DIGITS.fullmatch(b) for b in bounds) and len(bounds) <= 2))
            and (not slash or DIGITS.fullmatch(step))
        ):
            raise ScheduleError(
                f"{where}: schedule {text!r}: year field {field!r} must be *, "
                f"a year, a range (2026-2027), a step (2026/2, */2) or a list of them"
            )
        if span == "*":
            lo, hi = YEARS
        else:
            # "2026/2" runs from 2026 to the last year, as "5/15" in minutes does
            lo = int(bounds[0])
            hi = int(bounds[1]) if len(bounds) == 2 else (YEARS[1] if slash else lo)
        if not YEARS[0] <= lo <= hi <= YEARS[1]:
            raise ScheduleError(
                f"{where}: schedule {text!r}: years must be from {YEARS[0]} to "
                f"{YEARS[1]}; got {part!r}"
            )
        if slash and int(step) < 1:
            raise ScheduleError(
                f"{where}: schedule {text!r}: a year step must be at least 1; got {part!r}"
            )
        years.update(range(lo, hi + 1, int(step) if slash else 1))
    return frozenset(years)


def _dow_to_standard(field: str, where: str, text: str) -> str:
    """AAS numbers days 1-7 from Sunday; standard cron 0-6. Names become numbers first
    (``FRIL``, the last Friday, is ``6L``; ``MON#2`` is ``2#2``), and ``L`` alone is the
    week's last day, Saturday."""
    written = field
    field = "7" if field.upper() == "L" else field
    field = DOW_NAME.sub(lambda m: str(DOW_NAMES.index(m.group(0).upper()) + 1), field)
    # "MON/2" is Monday, Wednesday, Friday: to Saturday, never wrapping to Sunday as a
    # standard cron's 1/2 would (its days run 0-7)
    field = DOW_STEP.sub(r"\1-7/\2", field)

    def shift(match: re.Match[str]) -> str:
        day = int(match.group(1))
        if not 1 <= day <= 7:
            raise ScheduleError(
                f"{where}: schedule {text!r}: day-of-week must be 1-7 (SUN-SAT) "
                f"or SUN-SAT; got {day}" + ("" if DIGITS.fullmatch(written) else f" in {written!r}")
            )
        return str(day - 1)

    return DOW_NUMBER.sub(shift, field)


def cron(
    *,
    minute: str | int = "0",
    hour: str | int = "*",
    day: str | int | None = None,
    month: str | int = "*",
    week_day: str | None = None,
    year: str | int = "*",
) -> str:
    """An Application Auto Scaling cron expression from its fields, with ``?`` where the
    dialect needs it: ``cron(hour=5, week_day="MON-FRI")`` is ``cron(0 5 ? * MON-FRI *)``.
    Checked when it is made (`parse`): a field out of range (``hour=25``) raises
    ScheduleError naming the field, the value and what is allowed."""
    if day is not None and week_day is not None:
        raise ScheduleError(
            f"cron: set day ({day!r}) or week_day ({week_day!r}), not both; "
            f"Application Auto Scaling takes one of them"
        )
    dom = "?" if week_day is not None else ("*" if day is None else str(day))
    dow = "?" if week_day is None else week_day
    made = f"cron({minute} {hour} {dom} {month} {dow} {year})"
    parse(made, "cron")
    return made


def parse(text: str, where: str) -> Expression:
    """Parse and validate one expression; errors name the expression and what is allowed."""
    expression_string = getattr(text, "expression_string", None)  # appscaling.Schedule
    if isinstance(expression_string, str):
        text = expression_string
    if not isinstance(text, str):
        raise ScheduleError(f"{where}: schedule must be a string such as {EXPECTED}; got {text!r}")
    text = text.strip()
    if len(text) > MAX_SCHEDULE_TEXT:
        raise ScheduleError(
            f"{where}: schedule is {len(text):,} characters; Application Auto Scaling takes at "
            f"most {MAX_SCHEDULE_TEXT:,}"
        )
    if m := AT.fullmatch(text):
        return _parse_at(text, m.group(1), where)
    if m := RATE.fullmatch(text):
        return _parse_rate(text, int(m.group(1)), m.group(2), where)
    m = CRON.fullmatch(text)
    if not m:
        raise ScheduleError(
            f"{where}: schedule {text!r} is not an Application Auto Scaling "
            f"expression; expected {EXPECTED}"
        )
    fields = m.group(1).split()
    if len(fields) != 6:
        raise ScheduleError(
            f"{where}: schedule {text!r} has {len(fields)} fields; a cron "
            f"expression has 6: minutes hours day-of-month month day-of-week year"
        )
    minute, hour, dom, month, dow, year = fields
    nearest, week = _check_fields(fields, where, text)
    years = _years(year, where, text)
    if (dom == "?") == (dow == "?"):
        raise ScheduleError(
            f"{where}: schedule {text!r}: exactly one of day-of-month ({dom!r}) "
            f"and day-of-week ({dow!r}) must be ?"
        )
    day = dom if nearest is None else str(nearest)  # nW is checked as day n
    cron5 = " ".join([minute, hour, "*" if dom == "?" else day, month, week])
    try:
        CronSim(cron5, datetime(2026, 1, 1))
    except CronSimError as exc:
        if _days_never_come(minute, hour, day, month):
            raise ScheduleError(
                f"{where}: schedule {text!r} never fires: no month of {month!r} has a day "
                f"{dom!r} (February has 29 days at most; April, June, September and "
                f"November 30)"
            ) from None
        raise ScheduleError(
            f"{where}: schedule {text!r} is not a valid cron expression: {exc}"
        ) from None
    if nearest is not None:
        return Expression(
            text,
            cron5=" ".join([minute, hour, "*", month, week]),
            years=years,
            nearest_weekday=nearest,
        )
    return Expression(text, cron5=cron5, years=years)


def _check_fields(fields: Sequence[str], where: str, text: str) -> tuple[int | None, str]:
    """Each cron field on its own, before the rules between fields: the first that is out
    of its range (``cron(0 25 * * * *)``: hours) is named with what it allows. Returns the
    day n of a day-of-month ``nW`` (or None) and the day of week in standard cron (``*``
    for ``?``)."""
    nearest_weekday = None
    for n, (name, allowed) in enumerate(CRON_FIELDS):
        if fields[n] == "?" and name == "day-of-month":
            continue
        value = fields[n]
        if name == "day-of-month" and (nearest := NEAREST_WEEKDAY.fullmatch(value)):
            value = nearest.group(1)
            nearest_weekday = int(value)
        elif name == "day-of-month" and "W" in value.upper() and value.upper() != "LW":
            raise ScheduleError(
                f"{where}: schedule {text!r}: day-of-month field {value!r}: W takes one day "
                f"(15W, the weekday nearest the 15th) or L (LW), not a list, range or step"
            )
        alone = " ".join(value if k == n else "*" for k in range(5))
        try:
            CronSim(alone, datetime(2026, 1, 1))
        except CronSimError:
            raise ScheduleError(
                f"{where}: schedule {text!r}: {name} field {fields[n]!r} is out of range; "
                f"expected {allowed} (a value, a range a-b, a list a,b, a step a/n, or *)"
            ) from None
    week = "*" if fields[4] == "?" else _dow_to_standard(fields[4], where, text)
    return nearest_weekday, week


def _parse_at(text: str, when: str, where: str) -> Expression:
    try:
        return Expression(text, at=datetime.fromisoformat(when))
    except ValueError:
        raise ScheduleError(f"{where}: schedule {text!r} is not a real date and time") from None


def _parse_rate(text: str, value: int, unit: str, where: str) -> Expression:
    if value < 1 or (value == 1) != (not unit.endswith("s")):
        raise ScheduleError(
            f"{where}: schedule {text!r}: a rate is a positive whole number "
            f"with a singular unit for 1 (rate(1 hour)) and plural otherwise "
            f"(rate(2 hours))"
        )
    return Expression(text, rate=timedelta(seconds=value * RATE_UNITS[unit.rstrip("s")]))


def _days_never_come(minute: str, hour: str, dom: str, month: str) -> bool:
    """The days of month ``dom`` are valid days, but none comes in the months ``month``
    (``cron(0 0 31 2 ? *)``): cronsim refuses such an expression as it refuses a bad one."""
    try:
        CronSim(f"{minute} {hour} {dom} * *", datetime(2026, 1, 1))
    except CronSimError:
        return False
    return dom != "*"
