"""Runs in: workers (the user's own jobs), the fast path's client hook (the user's own
processes).

Why DynamoDB throttled a request (`throttle_cause`), from the reasons its exception gives:
what the workers pace by and the fast path's reports count. Apart from `aws.error_codes`,
whose table of codes (`CODES`) it reads: the scaler reads throttles' causes from CloudWatch
(`aws.metrics.fetch_causes`), never from an error, and its asset carries none of this.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Literal

from .error_codes import CODES, is_throttle

if TYPE_CHECKING:
    from botocore.exceptions import ClientError

THROTTLED = tuple(sorted(code for code, meaning in CODES.items() if meaning.throttled))
"""The error codes of a throttled request (after botocore's own retries): those that the one table
of AWS's error codes (`aws.error_codes.CODES`) calls throttled."""

ThrottleCause = Literal["provisioned", "account-limit", "max-on-demand", "unknown", "key-range"]
CAUSES: tuple[ThrottleCause, ...] = (
    "provisioned",
    "account-limit",
    "max-on-demand",
    "unknown",
    "key-range",
)
"""Every cause, strongest first: a throttle with several reasons takes the strongest's cause. All
but ``"key-range"`` make a worker slow down, so a throttle counts as a hot key only when every one
of its reasons says so."""
HOT_KEY: ThrottleCause = "key-range"
"""The cause that slowing the whole worker does not help: one partition's own limit."""
_LIMITS: dict[str, ThrottleCause] = {
    "ProvisionedThroughputExceeded": "provisioned",
    "KeyRangeThroughputExceeded": "key-range",
    "AccountLimitExceeded": "account-limit",
    "MaxOnDemandThroughputExceeded": "max-on-demand",
}
REASONS: Mapping[str, ThrottleCause] = {
    f"{resource}{operation}{limit}": cause
    for resource in ("Table", "Index")
    for operation in ("Read", "Write")
    for limit, cause in _LIMITS.items()
}
"""Each ``ThrottlingReason.reason`` DynamoDB documents (``<Table|Index><Read|Write><limit>``), and
its cause."""
MAX_REASONS = 64
"""More reasons than this in one exception is not an answer DynamoDB gives (a table and its at most
20 indexes): the throttle is ``"unknown"``."""


def strongest(causes: Iterable[ThrottleCause]) -> ThrottleCause:
    """The first of `CAUSES` among ``causes`` (``"unknown"`` if there are none)."""
    found = set(causes)
    return next((cause for cause in CAUSES if cause in found), "unknown")


def _reason_cause(entry: object) -> ThrottleCause:
    reason = entry.get("reason") if isinstance(entry, Mapping) else None
    return REASONS.get(reason, "unknown") if isinstance(reason, str) else "unknown"


def reasons_cause(reasons: object) -> ThrottleCause:
    """The cause of a throttle from its ``ThrottlingReasons`` as botocore parsed them (a list
    of ``{"reason": ..., "resource": ...}``). Anything else (missing, not a list, empty, longer
    than `MAX_REASONS`) is ``"unknown"``, as is an entry that is not such a mapping or
    whose reason is not one of `REASONS`. Never raises."""
    if not isinstance(reasons, list | tuple) or not reasons or len(reasons) > MAX_REASONS:
        return "unknown"
    return strongest(_reason_cause(entry) for entry in reasons)


def throttle_cause(error: ClientError) -> ThrottleCause | None:
    """Why DynamoDB throttled the request that raised ``error``; None if ``error`` is not a
    throttle (its code is not one of `THROTTLED`). botocore puts the reasons on the
    response as ``ThrottlingReasons`` (ProvisionedThroughputExceededException,
    RequestLimitExceeded) or ``throttlingReasons`` (ThrottlingException); responses without
    them (older endpoints, DynamoDB Local, moto) are ``"unknown"``. Never raises."""
    if not is_throttle(error):
        return None
    response = error.response
    reasons = response.get("ThrottlingReasons")
    if reasons is None:
        reasons = response.get("throttlingReasons")
    return reasons_cause(reasons)
