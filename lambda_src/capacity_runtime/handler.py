"""The scaler's entry point: read the configuration, run one tick, report.

``lambda_handler`` is thin; ``run_tick`` takes its clients and clock as arguments so the
same tick runs in Lambda, in tests against a moto server, and in benchmarks.

Capacity requests (``holds``): a table's expired holds are ended first, and its active
holds lift the dimension's min (and max) to their level for the tick.

Output, on stdout (CloudWatch Logs):
- one JSON line per decision: ``{"event": "decision", "table", "index", "dimension",
  "via", "from", "to", "action", "reason", "throttles_seen", "status"}``;
- one per ended capacity hold: ``{"event": "hold-ended", "table", "index", "dimension",
  "via", "from", "to", "status"}``;
- one Embedded Metric Format record per table in the configured namespace, dimension
  ``TableName``: ``Decisions``, ``ThrottleEventsSeen``, ``DecreasesLeft``, ``CapacityAtMax``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TextIO

from botocore.exceptions import ClientError

from . import actuator, discovery, holds, metrics
from .actuator import SCALABLE_TARGET, UPDATE_TABLE, Change, Outcome
from .clients import Clients, make_clients
from .config import OverrideError, ScalerConfig
from .discovery import ManagedTable, NotManaged
from .policy import HOLD, Decision, DimensionState, combine_counter, decide, decide_scalable_min

LOG = logging.getLogger(__name__)


def plan_table(table: ManagedTable, series: Mapping[Any, metrics.Series], config: ScalerConfig,
               now: datetime) -> list[tuple[Change, Decision]]:
    """Every dimension's decision (holds included) as a Change; pure."""
    planned: list[tuple[Change, Decision]] = []
    direct: dict[str | None, dict[str, tuple[Any, Decision]]] = {}
    for d in table.dimensions:
        s = series[d.key]
        state = DimensionState(
            provisioned=d.provisioned, consumed=s.consumed, throttles=s.throttles,
            minute_starts=s.minute_starts, min_capacity=d.limits.min_capacity,
            max_capacity=d.limits.max_capacity, now=now, ledger=d.ledger,
            last_increase=d.last_increase, target_utilization=d.limits.target_utilization)
        if d.target is not None:
            decision = decide_scalable_min(state, d.target.min_capacity, config.policy)
            planned.append((Change(d, d.target.min_capacity, decision.capacity, decision.reason,
                                   decision.action, SCALABLE_TARGET, decision.throttles_seen),
                            decision))
        else:
            direct.setdefault(d.index, {})[d.dimension] = (d, decide(state, config.policy))
    for dims in direct.values():
        combined = combine_counter({k: v[1] for k, v in dims.items()},
                                   {k: v[0].provisioned for k, v in dims.items()})
        for name, (d, _) in dims.items():
            decision = combined[name]
            planned.append((Change(d, d.provisioned, decision.capacity, decision.reason,
                                   decision.action, UPDATE_TABLE, decision.throttles_seen),
                            decision))
    return planned


def _emit(out: TextIO, record: Mapping[str, Any]) -> None:
    out.write(json.dumps(record, default=str) + "\n")


def _emf(config: ScalerConfig, table: ManagedTable, planned: list[tuple[Change, Decision]],
         now: datetime) -> dict[str, Any]:
    names = ("Decisions", "ThrottleEventsSeen", "DecreasesLeft", "CapacityAtMax")
    return {
        "_aws": {"Timestamp": int(now.timestamp() * 1000), "CloudWatchMetrics": [{
            "Namespace": config.namespace, "Dimensions": [["TableName"]],
            "Metrics": [{"Name": n, "Unit": "Count"} for n in names]}]},
        "TableName": table.name,
        "Decisions": sum(1 for c, _ in planned if c.action != HOLD),
        "ThrottleEventsSeen": sum(c.throttles_seen for c, _ in planned),
        "DecreasesLeft": min((d.ledger.remaining_today(now) for d in table.dimensions),
                             default=0),
        "CapacityAtMax": sum(1 for d in table.dimensions
                             if d.provisioned >= d.limits.max_capacity),
    }


def run_tick(config: ScalerConfig, clients: Clients, now: datetime,
             out: TextIO = sys.stdout) -> dict[str, Any]:
    """Discover, measure, decide and act once. Returns a summary."""
    now = now.astimezone(UTC)
    targets = discovery.scalable_targets(clients.autoscaling)
    skipped: list[dict[str, str]] = []
    tables: list[ManagedTable] = []
    for name, tags in discovery.find_tables(clients.tagging, config).items():
        try:
            table = discovery.describe_table(clients.dynamodb, name, tags, config, targets, now)
            if not config.dry_run and holds.needs_restore(table.tags, now):
                for ended in holds.restore_expired(name, clients=clients,
                                                   clock=now.timestamp, lower_direct=False):
                    _emit(out, {"event": "hold-ended", **ended})
                table = discovery.describe_table(clients.dynamodb, name, None, config, targets,
                                                 now)
            tables.append(holds.lift(table, now))
        except (NotManaged, OverrideError, holds.CapacityRequestError) as exc:
            skipped.append({"table": name, "reason": str(exc)})
        except ClientError as exc:
            error = exc.response.get("Error", {})
            reason = f"{error.get('Code')}: {error.get('Message')}"
            skipped.append({"table": name, "reason": reason})
    for entry in skipped:
        _emit(out, {"event": "skipped", **entry})

    start, end = metrics.window(now, config.history_minutes, config.metric_lag_minutes)
    keys = [d.key for t in tables for d in t.dimensions]
    series = metrics.fetch(clients.cloudwatch, keys, start, end) if keys else {}

    outcomes: list[Outcome] = []
    for table in tables:
        planned = plan_table(table, series, config, now)
        changes = [c for c, _ in planned if c.action != HOLD and c.new != c.old]
        results = {id(o.change): o for o in actuator.apply(
            clients.dynamodb, clients.autoscaling, table, changes, config.dry_run)}
        for change, _ in planned:
            d = change.dimension
            outcome = results.get(id(change))
            _emit(out, {"event": "decision", "table": d.table, "index": d.index,
                        "dimension": d.dimension, "via": change.via, "from": change.old,
                        "to": change.new, "action": change.action, "reason": change.reason,
                        "throttles_seen": change.throttles_seen,
                        "status": outcome.status if outcome else "held",
                        **({"error": outcome.error} if outcome and outcome.error else {})})
        outcomes.extend(results.values())
        _emit(out, _emf(config, table, planned, now))

    def row(o: Outcome) -> dict[str, Any]:
        d = o.change.dimension
        return {"table": d.table, "index": d.index, "dimension": d.dimension,
                "via": o.change.via, "from": o.change.old, "to": o.change.new,
                "status": o.status, **({"error": o.error} if o.error else {})}

    return {
        "tables": len(tables),
        "dimensions": len(keys),
        "changes": [row(o) for o in outcomes if o.status in ("applied", "dry-run")],
        "failed": [row(o) for o in outcomes if o.status not in ("applied", "dry-run")],
        "skipped": skipped,
        "dry_run": config.dry_run,
    }


def lambda_handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """AWS Lambda entry point: a bad configuration fails the invocation with its message."""
    config = ScalerConfig.from_env(os.environ)
    summary = run_tick(config, make_clients(), datetime.now(UTC))
    LOG.info("tick done: %s", json.dumps(summary))
    return summary
