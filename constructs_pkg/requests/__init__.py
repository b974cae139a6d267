"""Runs in: CDK app (synth time).

Capacity requests for work about to start: the broker, the hold store, the workers'
grants and the restorer (`CapacityRequests`).
"""

from typing import TYPE_CHECKING

from .._exports import lazy_exports

_LAZY = {
    "CapacityRequestsProps": "._capacity_requests",
    "CapacityRequests": "._capacity_requests",
}

if TYPE_CHECKING:
    from ._capacity_requests import CapacityRequests, CapacityRequestsProps

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

__all__ = ["CapacityRequests", "CapacityRequestsProps"]
