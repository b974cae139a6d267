"""Runs in: CDK app (synth time).

A global table's replica in one Region, as the ``ThrottleAwareScaler`` of that Region's
stack manages it (`GlobalTableCapacity.replica`): the table in that Region, its other
replicas' Regions (whose writes its write decisions read too), its GSIs, and its
autoscaled range and target value per dimension, which the scaler keeps as its bounds and
restores to."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from aws_cdk import Stack
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from ddb_capacity_runtime.core.errors import CapacityConfigError
from ddb_capacity_runtime.core.names import DIMENSIONS
from ddb_capacity_runtime.core.validators import is_region

from ..common._props import is_token

Ranges = Mapping[tuple[str | None, str], tuple[int, int]]


@dataclass(frozen=True)
class Replica:
    """One replica of a global table, for the scaler of its Region
    (`GlobalTableCapacity.replica`)."""

    table: dynamodb.ITable
    """the table in ``region`` (the ``TableV2`` itself in its own stack, else imported by
    name)"""
    region: str
    others: tuple[str, ...]
    """the other replicas' Regions"""
    indexes: tuple[str, ...]
    bounds: Mapping[str, Mapping[str, float]]
    """per dimension, the template's ``min``, ``max`` and ``target`` (percent) in ``region``"""
    account: str
    """the table's stack's account, where every replica is (a token where it is known at
    deploy time only)"""
    name: str
    """the table as messages name it (`shown_table`)"""

    @property
    def shown_region(self) -> str:
        """``region`` as messages name it (the stack's, known at deploy time only)."""
        return shown_region(self.region)


def shown_region(region: str) -> str:
    """A Region as messages name it: the stack's, where it is known at deploy time only."""
    return "the stack's Region" if is_token(region) else region


def shown_table(table: dynamodb.TableV2) -> str:
    """A global table as messages name it: its ``table_name`` where the app gives one,
    else its construct path."""
    cfn = table.node.default_child
    name = cfn.table_name if isinstance(cfn, dynamodb.CfnGlobalTable) else None
    return repr(name) if isinstance(name, str) and not is_token(name) else table.node.path


def check_account(where: str, replica: Replica, stack: Stack) -> None:
    """Refuse a scaler of ``replica`` in ``stack`` of an account other than the table's:
    every replica of a global table is in the table's account, and a scaler manages tables
    of its own. Where either account is known at deploy time only (a stack without
    ``env``'s account), it is taken on trust."""
    here, there = stack.account, replica.account
    if is_token(here) or is_token(there) or here == there:
        return
    raise CapacityConfigError(
        f"{where}: the replica of global table {replica.name} in {replica.shown_region} is "
        f"in the table's account, {there}; the scaler's stack, {stack.node.path}, is in "
        f"account {here}: a replica's scaler must be in a stack of account {there} (the "
        f"table's), in the replica's Region"
    )


class ReplicaSource(Protocol):
    """What gives the replica of a scope's Region: a ``GlobalTableCapacity``."""

    def replica(self, scope: Construct) -> Replica: ...


class TemplateSpec(Protocol):
    """What a global table's template says, as `GlobalTableCapacity` reads it: each
    Region's ranges and target values, and the GSIs."""

    @property
    def ranges(self) -> Mapping[str, Ranges]: ...

    @property
    def targets(self) -> Mapping[str, Mapping[str, float]]: ...

    @property
    def indexes(self) -> Sequence[str]: ...


def replica_of(
    where: str, table: dynamodb.TableV2, spec: TemplateSpec, scope: Construct
) -> Replica:
    """The replica of ``table`` in the Region of ``scope``'s stack. Refused, naming the
    table, where that stack's Region is not known when it must be (`_region_of`), its
    account is not the table's (`check_account`), no replica is there, a dimension is not
    autoscaled there, or the table would be named across stacks by a generated name."""
    stack = Stack.of(scope)
    region = _region_of(where, table, stack)
    ranges = spec.ranges
    if region not in ranges:
        raise CapacityConfigError(
            f"{where}: no replica in {region}; the table's replicas are in "
            f"{', '.join(sorted(ranges))}"
        )
    bounds = _bounds(where, region, ranges[region], spec.targets.get(region, {}))
    own = Stack.of(table)
    others = tuple(r for r in ranges if r != region)
    replica = Replica(
        table, region, others, tuple(spec.indexes), bounds, own.account, shown_table(table)
    )
    if stack is not own:
        check_account(where, replica, stack)  # before the table is imported there
        replica = replace(replica, table=_imported(where, table, scope))
    unnamed = [r for r in others if not is_region(r)]
    if unnamed:
        raise CapacityConfigError(
            f"{where}: the replica in {region} reads its other replicas' writes in their "
            f"Regions; got {', '.join(map(repr, unnamed))}, expected Region names such as "
            "eu-west-1"
        )
    return replica


def _region_of(where: str, table: dynamodb.TableV2, stack: Stack) -> str:
    """``stack``'s Region, where its replica is. One known at deploy time only (a stack
    without ``env``) serves the table's own stack: aws-cdk refuses replicas in such a
    stack, so the table has one replica, the stack's, wherever it deploys. A scaler in
    another stack finds its replica by the Region's name."""
    region = stack.region
    if is_token(region) and stack is not Stack.of(table):
        raise CapacityConfigError(
            f"{where}: a replica's scaler in a stack other than the table's needs a stack "
            f"with its Region (env=Environment(region=...)), by which it finds its replica; "
            f"{stack.node.path} has none"
        )
    return region


def _imported(where: str, table: dynamodb.TableV2, scope: Construct) -> dynamodb.ITable:
    """``table`` in ``scope``'s stack, by its name (once per scope)."""
    cfn = table.node.default_child
    assert isinstance(cfn, dynamodb.CfnGlobalTable)
    name = cfn.table_name
    if not isinstance(name, str) or is_token(name):
        raise CapacityConfigError(
            f"{where}: the replica's scaler is in another stack, {Stack.of(scope).node.path}, "
            f"which can name the table only by a name of its own: give the TableV2 a "
            "table_name"
        )
    child = f"Replica{table.node.addr}"  # the table's own: two tables never share it
    existing = scope.node.try_find_child(child)
    if isinstance(existing, Construct) and hasattr(existing, "table_arn"):
        return existing  # type: ignore[return-value]  # this table, imported before
    return dynamodb.Table.from_table_name(scope, child, name)


def _bounds(
    where: str, region: str, ranges: Ranges, targets: Mapping[str, float]
) -> dict[str, dict[str, float]]:
    """Each dimension's ``min``, ``max`` and ``target`` in ``region``, from the template."""
    out: dict[str, dict[str, float]] = {}
    for dim in DIMENSIONS:
        span = ranges.get((None, dim))
        if span is None or dim not in targets:
            raise CapacityConfigError(
                f"{where}: replica {shown_region(region)}: {dim} capacity is fixed; the "
                "scaler manages an autoscaled dimension (Capacity.autoscaled(...)), whose "
                "target it moves"
            )
        out[dim] = {"min": span[0], "max": span[1], "target": targets[dim]}
    return out
