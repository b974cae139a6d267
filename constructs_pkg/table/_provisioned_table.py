"""Runs in: CDK app (synth time).

ProvisionedTable: a provisioned ``aws_dynamodb.Table`` and its
[`TableCapacity`][constructs_pkg.table.TableCapacity] in one construct.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import (
    RemovalPolicy,
)
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from constructs import Construct

from ..common._function_options import FunctionOptions
from ._capacity import (
    Capacity,
    PrewarmMethod,
)
from ._parts import (
    NewTable,
    known_props,
)
from ._table import TableCapacity, TableCapacityProps


@dataclass(frozen=True, kw_only=True)
class ProvisionedTableProps:
    """`ProvisionedTable`'s props, each with its default: the keyword arguments of
    `ProvisionedTable`, which takes them as they are (and checks them); every other
    ``aws_dynamodb.Table`` prop passes through as a keyword (``table_props``)."""

    partition_key: dynamodb.Attribute
    """The table's partition key."""

    read: Capacity
    """Read capacity of the table (range, target, high-water mark)."""

    write: Capacity
    """Write capacity of the table."""

    sort_key: dynamodb.Attribute | None = None
    """Default: none."""

    prewarm: PrewarmMethod = TableCapacityProps.prewarm
    """How high-water marks are reached. Default: ``PrewarmMethod.WARM_THROUGHPUT`` (instant,
    spends no decrease). Used only where a ``Capacity`` sets ``high_water_mark``."""

    table_quota: int = TableCapacityProps.table_quota
    """The per-table capacity quota of the account, in capacity units. Default: 40,000
    (DynamoDB's default quota)."""

    billing_mode: dynamodb.BillingMode | None = None
    """Only ``BillingMode.PROVISIONED`` is accepted. Default: PROVISIONED."""

    point_in_time_recovery: bool = True
    """Default: True."""

    deletion_protection: bool = True
    """Default: True."""

    removal_policy: RemovalPolicy = RemovalPolicy.RETAIN
    """Default: ``RemovalPolicy.RETAIN``."""

    table_name: str | None = None
    """``aws_dynamodb.Table``'s own, passed to it unchanged. Default: its default."""

    table_class: dynamodb.TableClass | None = None
    """``aws_dynamodb.Table``'s own, passed to it unchanged. Default: its default."""

    encryption: dynamodb.TableEncryption | None = None
    """``aws_dynamodb.Table``'s own, passed to it unchanged. Default: its default."""

    encryption_key: kms.IKey | None = None
    """``aws_dynamodb.Table``'s own, passed to it unchanged. Default: its default."""

    stream: dynamodb.StreamViewType | None = None
    """``aws_dynamodb.Table``'s own, passed to it unchanged. Default: its default."""

    time_to_live_attribute: str | None = None
    """``aws_dynamodb.Table``'s own, passed to it unchanged. Default: its default."""

    contributor_insights_enabled: bool | None = None
    """``aws_dynamodb.Table``'s own, passed to it unchanged. Default: its default."""

    function_options: Mapping[str, FunctionOptions] | None = None
    """With ``PROVISION_THEN_SETTLE`` only, ``{"Settle": FunctionOptions(...)}``: the stack's
    two settle functions (memory, timeout from 30 seconds to 15 minutes for each call, log
    retention, architecture) merged over their defaults (256 MB, 1 minute; the provider
    waits for the table between calls, up to 30 minutes). Every settled table of a stack
    shares them, so they must ask for the same. Default: the defaults."""


class ProvisionedTable(TableCapacity):
    """A provisioned ``aws_dynamodb.Table`` with Application Auto Scaling target tracking
    on read and write of the table and of every GSI, and an optional high-water mark: a
    ``Table`` plus a [`TableCapacity`][], in one construct.

    Example::

        table = ProvisionedTable(self, "Orders",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            read=Capacity(min_capacity=5, max_capacity=1000),
            write=Capacity(min_capacity=5, max_capacity=500, high_water_mark=4000),
        )
        table.table.grant_read_write_data(my_function)

    Its props, each with its default and what it does, are `ProvisionedTableProps`'
    fields: the keyword arguments here, and

    :param table_props: every other ``aws_dynamodb.Table`` prop, as keywords
        (``table_name``, ``table_class``, ``encryption``, ``encryption_key``, ``stream``,
        ``time_to_live_attribute``, ``contributor_insights_enabled``, …;
        ``local_secondary_indexes`` aside: use ``table.add_local_secondary_index``): passed
        to ``aws_dynamodb.Table`` unchanged. Capacity props (``read_capacity``,
        ``write_capacity``, ``warm_throughput``, on-demand limits) are refused: ``read`` and
        ``write`` set them; so is a name neither construct takes (naming the closest).
        Default: that construct's defaults.
    """

    _KIND = "ProvisionedTable"

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        partition_key: dynamodb.Attribute,
        read: Capacity,
        write: Capacity,
        sort_key: dynamodb.Attribute | None = ProvisionedTableProps.sort_key,
        prewarm: PrewarmMethod = ProvisionedTableProps.prewarm,
        table_quota: int = ProvisionedTableProps.table_quota,
        billing_mode: dynamodb.BillingMode | None = ProvisionedTableProps.billing_mode,
        point_in_time_recovery: bool = ProvisionedTableProps.point_in_time_recovery,
        deletion_protection: bool = ProvisionedTableProps.deletion_protection,
        removal_policy: RemovalPolicy = ProvisionedTableProps.removal_policy,
        table_name: str | None = ProvisionedTableProps.table_name,
        table_class: dynamodb.TableClass | None = ProvisionedTableProps.table_class,
        encryption: dynamodb.TableEncryption | None = ProvisionedTableProps.encryption,
        encryption_key: kms.IKey | None = ProvisionedTableProps.encryption_key,
        stream: dynamodb.StreamViewType | None = ProvisionedTableProps.stream,
        time_to_live_attribute: str | None = ProvisionedTableProps.time_to_live_attribute,
        contributor_insights_enabled: bool
        | None = ProvisionedTableProps.contributor_insights_enabled,
        function_options: Mapping[str, FunctionOptions]
        | None = ProvisionedTableProps.function_options,
        **table_props: Any,
    ) -> None:
        spec = NewTable(
            billing_mode,
            {
                "partition_key": partition_key,
                "sort_key": sort_key,
                "point_in_time_recovery": point_in_time_recovery,
                "deletion_protection": deletion_protection,
                "contributor_insights_enabled": contributor_insights_enabled,
                "removal_policy": removal_policy,
                "table_name": table_name,
                "table_class": table_class,
                "encryption": encryption,
                "encryption_key": encryption_key,
                "stream": stream,
                "time_to_live_attribute": time_to_live_attribute,
                **table_props,
            },
            frozenset(table_props),
            known_props(ProvisionedTable.__init__),
        )
        super().__init__(
            scope,
            id,
            table=spec,
            read=read,
            write=write,
            prewarm=prewarm,
            table_quota=table_quota,
            function_options=function_options,
        )
