"""Runs in: scaler Lambda, broker Lambda, workers (the user's own jobs, in direct mode),
workstation (``ddb-capacity``).

Bounded retries with exponential backoff for the calls a whole tick shares."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

T = TypeVar("T")
#: Errors no retry can fix.
FINAL_CODES = frozenset(
    {
        "AccessDeniedException",
        "AccessDenied",
        "ValidationException",
        "UnrecognizedClientException",
        "InvalidParameterValue",
    }
)


#: The codes of a throttled control-plane call (DynamoDB, Application Auto Scaling,
#: CloudWatch, the Resource Groups Tagging API, SQS): the rate, not the request, was refused.
THROTTLED_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "RequestThrottled",
        "LimitExceededException",
    }
)


def is_throttle(exc: BaseException) -> bool:
    """Whether ``exc`` is an AWS error that refused the call's rate (`THROTTLED_CODES`)."""
    if not isinstance(exc, ClientError):
        return False
    return exc.response.get("Error", {}).get("Code") in THROTTLED_CODES


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
        code = parsed.get("Error", {}).get("Code") if isinstance(parsed, dict) else None
        if code in THROTTLED_CODES:
            with self._lock:
                self.count += 1


def with_retries(
    call: Callable[[], T],
    *,
    attempts: int = 3,
    base_delay: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``call()``, tried up to ``attempts`` times on AWS or connection errors, waiting
    ``base_delay`` x 2^n between tries; the last error is raised."""
    for attempt in range(attempts):
        try:
            return call()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in FINAL_CODES or attempt == attempts - 1:
                raise
        except BotoCoreError:
            if attempt == attempts - 1:
                raise
        sleep(base_delay * 2**attempt)
    raise AssertionError("not reached")  # pragma: no cover


def describe_error(exc: BaseException) -> str:
    """One line naming an error: the AWS error code and message, or the exception."""
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return f"{error.get('Code')}: {error.get('Message')}"
    return f"{type(exc).__name__}: {exc}"
