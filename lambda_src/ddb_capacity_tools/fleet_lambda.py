"""Runs in: advisor Lambda (``FleetAdvisor``'s function, `advisor_handler`).

The nightly fleet report, on SQS to Lambda, in three steps of one function:

- the **list** step (an EventBridge schedule) lists the account's tables, writes the run's
  manifest ``runs/<run-id>/manifest.json`` and the pointer ``runs/latest.json``, and sends
  one SQS message per table (SendMessageBatch, 10 a call);
- the **worker** step (the queue's event source, one message a call) advises its table as
  ``ddb-capacity advise`` does ([`advise.advise_one`][], current settings included) and
  writes ``runs/<run-id>/tables/<table>.json`` and the table's page beside it,
  ``runs/<run-id>/tables/<table>.html``;
- the **report** step (a second schedule, a delay after the first) reads the manifest and every
  table's result and writes ``runs/<run-id>/report.csv|json|html`` and the same under
  ``latest/``, listing the tables with no result as missing; the fleet page
  (``report.html``) links each table's page.

Every table is its own fault domain (its failure is its result, the others go on). A
message is untrusted input: its run id and table name are checked, and a message that is
not one is counted and dropped (retrying it would not help). Every failure is counted as
an EMF metric (``Failures``, ``TablesMissing``, ...), which the construct alarms on; a
worker that cannot write its result returns the message as a batch item failure, so SQS
retries it and, after the last retry, moves it to the dead-letter queue.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from botocore.exceptions import ClientError

from ddb_capacity_runtime.aws.error_codes import NO_SUCH_KEY, describe_error, error_code
from ddb_capacity_runtime.aws.queue import why_unsent
from ddb_capacity_runtime.core.names import is_table_name
from ddb_capacity_runtime.core.untrusted import UntrustedJSONError, parse_json
from ddb_capacity_runtime.core.validators import is_whole
from ddb_capacity_runtime.events import emf_record, emit_metrics, log_event

from . import fleet, page
from .advise import IDLE, Failure, Setup, advise_one, list_tables, shown
from .fleet_settings import (
    MAX_DAYS,
    NAMESPACE,
    PREFIX,
    REPORT_BUCKET_DIMENSION,
    AdvisorSettings,
    run_id_of,
    time_of,
)
from .simulator.candidates import CANDIDATES
from .simulator.ensemble import settings_of
from .simulator.params import ModelParams
from .simulator.progress import Progress

__all__ = [
    "advise_message",
    "advisor_handler",
    "lister_handler",
    "list_run",
    "report_handler",
    "report_run",
    "worker_handler",
]

MAX_OBJECT = 1_000_000
"""A result read is cut at this many bytes (untrusted: written by the worker, but the bucket is
the only boundary)."""
MAX_LIST = 16_000_000
"""A run's manifest or its record of unsent tables read is cut at this many bytes: each lists up
to every table of the Region (DynamoDB's quota, 2,500 tables by default, can be raised; 60,000
names of 255 characters fit)."""
MAX_MESSAGE_CHARS = 4096
"""The largest worker message read (a run id and a table name take under 400 characters)."""
READERS = 16
"""GetObject calls the report makes at once."""
ENSEMBLE = "plausible"
"""The ensemble every table is advised under."""


def _metrics(values: Mapping[str, float]) -> None:
    bucket = os.environ.get(f"{PREFIX}BUCKET", "").strip() or None
    record = emf_record(
        NAMESPACE, values, time.time(), store=bucket, dimension=REPORT_BUCKET_DIMENSION
    )
    emit_metrics(record)


def _key(run_id: str, name: str) -> str:
    return f"runs/{run_id}/{name}"


UNSENT = "unsent.json"
"""The run's tables the lister could not send (``{error: [table, ...]}``), under the run."""


def _put_json(s3: Any, bucket: str, key: str, doc: Any) -> None:
    body = json.dumps(doc).encode()
    s3.put_object(Bucket=bucket, Key=key, Body=body, ContentType="application/json")


def _get_json(s3: Any, bucket: str, key: str, limit: int = MAX_OBJECT) -> Any:
    """The object's JSON, read up to ``limit`` bytes (larger: a ValueError naming the
    key); None when there is no such key."""
    try:
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read(limit + 1)
    except ClientError as exc:
        if error_code(exc) in NO_SUCH_KEY:
            return None
        raise
    if len(body) > limit:
        raise ValueError(f"{key}: larger than {limit:,} bytes")
    return parse_json(body.decode(errors="replace"), key, max_chars=limit)


# ------------------------------------------------------------------------------ lister


def list_run(
    dynamodb: Any, s3: Any, sqs: Any, settings: AdvisorSettings, moment: datetime
) -> dict[str, int]:
    """One run at ``moment``: the manifest, the pointer, a message per table. Names that
    are not table names are kept in the manifest as refused (the report lists them); the
    tables whose message could not be sent go to the run's ``unsent.json`` by error (only
    when there are some: the report gives each its true reason)."""
    run_id = run_id_of(moment)
    names = list_tables(dynamodb)
    tables = [n for n in names if is_table_name(n)]
    refused = [shown(n) for n in names if not is_table_name(n)]
    manifest = {"run_id": run_id, "days": settings.days, "tables": tables, "refused": refused}
    _put_json(s3, settings.bucket, _key(run_id, "manifest.json"), manifest)
    _put_json(s3, settings.bucket, "runs/latest.json", {"run_id": run_id})
    not_sent: dict[str, str] = {}
    for start in range(0, len(tables), 10):
        not_sent |= _send(sqs, settings.queue_url, run_id, tables[start : start + 10])
    failures = len(not_sent) + len(refused)
    if not_sent:
        failures += _record_unsent(s3, settings.bucket, run_id, not_sent)
    return {"TablesListed": len(tables), "Failures": failures}


def _record_unsent(s3: Any, bucket: str, run_id: str, not_sent: Mapping[str, str]) -> int:
    """Write the run's ``unsent.json`` (each error, and the tables it kept from being sent);
    1 when it cannot be written (logged: the report then gives those tables the reason of
    one not finished), else 0."""
    by_error: dict[str, list[str]] = {}
    for table, error in not_sent.items():
        by_error.setdefault(error, []).append(table)
    try:
        _put_json(s3, bucket, _key(run_id, UNSENT), by_error)
    except Exception as exc:  # the sends' failures are counted already; this one too
        log_event("unsent_not_recorded", level=logging.ERROR, error=shown(describe_error(exc)))
        return 1
    return 0


def _send(sqs: Any, queue_url: str, run_id: str, tables: Sequence[str]) -> dict[str, str]:
    """One SendMessageBatch of ``tables`` (the failed entries, or the whole call when it
    raises, retried once); each table not sent (it will be missing from the report), with
    the error. A call that fails is this batch's failure alone: the next batches are
    sent."""
    entries = [
        {"Id": str(n), "MessageBody": json.dumps({"run_id": run_id, "table": t})}
        for n, t in enumerate(tables)
    ]
    errors: dict[str, str] = {}
    for _ in range(2):
        try:
            answer = sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)
        except Exception as exc:  # this batch's tables are not sent; the others still are
            errors = dict.fromkeys((e["Id"] for e in entries), shown(describe_error(exc)))
            continue
        left = why_unsent(answer, [e["Id"] for e in entries])
        entries = [e for e in entries if e["Id"] in left]
        if not entries:
            return {}
        errors = {i: _failed_code(why) for i, why in left.items()}
    not_sent = {json.loads(e["MessageBody"])["table"]: errors[e["Id"]] for e in entries}
    for error in sorted(set(not_sent.values())):
        tables_left = [t for t, e in not_sent.items() if e == error]
        log_event("messages_not_sent", level=logging.ERROR, tables=tables_left, error=error)
    return not_sent


def _failed_code(why: str | None) -> str:
    """Why SendMessageBatch did not send an entry: the code its answer's ``Failed`` list
    gives (`aws.queue.why_unsent`), or that it did not list the entry as sent."""
    if why is None:
        return "SendMessageBatch did not list it as sent"
    return shown(f"SendMessageBatch failed it: {why}")


def lister_handler(event: Mapping[str, Any], context: Any = None) -> dict[str, int]:
    """EventBridge's scheduled event: its ``time`` names the run."""
    import boto3

    settings = AdvisorSettings.from_env(os.environ)
    moment = _event_time(event)
    try:
        counts = list_run(
            boto3.client("dynamodb"), boto3.client("s3"), boto3.client("sqs"), settings, moment
        )
    except Exception as exc:
        _metrics({"Failures": 1})
        log_event("list_failed", level=logging.ERROR, error=shown(describe_error(exc)))
        raise
    _metrics(counts)
    log_event("listed", run_id=run_id_of(moment), counts=counts)
    return counts


def _event_time(event: Mapping[str, Any]) -> datetime:
    """The scheduled event's time, to the minute (now when it has none)."""
    text = event.get("time") if isinstance(event, Mapping) else None
    try:
        moment = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        moment = datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.replace(second=0, microsecond=0)


# ------------------------------------------------------------------------------ worker


def logged_progress(**fields: Any) -> Progress:
    """Progress logged as lines, as the command line writes them to a file (one at the start,
    one every few percent, one at the end): ``progress`` events, the line their message and
    their ``progress`` field, with ``fields``."""
    return Progress.logged(
        lambda line: log_event("progress", message=line, progress=line, **fields)
    )


def advise_message(body: object, clients: Mapping[str, Any], settings: AdvisorSettings) -> str:
    """Advise the table one message names and write its result: ``advised``, ``idle``,
    ``failed`` (the table's own failure, written as its result) or ``invalid`` (not a
    message of this advisor: nothing written). Writing the result may raise."""
    try:
        message = parse_json(body, "fleet message", max_chars=MAX_MESSAGE_CHARS)
    except UntrustedJSONError:
        message = None
    message = message if isinstance(message, dict) else {}
    run_id, table = message.get("run_id"), message.get("table")
    end = time_of(run_id)
    if end is None or not is_table_name(table):
        log_event(
            "invalid_message",
            level=logging.ERROR,
            run_id=shown(repr(run_id), 60),
            table=shown(repr(table), 300),
        )
        return "invalid"
    assert isinstance(run_id, str) and isinstance(table, str)
    params = ModelParams()
    setup = Setup(
        settings.days,
        end,
        partial(settings_of, ENSEMBLE, params),
        params,
        settings.candidate_list or CANDIDATES,
        workers=1,  # Lambda has no shared memory for a process pool
        current=True,
    )
    result = advise_one(
        clients["cloudwatch"],
        clients["dynamodb"],
        table,
        None,
        setup,
        clients["autoscaling"],
        logged_progress(run_id=run_id, table=table),
    )
    doc = {"run_id": run_id, **result.as_json()}
    _put_json(clients["s3"], settings.bucket, _key(run_id, f"tables/{table}.json"), doc)
    body = page.table_page(result, {"run_id": run_id, "days": settings.days})
    clients["s3"].put_object(
        Bucket=settings.bucket,
        Key=_key(run_id, page.TABLE_PAGES + page.page_name(table)),
        Body=body.encode(),
        ContentType=fleet.FILES["report.html"],
    )
    if isinstance(result, Failure):
        return "idle" if result.reason.startswith(IDLE) else "failed"
    return "advised"


_clients: dict[str, Any] = {}
"""The worker's clients, made once per execution environment."""


def worker_handler(event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
    """An SQS event (batch size 1): a message whose result could not be written is a batch
    item failure, retried by SQS and then moved to the dead-letter queue."""
    import boto3

    settings = AdvisorSettings.from_env(os.environ)
    if not _clients:
        for service, name in (
            ("cloudwatch", "cloudwatch"),
            ("dynamodb", "dynamodb"),
            ("application-autoscaling", "autoscaling"),
            ("s3", "s3"),
        ):
            _clients[name] = boto3.client(service)  # type: ignore[call-overload]
    counts = {"TablesAdvised": 0, "TablesIdle": 0, "TablesFailed": 0, "Failures": 0}
    failures = []
    records = event.get("Records", []) if isinstance(event, Mapping) else []
    for record in records if isinstance(records, list) else []:
        if not isinstance(record, Mapping):  # never from SQS: nothing to retry it by
            counts["Failures"] += 1
            log_event("invalid_record", level=logging.ERROR, record=shown(repr(record), 60))
            continue
        try:
            outcome = advise_message(record.get("body"), _clients, settings)
        except Exception as exc:
            counts["Failures"] += 1
            failures.append({"itemIdentifier": str(record.get("messageId", ""))})
            log_event("result_not_written", level=logging.ERROR, error=shown(describe_error(exc)))
            continue
        key = {"invalid": "Failures"}.get(outcome, f"Tables{outcome.capitalize()}")
        counts[key] += 1
    _metrics(counts)
    return {"batchItemFailures": failures}


# ------------------------------------------------------------------------------ report


def report_run(s3: Any, settings: AdvisorSettings, now: datetime) -> dict[str, int]:
    """The report of the latest run, if it began no longer ago than the report delay plus
    an hour (else a failure: tonight's lister did not run or did not write)."""
    pointer = _get_json(s3, settings.bucket, "runs/latest.json")
    run_id = pointer.get("run_id") if isinstance(pointer, dict) else None
    began = time_of(run_id)
    oldest = now - timedelta(minutes=settings.report_delay_minutes + 60)
    if began is None or began < oldest:
        log_event("no_run", level=logging.ERROR, latest=shown(repr(run_id), 60))
        return {"Failures": 1}
    assert isinstance(run_id, str)
    manifest = _get_json(s3, settings.bucket, _key(run_id, "manifest.json"), MAX_LIST)
    listed = manifest.get("tables") if isinstance(manifest, dict) else None
    if not isinstance(listed, list):
        log_event("no_manifest", level=logging.ERROR, run_id=run_id)
        return {"Failures": 1}
    tables = [t for t in listed if is_table_name(t)]
    refused = manifest.get("refused") or []
    docs, missing, unreadable = _results(s3, settings.bucket, run_id, tables)
    docs += [
        {"table": str(n), "status": "failed", "reason": "not a DynamoDB table name"}
        for n in (refused if isinstance(refused, list) else [])
    ]
    never_sent, unsent_unread = _never_sent(s3, settings.bucket, run_id, set(missing))
    days = manifest.get("days")  # the report shows it: a whole number of days, or nothing
    about = {"run_id": run_id, "days": days if is_whole(days, 1, MAX_DAYS) else None}
    report = fleet.build(docs, about, missing, never_sent=never_sent)
    # the table pages are the workers', under the run: latest/ links to them there
    for prefix, links in (
        (f"runs/{run_id}", page.TABLE_PAGES),
        ("latest", f"../runs/{run_id}/{page.TABLE_PAGES}"),
    ):
        fleet.put_s3(s3, settings.bucket, prefix, report, page.fleet_page(report, links))
    totals = report.totals()  # TablesFailed is the workers' (idle tables are not failures)
    return {
        "TablesReported": totals["tables"],
        "TablesMissing": totals["missing"],
        # results there but not readable, results not listed, and an unsent.json not
        # readable: counted, alarmed
        "Failures": unreadable + unsent_unread,
    }


def _never_sent(s3: Any, bucket: str, run_id: str, missing: set[str]) -> tuple[dict[str, str], int]:
    """The ``missing`` tables the lister could not send, with the error (its ``unsent.json``,
    untrusted: anything else in it is passed over), and 1 when it is there but cannot be
    read (logged: those tables then read as not finished)."""
    try:
        doc = _get_json(s3, bucket, _key(run_id, UNSENT), MAX_LIST)
    except Exception as exc:
        doc, reason = None, shown(describe_error(exc))
    else:
        reason = "" if doc is None or isinstance(doc, dict) else "not a JSON object"
    if reason:
        log_event("unsent_not_read", level=logging.ERROR, run_id=run_id, error=reason)
        return {}, 1
    never_sent = {}
    for error, tables in doc.items() if isinstance(doc, dict) else ():
        for table in tables if isinstance(tables, list) and isinstance(error, str) else ():
            if isinstance(table, str) and table in missing:
                never_sent[table] = shown(error)
    return never_sent, 0


def _results(
    s3: Any, bucket: str, run_id: str, tables: Sequence[str]
) -> tuple[list[Any], list[str], int]:
    """Each table's result (in the manifest's order, named after the manifest: a document
    is untrusted), the tables with none, and how many could not be read or hold a figure
    the report refuses (each a failed row, logged and counted), with 1 more when the
    run's results could not be listed. Only the results the run holds are read
    (`_written`)."""
    written = _written(s3, bucket, _key(run_id, "tables/"))

    def read(table: str) -> tuple[Any, bool]:
        key = _key(run_id, f"tables/{table}.json")
        if written is not None and key not in written:
            return None, False
        try:
            doc = _get_json(s3, bucket, key)
        except Exception as exc:  # one unreadable result fails that table alone
            reason = shown(describe_error(exc))
        else:
            if doc is None:
                return None, False
            found = fleet.refused_figures(doc) if isinstance(doc, dict) else None
            if isinstance(doc, dict) and found is None:
                return {**doc, "table": table}, False
            reason = found or "its result is not a JSON object"
        log_event("result_not_read", level=logging.ERROR, table=table, error=reason)
        return {"table": table, "status": "failed", "reason": reason}, True

    with ThreadPoolExecutor(READERS) as pool:
        found = list(pool.map(read, tables))
    docs = [d for d, _ in found if d is not None]
    missing = [t for t, (d, _) in zip(tables, found, strict=True) if d is None]
    return docs, missing, sum(bad for _, bad in found) + (written is None)


def _written(s3: Any, bucket: str, prefix: str) -> set[str] | None:
    """The keys under ``prefix`` (one ListObjectsV2 call a thousand keys), so a table with
    no result costs no GetObject; None when they cannot be listed (logged and counted as a
    failure: every table's result is then asked for)."""
    keys: set[str] = set()
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            keys.update(str(o.get("Key")) for o in page.get("Contents", []))
    except Exception as exc:
        log_event("results_not_listed", level=logging.ERROR, error=shown(describe_error(exc)))
        return None
    return keys


def report_handler(event: Mapping[str, Any], context: Any = None) -> dict[str, int]:
    import boto3

    settings = AdvisorSettings.from_env(os.environ)
    try:
        from botocore.config import Config

        s3 = boto3.client("s3", config=Config(max_pool_connections=READERS))
        counts = report_run(s3, settings, datetime.now(UTC))
    except Exception as exc:
        _metrics({"Failures": 1})
        log_event("report_failed", level=logging.ERROR, error=shown(describe_error(exc)))
        raise
    _metrics(counts)
    log_event("reported", counts=counts)
    return counts


# ------------------------------------------------------------------------------ the function


STEPS = {"list": lister_handler, "report": report_handler}
"""The scheduled steps, by the ``step`` of the rule's event."""


def advisor_handler(event: Mapping[str, Any], context: Any = None) -> Any:
    """AWS Lambda entry point of the ``FleetAdvisor``: an SQS event advises its table
    (`worker_handler`); a scheduled event ``{"step": "list" | "report", "time": ...}`` runs
    that step. Any other event is counted (``Failures``) and fails the invocation."""
    if isinstance(event, Mapping) and "Records" in event:
        return worker_handler(event, context)
    step = event.get("step") if isinstance(event, Mapping) else None
    handler = STEPS.get(step) if isinstance(step, str) else None
    if handler is None:
        got = shown(repr(step), 60)
        _metrics({"Failures": 1})
        log_event("invalid_event", level=logging.ERROR, step=got)
        raise ValueError(f"step: got {got}; expected 'list' or 'report' (or an SQS event)")
    return handler(event, context)
