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

import json
import math
import random
import threading
import time
from collections.abc import Callable, Mapping

from ..aws.throttle_causes import (  # where the workers took them from
    CAUSES,
    HOT_KEY,
    MAX_REASONS,
    REASONS,
    THROTTLED,
    ThrottleCause,
    reasons_cause,
    strongest,
    throttle_cause,
)
from ..core.errors import PacingError as PacingError
from ..core.errors import shown
from ..core.validators import is_number

__all__ = [
    "CAUSES",
    "HOT_KEY",
    "MAX_REASONS",
    "REASONS",
    "ITEM_KB",
    "THROTTLED",
    "PacingError",
    "ThrottleCause",
    "TokenBucket",
    "item_bytes",
    "jittered",
    "reasons_cause",
    "reported_units",
    "strongest",
    "throttle_cause",
]


def _positive(name: str, value: float) -> float:
    if not (is_number(value, 0) and value > 0):
        raise PacingError(
            f"{name}: got {value!r}; expected a number of capacity units per second > 0"
        )
    return float(value)


def _units(name: str, value: object) -> None:
    """Refuse ``value`` unless it is a number of capacity units: one that is not would
    leave the bucket's tokens unusable (NaN) for every later caller."""
    if not is_number(value):
        raise PacingError(f"{name}: got {shown(value)}; expected a number of capacity units")


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
        """Wait until the bucket is out of debt, then reserve ``estimate`` units (a negative
        one as 0). False if ``stop`` was set while waiting (nothing is reserved then)."""
        _units("estimate", estimate)
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
        _units("difference", difference)
        with self._lock:
            self._refill()
            self._tokens = min(self._burst, self._tokens - difference)


def reported_units(consumed: object, least: float = 0.0, most: float = math.inf) -> float | None:
    """The capacity units an answer says it consumed: its ``ConsumedCapacity`` (one, or a
    list of them), summed. None when the answer does not say (an endpoint that ignores
    ``ReturnConsumedCapacity``), says something that is not a number of units, or a sum
    outside [``least``, ``most``]: what the request must have cost, and could have cost at
    most. The caller then charges its estimate, and never reads an unknown cost as free
    (a 0 that would lift the pacing) nor as a debt no job outlives (a 1e308)."""
    entries = [consumed] if isinstance(consumed, Mapping) else consumed
    if not isinstance(entries, list) or not entries:
        return None
    units = [e.get("CapacityUnits") if isinstance(e, Mapping) else None for e in entries]
    if not all(is_number(u, 0) for u in units):
        return None
    total = sum(float(u) for u in units if u is not None)  # two of 1e308: inf, refused
    return total if math.isfinite(total) and least <= total <= most else None


ITEM_KB = 1024
"""Bytes in the kilobyte a write unit is counted by."""


def item_bytes(value: object) -> int:
    """An item's size, as the bytes of its JSON (attribute names, values and the type tags
    of a serialized item): an overestimate of DynamoDB's count, never below it for the
    items a writer sends, so a cost estimated from it errs toward slower."""
    return len(json.dumps(value, default=repr, separators=(",", ":")).encode())


def jittered(delay: float, rng: random.Random) -> float:
    """A wait between half of ``delay`` and ``delay`` ("equal jitter"): retries of a hot key
    spread out, and each still leaves the partition at least half the backoff to cool."""
    return delay / 2 + rng.uniform(0.0, delay / 2)
