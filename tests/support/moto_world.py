"""A moto world for run-time tests: tables, scalable targets and CloudWatch traffic in the
session's moto server, isolated by a unique run id."""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from ddb_capacity_runtime.aws.clients import Clients
from ddb_capacity_runtime.aws.store import HoldStore
from ddb_capacity_runtime.core.forecast import forecast_minute as table_forecast_minute
from ddb_capacity_runtime.core.names import (
    BASE_MIN_TAG,
    resource_id,
    scalable_dimension,
    scope_label,
)
from ddb_capacity_runtime.core.plan import every_dimension_read
from ddb_capacity_runtime.core.settings import ScalerConfig
from ddb_capacity_runtime.scaler.tick import run_tick
from ddb_capacity_tools.local_aws import (
    create_store_table,
    put_traffic,
    put_witness,
    recorded_events,
)

LAG = 2  # SCALER_METRIC_LAG_MINUTES default
#: How far past the world's now its tables' delivery witness is published (`World.table`):
#: the later ticks of a test find it as DynamoDB keeps publishing it.
WITNESS_AHEAD = timedelta(hours=3)
#: The tag the world's tables are discovered by.
TAG_KEY = "autoscaling_manager_enabled"


def base_min_tag(index: str | None, dimension: str) -> str:
    """0.4's tag that remembered a raised minimum of one dimension (a tick reads it once,
    and moves it into the state store)."""
    return f"{BASE_MIN_TAG}{scope_label(index)}:{dimension}"


def upgrade_window(now: datetime, days: int = 1) -> dict[str, str]:
    """The setting that opens an upgrade's window for reading 0.4's state tags, ending
    ``days`` after ``now``'s UTC day."""
    until = now.astimezone(UTC).date() + timedelta(days=days)
    return {"SCALER_READ_LEGACY_STATE_UNTIL": until.isoformat()}


def configured_min(table: str, dimension: str, units: int) -> dict[str, str]:
    """The setting that states ``table``'s configured minimum of ``dimension`` (as a
    ``TableCapacity``'s range does)."""
    return {"SCALER_OVERRIDES": json.dumps({table: {dimension: {"min": units}}})}


class World:
    """Tables, targets and traffic in the moto server, isolated by a unique tag value."""

    def __init__(self, aws_client: Any, store_dynamodb: Any = None) -> None:
        self.ddb = aws_client("dynamodb")
        # the hold store's DynamoDB: dynalite where threads race on it, else moto
        self.store_ddb = store_dynamodb or self.ddb
        self.aas = aws_client("application-autoscaling")
        self.cw = aws_client("cloudwatch")
        self.clients = Clients(self.ddb, self.aas, self.cw, aws_client("resourcegroupstaggingapi"))
        self.run_id = uuid.uuid4().hex[:8]
        # the real clock: the library's request and hold code reads it too
        self.now = datetime.now(UTC).replace(second=0, microsecond=0)
        self._store: HoldStore | None = None
        self.targets: list[tuple[str, str]] = []  # registered here: deregistered by close()

    @property
    def store(self) -> HoldStore:
        """This world's hold store (created on first use)."""
        if self._store is None:
            name = f"holds-{self.run_id}"
            create_store_table(self.store_ddb, name)
            self._store = HoldStore(self.store_ddb, name)
        return self._store

    def name(self, base: str) -> str:
        return f"{base}-{self.run_id}"

    def table(
        self,
        base: str,
        read: int,
        write: int,
        *,
        gsi: tuple[int, int] | None = None,
        tagged: bool = True,
        tags: dict[str, str] | None = None,
        forecast_minute: int | None = None,
        witness: bool = True,
    ) -> str:
        """A table named after ``base``; with ``forecast_minute``, a name (``base``, then
        ``base1``, ``base2``, ...) whose autopilot forecast comes at that minute of the hour.
        With ``witness`` (the default), its provisioned capacity (and its GSI's) published
        from an hour before now to `WITNESS_AHEAD` after, as DynamoDB publishes it whatever
        the traffic: the delivery witness a tick reads before it lowers the table on minutes
        without a datapoint (a tick up to then finds it delivered)."""
        name = self.name(base)
        n = 0
        while forecast_minute is not None and table_forecast_minute(name) != forecast_minute:
            n += 1
            name = self.name(f"{base}{n}")
        attrs = [{"AttributeName": "pk", "AttributeType": "S"}]
        extra: dict[str, Any] = {}
        if gsi:
            attrs.append({"AttributeName": "user", "AttributeType": "S"})
            extra["GlobalSecondaryIndexes"] = [
                {
                    "IndexName": "byUser",
                    "KeySchema": [{"AttributeName": "user", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                    "ProvisionedThroughput": {
                        "ReadCapacityUnits": gsi[0],
                        "WriteCapacityUnits": gsi[1],
                    },
                }
            ]
        all_tags = dict(tags or {})
        if tagged:
            all_tags[TAG_KEY] = self.run_id
        if all_tags:
            extra["Tags"] = [{"Key": k, "Value": v} for k, v in all_tags.items()]
        self.ddb.create_table(
            TableName=name,
            AttributeDefinitions=attrs,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            ProvisionedThroughput={"ReadCapacityUnits": read, "WriteCapacityUnits": write},
            **extra,
        )
        if witness:  # from an hour before now to WITNESS_AHEAD after: later ticks read it too
            end, periods = self.now + WITNESS_AHEAD, 12 + WITNESS_AHEAD // timedelta(minutes=5)
            put_witness(self.cw, name, end=end, periods=periods, units=(read, write))
            if gsi:
                put_witness(self.cw, name, end=end, periods=periods, index="byUser", units=gsi)
        return name

    def target(
        self,
        name: str,
        dimension: str,
        min_capacity: int,
        max_capacity: int,
        index: str | None = None,
        target_percent: float = 70,
    ) -> None:
        resource = resource_id(name, index)
        scalable = scalable_dimension(index, dimension)
        self.targets.append((resource, scalable))
        self.aas.register_scalable_target(
            ServiceNamespace="dynamodb",
            ResourceId=resource,
            ScalableDimension=scalable,
            MinCapacity=min_capacity,
            MaxCapacity=max_capacity,
        )
        self.aas.put_scaling_policy(
            PolicyName=f"{name}-{index}-{dimension}",
            ServiceNamespace="dynamodb",
            ResourceId=resource,
            ScalableDimension=scalable,
            PolicyType="TargetTrackingScaling",
            TargetTrackingScalingPolicyConfiguration={
                "TargetValue": target_percent,
                "PredefinedMetricSpecification": {
                    "PredefinedMetricType": f"DynamoDB{dimension.capitalize()}CapacityUtilization"
                },
            },
        )

    def traffic(
        self,
        name: str,
        dimension: str,
        per_second: float,
        *,
        throttles: float = 0,
        minutes: range = range(1, 16),
        index: str | None = None,
        causes: Mapping[str, float] | None = None,
    ) -> None:
        """Consumed units/s and throttle events per minute (``causes``: by cause),
        ``minutes`` before the window end."""
        put_traffic(
            self.cw,
            name,
            dimension,
            per_second,
            end=self.now - timedelta(minutes=LAG),
            minutes=minutes,
            throttles=throttles,
            index=index,
            causes=causes,
        )

    def daily_spikes(
        self,
        name: str,
        hour_start: datetime,
        *,
        first_minute: int,
        per_second: float,
        days: int = 3,
        index: str | None = None,
    ) -> None:
        """``per_second`` consumed write units (of the table, or of GSI ``index``) for 30
        minutes from ``first_minute`` past ``hour_start``'s hour, on each of the last ``days``
        days."""
        end = self.now - timedelta(minutes=LAG)  # traffic's end (the metric lag)
        for day in range(1, days + 1):
            start = hour_start - timedelta(days=day) + timedelta(minutes=first_minute)
            newest = int((end - (start + timedelta(minutes=29))).total_seconds() // 60)
            self.traffic(name, "write", per_second, minutes=range(newest, newest + 30), index=index)

    def close(self) -> None:
        """Deregister the scalable targets this world registered: moto's listing of
        DynamoDB targets repeats its NextToken past 100 targets, and a session that kept
        them all would make every later tick's listing fail."""
        for resource, scalable in self.targets:
            try:
                self.aas.deregister_scalable_target(
                    ServiceNamespace="dynamodb", ResourceId=resource, ScalableDimension=scalable
                )
            except self.aas.exceptions.ObjectNotFoundException:
                pass
        self.targets = []

    def off_the_periodic_read(self, tick_minutes: int = 2) -> None:
        """Move now back, a tick at a time, to a tick that reads no dimension's throttle
        events by the clock (`every_dimension_read`); before any traffic is written (it
        ends at now)."""
        while every_dimension_read(self.now, tick_minutes):
            self.now -= timedelta(minutes=tick_minutes)

    def tick(
        self, now: datetime | None = None, deadline: float | None = None, /, **env: str
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """One tick (sending nothing after ``deadline``, a POSIX time, when given) with the
        settings ``env``; returns its summary, and its log events followed by its EMF
        records. ``now`` and ``deadline`` are positional only: a mapping of settings passed
        as ``**env`` cannot be taken for either."""
        config = ScalerConfig.from_env(
            {"SCALER_TAG_KEY": TAG_KEY, "SCALER_TAG_VALUE": self.run_id, **env}
        )
        out = io.StringIO()
        with recorded_events() as events:
            summary = run_tick(
                config,
                self.clients,
                now or self.now,
                out=out,
                store=self.store,
                deadline=deadline,
            )
        return summary, events + [json.loads(line) for line in out.getvalue().splitlines()]

    def throughput(self, name: str, index: str | None = None) -> tuple[int, int]:
        table = self.ddb.describe_table(TableName=name)["Table"]
        spec = (
            table
            if index is None
            else next(g for g in table["GlobalSecondaryIndexes"] if g["IndexName"] == index)
        )
        pt = spec["ProvisionedThroughput"]
        return pt["ReadCapacityUnits"], pt["WriteCapacityUnits"]

    def provision(self, name: str, index: str, read: int, write: int) -> None:
        """Set the provisioned throughput of the GSI ``index`` of ``name`` (as auto scaling or
        an operator would)."""
        throughput = {"ReadCapacityUnits": read, "WriteCapacityUnits": write}
        self.ddb.update_table(
            TableName=name,
            GlobalSecondaryIndexUpdates=[
                {"Update": {"IndexName": index, "ProvisionedThroughput": throughput}}
            ],
        )

    def target_min(self, name: str, dimension: str, index: str | None = None) -> int:
        (t,) = self.aas.describe_scalable_targets(
            ServiceNamespace="dynamodb",
            ResourceIds=[resource_id(name, index)],
            ScalableDimension=scalable_dimension(index, dimension),
        )["ScalableTargets"]
        return int(t["MinCapacity"])

    def memory(self, name: str, dimension: str, index: str | None = None) -> str | None:
        """The state store's memory of a raised minimum, ``<base>:<set>``; None: none."""
        state = self.store.get(name, index, dimension)
        if state is None or state.base is None or state.set_to is None:
            return None
        return f"{state.base}:{state.set_to}"

    def plan(self, name: str, dimension: str, index: str | None = None) -> str | None:
        """The autopilot's plan kept in the state store; None: none."""
        state = self.store.get(name, index, dimension)
        return None if state is None else state.plan

    def set_plan(
        self, name: str, dimension: str, value: str | None, index: str | None = None
    ) -> None:
        """Keep ``value`` (any text: the store is untrusted input too) as a plan."""
        assert self.store.keep_plan(name, index, dimension, value)

    def tags(self, name: str) -> dict[str, str]:
        arn = self.ddb.describe_table(TableName=name)["Table"]["TableArn"]
        pages = self.ddb.get_paginator("list_tags_of_resource").paginate(ResourceArn=arn)
        return {t["Key"]: t["Value"] for page in pages for t in page["Tags"]}


def idle(world: World, base: str, read: int, write: int) -> str:
    """A table named after ``base`` with a unit a second of traffic over the whole window."""
    name = world.table(base, read, write)
    for dimension in ("read", "write"):
        world.traffic(name, dimension, 1, minutes=range(0, 40))
    return name
