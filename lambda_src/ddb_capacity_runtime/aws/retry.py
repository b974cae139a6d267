"""Runs in: scaler Lambda, broker Lambda, workers (the user's own jobs, in direct mode),
workstation (``ddb-capacity``).

The one retry policy: botocore's own, as the clients are configured (`aws.clients`:
adaptive or standard retries, bounded attempts and timeouts); the library adds no retries of
its own. Inside a tick, `RetryWithin` bounds it by the tick's deadline (no retry that could
end after it), and `ThrottleCounter` counts the throttled attempts."""

from __future__ import annotations

import threading
from functools import partial
from typing import Any

from ..core.deadline import Deadline
from .clients import retry_bound
from .error_codes import error_code, is_throttle


class ThrottleCounter:
    """Counts the throttled attempts of ``clients`` while in its ``with`` block, retried ones
    included (botocore retries them, with backoff, before a call fails)."""

    def __init__(self, *clients: Any) -> None:
        self.count = 0
        self._clients = [c for c in clients if c is not None]
        self._lock = threading.Lock()

    def __enter__(self) -> ThrottleCounter:
        for client in self._clients:
            client.meta.events.register("needs-retry.*.*", self._seen)
        return self

    def __exit__(self, *_: object) -> None:
        for client in self._clients:
            client.meta.events.unregister("needs-retry.*.*", self._seen)

    def _seen(self, response: Any = None, **_: Any) -> None:
        parsed = response[1] if isinstance(response, tuple) and len(response) == 2 else None
        if is_throttle(parsed):
            with self._lock:
                self.count += 1


class RetryWithin:
    """While in its ``with`` block, botocore retries a failed call of ``clients`` only when
    the retry (botocore's longest backoff, then one whole attempt: `clients.retry_bound`)
    ends before ``deadline``; otherwise the call fails at once with the error it met, as
    botocore raises it after its last attempt. ``refused`` counts the retries refused.

    A ``needs-retry`` hook, run on every attempt (after `ThrottleCounter`'s, so a refused
    attempt is still counted, and before botocore's retry handler, so no retry quota is
    spent on it)."""

    def __init__(self, deadline: Deadline, *clients: Any) -> None:
        self.deadline = deadline
        self.refused = 0
        self._hooks = [(c, partial(self._check, c)) for c in clients if c is not None]
        self._lock = threading.Lock()

    def __enter__(self) -> RetryWithin:
        for client, hook in self._hooks:
            client.meta.events.register_last("needs-retry.*.*", hook)
        return self

    def __exit__(self, *_: object) -> None:
        for client, hook in self._hooks:
            client.meta.events.unregister("needs-retry.*.*", hook)

    def _check(
        self,
        client: Any,
        response: Any = None,
        caught_exception: BaseException | None = None,
        attempts: int = 1,
        operation: Any = None,
        **_: Any,
    ) -> None:
        http, parsed = response if isinstance(response, tuple) else (None, None)
        status = getattr(http, "status_code", 200)
        if caught_exception is None and status < 300 and error_code(parsed) is None:
            return  # an answer: nothing to retry
        if self.deadline.left() > retry_bound(client, attempts):
            return  # botocore decides, as it always does
        with self._lock:
            self.refused += 1
        if caught_exception is not None:
            raise caught_exception
        raise client.exceptions.from_code(error_code(parsed))(parsed, operation.name)
