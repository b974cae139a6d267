"""Runs in: workers (the user's own jobs), broker Lambda, workstation (``ddb-capacity``).

Capacity requests ("get ready, here I come"): raise a table's minimum before heavy work,
hold it, and restore it when the work is done or the hold expires.

- (the hold and its rules are `core.holds`, pure; the hold store is `aws.store`; reading
  the table, moving minimums, ending holds and those expired is `aws.hold_table`, the EMF
  counts `aws.counts`: the scaler's tick ends expired holds through them, without this
  package)
- `validate`: checks of a request's arguments;
- `context`: a table's current traffic, and a level read again once a hold is recorded;
- `request`: making a request ([`request_capacity`][ddb_capacity_runtime.requests.request_capacity],
  [`CapacityHold`][ddb_capacity_runtime.requests.CapacityHold]);
- `ending`: ending a hold on release, by id; forgetting the holds of a table not served;
- `restorer`: ending expired holds, what the broker does for the ``CapacityRequests``
  restorer's rule;
- `broker`: the ``CapacityRequests`` broker Lambda, the only way in for workers;
- `client`: the client that invokes the broker (workers, the CLI).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..aws.hold_table import restore_expired
from ..core.holds import (
    CapacityRequestError,
    CapacityRequestFailed,
    CapacityRequestTimeout,
    Hold,
)
from .ending import release_hold

if TYPE_CHECKING:
    from .request import CapacityHold, request_capacity

__all__ = [
    "CapacityHold",
    "CapacityRequestError",
    "CapacityRequestFailed",
    "CapacityRequestTimeout",
    "Hold",
    "release_hold",
    "request_capacity",
    "restore_expired",
]

_FROM_REQUEST = frozenset({"CapacityHold", "request_capacity"})
"""The names `request` gives, imported on first use (`__getattr__`)."""


def __getattr__(name: str) -> object:
    """`CapacityHold` and `request_capacity`, imported from `request` when first asked
    for: a process that only ends holds (`ending`) never compiles `request` and
    `validate`."""
    if name in _FROM_REQUEST:
        from . import request

        return getattr(request, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
