"""Runs in: CDK app (synth time).

CDK constructs for DynamoDB provisioned capacity that is ready before the traffic is.

Everything here is synth-time and loads the CDK. What runs in AWS Lambda and in workers is
[`ddb_capacity_runtime`][]; the simulator and the ``ddb-capacity`` command line are
`ddb_capacity_tools`. Neither of those imports this package.
"""

import importlib
from typing import TYPE_CHECKING, Any

from ddb_capacity_runtime import __version__
from ddb_capacity_runtime.core.errors import CapacityConfigError
from ddb_capacity_runtime.schedule.entries import EVERY_DAY, WEEKDAYS, ScheduleEntry, ScheduleError
from ddb_capacity_runtime.schedule.expressions import cron

# The constructs load the CDK (seconds of jsii); each module is imported when one of its
# names is first used, so an app that uses the table and the scaler does not pay for the rest.
_LAZY = {
    "AlarmOptions": "alarms",
    "DEFAULT_TABLE_QUOTA": "capacity",
    "DEFAULT_TARGET_UTILIZATION": "capacity",
    "Capacity": "capacity",
    "PrewarmMethod": "capacity",
    "CapacityRequests": "capacity_requests",
    "FastPath": "fast_path",
    "acknowledge": "compliance",
    "apply_nag_packs": "compliance",
    "skip_checkov": "compliance",
    "FleetAdvisor": "fleet_advisor",
    "GlobalTableCapacity": "global_table",
    "HighWaterMark": "global_table",
    "ReservedCapacity": "props",
    "Replica": "replica_table",
    "DEFAULT_SCALABLE_TARGET_QUOTA": "quota",
    "ScalableTargetQuota": "quota",
    "FunctionOptions": "function_options",
    "ThrottleAwareScaler": "scaler",
    "StreamSignal": "stream_signal",
    "ProvisionedTable": "provisioned_table",
    "TableCapacity": "table",
    "NightlyTuning": "tuning",
    "UNBOUNDED": "ddb_capacity_runtime.core.surge",
}

if TYPE_CHECKING:
    from ddb_capacity_runtime.core.surge import UNBOUNDED

    from .alarms import AlarmOptions
    from .capacity import (
        DEFAULT_TABLE_QUOTA,
        DEFAULT_TARGET_UTILIZATION,
        Capacity,
        PrewarmMethod,
    )
    from .capacity_requests import CapacityRequests
    from .compliance import acknowledge, apply_nag_packs, skip_checkov
    from .fast_path import FastPath
    from .fleet_advisor import FleetAdvisor
    from .function_options import FunctionOptions
    from .global_table import GlobalTableCapacity, HighWaterMark
    from .props import ReservedCapacity
    from .provisioned_table import ProvisionedTable
    from .quota import DEFAULT_SCALABLE_TARGET_QUOTA, ScalableTargetQuota
    from .replica_table import Replica
    from .scaler import ThrottleAwareScaler
    from .stream_signal import StreamSignal
    from .table import TableCapacity
    from .tuning import NightlyTuning


def __getattr__(name: str) -> Any:
    """The construct-side name ``name``, its module imported on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    path = module if "." in module else f".{module}"  # a run-time module, or one of ours
    value = getattr(importlib.import_module(path, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "AlarmOptions",
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
