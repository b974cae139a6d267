"""Runs in: scaler Lambda, broker Lambda, workers (the user's own jobs, in direct mode),
workstation (simulator, schedules).

DynamoDB's capacity-decrease quota, as a pure ledger (no I/O).

The rule (DynamoDB service quotas): in a UTC day, up to 4 decreases at any time; after
those, 1 more whenever the previous hour had no decrease; at most 27 a day. The table and
each GSI have separate counters. The ledger trusts what DynamoDB reports for a counter
(``NumberOfDecreasesToday``, ``LastDecreaseDateTime``) over any memory of its own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from .validators import is_number

FREE_DECREASES = 4
MAX_DECREASES_PER_DAY = 27
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


def utc(moment: datetime) -> datetime:
    """``moment`` as an aware UTC datetime (naive values are taken as UTC)."""
    tz = moment.tzinfo
    if tz is UTC:  # already UTC: astimezone would return it unchanged
        return moment
    if tz is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def end_of_utc_day(now: datetime) -> datetime:
    now = utc(now)
    return datetime(now.year, now.month, now.day, tzinfo=UTC) + DAY


def _hourly_slots(start: datetime, eod: datetime) -> int:
    """Hourly decreases from ``start`` to ``eod``, one at the start of each hour left."""
    return max(0, math.ceil((eod - start) / HOUR)) if start < eod else 0


def _counter(value: object) -> int:
    """DescribeTable's ``NumberOfDecreasesToday`` (None: none yet); `MAX_DECREASES_PER_DAY`
    for a value that is not a whole number from 0 to it."""
    if value is None:
        return 0
    if is_number(value, 0, MAX_DECREASES_PER_DAY) and float(value).is_integer():
        return int(value)
    return MAX_DECREASES_PER_DAY


@dataclass(frozen=True)
class DecreaseLedger:
    """One decrease counter (a table or one GSI) on one UTC day."""

    decreases_today: int = 0
    last_decrease: datetime | None = None

    @classmethod
    def from_throughput(cls, throughput: Mapping[str, Any], now: datetime) -> DecreaseLedger:
        """From DescribeTable's ``ProvisionedThroughput`` of a table or GSI, untrusted: a
        counter that is not a whole number from 0 to `MAX_DECREASES_PER_DAY` reads as the
        day's decreases all spent, and a last decrease that is not a time, or is after
        ``now``, or is missing where the counter is past the free ones (its hourly slot then
        depends on it), as one made at ``now``; either way no decrease is taken for granted.
        A last decrease before today's 00:00 UTC starts the count again from 0, whatever it
        said, as DynamoDB's does."""
        last = throughput.get("LastDecreaseDateTime")
        count = _counter(throughput.get("NumberOfDecreasesToday"))
        if last is None and count >= FREE_DECREASES:
            last = utc(now)
        if last is not None:
            last = min(utc(last), utc(now)) if isinstance(last, datetime) else utc(now)
            if last < end_of_utc_day(now) - timedelta(days=1):
                count = 0  # the counter resets at 00:00 UTC
        return cls(decreases_today=count, last_decrease=last)

    def _today(self, now: datetime) -> int:
        if self.last_decrease is None:
            return self.decreases_today
        # before 00:00 UTC of now's day (end_of_utc_day(now) - 1 day): the counter has reset
        if utc(self.last_decrease).date() < utc(now).date():
            return 0
        return self.decreases_today

    def can_decrease(self, now: datetime) -> bool:
        """Whether DynamoDB would accept a decrease on this counter at ``now``."""
        count = self._today(now)
        if count < FREE_DECREASES:
            return True
        if count >= MAX_DECREASES_PER_DAY:
            return False
        return self.last_decrease is None or utc(now) - utc(self.last_decrease) >= HOUR

    def remaining_today(self, now: datetime) -> int:
        """The most decreases still possible before 00:00 UTC, spending each as early as allowed."""
        now = utc(now)
        count = self._today(now)
        eod = end_of_utc_day(now)
        if count < FREE_DECREASES:
            possible = (FREE_DECREASES - count) + _hourly_slots(now + HOUR, eod)
        else:
            first = now if self.last_decrease is None else max(now, utc(self.last_decrease) + HOUR)
            possible = _hourly_slots(first, eod)
        return max(0, min(MAX_DECREASES_PER_DAY - count, possible))

    def allows(
        self,
        now: datetime,
        saving_fraction: float,
        *,
        reserve: int,
        large_saving_fraction: float,
        saving_units: int = 0,
        least_fall: int = 0,
    ) -> tuple[bool, str]:
        """Whether to spend a decrease worth ``saving_fraction`` of current capacity
        (``saving_units`` units) now.

        Decreases beyond the ``reserve`` kept for the rest of the day are spent freely. The
        reserve itself is spent for a decrease that saves at least ``least_fall`` units when
        that is known (the smallest of the forecast's falls it is kept for: the decreases
        left go where they save most, and this one saves more than a fall that would have
        had one), else for a saving of at least ``large_saving_fraction``.
        """
        if not self.can_decrease(now):
            return False, "decrease quota exhausted for now"
        left = self.remaining_today(now)
        if left > reserve:
            return True, f"{left} decreases left today"
        kept = f"only {left} decreases left today (reserve {reserve})"
        if least_fall > 0:
            if saving_units >= least_fall:
                return True, f"{kept}; saves {saving_units} units >= the least fall's {least_fall}"
            return False, f"{kept}; saves {saving_units} units < the least fall's {least_fall}"
        if saving_fraction >= large_saving_fraction:
            return True, f"{kept}; saving {saving_fraction:.0%}"
        return False, f"{kept}; saving {saving_fraction:.0%} < {large_saving_fraction:.0%}"

    def spend(self, now: datetime) -> DecreaseLedger:
        """The ledger after one decrease at ``now`` (for simulations and tests)."""
        return DecreaseLedger(self._today(now) + 1, utc(now))


NO_DECREASES = DecreaseLedger()
"""A counter with no decrease yet: the default ledger (immutable, so one is shared)."""
