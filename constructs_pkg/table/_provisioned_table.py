"""Runs in: CDK app (synth time).

ProvisionedTable: a provisioned ``aws_dynamodb.Table`` and its
[`TableCapacity`][constructs_pkg.table.TableCapacity] in one construct.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import (
    RemovalPolicy,
)
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from constructs import Construct

from ..common._function_options import FunctionOptions
from ._capacity import (
    DEFAULT_TABLE_QUOTA,
    Capacity,
    PrewarmMethod,
)
from ._parts import (
    NewTable,
    known_props,
)
from ._table import TableCapacity


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

    :param partition_key: the table's partition key.
    :param read: read capacity of the table (range, target, high-water mark).
    :param write: write capacity of the table.
    :param sort_key: Default: none.
    :param prewarm: how high-water marks are reached. Default:
        ``PrewarmMethod.WARM_THROUGHPUT`` (instant, spends no decrease). Used only where
        a ``Capacity`` sets ``high_water_mark``.
    :param table_quota: the per-table capacity quota of the account, in capacity units.
        Default: 40,000 (DynamoDB's default quota).
    :param function_options: with ``PROVISION_THEN_SETTLE`` only, ``{"Settle":
        FunctionOptions(...)}``: the stack's two settle functions (memory, timeout from 30
        seconds to 15 minutes for each call, log retention, architecture) merged over their
        defaults (256 MB, 1 minute; the provider waits for the table between calls, up to 30
        minutes). Every settled table of a stack shares them, so they must ask for the same.
        Default: the defaults.
    :param billing_mode: only ``BillingMode.PROVISIONED`` is accepted. Default: PROVISIONED.
    :param point_in_time_recovery: Default: True.
    :param deletion_protection: Default: True.
    :param removal_policy: Default: ``RemovalPolicy.RETAIN``.
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
        sort_key: dynamodb.Attribute | None = None,
        prewarm: PrewarmMethod = PrewarmMethod.WARM_THROUGHPUT,
        table_quota: int = DEFAULT_TABLE_QUOTA,
        billing_mode: dynamodb.BillingMode | None = None,
        point_in_time_recovery: bool = True,
        deletion_protection: bool = True,
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
        table_name: str | None = None,
        table_class: dynamodb.TableClass | None = None,
        encryption: dynamodb.TableEncryption | None = None,
        encryption_key: kms.IKey | None = None,
        stream: dynamodb.StreamViewType | None = None,
        time_to_live_attribute: str | None = None,
        contributor_insights_enabled: bool | None = None,
        function_options: Mapping[str, FunctionOptions] | None = None,
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
