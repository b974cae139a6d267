"""Runs in: CDK app (synth time).

The throttle-aware scaler in many accounts and Regions, deployed by one CDK pipeline.

Each (account, Region) gets a ``cdk.Stage`` of its own, holding one stack: a
``ThrottleAwareScaler`` that manages the tables tagged ``autoscaling_manager_enabled=true``
in that account and Region, and its own alarm topic (optionally with an e-mail
subscription), so each account alarms on its own. The stages are grouped in waves, one per
Region, deployed one wave after the other; a wave's stages deploy side by side.

The pipeline (``pipelines.CodePipeline``, cross-account keys, a V2 pipeline) runs in a
tooling account and takes its source from a CodeConnections connection. The account
numbers, repository and connection ARN below are **placeholders**: replace them, or give
your own as context, in ``cdk.json``::

    {"context": {"many_accounts": {
      "pipeline_account": "123456789012", "pipeline_region": "eu-west-1",
      "repository": "my-org/ddb-capacity-deploy", "branch": "main",
      "connection_arn": "arn:aws:codeconnections:eu-west-1:123456789012:connection/...",
      "targets": [{"account": "210987654321", "region": "eu-west-1",
                   "alarm_email": "dba@example.com"}]}}}

or with ``-c many_accounts='{...}'``, the same JSON on one line (the CDK CLI keeps only the
first line of a ``-c`` value; the Many accounts guide shows the command).

``"with_pipeline": false`` synthesizes the stages alone, without the pipeline: each stage's
stack then deploys with ``cdk deploy 'DdbCapacity-<account>-<region>/*'`` from a shell with
that account's credentials.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_codepipeline as codepipeline
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import pipelines, region_info
from constructs import Construct, IConstruct

from constructs_pkg import AlarmTopic, ThrottleAwareScaler, acknowledge, apply_nag_packs

TAG_KEY, TAG_VALUE = "autoscaling_manager_enabled", "true"
#: The context key that overrides the placeholders below (a JSON object, or a mapping in
#: cdk.json's "context").
CONTEXT_KEY = "many_accounts"


# --8<-- [start:settings]
@dataclass(frozen=True)
class Target:
    """One account and Region the scaler is deployed to; its alarms go to its own topic,
    and to ``alarm_email`` when given (SNS asks that address to confirm first)."""

    account: str
    region: str
    alarm_email: str | None = None


@dataclass(frozen=True)
class Settings:
    """Where the pipeline runs, where its source is, and where it deploys. Every default
    is a PLACEHOLDER: put your accounts, repository and connection here (or in the
    context) before deploying."""

    pipeline_account: str = "000000000000"  # PLACEHOLDER: the tooling account
    pipeline_region: str = "us-east-1"
    repository: str = "example-org/ddb-capacity-deploy"  # PLACEHOLDER: owner/name
    branch: str = "main"
    connection_arn: str = (  # PLACEHOLDER: a CodeConnections connection to the repository
        "arn:aws:codeconnections:us-east-1:000000000000:connection/"
        "00000000-0000-0000-0000-000000000000"
    )
    targets: tuple[Target, ...] = field(
        default=(  # PLACEHOLDERS: the accounts and Regions that get a scaler
            Target("111111111111", "eu-west-1", alarm_email="dba-eu@example.com"),
            Target("222222222222", "eu-west-1"),
            Target("111111111111", "us-east-1", alarm_email="dba-us@example.com"),
            Target("333333333333", "us-east-1"),
        )
    )
    with_pipeline: bool = True
    # --8<-- [end:settings]

    @classmethod
    def from_context(cls, scope: IConstruct) -> Settings:
        """The defaults, with what the ``many_accounts`` context gives over them."""
        given = scope.node.try_get_context(CONTEXT_KEY)
        if given is None:
            return cls()
        if isinstance(given, str):
            try:
                given = json.loads(given)
            except json.JSONDecodeError as exc:
                hint = (
                    "; on the command line give it on one line (the CDK CLI keeps only a "
                    "-c value's first line)"
                    if given.strip() in ("{", "")
                    else ""
                )
                raise ValueError(
                    f"{CONTEXT_KEY}: context must be a JSON object; got {given!r} ({exc}){hint}"
                ) from exc
        if not isinstance(given, Mapping):
            raise ValueError(f"{CONTEXT_KEY}: context must be a JSON object; got {given!r}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(given) - known)
        if unknown:
            raise ValueError(
                f"{CONTEXT_KEY}: unknown setting(s) {', '.join(unknown)}; "
                f"allowed: {', '.join(sorted(known))}"
            )
        values = dict(given)
        if "targets" in values:
            values["targets"] = _targets_from(values["targets"])
        return replace(cls(), **values)


def _targets_from(given: object) -> tuple[Target, ...]:
    """``targets`` from context: a list of ``{"account", "region", "alarm_email"?}``."""
    if not isinstance(given, list):
        raise ValueError(f"targets must be a list of {{account, region}} objects; got {given!r}")
    allowed = {f.name for f in fields(Target)}
    targets = []
    for i, item in enumerate(given):
        if not isinstance(item, Mapping) or not {"account", "region"} <= set(item) <= allowed:
            raise ValueError(
                f"targets[{i}] must be an object with account, region and optionally "
                f"alarm_email; got {item!r}"
            )
        targets.append(Target(**item))
    return tuple(targets)


# ---------------------------------------------------------------- the checks at the door

ACCOUNT = re.compile(r"\d{12}")
EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
REPOSITORY = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
CONNECTION = re.compile(
    r"arn:aws[a-z-]*:(codeconnections|codestar-connections):[a-z0-9-]+:\d{12}:connection/.+"
)


def known_regions() -> dict[str, str]:
    """Every Region aws-cdk-lib knows, with its partition (``aws``, ``aws-cn``, ...)."""
    return {r.name: r.partition or "aws" for r in region_info.RegionInfo.regions}


def check_account(name: str, account: object) -> None:
    if not (isinstance(account, str) and ACCOUNT.fullmatch(account)):
        raise ValueError(
            f"{name} must be an AWS account id of exactly 12 digits, as a string "
            f"(e.g. '123456789012'); got {account!r}"
        )


def check_region(name: str, region: object, regions: Mapping[str, str]) -> None:
    if not (isinstance(region, str) and region in regions):
        raise ValueError(
            f"{name} must be a Region that aws-cdk-lib knows (e.g. 'eu-west-1', 'us-east-1'; "
            f"{len(regions)} known); got {region!r}"
        )


def check_settings(settings: Settings) -> None:
    """Every setting, each error naming the field, the value received and what is allowed."""
    regions = known_regions()
    check_account("pipeline_account", settings.pipeline_account)
    check_region("pipeline_region", settings.pipeline_region, regions)
    if not (isinstance(settings.repository, str) and REPOSITORY.fullmatch(settings.repository)):
        raise ValueError(
            f"repository must be 'owner/name' of the repository the connection reaches; "
            f"got {settings.repository!r}"
        )
    if not (isinstance(settings.branch, str) and settings.branch.strip()):
        raise ValueError(f"branch must be a branch name; got {settings.branch!r}")
    arn = settings.connection_arn
    if not (isinstance(arn, str) and CONNECTION.fullmatch(arn)):
        raise ValueError(
            "connection_arn must be the ARN of a CodeConnections connection "
            f"(arn:aws:codeconnections:<region>:<account>:connection/<id>); got {arn!r}"
        )
    if not isinstance(settings.with_pipeline, bool):
        raise ValueError(f"with_pipeline must be true or false; got {settings.with_pipeline!r}")
    check_targets(settings.targets, partition=regions[settings.pipeline_region])


def check_targets(targets: Sequence[Target], *, partition: str) -> None:
    """At least one target; each a 12-digit account and a known Region of the pipeline's
    partition; no (account, Region) twice; an alarm e-mail, when given, an address."""
    if not targets:
        raise ValueError(
            f"targets must name at least one (account, Region) to deploy the scaler to; "
            f"got {list(targets)!r}"
        )
    regions = known_regions()
    first: dict[tuple[str, str], int] = {}
    for i, target in enumerate(targets):
        check_account(f"targets[{i}].account", target.account)
        check_region(f"targets[{i}].region", target.region, regions)
        if regions[target.region] != partition:
            raise ValueError(
                f"targets[{i}].region must be in the pipeline's partition {partition!r} (one "
                f"pipeline deploys within one partition); got {target.region!r}, in "
                f"{regions[target.region]!r}"
            )
        email = target.alarm_email
        if email is not None and not (isinstance(email, str) and EMAIL.fullmatch(email)):
            raise ValueError(
                f"targets[{i}].alarm_email must be an e-mail address (name@domain) or absent; "
                f"got {email!r}"
            )
        key = (target.account, target.region)
        if key in first:
            raise ValueError(
                f"targets[{i}] repeats account {target.account} in {target.region}, already "
                f"targets[{first[key]}]; each (account, Region) must appear once"
            )
        first[key] = i


# ---------------------------------------------------------------- what each account gets


# --8<-- [start:stages]
class ScalerStack(cdk.Stack):
    """The scaler of one account and Region, managing the tables tagged
    ``autoscaling_manager_enabled=true`` there; its alarms go to its own topic."""

    def __init__(
        self, scope: Construct, id: str, *, alarm_email: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(scope, id, **kwargs)
        alarms = AlarmTopic(self, "DynamoDBCapacityAlarms").topic
        self.scaler = ThrottleAwareScaler(
            self, "Scaler", tag_key=TAG_KEY, tag_value=TAG_VALUE, alarm_topic=alarms
        )
        if alarm_email:
            email = subscriptions.EmailSubscription(alarm_email)
            alarms.add_subscription(email)
            subscription = alarms.node.find_child(alarm_email)
            acknowledge(
                subscription,
                "Serverless-SNSRedrivePolicy",
                "An alarm e-mail SNS cannot deliver is retried by SNS and counted in the "
                "topic's NumberOfNotificationsFailed metric; the alarm's state stays in this "
                "account's CloudWatch, so a dead-letter queue would keep copies nobody reads.",
            )
        cdk.CfnOutput(self, "ScalerFunctionName", value=self.scaler.function.function_name)
        cdk.CfnOutput(self, "AlarmTopicArn", value=alarms.topic_arn)


class ScalerStage(cdk.Stage):
    """One (account, Region): the stage the pipeline deploys there (child ``Scaler``)."""

    def __init__(self, scope: Construct, id: str, *, target: Target) -> None:
        env = cdk.Environment(account=target.account, region=target.region)
        super().__init__(scope, id, env=env)
        self.target = target
        self.stack = ScalerStack(self, "Scaler", alarm_email=target.alarm_email)


def stage_id(target: Target) -> str:
    """The stage's construct id: its stack is named ``DdbCapacity-<account>-<region>-Scaler``."""
    return f"DdbCapacity-{target.account}-{target.region}"


def waves(targets: Iterable[Target]) -> dict[str, list[Target]]:
    """The targets by Region, Regions in the order they first appear: one wave each."""
    by_region: dict[str, list[Target]] = {}
    for target in targets:
        by_region.setdefault(target.region, []).append(target)
    return by_region


def build_stages(scope: Construct, targets: Sequence[Target]) -> list[ScalerStage]:
    """One stage per target, in ``scope``: a wave's stages, or the app's without a pipeline
    (each then deploys with ``cdk deploy``)."""
    return [ScalerStage(scope, stage_id(t), target=t) for t in targets]


# ---------------------------------------------------------------- the pipeline


class ScalerPipelineStack(cdk.Stack):
    """The pipeline, in the tooling account: source, synth, self-mutation, asset
    publishing, then one wave per Region with one stage per account there."""

    def __init__(self, scope: Construct, id: str, *, settings: Settings, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        source = pipelines.CodePipelineSource.connection(
            settings.repository, settings.branch, connection_arn=settings.connection_arn
        )
        self.pipeline = pipelines.CodePipeline(
            self,
            "Pipeline",
            pipeline_type=codepipeline.PipelineType.V2,
            cross_account_keys=True,  # the artifacts key lets the target accounts read
            enable_key_rotation=True,
            synth=pipelines.ShellStep(
                "Synth",
                input=source,
                commands=[
                    "npm ci",
                    "python -m pip install '.[nag]'",
                    # the settings: the constants above, or "many_accounts" in cdk.json's context
                    'npx cdk synth --app "python -m examples.many_accounts"',
                ],
            ),
        )
        self.stages: list[ScalerStage] = []
        for region, targets in waves(settings.targets).items():
            wave = self.pipeline.add_wave(region)
            for stage in build_stages(scope, targets):
                wave.add_stage(stage)
                self.stages.append(stage)
        self.pipeline.build_pipeline()  # now, so that what it made can be acknowledged
        acknowledge_pipeline(self.pipeline)


def build_app(settings: Settings | None = None, **app_kwargs: Any) -> cdk.App:
    """The app: the pipeline and its stages, or the stages alone (``with_pipeline``), under
    the five cdk-nag packs. ``settings`` default to the context's, over the placeholders."""
    app = cdk.App(**app_kwargs)
    apply_nag_packs(app)
    settings = settings or Settings.from_context(app)
    check_settings(settings)
    if settings.with_pipeline:
        env = cdk.Environment(account=settings.pipeline_account, region=settings.pipeline_region)
        ScalerPipelineStack(app, "ScalerPipeline", settings=settings, env=env)
    else:
        build_stages(app, settings.targets)
    return app
    # --8<-- [end:stages]


# ---------------------------------------------------------------- the pipeline's findings

INLINE_POLICY_REASON = (
    "CDK Pipelines writes each of its roles' grants as that role's default policy, attached "
    "to that one role; the grants are CDK's own, for this pipeline's buckets, keys, projects "
    "and the CDK bootstrap roles, and their wildcards are acknowledged one by one."
)

#: Why each CDK Pipelines role may hold its wildcards, by its path under the pipeline.
ROLE_REASONS = {
    r"Pipeline/Role": "CodePipeline's role: read and write of objects (s3:GetObject*, "
    "s3:DeleteObject*, ...) in this pipeline's artifacts bucket and in its replication "
    "buckets in the other Regions, and use of their keys (kms:GenerateDataKey*, "
    "kms:ReEncrypt*). The replication keys live in the Regions' support stacks and are "
    "reached by alias, so CDK can only grant kms on Resource::*; each key's own policy "
    "admits the tooling account and the deploy roles of that Region's target accounts.",
    r"Pipeline/Source/[^/]+/CodePipelineActionRole": "The source action's role: it writes "
    "the checked-out repository into the artifacts bucket; object-level wildcards on that "
    "bucket's objects and use of its key only.",
    r"Pipeline/Build/Synth/CdkBuildProject/Role": "The synth project's role: its own log "
    "group's streams and report groups (named after the project at run time), and objects "
    "of the artifacts bucket with its key.",
    r"UpdatePipeline/SelfMutation/Role": "The self-mutation project's role: its own logs and "
    "report groups, reading the artifacts, and running cdk deploy of the pipeline stack: "
    "cloudformation:DescribeStacks and s3:ListBucket have no narrower resource, and "
    "sts:AssumeRole is limited to the tooling account's roles tagged as CDK bootstrap "
    "roles (aws-cdk:bootstrap-role: deploy, file-publishing, image-publishing).",
    r"Assets/FileRole": "The asset-publishing projects' role: CodeBuild logs and reports of "
    "the Assets projects, starting and reading their builds (CDK grants codebuild on "
    "Resource::* here), reading the artifacts, and assuming the target accounts' "
    "file-publishing bootstrap roles.",
    r"CodeBuildActionRole": "The role CodePipeline uses to run the CodeBuild actions: "
    "codebuild:StartBuild, BatchGetBuilds and StopBuild on this pipeline's projects only.",
}

BUCKET_REASON = (
    "CDK Pipelines' artifacts bucket (or a Region's replication bucket): it holds the "
    "intermediate source and cloud assembly of each run, rebuilt from the repository on "
    "every run; encrypted with the pipeline's KMS key, public access blocked. Versioning, "
    "replication and access logs of it would keep copies nothing reads."
)
BUCKET_FINDINGS = ("AwsSolutions-S1",) + tuple(
    f"{pack}-S3Bucket{rule}"
    for pack in ("HIPAA.Security", "NIST.800.53.R5", "PCI.DSS.321")
    for rule in ("LoggingEnabled", "ReplicationEnabled", "VersioningEnabled")
)
PROJECT_REASON = (
    "The project's source is the pipeline's artifact (source type CODEPIPELINE): it holds no "
    "repository URL and no credentials; the repository is reached through the "
    "CodeConnections connection."
)


def acknowledge_pipeline(pipeline: pipelines.CodePipeline) -> None:
    """The findings on what CDK Pipelines makes (roles, artifacts buckets, projects) in the
    pipeline stack and in its Regions' support stacks, each exact and with its reason."""
    support = pipeline.pipeline.cross_region_support
    scopes: list[IConstruct] = [pipeline, *(s.stack for s in support.values())]
    for scope in scopes:
        for child in scope.node.find_all():
            if isinstance(child, iam.CfnPolicy):
                _acknowledge_role_policy(pipeline, child)
            elif isinstance(child, s3.CfnBucket):
                for finding in BUCKET_FINDINGS:
                    acknowledge(child, finding, BUCKET_REASON)
            elif isinstance(child, codebuild.CfnProject):
                for pack in ("HIPAA.Security", "PCI.DSS.321"):
                    acknowledge(child, f"{pack}-CodeBuildProjectSourceRepoUrl", PROJECT_REASON)
            elif isinstance(child, kms.CfnKey) and not child.enable_key_rotation:
                raise ValueError(f"{child.node.path}: the pipeline's keys must rotate")


def _acknowledge_role_policy(pipeline: pipelines.CodePipeline, policy: iam.CfnPolicy) -> None:
    where = policy.node.path.removeprefix(pipeline.node.path + "/")
    reasons = [r for pattern, r in ROLE_REASONS.items() if re.fullmatch(pattern, _role(where))]
    if len(reasons) != 1:
        raise ValueError(
            f"{policy.node.path}: a CDK Pipelines role this example gives no reason for; "
            f"add its wildcards' reason to ROLE_REASONS"
        )
    for pack in ("HIPAA.Security", "NIST.800.53.R5", "PCI.DSS.321"):
        acknowledge(policy, f"{pack}-IAMNoInlinePolicy", INLINE_POLICY_REASON)
    for finding in wildcard_findings(policy):
        if finding == ANY_RESOURCE:
            acknowledge(policy, finding, any_resource_reason(policy, reasons[0]))
        else:
            acknowledge(policy, finding, reasons[0])


#: The finding of a statement on every resource.
ANY_RESOURCE = "AwsSolutions-IAM5[Resource::*]"


def any_resource_reason(policy: iam.CfnPolicy, role_reason: str) -> str:
    """The reason for ``policy``'s statements on Resource::*: what they grant, named action
    by action (KMS and codebuild:StartBuild among them), as CDK Pipelines' defaults."""
    document = cdk.Stack.of(policy).resolve(policy.policy_document)
    actions = sorted(
        action
        for statement in document["Statement"]
        if "*" in _listed(statement.get("Resource"))
        for action in _listed(statement.get("Action"))
    )
    return (
        f"CDK Pipelines' default grant, not this example's: {', '.join(actions)} on "
        f"Resource::*. CDK Pipelines writes these with no narrower resource and offers no "
        f"prop to narrow them. {role_reason}"
    )


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _role(path: str) -> str:
    """The role's path of a default policy's resource path (``.../Role/DefaultPolicy/Resource``)."""
    return path.removesuffix("/Resource").removesuffix("/DefaultPolicy")


def wildcard_findings(policy: iam.CfnPolicy) -> list[str]:
    """The AwsSolutions-IAM5 findings of ``policy``, named as cdk-nag names them: one per
    action and per resource that contains ``*``."""
    document = cdk.Stack.of(policy).resolve(policy.policy_document)
    found = set()
    for statement in document["Statement"]:
        for key in ("Action", "Resource"):
            values = statement.get(key, [])
            for value in values if isinstance(values, list) else [values]:
                name = nag_name(value)
                if "*" in name:
                    found.add(f"AwsSolutions-IAM5[{key}::{name}]")
    return sorted(found)


def nag_name(value: object) -> str:
    """A resolved policy value as a cdk-nag finding shows it: ``<Id>`` for a Ref,
    ``<Id.Attr>`` for a GetAtt, a Join's parts joined, a Sub's ``${X}`` as ``<X>``."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and len(value) == 1:
        ((function, args),) = value.items()
        if function == "Ref":
            return f"<{args}>"
        if function == "Fn::GetAtt":
            return f"<{'.'.join(args)}>"
        if function == "Fn::Sub" and isinstance(args, str):
            return re.sub(r"\$\{([^}]+)\}", r"<\1>", args)
        if function == "Fn::Join":
            separator, parts = args
            return str(separator).join(nag_name(p) for p in parts)
    raise ValueError(f"no cdk-nag name known for the policy value: {value!r}")


if __name__ == "__main__":
    build_app().synth()
