"""Runs in: CDK app (synth time).

`TableCapacity`'s (and so `ProvisionedTable`'s) members of aws-cdk-lib's ``ITable``: each
delegated to the table it manages, typed and documented, so that a ``TableCapacity`` goes
wherever an ``ITable`` does (grants, metrics, its name and ARN).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Unpack

from aws_cdk import RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk.interfaces import ResourceEnvironment
from aws_cdk.interfaces.aws_dynamodb import TableReference

from ..common._props import MetricProps


class TableDelegation:
    """``ITable``'s members, each delegated to ``table``."""

    table: dynamodb.Table
    """The table every member is delegated to."""

    @property
    def env(self) -> ResourceEnvironment:
        """The table's account and Region."""
        return self.table.env

    @property
    def table_arn(self) -> str:
        """The table's ARN."""
        return self.table.table_arn

    @property
    def table_name(self) -> str:
        """The table's name."""
        return self.table.table_name

    @property
    def table_stream_arn(self) -> str | None:
        """The ARN of the table's stream, if it has one."""
        return self.table.table_stream_arn

    @property
    def encryption_key(self) -> kms.IKey | None:
        """The customer-managed key the table is encrypted with, if any."""
        return self.table.encryption_key

    @property
    def table_ref(self) -> TableReference:
        """A reference to the table (its name and ARN)."""
        return self.table.table_ref

    def apply_removal_policy(self, policy: RemovalPolicy) -> None:
        """Apply ``policy`` to the table."""
        self.table.apply_removal_policy(policy)

    def grant(self, grantee: iam.IGrantable, *actions: str) -> iam.Grant:
        """Let ``grantee`` perform ``actions`` on the table and its indexes."""
        return self.table.grant(grantee, *actions)

    def grant_full_access(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` perform every DynamoDB action (``dynamodb:*``) on the table."""
        return self.table.grant_full_access(grantee)

    def grant_read_data(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` read the table's data (GetItem, Query, Scan, ...)."""
        return self.table.grant_read_data(grantee)

    def grant_read_write_data(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` read and write the table's data."""
        return self.table.grant_read_write_data(grantee)

    def grant_stream(self, grantee: iam.IGrantable, *actions: str) -> iam.Grant:
        """Let ``grantee`` perform ``actions`` on the table's stream."""
        return self.table.grant_stream(grantee, *actions)

    def grant_stream_read(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` read the table's stream."""
        return self.table.grant_stream_read(grantee)

    def grant_table_list_streams(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` list the table's streams."""
        return self.table.grant_table_list_streams(grantee)

    def grant_write_data(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` write the table's data (PutItem, UpdateItem, DeleteItem, ...)."""
        return self.table.grant_write_data(grantee)

    def metric(self, metric_name: str, **props: Unpack[MetricProps]) -> cloudwatch.Metric:
        """The table's CloudWatch metric ``metric_name`` (namespace ``AWS/DynamoDB``)."""
        return self.table.metric(metric_name, **props)

    def metric_conditional_check_failed_requests(
        self, **props: Unpack[MetricProps]
    ) -> cloudwatch.Metric:
        """Conditional writes that failed their condition, per period."""
        return self.table.metric_conditional_check_failed_requests(**props)

    def metric_consumed_read_capacity_units(
        self, **props: Unpack[MetricProps]
    ) -> cloudwatch.Metric:
        """Read capacity units consumed, per period."""
        return self.table.metric_consumed_read_capacity_units(**props)

    def metric_consumed_write_capacity_units(
        self, **props: Unpack[MetricProps]
    ) -> cloudwatch.Metric:
        """Write capacity units consumed, per period."""
        return self.table.metric_consumed_write_capacity_units(**props)

    def metric_successful_request_latency(self, **props: Unpack[MetricProps]) -> cloudwatch.Metric:
        """Latency of successful requests (give ``dimensions_map`` with an ``Operation``)."""
        return self.table.metric_successful_request_latency(**props)

    def metric_system_errors_for_operations(
        self,
        *,
        operations: Sequence[dynamodb.Operation] | None = None,
        **props: Unpack[MetricProps],
    ) -> cloudwatch.IMetric:
        """Server errors (HTTP 500) of ``operations`` (default: all), summed."""
        return self.table.metric_system_errors_for_operations(operations=operations, **props)

    def metric_throttled_requests(self, **props: Unpack[MetricProps]) -> cloudwatch.Metric:
        """Throttled requests (deprecated by aws-cdk-lib: use the ``_for_operations`` one)."""
        return self.table.metric_throttled_requests(**props)

    def metric_throttled_requests_for_operations(
        self,
        *,
        operations: Sequence[dynamodb.Operation] | None = None,
        **props: Unpack[MetricProps],
    ) -> cloudwatch.IMetric:
        """Throttled requests of ``operations`` (default: all), summed."""
        return self.table.metric_throttled_requests_for_operations(operations=operations, **props)

    def metric_user_errors(self, **props: Unpack[MetricProps]) -> cloudwatch.Metric:
        """Requests refused as client errors (HTTP 400), per period."""
        return self.table.metric_user_errors(**props)
