"""Runs in: scaler Lambda.

The scaler Lambda's entry point: read the configuration, run one tick, report."""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ..aws.clients import make_clients
from ..core.settings import ScalerConfig
from ..events import log_event
from ..requests.holds import CapacityRequestError
from ..requests.store import STORE_ENV, open_store
from .tick import TickFailed, TickSummary, tick


def lambda_handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """AWS Lambda entry point. A bad configuration fails the invocation with its message;
    so does a tick in which a table or a shared call failed (after it acted on the rest),
    so that the errors alarm and the dead-letter queue see it."""
    config = ScalerConfig.from_env(os.environ)
    clients = make_clients()
    if not os.environ.get(STORE_ENV):
        raise CapacityRequestError(
            f"{STORE_ENV}: not set; the scaler keeps its state in the state store that "
            "ThrottleAwareScaler deploys (or CapacityRequests, once connected)"
        )
    store = open_store(None, clients)
    summary = tick(config, clients, datetime.now(UTC), store=store)
    complete(summary)
    return summary.to_dict()


def complete(summary: TickSummary) -> None:
    """Log the tick's summary; raise :class:`TickFailed` when anything in it failed."""
    log_event(
        "tick-done",
        tables=summary.tables,
        dimensions=summary.dimensions,
        changes=summary.changes,
        failed=summary.failed,
        skipped=summary.skipped,
        dry_run=summary.dry_run,
        failures=summary.failures,
        shared_failures=summary.shared_failures,
    )
    if summary.failures or summary.shared_failures:
        failures: list[Any] = [*summary.failures, *summary.shared_failures]
        raise TickFailed(
            f"{len(summary.failures)} table(s) failed, {len(summary.shared_failures)} "
            f"shared call(s) failed: {failures}"[:4000]
        )
