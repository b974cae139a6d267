"""Runs in: workers (the user's own processes).

What the client hook hooks: the event emitter of a boto3 Session (every DynamoDB client it
makes), of a botocore one, or of one DynamoDB client, and the boto3 Session the hook's own
Lambda client is made from (`OwnSession`: one the hook made for itself, at a program's
start)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.errors import WatchError, WatchTypeError


@dataclass(frozen=True)
class OwnSession:
    """A boto3 Session the hook made for itself (`instrument.install`, at a program's
    start): nobody else uses it, so its Lambda client, and the search for credentials that
    making it starts, wait for the first report, in the sending thread; at start-up that
    search (a credential process, the instance metadata service) could hold the program
    up for seconds, even one that never calls AWS."""

    session: Any


def emitter_and_session(session_or_client: object) -> tuple[Any, Any, bool]:
    """The event emitter to hook, the boto3 Session to make a Lambda client from, and
    whether that boto3 Session is the caller's."""
    import boto3
    import botocore.session

    if isinstance(session_or_client, OwnSession):
        own = session_or_client.session
        return own.events, own, False
    if isinstance(session_or_client, boto3.session.Session):
        return session_or_client.events, session_or_client, True
    if isinstance(session_or_client, botocore.session.Session):
        emitter = session_or_client.get_component("event_emitter")
        return emitter, boto3.session.Session(botocore_session=session_or_client), True
    meta = getattr(session_or_client, "meta", None)
    model = getattr(meta, "service_model", None)
    if meta is not None and model is not None and hasattr(meta, "events"):
        if model.service_name != "dynamodb":
            raise WatchError(
                f"session_or_client: got a {model.service_name} client; expected a "
                "DynamoDB client or a boto3 Session"
            )
        return meta.events, boto3.session.Session(region_name=meta.region_name), False
    held = getattr(meta, "client", None)  # a boto3 resource's meta holds its client
    resource = " (a boto3 resource: pass its .meta.client)" if hasattr(held, "meta") else ""
    raise WatchTypeError(
        f"session_or_client: got {type(session_or_client).__name__}{resource}; expected a "
        "boto3 Session (every DynamoDB client it makes is watched) or a DynamoDB client"
    )
