"""Runs in: broker Lambda (`restore_tables`).

Ending expired holds on a set of tables: the ``CapacityRequests`` restorer.

The deployed restorer is an EventBridge rule that asks the broker to restore
(``{"action": "restore"}``), and the broker, which alone holds the rights to change
capacity, runs `restore_tables` on the tables it serves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..aws.clients import Clients, make_clients
from ..aws.counts import busy, dropped
from ..aws.error_codes import describe_error
from ..aws.hold_table import restore_expired
from ..aws.store import HoldStore, open_store
from ..core.outcomes import NOT_MADE
from ..events import log_event
from .ending import drop_holds


def restore_tables(
    tables: Sequence[str], *, clients: Clients | None = None, store: HoldStore | None = None
) -> dict[str, Any]:
    """End the expired holds of each table in ``tables``, the hold store being ``store``
    (default ``$CAPACITY_HOLDS_TABLE``), and forget the expired holds of a table not in
    ``tables`` (it left the broker's scope, or was held in direct mode: the broker may not
    change it; its active holds stay until they expire), and every hold of a table that
    was deleted or went on-demand. A dimension the restore could not lower (AWS refused, or
    the day's decreases are spent) is a failure too, and its hold stays for the next run.
    Forgotten holds are counted (EMF ``HoldsDropped``) and logged with the level they held,
    so that an operator can restore that table by hand. Each table is its own fault domain; any
    failure raises after the others ran."""
    clients = clients or make_clients()
    store = open_store(store, clients)
    try:
        held = store.everything()
    except Exception as exc:
        raise RuntimeError(
            f"restoring holds failed: reading the hold store {store.name}: {describe_error(exc)}"
        ) from None
    out: dict[str, Any] = {"restored": [], "failed": []}
    holding = {t for t, states in held.items() if any(s.holds or s.malformed for s in states)}
    for name in [*tables, *sorted(holding - set(tables))]:
        try:
            if name in tables:
                out["restored"] += restore_expired(
                    name, store=store, clients=clients, held=held.get(name, [])
                )
            else:
                why = "the broker does not serve this table"
                out["restored"] += drop_holds(store, name, why, deadline=store.clock() + 30)
        except Exception as exc:
            out["failed"].append({"table": name, "error": describe_error(exc)})
    # a hold whose dimension could not be lowered stays for the next run: a failure still
    for row in out["restored"]:
        if row["status"] in NOT_MADE:
            out["failed"].append({"table": row["table"], "error": row.get("note") or row["status"]})
    dropped(out["restored"])
    busy(out["restored"])
    log_event("holds-restored", restored=out["restored"], failed=out["failed"])
    if out["failed"]:
        raise RuntimeError(
            f"restoring holds failed on {len(out['failed'])} table(s): {out['failed']}"
        )
    return out
