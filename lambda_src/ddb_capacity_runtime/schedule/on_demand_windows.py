"""Runs in: CDK app (synth time), workstation (simulator).

Declared on-demand windows: hours of the week a table is switched to on-demand
(``PAY_PER_REQUEST``, with its ``OnDemandThroughput`` maximums as a cost guard) and back to
provisioned at the end. Each window is checked alone (`OnDemandWindow.check`) and a table's
windows together (`check_windows`): no two overlap, and no rolling 24 hours holds more
switches to on-demand than DynamoDB takes (`core.switches`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from ..core.errors import ScheduleError
from ..core.switches import MAX_SWITCHES, crowded
from ..core.validators import is_whole
from .entries import HORIZON, NAME_CHARS, check_week, weekly_cron
from .expressions import parse, zone

MAX_ON_DEMAND_NAME = 64
"""The longest window name (it names the window's schedules)."""
SWITCH_BILLING = ("PAY_PER_REQUEST", "PROVISIONED")
"""What a window's start and its end switch the table to."""


@dataclass(frozen=True)
class OnDemandWindow:
    """A table on-demand from ``start`` (HH:MM in ``time_zone``) for ``duration`` on each of
    ``week_days``, its read and write request units capped at the two maximums."""

    name: str
    start: str
    duration: timedelta
    week_days: tuple[str, ...]
    time_zone: str
    max_read_request_units: int
    max_write_request_units: int

    @property
    def start_schedule(self) -> str:
        return weekly_cron(self.start, timedelta(0), self.week_days)

    @property
    def end_schedule(self) -> str:
        return weekly_cron(self.start, self.duration, self.week_days)

    def check(self, where: str, quota: int) -> None:
        """The window alone: its name, start, duration (1 minute to 23 hours 59 minutes, the
        whole of it within a day of its start), days, time zone and maximums (whole request
        units from 1 to ``quota``); refused with a ScheduleError naming the field."""
        label = f"{where} on-demand window {self.name!r}"
        if not isinstance(self.name, str) or not re.fullmatch(
            f"{NAME_CHARS}{{1,{MAX_ON_DEMAND_NAME}}}", self.name
        ):
            raise ScheduleError(
                f"{label}: id must be 1 to {MAX_ON_DEMAND_NAME} letters, digits or _ . # -; "
                f"got {self.name!r}"
            )
        if not timedelta(minutes=1) <= self.duration < timedelta(days=1):
            raise ScheduleError(
                f"{label}: duration must be from 1 minute to less than 24 hours (a table "
                f"is switched to on-demand at most {MAX_SWITCHES} times a day); got "
                f"{self.duration}"
            )
        words = ("duration", "start", "end")
        check_week(label, self.start, self.duration, self.week_days, words)
        zone(self.time_zone, label)
        check_maximums(label, self.max_read_request_units, self.max_write_request_units, quota)

    def spans(self, start: datetime, end: datetime) -> Iterator[tuple[datetime, datetime]]:
        """Each time the window is open that starts in [start, end): (its start, its end),
        in UTC, the end as its schedule fires it (the same local time)."""
        tz = zone(self.time_zone, self.name)
        opens = parse(self.start_schedule, self.name)
        closes = parse(self.end_schedule, self.name)
        for began in opens.occurrences(tz, start, end):
            ended = closes.first_from(tz, began + timedelta(minutes=1))
            assert ended is not None  # a weekly cron always fires again
            yield began.astimezone(UTC), ended.astimezone(UTC)


@dataclass(frozen=True)
class Switch:
    """One switch of a table's billing mode by its on-demand windows: at ``when`` (UTC),
    to ``billing_mode`` (``PAY_PER_REQUEST`` at a window's start, ``PROVISIONED`` at its
    end), by ``window``."""

    when: datetime
    window: OnDemandWindow
    billing_mode: str


def switches(windows: Sequence[OnDemandWindow], start: datetime, end: datetime) -> list[Switch]:
    """Every switch of ``windows`` whose window starts in [start, end), in time order."""
    found = [
        Switch(at, w, mode)
        for w in windows
        for span in w.spans(start, end)
        for at, mode in zip(span, SWITCH_BILLING, strict=True)
    ]
    return sorted(found, key=lambda s: (s.when, s.billing_mode != "PROVISIONED"))


def check_windows(where: str, windows: Sequence[OnDemandWindow], start: datetime) -> None:
    """A table's windows together, over `HORIZON` from ``start``: none opens while another
    is open, and no rolling 24 hours holds more than `MAX_SWITCHES` switches to on-demand."""
    spans = sorted(
        (began, ended, w.name)
        for w in windows
        for began, ended in w.spans(start - timedelta(days=1), start + HORIZON)
    )
    for (_, first_end, first), (second_start, _, second) in zip(spans, spans[1:], strict=False):
        if second_start < first_end:
            raise ScheduleError(
                f"{where}: on-demand windows {first!r} and {second!r} overlap (on "
                f"{second_start:%a %d %b %H:%M} UTC the table is already on-demand): "
                "give windows that never overlap, or join them into one"
            )
    too_many = crowded(began.timestamp() for began, _, _ in spans)
    if too_many is not None:
        times = ", ".join(f"{datetime.fromtimestamp(t, UTC):%a %H:%M}" for t in too_many)
        raise ScheduleError(
            f"{where}: on-demand windows: {len(too_many)} switches to on-demand within 24 "
            f"hours ({times} UTC); DynamoDB allows at most {MAX_SWITCHES} in any rolling 24 "
            "hours: give fewer windows or fewer week_days"
        )


def check_maximums(label: str, reads: object, writes: object, quota: int) -> None:
    """On-demand maximums (a window's, or learned windows'): whole request units a second from
    1 to ``quota``; refused with a ScheduleError naming the field."""
    for field, value in (("max_read_request_units", reads), ("max_write_request_units", writes)):
        if not is_whole(value, 1, quota):
            raise ScheduleError(
                f"{label}: {field} must be a whole number of request units a second from "
                f"1 to {quota:,} (the table's quota), the on-demand maximum that caps its "
                f"cost; got {value!r}"
            )
