"""Runs in: CDK app (synth time).

A table's capacity: its range, target and high-water mark for each dimension
(`Capacity`), its schedules and pre-warming on any table (`TableCapacity`), a new
provisioned table with them (`ProvisionedTable`), and the app's scalable targets against
Application Auto Scaling's quota (`ScalableTargetQuota`).
"""

from typing import TYPE_CHECKING

from .._exports import lazy_exports

_LAZY = {
    "TableCapacityProps": "._table",
    "DEFAULT_TABLE_QUOTA": "._capacity",
    "DEFAULT_TARGET_UTILIZATION": "._capacity",
    "Capacity": "._capacity",
    "PrewarmMethod": "._capacity",
    "ProvisionedTable": "._provisioned_table",
    "ProvisionedTableProps": "._provisioned_table",
    "DEFAULT_SCALABLE_TARGET_QUOTA": "._quota",
    "ScalableTargetQuota": "._quota",
    "TableCapacity": "._table",
}

if TYPE_CHECKING:
    from ._capacity import DEFAULT_TABLE_QUOTA, DEFAULT_TARGET_UTILIZATION, Capacity, PrewarmMethod
    from ._provisioned_table import ProvisionedTable, ProvisionedTableProps
    from ._quota import DEFAULT_SCALABLE_TARGET_QUOTA, ScalableTargetQuota
    from ._table import TableCapacity, TableCapacityProps

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

__all__ = [
    "Capacity",
    "DEFAULT_SCALABLE_TARGET_QUOTA",
    "DEFAULT_TABLE_QUOTA",
    "DEFAULT_TARGET_UTILIZATION",
    "PrewarmMethod",
    "ProvisionedTable",
    "ProvisionedTableProps",
    "ScalableTargetQuota",
    "TableCapacity",
    "TableCapacityProps",
]
