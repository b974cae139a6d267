"""CDK constructs for DynamoDB provisioned capacity that is ready before the traffic is."""

from .capacity import (
    DEFAULT_TABLE_QUOTA,
    DEFAULT_TARGET_UTILIZATION,
    Capacity,
    CapacityConfigError,
    PrewarmMethod,
)
from .compliance import acknowledge, apply_nag_packs
from .scaler import ThrottleAwareScaler
from .schedule import EVERY_DAY, WEEKDAYS, ScheduleEntry, ScheduleError, cron
from .table import ProvisionedTable

__all__ = [
    "DEFAULT_TABLE_QUOTA",
    "DEFAULT_TARGET_UTILIZATION",
    "EVERY_DAY",
    "WEEKDAYS",
    "Capacity",
    "CapacityConfigError",
    "PrewarmMethod",
    "ScheduleEntry",
    "ScheduleError",
    "ThrottleAwareScaler",
    "ProvisionedTable",
    "acknowledge",
    "apply_nag_packs",
    "cron",
]
