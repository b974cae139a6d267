"""Runs in: workstation (the `ddb-capacity` command).

Traffic traces: demand per minute, in capacity units per second, for each dimension of
one table and its GSIs; read from a CSV file or made by a built-in scenario."""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..tool_errors import TraceError as TraceError
from ..tool_errors import printable

MINUTE = timedelta(minutes=1)
Key = tuple["str | None", str]
"""(index, dimension): index None for the table itself, dimension "read" or "write"."""
CSV_HEADER = ["timestamp", "read", "write"]
MAX_DEMAND = 1_000_000
"""The most demand a CSV trace may have, in units per second: the largest ``--max-capacity``."""
FIRST_TIME = datetime(1970, 1, 1, tzinfo=UTC)
"""The span of a CSV trace's timestamps: far enough from datetime's limits (years 1 and 9999) for
the warm-up before the trace and the minutes after it."""
LAST_TIME = datetime(2999, 12, 31, 23, 59, tzinfo=UTC)
SHOWN = 200
"""A value quoted in an error is cut to this many characters."""
TIMESTAMP = "an ISO-8601 UTC timestamp such as 2026-01-05T13:00:00Z"
MAX_LINE_CHARS = 4 * csv.field_size_limit()
"""The longest line a CSV trace may have: more than a row of three fields each at csv's own
limit (a longer field is named by its column), so a longer line is not a trace's (a device
such as /dev/zero has no line end at all)."""
UNITS = "a number of capacity units per second"


def key_label(key: Key) -> str:
    """``read``/``write`` for the table, ``INDEX:read`` for a GSI."""
    index, dimension = key
    return dimension if index is None else f"{index}:{dimension}"


@dataclass(frozen=True)
class Trace:
    """Demand per minute from ``start`` (UTC, on a whole minute), per dimension.

    ``schedule`` is the scenario's own serialized schedule (see `schedules`), used by
    the ``scheduled`` policy when no schedule file is given. ``key_skew`` is the traffic's
    own hot key (its share of the requests, `partitions.HotPartition`), used when the model's
    ``key_skew`` is None. ``key_range``, per dimension and minute, is the part of the demand
    that the table refused as key-range throttles (from a table's history, where DynamoDB
    published the throttles by cause): the model refuses it again whatever the capacity;
    None: not known.
    """

    name: str
    start: datetime
    demand: dict[Key, list[float]]
    schedule: list[dict[str, Any]] | None = None
    notes: str = ""
    key_skew: float = 0.0
    key_range: dict[Key, list[float]] | None = None

    @property
    def minutes(self) -> int:
        return len(next(iter(self.demand.values()))) if self.demand else 0

    def time(self, minute: int) -> datetime:
        return self.start + minute * MINUTE


def cut(trace: Trace, end: int) -> Trace:
    """``trace``'s minutes before ``end`` (all of them when it is shorter): its demand and
    its key-range refusals alike."""
    return replace(
        trace,
        demand={k: v[:end] for k, v in trace.demand.items()},
        key_range=None
        if trace.key_range is None
        else {k: v[:end] for k, v in trace.key_range.items()},
    )


def _shown(text: str) -> str:
    """``text`` quoted for an error message, in at most `SHOWN` characters (and its
    length when cut); bytes that are not UTF-8 are shown as bytes."""
    value: str | bytes = text
    if _not_utf8(text):
        value = text.encode("utf-8", "surrogateescape")
    cut = value[:SHOWN]
    while len(repr(cut)) > SHOWN:
        cut = cut[:-1]
    return repr(cut) if cut == value else f"{cut!r}... ({len(value):,} characters)"


def _not_utf8(text: str) -> bool:
    """Whether ``text`` holds bytes that were not UTF-8 (decoded with ``surrogateescape``)."""
    return not text.isascii() and any("\udc80" <= c <= "\udcff" for c in text)


def _timestamp(text: str, where: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise TraceError(f"{where}: got {_shown(text)}; expected {TIMESTAMP}") from None
    if moment.tzinfo is None:  # local time or UTC? Never guessed
        raise TraceError(
            f"{where}: got {_shown(text)}; expected a timestamp with its UTC offset (Z or "
            f"+00:00): one without could be any time zone's"
        )
    if moment.utcoffset() != timedelta(0):
        raise TraceError(f"{where}: got {_shown(text)}; expected a UTC timestamp (Z or +00:00)")
    if moment.second or moment.microsecond:
        raise TraceError(f"{where}: got {_shown(text)}; expected a timestamp on a whole minute")
    if not FIRST_TIME <= moment <= LAST_TIME:
        raise TraceError(
            f"{where}: got {_shown(text)}; expected a timestamp from "
            f"{FIRST_TIME:%Y-%m-%dT%H:%M:%SZ} to {LAST_TIME:%Y-%m-%dT%H:%M:%SZ}"
        )
    return moment.astimezone(UTC)


def _units(text: str, where: str, max_capacity: int | None) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if math.isnan(value) or value < 0:
        raise TraceError(f"{where}: got {_shown(text)}; expected {UNITS} >= 0")
    if max_capacity is not None and value > max_capacity:
        raise TraceError(
            f"{where}: got {_shown(text)}; expected at most --max-capacity ({max_capacity}) "
            f"capacity units per second"
        )
    if value > MAX_DEMAND:
        raise TraceError(
            f"{where}: got {_shown(text)}; expected at most {MAX_DEMAND:,} capacity units "
            f"per second (the largest --max-capacity)"
        )
    return value


def _split(line: str) -> list[str]:
    """The fields of one CSV line, roughly as `csv` would split it: for a line it refuses
    (a field over its size limit), to say which field is at fault."""
    fields: list[str] = []
    field: list[str] = []
    quoted = False
    for char in line.rstrip("\r\n"):
        if char == '"':
            quoted = not quoted
        elif char == "," and not quoted:
            fields.append("".join(field))
            field = []
        else:
            field.append(char)
    return [*fields, "".join(field)]


def _parse(line: str) -> tuple[list[str], int | None]:
    """One line's fields, and csv's field size limit if a field is over it (else None)."""
    try:
        return next(csv.reader([line]), []), None
    except csv.Error:  # of one line read leniently, only a field over the size limit
        return _split(line), csv.field_size_limit()


def _text(row: list[str], limit: int | None, where: str) -> None:
    """Refuse a field of a row over csv's size ``limit`` or holding bytes that are not UTF-8."""
    for name, text in zip(CSV_HEADER, row, strict=True):
        if limit is not None and len(text) > limit:
            problem = f"at most {limit:,} characters"
        elif _not_utf8(text):
            problem = "UTF-8 text"
        else:
            continue
        allowed = TIMESTAMP if name == "timestamp" else UNITS
        raise TraceError(
            f"{where}, column {name}: got {_shown(text)}; expected {problem} ({allowed})"
        )


def _bounded_lines(handle: Any, name: str) -> Iterator[str]:
    """The lines of ``handle`` (the file ``name``, as printed), each read up to
    `MAX_LINE_CHARS`: a longer one is refused with its line number, so no file is read
    without bound."""
    number = 0
    while True:
        text = handle.readline(MAX_LINE_CHARS + 1)
        if not text:
            return
        number += 1
        if len(text) > MAX_LINE_CHARS:
            raise TraceError(
                f"{name} line {number}: longer than {MAX_LINE_CHARS:,} characters; expected "
                f"rows of {','.join(CSV_HEADER)}"
            )
        yield text


def read_csv(path: str | Path, max_capacity: int | None = None) -> Trace:
    """Read ``timestamp,read,write`` rows: ISO-8601 UTC (``Z`` or ``+00:00``: a timestamp
    without an offset is refused), one per minute, units per second. A UTF-8 byte-order
    mark before the header is skipped.

    Demand is at most ``max_capacity`` (``--max-capacity``), when given, and at most
    `MAX_DEMAND`; timestamps are from `FIRST_TIME` to `LAST_TIME`.
    """
    path = Path(path)
    name = printable(path)
    try:
        # utf-8-sig: a byte-order mark, as spreadsheets save one, is not part of the header
        handle = path.open(newline="", encoding="utf-8-sig", errors="surrogateescape")
    except OSError as exc:
        raise TraceError(
            f"{name}: cannot be read ({exc.strerror}); expected a CSV file of "
            "timestamp,read,write rows"
        ) from None
    reads: list[float] = []
    writes: list[float] = []
    start: datetime | None = None
    with handle:
        lines = enumerate(_bounded_lines(handle, name), start=1)
        first = next(lines, None)
        if first is None:
            raise TraceError(
                f"{name} line 1: the file is empty; expected the header {','.join(CSV_HEADER)}"
            )
        header, _ = _parse(first[1])
        if [h.strip() for h in header] != CSV_HEADER:
            raise TraceError(
                f"{name} line 1: got header {_shown(','.join(header))}; "
                f"expected {','.join(CSV_HEADER)!r}"
            )
        for line, text in lines:
            row, limit = _parse(text)
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) != len(CSV_HEADER):
                raise TraceError(
                    f"{name} line {line}: got {len(row)} columns; expected 3 "
                    f"({','.join(CSV_HEADER)})"
                )
            _text(row, limit, f"{name} line {line}")
            moment = _timestamp(row[0], f"{name} line {line}, column timestamp")
            expected = None if start is None else start + len(reads) * MINUTE
            if start is None:
                start = moment
            elif moment != expected:
                assert expected is not None
                raise TraceError(
                    f"{name} line {line}, column timestamp: got {_shown(row[0])}; "
                    f"expected {expected:%Y-%m-%dT%H:%M:%SZ} (rows are one minute "
                    f"apart, in order, without gaps)"
                )
            reads.append(_units(row[1], f"{name} line {line}, column read", max_capacity))
            writes.append(_units(row[2], f"{name} line {line}, column write", max_capacity))
    if start is None:
        raise TraceError(f"{name} line 2: no data rows; expected at least one row after the header")
    return Trace(printable(path.name), start, {(None, "read"): reads, (None, "write"): writes})
