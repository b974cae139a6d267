"""Runs in: CDK app (synth time).

The throttle-aware scaler: its function, its tables, IAM, metrics and alarms
(`ThrottleAwareScaler`; its props and their defaults, `ScalerProps`), and the reserved
capacity its decreases keep to (`ReservedCapacity`).
"""

from typing import TYPE_CHECKING

from .._exports import lazy_exports

_LAZY = {
    "ReservedCapacity": "..common._props",
    "ThrottleAwareScaler": "._scaler",
    "ScalerProps": "._scaler_props",
    "ScalerTables": "._scaler_props",
}

if TYPE_CHECKING:
    from ..common._props import ReservedCapacity
    from ._scaler import ThrottleAwareScaler
    from ._scaler_props import ScalerProps, ScalerTables

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

__all__ = ["ReservedCapacity", "ScalerProps", "ScalerTables", "ThrottleAwareScaler"]
