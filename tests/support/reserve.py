"""Runs in: tests. The hours `reserve` plans from, made by hand: one key's run with given
levels (`result`), a trace of a given length (`trace_of`) and a trace file of a daily swing
(`write_trace`), from `START` (half past a clock hour, so parts of hours are billed)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ddb_capacity_tools.simulator.model import Recorded
from ddb_capacity_tools.simulator.run import DimensionResult
from ddb_capacity_tools.simulator.trace import Trace

START = datetime(2026, 1, 5, 0, 30, tzinfo=UTC)


def result(dimension: str, provisioned: list[int], served: list[float] | None = None) -> Any:
    """One key's run (``dimension`` of the table) provisioned at ``provisioned`` a minute,
    serving ``served`` (none unless given)."""
    served = served if served is not None else [0.0] * len(provisioned)
    zeros = [0.0] * len(provisioned)
    recorded = Recorded(list(served), list(served), zeros, list(provisioned), zeros)
    return DimensionResult(
        "p", (None, dimension), 0.0, 0, None, 0.0, 0.0, 0, 0, 0, 0.0, recorded=recorded
    )


def trace_of(minutes: int, start: datetime = START) -> Trace:
    """A trace of ``minutes`` minutes of one unit a second each way."""
    return Trace("t", start, {(None, "read"): [1.0] * minutes, (None, "write"): [1.0] * minutes})


def write_trace(path: Path, minutes: int, read: float, start: datetime = START) -> str:
    """A trace file at ``path``: ``read`` units a second, half again in the second half of
    each day, and a quarter as many writes."""
    rows = ["timestamp,read,write"]
    for m in range(minutes):
        swing = read * (1.5 if (m // 60) % 24 >= 12 else 1.0)
        rows.append(f"{start + timedelta(minutes=m):%Y-%m-%dT%H:%M:%SZ},{swing},{swing / 4}")
    path.write_text("\n".join(rows) + "\n")
    return str(path)
