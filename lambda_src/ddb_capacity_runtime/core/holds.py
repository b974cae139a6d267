"""Runs in: scaler Lambda, broker Lambda, workers (the user's own jobs), CDK app (synth: the
longest hold), workstation (``ddb-capacity``).

Capacity requests: "get ready, here I come" ("Handle traffic spikes with
Amazon DynamoDB provisioned capacity", design 7). The hold and its rules.

A worker about to start heavy work asks for capacity on top of the current traffic. The
request raises the minimum now, waits until the table is ACTIVE with it, and holds it for a
while; the worker's own traffic then keeps capacity up for as long as the work runs.

Several requesters add up (coordinator semantics): the level of a dimension is the traffic
seen when its first active hold was made plus the units of every active hold, so two
workers asking for +5,000 each get +10,000 over the traffic. At every moment the minimum
follows one rule: the base (the minimum before the first hold), or, while holds are
active, the larger of the base and their level.

Holds live in the hold store (`aws.store`), a small DynamoDB table with conditional writes.

- Where the dimension has a scalable target, its MinCapacity is raised, so auto scaling
  knows and will not undo the raise; the table is also raised at once with UpdateTable
  instead of waiting for auto scaling's scaling activity.
- Elsewhere the provisioned capacity is raised with UpdateTable.

A hold ends when it is released (the handle) or when it expires
([`restore_expired`][ddb_capacity_runtime.requests.restore_expired], run by the scaler's tick and by
the ``CapacityRequests`` restorer, so a worker that dies leaves nothing behind). Ending lowers the
minimum to what the remaining holds need, never below the base, and never cuts capacity that someone
else raised beyond the holds' level. Without a scalable target that lowering is an UpdateTable
decrease, made only when the decrease quota allows; otherwise the hold stays and the next restore
tries again.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Protocol

from ..core.errors import CapacityRequestError as CapacityRequestError
from ..core.errors import CapacityRequestFailed as CapacityRequestFailed
from ..core.errors import CapacityRequestTimeout as CapacityRequestTimeout
from ..core.errors import LeaseLost as LeaseLost
from ..core.errors import OnDemandForNow as OnDemandForNow
from ..core.errors import TableGone as TableGone
from .table_limits import Limits
from .tables import ManagedTable

MAX_HOLD = timedelta(hours=24)
MAX_HOLD_MINUTES = int(MAX_HOLD.total_seconds() // 60)


def token_digest(token: str) -> str:
    """What the store keeps of a release token (SHA-256, hex)."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class Hold:
    """One dimension of one capacity request. ``token_hash`` is the digest of its release
    token (None for a hold recorded before tokens: it cannot be released through a broker,
    and ends at its expiry)."""

    id: str
    index: str | None
    dimension: str
    units: int
    expires: datetime
    baseline: int
    token_hash: str | None = None

    @property
    def scope(self) -> tuple[str | None, str]:
        return (self.index, self.dimension)

    def active(self, now: datetime) -> bool:
        return now < self.expires

    def opens_with(self, token: str) -> bool:
        """Whether ``token`` is this hold's release token."""
        return self.token_hash is not None and hmac.compare_digest(
            self.token_hash, token_digest(token)
        )


class Holding(Protocol):
    """A hold as a level counts it: the traffic it saw and its units (`Hold`, and a surge's
    hold as `core.surge` reads it)."""

    @property
    def baseline(self) -> int: ...
    @property
    def units(self) -> int: ...


def level(holds: Iterable[Holding]) -> int:
    """The capacity a set of holds of one dimension asks for: the earliest traffic they saw
    plus all their units (0 for none)."""
    held = list(holds)
    if not held:
        return 0
    return min(h.baseline for h in held) + sum(h.units for h in held)


def lift(
    table: ManagedTable,
    held: Sequence[HeldDimension],
    now: datetime,
    quota: int | Callable[[str], int],
) -> ManagedTable:
    """``table`` with every dimension's limits lifted to its active holds' level, so the
    scaler neither lowers a held dimension nor caps it below the hold; never above
    ``quota``, the table quota (or each dimension's, `ScalerConfig.quota`; holds read from
    the store are untrusted: each is bounded alone, their sum only here). (The configured
    minimum under the holds is the state store's memory, which the table carries.)"""
    by_scope: Mapping[tuple[str | None, str], HeldDimension] = {h.scope: h for h in held}
    dims = []
    for d in table.dimensions:
        state = by_scope.get((d.index, d.dimension))
        if state is not None:
            bound = quota(d.dimension) if callable(quota) else quota
            floor = min(level(state.active(now)), bound)
            if floor > d.limits.min_capacity:
                d = replace(
                    d,
                    limits=Limits(
                        floor, max(floor, d.limits.max_capacity), d.limits.target_utilization
                    ),
                )
        dims.append(d)
    return replace(table, dimensions=dims)


@dataclass(frozen=True)
class HeldDimension:
    """What the store says of one dimension: its base and its holds (well-formed ones in
    ``holds``, the ids of the others in ``malformed``), the minimum the library set and
    the one it is about to set, the autopilot's plan (its raw value) and the library's
    recent intents (`aws.store.INTENT_MEMORY`)."""

    table: str
    index: str | None
    dimension: str
    base: int | None
    holds: tuple[Hold, ...] = ()
    malformed: tuple[str, ...] = ()
    set_to: int | None = None
    intent: int | None = None
    plan: str | None = None
    recent: tuple[int, ...] = ()
    tuned: int | None = None
    """the nightly tuning loop's target value (percent, 20 to 90); None: none or malformed"""
    tuned_unread: bool = False
    """the item holds a tuned target value that is not one (malformed, or outside 20 to 90)"""
    base_unread: bool = False
    """the item holds a base that is not one (not a whole number from 1 to the largest
    quota): ``base`` is None, as for none"""

    @property
    def scope(self) -> tuple[str | None, str]:
        return (self.index, self.dimension)

    @property
    def holding(self) -> bool:
        """Whether the library holds anything of the dimension (an item at rest keeps only
        its base and recent intents)."""
        return bool(self.holds or self.malformed or self.plan is not None) or (
            self.set_to is not None or self.intent is not None
        )

    def active(self, now: datetime) -> list[Hold]:
        return [h for h in self.holds if h.active(now)]

    def needs_restore(self, now: datetime) -> bool:
        return bool(self.malformed) or any(not h.active(now) for h in self.holds)
