"""Runs in: broker Lambda, CDK app (synth: its environment's names and its namespace).

The capacity-request broker: the one function workers may invoke to raise capacity.

Workers never get UpdateTable or RegisterScalableTarget. ``CapacityRequests`` deploys this
function with its own narrow role and grants workers ``lambda:InvokeFunction`` on it alone.
The broker checks each request against the construct's configuration (its tables, the
indexes it allows, the largest hold in units and in time), then makes it through the hold
store exactly as a direct [`request_capacity`][ddb_capacity_runtime.requests.request_capacity]
would.

Events (JSON):

- ``{"action": "request", "table": T, "index": I|null, "read": N, "write": N,
  "hold_minutes": M, "timeout_seconds": S}``
- ``{"action": "release", "table": T, "id": ID, "token": TOKEN}``: only the token the
  request returned ends a hold;
- ``{"action": "restore"}``: end the expired holds of every table it serves (what the
  restorer's rule asks for), and forget the expired holds of tables it does not serve
  and the holds of tables that were deleted or went on-demand (counted as ``HoldsDropped``).

Answers: ``{"ok": true, "hold": {...}}`` (what `CapacityHold.as_json` gives),
``{"ok": true, "changes": [...]}``, ``{"ok": true, "restored": [...], "failed": []}``, or
``{"ok": false, "error": "refused"|"timeout", "message": ...}`` for a request the broker
will not or could not make (counted: ``Refused`` for a refusal, ``TimedOut`` for a table
not ready in time, which ``CapacityRequests`` alarms on). Anything else (AWS failing a
call the request needed, `CapacityRequestFailed`, say) fails the invocation: it is counted
as a Lambda error and alarmed.

The client side, `client.invoke_broker` (re-exported here), is what
``request_capacity(..., broker=NAME)``, ``release_hold(..., broker=NAME)`` and
``ddb-capacity request --broker NAME`` use.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ..aws.clients import Clients
from ..aws.counts import NAMESPACE, count, dropped
from ..aws.raise_counts import count_within_warm
from ..aws.store import HoldStore, limits_from_env, store_name
from ..core.errors import BrokerConfigError as BrokerConfigError
from ..core.errors import shown
from ..core.holds import (
    MAX_HOLD_MINUTES,
    CapacityRequestError,
    CapacityRequestFailed,
    CapacityRequestTimeout,
    LeaseLost,
)
from ..core.untrusted import UntrustedJSONError
from ..core.untrusted_values import check_json
from ..core.validators import is_whole
from ..events import log_event
from .client import BROKER_ENV, BROKER_MAX_WAIT, broker_name, invoke_broker
from .ending import check_released, release_direct
from .request import request_capacity
from .restorer import restore_tables

__all__ = [  # the client's names and the broker's namespace, where they always were
    "BROKER_ENV",
    "BROKER_MAX_WAIT",
    "NAMESPACE",
    "SCOPES_ENV",
    "BrokerConfig",
    "BrokerConfigError",
    "broker_handler",
    "broker_name",
    "count",
    "invoke_broker",
    "serve",
]

SCOPES_ENV = "CAPACITY_SCOPES"
"""The configuration ``CapacityRequests`` gives its broker: a JSON list of ``{"table": NAME,
"indexes": [NAME, ...]}``."""
MAX_MESSAGE_CHARS = 1_000
"""The longest refusal message an answer carries."""
MAX_EVENT_CHARS = 64 * 1024
"""The largest event the broker reads (as JSON text; its own events are far smaller)."""
MAX_ID_CHARS = 128
"""The longest hold id or release token a release may name (both are far shorter)."""


@dataclass(frozen=True)
class BrokerConfig:
    """The tables a broker serves, each with the global secondary indexes it allows."""

    scopes: Mapping[str, frozenset[str]]

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> BrokerConfig:
        raw = env.get(SCOPES_ENV, "")
        try:
            items = json.loads(raw)
            scopes = {item["table"]: frozenset(item.get("indexes", [])) for item in items}
            if not scopes or not all(
                isinstance(t, str) and all(isinstance(i, str) for i in idx)
                for t, idx in scopes.items()
            ):
                raise ValueError("no tables")
        except (ValueError, TypeError, KeyError, AttributeError):
            raise BrokerConfigError(
                f"{SCOPES_ENV}: got {raw[:200]!r}; expected a JSON list of "
                f'{{"table": NAME, "indexes": [NAME, ...]}}'
            ) from None
        return cls(scopes)

    def check(self, table: str, index: str | None) -> None:
        """Refuse a table or an index this broker does not serve."""
        if table not in self.scopes:
            raise CapacityRequestError(
                f"table: got {shown(table)}; this broker serves only "
                f"{', '.join(sorted(self.scopes))}"
            )
        allowed = self.scopes[table]
        if index is not None and index not in allowed:
            raise CapacityRequestError(
                f"index: got {shown(index)}; on table {table} this broker serves "
                + (
                    f"the table and the indexes {', '.join(sorted(allowed))}"
                    if allowed
                    else "the table only"
                )
            )


def broker_handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """AWS Lambda entry point of the ``CapacityRequests`` broker."""
    config = BrokerConfig.from_env()  # BrokerConfigError: a failure
    check_store_env(os.environ)
    return serve(event, config)


def check_store_env(env: Mapping[str, str]) -> None:
    """The broker's own hold store settings (its table's name, the table quota and the
    bounds of a hold, as ``CapacityRequests`` sets them): a bad one is BrokerConfigError,
    which fails the invocation (counted and alarmed as the broker's errors), never a
    refusal each worker is answered as though its request were wrong."""
    try:
        store_name(None, env)
        limits_from_env(env)
    except CapacityRequestError as exc:
        raise BrokerConfigError(str(exc)) from None


def serve(
    event: Mapping[str, Any],
    config: BrokerConfig,
    *,
    clients: Clients | None = None,
    store: HoldStore | None = None,
) -> dict[str, Any]:
    """Answer one broker event for the tables of ``config``. ``clients`` and ``store``:
    default, made from the environment (``$CAPACITY_HOLDS_TABLE`` and its bounds)."""
    try:
        check_json(event, "event", max_chars=MAX_EVENT_CHARS)
    except UntrustedJSONError as exc:  # before anything reads it, its table included
        return _refusal("refused", exc, None)
    action = event.get("action") if isinstance(event, Mapping) else None
    held = _Held(store if store is not None else store_name(None), store, clients)
    try:
        if not isinstance(action, str) or action not in ACTIONS:
            raise CapacityRequestError(
                f"action: got {shown(action)}; expected 'request', 'release' or 'restore'"
            )
        return ACTIONS[action](event, config, held)
    except CapacityRequestTimeout as exc:
        return _refusal("timeout", exc, event)
    except (CapacityRequestFailed, LeaseLost):
        raise  # AWS failed a call, or was so slow the lease ran out: the invocation fails
    except CapacityRequestError as exc:
        return _refusal("refused", exc, event)


@dataclass(frozen=True)
class _Held:
    """Where an event's holds are: ``name`` (the store, or its table's name: never a
    broker, since this is the broker), ``store`` (as given), and the clients to use."""

    name: str | HoldStore
    store: HoldStore | None
    clients: Clients | None


def _request(event: Mapping[str, Any], config: BrokerConfig, held: _Held) -> dict[str, Any]:
    table, index = _name(event, "table"), event.get("index")
    if index is not None:
        index = _name(event, "index")
    hold_minutes = _whole(event, "hold_minutes", 15, 1, MAX_HOLD_MINUTES)
    timeout_seconds = _whole(event, "timeout_seconds", 600, 0, int(BROKER_MAX_WAIT.total_seconds()))
    config.check(table, index)
    made = request_capacity(
        table,
        read=event.get("read", 0),
        write=event.get("write", 0),
        index=index,
        hold=timedelta(minutes=hold_minutes),
        timeout=timedelta(seconds=timeout_seconds),
        store=held.name,  # never through a broker: this is the broker
        clients=held.clients,
    )
    count_within_warm(made.changes)
    log_event("request-brokered", table=made.table, index=made.index, hold_id=made.id)
    return {"ok": True, "hold": made.as_json()}


def _release(event: Mapping[str, Any], config: BrokerConfig, held: _Held) -> dict[str, Any]:
    table = _name(event, "table")
    ident, token = event.get("id"), event.get("token")
    if (
        not isinstance(ident, str)
        or not isinstance(token, str)
        or not 1 <= len(ident) <= MAX_ID_CHARS
        or not 1 <= len(token) <= MAX_ID_CHARS
    ):
        raise CapacityRequestError(
            f"id and token: got {shown(ident)} and a {type(token).__name__} of "
            f"{len(token) if isinstance(token, str) else 0} characters; expected the "
            f"hold's id and the token its request returned (1 to {MAX_ID_CHARS} "
            "characters each)"
        )
    config.check(table, None)
    changes = release_direct(table, ident, token=token, store=held.name, clients=held.clients)
    dropped(changes)
    # as a restore's: a dimension left raised fails the invocation, counted and alarmed
    # (BrokerErrors), and the worker's release raises CapacityRequestFailed
    check_released(changes, table, ident)
    return {"ok": True, "changes": changes}


def _restore(event: Mapping[str, Any], config: BrokerConfig, held: _Held) -> dict[str, Any]:
    restored = restore_tables(sorted(config.scopes), clients=held.clients, store=held.store)
    return {"ok": True, **restored}


ACTIONS: dict[str, Callable[[Mapping[str, Any], BrokerConfig, _Held], dict[str, Any]]] = {
    "request": _request,
    "release": _release,
    "restore": _restore,
}
"""What the broker does for each ``action`` of an event."""


def _name(event: Mapping[str, Any], field: str) -> str:
    """A table or index name of the event: a string of 3 to 255 characters."""
    value = event.get(field)
    if not isinstance(value, str) or not 3 <= len(value) <= 255:
        raise CapacityRequestError(
            f"{field}: got {shown(value)}; expected a name of 3 to 255 characters"
        )
    return value


def _whole(event: Mapping[str, Any], field: str, default: int, low: int, high: int) -> int:
    value = event.get(field, default)
    if not is_whole(value, low, high):
        raise CapacityRequestError(
            f"{field}: got {shown(value)}; expected a whole number from {low} to {high}"
        )
    return value


def _refusal(kind: str, exc: Exception, event: Any) -> dict[str, Any]:
    table = event.get("table") if isinstance(event, Mapping) else None
    message = str(exc)
    if len(message) > MAX_MESSAGE_CHARS:  # every input in it is cut already; a last bound
        message = message[:MAX_MESSAGE_CHARS] + "..."
    log_event(
        "request-refused",
        level=logging.WARNING,
        table=shown(table),
        kind=kind,
        reason=message,
    )
    if kind == "timeout":
        count("TimedOut")
    else:
        count("Refused")
    return {"ok": False, "error": kind, "message": message}
