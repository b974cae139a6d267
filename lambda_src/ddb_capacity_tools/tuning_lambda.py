"""Runs in: nightly tuning Lambda (``NightlyTuning``'s function).

The loop that keeps each table tuned: after the fleet advisor's nightly report, each table
whose target values the scaler owns (``ThrottleAwareScaler(own_target=True)``) is moved
toward its recommendation, within the user's `tuning.Bounds`. The loop writes the target
value a dimension aims at where the scaler reads it, the ``tuned`` attribute of the
dimension's item in the scaler's state store (`ddb_capacity_runtime.aws.store`), with
a conditional write; the scaler's next tick writes it to the target-tracking policy it
owns (`ddb_capacity_runtime.core.ownership`). The loop never writes a scaling policy, a
scalable target or a table, and never switches a billing mode: an on-demand, hybrid or
declared-windows recommendation is logged as advice, with its dollars.

Every table is its own fault domain. The report is untrusted input: a result that cannot
be read changes nothing and is counted (``Unreadable``). Every change is logged
(``target-tuned``: table, index, dimension, old, new, why, run id) and counted
(``TargetsChanged``, or ``TargetsWouldChange`` in a dry run); a table that fails is
counted (``TablesFailed``), a run that cannot start too (``Failures``). A run already
applied (an EventBridge retry) changes nothing again.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ddb_capacity_runtime.aws.error_codes import CONDITION_FAILED, describe_error, error_code
from ddb_capacity_runtime.aws.store import TUNED, tuned_of
from ddb_capacity_runtime.core.names import DIMENSIONS, is_table_name, scope_label
from ddb_capacity_runtime.core.validators import is_number
from ddb_capacity_runtime.events import emf_record, emit_metrics, log_event

from .advise import shown
from .fleet_lambda import _get_json, _key, logged_progress
from .fleet_settings import time_of
from .tuning_rules import (
    FRESH_MINUTES,
    NAMESPACE,
    PREFIX,
    Recommendation,
    TuningSettings,
    read_recommendation,
    step,
)

__all__ = ["COUNTS", "tune_run", "tuning_handler"]

COUNTS = (
    "TargetsChanged",
    "TargetsWouldChange",
    "TargetsKept",
    "BillingAdvice",
    "TablesNotAdvised",
    "Unreadable",
    "TablesFailed",
    "Failures",
)
"""What a run counts (every one is sent, zeros included, so an alarm sees its data)."""


@dataclass
class _Run:
    """One run: the clients, the settings, the run id and the counts so far."""

    s3: Any
    dynamodb: Any
    settings: TuningSettings
    run_id: str
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTS, 0))


AHEAD = timedelta(minutes=5)
"""How far ahead of the loop's clock a run's time may be (clocks apart): a run pointer from
later than that is not a fresh run, it is not one (a counted failure)."""


def tune_run(s3: Any, dynamodb: Any, settings: TuningSettings, now: datetime) -> dict[str, int]:
    """Apply the latest run's recommendations, if it began no longer ago than the report
    delay plus `FRESH_MINUTES` (else a counted failure: nothing changes)."""
    pointer = _get_json(s3, settings.bucket, "runs/latest.json")
    run_id = pointer.get("run_id") if isinstance(pointer, dict) else None
    began = time_of(run_id)
    oldest = now - timedelta(minutes=settings.report_delay_minutes + FRESH_MINUTES)
    if began is None or began < oldest or began > now + AHEAD:
        log_event("no-fresh-run", level=logging.ERROR, latest=shown(repr(run_id), 60))
        return {**dict.fromkeys(COUNTS, 0), "Failures": 1}
    assert isinstance(run_id, str)
    run = _Run(s3, dynamodb, settings, run_id)
    progress, total = logged_progress(run_id=run_id), len(settings.owned)
    progress("tuning", 0, total, "tables")
    for n, (table, spec) in enumerate(settings.owned.items(), 1):
        try:
            _tune_table(run, table, spec)
        except Exception as exc:  # a fault domain: the other tables go on
            run.counts["TablesFailed"] += 1
            log_event(
                "table-not-tuned",
                level=logging.ERROR,
                table=shown(str(table)),
                run_id=run_id,
                error=shown(describe_error(exc)),
            )
        progress("tuning", n, total, "tables")
    return run.counts


def _tune_table(run: _Run, table: str, spec: object) -> None:
    """One table: its recommendation, then each owned dimension stepped toward it."""
    if not is_table_name(table) or not isinstance(spec, Mapping):
        raise ValueError("not a table name with owned target values")
    try:
        doc = _get_json(run.s3, run.settings.bucket, _key(run.run_id, f"tables/{table}.json"))
    except ValueError as exc:  # too large, too deep, not JSON: unreadable (not S3's errors)
        _no_target(run, table, Recommendation(None, None, shown(str(exc)), malformed=True))
        return
    if doc is None:
        run.counts["TablesNotAdvised"] += 1
        log_event("no-recommendation", table=table, run_id=run.run_id, why="no result")
        return
    rec = read_recommendation(doc, table)
    if rec.malformed or rec.target is None:
        _no_target(run, table, rec)
        return
    for index, dimension, configured in _owned_dimensions(spec):
        _tune_dimension(run, table, index, dimension, configured, rec)


def _no_target(run: _Run, table: str, rec: Recommendation) -> None:
    """A recommendation with no target value to apply: unreadable (counted, an error),
    billing advice (logged with its dollars) or one that names none."""
    fields: dict[str, Any] = {
        "table": table,
        "run_id": run.run_id,
        "recommended": rec.policy,
        "why": rec.why,
    }
    if rec.malformed:
        run.counts["Unreadable"] += 1
        log_event("recommendation-unreadable", level=logging.ERROR, **fields)
    elif rec.advice:
        run.counts["BillingAdvice"] += 1
        log_event(
            "billing-advice",
            level=logging.WARNING,
            usd_per_month=rec.usd_per_month,
            usd_per_month_current=rec.usd_per_month_current,
            **fields,
        )
    else:
        run.counts["TablesNotAdvised"] += 1
        log_event("no-recommendation", **fields)


def _owned_dimensions(spec: Mapping[str, Any]) -> Iterator[tuple[str | None, str, float]]:
    """Each owned dimension of a table's owned spec (``SCALER_OWNED_TARGETS``' value):
    ``(index, dimension, configured target value)``."""
    indexes = spec.get("indexes")
    scopes = [(None, spec)] + [
        (i, v) for i, v in (indexes.items() if isinstance(indexes, Mapping) else [])
    ]
    for index, values in scopes:
        for dimension in DIMENSIONS:
            value = values.get(dimension) if isinstance(values, Mapping) else None
            if is_number(value):
                yield index, dimension, float(value)


def _tune_dimension(
    run: _Run, table: str, index: str | None, dimension: str, configured: float, rec: Recommendation
) -> None:
    assert rec.target is not None
    key = {"pk": {"S": table}, "sk": {"S": f"{scope_label(index)}:{dimension}"}}
    item = run.dynamodb.get_item(
        TableName=run.settings.store,
        Key=key,
        ConsistentRead=True,
        ProjectionExpression="#t",
        ExpressionAttributeNames={"#t": TUNED},
    ).get("Item", {})
    kept = item.get(TUNED, {}).get("M", {}) if isinstance(item.get(TUNED), dict) else {}
    tuned = tuned_of(item)
    where: dict[str, Any] = {
        "table": table,
        "index": index,
        "dimension": dimension,
        "run_id": run.run_id,
    }
    if kept.get("run", {}).get("S") == run.run_id:
        run.counts["TargetsKept"] += 1
        log_event("target-kept", **where, target=tuned, why="this run was applied already")
        return
    old = tuned if tuned is not None else configured
    new = step(old, rec.target, run.settings.bounds)
    if new is None:
        run.counts["TargetsKept"] += 1
        why = f"{rec.policy}: no allowed target value nearer {rec.target} within the step"
        log_event("target-kept", **where, target=old, why=why)
        return
    dry = run.settings.dry_run
    if tuned is None and TUNED in item:  # one the loop never writes: replaced, counted
        run.counts["Unreadable"] += 1
        log_event(
            "tuned-value-unreadable",
            level=logging.WARNING,
            **where,
            value=shown(repr(item.get(TUNED)), 60),
        )
    if not dry and not _write(run, key, kept.get("target"), new):
        run.counts["TargetsKept"] += 1  # another loop of this run wrote it meanwhile
        log_event("target-kept", **where, target=new, why="another run of the loop wrote it")
        return
    log_event(
        "target-tuned",
        **where,
        old=old,
        new=new,
        recommended=rec.policy,
        why=f"{rec.policy} recommended ({rec.why}); moved at most "
        f"{run.settings.bounds.max_step} points toward it, within the allowed targets",
        dry_run=dry,
    )
    run.counts["TargetsWouldChange" if dry else "TargetsChanged"] += 1


def _write(run: _Run, key: Mapping[str, Any], read: object, new: int) -> bool:
    """Keep ``new`` as the dimension's tuned target value, conditional on the value read
    (``read``, as stored, malformed or not; None: none) being there still. False when it is
    not, and the value there now is this run's: another loop of the same run wrote it
    meanwhile (two loops at once). Raises ClientError otherwise."""
    values: dict[str, Any] = {
        ":t": {"M": {"target": {"N": str(new)}, "run": {"S": run.run_id}}},
    }
    if read is None:
        condition = "attribute_not_exists(#t.#g)"
    else:
        condition = "#t.#g = :old"
        values[":old"] = read
    try:
        run.dynamodb.update_item(
            TableName=run.settings.store,
            Key=key,
            UpdateExpression="SET #t = :t",
            ConditionExpression=condition,
            ExpressionAttributeNames={"#t": TUNED, "#g": "target"},
            ExpressionAttributeValues=values,
        )
    except Exception as exc:
        if error_code(exc) != CONDITION_FAILED or not _written_by(run, key):
            raise
        return False
    return True


def _written_by(run: _Run, key: Mapping[str, Any]) -> bool:
    """Whether the dimension's tuned value is this run's (read consistently)."""
    item = run.dynamodb.get_item(
        TableName=run.settings.store,
        Key=dict(key),
        ConsistentRead=True,
        ProjectionExpression="#t",  # its grant reads the tuned attribute only
        ExpressionAttributeNames={"#t": TUNED},
    )
    kept = item.get("Item", {}).get(TUNED, {})
    fields = kept.get("M") if isinstance(kept, Mapping) else None
    written = fields.get("run") if isinstance(fields, Mapping) else None
    return isinstance(written, Mapping) and written.get("S") == run.run_id


def tuning_handler(event: Mapping[str, Any], context: Any = None) -> dict[str, int]:
    """EventBridge's scheduled event (its contents are not read)."""
    import boto3

    store = os.environ.get(f"{PREFIX}STORE", "").strip() or None  # the deployment's
    try:
        settings = TuningSettings.from_env(os.environ)
        counts = tune_run(boto3.client("s3"), boto3.client("dynamodb"), settings, datetime.now(UTC))
    except Exception as exc:
        emit_metrics(
            emf_record(
                NAMESPACE, {**dict.fromkeys(COUNTS, 0), "Failures": 1}, time.time(), store=store
            )
        )
        log_event("tuning-failed", level=logging.ERROR, error=shown(describe_error(exc)))
        raise
    emit_metrics(emf_record(NAMESPACE, counts, time.time(), store=store))
    log_event("tuned", counts=counts, dry_run=settings.dry_run)
    return counts
