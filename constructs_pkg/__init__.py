"""Runs in: CDK app (synth time).

CDK constructs for DynamoDB provisioned capacity that is ready before the traffic is.

Everything here is synth-time and loads the CDK. What runs in AWS Lambda and in workers is
[`ddb_capacity_runtime`][]; the simulator and the ``ddb-capacity`` command line are
`ddb_capacity_tools`. Neither of those imports this package.
"""

from typing import TYPE_CHECKING

from ddb_capacity_runtime import __version__
from ddb_capacity_runtime.core.errors import CapacityConfigError
from ddb_capacity_runtime.schedule.entries import EVERY_DAY, WEEKDAYS, ScheduleEntry, ScheduleError
from ddb_capacity_runtime.schedule.expressions import cron

from ._exports import lazy_exports

# Each feature is imported when one of its names is first used (_exports.lazy_exports).
_LAZY = {
    "AlarmOptions": ".common",
    "AlarmTopic": ".common",
    "DEFAULT_TABLE_QUOTA": ".table",
    "DEFAULT_TARGET_UTILIZATION": ".table",
    "Capacity": ".table",
    "PrewarmMethod": ".table",
    "CapacityRequests": ".requests",
    "FastPath": ".fast_path",
    "acknowledge": ".common",
    "apply_nag_packs": ".common",
    "skip_checkov": ".common",
    "FleetAdvisor": ".fleet",
    "GlobalTableCapacity": ".global_tables",
    "HighWaterMark": ".global_tables",
    "ReservedCapacity": ".scaler",
    "Replica": ".global_tables",
    "DEFAULT_SCALABLE_TARGET_QUOTA": ".table",
    "ScalableTargetQuota": ".table",
    "FunctionOptions": ".common",
    "ThrottleAwareScaler": ".scaler",
    "StreamSignal": ".fast_path",
    "ProvisionedTable": ".table",
    "TableCapacity": ".table",
    "NightlyTuning": ".fleet",
    "UNBOUNDED": "ddb_capacity_runtime.core.surge",
}

if TYPE_CHECKING:
    from ddb_capacity_runtime.core.surge import UNBOUNDED

    from .common import (
        AlarmOptions,
        AlarmTopic,
        FunctionOptions,
        acknowledge,
        apply_nag_packs,
        skip_checkov,
    )
    from .fast_path import FastPath, StreamSignal
    from .fleet import FleetAdvisor, NightlyTuning
    from .global_tables import GlobalTableCapacity, HighWaterMark, Replica
    from .requests import CapacityRequests
    from .scaler import ReservedCapacity, ThrottleAwareScaler
    from .table import (
        DEFAULT_SCALABLE_TARGET_QUOTA,
        DEFAULT_TABLE_QUOTA,
        DEFAULT_TARGET_UTILIZATION,
        Capacity,
        PrewarmMethod,
        ProvisionedTable,
        ScalableTargetQuota,
        TableCapacity,
    )


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

__all__ = [
    "AlarmOptions",
    "AlarmTopic",
    "Capacity",
    "CapacityConfigError",
    "CapacityRequests",
    "DEFAULT_SCALABLE_TARGET_QUOTA",
    "DEFAULT_TABLE_QUOTA",
    "DEFAULT_TARGET_UTILIZATION",
    "EVERY_DAY",
    "FastPath",
    "FleetAdvisor",
    "FunctionOptions",
    "GlobalTableCapacity",
    "HighWaterMark",
    "NightlyTuning",
    "PrewarmMethod",
    "ProvisionedTable",
    "Replica",
    "ReservedCapacity",
    "ScalableTargetQuota",
    "ScheduleEntry",
    "ScheduleError",
    "StreamSignal",
    "TableCapacity",
    "UNBOUNDED",
    "ThrottleAwareScaler",
    "WEEKDAYS",
    "__version__",
    "acknowledge",
    "apply_nag_packs",
    "cron",
    "skip_checkov",
]
