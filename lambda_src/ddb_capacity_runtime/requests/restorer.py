"""Ending expired holds on a set of tables: the ``CapacityRequests`` restorer.

The deployed restorer is a scheduled function whose role may only invoke the broker: it
asks the broker to restore (``{"action": "restore"}``), and the broker, which alone holds
the rights to change capacity, runs :func:`restore_tables` on the tables it serves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..aws.clients import make_clients
from ..aws.retry import describe_error
from ..events import log_event
from .broker import broker_name, invoke_broker
from .ending import restore_expired
from .holds import CapacityRequestError
from .store import open_store


def restore_tables(tables: Sequence[str]) -> dict[str, Any]:
    """End the expired holds of each table in ``tables``, the hold store being
    ``$CAPACITY_HOLDS_TABLE``. Each table is its own fault domain; any failure raises after
    the others ran."""
    clients = make_clients()
    store = open_store(None, clients)
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


def restorer_handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """AWS Lambda entry point of the ``CapacityRequests`` restorer: asks the broker
    ``$CAPACITY_BROKER`` to end expired holds. A refusal or a failed restore fails the run."""
    name = broker_name(None)
    if name is None:
        raise CapacityRequestError("CAPACITY_BROKER: not set; the restorer asks the broker")
    answer = invoke_broker(name, {"action": "restore"})
    return {"restored": answer.get("restored", []), "failed": answer.get("failed", [])}
