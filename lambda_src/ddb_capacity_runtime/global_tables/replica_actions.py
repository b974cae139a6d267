"""Runs in: global-table schedule Lambda, CDK app (synth time: `ACTION_PREFIX`, `MAX_ACTIONS`).

What one replica's custom resource carries, read as untrusted input: the table, the Region,
its GSIs, the scheduled actions of its targets and the role the function acts as there.
Every action's name begins with `ACTION_PREFIX`, so the function can only ever put or delete
actions the library named; an update removes exactly the actions the old properties had and
the new ones do not. Pure: no AWS call. CloudFormation passes every scalar of a custom
resource's properties as a string, so numbers are read from strings too."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.errors import ReplicaScheduleError
from ..core.names import DIMENSIONS, MAX_SCHEDULE_TEXT, is_table_name
from ..core.validators import is_region, is_whole, whole_text

ACTION_PREFIX = "ddb-capacity-"
"""The first characters of the name of every scheduled action the library puts on a replica's
targets: what it may delete."""
MAX_INDEXES = 20
"""The most GSIs a replica's resource names (DynamoDB's default quota a table)."""
MAX_ACTIONS = 200
"""The most actions one replica's resource carries, its table's and every GSI's together: what
the function puts, or deletes again after a failed Create, within its time (`CLEANUP_MS`);
synthesis refuses more (the constructs' `GlobalTableCapacity`)."""
MAX_UNITS = 1_000_000
NAME = re.compile(r"[\w.#-]{1,255}")
ROLE_ARN = re.compile(
    r"arn:aws(?:-[a-z]+){0,2}:iam::\d{12}:role/(?:[!-~]{0,510}/)?[A-Za-z0-9+=,.@_-]{1,64}",
    re.ASCII,
)
"""An IAM role's ARN, as a replica's ``RoleArn`` names the role its function acts as."""


@dataclass(frozen=True)
class ReplicaAction:
    """One scheduled action on one of a replica's scalable targets."""

    index: str | None
    dimension: str
    name: str
    schedule: str
    timezone: str | None = None
    start_time: str | None = None
    end_time: str | None = None
    min_capacity: int | None = None
    max_capacity: int | None = None

    @property
    def key(self) -> tuple[str | None, str, str]:
        return self.index, self.dimension, self.name

    def api(self) -> dict[str, Any]:
        """The action as `aws.scheduled_actions.put_action` takes it."""
        target = {
            k: v
            for k, v in (("MinCapacity", self.min_capacity), ("MaxCapacity", self.max_capacity))
            if v is not None
        }
        return {
            "ScheduledActionName": self.name,
            "Schedule": self.schedule,
            "Timezone": self.timezone,
            "StartTime": self.start_time,
            "EndTime": self.end_time,
            "ScalableTargetAction": target,
        }


@dataclass(frozen=True)
class ReplicaSchedule:
    """One replica's resource: its table (the global table's name, the same in every
    Region), its Region, its GSIs, its actions and the role the function acts as on its
    targets (None: a resource written before the roles were, served as the function's own
    role, which may not schedule)."""

    table: str
    region: str
    indexes: tuple[str, ...]
    actions: tuple[ReplicaAction, ...]
    role_arn: str | None = None

    @property
    def physical_id(self) -> str:
        """The resource's physical id: a new table or Region is a new resource, and
        CloudFormation then deletes the old one with its own properties."""
        return f"{self.table}@{self.region}"


def parse_schedule(properties: object) -> ReplicaSchedule:
    """``properties`` (a resource's ``ResourceProperties``) read and checked; a
    `ReplicaScheduleError` naming the field otherwise."""
    if not isinstance(properties, Mapping):
        raise ReplicaScheduleError(
            f"properties: got {type(properties).__name__}; expected an object"
        )
    table = properties.get("TableName")
    region = properties.get("Region")
    if not isinstance(table, str) or not is_table_name(table):
        raise ReplicaScheduleError(f"TableName: got {table!r:.80}; expected a table name")
    if not is_region(region):
        raise ReplicaScheduleError(f"Region: got {region!r:.80}; expected a Region name")
    indexes = properties.get("Indexes", [])
    if (
        not isinstance(indexes, list)
        or len(indexes) > MAX_INDEXES
        or not all(is_table_name(i) for i in indexes)
    ):
        raise ReplicaScheduleError(
            f"Indexes: got {indexes!r:.120}; expected at most {MAX_INDEXES} index names"
        )
    actions = _actions(properties.get("Actions", []), indexes)
    role = properties.get("RoleArn")
    if role is not None and (not isinstance(role, str) or not ROLE_ARN.fullmatch(role)):
        raise ReplicaScheduleError(f"RoleArn: got {role!r:.120}; expected an IAM role's ARN")
    return ReplicaSchedule(table, region, tuple(indexes), actions, role)


def _actions(raw: object, indexes: list[str]) -> tuple[ReplicaAction, ...]:
    """A resource's ``Actions``: each read, at most `MAX_ACTIONS`, no name twice on one
    target."""
    if not isinstance(raw, list) or len(raw) > MAX_ACTIONS:
        raise ReplicaScheduleError(
            f"Actions: got {str(raw)[:80]!r}; expected a list of at most {MAX_ACTIONS} actions "
            "(a Region's, its table's and every GSI's together)"
        )
    actions = tuple(_action(a, set(indexes), n) for n, a in enumerate(raw))
    keys = [a.key for a in actions]
    if len(set(keys)) != len(keys):
        raise ReplicaScheduleError("Actions: a name is used twice on one scalable target")
    return actions


def _action(raw: object, indexes: set[str], n: int) -> ReplicaAction:
    where = f"Actions[{n}]"
    if not isinstance(raw, Mapping):
        raise ReplicaScheduleError(f"{where}: got {type(raw).__name__}; expected an object")
    index = raw.get("Index") or None
    if index is not None and (not isinstance(index, str) or index not in indexes):
        raise ReplicaScheduleError(f"{where}.Index: got {index!r:.80}; expected one of Indexes")
    dimension = raw.get("Dimension")
    if dimension not in DIMENSIONS:
        raise ReplicaScheduleError(
            f"{where}.Dimension: got {dimension!r:.40}; expected read or write"
        )
    name = raw.get("ScheduledActionName")
    if not isinstance(name, str) or not NAME.fullmatch(name) or not name.startswith(ACTION_PREFIX):
        raise ReplicaScheduleError(
            f"{where}.ScheduledActionName: got {name!r:.80}; expected a name beginning "
            f"{ACTION_PREFIX!r}"
        )
    texts = {k: raw.get(k) for k in ("Schedule", "Timezone", "StartTime", "EndTime")}
    for key, value in texts.items():
        if not (value is None and key != "Schedule") and not (
            isinstance(value, str) and 0 < len(value) <= MAX_SCHEDULE_TEXT
        ):
            raise ReplicaScheduleError(f"{where}.{key}: got {value!r:.80}; expected a string")
    target = raw.get("ScalableTargetAction")
    if not isinstance(target, Mapping):
        raise ReplicaScheduleError(f"{where}.ScalableTargetAction: expected an object")
    low, high = (_units(target.get(k), f"{where}.{k}") for k in ("MinCapacity", "MaxCapacity"))
    if low is None and high is None:
        raise ReplicaScheduleError(f"{where}: expected MinCapacity, MaxCapacity or both")
    return ReplicaAction(
        index, str(dimension), name, str(texts["Schedule"]), texts["Timezone"],
        texts["StartTime"], texts["EndTime"], low, high,
    )  # fmt: skip


def _units(value: object, where: str) -> int | None:
    """A capacity from a property: an int, or its decimal text (CloudFormation's)."""
    if value is None:
        return None
    text = whole_text(value, 0, math.inf, digits=7)  # its range is checked below
    if text is not None:
        value = text
    if not is_whole(value, 1, MAX_UNITS):
        raise ReplicaScheduleError(
            f"{where}: got {value!r:.40}; expected a whole number from 1 to {MAX_UNITS:,}"
        )
    return value


def removed(old: ReplicaSchedule, new: ReplicaSchedule) -> list[ReplicaAction]:
    """The actions ``old`` put that ``new`` does not (same table and Region)."""
    kept = {a.key for a in new.actions}
    return [a for a in old.actions if a.key not in kept]


def dimensions_of(actions: Sequence[ReplicaAction]) -> set[tuple[str | None, str]]:
    """The scalable targets ``actions`` are on, as (index or None, dimension)."""
    return {(a.index, a.dimension) for a in actions}
