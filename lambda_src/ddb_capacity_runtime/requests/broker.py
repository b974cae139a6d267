"""The capacity-request broker: the one function workers may invoke to raise capacity.

Workers never get UpdateTable or RegisterScalableTarget. ``CapacityRequests`` deploys this
function with its own narrow role and grants workers ``lambda:InvokeFunction`` on it alone.
The broker checks each request against the construct's configuration (its tables, the
indexes it allows, the largest hold in units and in time), then makes it through the hold
store exactly as a direct :func:`~.request.request_capacity` would.

Events (JSON):

- ``{"action": "request", "table": T, "index": I|null, "read": N, "write": N,
  "hold_minutes": M, "timeout_seconds": S}``
- ``{"action": "release", "table": T, "id": ID}``
- ``{"action": "restore"}``: end the expired holds of every table it serves (what the
  scheduled restorer asks for).

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
from typing import Any

from ..events import emit_metrics, log_event
from .holds import CapacityRequestError, CapacityRequestTimeout

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
                f"table: got {table!r}; this broker serves only {', '.join(sorted(self.scopes))}"
            )
        allowed = self.scopes[table]
        if index is not None and index not in allowed:
            raise CapacityRequestError(
                f"index: got {index!r}; on table {table} this broker serves "
                + (
                    f"the table and the indexes {', '.join(sorted(allowed))}"
                    if allowed
                    else "the table only"
                )
            )


def broker_handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """AWS Lambda entry point of the ``CapacityRequests`` broker."""
    from .ending import release_hold
    from .request import request_capacity
    from .store import store_name

    action = event.get("action") if isinstance(event, Mapping) else None
    config = BrokerConfig.from_env()  # BrokerConfigError: a failure, not a refusal
    try:
        if action == "request":
            table, index = event.get("table"), event.get("index")
            hold_minutes = _whole(event, "hold_minutes", 15)
            timeout_seconds = _whole(event, "timeout_seconds", 600)
            if timeout_seconds > BROKER_MAX_WAIT.total_seconds():
                raise CapacityRequestError(
                    f"timeout_seconds: got {timeout_seconds}; the broker waits at most "
                    f"{int(BROKER_MAX_WAIT.total_seconds())} seconds"
                )
            if isinstance(table, str) and (index is None or isinstance(index, str)):
                config.check(table, index)
            made = request_capacity(
                table,  # type: ignore[arg-type]  # checked by request_capacity
                read=event.get("read", 0),
                write=event.get("write", 0),
                index=index,
                hold=timedelta(minutes=hold_minutes),
                timeout=timedelta(seconds=timeout_seconds),
                store=store_name(None),  # never through a broker: this is the broker
            )
            log_event("request-brokered", table=made.table, index=made.index, hold_id=made.id)
            return {"ok": True, "hold": made.as_json()}
        if action == "release":
            table, ident = event.get("table"), event.get("id")
            if not isinstance(table, str) or not isinstance(ident, str):
                raise CapacityRequestError(
                    f"table and id: got {table!r} and {ident!r}; expected a table name and "
                    f"a hold id"
                )
            config.check(table, None)
            return {"ok": True, "changes": release_hold(table, ident, store=store_name(None))}
        if action == "restore":
            from .restorer import restore_tables

            return {"ok": True, **restore_tables(sorted(config.scopes))}
        raise CapacityRequestError(
            f"action: got {action!r}; expected 'request', 'release' or 'restore'"
        )
    except CapacityRequestTimeout as exc:
        return _refusal("timeout", exc, event)
    except CapacityRequestError as exc:
        return _refusal("refused", exc, event)


def _whole(event: Mapping[str, Any], field: str, default: int) -> int:
    value = event.get(field, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CapacityRequestError(f"{field}: got {value!r}; expected a whole number")
    return value


def _refusal(kind: str, exc: Exception, event: Any) -> dict[str, Any]:
    table = event.get("table") if isinstance(event, Mapping) else None
    log_event(
        "request-refused",
        level=logging.WARNING,
        table=str(table)[:255],
        kind=kind,
        reason=str(exc),
    )
    emit_metrics(
        {
            "_aws": {
                "Timestamp": int(time.time() * 1000),
                "CloudWatchMetrics": [
                    {"Namespace": NAMESPACE, "Dimensions": [[]], "Metrics": [{"Name": "Refused"}]}
                ],
            },
            "Refused": 1,
        }
    )
    return {"ok": False, "error": kind, "message": str(exc)}


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
