"""Runs in: scaler Lambda, broker Lambda, restorer Lambda, signals Lambda, stream reader,
settle Lambda, workers (the user's own jobs), workstation (``ddb-capacity``, fleet report).

AWS's errors at the boundary: the one place that reads an error's code (`error_code`) and
the one table of what each code means to the library (`CODES`): whether the call's rate, not
the call, was refused (throttled: botocore's retry mode retries it), whether no retry can fix
it (final), and what a change that met it became (its `Status`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from botocore.exceptions import ClientError

from ..core.outcomes import Status


@dataclass(frozen=True)
class Meaning:
    """What one AWS error code means to the library."""

    throttled: bool = False
    """The rate, not the request, was refused (botocore's retry mode retries it)."""
    final: bool = False
    """No retry can fix it (botocore does not retry it either)."""
    status: Status = Status.FAILED
    """What a change that met it became."""


_THROTTLED = Meaning(throttled=True)
_FINAL = Meaning(final=True)

CODES: Mapping[str, Meaning] = {
    # the rate was refused: DynamoDB's data plane, and the control planes the library calls
    # (DynamoDB, Application Auto Scaling, CloudWatch, the Resource Groups Tagging API, SQS)
    "ProvisionedThroughputExceededException": _THROTTLED,
    "RequestLimitExceeded": _THROTTLED,
    "Throttling": _THROTTLED,
    "ThrottlingException": _THROTTLED,
    "ThrottledException": _THROTTLED,
    "TooManyRequestsException": _THROTTLED,
    "RequestThrottled": _THROTTLED,
    # DynamoDB's decrease quota, or too many table operations at once
    "LimitExceededException": Meaning(throttled=True, status=Status.QUOTA_EXCEEDED),
    # no retry can fix these
    "AccessDenied": _FINAL,
    "AccessDeniedException": Meaning(final=True, status=Status.ACCESS_DENIED),
    "ValidationException": Meaning(final=True, status=Status.INVALID),
    "UnrecognizedClientException": _FINAL,
    "InvalidParameterValue": _FINAL,
    "ResourceNotFoundException": Meaning(final=True, status=Status.NOT_FOUND),
    # an UpdateTable already in flight: the next tick tries again
    "ResourceInUseException": Meaning(status=Status.RETRY_NEXT_TICK),
}
"""Every AWS error code the library tells apart, by meaning. A code that is not here is `UNKNOWN`:
not throttled, not known to be final, and a failed change."""
UNKNOWN = Meaning()
"""The meaning of a code that `CODES` does not name."""
CONDITION_FAILED = "ConditionalCheckFailedException"
"""A conditional write whose condition did not hold (the store's leases, markers, plans)."""
NO_SUCH_KEY = frozenset({"NoSuchKey", "404"})
"""A missing S3 object (GetObject says ``NoSuchKey``; HeadObject, only the status ``404``)."""
NO_SUCH_BUCKET = frozenset({"NoSuchBucket", "404"})
"""A missing S3 bucket (PutObject says ``NoSuchBucket``; HeadBucket, only the status ``404``)."""


def error_code(error: BaseException | Mapping[str, Any] | None) -> str | None:
    """The AWS error code of ``error``: a botocore ``ClientError`` (or anything with its
    ``response``), or a response as botocore parsed it; None for anything else, or one
    without a code. Never raises."""
    response = error if isinstance(error, Mapping) else getattr(error, "response", None)
    if not isinstance(response, Mapping):
        return None
    info = response.get("Error")
    code = info.get("Code") if isinstance(info, Mapping) else None
    return code if isinstance(code, str) and code else None


def error_message(error: BaseException) -> str:
    """The AWS error message of ``error`` ("" without one). Never raises."""
    response = getattr(error, "response", None)
    info = response.get("Error") if isinstance(response, Mapping) else None
    message = info.get("Message") if isinstance(info, Mapping) else None
    return message if isinstance(message, str) else ""


def meaning(error: BaseException | Mapping[str, Any] | None) -> Meaning:
    """What ``error``'s code means (`CODES`); `UNKNOWN` for any other."""
    code = error_code(error)
    return UNKNOWN if code is None else CODES.get(code, UNKNOWN)


def is_throttle(error: BaseException | Mapping[str, Any] | None) -> bool:
    """Whether ``error`` is an AWS error that refused the call's rate."""
    return meaning(error).throttled


def http_status(error: BaseException) -> int | None:
    """The HTTP status AWS answered the call that raised ``error`` with, when its response
    says one."""
    response = getattr(error, "response", None)
    meta = response.get("ResponseMetadata") if isinstance(response, Mapping) else None
    status = meta.get("HTTPStatusCode") if isinstance(meta, Mapping) else None
    return status if isinstance(status, int) else None


def describe_error(exc: BaseException) -> str:
    """One line naming an error: the AWS error code and message, or the exception."""
    code = error_code(exc)
    if code is not None:
        return f"{code}: {error_message(exc)}"
    return f"{type(exc).__name__}: {exc}"


# --- why DynamoDB throttled a request ---------------------------------------------------

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
