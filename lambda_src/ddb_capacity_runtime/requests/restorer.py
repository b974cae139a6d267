"""The ``CapacityRequests`` restorer Lambda: ends expired holds on its tables."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..aws.clients import make_clients
from ..aws.retry import describe_error
from ..events import log_event
from .ending import restore_expired
from .store import open_store


def restorer_handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """AWS Lambda entry point of the ``CapacityRequests`` restorer: ``CAPACITY_TABLES`` is
    a comma-separated list of table names, ``CAPACITY_HOLDS_TABLE`` the hold store. Each
    table is its own fault domain; any failure fails the invocation after the others ran."""
    clients = make_clients()
    store = open_store(None, clients)
    tables = [t.strip() for t in os.environ.get("CAPACITY_TABLES", "").split(",") if t.strip()]
    out: dict[str, Any] = {"restored": [], "failed": []}
    for name in tables:
        try:
            out["restored"] += restore_expired(name, store=store, clients=clients)
        except Exception as exc:
            out["failed"].append({"table": name, "error": describe_error(exc)})
    log_event("holds-restored", restored=out["restored"], failed=out["failed"])
    if out["failed"]:
        raise RuntimeError(
            f"restoring holds failed on {len(out['failed'])} table(s): {out['failed']}"
        )
    return out
