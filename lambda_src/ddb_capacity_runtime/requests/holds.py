"""Capacity requests: "get ready, here I come" (seed 001, design 7).

A worker about to start heavy work asks for capacity on top of the current traffic. The
request raises the minimum now, waits until the table is ACTIVE with it, and holds it for a
while; the worker's own traffic then keeps capacity up for as long as the work runs.

Several requesters add up (coordinator semantics): the level of a dimension is the traffic
seen when its first active hold was made plus the units of every active hold, so two
workers asking for +5,000 each get +10,000 over the traffic.

State lives in tags on the table, one per dimension of a request::

    ddb-capacity:hold:<id>:<read|write> = <table|index/NAME>:<units>:<expires>:<baseline>

(``expires`` in epoch seconds, ``baseline`` the traffic in units per second). Tags are
durable, free, need no infrastructure, travel with the table, and are what the scaler
already reads. The minimum a hold replaced is kept in the ``ddb-capacity:base-min:`` tag
the scaler uses for its own raises, so either can restore it.

- Where the dimension has a scalable target, its MinCapacity is raised, so auto scaling
  knows and will not undo the raise; the table is also raised at once with UpdateTable
  instead of waiting for auto scaling's scaling activity.
- Elsewhere the provisioned capacity is raised with UpdateTable.

A hold ends when it is released (the handle) or when it expires (:func:`restore_expired`,
run by the scaler's tick and by the ``CapacityRequests`` restorer, so a worker that dies
leaves nothing behind). Ending lowers the minimum to what the remaining holds need, never
below the base, and never cuts capacity that someone else raised beyond the holds' level.
Without a scalable target that lowering is an UpdateTable decrease, made only when the
decrease quota allows; otherwise the hold's tag stays and the next restore tries again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from ..core.names import DIMENSIONS, TABLE_QUOTA, scope_label
from ..core.settings import Limits
from ..core.tables import ManagedTable
from ..core.tags import HOLD_TAG

DEFAULT_HOLD = timedelta(minutes=15)
MAX_HOLD = timedelta(hours=24)
DEFAULT_TIMEOUT = timedelta(minutes=10)
MAX_TAG_KEY, MAX_TAG_VALUE = 128, 256


class CapacityRequestError(ValueError):
    """A request that cannot be made or completed; the message says why."""


class CapacityRequestTimeout(CapacityRequestError, TimeoutError):
    """The table did not reach the requested capacity in time (the hold was withdrawn)."""


@dataclass(frozen=True)
class Hold:
    """One dimension of one capacity request, as stored in its table tag."""

    id: str
    index: str | None
    dimension: str
    units: int
    expires: datetime
    baseline: int

    @property
    def key(self) -> str:
        return f"{HOLD_TAG}{self.id}:{self.dimension}"

    @property
    def value(self) -> str:
        return (
            f"{scope_label(self.index)}:{self.units}:{int(self.expires.timestamp())}:"
            f"{self.baseline}"
        )

    @property
    def scope(self) -> tuple[str | None, str]:
        return (self.index, self.dimension)

    def active(self, now: datetime) -> bool:
        return now < self.expires

    @classmethod
    def from_tag(cls, key: str, value: str, now: datetime) -> Hold | None:
        """The hold a tag describes, or None when the tag is not a well-formed hold: units
        and baseline within the table quota, an expiry no later than the longest hold from
        ``now``."""
        ident, _, dimension = key[len(HOLD_TAG) :].rpartition(":")
        scope, *numbers = value.rsplit(":", 3)
        if not ident or dimension not in DIMENSIONS or len(numbers) != 3:
            return None
        if scope == "table":
            index = None
        elif scope.startswith("index/") and len(scope) > len("index/"):
            index = scope[len("index/") :]
        else:
            return None
        if not all(re.fullmatch(r"\d{1,12}", n) for n in numbers):
            return None
        units, expires, baseline = (int(n) for n in numbers)
        latest = (now + MAX_HOLD).timestamp() + 60
        if not 1 <= units <= TABLE_QUOTA or baseline > TABLE_QUOTA or expires > latest:
            return None
        return cls(ident, index, dimension, units, datetime.fromtimestamp(expires, UTC), baseline)


def holds_in(tags: Mapping[str, str], now: datetime) -> tuple[list[Hold], list[str]]:
    """The holds among a table's tags, and the keys of hold tags that are malformed (or out
    of bounds: see :meth:`Hold.from_tag`)."""
    holds, malformed = [], []
    for key, value in tags.items():
        if key.startswith(HOLD_TAG):
            hold = Hold.from_tag(key, value, now)
            if hold is None:
                malformed.append(key)
            else:
                holds.append(hold)
    return holds, malformed


def level(holds: Iterable[Hold]) -> int:
    """The capacity a set of holds of one dimension asks for: the earliest traffic they saw
    plus all their units (0 for none)."""
    held = list(holds)
    if not held:
        return 0
    return min(h.baseline for h in held) + sum(h.units for h in held)


def lift(table: ManagedTable, now: datetime) -> ManagedTable:
    """``table`` with every dimension's limits lifted to its active holds' level, so the
    scaler neither lowers a held dimension nor caps it below the hold."""
    holds, _ = holds_in(table.tags, now)
    dims = []
    for d in table.dimensions:
        floor = level(h for h in holds if h.scope == (d.index, d.dimension) and h.active(now))
        if floor > d.limits.min_capacity:
            d = replace(
                d,
                limits=Limits(
                    floor, max(floor, d.limits.max_capacity), d.limits.target_utilization
                ),
            )
        dims.append(d)
    return replace(table, dimensions=dims)


def needs_restore(tags: Mapping[str, str], now: datetime) -> bool:
    """Whether the table carries an expired or malformed hold."""
    holds, malformed = holds_in(tags, now)
    return bool(malformed) or any(not h.active(now) for h in holds)
