"""The scaling policy's state and configuration at a fixed noon."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from ddb_capacity_runtime.core.policy import (
    DimensionState,
    PolicyConfig,
)

NOON = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


CONFIG = PolicyConfig()


def state(
    provisioned: int,
    consumed: list[float],
    throttles: list[float] | None = None,
    *,
    now: datetime = NOON,
    **kw: Any,
) -> DimensionState:
    n = len(consumed)
    starts = [now - timedelta(minutes=n - i + 1) for i in range(n)]
    return DimensionState(
        provisioned=provisioned,
        consumed=consumed,
        throttles=throttles or [0.0] * n,
        minute_starts=starts,
        min_capacity=kw.pop("min_capacity", 5),
        max_capacity=kw.pop("max_capacity", 10_000),
        now=now,
        **kw,
    )
