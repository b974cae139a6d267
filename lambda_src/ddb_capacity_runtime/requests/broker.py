"""The capacity-request broker: the one function workers may invoke to raise capacity.

Workers never get UpdateTable or RegisterScalableTarget. ``CapacityRequests`` deploys this
function with its own narrow role and grants workers ``lambda:InvokeFunction`` on it alone.
The broker checks each request against the construct's configuration (its tables, the
indexes it allows, the largest hold in units and in time), then makes it through the hold
store exactly as a direct :func:`~.request.request_capacity` would.

Events (JSON):

- ``{"action": "request", "table": T, "index": I|null, "read": N, "write": N,
  "hold_minutes": M, "timeout_seconds": S}``
- ``{"action": "release", "table": T, "id": ID, "token": TOKEN}``: only the token the
  request returned ends a hold;
- ``{"action": "restore"}``: end the expired holds of every table it serves (what the
  scheduled restorer asks for), and forget the holds of tables it no longer serves or
  that were deleted or went on-demand (counted as ``HoldsDropped``).

Answers: ``{"ok": true, "hold": {...}}`` (what :meth:`CapacityHold.as_json` gives),
``{"ok": true, "changes": [...]}``, ``{"ok": true, "restored": [...], "failed": []}``, or
``{"ok": false, "error": "refused"|"timeout", "message": ...}`` for a request the broker
will not or could not make. Anything else (AWS failing, say) fails the invocation: it is
counted as a Lambda error and alarmed.

The client side, :func:`invoke_broker`, is what ``request_capacity(..., broker=NAME)``,
``release_hold(..., broker=NAME)`` and ``ddb-capacity request --broker NAME`` use.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ..aws.clients import Clients
from ..events import emit_metrics, log_event
from .holds import MAX_HOLD_MINUTES, CapacityRequestError, CapacityRequestTimeout, shown

if TYPE_CHECKING:
    from .store import HoldStore

#: The configuration ``CapacityRequests`` gives its broker: a JSON list of
#: ``{"table": NAME, "indexes": [NAME, ...]}``.
SCOPES_ENV = "CAPACITY_SCOPES"
#: The broker's function name, set on functions granted with ``grant_request``; the default
#: of ``request_capacity``'s and ``release_hold``'s ``broker``.
BROKER_ENV = "CAPACITY_BROKER"
#: The broker's Lambda timeout is 15 minutes; a request waits at most this long for the
#: table to be ready, which leaves time to withdraw the hold on a timeout.
BROKER_MAX_WAIT = timedelta(minutes=13)
#: Where the broker's EMF counts go.
NAMESPACE = "DynamoDBCapacity"
#: The longest refusal message an answer carries.
MAX_MESSAGE_CHARS = 1_000
#: The longest hold id or release token a release may name (both are far shorter).
MAX_ID_CHARS = 128


class BrokerConfigError(RuntimeError):
    """The broker's own configuration is broken: every request would fail, so the
    invocation fails (a Lambda error, alarmed) instead of refusing the caller."""


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
    return serve(event, BrokerConfig.from_env())  # BrokerConfigError: a failure


def serve(
    event: Mapping[str, Any],
    config: BrokerConfig,
    *,
    clients: Clients | None = None,
    store: HoldStore | None = None,
) -> dict[str, Any]:
    """Answer one broker event for the tables of ``config``. ``clients`` and ``store``:
    default, made from the environment (``$CAPACITY_HOLDS_TABLE`` and its bounds)."""
    from .ending import release_hold
    from .request import request_capacity
    from .restorer import restore_tables
    from .store import store_name

    action = event.get("action") if isinstance(event, Mapping) else None
    held: str | HoldStore = store if store is not None else store_name(None)
    try:
        if action == "request":
            table, index = _name(event, "table"), event.get("index")
            if index is not None:
                index = _name(event, "index")
            hold_minutes = _whole(event, "hold_minutes", 15, 1, MAX_HOLD_MINUTES)
            timeout_seconds = _whole(
                event, "timeout_seconds", 600, 0, int(BROKER_MAX_WAIT.total_seconds())
            )
            config.check(table, index)
            made = request_capacity(
                table,
                read=event.get("read", 0),
                write=event.get("write", 0),
                index=index,
                hold=timedelta(minutes=hold_minutes),
                timeout=timedelta(seconds=timeout_seconds),
                store=held,  # never through a broker: this is the broker
                clients=clients,
            )
            log_event("request-brokered", table=made.table, index=made.index, hold_id=made.id)
            return {"ok": True, "hold": made.as_json()}
        if action == "release":
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
            changes = release_hold(table, ident, token=token, store=held, clients=clients)
            return {"ok": True, "changes": changes}
        if action == "restore":
            return {
                "ok": True,
                **restore_tables(sorted(config.scopes), clients=clients, store=store),
            }
        raise CapacityRequestError(
            f"action: got {shown(action)}; expected 'request', 'release' or 'restore'"
        )
    except CapacityRequestTimeout as exc:
        return _refusal("timeout", exc, event)
    except CapacityRequestError as exc:
        return _refusal("refused", exc, event)


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
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise CapacityRequestError(
            f"{field}: got {shown(value)}; expected a whole number from {low} to {high}"
        )
    return value


def count(metric: str, value: int = 1) -> None:
    """One EMF record of the broker's namespace: ``metric`` is ``value``."""
    emit_metrics(
        {
            "_aws": {
                "Timestamp": int(time.time() * 1000),
                "CloudWatchMetrics": [
                    {"Namespace": NAMESPACE, "Dimensions": [[]], "Metrics": [{"Name": metric}]}
                ],
            },
            metric: value,
        }
    )


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
    count("Refused")
    return {"ok": False, "error": kind, "message": message}


# ---------------------------------------------------------------------------- client side


def broker_name(broker: str | None, env: Mapping[str, str] = os.environ) -> str | None:
    """The broker to use: ``broker``, else ``$CAPACITY_BROKER``; None: direct mode."""
    name = broker if broker is not None else env.get(BROKER_ENV)
    return name.strip() if isinstance(name, str) and name.strip() else None


def invoke_broker(name: str, payload: Mapping[str, Any], client: Any = None) -> dict[str, Any]:
    """Invoke the broker ``name`` synchronously and return its answer; a refusal raises
    :class:`CapacityRequestError`, a timeout :class:`CapacityRequestTimeout`."""
    if client is None:
        import boto3
        from botocore.config import Config

        # One attempt: a retried request would record a second hold. The read timeout
        # outlasts the broker's own 15-minute limit.
        client = boto3.client(
            "lambda",
            config=Config(read_timeout=960, retries={"total_max_attempts": 1}),
        )
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        response = client.invoke(
            FunctionName=name,
            InvocationType="RequestResponse",
            Payload=json.dumps(payload).encode(),
        )
        body = response["Payload"].read()
    except (ClientError, BotoCoreError) as exc:
        raise CapacityRequestError(f"broker {name}: {exc}") from None
    try:
        answer = json.loads(body or b"null")
    except ValueError:
        answer = None
    if response.get("FunctionError") or not isinstance(answer, dict):
        detail = answer.get("errorMessage") if isinstance(answer, dict) else body[:500]
        raise CapacityRequestError(f"broker {name} failed: {detail}")
    if answer.get("ok") is True:
        return answer
    message = f"broker {name}: {answer.get('message')}"
    if answer.get("error") == "timeout":
        raise CapacityRequestTimeout(message)
    raise CapacityRequestError(message)
