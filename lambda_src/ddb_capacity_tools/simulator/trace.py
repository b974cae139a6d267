"""Traffic traces: demand per minute, in capacity units per second, for each dimension of
one table and its GSIs; read from a CSV file or made by a built-in scenario."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

MINUTE = timedelta(minutes=1)
#: (index, dimension): index None for the table itself, dimension "read" or "write".
Key = tuple["str | None", str]
CSV_HEADER = ["timestamp", "read", "write"]


class TraceError(ValueError):
    """A trace that cannot be simulated; the message names the line and column."""


def key_label(key: Key) -> str:
    """``read``/``write`` for the table, ``INDEX:read`` for a GSI."""
    index, dimension = key
    return dimension if index is None else f"{index}:{dimension}"


@dataclass(frozen=True)
class Trace:
    """Demand per minute from ``start`` (UTC, on a whole minute), per dimension.

    ``schedule`` is the scenario's own serialized schedule (see :mod:`.schedules`), used by
    the ``scheduled`` policy when no schedule file is given.
    """

    name: str
    start: datetime
    demand: dict[Key, list[float]]
    schedule: list[dict[str, Any]] | None = None
    notes: str = ""

    @property
    def minutes(self) -> int:
        return len(next(iter(self.demand.values()))) if self.demand else 0

    def time(self, minute: int) -> datetime:
        return self.start + minute * MINUTE


def _timestamp(text: str, where: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise TraceError(
            f"{where}: got {text!r}; expected an ISO-8601 UTC timestamp such as "
            f"2026-01-05T13:00:00Z"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    if moment.utcoffset() != timedelta(0):
        raise TraceError(f"{where}: got {text!r}; expected a UTC timestamp (Z or +00:00)")
    if moment.second or moment.microsecond:
        raise TraceError(f"{where}: got {text!r}; expected a timestamp on a whole minute")
    return moment.astimezone(UTC)


def _units(text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise TraceError(
            f"{where}: got {text!r}; expected a number of capacity units per second >= 0"
        )
    return value


def read_csv(path: str | Path) -> Trace:
    """Read ``timestamp,read,write`` rows: ISO-8601 UTC, one per minute, units per second."""
    path = Path(path)
    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise TraceError(f"{path}: cannot be read: {exc.strerror}") from None
    reads: list[float] = []
    writes: list[float] = []
    start: datetime | None = None
    with handle:
        rows = csv.reader(handle)
        header = next(rows, None)
        if header is None:
            raise TraceError(
                f"{path} line 1: the file is empty; expected the header {','.join(CSV_HEADER)}"
            )
        if [h.strip() for h in header] != CSV_HEADER:
            raise TraceError(
                f"{path} line 1: got header {','.join(header)!r}; expected {','.join(CSV_HEADER)!r}"
            )
        for row in rows:
            line = rows.line_num
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) != len(CSV_HEADER):
                raise TraceError(
                    f"{path} line {line}: got {len(row)} columns; expected 3 "
                    f"({','.join(CSV_HEADER)})"
                )
            moment = _timestamp(row[0], f"{path} line {line}, column timestamp")
            expected = None if start is None else start + len(reads) * MINUTE
            if start is None:
                start = moment
            elif moment != expected:
                assert expected is not None
                raise TraceError(
                    f"{path} line {line}, column timestamp: got {row[0]!r}; "
                    f"expected {expected:%Y-%m-%dT%H:%M:%SZ} (rows are one minute "
                    f"apart, in order, without gaps)"
                )
            reads.append(_units(row[1], f"{path} line {line}, column read"))
            writes.append(_units(row[2], f"{path} line {line}, column write"))
    if start is None:
        raise TraceError(f"{path} line 2: no data rows; expected at least one row after the header")
    return Trace(path.name, start, {(None, "read"): reads, (None, "write"): writes})
