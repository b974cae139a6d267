"""Runs in: workstation (the `ddb-capacity` command).

Partitions, as a hot key meets them (`HotPartition`). DynamoDB spreads a table over
partitions by the hash of the partition key; each partition serves at most
`PARTITION_UNITS` (3,000 RCU and 1,000 WCU per second), whatever the table's
provisioned capacity. A key that takes a large share of the requests (a hot key) loads its
partition beyond that limit, and what the partition cannot serve is refused as a key-range
throttle: more provisioned capacity does not help.

The model, per table and per GSI (read and write of one share its partitions):

- **count**: the published historical formula ``ceil(RCU / 3000 + WCU / 1000)`` over the
  highest read and write capacity ever provisioned or warmed, at least
  ``ceil(size / 10 GB)``, and never fewer than before (DynamoDB never merges partitions);
  one more per split for heat;
- **the hot partition**: the hot key's share ``key_skew`` of every request (reads and
  writes alike), plus its slice of
  the rest, spread evenly over the key space: ``skew + (1 - skew) x width``, where
  ``width`` is the hot partition's share of the key space (``1 / count`` at first, and no
  more than that when the count grows);
- **split for heat**: after ``split_minutes`` minutes in a row in which the hot partition
  was asked for more than it serves (on reads or writes), DynamoDB splits it: its width
  halves, so its share falls towards the key's own, and never below it (a partition is
  never narrower than one key).

``key_skew`` 0 turns the model off: uniform traffic spreads over as many partitions as it
needs (the simulator's behaviour before partitions were modelled, kept exactly). A Zipf
distribution maps onto ``key_skew``: with exponent ``s`` over ``n`` keys, the hottest key's
share is ``1 / H(n, s)`` (`zipf_share`); only the hottest key is modelled, the others
are taken as evenly spread. On-demand tables have partitions too: theirs follow the
highest demand served so far (`on_demand_refusals`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ddb_capacity_runtime.core.validators import is_number, is_whole

from ..tool_errors import ModelError

PARTITION_UNITS = {"read": 3_000.0, "write": 1_000.0}
"""What one partition serves per second, per dimension."""
GB_PER_PARTITION = 10.0
"""What one partition holds."""


def partition_count(read_units: float, write_units: float, size_gb: float = 0.0) -> int:
    """The partitions a table (or GSI) needs for its capacity and its size, at least 1."""
    by_units = math.ceil(
        read_units / PARTITION_UNITS["read"] + write_units / PARTITION_UNITS["write"]
    )
    return max(1, by_units, math.ceil(size_gb / GB_PER_PARTITION))


def zipf_share(exponent: float, keys: int) -> float:
    """The hottest key's share of requests under a Zipf distribution of ``exponent`` over
    ``keys`` keys: the value of ``key_skew`` that stands for it."""
    if not is_number(exponent, 0) or not is_whole(keys, 1):
        raise ModelError(
            f"zipf_share: got exponent {exponent!r} over {keys!r} keys; expected an exponent "
            "of 0 or more over a whole number of keys from 1"
        )
    total: float = sum(math.pow(k, -exponent) for k in range(1, keys + 1))
    return 1.0 / total


@dataclass
class HotPartition:
    """One table's or GSI's partitions, seen from its hot key (module docstring)."""

    skew: float
    split_minutes: int | None
    size_gb: float = 0.0
    peak: dict[str, float] = field(default_factory=lambda: {"read": 0.0, "write": 0.0})
    """The highest read and write capacity provisioned or warmed so far."""
    count: int = 1
    width: float = 1.0
    """The hot partition's share of the key space."""
    splits: int = 0
    hot_for: int = 0
    """Minutes in a row the hot partition was asked for more than it serves."""
    hot: bool = False
    """Whether it was, in the minute under way."""

    def __post_init__(self) -> None:
        self._resize()

    def grow(self, dimension: str, units: float) -> None:
        """Capacity ``units`` provisioned or warmed on ``dimension``: more partitions if it
        is the highest yet."""
        if units > self.peak[dimension]:
            self.peak[dimension] = units
            self._resize()

    def _resize(self) -> None:
        base = partition_count(self.peak["read"], self.peak["write"], self.size_gb)
        if base + self.splits > self.count:
            self.count = base + self.splits
        self.width = min(self.width, 1.0 / base)

    @property
    def share(self) -> float:
        """The hot partition's share of the requests."""
        return self.skew + (1.0 - self.skew) * self.width

    def refuse(self, dimension: str, demand: float, given: float = 0.0) -> float:
        """Of ``demand`` (units/s) on ``dimension``, what is refused as key-range throttles:
        ``given`` (refusals known from the table's history, at most the demand), then what
        the hot partition cannot serve of the rest."""
        refused = self.would_refuse(dimension, demand, given)
        if refused > (given if given < demand else demand):
            self.hot = True
        return refused

    def would_refuse(self, dimension: str, demand: float, given: float = 0.0) -> float:
        """What `refuse` refuses, without counting the minute as hot."""
        fixed = given if given < demand else demand
        if self.skew <= 0.0:
            return fixed
        over = self.share * (demand - fixed) - PARTITION_UNITS[dimension]
        return fixed + over if over > 0.0 else fixed

    def end_minute(self) -> None:
        """Count the minute towards a split for heat, and split when it is due."""
        self.hot_for = self.hot_for + 1 if self.hot else 0
        self.hot = False
        if self.split_minutes is not None and self.hot_for >= self.split_minutes:
            self.hot_for = 0
            self.width /= 2
            self.splits += 1
            self.count += 1
