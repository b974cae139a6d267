"""One tick of the throttle-aware scaler: discover, measure, decide, act, report.

``run_tick`` takes its clients and clock as arguments, so the same tick runs in Lambda, in
tests against a moto server, and in benchmarks. The decisions themselves are the pure
:func:`ddb_capacity_runtime.core.plan.plan_table`.

Capacity requests: a table's expired holds are ended first, and its active holds lift the
dimension's min (and max) to their level for the tick.

Reports through :mod:`ddb_capacity_runtime.events`: a ``decision`` event per dimension, a
``hold-ended`` event per ended hold, a ``table-skipped`` event per table left out, and one
Embedded Metric Format record per table (namespace from the configuration, dimension
``TableName``: ``Decisions``, ``ThrottleEventsSeen``, ``DecreasesLeft``, ``CapacityAtMax``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, TextIO

from botocore.exceptions import ClientError

from ..aws import actuator, discovery, metrics
from ..aws.actuator import Outcome
from ..aws.clients import Clients
from ..aws.discovery import NotManaged
from ..core.plan import Change, plan_table
from ..core.policy import HOLD, Decision
from ..core.series import window
from ..core.settings import OverrideError, ScalerConfig
from ..core.tables import ManagedTable
from ..events import emit_metrics, log_event
from ..requests import ending, holds


def _row(change: Change, status: str, error: str | None) -> dict[str, Any]:
    """What a decision event and the tick's summary say of one change."""
    d = change.dimension
    return {
        "table": d.table,
        "index": d.index,
        "dimension": d.dimension,
        "via": change.via,
        "from": change.old,
        "to": change.new,
        "status": status,
        **({"error": error} if error else {}),
    }


def _emf(
    config: ScalerConfig, table: ManagedTable, planned: list[tuple[Change, Decision]], now: datetime
) -> dict[str, Any]:
    names = ("Decisions", "ThrottleEventsSeen", "DecreasesLeft", "CapacityAtMax")
    return {
        "_aws": {
            "Timestamp": int(now.timestamp() * 1000),
            "CloudWatchMetrics": [
                {
                    "Namespace": config.namespace,
                    "Dimensions": [["TableName"]],
                    "Metrics": [{"Name": n, "Unit": "Count"} for n in names],
                }
            ],
        },
        "TableName": table.name,
        "Decisions": sum(1 for c, _ in planned if c.action != HOLD),
        "ThrottleEventsSeen": sum(c.throttles_seen for c, _ in planned),
        "DecreasesLeft": min((d.ledger.remaining_today(now) for d in table.dimensions), default=0),
        "CapacityAtMax": sum(1 for d in table.dimensions if d.provisioned >= d.limits.max_capacity),
    }


def run_tick(
    config: ScalerConfig, clients: Clients, now: datetime, out: TextIO | None = None
) -> dict[str, Any]:
    """Discover, measure, decide and act once. Returns a summary. EMF records go to
    ``out`` (stdout by default); events to the log."""
    now = now.astimezone(UTC)
    targets = discovery.scalable_targets(clients.autoscaling)
    skipped: list[dict[str, str]] = []
    tables: list[ManagedTable] = []
    for name, tags in discovery.find_tables(clients.tagging, config).items():
        try:
            table = discovery.describe_table(clients.dynamodb, name, tags, config, targets, now)
            if not config.dry_run and holds.needs_restore(table.tags, now):
                for ended in ending.restore_expired(
                    name, clients=clients, clock=now.timestamp, lower_direct=False
                ):
                    log_event("hold-ended", **ended)
                table = discovery.describe_table(clients.dynamodb, name, None, config, targets, now)
            tables.append(holds.lift(table, now))
        except (NotManaged, OverrideError, holds.CapacityRequestError) as exc:
            skipped.append({"table": name, "reason": str(exc)})
        except ClientError as exc:
            error = exc.response.get("Error", {})
            reason = f"{error.get('Code')}: {error.get('Message')}"
            skipped.append({"table": name, "reason": reason})
    for entry in skipped:
        log_event("table-skipped", table=entry["table"], reason=entry["reason"])

    start, end = window(now, config.history_minutes, config.metric_lag_minutes)
    keys = [d.key for t in tables for d in t.dimensions]
    series = metrics.fetch(clients.cloudwatch, keys, start, end) if keys else {}

    outcomes: list[Outcome] = []
    for table in tables:
        planned = plan_table(table, series, config, now)
        changes = [c for c, _ in planned if c.action != HOLD and c.new != c.old]
        results = {
            id(o.change): o
            for o in actuator.apply(
                clients.dynamodb, clients.autoscaling, table, changes, config.dry_run
            )
        }
        for change, _ in planned:
            outcome = results.get(id(change))
            fields: dict[str, Any] = {
                **_row(
                    change,
                    outcome.status if outcome else "held",
                    outcome.error if outcome else None,
                ),
                "action": change.action,
                "reason": change.reason,
                "throttles_seen": change.throttles_seen,
            }
            log_event("decision", **fields)
        outcomes.extend(results.values())
        emit_metrics(_emf(config, table, planned, now), out)

    def row(o: Outcome) -> dict[str, Any]:
        return _row(o.change, o.status, o.error)

    return {
        "tables": len(tables),
        "dimensions": len(keys),
        "changes": [row(o) for o in outcomes if o.status in ("applied", "dry-run")],
        "failed": [row(o) for o in outcomes if o.status not in ("applied", "dry-run")],
        "skipped": skipped,
        "dry_run": config.dry_run,
    }
