"""Runs in: workers (the user's own jobs), workstation (``ddb-capacity
--broker``).

The client side of the ``CapacityRequests`` broker: `invoke_broker` is what
``request_capacity(..., broker=NAME)``, ``release_hold(..., broker=NAME)`` and ``ddb-capacity
request --broker NAME`` use.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from ..aws.clients import regional
from ..aws.invoke import InvokeError, invoke, lambda_client
from ..aws.store import HoldStore, store_name
from ..core.errors import shown
from ..core.holds import CapacityRequestError, CapacityRequestFailed, CapacityRequestTimeout
from ..core.names import STORE_ENV

BROKER_ENV = "CAPACITY_BROKER"
"""The broker's function name, set on functions granted with ``grant_request``; the default of
``request_capacity``'s and ``release_hold``'s ``broker``."""
BROKER_MAX_WAIT = timedelta(minutes=13)
"""The broker's Lambda timeout is 15 minutes; a request waits at most this long for the table to be
ready, which leaves time to withdraw the hold on a timeout."""


def broker_name(broker: str | None, env: Mapping[str, str] = os.environ) -> str | None:
    """The broker to use: ``broker``, else ``$CAPACITY_BROKER``; None: direct mode."""
    name = broker if broker is not None else env.get(BROKER_ENV)
    return name.strip() if isinstance(name, str) and name.strip() else None


def one_way(store: object, broker: object) -> None:
    """Refuse a request or release that names both a broker and a hold store: it is made
    one way, through the broker or directly (a blank broker names none)."""
    blank = isinstance(broker, str) and not broker.strip()
    if store is not None and broker is not None and not blank:
        named = store.name if isinstance(store, HoldStore) else store
        raise CapacityRequestError(
            f"broker and store: got broker {shown(broker)} and store {shown(named)}; expected "
            "one of them: broker=NAME (through the broker function) or store=NAME (its hold "
            "store table: direct mode)"
        )


def direct_store(
    store: str | HoldStore | None, broker: str | None, env: Mapping[str, str] = os.environ
) -> str | HoldStore:
    """The hold store of a request or release made directly (no broker named: ``broker``
    None, or blank): ``store``, else ``$CAPACITY_HOLDS_TABLE``'s; neither refused naming
    both ways, the broker first (a worker is granted the broker, not the store)."""
    if isinstance(store, HoldStore):
        return store
    if store is None and not env.get(STORE_ENV, "").strip():
        if broker is not None:  # blank: it named no broker, whatever the environment holds
            raise CapacityRequestError(
                f"broker: got {broker!r}; expected the broker function's name (CapacityRequests' "
                "broker.function_name), or store=NAME (its hold store table: direct mode)"
            )
        raise CapacityRequestError(
            f"broker and store: got neither, and neither {BROKER_ENV} nor {STORE_ENV} is set; "
            "expected broker=NAME (the broker function CapacityRequests made, its "
            f"broker.function_name; a Lambda function given grant_request has {BROKER_ENV} "
            "set) or store=NAME (its hold store table, hold_store.table_name: direct mode)"
        )
    return store_name(store, env)


def invoke_broker(name: str, payload: Mapping[str, Any], client: Any = None) -> dict[str, Any]:
    """Invoke the broker ``name`` synchronously and return its answer; a refusal raises
    [`CapacityRequestError`][ddb_capacity_runtime.requests.CapacityRequestError], a timeout
    [`CapacityRequestTimeout`][ddb_capacity_runtime.requests.CapacityRequestTimeout], a
    broker that failed (its invocation an error: a call AWS failed for it) or could not be
    invoked `CapacityRequestFailed`."""
    try:
        body, function_error = invoke(client or regional(lambda_client), name, payload)
    except InvokeError as exc:
        raise CapacityRequestFailed(f"broker {name}: {exc}") from None
    try:
        answer = json.loads(body or b"null")
    except ValueError:
        answer = None
    if function_error or not isinstance(answer, dict):
        detail: object = answer.get("errorMessage") if isinstance(answer, dict) else body[:500]
        # the broker failed (a call AWS failed for it, say): not a refusal of the request
        raise CapacityRequestFailed(f"broker {name} failed: {str(detail)[:500]}")
    if answer.get("ok") is True:
        return answer
    if answer.get("ok") is not False or not isinstance(answer.get("message"), str):
        raise CapacityRequestError(
            f'broker {name}: answered {json.dumps(answer, default=str)[:300]}, neither "ok": '
            'true nor "ok": false with a "message" (is it the capacity broker?)'
        )
    message = f"broker {name}: {answer['message']}"
    if answer.get("error") == "timeout":
        raise CapacityRequestTimeout(message)
    raise CapacityRequestError(message)
