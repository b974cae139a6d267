"""A clock the signals tests move."""

from __future__ import annotations

import time


class Clock:
    """A clock that moves only when slept on: the lease waits are the time spent."""

    def __init__(self) -> None:
        self.t = time.time()

    def __call__(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds
