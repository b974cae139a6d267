"""Runs in: CDK app (synth time).

The scalable-target quota as a synth-time check: Application Auto Scaling allows an account
5,000 DynamoDB scalable targets per Region by default ("Scalable targets per resource
type", adjustable in Service Quotas; [Quotas for Application Auto Scaling]). Every
dimension a ``ProvisionedTable`` scales (a table's read and write, and each GSI's) is one.
Past the quota, a deploy fails when Application Auto Scaling refuses the next target, so
the check warns before: when an app's DynamoDB scalable targets in one account and Region
pass a share (``warn_at``, default 80 %) of the quota.

It counts what this app synthesizes (``AWS::ApplicationAutoScaling::ScalableTarget`` with
the ``dynamodb`` namespace), by each stack's account and Region; stacks without an explicit
account or Region (environment-agnostic) count together, as they may deploy to the same
one. Targets made outside the app (other apps, the console, other accounts' StackSets)
also count against the quota and are not seen here: ``warn_at`` leaves room for them.

``ProvisionedTable`` turns the check on with the defaults; ``ScalableTargetQuota.check(app,
quota=..., warn_at=...)`` sets them (an increased quota, an earlier warning).

[Quotas for Application Auto Scaling]:
https://docs.aws.amazon.com/autoscaling/application/userguide/application-auto-scaling-quotas.html
"""

from __future__ import annotations

import math

import jsii
from aws_cdk import Annotations, Stack
from aws_cdk import aws_applicationautoscaling as appscaling
from constructs import Construct, IConstruct, IValidation

from ddb_capacity_runtime.core.errors import CapacityConfigError
from ddb_capacity_runtime.core.validators import is_number, is_whole

from ..common._props import is_token

__all__ = ["DEFAULT_SCALABLE_TARGET_QUOTA", "DEFAULT_WARN_AT", "ScalableTargetQuota"]

DEFAULT_SCALABLE_TARGET_QUOTA = 5_000
"""Application Auto Scaling's default quota of DynamoDB scalable targets per account and
Region."""
DEFAULT_WARN_AT = 0.8
"""The share of the quota at which the check warns."""
WARNING_ID = "ddb-capacity:scalable-target-quota"
"""The warning's id (``cdk synth`` prints it; ``Annotations`` can acknowledge it)."""
_ENV_AGNOSTIC = "environment-agnostic stacks"


class ScalableTargetQuota(Construct):
    """The check on one app: at synth, a warning on each stack of an account and Region
    whose DynamoDB scalable targets pass ``warn_at`` x ``quota``. One per app, at its root;
    made and found with [`check`][]."""

    ID = "DdbCapacityScalableTargetQuota"

    def __init__(self, root: Construct, quota: int, warn_at: float) -> None:
        super().__init__(root, self.ID)
        self.quota, self.warn_at = _checked(quota, warn_at)
        self.node.add_validation(_Validation(self))

    @classmethod
    def check(
        cls,
        scope: IConstruct,
        quota: int | None = None,
        warn_at: float | None = None,
    ) -> ScalableTargetQuota:
        """The check on ``scope``'s app (its root), made if it has none. ``quota`` (whole,
        at least 1; default 5,000) and ``warn_at`` (a share of the quota, above 0 and at
        most 1; default 0.8) set it; once set they stay, and a later call without them
        (as each ``ProvisionedTable`` makes) keeps them."""
        root = scope.node.root
        found = root.node.try_find_child(cls.ID)
        if found is None:
            assert isinstance(root, Construct)  # an App or a Stage
            found = cls(root, DEFAULT_SCALABLE_TARGET_QUOTA, DEFAULT_WARN_AT)
        assert isinstance(found, ScalableTargetQuota)
        if quota is not None or warn_at is not None:
            found.quota, found.warn_at = _checked(
                found.quota if quota is None else quota,
                found.warn_at if warn_at is None else warn_at,
            )
        return found

    def counts(self) -> dict[tuple[str, str], list[Stack]]:
        """Per (account, Region), the stack of each DynamoDB scalable target of the app,
        one entry a target."""
        found: dict[tuple[str, str], list[Stack]] = {}
        for node in self.node.root.node.find_all():
            if isinstance(node, appscaling.CfnScalableTarget) and _dynamodb(node):
                stack = Stack.of(node)
                found.setdefault(_where(stack), []).append(stack)
        return found

    def warnings(self) -> dict[tuple[str, str], tuple[list[Stack], str]]:
        """Per (account, Region) past the warning: its stacks and the warning."""
        limit = math.floor(self.quota * self.warn_at)
        out = {}
        for (account, region), stacks in self.counts().items():
            if len(stacks) <= limit:
                continue
            place = (
                _ENV_AGNOSTIC if account == _ENV_AGNOSTIC else f"account {account}, Region {region}"
            )
            out[(account, region)] = (
                list(dict.fromkeys(stacks)),  # each stack once, in order
                f"{len(stacks):,} DynamoDB scalable targets in {place} from this app: "
                f"{len(stacks) / self.quota:.0%} of the quota of {self.quota:,} (the warning "
                f"starts past {self.warn_at:.0%}, {limit:,}). Application Auto Scaling refuses "
                "targets past the quota and the deploy fails; targets made outside this app "
                "count too. Ask for an increase of 'Scalable targets per resource type' "
                "(Amazon DynamoDB) in Service Quotas, then pass it: "
                "ScalableTargetQuota.check(app, quota=N)",
            )
        return out


@jsii.implements(IValidation)
class _Validation:
    """Runs the check when the app is validated (at synth): warnings, never errors."""

    def __init__(self, check: ScalableTargetQuota) -> None:
        self._check = check

    def validate(self) -> list[str]:
        for stacks, message in self._check.warnings().values():
            for stack in stacks:
                Annotations.of(stack).add_warning_v2(WARNING_ID, message)
        return []


def _checked(quota: object, warn_at: object) -> tuple[int, float]:
    if not is_whole(quota, 1):
        raise CapacityConfigError(
            f"ScalableTargetQuota quota: got {quota!r}; expected a whole number of scalable "
            f"targets, at least 1 (Application Auto Scaling's default for DynamoDB is "
            f"{DEFAULT_SCALABLE_TARGET_QUOTA:,})"
        )
    if not (is_number(warn_at, 0, 1) and warn_at > 0):
        raise CapacityConfigError(
            f"ScalableTargetQuota warn_at: got {warn_at!r}; expected a share of the quota "
            f"above 0 and at most 1 (default {DEFAULT_WARN_AT})"
        )
    return quota, float(warn_at)


def _dynamodb(target: appscaling.CfnScalableTarget) -> bool:
    namespace = target.service_namespace
    return not is_token(namespace) and namespace == "dynamodb"


def _where(stack: Stack) -> tuple[str, str]:
    """The stack's (account, Region); both environment-agnostic when either is a token."""
    if is_token(stack.account) or is_token(stack.region):
        return _ENV_AGNOSTIC, _ENV_AGNOSTIC
    return stack.account, stack.region
