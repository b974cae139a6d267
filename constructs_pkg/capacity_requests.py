"""CapacityRequests: the construct side of capacity requests ("get ready, here I come").

Workers call ``ddb_capacity_runtime.requests.request_capacity`` (or ``ddb-capacity request``) at
run time; this construct makes the hold store (a small on-demand DynamoDB table with
conditional writes), grants the workers' roles exactly what a request needs and, by default,
deploys a small scheduled restorer that ends expired holds, so a worker that dies mid-work
leaves nothing raised behind. ``connect(scaler)`` lets a ``ThrottleAwareScaler`` obey the
holds (it must, if it manages the same tables) and end them in its tick; the restorer can
then be left out (``restore_every=None``).
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration, Fn, RemovalPolicy, Token
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct

from ddb_capacity_runtime.core.errors import CapacityConfigError
from ddb_capacity_runtime.core.names import TABLE_QUOTA
from ddb_capacity_runtime.requests.holds import MAX_HOLD
from ddb_capacity_runtime.requests.store import MAX_HOLD_ENV, MAX_UNITS_ENV, STORE_ENV

from .compliance import acknowledge
from .runtime import SCALABLE_TARGETS_REASON, autoscaling_statements, scheduled_function
from .scaler import ThrottleAwareScaler
from .table import TableCapacity

#: How often expired holds are ended by default: a hold outlives its expiry by at most this.
DEFAULT_RESTORE_EVERY = Duration.minutes(5)
RESTORER_TIMEOUT = Duration.minutes(1)
DEFAULT_MAX_HOLD = Duration.hours(24)
RESTORER_MEMORY_MB = 128

_TABLE_ACTIONS = [
    "dynamodb:DescribeTable",
    "dynamodb:ListTagsOfResource",
    "dynamodb:UpdateTable",
]
_STORE_ACTIONS = [
    "dynamodb:GetItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:Query",
]
_MAX_HOLD_MINUTES = int(MAX_HOLD.total_seconds() // 60)


class CapacityRequests(Construct):
    """Lets workers raise capacity for work about to start, with automatic restore.

    :param tables: the tables workers may request capacity on (``ProvisionedTable`` or any
        ``ITable``); at least one.
    :param restore_every: how often a scheduled Lambda ends expired holds on these tables.
        Default: 5 minutes. None: no restorer (a connected ``ThrottleAwareScaler`` managing
        the tables ends them in its tick).
    :param max_units: the most units one hold of one dimension may ask for; larger holds
        are refused and, if written to the store anyway, ignored. Default: 40,000.
    :param max_hold: the longest hold. Default: 24 hours.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        tables: Sequence[dynamodb.ITable | TableCapacity],
        restore_every: Duration | None = DEFAULT_RESTORE_EVERY,
        max_units: int = TABLE_QUOTA,
        max_hold: Duration = DEFAULT_MAX_HOLD,
    ) -> None:
        super().__init__(scope, id)
        where = f"CapacityRequests {self.node.path}"
        if (
            isinstance(max_units, bool)
            or not isinstance(max_units, int)
            or not (1 <= max_units <= TABLE_QUOTA)
        ):
            raise CapacityConfigError(
                f"{where}: max_units must be a whole number from 1 to {TABLE_QUOTA}; "
                f"got {max_units!r}"
            )
        hold_seconds = max_hold.to_seconds() if not Token.is_unresolved(max_hold) else 0
        hold_minutes = hold_seconds / 60
        if not 1 <= hold_minutes <= _MAX_HOLD_MINUTES or hold_seconds % 60:
            raise CapacityConfigError(
                f"{where}: max_hold must be whole minutes from 1 minute to 24 hours; got "
                f"{max_hold.to_human_string()}"
            )
        self.environment = {
            MAX_UNITS_ENV: str(max_units),
            MAX_HOLD_ENV: str(int(hold_minutes)),
        }
        if isinstance(tables, (str, bytes)) or not tables:
            raise CapacityConfigError(
                f"{where}: tables must list at least one table; got {tables!r}"
            )
        self.tables: list[dynamodb.ITable] = []
        for table in tables:
            if isinstance(table, TableCapacity):
                table = table.table
            if not (hasattr(table, "table_arn") and hasattr(table, "table_name")):
                raise CapacityConfigError(
                    f"{where}: tables must be ProvisionedTable or "
                    f"aws_dynamodb.ITable; got {table!r}"
                )
            self.tables.append(table)
        self._grants = 0
        #: The hold store: holds and their leases, written with conditional writes.
        self.hold_store = dynamodb.Table(
            self,
            "HoldStore",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.environment[STORE_ENV] = self.hold_store.table_name
        for pack in ("HIPAA.Security", "NIST.800.53.R5", "PCI.DSS.321"):
            acknowledge(
                self.hold_store,
                f"{pack}-DynamoDBInBackupPlan",
                "The hold store keeps capacity holds that last 24 hours at most; point-in-"
                "time recovery covers it, and a lost hold only ends a raise early.",
            )
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
            for name, value in self.environment.items():
                self.restorer.function.add_environment(name, value)
            self.restorer.policy.add_statements(*self._statements())
            self._acknowledge(self.restorer.policy)

    def connect(self, scaler: ThrottleAwareScaler) -> None:
        """Let ``scaler`` obey these holds and end them at expiry in its tick. A scaler that
        manages these tables must be connected, or it would lower a held table."""
        for name, value in self.environment.items():
            scaler.function.add_environment(name, value)
        scaler.policy.add_statements(
            iam.PolicyStatement(
                sid="HoldStore",
                actions=[*_STORE_ACTIONS, "dynamodb:Scan"],
                resources=[self.hold_store.table_arn],
            )
        )

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
                *self._statements(),
                iam.PolicyStatement(
                    sid="ReadTraffic", actions=["cloudwatch:GetMetricData"], resources=["*"]
                ),
            ],
        )
        getattr(policy, f"attach_to_{kind}")(principal)
        self._acknowledge(policy)
        return policy

    def _statements(self) -> list[iam.PolicyStatement]:
        return [
            iam.PolicyStatement(
                sid="HoldTables",
                actions=_TABLE_ACTIONS,
                resources=[t.table_arn for t in self.tables],
            ),
            iam.PolicyStatement(
                sid="HoldStore", actions=_STORE_ACTIONS, resources=[self.hold_store.table_arn]
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
            SCALABLE_TARGETS_REASON,
        )
