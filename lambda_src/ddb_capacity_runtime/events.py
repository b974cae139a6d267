"""Runs in: scaler Lambda, broker Lambda, settle Lambda, workers (the user's own jobs),
workstation (examples).

The one log channel of every function this library deploys, and of its worker clients.

Each event is one stdlib ``logging`` record on the ``ddb_capacity_runtime`` logger: its
message is the event name, and its fields travel as structured keys (``extra``). Under
Lambda's JSON log format each record is one JSON object with ``message``, ``level``,
``event`` and the fields as top-level keys, ready for CloudWatch Logs Insights
(``filter event = "decision"``). The docs (Scaler at run time) list every event and its fields.

Embedded Metric Format records are the one exception: CloudWatch extracts metrics only from
a raw JSON line on stdout, so [`emit_metrics`][] writes them as such.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Collection, Iterable, Mapping
from typing import Any, TextIO

LOGGER = logging.getLogger("ddb_capacity_runtime")
RESERVED = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "event"}
"""Names a field may not take: they are LogRecord's own attributes."""


def log_event(
    event: str,
    /,
    *,
    level: int = logging.INFO,
    exc_info: bool = False,
    message: str | None = None,
    **fields: Any,
) -> None:
    """Log ``event`` with ``fields`` as structured keys; the record's message is ``event``,
    or ``message`` (for a logger configured without a structured formatter: one line that
    says what happened by itself)."""
    clash = RESERVED & fields.keys()
    if clash:
        raise ValueError(
            f"event {event!r}: field names {sorted(clash)} are reserved by logging; rename them"
        )
    LOGGER.log(level, message or event, extra={"event": event, **fields}, exc_info=exc_info)


def event_fields(record: logging.LogRecord) -> dict[str, Any] | None:
    """The event name and fields of a record [`log_event`][] made (None for others)."""
    event = getattr(record, "event", None)
    if event is None:
        return None
    standard = RESERVED - {"event"}
    return {k: v for k, v in record.__dict__.items() if k not in standard}


STORE_DIMENSION = "StateStore"
"""The one dimension of the library's counts that are not per table: the name of the
emitting function's state store (``core.names.metrics_store``), which tells one deployment
(a ``CapacityRequests``, a ``ThrottleAwareScaler``) from another in the same account and
Region; the constructs' alarms watch their own store's series."""


LOGGED = frozenset({"DecreasesLeft", "ForecastsOn", "TablesManaged"})
"""Values a record carries as fields of its log line only, never as metrics: levels nearly
always above 0, each a custom metric billed every hour if sent. The other values are sent
as metrics only while not 0 (billed for the hours they happen); every value stays in the
line, for CloudWatch Logs Insights."""


def emf_record(
    namespace: str,
    values: Mapping[str, float],
    timestamp: float,
    *,
    store: str | None,
    table: str | None = None,
    unit: str | None = "Count",
    undimensioned: Collection[str] = (),
    dimension: str = STORE_DIMENSION,
) -> dict[str, Any]:
    """One Embedded Metric Format record of ``values`` in ``namespace`` at ``timestamp``
    (seconds since the epoch), its values not 0 and not `LOGGED` as metrics: per table
    (dimension ``TableName``) or for the deployment of
    the state store ``store`` (dimension `STORE_DIMENSION`; ``store`` None: no dimension,
    for a function with no store). ``unit`` None: the metrics carry no unit. Those of a
    table's ``values`` named in ``undimensioned`` are also published for the deployment,
    where the Maximum of a period is its worst table's: what an alarm can watch (an alarm
    cannot watch a SEARCH over the tables' metrics, which returns many series).
    ``dimension``: that dimension's name, for a function whose deployment another resource
    names (the fleet advisor's report bucket)."""

    def metrics(names: Iterable[str]) -> list[dict[str, str]]:
        return [{"Name": n, "Unit": unit} if unit else {"Name": n} for n in names]

    sent = [n for n in values if values[n] and n not in LOGGED]
    also = [n for n in sent if n in undimensioned] if table else sent
    groups = []
    if table and sent:
        groups.append({"Dimensions": [["TableName"]], "Metrics": metrics(sent)})
    if also:
        groups.append({"Dimensions": [[dimension]] if store else [[]], "Metrics": metrics(also)})
    return {
        "_aws": {
            "Timestamp": int(timestamp * 1000),
            "CloudWatchMetrics": [{"Namespace": namespace, **g} for g in groups],
        },
        **({"TableName": table} if table else {}),
        **({dimension: store} if store and (also or not table) else {}),
        **values,
    }


def emit_metrics(record: Mapping[str, Any], out: TextIO | None = None) -> None:
    """Write one Embedded Metric Format record as a raw JSON line (stdout by default)."""
    stream = out or sys.stdout
    stream.write(json.dumps(record, default=str) + "\n")
    stream.flush()


LAMBDA_ENV = "AWS_LAMBDA_FUNCTION_NAME"
"""Set in a Lambda function, whose log's EMF lines become metrics."""


def count_in_lambda(
    namespace: str,
    metric: str,
    value: float = 1,
    *,
    store: str | None,
    dimension: str = STORE_DIMENSION,
    table: str | None = None,
    at: float | None = None,
) -> None:
    """In a Lambda function, one Embedded Metric Format count of ``metric`` (``value``, no
    unit) in ``namespace``, for the deployment of the state store ``store`` (`emf_record`;
    ``dimension``: the name of the dimension whose value ``store`` is, when another
    resource names the deployment), and for ``table`` too when given; at ``at`` (seconds
    since the epoch; default now): Lambda makes its log's EMF lines metrics.
    Elsewhere nothing: a line among a program's own output would be no metric. An output
    that fails is nothing to stop for."""
    if not os.environ.get(LAMBDA_ENV):
        return
    try:
        record = emf_record(
            namespace,
            {metric: value},
            time.time() if at is None else at,
            store=store,
            table=table,
            unit=None,
            undimensioned=(metric,),
            dimension=dimension,
        )
        emit_metrics(record)
    except Exception:  # noqa: BLE001, S110
        pass
