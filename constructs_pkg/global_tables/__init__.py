"""Runs in: CDK app (synth time).

Global tables: a provisioned `TableV2`'s schedules and windows in every replica, its warm
throughput (`GlobalTableCapacity`, `HighWaterMark`), and a replica for the scaler of its
Region (`Replica`).
"""

from typing import TYPE_CHECKING

from .._exports import lazy_exports

_LAZY = {
    "GlobalTableCapacityProps": "._global_table",
    "GlobalTableCapacity": "._global_table",
    "HighWaterMark": "._global_table",
    "Replica": "._replica",
}

if TYPE_CHECKING:
    from ._global_table import GlobalTableCapacity, GlobalTableCapacityProps, HighWaterMark
    from ._replica import Replica

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

__all__ = ["GlobalTableCapacity", "GlobalTableCapacityProps", "HighWaterMark", "Replica"]
