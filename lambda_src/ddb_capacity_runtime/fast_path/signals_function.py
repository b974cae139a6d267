"""Runs in: signals Lambda.

What the signals function receives: one report, or a batch of them
(`core.report_batch`), each read, combined with the others and raised on in turn, its own
fault domain, within its share of the invocation's time (`surge_raise.time_share`;
docs/guides/fast-path.md#how-the-hook-counts).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from ..aws.clients import Clients, make_clients
from ..aws.counts import count
from ..aws.store import HoldStore, open_store
from ..core.report_batch import MAX_BATCH_CHARS, is_batch, reports_of
from ..core.surge import SurgeReportError
from ..core.untrusted import UntrustedJSONError
from ..core.untrusted_values import check_json
from ..events import log_event
from ..requests.broker import BrokerConfig
from .surge_raise import refused_report, take_report, time_share
from .surge_settings import RESERVE_MS as RESERVE_MS
from .surge_settings import SurgeSettings


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
    `RESERVE_MS` is not started, and counted so (``SurgesFailed``). Each report taken has
    an even share of the time left before `RESERVE_MS` among the reports left
    (`time_share`): the dimensions it has not decided when its share runs out (leases
    waited for) are deferred to the next report, and the reports after it still have
    theirs."""

    if not is_batch(event):
        ms = None if remaining_ms is None else remaining_ms()
        share = time_share(ms, 1, clock)
        return take_report(
            event,
            scopes,
            settings,
            clients=clients,
            store=store,
            clock=clock,
            sleep=sleep,
            deadline=share,
        )
    try:
        check_json(event, "batch", max_chars=MAX_BATCH_CHARS)
        items = reports_of(event)
    except (UntrustedJSONError, SurgeReportError) as exc:
        return {"ok": False, **refused_report(None, None, exc)}
    clients = clients or make_clients()
    held = open_store(store, clients, clock)
    take = partial(take_report, clients=clients, store=held, clock=clock, sleep=sleep)
    answers: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        ms = None if remaining_ms is None else remaining_ms()
        if ms is not None and ms < RESERVE_MS:
            _unread(items[i:])
            break
        try:
            share = time_share(ms, len(items) - i, clock)
            answers.append(take(item, scopes, settings, deadline=share))
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
