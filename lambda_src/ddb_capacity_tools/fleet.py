"""Runs in: workstation (``ddb-capacity advise --all-tables --report``), advisor report
Lambda.

The fleet report: one row per table of an account and Region, from ``advise``'s per-table
documents (`advise.Advice.as_json`, `advise.Failure.as_json`): the option
recommended and its dollars a month, the current settings' dollars a month, the dollars
saved a month, the refused units a month of both and the refusals avoided, the reason, and
the table class advised (empty when the table's size was unknown).
A table that failed is listed with its reason; a table the nightly run has no result for is
listed as missing. Current settings that could not be read are unknown: their savings are
empty, never zero.

The report's rows and totals are defined in `fleet_rows`. Written as ``report.csv``,
``report.json`` and ``report.html``, the fleet page its caller renders from the same
report (`page.fleet_page`: the totals and one row per table, sortable and filterable, each
linked to the table's own page under ``tables/``), with those table pages when given, to a
directory or an S3 prefix. Every table name and reason is untrusted: the page escapes
them, CSV cells that a spreadsheet would read as a formula are quoted with a leading
``'``.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ddb_capacity_runtime.aws.error_codes import NO_SUCH_BUCKET, describe_error, error_code
from ddb_capacity_runtime.core.validators import is_number

from .advise import MONTH_HOURS, shown
from .fleet_rows import Report as Report
from .fleet_rows import Row as Row
from .simulator.table_class import TABLE_CLASSES
from .tool_errors import ReportError as ReportError

__all__ = [
    "COLUMNS",
    "FILES",
    "Destination",
    "Report",
    "ReportError",
    "Row",
    "as_csv",
    "as_json",
    "build",
    "contents",
    "destination",
    "put_s3",
    "refused_figures",
    "rows_of",
    "write",
]

COLUMNS = (
    "table",
    "index",
    "status",
    "recommended",
    "usd_per_month_recommended",
    "current",
    "usd_per_month_current",
    "usd_saved_per_month",
    "refused_per_month_current",
    "refused_per_month_recommended",
    "refusals_avoided_per_month",
    "reason",
    "table_class",
)
"""The report's columns, in CSV order."""
FILES = {
    "report.csv": "text/csv; charset=utf-8",
    "report.json": "application/json",
    "report.html": "text/html; charset=utf-8",
}
"""What `write` writes, and the media type of each."""
SHOWN = 500
"""A text cell (name, policy, reason) is cut to this many characters."""
BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
"""S3's bucket names: 3 to 63 of a-z 0-9 . - starting and ending with a letter or digit."""
FORMULA = ("=", "+", "-", "@", "\t", "\r")
"""Characters a spreadsheet reads as the start of a formula."""
LARGEST = 1e15
"""The largest figure (dollars or refused units a month) one table's result may carry. A result is
untrusted: larger ones are refused, so no sum or difference of them can overflow to infinity, which
JSON cannot hold."""


def _text(value: object) -> str:
    """An untrusted value as text: control characters escaped, cut to `SHOWN`."""
    return shown(value if isinstance(value, str) else repr(value), SHOWN)


def _number(value: object) -> float | None:
    """A number from 0 to `LARGEST` as a float (a month's dollars or refused units are
    never below zero); None for anything else (a negative number, NaN, infinity, an
    integer too large for a float, a bool, text)."""
    return float(value) if is_number(value, 0, LARGEST) else None


def refused_figures(doc: Mapping[str, Any]) -> str | None:
    """Why an advised result's figures cannot be reported (one that is there but is not a
    number from 0 to `LARGEST`), or None when they can."""
    if doc.get("status") != "advised":
        return None
    options = doc.get("options")
    for place in [*(options if isinstance(options, list) else []), doc.get("current")]:
        for name in ("usd_per_month", "refused_per_month"):
            value = place.get(name) if isinstance(place, Mapping) else None
            if value is not None and _number(value) is None:
                return (
                    f"the result's {name} is {_text(value)[:40]}; expected a number from 0 "
                    f"to {LARGEST:.0e}"
                )
    return None


def _option(doc: Mapping[str, Any], policy: object) -> Mapping[str, Any]:
    options = doc.get("options")
    for o in options if isinstance(options, list) else []:
        if isinstance(o, dict) and o.get("policy") == policy:
            return o
    return {}


def _advised(doc: Mapping[str, Any], table: str, index: str | None) -> Row:
    picked = doc.get("recommended")
    option = _option(doc, picked)
    usd, refused = _number(option.get("usd_per_month")), _number(option.get("refused_per_month"))
    if usd is None or refused is None:
        return Row(table, index, "failed", reason="the result has no figures for its option")
    now = doc.get("current")
    now = now if isinstance(now, dict) else {}
    now_usd, now_refused = _number(now.get("usd_per_month")), _number(now.get("refused_per_month"))
    known = now_usd is not None and now_refused is not None
    reason = _text(doc.get("reason", ""))
    if not known:
        why = now.get("reason") or "not read"
        reason = f"current settings unknown: {_text(why)}. {reason}"
    return Row(
        table,
        index,
        "advised",
        _text(picked),
        usd,
        _text(now.get("policy", "unknown")) if known else "unknown",
        now_usd,
        round(now_usd - usd, 2) if known else None,  # type: ignore[operator]
        now_refused,
        refused,
        now_refused - refused if known else None,  # type: ignore[operator]
        reason,
        _table_class(doc.get("table_class")),
    )


def _table_class(advice: object) -> str | None:
    """The class an advised result recommends, if it is one DynamoDB has (untrusted)."""
    picked = advice.get("recommended") if isinstance(advice, Mapping) else None
    return picked if picked in TABLE_CLASSES else None


def rows_of(
    docs: Sequence[Mapping[str, Any]],
    missing: Sequence[str] = (),
    never_sent: Mapping[str, str] | None = None,
) -> list[Row]:
    """The report's rows from ``advise``'s per-table documents (in their order), then the
    ``missing`` tables: those in ``never_sent`` (table: the error) were never sent for
    advice, the others' advice did not finish in time. A document not shaped as ``advise``
    writes it is a failed row."""
    never_sent = never_sent or {}
    rows = []
    for doc in docs:
        table = _text(doc.get("table", "?")) if isinstance(doc, Mapping) else "?"
        index = doc.get("index") if isinstance(doc, Mapping) else None
        index = _text(index) if index is not None else None
        status = doc.get("status") if isinstance(doc, Mapping) else None
        refused = refused_figures(doc) if isinstance(doc, Mapping) else None
        if refused is not None:
            rows.append(Row(table, index, "failed", reason=refused))
        elif status == "advised":
            rows.append(_advised(doc, table, index))
        elif status == "failed":
            rows.append(Row(table, index, "failed", reason=_text(doc.get("reason", ""))))
        else:
            rows.append(Row(table, index, "failed", reason="the result is not advise's"))
    rows += [
        Row(_text(t), None, "missing", reason=_missing_reason(never_sent.get(t))) for t in missing
    ]
    return rows


def _missing_reason(never_sent: str | None) -> str:
    """Why a table has no result: never sent for advice (the list step's error), or its advice
    did not finish in time."""
    if never_sent is None:
        return "no result: its advice did not finish in time"
    return f"no result: it was never sent for advice ({_text(never_sent)})"


def build(
    results: Sequence[Any],
    about: Mapping[str, Any],
    missing: Sequence[str] = (),
    reservation: dict[str, Any] | None = None,
    never_sent: Mapping[str, str] | None = None,
) -> Report:
    """The report of ``advise``'s results (objects with ``as_json()``, or their
    documents), ``missing`` tables listed after them (`rows_of`: ``never_sent``, those
    never sent for advice, with the error); ``about`` says what was advised;
    ``reservation``, the fleet's reservation plan when one was made."""
    docs = [r if isinstance(r, Mapping) else r.as_json() for r in results]
    return Report(rows_of(docs, missing, never_sent), dict(about), reservation)


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.2f}"
    text = str(value)
    return "'" + text if text.startswith(FORMULA) else text


def as_csv(report: Report) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in report.rows:
        writer.writerow([_cell(getattr(row, c)) for c in COLUMNS])
    return out.getvalue()


def as_json(report: Report) -> str:
    return json.dumps(
        {
            **report.about,
            "month_hours": MONTH_HOURS,
            "totals": report.totals(),
            **({} if report.reservation is None else {"reservation": report.reservation}),
            "tables": [asdict(r) for r in report.rows],
        },
        indent=1,
        allow_nan=False,
    )


def contents(report: Report, html: str, pages: Mapping[str, str] | None = None) -> dict[str, str]:
    """The three files' contents, by name: ``report`` as CSV and JSON, ``html`` (its fleet
    page, `page.fleet_page`, rendered by the caller) as ``report.html``; then ``pages``
    (each table's page, by its name under ``tables/``)."""
    return {
        "report.csv": as_csv(report),
        "report.json": as_json(report),
        "report.html": html,
        **(pages or {}),
    }


@dataclass(frozen=True)
class Destination:
    """A local directory (``bucket`` None) or an S3 bucket and key prefix."""

    path: str
    bucket: str | None = None


def destination(text: str) -> Destination:
    """``--report``'s value: ``s3://BUCKET[/PREFIX]`` or a local directory."""
    if not text.startswith("s3://"):
        if not text.strip():
            raise ReportError("--report: got ''; expected a directory or s3://BUCKET/PREFIX")
        return Destination(text)
    bucket, _, prefix = text[5:].partition("/")
    if not BUCKET.fullmatch(bucket):
        raise ReportError(
            f"--report: got {_text(text)!r}; expected s3://BUCKET/PREFIX with a bucket name of "
            "3 to 63 lowercase letters, digits, dots and hyphens"
        )
    return Destination(prefix.strip("/"), bucket)


def check_bucket(where: Destination, made_s3: Callable[[], Any]) -> None:
    """Before any table is advised: a report's bucket that does not exist is refused now,
    not after the advice (hours, on a fleet). Any other answer (a bucket this identity may
    not list may still take the files) waits for the writing, at the end."""
    if where.bucket is None:
        return
    try:
        made_s3().head_bucket(Bucket=where.bucket)
    except ClientError as exc:
        if error_code(exc) in NO_SUCH_BUCKET:
            raise ReportError(
                f"--report: s3://{where.bucket}/{where.path}: no such bucket "
                f"({describe_error(exc)}): create it, or give another"
            ) from None
    except BotoCoreError:
        pass  # told when the report is written, with the advice kept


def put_s3(
    s3: Any,
    bucket: str,
    prefix: str,
    report: Report,
    html: str,
    pages: Mapping[str, str] | None = None,
) -> list[str]:
    """The three files (`contents`: ``html``, the fleet page) and ``pages`` under
    ``prefix`` in ``bucket``; their keys."""
    keys = []
    for name, body in contents(report, html, pages).items():
        key = f"{prefix}/{name}" if prefix else name
        kind = FILES.get(name, FILES["report.html"])
        s3.put_object(Bucket=bucket, Key=key, Body=body.encode(), ContentType=kind)
        keys.append(key)
    return keys


def write(
    report: Report,
    html: str,
    where: Destination,
    made_s3: Callable[[], Any],
    pages: Mapping[str, str] | None = None,
) -> list[str]:
    """The three files (`contents`: ``html``, the fleet page) and ``pages`` (each table's
    page by its name under ``tables/``) in the directory (made if need be) or under the S3
    prefix."""
    if where.bucket is not None:
        try:
            return put_s3(made_s3(), where.bucket, where.path, report, html, pages)
        except (BotoCoreError, ClientError) as exc:
            raise ReportError(
                f"--report: s3://{where.bucket}/{where.path}: {describe_error(exc)}"
            ) from None
    directory = Path(where.path)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, body in contents(report, html, pages).items():
        (directory / name).parent.mkdir(exist_ok=True)
        (directory / name).write_text(body, encoding="utf-8")
        written.append(str(directory / name))
    return written
