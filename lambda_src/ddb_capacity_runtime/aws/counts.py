"""Runs in: broker Lambda, scaler Lambda, signals Lambda, stream reader
Lambda, workers (the user's own jobs, in direct mode), CDK app (synth: the namespace,
through `requests.broker`).

The capacity requests' Embedded Metric Format counts, in the broker's namespace
(``Refused``, ``TimedOut``, ``HoldsDropped``, ``HoldsBusy``; a raise's are
`raise_counts`'). Below the functions' packages: the scaler's tick counts the holds it
drops without importing `requests`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

from ..core.errors import shown
from ..core.holds import HeldDimension
from ..core.names import METRICS_NAMESPACE, metrics_store
from ..core.outcomes import Status
from ..events import count_in_lambda, emf_record, emit_metrics, log_event

NAMESPACE = METRICS_NAMESPACE
"""Where the broker's EMF counts go."""


def count(metric: str, value: int = 1) -> None:
    """One EMF record of the broker's namespace: ``metric`` is ``value``, for the deployment
    of the function's store (`metrics_store`)."""
    record = emf_record(NAMESPACE, {metric: value}, time.time(), store=metrics_store(), unit=None)
    emit_metrics(record)


def dropped(rows: Iterable[Mapping[str, Any]], *, in_lambda_only: bool = False) -> None:
    """The holds an ending dropped without lowering their table (``rows``' of status
    ``dropped``: a table deleted, on-demand or no longer served, an index gone, malformed
    holds): logged (``holds-dropped``, a warning) and counted as ``HoldsDropped``, by the
    functions that end holds (the broker's restore and release, a connected scaler's
    tick). ``in_lambda_only``: for a failed request's withdrawal, which runs in the broker
    or in a process of the user's (direct mode), counted in a Lambda function only, as
    `malformed_dropped`."""
    gone = [r for r in rows if r.get("status") == Status.DROPPED]
    if gone:
        log_event("holds-dropped", level=logging.WARNING, dropped=gone)
        if in_lambda_only:
            count_in_lambda(NAMESPACE, "HoldsDropped", len(gone), store=metrics_store())
        else:
            count("HoldsDropped", len(gone))


def busy(rows: Iterable[Mapping[str, Any]]) -> None:
    """The dimensions among ``rows`` (a restore's) whose holds it could not end because
    their table (or index) was not ACTIVE: their holds stay, and the capacity they raised,
    until a later restore finds it ACTIVE. Logged (``holds-busy``, a warning) and counted
    (``HoldsBusy``, which ``CapacityRequests`` alarms on when it lasts); a table UPDATING
    for a restore or two is usual, one that stays so (a long GSI backfill, a key DynamoDB
    cannot use) is not."""
    kept = [r for r in rows if r.get("status") == Status.BUSY]
    if kept:
        log_event("holds-busy", level=logging.WARNING, busy=kept)
        count("HoldsBusy", len(kept))


SHOWN_MALFORMED = 10
"""The most malformed holds' ids a log line or a row names."""


def malformed_ids(state: HeldDimension) -> list[str]:
    """The first `SHOWN_MALFORMED` ids of ``state``'s malformed holds, each cut as a
    message repeats untrusted text (`shown`)."""
    return [shown(i, 100) for i in state.malformed[:SHOWN_MALFORMED]]
