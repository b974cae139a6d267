"""Runs in: signals Lambda.

What the signals function receives: one report, or a batch of them
(`core.report_batch`), each read, combined with the others and raised on in turn, its own
fault domain, within the invocation's time (docs/guides/fast-path.md#how-the-hook-counts).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..aws.clients import Clients, make_clients
from ..aws.store import HoldStore, open_store
from ..core.report_batch import MAX_BATCH_CHARS, is_batch, reports_of
from ..core.surge import SurgeReportError
from ..core.untrusted import UntrustedJSONError, check_json
from ..events import log_event
from ..requests.broker import BrokerConfig
from ..requests.counts import count
from .surge_raise import refused_report, take_report
from .surge_settings import SurgeSettings

RESERVE_MS = 5_000
"""The time a batch keeps in hand: no report is started with less of the invocation left
(a raise takes about a second; its lease's own deadline is shorter)."""


def signals_handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """AWS Lambda entry point of the ``CapacityRequests`` signals function: one report or a
    batch (`take_reports`)."""
    # A broken configuration fails the invocation (its errors are alarmed).
    left = getattr(context, "get_remaining_time_in_millis", None)
    return take_reports(
        event,
        BrokerConfig.from_env(),
        SurgeSettings.from_env(),
        remaining_ms=left if callable(left) else None,
    )


def take_reports(
    event: object,
    scopes: BrokerConfig,
    settings: SurgeSettings,
    *,
    clients: Clients | None = None,
    store: HoldStore | None = None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    remaining_ms: Callable[[], int] | None = None,
) -> dict[str, Any]:
    """Take ``event``: one report (`take_report`'s answer), or a batch, each of its reports
    taken in order with one set of clients and one store (``{"ok": True, "reports": [each
    report's answer]}``). A report that fails is counted (``SurgesFailed``) and the next is
    taken; a report left when ``remaining_ms`` (the invocation's time left) falls under
    `RESERVE_MS` is not started, and counted so (``SurgesFailed``)."""
    if not is_batch(event):
        return take_report(
            event, scopes, settings, clients=clients, store=store, clock=clock, sleep=sleep
        )
    try:
        check_json(event, "batch", max_chars=MAX_BATCH_CHARS)
        items = reports_of(event)
    except (UntrustedJSONError, SurgeReportError) as exc:
        return {"ok": False, **refused_report(None, None, exc)}
    clients = clients or make_clients()
    held = open_store(store, clients, clock)
    answers: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        if remaining_ms is not None and remaining_ms() < RESERVE_MS:
            _unread(items[i:])
            break
        try:
            answers.append(
                take_report(
                    item, scopes, settings, clients=clients, store=held, clock=clock, sleep=sleep
                )
            )
        except Exception as exc:  # noqa: BLE001 (each report is its own fault domain)
            count("SurgesFailed")
            log_event(
                "report-failed", level=logging.ERROR, reason=f"{type(exc).__name__}: {exc}"[:1_000]
            )
            answers.append({"ok": False, "status": "failed"})
    return {"ok": True, "reports": answers}


def _unread(items: list[object]) -> None:
    """Reports left unread for want of time: counted (``SurgesFailed``) and logged."""
    count("SurgesFailed", len(items))
    log_event(
        "reports-unread",
        level=logging.ERROR,
        reports=len(items),
        reason=f"less than {RESERVE_MS} ms of the invocation was left",
    )
