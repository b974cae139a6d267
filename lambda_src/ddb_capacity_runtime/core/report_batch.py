"""Runs in: workers (the user's own processes, through the client hook,
[`fast_path.hook`][ddb_capacity_runtime.fast_path.hook]), signals Lambda.

How a process's reports travel to the signals function: many at once, one invocation
carrying the reports of every table due in a round (a batch), at a bounded rate whatever
the number of tables (docs/guides/fast-path.md#how-the-hook-counts).

A batch is untrusted input as its reports are: its shape and size are checked here before
any report in it is read, and each report is then read, and refused or taken, on its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeGuard

from .errors import shown
from .surge import SurgeReportError
from .surge_report import REPORT_VERSION, SHOWN_IN_REPORT_ERRORS
from .untrusted_values import json_chars

BATCH_KEY = "reports"
"""The key of a batch's list of reports: ``{"v": 1, "reports": [report, ...]}``."""
MAX_BATCH_REPORTS = 50
"""The most reports one batch carries: the signals function reads them one after the other
within its timeout (30 s by default), a raise taking about a second."""
MAX_BATCH_CHARS = 240 * 1024
"""The most characters of JSON a batch holds: under Lambda's 256 KB for an asynchronous
invocation's payload."""
MAX_BATCHES_PER_ROUND = 4
"""The most batches a process sends in one round (one round every ``interval`` seconds, at
least 1 s): at most 4 invocations a second and 200 reports a round, whatever the number of
tables; the tables left wait for the next round, their sums still adding up."""


def batch_json(reports: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``reports`` (each a report's JSON object) as one batch, as the signals function
    receives it (`reports_of` reads it)."""
    return {"v": REPORT_VERSION, BATCH_KEY: list(reports)}


def batches(reports: Iterable[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """``reports`` in order, cut into lists that each make a batch of at most
    `MAX_BATCH_REPORTS` reports and `MAX_BATCH_CHARS` characters, both as printed and as the
    signals function measures a batch it reads (`core.untrusted_values.json_chars`, which counts a
    float as 24: a batch sized by its printed text alone could pass that bound there, and be
    refused whole); a report larger than that alone goes alone: the function refuses it, and
    counts it."""
    out: list[list[Mapping[str, Any]]] = []
    chars = 0
    frame = _chars(batch_json([]))
    for report in reports:
        size = _chars(report) + 2  # and its place in the list
        last = out[-1] if out else None
        if last is None or len(last) >= MAX_BATCH_REPORTS or chars + size > MAX_BATCH_CHARS:
            out.append([report])
            chars = frame + size
        else:
            last.append(report)
            chars += size
    return out


def _chars(value: object) -> int:
    """The larger of ``value``'s printed JSON and the signals function's measure of it."""
    return max(len(json.dumps(value)), json_chars(value))


def is_batch(raw: object) -> TypeGuard[Mapping[str, Any]]:
    """Whether ``raw`` (a decoded invocation) is a batch rather than one report."""
    return isinstance(raw, Mapping) and BATCH_KEY in raw


def reports_of(raw: Mapping[str, Any]) -> list[object]:
    """A batch's reports, each still to be read (`core.surge_report.parse_report`); a
    `SurgeReportError` naming the field when the batch itself breaks the contract."""
    version = raw.get("v")
    if type(version) is not int or version != REPORT_VERSION:
        raise SurgeReportError(
            f"v: got {shown(version, SHOWN_IN_REPORT_ERRORS)}; expected {REPORT_VERSION}"
        )
    items = raw.get(BATCH_KEY)
    if not isinstance(items, list) or not 0 < len(items) <= MAX_BATCH_REPORTS:
        raise SurgeReportError(
            f"{BATCH_KEY}: got {shown(items, SHOWN_IN_REPORT_ERRORS)}; expected a list of 1 to "
            f"{MAX_BATCH_REPORTS} reports"
        )
    extra = sorted(str(k) for k in raw if k not in ("v", BATCH_KEY))
    if extra:
        raise SurgeReportError(
            f"batch: got the key {shown(extra[0], SHOWN_IN_REPORT_ERRORS)}; expected only "
            f"'v' and {BATCH_KEY!r}"
        )
    return list(items)
