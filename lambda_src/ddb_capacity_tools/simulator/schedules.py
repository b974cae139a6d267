"""Runs in: workstation (the `ddb-capacity` command).

Schedules in a serialized form, replayed with the constructs' own schedule code.

A schedule file is JSON: a list of entries, each the fields of
[`ScheduleEntry`][ddb_capacity_runtime.schedule.entries.ScheduleEntry]
(``constructs_pkg.ScheduleEntry``)
plus where it applies::

    [{"name": "before-load", "schedule": "cron(55 4 ? * 2-6 *)", "dimension": "write",
      "min_capacity": 18000, "time_zone": "Europe/Paris"},
     {"name": "after-load", "schedule": "cron(0 6 ? * 2-6 *)", "dimension": "write",
      "min_capacity": 1}]

``index`` (a GSI name) is optional; ``max_capacity``, ``time_zone``, ``start_time`` and
``end_time`` (ISO-8601) are too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ddb_capacity_runtime.core.errors import CapacityConfigError
from ddb_capacity_runtime.schedule.entries import ScheduleEntry, TableSchedule

from .. import json_files
from ..tool_errors import ScheduleFileError as ScheduleFileError
from ..tool_errors import printable
from .trace import Key, key_label

FIELDS = {
    "name",
    "schedule",
    "dimension",
    "index",
    "min_capacity",
    "max_capacity",
    "time_zone",
    "start_time",
    "end_time",
}
LOOKBACK = timedelta(days=7)
"""How far before a trace's start firings are replayed, to know the range in force at its start."""


@dataclass(frozen=True)
class Firing:
    minute: int  # minutes from the trace start (negative: before it)
    key: Key
    min_capacity: int
    max_capacity: int


MAX_SCHEDULE_BYTES = 4 * 1024 * 1024
"""The largest schedule file read: a schedule is a list of entries, far smaller than this."""


def load(path: str | Path) -> list[dict[str, Any]]:
    """The schedule entries of the JSON file at ``path``, read up to `MAX_SCHEDULE_BYTES`;
    [`ScheduleFileError`][ddb_capacity_tools.simulator.ScheduleFileError] naming the file,
    the line and column, or the size, for what is not a list of entries."""
    name = printable(path)
    try:
        with Path(path).open("rb") as handle:
            raw = handle.read(MAX_SCHEDULE_BYTES + 1)
    except OSError as exc:
        raise ScheduleFileError(
            f"{name}: cannot be read ({exc.strerror}); expected a JSON file of schedule entries"
        ) from None
    if len(raw) > MAX_SCHEDULE_BYTES:
        raise ScheduleFileError(
            f"{name}: larger than {MAX_SCHEDULE_BYTES // 2**20} MiB; expected a JSON list of "
            "schedule entries"
        )
    try:
        data = json_files.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ScheduleFileError(f"{name}: not UTF-8 (byte {exc.start:,})") from None
    except json_files.NestedJSONError as exc:
        raise ScheduleFileError(f"{name}: {exc} (a JSON list of schedule entries)") from None
    except json.JSONDecodeError as exc:
        raise ScheduleFileError(
            f"{name} line {exc.lineno}, column {exc.colno}: not JSON: {exc.msg}"
        ) from None
    if not isinstance(data, list):
        raise ScheduleFileError(
            f"{name}: got a JSON {type(data).__name__}; expected a list of schedule entries"
        )
    return data


def _moment(value: Any, where: str) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        raise ScheduleFileError(f"{where}: got {value!r}; expected an ISO-8601 time") from None


def firings(
    entries: Sequence[dict[str, Any]],
    keys: Sequence[Key],
    ranges: dict[Key, tuple[int, int]],
    start: datetime,
    minutes: int,
) -> list[Firing]:
    """Every firing from ``LOOKBACK`` before ``start`` to the end of the trace, with the
    range in force after it, computed by the constructs' [`TableSchedule`][]."""
    schedule = TableSchedule("schedule", dict(ranges), max(mx for _, mx in ranges.values()))
    for number, raw in enumerate(entries, start=1):
        where = f"schedule entry {number}"
        if not isinstance(raw, dict):
            raise ScheduleFileError(f"{where}: got {raw!r}; expected an object")
        unknown = sorted(set(raw) - FIELDS)
        if unknown:
            raise ScheduleFileError(
                f"{where}: unknown field {unknown[0]!r}; expected {', '.join(sorted(FIELDS))}"
            )
        for required in ("name", "schedule", "dimension"):
            if required not in raw:
                raise ScheduleFileError(f"{where}: missing field {required!r}")
        key = (raw.get("index"), raw["dimension"])
        if key not in keys:
            raise ScheduleFileError(
                f"{where} field dimension/index: got {key_label(key)!r}; the trace has "
                f"{', '.join(key_label(k) for k in keys)}"
            )
        entry = ScheduleEntry(
            name=raw["name"],
            schedule=raw["schedule"],
            min_capacity=raw.get("min_capacity"),
            max_capacity=raw.get("max_capacity"),
            time_zone=raw.get("time_zone", "UTC"),
            start_time=_moment(raw.get("start_time"), f"{where} field start_time"),
            end_time=_moment(raw.get("end_time"), f"{where} field end_time"),
        )
        try:
            schedule.add_entry(entry, key[0], key[1])
        except CapacityConfigError as exc:
            raise ScheduleFileError(f"{where}: {exc}") from None
    begin, end = start - LOOKBACK, start + timedelta(minutes=minutes)
    timeline = schedule.timeline(begin, end)
    if timeline.errors:
        raise ScheduleFileError(f"schedule: {timeline.errors[0]}")
    out = []
    for event in timeline.events:
        minute = int((event.when - start).total_seconds() // 60)
        out.append(
            Firing(
                minute,
                (event.placed.index, event.placed.dimension),
                event.min_capacity,
                event.max_capacity,
            )
        )
    return out
