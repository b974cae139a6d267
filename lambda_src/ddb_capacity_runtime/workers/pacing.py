"""Runs in: workers (the user's own jobs).

A token bucket in capacity units per second, for work that paces itself by the capacity
DynamoDB reports it consumed (``ReturnConsumedCapacity``), not by request counts.

A caller reserves an estimate before a request ([`TokenBucket.acquire`][]) and settles
the difference once the response says what was consumed ([`TokenBucket.settle`][]). Tokens
accrue at ``rate`` up to ``burst``; while they are negative (debt) every caller waits. Over
any span T the units consumed stay within ``burst + rate x T`` plus the estimation error of
the requests in flight. Thread-safe; the clock and sleep are injectable for tests.

[`throttle_cause`][] tells the workers why DynamoDB throttled a request, from the
``ThrottlingReasons`` of the exception: a hot key (``"key-range"``) is not cooled by slowing
the whole job, the other causes are.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Literal

from ..aws.errors import CODES, is_throttle
from ..core.errors import CapacityError

if TYPE_CHECKING:
    from botocore.exceptions import ClientError

THROTTLED = tuple(sorted(code for code, meaning in CODES.items() if meaning.throttled))
"""The error codes of a throttled request (after botocore's own retries): those that the one table
of AWS's error codes (`aws.errors.CODES`) calls throttled."""

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


class PacingError(CapacityError, ValueError):
    """A rate or burst that is not a positive number."""


def _positive(name: str, value: float) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise PacingError(
            f"{name}: got {value!r}; expected a number of capacity units per second > 0"
        )
    return float(value)


class TokenBucket:
    def __init__(
        self,
        rate: float,
        burst: float | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._rate = _positive("rate", rate)
        self._burst = _positive("burst", burst) if burst is not None else self._rate
        self._clock = clock
        self._sleep = sleep
        self._tokens = self._burst
        self._updated = clock()
        self._lock = threading.Lock()

    @property
    def rate(self) -> float:
        return self._rate

    def set_rate(self, rate: float) -> None:
        """Change the rate from now on (tokens accrued so far are kept)."""
        with self._lock:
            self._refill()
            self._rate = _positive("rate", rate)

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self._burst, self._tokens + (now - self._updated) * self._rate)
        self._updated = now

    def acquire(self, estimate: float, stop: threading.Event | None = None) -> bool:
        """Wait until the bucket is out of debt, then reserve ``estimate`` units. False if
        ``stop`` was set while waiting (nothing is reserved then)."""
        while True:
            with self._lock:
                self._refill()
                if self._tokens > 0:
                    self._tokens -= max(0.0, estimate)
                    return True
                wait = -self._tokens / self._rate + 1e-3
            if stop is not None and stop.is_set():
                return False
            self._sleep(min(wait, 1.0))

    def settle(self, difference: float) -> None:
        """Charge (or refund, if negative) what a request consumed beyond its estimate."""
        with self._lock:
            self._refill()
            self._tokens = min(self._burst, self._tokens - difference)


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


def jittered(delay: float, rng: random.Random) -> float:
    """A wait between half of ``delay`` and ``delay`` ("equal jitter"): retries of a hot key
    spread out, and each still leaves the partition at least half the backoff to cool."""
    return delay / 2 + rng.uniform(0.0, delay / 2)
