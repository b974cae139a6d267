"""Runs in: workstation (the docs' cost table of the stream signal).

What the fast path's stream signal (``FastPath(stream=...)``) costs a month on one table
written at a steady rate, from list prices (`prices.Prices`: us-east-1,
Lambda on arm64, the state store on demand).

DynamoDB does not charge the reads of a stream by a Lambda function's event source
mapping ("GetRecords API calls invoked by Lambda as part of DynamoDB triggers are free"),
nor does the stream itself cost anything. What costs: the reader's invocations and their
duration, and, per invocation, on each dimension it counts (the table's write, each
GSI's), one write to its counter and one strongly consistent read of the surge's mark in
the state store (the surge decision reads more, but only while a surge is due or under
way). Assumptions, each a module constant: the stream has a shard per partition, and a
table written at W items of 1 KB or less a second runs at the target utilization
`TARGET`, so W / 0.7 write units over 1,000 units a partition (reads would add
partitions, and shards); Lambda invokes each shard once per batching window while it has
records (or as often as ``batch_size`` fills); an invocation lasts
`BASE_SECONDS` plus `RECORD_SECONDS` a record, at `MEMORY_MB`.
Lambda's own start and report lines are not logged (the reader's system log level is
WARN), so the log costs nothing at rest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .prices import Prices

__all__ = ["StreamCost", "monthly_stream_cost"]

SECONDS_PER_MONTH = 730 * 3600
"""Seconds in a month of 730 hours."""
TARGET = 0.7
"""The target utilization the table runs at (the library's default target)."""
PARTITION_WRITE_UNITS = 1_000
"""Write units a partition serves."""
BASE_SECONDS = 0.1
"""An invocation's time without its records: DescribeTable, a counter's ADD and a read of the
surge's mark (each a few milliseconds in the Region), and Python's own."""
RECORD_SECONDS = 0.0001
"""The time to read and size one record."""
MEMORY_MB = 256
"""The reader's memory (``constructs_pkg.fast_path._stream_signal.READER_MEMORY_MB``)."""
POLLS_PER_SECOND = 4
"""How often Lambda polls a shard when the batching window is 0."""


@dataclass(frozen=True)
class StreamCost:
    """Dollars a month, by what is charged, for a table written at ``writes`` a second."""

    writes: float
    shards: int
    invocations: float
    lambda_requests: float
    lambda_compute: float
    store: float

    @property
    def total(self) -> float:
        return self.lambda_requests + self.lambda_compute + self.store


def monthly_stream_cost(
    writes: float,
    *,
    dimensions: int = 1,
    batching_window: float = 1.0,
    batch_size: int = 1_000,
    prices: Prices | None = None,
) -> StreamCost:
    """The stream signal's dollars a month on a table written at ``writes`` items a
    second, counting ``dimensions`` dimensions (the table's write, and one per GSI)."""
    prices = prices or Prices()
    shards = max(1, math.ceil(writes / TARGET / PARTITION_WRITE_UNITS))
    per_shard = writes / shards
    windows = 1 / batching_window if batching_window else POLLS_PER_SECOND
    per_second = min(per_shard, max(windows, per_shard / batch_size))
    invocations = shards * per_second * SECONDS_PER_MONTH
    seconds = BASE_SECONDS + RECORD_SECONDS * (per_shard / per_second if per_second else 0)
    gb_seconds = invocations * seconds * MEMORY_MB / 1024
    store = (
        invocations
        * dimensions
        * (prices.write_request_million + prices.read_request_million)
        / 1e6
    )
    return StreamCost(
        writes,
        shards,
        invocations,
        invocations * prices.lambda_request_million / 1e6,
        gb_seconds * prices.lambda_gb_second,
        store,
    )
