"""Runs in: CDK app (synth time).

The parts `TableCapacity` is built from: a new table's props (`ProvisionedTable`'s), a
table's identity and its GSIs as CloudFormation has them, the scalable dimension of a table
imported by name, and the lazily rendered scheduled actions and their validation.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

import jsii
from aws_cdk import (
    Duration,
    IStableAnyProducer,
    Stack,
    TimeZone,
)
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct

from ddb_capacity_runtime.core.errors import CapacityConfigError, ScheduleError, shown
from ddb_capacity_runtime.core.names import resource_id
from ddb_capacity_runtime.core.tags import PREWARM_TAG
from ddb_capacity_runtime.schedule.entries import CapacityWindow, TableSchedule
from ddb_capacity_runtime.schedule.expressions import zone_name

from ..common._props import (
    bool_prop,
    did_you_mean,
    duration_prop,
    is_token,
    known_at_synth,
    optional_bool_prop,
)
from ._capacity import Capacity

if TYPE_CHECKING:
    pass


CAPACITY_PROPS = frozenset(
    {
        "read_capacity",
        "write_capacity",
        "warm_throughput",
        "max_read_request_units",
        "max_write_request_units",
    }
)
"""Table props that set capacity: ProvisionedTable sets them from ``read`` and ``write``."""


def check_type(field: str, value: Any, expected: type, where: str) -> None:
    if not isinstance(value, expected):
        raise CapacityConfigError(f"{where}: {field} must be a {expected.__name__}; got {value!r}")


SWITCHES = {
    "point_in_time_recovery": bool_prop,
    "deletion_protection": bool_prop,
    "contributor_insights_enabled": optional_bool_prop,
}
"""A ``ProvisionedTable``'s True-or-False props and each one's check
(``contributor_insights_enabled`` takes None too, the CDK's default);
``point_in_time_recovery`` is not an ``aws_dynamodb.Table`` prop: it sets
``point_in_time_recovery_specification`` (`NewTable.table_props`)."""


REFUSED_PROPS = frozenset({"point_in_time_recovery_specification"})
"""``aws_dynamodb.Table`` props a ``ProvisionedTable`` sets from its own (capacity aside)."""


@functools.cache
def known_props(init: Callable[..., None]) -> frozenset[str]:
    """The keyword-only parameters of ``init``: a construct's props, as its signature says
    (``aws_dynamodb.Table``'s, a ``ProvisionedTable``'s own)."""
    params = inspect.signature(init).parameters.values()
    return frozenset(p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY)


@dataclass(frozen=True)
class NewTable:
    """The table a ``ProvisionedTable`` makes as its child ``Resource``: its billing mode as
    given (checked), its `SWITCHES` as given (checked), and every other
    ``aws_dynamodb.Table`` prop but capacity."""

    billing_mode: dynamodb.BillingMode | None
    props: dict[str, Any]
    passed: frozenset[str] = frozenset()  # the props passed through as keywords
    own: frozenset[str] = frozenset()  # the construct's own props (`known_props`)

    def table_props(self) -> dict[str, Any]:
        """The ``aws_dynamodb.Table`` props (capacity aside), once `validate` passed."""
        props = dict(self.props)
        props["point_in_time_recovery_specification"] = dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=props.pop("point_in_time_recovery")
        )
        return props

    def validate(self, where: str) -> None:
        table_props = known_props(dynamodb.Table.__init__)
        unknown = sorted(self.passed - table_props)
        if unknown:
            allowed = sorted(self.own | (table_props - CAPACITY_PROPS - REFUSED_PROPS))
            raise CapacityConfigError(
                f"{where}: unknown prop {shown(unknown[0])}{did_you_mean(unknown[0], allowed)}; "
                f"allowed: {', '.join(allowed)}"
            )
        for name, check in SWITCHES.items():
            check(where, name, self.props.get(name))
        if "point_in_time_recovery_specification" in self.passed:
            raise CapacityConfigError(
                f"{where}: point_in_time_recovery_specification cannot be passed: "
                f"point_in_time_recovery= (True or False) sets it"
            )
        capacity_props = sorted(set(self.props) & CAPACITY_PROPS)
        if capacity_props:
            raise CapacityConfigError(
                f"{where}: {', '.join(capacity_props)} cannot be passed: read= and write= "
                f"(Capacity) set the table's capacity"
            )
        if self.billing_mode is not None and self.billing_mode != dynamodb.BillingMode.PROVISIONED:
            raise CapacityConfigError(
                f"{where}: billing_mode must be BillingMode.PROVISIONED; got {self.billing_mode}. "
                f"For on-demand capacity use aws_dynamodb.Table or TableV2 directly"
            )


def cfn_of(table: dynamodb.Table) -> dynamodb.CfnTable:
    cfn = table.node.default_child
    assert isinstance(cfn, dynamodb.CfnTable)
    return cfn


def on_demand(table: object) -> bool:
    """``table`` is an ``aws_dynamodb.Table`` of this app billed PAY_PER_REQUEST, as its
    template says at synth time (a table imported by name: not known, so False)."""
    if not isinstance(table, dynamodb.Table):
        return False
    return bool(Stack.of(table).resolve(cfn_of(table).billing_mode) == "PAY_PER_REQUEST")


def gsis_of(table: dynamodb.Table) -> list[dict[str, Any]]:
    """The table's GSIs as its template has them (``indexName`` and the rest)."""
    gsis: list[dict[str, Any]] = (
        Stack.of(table).resolve(cfn_of(table).global_secondary_indexes) or []
    )
    return gsis


def identity_of(table: dynamodb.ITable) -> frozenset[tuple[str, ...]]:
    """What tells a managed table apart in an app: a table of this app by its construct; a
    table imported by name by that name in its account and Region (in its stack alone when
    they are known at deploy time only: env-agnostic stacks may go to different accounts)."""
    if isinstance(table, dynamodb.Table):
        return frozenset({("construct", table.node.path)})
    stack = Stack.of(table)
    env = [str(stack.account), str(stack.region)]
    scope = stack.node.path if any(is_token(v) for v in env) else ""
    return frozenset({("name", *env, scope, table.table_name)})


def table_keys(table: dynamodb.ITable) -> list[tuple[str, str]]:
    """What tells ``table`` apart where one construct may have it once (a scaler, capacity
    requests): its construct's path, and its name in its stack when the name is known at
    synth (an import and the table it names, or two imports of one table, are two
    constructs). Tables of one name in two stacks are not told apart: two Regions' tables
    may share a name."""
    name = literal_name(table)
    keys = [("path", table.node.path)]
    return keys if name is None else [*keys, (Stack.of(table).node.path, name)]


def literal_name(table: dynamodb.ITable) -> str | None:
    """``table``'s name where it is known at synth: its ``table_name``, or, for a table
    made here (a ``Table``, a ``TableV2``), the name given to it; None: known at deploy
    time only."""
    name: object = table.table_name
    if is_token(name):  # a table made here: the name given to it, if any
        child = table.node.default_child
        if isinstance(child, dynamodb.CfnTable | dynamodb.CfnGlobalTable):
            name = child.table_name
    return name if isinstance(name, str) and not is_token(name) else None


def is_table(value: object) -> bool:
    """Whether ``value`` is an ``aws_dynamodb.ITable`` (a protocol ``isinstance`` cannot
    check): a construct with a table's name and ARN."""
    named = hasattr(value, "table_name") and hasattr(value, "table_arn")
    return isinstance(value, Construct) and named


def table_shown(table: object, path: str | None = None) -> str:
    """``table`` as a message names it: its ``path`` (default: its construct's), and its
    name where it is known at synth (``Test/Named ('orders')``); anything that is not a
    table as `shown` has it."""
    if not is_table(table):
        return shown(table)
    assert isinstance(table, Construct)
    keys = table_keys(cast(dynamodb.ITable, table))
    path = path or table.node.path
    return f"{path} ({keys[1][1]!r})" if len(keys) > 1 else path


class ImportedDimension:
    """One dimension of a table owned elsewhere: a scalable target this stack registers,
    with target tracking, and what schedules need of it."""

    def __init__(
        self,
        scope: Construct,
        table_name: str,
        index: str | None,
        dimension: str,
        capacity: Capacity,
    ) -> None:
        kind = "table" if index is None else "index"
        label = f"{'' if index is None else index + '-'}{dimension.capitalize()}"
        stack = Stack.of(scope)
        role = iam.Role.from_role_arn(
            scope,
            f"{label}ServiceRole",
            f"arn:{stack.partition}:iam::{stack.account}:role/aws-service-role/"
            "dynamodb.application-autoscaling.amazonaws.com/"
            "AWSServiceRoleForApplicationAutoScaling_DynamoDBTable",
        )
        self.target = appscaling.ScalableTarget(
            scope,
            f"{label}Scaling",
            service_namespace=appscaling.ServiceNamespace.DYNAMODB,
            resource_id=resource_id(table_name, index),
            scalable_dimension=f"dynamodb:{kind}:{dimension.capitalize()}CapacityUnits",
            min_capacity=capacity.min_capacity,
            max_capacity=capacity.max_capacity,
            role=role,
        )
        self._metric = (
            appscaling.PredefinedMetric.DYNAMODB_READ_CAPACITY_UTILIZATION
            if dimension == "read"
            else appscaling.PredefinedMetric.DYNAMODB_WRITE_CAPACITY_UTILIZATION
        )

    @property
    def cfn(self) -> appscaling.CfnScalableTarget:
        child = self.target.node.default_child
        assert isinstance(child, appscaling.CfnScalableTarget)
        return child

    def scale_on_utilization(
        self,
        *,
        target_utilization_percent: float,
        scale_in_cooldown: Duration | None = None,
        scale_out_cooldown: Duration | None = None,
        disable_scale_in: bool | None = None,
    ) -> None:
        self.target.scale_to_track_metric(
            "Tracking",
            target_value=target_utilization_percent,
            predefined_metric=self._metric,
            scale_in_cooldown=scale_in_cooldown,
            scale_out_cooldown=scale_out_cooldown,
            disable_scale_in=disable_scale_in,
        )

    def scale_on_schedule(self, id: str, **props: Any) -> None:
        self.target.scale_on_schedule(id, **props)


def warm_json(warm: dynamodb.WarmThroughput) -> dict[str, int]:
    out = {}
    if warm.read_units_per_second is not None:
        out["ReadUnitsPerSecond"] = int(warm.read_units_per_second)
    if warm.write_units_per_second is not None:
        out["WriteUnitsPerSecond"] = int(warm.write_units_per_second)
    return out


def as_timedelta(duration: Duration) -> timedelta:
    return timedelta(seconds=duration.to_seconds())


SCHEDULE_CHECKED = "a schedule is checked over its next 28 days as the app is built"
"""Why a schedule's capacities cannot be tokens."""


def known_entry(where: str, entry: object) -> None:
    """A schedule entry's capacities are known when the app is built (`known_at_synth`);
    its other checks are the schedule's."""
    for name in ("min_capacity", "max_capacity"):
        known_at_synth(
            f"{where} schedule {getattr(entry, 'name', '?')!r}",
            name,
            getattr(entry, name, None),
            SCHEDULE_CHECKED,
        )


def capacity_window(
    where: str,
    name: str,
    *,
    dimension: str,
    capacity: int,
    start: str,
    duration: Duration,
    lead: Duration | None,
    week_days: Sequence[str],
    time_zone: str | TimeZone,
    index_name: str | None,
) -> CapacityWindow:
    """An ``add_capacity_window``'s window, its durations checked (``where`` names its
    owner); the schedule checks the rest."""
    named = f"{where} window {name!r}"
    known_at_synth(named, "capacity", capacity, SCHEDULE_CHECKED)
    check_week_days(named, week_days)
    duration_prop(named, "duration", duration, Duration.seconds(0))  # range: the schedule's
    duration_prop(named, "lead", lead, Duration.seconds(0), optional=True)
    return CapacityWindow(
        name=name,
        index=index_name,
        dimension=dimension,
        capacity=capacity,
        start=start,
        duration=as_timedelta(duration),
        lead=as_timedelta(lead or Duration.minutes(15)),
        week_days=tuple(week_days),
        time_zone=zone_name(time_zone),  # type: ignore[arg-type]
    )


PREWARM_UNUSED = "ddb-capacity:prewarm-without-mark"
"""The warning of a PROVISION_THEN_SETTLE table with no high-water mark: a no-op."""


MAX_TABLE_TAGS = 50
"""DynamoDB's most tags a table (not adjustable)."""


def too_many_tags(where: str, table: dynamodb.ITable, made: bool) -> list[str]:
    """The table a capacity ``made``, past DynamoDB's 50 tags once deployed: its own once
    every tag is applied (the app's, the library's `PREWARM_TAG`), and its stack's, which
    CloudFormation gives it."""
    cfn = table.node.default_child if made else None
    if not isinstance(cfn, dynamodb.CfnTable):
        return []
    tags = set(cfn.tags.tag_values()) | set(Stack.of(cfn).tags.tag_values())
    if len(tags) <= MAX_TABLE_TAGS:
        return []
    ours = f", the library's {PREWARM_TAG!r} among them" if PREWARM_TAG in tags else ""
    return [
        f"{where}: the table has {len(tags)} tags once deployed (its stack's included){ours}; "
        f"DynamoDB takes at most {MAX_TABLE_TAGS} a table"
    ]


@jsii.implements(IStableAnyProducer)
class ScheduledActions:
    """The ScheduledActions of one scalable target, produced when the template is written:
    what the target's own ``scale_on_schedule`` calls added, then the table's schedule."""

    def __init__(
        self,
        schedule: TableSchedule,
        key: tuple[str | None, str],
        cfn: appscaling.CfnScalableTarget,
    ) -> None:
        self._schedule, self._key, self._cfn = schedule, key, cfn

    def own(self) -> list[Any]:
        """The target's own actions (its ``scale_on_schedule`` calls'), as CloudFormation
        takes them."""
        own = Stack.of(self._cfn).resolve(self._cfn.scheduled_actions) or []
        return [cloudformation_of(a) for a in own]

    def produce(self) -> Any:
        return self.own() + self._schedule.actions().get(self._key, [])


def cloudformation_of(value: Any) -> Any:
    """A resolved L1 property value (camelCase keys, datetimes) as CloudFormation JSON."""
    if isinstance(value, dict):
        return {k[:1].upper() + k[1:]: cloudformation_of(v) for k, v in value.items()}
    if isinstance(value, list):
        return [cloudformation_of(v) for v in value]
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return value


def check_week_days(named: str, week_days: object) -> None:
    """A window's ``week_days`` given as one string (``"MON"``, which would read as its
    letters) refused as a `ScheduleError`, as the schedule refuses a list of wrong names;
    ``named`` names the window."""
    if isinstance(week_days, str):
        raise ScheduleError(
            f"{named}: week_days: got {week_days!r}, one string; expected a list of day "
            "names: WEEKDAYS, EVERY_DAY or a list such as ['MON', 'WED']"
        )
