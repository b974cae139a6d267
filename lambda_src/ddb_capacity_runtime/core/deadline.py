"""Runs in: scaler Lambda (the scheduled function and the batch function), workstation
(examples, benchmarks).

A tick's deadline: the time after which it sends nothing (no lease taken, no control-plane
call made), so two ticks never act on one table at once and a tick never runs past its
function's timeout. What is left when it passes is counted and decided by the next tick.
Pure: the clock is given."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from ..core.errors import DeadlinePassed as DeadlinePassed

MARGIN = timedelta(seconds=20)
"""A tick's deadline (and a batch's) is the next tick less this: its last write ends before
the next tick's first."""


@dataclass(frozen=True)
class Deadline:
    """``at``: a time of ``clock`` (POSIX seconds) after which nothing is sent; None: no
    deadline."""

    at: float | None = None
    clock: Callable[[], float] = field(default=time.time, compare=False)

    def left(self) -> float:
        """Seconds left (infinite without a deadline; 0 or less once it passed)."""
        return math.inf if self.at is None else self.at - self.clock()

    def check(self, what: str) -> None:
        """Raise DeadlinePassed, naming ``what`` would have been sent, once it passed."""
        if self.left() <= 0:
            raise DeadlinePassed(f"not sent: {what}: the tick's deadline passed")

    def wait_until(self, now: float, most: float) -> float:
        """The end of a wait of at most ``most`` seconds from ``now`` (a time of any clock)
        that ends no later than the deadline."""
        return now + max(0.0, min(most, self.left()))


NONE = Deadline()
"""No deadline."""
