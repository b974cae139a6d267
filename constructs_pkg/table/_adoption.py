"""Runs in: CDK app (synth time).

Adopting an ``aws_dynamodb.Table`` of this app (``TableCapacity(table=...)``): the stock
auto scaling it must not have already, the GSIs ``indexes`` must name, and the capacity
properties written on the table. A live table's ``ProvisionedThroughput`` is left as the
app had it: CloudFormation sets a table to a changed ``ProvisionedThroughput`` on deploy,
which would cut a table that auto scaling has raised above it, so the scalable targets
alone bring it into its range."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import aws_dynamodb as dynamodb

from ddb_capacity_runtime.core.errors import CapacityConfigError, shown

from ..common._props import did_you_mean
from ._capacity import Capacity, PrewarmMethod
from ._parts import gsis_of, warm_json

UNITS = {"read": "ReadCapacityUnits", "write": "WriteCapacityUnits"}
"""Each dimension's key in a ``ProvisionedThroughput``."""


def stock_auto_scaling(table: dynamodb.Table) -> list[str]:
    """The calls of aws-cdk-lib's own auto scaling the app has made on ``table``, as the
    user wrote them: each adds a child to the table (``ReadScaling``, ``WriteScaling``,
    ``<index>ReadScaling``, ``<index>WriteScaling``), and a second on the same dimension
    fails inside jsii."""
    calls = []
    for index in [None, *(str(g["indexName"]) for g in gsis_of(table))]:
        for dimension in UNITS:
            if table.node.try_find_child(f"{index or ''}{dimension.title()}Scaling"):
                calls.append(
                    f"auto_scale_{dimension}_capacity(...)"
                    if index is None
                    else f"auto_scale_global_secondary_index_{dimension}_capacity({index!r}, ...)"
                )
    return calls


def refuse_stock_auto_scaling(where: str, table: dynamodb.Table) -> None:
    """A table some of whose dimensions the app already auto scales is refused, naming
    those calls and what to do: a dimension takes one scalable target, and TableCapacity
    registers every one itself."""
    calls = stock_auto_scaling(table)
    if calls:
        them = "that call" if len(calls) == 1 else "those calls"
        raise CapacityConfigError(
            f"{where}: table {table.node.path} is auto scaled already by aws-cdk-lib's own "
            f"table.{', table.'.join(calls)}; TableCapacity registers the scalable target and "
            "target tracking of every dimension itself (a dimension takes one), so the table "
            f"must have none: remove {them} (with the scale_on_utilization or scale_on_schedule "
            "on what it returned) and give each range here in read=, write= and indexes=; "
            "the scalable targets keep their logical IDs, so the deploy updates them in "
            "place (docs: Adoption)"
        )


def check_index_keys(where: str, given: Mapping[str, object], existing: Sequence[str]) -> None:
    """``indexes`` names each GSI of the adopted table, and nothing else."""
    unknown = [name for name in given if name not in existing]
    if unknown:
        raise CapacityConfigError(
            f"{where}: indexes has the key {shown(unknown[0])}, which is not a "
            f"global secondary index of the table{did_you_mean(unknown[0], existing)}; "
            f"the allowed keys are the table's GSIs {existing}, each one needed"
        )
    missing = [name for name in existing if name not in given]
    if missing:
        raise CapacityConfigError(
            f"{where}: indexes must give (read, write) Capacity for exactly the "
            f"table's GSIs {existing}; missing {missing}"
        )


def render_adopted(
    cfn: dynamodb.CfnTable,
    base: str,
    capacity: Mapping[str, Capacity],
    prewarm: PrewarmMethod,
    warm: dynamodb.WarmThroughput | None,
) -> None:
    """Write the capacity properties of the adopted table (``base`` ``""``) or of its GSI
    (``base`` ``"GlobalSecondaryIndexes.<position>."``): its warm throughput, and a
    dimension's ``ProvisionedThroughput`` only where the method provisions it at its
    high-water mark (``PROVISION_THEN_SETTLE``: the mark is a raise the deploy must make).
    Every other dimension keeps the app's value, so neither adopting the table nor a later
    change of its minimum makes CloudFormation set the live table to the template's."""
    for dimension, key in UNITS.items():
        units = capacity[dimension].starting_units(prewarm)
        if units != capacity[dimension].min_capacity:
            cfn.add_property_override(f"{base}ProvisionedThroughput.{key}", units)
    if warm is not None:
        cfn.add_property_override(f"{base}WarmThroughput", warm_json(warm))
