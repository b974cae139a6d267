"""CDK constructs for DynamoDB provisioned capacity that is ready before the traffic is.

Names are loaded on first use, so the command-line tools (``ddb-capacity``) and the
simulator start without loading the CDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .capacity import (
        DEFAULT_TABLE_QUOTA,
        DEFAULT_TARGET_UTILIZATION,
        Capacity,
        PrewarmMethod,
    )
    from .capacity_requests import CapacityRequests
    from .compliance import acknowledge, apply_nag_packs
    from .errors import CapacityConfigError
    from .scaler import ThrottleAwareScaler
    from .schedule import EVERY_DAY, WEEKDAYS, ScheduleEntry, ScheduleError, cron
    from .table import ProvisionedTable

_HOMES = {
    "DEFAULT_TABLE_QUOTA": "capacity",
    "DEFAULT_TARGET_UTILIZATION": "capacity",
    "Capacity": "capacity",
    "CapacityConfigError": "errors",
    "CapacityRequests": "capacity_requests",
    "PrewarmMethod": "capacity",
    "acknowledge": "compliance",
    "apply_nag_packs": "compliance",
    "ThrottleAwareScaler": "scaler",
    "EVERY_DAY": "schedule",
    "WEEKDAYS": "schedule",
    "ScheduleEntry": "schedule",
    "ScheduleError": "schedule",
    "cron": "schedule",
    "ProvisionedTable": "table",
}

__all__ = [
    "Capacity",
    "CapacityConfigError",
    "CapacityRequests",
    "DEFAULT_TABLE_QUOTA",
    "DEFAULT_TARGET_UTILIZATION",
    "EVERY_DAY",
    "PrewarmMethod",
    "ProvisionedTable",
    "ScheduleEntry",
    "ScheduleError",
    "ThrottleAwareScaler",
    "WEEKDAYS",
    "acknowledge",
    "apply_nag_packs",
    "cron",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
