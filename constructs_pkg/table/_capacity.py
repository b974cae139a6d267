"""Runs in: CDK app (synth time).

Capacity settings for one provisioned dimension (read or write of a table or GSI).

Validation happens here, at the door, with messages that name the field, the value
received and what is allowed. Values that are unresolved CDK tokens are not checked, but
for those the app must know when it is built (``table_quota``,
``target_utilization_percent``), refused naming the prop.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from aws_cdk import Duration

from ddb_capacity_runtime.core.errors import CapacityConfigError
from ddb_capacity_runtime.core.names import DEFAULT_TABLE_QUOTA as DEFAULT_TABLE_QUOTA
from ddb_capacity_runtime.core.names import MAX_TABLE_QUOTA as MAX_TABLE_QUOTA
from ddb_capacity_runtime.core.validators import is_number, is_whole

from ..common._props import bool_prop, duration_prop, is_token, known_at_synth

TARGET_UTILIZATION_RANGE = (20, 90)
"""Application Auto Scaling's range for DynamoDB target utilization, in percent."""

DEFAULT_TARGET_UTILIZATION = 70
"""Application Auto Scaling's stock default target, in percent."""

MAX_GSIS_PER_TABLE = 20
"""DynamoDB's default quota of global secondary indexes per table."""


class PrewarmMethod(enum.Enum):
    """How a table reaches its high-water mark before traffic arrives.

    WARM_THROUGHPUT: DynamoDB's native warm throughput on the table and each GSI.
    Takes effect at creation, billed once, can never be lowered, spends no decrease.

    PROVISION_THEN_SETTLE: the table and its GSIs are created provisioned at the
    high-water mark, then a one-shot settle step brings each of them down to its
    operating minimum. Costs up to one hour at the high-water mark and one of the
    day's capacity decreases for the table and for each GSI.
    """

    WARM_THROUGHPUT = "WARM_THROUGHPUT"
    PROVISION_THEN_SETTLE = "PROVISION_THEN_SETTLE"


NO_FLOOR = Duration.seconds(0)
"""The floor of a prop any Duration may take (a cooldown)."""


def check_table_quota(where: str, table_quota: Any) -> int:
    """``table_quota`` checked (a whole number of capacity units from 1 to
    `MAX_TABLE_QUOTA`, known when the app is built); returns it."""
    known_at_synth(
        where,
        "table_quota",
        table_quota,
        "capacities are checked against it and the functions are configured with it",
        f"a whole number from 1 to {MAX_TABLE_QUOTA:,}",
    )
    if not is_whole(table_quota, 1, MAX_TABLE_QUOTA):
        raise CapacityConfigError(
            f"{where}: table_quota must be a whole number of capacity units from 1 to "
            f"{MAX_TABLE_QUOTA:,} (the account's per-table quota; DynamoDB's default is "
            f"{DEFAULT_TABLE_QUOTA:,}); got {table_quota!r}"
        )
    return int(table_quota)


def _plain(value: Any) -> bool:
    """A number known at synth (not a token)."""
    return is_number(value) and not is_token(value)


def _is_whole(value: Any) -> bool:
    """A whole number of units, as an int or a float (``10.0``)."""
    return is_number(value) and float(value).is_integer()


@dataclass(frozen=True, kw_only=True)
class Capacity:
    """Auto scaling range, target and high-water mark for one read or write dimension.

    :param min_capacity: the auto scaling minimum, in capacity units; also the operating
        capacity the table settles to. Whole number >= 1.
    :param max_capacity: the auto scaling maximum, in capacity units. Whole number, at
        least ``min_capacity`` and at most the table quota (40,000 by default).
    :param target_utilization_percent: target tracking's target. Default: 70 (%),
        Application Auto Scaling's stock value. Allowed: whole numbers from 20 to 90 (the
        fleet report, ``tune`` and the nightly tuning read and set whole percents).
    :param scale_in_cooldown: time after a scale-in before another. Default: not set,
        Application Auto Scaling's default for DynamoDB (0 seconds).
    :param scale_out_cooldown: time after a scale-out before another. Default: not set,
        Application Auto Scaling's default for DynamoDB (0 seconds).
    :param disable_scale_in: when True, target tracking never lowers capacity.
        Default: False (scale-in on).
    :param high_water_mark: capacity units this dimension must take instantly from the
        first minute (the production peak). Default: none, no pre-warming. Allowed: at
        least ``min_capacity`` and at most the table quota; it may exceed ``max_capacity``
        (a ceiling a schedule raises later).
    """

    min_capacity: int
    max_capacity: int
    target_utilization_percent: int = DEFAULT_TARGET_UTILIZATION
    scale_in_cooldown: Duration | None = None
    scale_out_cooldown: Duration | None = None
    disable_scale_in: bool = False
    high_water_mark: int | None = None

    def __post_init__(self) -> None:
        """A minimum above the maximum, or a high-water mark below the minimum, is wrong
        whatever the table: refused where the ``Capacity`` is made (`validate` checks the
        rest against the table it is given to). A token, or a value that is not a number
        (`validate` names it), is not compared."""
        mn, mx, hwm = self.min_capacity, self.max_capacity, self.high_water_mark
        if _plain(mn) and _plain(mx) and mn > mx:
            raise CapacityConfigError(
                f"Capacity: min_capacity ({mn}) must be lower than or equal to max_capacity ({mx})"
            )
        if _plain(hwm) and _plain(mn) and hwm < mn:  # type: ignore[operator]
            raise CapacityConfigError(
                f"Capacity: high_water_mark ({hwm}) is below min_capacity ({mn}); a "
                f"high-water mark is the peak the table must take, at least its minimum"
            )

    def validate(self, where: str, quota: int) -> None:
        """Raise [`CapacityConfigError`][] for the first setting that is not allowed.

        ``where`` names the dimension in messages, e.g. ``"Orders table read"``.
        """
        lo, hi = TARGET_UTILIZATION_RANGE
        for field in ("min_capacity", "max_capacity", "high_water_mark"):
            value = getattr(self, field)
            if (value is None and field == "high_water_mark") or is_token(value):
                continue  # a minimum and a maximum are required
            if not _is_whole(value):
                raise CapacityConfigError(
                    f"{where}: {field} must be a whole number of capacity units; got {value!r}"
                )
            if value < 1:
                raise CapacityConfigError(
                    f"{where}: {field} must be at least 1 capacity unit; got {value}"
                )
            if value > quota:
                raise CapacityConfigError(
                    f"{where}: {field} ({value}) is above the per-table quota of {quota} "
                    f"capacity units; lower it, or raise table_quota if your account's "
                    f"quota is higher"
                )
        target = self.target_utilization_percent
        known_at_synth(
            where,
            "target_utilization_percent",
            target,
            "aws-cdk-lib checks it when the target tracking policy is made",
            f"a whole number from {lo} to {hi}",
        )
        if not is_number(target):
            raise CapacityConfigError(
                f"{where}: target_utilization_percent must be a number from {lo} to "
                f"{hi}; got {target!r}"
            )
        if not lo <= target <= hi:
            raise CapacityConfigError(
                f"{where}: target_utilization_percent must be from {lo} to {hi} (%); got {target}"
            )
        if not _is_whole(target):
            raise CapacityConfigError(
                f"{where}: target_utilization_percent must be a whole number from {lo} to "
                f"{hi} (%); got {target}: the fleet report, tune and the nightly tuning "
                "read and set whole percents"
            )
        for cooldown in ("scale_in_cooldown", "scale_out_cooldown"):
            duration_prop(where, cooldown, getattr(self, cooldown), NO_FLOOR, optional=True)
        bool_prop(where, "disable_scale_in", self.disable_scale_in)

    @property
    def initial_capacity(self) -> int:
        """The operating capacity: where the dimension starts and settles."""
        return self.min_capacity

    def starting_units(self, prewarm: PrewarmMethod) -> int:
        """Where a new table's dimension starts: its high-water mark when ``prewarm``
        provisions it there (``PROVISION_THEN_SETTLE``), else its operating capacity."""
        if prewarm is PrewarmMethod.PROVISION_THEN_SETTLE and self.high_water_mark is not None:
            return self.high_water_mark
        return self.initial_capacity
