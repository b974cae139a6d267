"""A trace file for the tune command."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path


def trace_file(tmp_path: Path) -> Path:
    """Three days: reads on a daily sine, writes at 50/s with a 3,000/s hour each night."""
    start = datetime(2026, 1, 5, tzinfo=UTC)
    rows = ["timestamp,read,write"]
    for m in range(3 * 1440):
        minute = m % 1440
        write = 3_000 if 120 <= minute < 180 else 50
        read = 500 + 400 * math.sin(2 * math.pi * minute / 1440)
        rows.append(f"{(start + timedelta(minutes=m)).isoformat()},{read:.1f},{write:.1f}")
    path = tmp_path / "trace.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def short_trace(tmp_path: Path, minutes: int) -> Path:
    """A trace of ``minutes`` minutes at 100 reads and 50 writes a second."""
    start = datetime(2026, 1, 5, tzinfo=UTC)
    rows = ["timestamp,read,write"]
    rows += [f"{(start + timedelta(minutes=m)).isoformat()},100,50" for m in range(minutes)]
    path = tmp_path / "short.csv"
    path.write_text("\n".join(rows) + "\n")
    return path
