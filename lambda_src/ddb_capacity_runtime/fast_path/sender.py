"""Runs in: workers (the user's own processes).

Sending the fast path's reports: one asynchronous invocation of the signals function
each, from a Lambda client of the watched boto3 Session's region (a fresh one after a
fork).
"""

from __future__ import annotations

import threading
from typing import Any

from ..aws.invoke import invoke


class LambdaSender:
    """Sends a batch of reports to the signals function as an asynchronous invocation
    (``Event``: Lambda queues it and answers at once). The Lambda client is made from
    ``session``; ``eager`` makes it now (a caller's session is not shared with the sending
    thread), else on first use (a session without a region is refused now all the same).
    After a fork the child makes its own from a fresh boto3 Session of the same region and
    profile (and the same keys, when the caller's session was given them): a session
    object of the parent may hold a lock another thread had then."""

    def __init__(self, function: str, session: Any, *, eager: bool) -> None:
        self.function = function
        self._session = session
        self.region: str | None = getattr(session, "region_name", None)
        """The region of the Lambda client: the region the watcher reports on."""
        profile = getattr(session, "profile_name", None)
        self._profile = profile if isinstance(profile, str) and profile != "default" else None
        self._keys: dict[str, str] = {}
        self._lock = threading.Lock()
        self._client: Any = self._make() if eager else None
        if eager:
            self._keys = _explicit_keys(session)
        elif not self.region:  # known now without a client: no client could be made later
            from botocore.exceptions import NoRegionError

            raise NoRegionError()

    def fresh_session(self) -> Any:
        """A new boto3 Session of the sender's region, profile and explicit keys."""
        import boto3

        keys = self._keys
        return boto3.session.Session(
            aws_access_key_id=keys.get("aws_access_key_id"),
            aws_secret_access_key=keys.get("aws_secret_access_key"),
            aws_session_token=keys.get("aws_session_token"),
            region_name=self.region,
            profile_name=self._profile,
        )

    def _make(self) -> Any:
        from botocore.config import Config

        config = Config(
            connect_timeout=2, read_timeout=5, retries={"total_max_attempts": 2, "mode": "standard"}
        )
        session = self._session if self._session is not None else self.fresh_session()
        return session.client("lambda", config=config)

    def __call__(self, payload: dict[str, Any]) -> None:
        with self._lock:
            if self._client is None:
                self._client = self._make()
            client = self._client
        invoke(client, self.function, payload, asynchronous=True)  # InvokeError on a refusal

    def after_fork(self) -> None:
        self._lock = threading.Lock()
        self._client = None
        self._session = None  # the child's client comes from a fresh session


def _explicit_keys(session: Any) -> dict[str, str]:
    """The keys a session was given explicitly (none for any other credentials: a fresh
    session finds those again)."""
    try:
        credentials = session.get_credentials()
    except Exception:  # noqa: BLE001 (a fresh session then finds its own)
        return {}
    if credentials is None or getattr(credentials, "method", None) != "explicit":
        return {}
    frozen = credentials.get_frozen_credentials()
    keys = {"aws_access_key_id": frozen.access_key, "aws_secret_access_key": frozen.secret_key}
    if frozen.token:
        keys["aws_session_token"] = frozen.token
    return keys
