"""Runs in: scaler Lambda, broker Lambda, signals Lambda, stream reader,
settle Lambda, workers (the user's own jobs), workstation (``ddb-capacity``, fleet report).

AWS's errors at the boundary: the one place that reads an error's code (`error_code`) and
the one table of what each code means to the library (`CODES`): whether the call's rate, not
the call, was refused (throttled: botocore's retry mode retries it), whether no retry can fix
it (final), and what a change that met it became (its `Status`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass

from ..core.outcomes import Status


@dataclass(frozen=True, eq=False)
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
