"""Runs in: CDK app (``FleetAdvisor``, synth time), advisor Lambdas.

The one settings contract of the nightly fleet advisor: the construct writes the functions'
environment with `AdvisorSettings.to_env`, the functions read it back with
`AdvisorSettings.from_env`, so no field can be lost at the boundary. Loads nothing
heavier than the standard library.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import UTC, datetime

from .tool_errors import SettingsError as SettingsError

__all__ = [
    "MAX_DAYS",
    "NAMESPACE",
    "RUN_ID",
    "AdvisorSettings",
    "SettingsError",
    "run_id_of",
    "time_of",
]

NAMESPACE = "DynamoDBCapacity/FleetAdvisor"
"""The advisor's EMF namespace."""
RUN_ID = re.compile(r"[0-9]{8}T[0-9]{4}Z")
"""A run's id: the minute its lister was scheduled, UTC (``20261122T0200Z``)."""
MAX_DAYS = 14
"""The most days of history: CloudWatch keeps 1-minute datapoints 15 days, and a worker may run up
to a day after its run's lister (the history ends at the run's time)."""
PREFIX = "FLEET_ADVISOR_"
REPORT_BUCKET_DIMENSION = "ReportBucket"
"""The one dimension of the advisor's counts: its report bucket's name (unique), so two
advisors of one account and Region never raise each other's alarms."""


@dataclass(frozen=True)
class AdvisorSettings:
    """``bucket``: where runs are written; ``queue_url``: one message per table;
    ``days``: the history each table is advised on; ``report_delay_minutes``: how long
    after the lister the report runs (a run older than that plus an hour is not reported);
    ``candidates``: the policies tried, comma-separated (empty: ``advise``'s default)."""

    bucket: str
    queue_url: str = ""
    days: int = 14
    report_delay_minutes: int = 180
    candidates: str = ""

    @property
    def candidate_list(self) -> list[str]:
        return [c.strip() for c in self.candidates.split(",") if c.strip()]

    def to_env(self) -> dict[str, str]:
        return {f"{PREFIX}{f.name.upper()}": str(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> AdvisorSettings:
        def get(name: str) -> str:
            key = f"{PREFIX}{name.upper()}"
            if key not in env:
                raise SettingsError(f"{key} is not set")
            return env[key]

        values: dict[str, object] = {}
        for f in fields(cls):
            text = get(f.name)
            if f.type in (int, "int"):
                if not text.isdigit():
                    raise SettingsError(
                        f"{PREFIX}{f.name.upper()}: got {text!r}; expected a whole number"
                    )
                values[f.name] = int(text)
            else:
                values[f.name] = text
        settings = cls(**values)  # type: ignore[arg-type]
        if not 1 <= settings.days <= MAX_DAYS:
            raise SettingsError(
                f"{PREFIX}DAYS: got {settings.days}; expected a whole number from 1 to {MAX_DAYS}"
            )
        return settings


def run_id_of(moment: datetime) -> str:
    """The run id of a lister scheduled at ``moment``."""
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%MZ")


def time_of(run_id: object) -> datetime | None:
    """The time a run id names; None when it is not one (untrusted input)."""
    if not isinstance(run_id, str) or not RUN_ID.fullmatch(run_id):
        return None
    try:
        return datetime.strptime(run_id, "%Y%m%dT%H%MZ").replace(tzinfo=UTC)
    except ValueError:
        return None
