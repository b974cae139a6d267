"""Which tables and dimensions a tick manages, and what DynamoDB and Application Auto
Scaling say about them. Clients are passed in; nothing here decides."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .config import Limits, ScalerConfig
from .quota import DecreaseLedger

LOG = logging.getLogger(__name__)
UNITS = {"read": "ReadCapacityUnits", "write": "WriteCapacityUnits"}
BASE_MIN_TAG = "ddb-capacity:base-min:"


@dataclass(frozen=True)
class ScalableTarget:
    resource_id: str
    scalable_dimension: str
    min_capacity: int
    max_capacity: int
    target_tracking: bool


@dataclass(frozen=True)
class Dimension:
    """One read or write dimension of a table (``index`` None) or of a GSI."""

    table: str
    index: str | None
    dimension: str
    provisioned: int
    ledger: DecreaseLedger
    last_increase: datetime | None
    limits: Limits
    target: ScalableTarget | None = None
    base_min_tag: str | None = None  # set when the scaler has raised the target's minimum

    @property
    def key(self) -> tuple[str, str | None, str]:
        return (self.table, self.index, self.dimension)


@dataclass
class ManagedTable:
    name: str
    arn: str
    tags: dict[str, str]
    dimensions: list[Dimension] = field(default_factory=list)
    indexes: list[str] = field(default_factory=list)  # every GSI, ACTIVE or not


def resource_id(table: str, index: str | None) -> str:
    return f"table/{table}" if index is None else f"table/{table}/index/{index}"


def scalable_dimension(index: str | None, dimension: str) -> str:
    kind = "table" if index is None else "index"
    return f"dynamodb:{kind}:{UNITS[dimension]}"


def scope_label(index: str | None) -> str:
    """How tags name the table itself or one of its GSIs: ``table`` or ``index/NAME``."""
    return "table" if index is None else f"index/{index}"


def base_min_tag(index: str | None, dimension: str) -> str:
    """The table tag that remembers a minimum while the scaler or a capacity request holds
    it raised (the target's MinCapacity; without a target, the provisioned capacity)."""
    return f"{BASE_MIN_TAG}{scope_label(index)}:{dimension}"


def throughput_of(description: Mapping[str, Any], index: str | None) -> Mapping[str, Any]:
    """The ProvisionedThroughput of the table (``index`` None) or of one GSI, from
    DescribeTable's ``Table``. Raises KeyError for an unknown index."""
    if index is None:
        return description["ProvisionedThroughput"]
    for gsi in description.get("GlobalSecondaryIndexes", []):
        if gsi["IndexName"] == index:
            return gsi["ProvisionedThroughput"]
    raise KeyError(f"index {index!r} not found on table {description.get('TableName')!r}")


def tags_of(listing: Iterable[Mapping[str, str]]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in listing}


def find_tables(tagging: Any, config: ScalerConfig) -> dict[str, dict[str, str] | None]:
    """Table names to manage: the configured ones plus those carrying the discovery tag
    (Resource Groups Tagging API, paginated). Tags come along where discovery saw them."""
    found: dict[str, dict[str, str] | None] = {name: None for name in config.tables}
    if config.tag_key:
        pages = tagging.get_paginator("get_resources").paginate(
            TagFilters=[{"Key": config.tag_key, "Values": [config.tag_value]}],
            ResourceTypeFilters=["dynamodb:table"],
            ResourcesPerPage=100,
        )
        for page in pages:
            for item in page["ResourceTagMappingList"]:
                name = item["ResourceARN"].split(":table/", 1)[1].split("/", 1)[0]
                found[name] = tags_of(item.get("Tags", []))
    return found


def scalable_targets(aas: Any, resource_ids: Sequence[str] = ()
                     ) -> dict[tuple[str, str], ScalableTarget]:
    """Every DynamoDB scalable target of the account and Region (or only those of
    ``resource_ids``), with whether it has a target-tracking policy: a constant number of
    paginated calls, whatever the table count."""
    only = {"ResourceIds": list(resource_ids)} if resource_ids else {}
    tracked = set()
    for one in [{"ResourceId": r} for r in resource_ids] or [{}]:
        for page in aas.get_paginator("describe_scaling_policies").paginate(
                ServiceNamespace="dynamodb", **one):
            for policy in page["ScalingPolicies"]:
                if policy.get("PolicyType") == "TargetTrackingScaling":
                    tracked.add((policy["ResourceId"], policy["ScalableDimension"]))
    targets = {}
    for page in aas.get_paginator("describe_scalable_targets").paginate(
            ServiceNamespace="dynamodb", **only):
        for t in page["ScalableTargets"]:
            key = (t["ResourceId"], t["ScalableDimension"])
            targets[key] = ScalableTarget(t["ResourceId"], t["ScalableDimension"],
                                          int(t["MinCapacity"]), int(t["MaxCapacity"]),
                                          key in tracked)
    return targets


class NotManaged(Exception):
    """The table is skipped this tick (not ACTIVE, on-demand); not an error."""


def describe_table(dynamodb: Any, name: str, tags: dict[str, str] | None, config: ScalerConfig,
                   targets: Mapping[tuple[str, str], ScalableTarget], now: datetime,
                   description: Mapping[str, Any] | None = None) -> ManagedTable:
    """The table's managed dimensions. Raises NotManaged, OverrideError or ClientError.
    ``description`` is DescribeTable's ``Table`` when the caller has just read it."""
    table = description or dynamodb.describe_table(TableName=name)["Table"]
    if table["TableStatus"] != "ACTIVE":
        raise NotManaged(f"status {table['TableStatus']}")
    if table.get("BillingModeSummary", {}).get("BillingMode") == "PAY_PER_REQUEST":
        raise NotManaged("on-demand billing")
    if tags is None:
        tags = tags_of(dynamodb.list_tags_of_resource(ResourceArn=table["TableArn"])["Tags"])
    limits = config.limits(name, tags)
    managed = ManagedTable(name, table["TableArn"], tags)
    specs: list[tuple[str | None, Mapping[str, Any]]] = [(None, table)]
    for gsi in table.get("GlobalSecondaryIndexes", []):
        managed.indexes.append(gsi["IndexName"])
        if gsi.get("IndexStatus", "ACTIVE") != "ACTIVE":
            LOG.info("table %s index %s skipped: %s", name, gsi["IndexName"], gsi["IndexStatus"])
            continue
        specs.append((gsi["IndexName"], gsi))
    for index, spec in specs:
        throughput = spec["ProvisionedThroughput"]
        ledger = DecreaseLedger.from_throughput(throughput, now)
        for dim, units in UNITS.items():
            target = targets.get((resource_id(name, index), scalable_dimension(index, dim)))
            dim_limits = limits[dim]
            tag = base_min_tag(index, dim)
            raised = tag if tag in tags else None
            if target is not None:
                base = int(tags[tag]) if raised else target.min_capacity
                dim_limits = Limits(base, target.max_capacity, dim_limits.target_utilization)
            managed.dimensions.append(Dimension(
                table=name, index=index, dimension=dim, provisioned=int(throughput[units]),
                ledger=ledger, last_increase=throughput.get("LastIncreaseDateTime"),
                limits=dim_limits, target=target, base_min_tag=raised))
    return managed
