"""Runs in: scaler Lambda, broker Lambda, workers (the user's own jobs, in direct mode),
workstation (``ddb-capacity``).

Bounded retries with exponential backoff for the calls a whole tick shares."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

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
