"""CapacityRequests: the construct side of capacity requests ("get ready, here I come").

Workers call ``ddb_capacity_runtime.requests.request_capacity`` (or ``ddb-capacity request``) at
run time; this construct grants their roles exactly what a request needs and, by default,
deploys a small scheduled restorer that ends expired holds, so a worker that dies mid-work
leaves nothing raised behind. Tables managed by a ``ThrottleAwareScaler`` have their holds
ended by its tick as well; the restorer can then be left out (``restore_every=None``).
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration, Fn
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct

from ddb_capacity_runtime.core.errors import CapacityConfigError

from .compliance import acknowledge
from .runtime import autoscaling_statements, scheduled_function
from .table import ProvisionedTable

#: How often expired holds are ended by default: a hold outlives its expiry by at most this.
DEFAULT_RESTORE_EVERY = Duration.minutes(5)
RESTORER_TIMEOUT = Duration.minutes(1)
RESTORER_MEMORY_MB = 128

_TABLE_ACTIONS_REQUEST = [
    "dynamodb:DescribeTable",
    "dynamodb:ListTagsOfResource",
    "dynamodb:TagResource",
    "dynamodb:UntagResource",
    "dynamodb:UpdateTable",
]
_TABLE_ACTIONS_RESTORE = [
    "dynamodb:DescribeTable",
    "dynamodb:ListTagsOfResource",
    "dynamodb:UntagResource",
    "dynamodb:UpdateTable",
]


class CapacityRequests(Construct):
    """Lets workers raise capacity for work about to start, with automatic restore.

    :param tables: the tables workers may request capacity on (``ProvisionedTable`` or any
        ``ITable``); at least one.
    :param restore_every: how often a scheduled Lambda ends expired holds on these tables.
        Default: 5 minutes. None: no restorer (a ``ThrottleAwareScaler`` managing the
        tables ends them in its tick).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        tables: Sequence[dynamodb.ITable | ProvisionedTable],
        restore_every: Duration | None = DEFAULT_RESTORE_EVERY,
    ) -> None:
        super().__init__(scope, id)
        where = f"CapacityRequests {self.node.path}"
        if isinstance(tables, (str, bytes)) or not tables:
            raise CapacityConfigError(
                f"{where}: tables must list at least one table; got {tables!r}"
            )
        self.tables: list[dynamodb.ITable] = []
        for table in tables:
            if isinstance(table, ProvisionedTable):
                table = table.table
            if not (hasattr(table, "table_arn") and hasattr(table, "table_name")):
                raise CapacityConfigError(
                    f"{where}: tables must be ProvisionedTable or "
                    f"aws_dynamodb.ITable; got {table!r}"
                )
            self.tables.append(table)
        self._grants = 0
        self.restorer = None
        if restore_every is not None:
            seconds = restore_every.to_seconds()
            if seconds % 60 or not 60 <= seconds <= 3600:
                raise CapacityConfigError(
                    f"{where}: restore_every must be whole minutes "
                    f"from 1 to 60, or None; got "
                    f"{restore_every.to_human_string()}"
                )
            self.restorer = scheduled_function(
                self,
                handler="ddb_capacity_runtime.requests.restorer.restorer_handler",
                description="DynamoDB capacity hold restorer",
                timeout=RESTORER_TIMEOUT,
                memory_size=RESTORER_MEMORY_MB,
                every=restore_every,
                calls="DynamoDB, Application Auto Scaling",
            )
            self.restorer.function.add_environment(
                "CAPACITY_TABLES", Fn.join(",", [t.table_name for t in self.tables])
            )
            self.restorer.policy.add_statements(*self._statements(_TABLE_ACTIONS_RESTORE))
            self._acknowledge(self.restorer.policy)

    def grant_request(self, grantee: iam.IGrantable) -> iam.ManagedPolicy:
        """Attach to ``grantee``'s role (or user, or group) a managed policy with exactly
        what ``request_capacity`` and releasing need on these tables. Returns the policy."""
        principal = grantee.grant_principal
        kind = next((k for k in ("role", "user", "group") if hasattr(principal, f"{k}_name")), None)
        if kind is None:
            raise CapacityConfigError(
                f"CapacityRequests {self.node.path}: grant_request "
                f"needs a role, a user, a group or something with a "
                f"role (a function, a task definition); got "
                f"{grantee!r}"
            )
        self._grants += 1
        policy = iam.ManagedPolicy(
            self,
            f"RequestPolicy{self._grants}",
            description="Lets a worker request DynamoDB capacity for work about to start",
            statements=[
                *self._statements(_TABLE_ACTIONS_REQUEST),
                iam.PolicyStatement(
                    sid="ReadTraffic", actions=["cloudwatch:GetMetricData"], resources=["*"]
                ),
            ],
        )
        getattr(policy, f"attach_to_{kind}")(principal)
        self._acknowledge(policy)
        return policy

    def _statements(self, table_actions: list[str]) -> list[iam.PolicyStatement]:
        return [
            iam.PolicyStatement(
                sid="HoldTables",
                actions=table_actions,
                resources=[t.table_arn for t in self.tables],
            ),
            *autoscaling_statements(),
        ]

    @staticmethod
    def _acknowledge(policy: iam.ManagedPolicy) -> None:
        acknowledge(
            policy,
            "AwsSolutions-IAM5[Resource::*]",
            "DescribeScalableTargets, DescribeScalingPolicies and GetMetricData have "
            "no resource-level permissions.",
        )
        acknowledge(
            policy,
            "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:"
            "application-autoscaling:<AWS::Region>:<AWS::AccountId>:"
            "scalable-target/*]",
            "Scalable-target ARNs are generated by Application Auto Scaling; the "
            "statement is limited to the dynamodb namespace by a condition.",
        )
