"""Per-minute consumed capacity and throttle events, and the window of minutes a tick
reads."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from .quota import utc

MINUTE = timedelta(minutes=1)
Key = tuple[str, "str | None", str]


@dataclass(frozen=True)
class Series:
    """Per complete minute, oldest first: consumed units per second, throttle events."""

    minute_starts: list[datetime]
    consumed: list[float]
    throttles: list[float]


def window(now: datetime, minutes: int, lag_minutes: int) -> tuple[datetime, datetime]:
    """[start, end) of the minutes a tick reads. The newest ``lag_minutes`` are left out:
    CloudWatch has not finished them, and an unfinished minute must not read as zero."""
    end = utc(now).replace(second=0, microsecond=0) - lag_minutes * MINUTE
    return end - minutes * MINUTE, end
