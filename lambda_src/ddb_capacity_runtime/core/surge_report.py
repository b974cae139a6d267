"""Runs in: workers (the user's own processes, through the client hook,
[`fast_path.hook`][ddb_capacity_runtime.fast_path.hook]), signals Lambda, stream reader Lambda,
workstation (simulator).

The fast path's one contract: what an application's process reports about the requests it
made (`Report`, one `DimensionReport` per table, GSI and dimension), read by `parse_report`.
A report is untrusted input: every field is bounded and checked, and a report that breaks a
rule is refused whole with a `SurgeReportError` naming the field, the value received and
what is allowed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from ..core.errors import SurgeReportError as SurgeReportError
from .errors import shown
from .names import DIMENSIONS, MAX_TABLE_QUOTA, scope_label
from .validators import is_number, is_whole

SIGNALS_ENV = "CAPACITY_SIGNALS"
"""The environment variable that names the signals function, for the client hook (set on a function
by ``CapacityRequests.grant_signals``)."""


REPORT_VERSION = 1
"""The version of the report's shape this code writes and reads."""


CAUSES = ("provisioned", "key_range", "other", "unknown")
"""Throttle causes a report counts, per attempt: ``provisioned`` (a provisioned-throughput reason),
``key_range`` (a hot partition: more capacity cannot help), ``other`` (account limits, on-demand
maximum, anything else) and ``unknown`` (a ProvisionedThroughputExceeded that gives no reason: an
SDK too old to read DynamoDB's ``ThrottlingReasons``, or an endpoint that sends none)."""


MAX_DIMENSIONS = 42
"""The most dimensions one report may carry: the table's and 20 GSIs', read and write."""


MAX_WINDOW_SECONDS = 60.0
"""The longest and shortest window a report may sum over, in seconds."""


MIN_WINDOW_SECONDS = 0.5


MAX_UNITS_PER_SECOND = float(MAX_TABLE_QUOTA)
"""The most units one process may report consuming per second on one dimension: no dimension serves
more than the largest table quota accepted."""


MAX_REQUESTS_PER_SECOND = 1_000_000.0
"""The most requests, or throttled attempts, one report may count per second."""


MAX_PROCESS_CHARS = 64
"""The longest process id and table name a report may carry (a table name is at most 255)."""


MAX_TABLE_CHARS = 255


PROCESS_ID = re.compile(rf"[A-Za-z0-9._-]{{1,{MAX_PROCESS_CHARS}}}")
"""A process id: 1 to `MAX_PROCESS_CHARS` letters, digits, ``.``, ``_`` or ``-`` (the client hook's
are ``<label>-<pid>-<8 hex digits>``)."""


CLOCK_SKEW_SECONDS = 30.0
"""How far a report's clock may be ahead of, or behind, the signals function's."""


SHOWN_IN_REPORT_ERRORS = 80
"""The most characters of a report's value that a SurgeReportError repeats."""


FRESH_SECONDS = 45.0
"""How long a process's last report counts towards the sum of its dimension."""


@dataclass(frozen=True)
class DimensionReport:
    """What one process saw of one dimension over a report's window: consumed capacity
    units, requests answered, throttled attempts by cause (`CAUSES`), and
    ``failed``: the requests whose last attempt was throttled for provisioned throughput
    (or for no reason given), so never served (a request throttled and then served is in
    ``units`` already)."""

    index: str | None
    dimension: str
    units: float
    requests: int
    throttles: Mapping[str, int] = field(default_factory=dict)
    failed: int = 0

    @property
    def sort_key(self) -> str:
        """The dimension as the state store names it: ``<table|index/NAME>:<read|write>``."""
        return f"{scope_label(self.index)}:{self.dimension}"


@dataclass(frozen=True)
class Report:
    """One process's report on one table: what it saw over the ``seconds`` before
    ``sent`` (seconds since the epoch)."""

    table: str
    process: str
    seconds: float
    sent: float
    dims: tuple[DimensionReport, ...]

    def as_json(self) -> dict[str, Any]:
        """The report as the signals function receives it (`parse_report` reads it)."""
        return {
            "v": REPORT_VERSION,
            "table": self.table,
            "process": self.process,
            "seconds": round(self.seconds, 3),
            "sent": round(self.sent, 3),
            "dims": [
                {
                    "index": d.index,
                    "dimension": d.dimension,
                    "units": round(d.units, 3),
                    "requests": d.requests,
                    "throttles": {c: n for c, n in d.throttles.items() if n},
                    **({"failed": d.failed} if d.failed else {}),
                }
                for d in self.dims
            ],
        }


def _shown(value: object) -> str:
    return shown(value, SHOWN_IN_REPORT_ERRORS)


def _number(raw: Mapping[str, Any], name: str, low: float, high: float, where: str) -> float:
    value = raw.get(name)
    if not is_number(value, low, high):
        raise SurgeReportError(
            f"{where}{name}: got {_shown(value)}; expected a number from {low:g} to {high:g}"
        )
    return float(value)


def _whole(raw: Mapping[str, Any], name: str, high: float, where: str) -> int:
    value = raw.get(name, 0)
    if not is_whole(value, 0, high):
        raise SurgeReportError(
            f"{where}{name}: got {_shown(value)}; expected a whole number from 0 to {high:,.0f}"
        )
    return value


def _name(raw: Mapping[str, Any], name: str, most: int, where: str = "") -> str:
    value = raw.get(name)
    if not isinstance(value, str) or not 0 < len(value) <= most:
        raise SurgeReportError(
            f"{where}{name}: got {_shown(value)}; expected a string of 1 to {most} characters"
        )
    return value


def is_process_id(value: object) -> TypeGuard[str]:
    """Whether ``value`` is a process id (`PROCESS_ID`)."""
    return isinstance(value, str) and PROCESS_ID.fullmatch(value) is not None


def parse_report(raw: object, now: float) -> Report:
    """``raw`` (a decoded JSON report) as a `Report`, checked against the contract
    at ``now`` (seconds since the epoch); a `SurgeReportError` otherwise."""
    if not isinstance(raw, Mapping):
        raise SurgeReportError(f"report: got {_shown(raw)}; expected a JSON object")
    version = raw.get("v")
    if type(version) is not int or version != REPORT_VERSION:
        raise SurgeReportError(f"v: got {_shown(raw.get('v'))}; expected {REPORT_VERSION}")
    table = _name(raw, "table", MAX_TABLE_CHARS)
    process = raw.get("process")
    if not is_process_id(process):
        raise SurgeReportError(
            f"process: got {_shown(process)}; expected 1 to {MAX_PROCESS_CHARS} letters, "
            "digits, '.', '_' or '-'"
        )
    seconds = _number(raw, "seconds", MIN_WINDOW_SECONDS, MAX_WINDOW_SECONDS, "")
    sent = _number(
        raw, "sent", now - FRESH_SECONDS - CLOCK_SKEW_SECONDS, now + CLOCK_SKEW_SECONDS, ""
    )
    dims_raw = raw.get("dims")
    if not isinstance(dims_raw, list) or not 0 < len(dims_raw) <= MAX_DIMENSIONS:
        raise SurgeReportError(
            f"dims: got {_shown(dims_raw)}; expected a list of 1 to {MAX_DIMENSIONS} dimensions"
        )
    dims: list[DimensionReport] = []
    seen: set[str] = set()
    for i, d in enumerate(dims_raw):
        where = f"dims[{i}]."
        if not isinstance(d, Mapping):
            raise SurgeReportError(f"dims[{i}]: got {_shown(d)}; expected a JSON object")
        index = d.get("index")
        if index is not None:
            index = _name(d, "index", MAX_TABLE_CHARS, where)
        dimension = d.get("dimension")
        if dimension not in DIMENSIONS:
            raise SurgeReportError(
                f"{where}dimension: got {_shown(dimension)}; expected one of {DIMENSIONS}"
            )
        units = _number(d, "units", 0, MAX_UNITS_PER_SECOND * seconds, where)
        requests = _whole(d, "requests", MAX_REQUESTS_PER_SECOND * seconds, where)
        throttles_raw = d.get("throttles", {})
        if not isinstance(throttles_raw, Mapping) or not set(throttles_raw) <= set(CAUSES):
            raise SurgeReportError(
                f"{where}throttles: got {_shown(throttles_raw)}; expected an object whose "
                f"keys are among {CAUSES}"
            )
        throttles = {
            c: _whole(throttles_raw, c, MAX_REQUESTS_PER_SECOND * seconds, f"{where}throttles.")
            for c in CAUSES
        }
        failed = _whole(d, "failed", MAX_REQUESTS_PER_SECOND * seconds, where)
        report = DimensionReport(index, dimension, units, requests, throttles, failed)
        if report.sort_key in seen:
            raise SurgeReportError(
                f"dims[{i}]: {report.sort_key} appears twice; expected each dimension once"
            )
        seen.add(report.sort_key)
        dims.append(report)
    return Report(table, process, seconds, sent, tuple(dims))
