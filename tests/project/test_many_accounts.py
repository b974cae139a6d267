"""The many-accounts example: one CDK Pipelines stage per (account, Region), waves by
Region, each account's scaler alarming on its own topic; bad settings refused at the door,
the five cdk-nag packs clean, cfn-lint clean. The app is synthesized once, in-process
(real aws-cdk-lib, real cdk-nag); the CDK CLI would add a Node start-up and write the same
cloud assembly, which tests/project/test_examples.py already checks it does."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam

from constructs_pkg import acknowledge, apply_nag_packs
from examples.many_accounts import (
    CONTEXT_KEY,
    ROLE_REASONS,
    TAG_KEY,
    ScalerStage,
    Settings,
    Target,
    build_app,
    check_settings,
    stage_id,
    waves,
    wildcard_findings,
)
from tests.support.many_accounts import cfn_lint
from tests.support.shape import ROOT

SETTINGS = Settings()
PACKS = {"AwsSolutions", "Serverless", "HIPAA.Security", "NIST.800.53.R5", "PCI.DSS.321"}
SCALER_HANDLER = "ddb_capacity_runtime.scaler.handler.lambda_handler"


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example as written (its placeholder settings), synthesized under the five packs:
    synth raises ValidationFailed on any unacknowledged finding."""
    outdir = tmp_path_factory.mktemp("many-accounts")
    build_app(outdir=str(outdir)).synth()
    return outdir


def read(path: Path) -> Any:
    return json.loads(path.read_text())


def stage_template(assembly: Path, target: Target) -> tuple[dict[str, Any], dict[str, Any]]:
    """The stage's one stack: its manifest artifact and its template."""
    directory = assembly / f"assembly-{stage_id(target)}"
    stacks = [
        (name, artifact)
        for name, artifact in read(directory / "manifest.json")["artifacts"].items()
        if artifact["type"] == "aws:cloudformation:stack"
    ]
    assert len(stacks) == 1, f"{stage_id(target)}: {len(stacks)} stacks"
    name, artifact = stacks[0]
    return artifact, read(directory / f"{name}.template.json")


def of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == kind}


# ---------------------------------------------------------------- each account and Region


def test_one_stage_per_account_and_region_with_its_env(assembly: Path) -> None:
    manifest = read(assembly / "manifest.json")["artifacts"]
    nested = {k for k, v in manifest.items() if v["type"] == "cdk:cloud-assembly"}
    assert nested == {f"assembly-{stage_id(t)}" for t in SETTINGS.targets}
    assert len(nested) == 4
    for target in SETTINGS.targets:
        artifact, _ = stage_template(assembly, target)
        assert artifact["environment"] == f"aws://{target.account}/{target.region}"
        assert artifact["properties"]["stackName"] == f"{stage_id(target)}-Scaler"


def test_each_stage_has_the_scaler_finding_tables_by_tag(assembly: Path) -> None:
    for target in SETTINGS.targets:
        _, template = stage_template(assembly, target)
        (function,) = of_type(template, "AWS::Lambda::Function").values()
        assert function["Properties"]["Handler"] == SCALER_HANDLER
        variables = function["Properties"]["Environment"]["Variables"]
        assert (variables["SCALER_TAG_KEY"], variables["SCALER_TAG_VALUE"]) == (TAG_KEY, "true")
        assert variables["SCALER_TABLES"] == ""  # found by tag only: no table in the stage
        assert of_type(template, "AWS::DynamoDB::Table").keys() == {
            k for k in template["Resources"] if k.startswith("ScalerStateStore")
        }


def test_each_stage_alarms_on_its_own_topic(assembly: Path) -> None:
    for target in SETTINGS.targets:
        _, template = stage_template(assembly, target)
        # GIVEN the stage's one topic
        (topic,) = of_type(template, "AWS::SNS::Topic")
        alarms = of_type(template, "AWS::CloudWatch::Alarm")
        assert len(alarms) >= 5, target
        # THEN every alarm action of every alarm is that topic, in this template
        for name, alarm in alarms.items():
            props = alarm["Properties"]
            actions = [*props.get("AlarmActions", []), *props.get("OKActions", [])]
            actions += props.get("InsufficientDataActions", [])
            assert actions and all(a == {"Ref": topic} for a in actions), (target, name)
        # AND no other target's account appears anywhere in the stage
        others = {t.account for t in SETTINGS.targets} - {target.account}
        text = json.dumps(template)
        assert [a for a in others if a in text] == [], target


def test_no_alarm_of_a_stage_is_per_table(assembly: Path) -> None:
    # the guide says so: tables found by tag get no alarm of their own
    for target in SETTINGS.targets:
        _, template = stage_template(assembly, target)
        for name, alarm in of_type(template, "AWS::CloudWatch::Alarm").items():
            props = alarm["Properties"]
            stats = [
                m["MetricStat"]["Metric"] for m in props.get("Metrics", []) if "MetricStat" in m
            ]
            dimensions = {d["Name"] for m in [props, *stats] for d in m.get("Dimensions", [])}
            assert "TableName" not in dimensions, (target, name)
            assert not name.startswith(("Throttled", "HotKey", "ScalerThrottled", "ScalerHotKey"))


def test_the_alarm_email_is_subscribed_where_one_is_set(assembly: Path) -> None:
    emailed = 0
    for target in SETTINGS.targets:
        _, template = stage_template(assembly, target)
        (topic,) = of_type(template, "AWS::SNS::Topic")
        subscriptions = [
            s["Properties"] for s in of_type(template, "AWS::SNS::Subscription").values()
        ]
        if target.alarm_email is None:
            assert subscriptions == [], target
            continue
        emailed += 1
        assert subscriptions == [
            {"Endpoint": target.alarm_email, "Protocol": "email", "TopicArn": {"Ref": topic}}
        ]
    assert emailed == 2


# ---------------------------------------------------------------- the pipeline


def pipeline_stages(assembly: Path) -> list[dict[str, Any]]:
    template = read(assembly / "ScalerPipeline.template.json")
    (pipeline,) = of_type(template, "AWS::CodePipeline::Pipeline").values()
    assert pipeline["Properties"]["PipelineType"] == "V2"
    return pipeline["Properties"]["Stages"]  # type: ignore[no-any-return]


def test_the_pipeline_deploys_one_wave_per_region_in_order(assembly: Path) -> None:
    stages = pipeline_stages(assembly)
    by_region = waves(SETTINGS.targets)
    assert list(by_region) == ["eu-west-1", "us-east-1"]  # the targets' first-seen order
    assert [s["Name"] for s in stages] == ["Source", "Build", "UpdatePipeline", "Assets"] + list(
        by_region
    )
    for wave in stages[4:]:
        region, targets = wave["Name"], by_region[wave["Name"]]
        deploys: dict[str, list[tuple[int, str]]] = {}
        for action in wave["Actions"]:
            # THEN each action deploys one target's stack, in its Region, with its role
            config = action["Configuration"]
            (target,) = [t for t in targets if config["StackName"] == f"{stage_id(t)}-Scaler"]
            assert action.get("Region", SETTINGS.pipeline_region) == region
            role = json.dumps(action["RoleArn"])
            assert f":iam::{target.account}:role/cdk-hnb659fds-deploy-role-" in role
            assert f"-{target.account}-{region}" in role
            step = action["Name"].rsplit(".", 1)[1]
            deploys.setdefault(target.account, []).append((action["RunOrder"], step))
        # AND every account of the wave is prepared, then deployed, side by side
        assert {a: sorted(s) for a, s in deploys.items()} == {
            t.account: [(1, "Prepare"), (2, "Deploy")] for t in targets
        }


def test_the_pipeline_source_is_the_connection(assembly: Path) -> None:
    (source,) = pipeline_stages(assembly)[0]["Actions"]
    assert source["ActionTypeId"]["Provider"] == "CodeStarSourceConnection"
    assert source["Configuration"]["ConnectionArn"] == SETTINGS.connection_arn
    assert source["Configuration"]["FullRepositoryId"] == SETTINGS.repository
    assert source["Configuration"]["BranchName"] == SETTINGS.branch


def test_each_regions_artifacts_key_admits_its_accounts_and_rotates(assembly: Path) -> None:
    """cross_account_keys: each Region's artifacts (the pipeline's own bucket in its Region,
    a replication bucket in the others) are encrypted with a customer-managed key that the
    deploy role of each target account in that Region may use; every key rotates."""
    for region, targets in waves(SETTINGS.targets).items():
        name = (
            "ScalerPipeline"
            if region == SETTINGS.pipeline_region
            else f"cross-region-stack-{SETTINGS.pipeline_account}_{region}"
        )
        (key,) = of_type(read(assembly / f"{name}.template.json"), "AWS::KMS::Key").values()
        assert key["Properties"]["EnableKeyRotation"] is True, region
        principals = json.dumps(key["Properties"]["KeyPolicy"])
        admitted = set(re.findall(r":iam::(\d{12}):role/cdk-hnb659fds-deploy-role-", principals))
        assert admitted == {t.account for t in targets}, region


# ---------------------------------------------------------------- compliance


def test_the_five_packs_pass_everywhere(assembly: Path) -> None:
    report = read(assembly / "validation-report.json")
    assert {r["pluginName"]: r["conclusion"] for r in report["pluginReports"]} == {
        p: "success" for p in PACKS
    }


def acknowledgements(metadata: dict[str, list[dict[str, Any]]]) -> list[tuple[str, str, str]]:
    return [
        (path, finding, reason)
        for path, entries in metadata.items()
        for entry in entries
        if entry["type"] == "aws:cdk:acknowledged-rules"
        for finding, reason in entry["data"].items()
    ]


def test_every_acknowledgement_is_exact_and_reasoned(assembly: Path) -> None:
    files = [*assembly.glob("*.metadata.json"), *assembly.glob("assembly-*/*.metadata.json")]
    seen = {f.name: acknowledgements(read(f)) for f in files}
    assert all(seen.values()), [f for f, a in seen.items() if not a]
    for _, entries in seen.items():
        for path, finding, reason in entries:
            pack, rule = finding.split("::", 1)
            assert pack in PACKS and rule.startswith(f"{pack}-"), finding
            assert path.count("/") >= 2, f"{finding} acknowledged stack-wide at {path}"
            assert len(reason) > 40 and "false positive" not in reason.lower(), reason
    # the pipeline's wildcards: each named, none an action wildcard of a whole service
    pipeline = [f for _, f, _ in seen["ScalerPipeline.metadata.json"] if "IAM5[" in f]
    assert len(pipeline) > 10
    assert not [f for f in pipeline if re.search(r"\[Action::[a-z0-9-]+:\*\]", f)]


def test_grants_on_any_resource_are_acknowledged_as_cdk_pipelines_defaults(
    assembly: Path,
) -> None:
    """CDK Pipelines grants KMS and codebuild:StartBuild (among others) on Resource::*:
    each such policy's acknowledgement says so, naming every action it grants there."""
    granted: set[str] = set()
    for path in assembly.glob("*.metadata.json"):
        template = read(path.with_name(path.name.replace(".metadata.json", ".template.json")))
        for where, entries in read(path).items():
            logical = next((e["data"] for e in entries if e["type"] == "aws:cdk:logicalId"), "")
            resource = template["Resources"].get(logical, {})
            if resource.get("Type") != "AWS::IAM::Policy":
                continue
            on_any = {
                action
                for statement in resource["Properties"]["PolicyDocument"]["Statement"]
                if "*" in listed(statement["Resource"])
                for action in listed(statement["Action"])
            }
            if not on_any:
                continue
            reasons = {f: r for _, f, r in acknowledgements({where: entries})}
            reason = reasons["AwsSolutions::AwsSolutions-IAM5[Resource::*]"]
            assert reason.startswith("CDK Pipelines' default grant, not this example's: ")
            assert all(action in reason for action in on_any), (where, on_any, reason)
            granted |= on_any
    assert {"kms:Decrypt", "kms:GenerateDataKey*", "codebuild:StartBuild"} <= granted


def listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_the_example_adds_one_acknowledgement_to_a_stage(assembly: Path) -> None:
    """A stage holds the scaler's own acknowledgements and, with an e-mail, the
    subscription's; nothing stack-wide, nothing on the pipeline's behalf."""
    emailed = next(t for t in SETTINGS.targets if t.alarm_email)
    plain = next(t for t in SETTINGS.targets if not t.alarm_email)

    def findings(target: Target) -> set[tuple[str, str]]:
        (path,) = (assembly / f"assembly-{stage_id(target)}").glob("*.metadata.json")
        return {(p.split("/", 2)[2], f) for p, f, _ in acknowledgements(read(path))}

    extra = findings(emailed) - findings(plain)
    assert extra == {
        (
            f"Scaler/DynamoDBCapacityAlarms/Alarms/{emailed.alarm_email}",
            "Serverless::Serverless-SNSRedrivePolicy",
        )
    }


def test_wildcard_findings_are_named_as_cdk_nag_names_them(tmp_path: Path) -> None:
    # GIVEN a role whose policy has wildcards in Refs, GetAtts, Joins and a Sub
    app = cdk.App(outdir=str(tmp_path))
    apply_nag_packs(app)
    stack = cdk.Stack(app, "Roles")
    role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("codebuild.amazonaws.com"))
    bucket = cdk.CfnResource(stack, "Bucket", type="AWS::S3::Bucket")
    bucket_arn = cdk.Token.as_string(bucket.get_att("Arn"))
    role.add_to_policy(iam.PolicyStatement(actions=["s3:Get*"], resources=[f"{bucket_arn}/*"]))
    role.add_to_policy(
        iam.PolicyStatement(
            actions=["logs:PutLogEvents"],
            resources=[
                cdk.Fn.sub("arn:${AWS::Partition}:logs:eu-west-1:111111111111:log-group:x*"),
                stack.format_arn(service="logs", resource="log-group", resource_name="y:*"),
            ],
        )
    )
    policy = role.node.find_child("DefaultPolicy").node.default_child
    assert isinstance(policy, iam.CfnPolicy)
    for pack in ("HIPAA.Security", "NIST.800.53.R5", "PCI.DSS.321"):
        acknowledge(policy, f"{pack}-IAMNoInlinePolicy", "x" * 41)
    # WHEN each finding the example derives is acknowledged
    found = wildcard_findings(policy)
    assert found == [
        "AwsSolutions-IAM5[Action::s3:Get*]",
        "AwsSolutions-IAM5[Resource::<Bucket.Arn>/*]",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>"
        ":log-group/y:*]",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:eu-west-1:111111111111"
        ":log-group:x*]",
    ]
    for finding in found:
        acknowledge(policy, finding, "the reason under test, longer than forty characters")
    # THEN cdk-nag finds nothing else: the names are cdk-nag's own
    app.synth()
    report = read(tmp_path / "validation-report.json")
    assert {r["conclusion"] for r in report["pluginReports"]} == {"success"}


def test_every_pipeline_role_has_its_reason() -> None:
    assert len(ROLE_REASONS) == 6
    assert all(len(reason) > 80 for reason in ROLE_REASONS.values())


def test_cfn_lint_finds_no_errors(assembly: Path) -> None:
    stages = sorted(assembly.glob("assembly-*/*.template.json"))
    assert len(stages) == 4
    tooling = sorted(assembly.glob("*.template.json"))  # the pipeline and its Region's support
    assert len(tooling) == 2
    errors = [m for m in cfn_lint(stages + tooling) if m["Level"] == "Error"]
    # cfn-lint's E3703 checks a CloudFormation action's RoleArn as an IAM role ARN and reports
    # its Join-or-Sub style hint (I1022, informational) as that rule's error; CDK Pipelines
    # writes the role ARN with Fn::Join (cfn-lint PR #3998 added the RoleArn check).
    hint = "Prefer using Fn::Sub over Fn::Join with an empty delimiter"
    style = [m for m in errors if m["Rule"]["Id"] == "E3703" and m["Message"] == hint]
    assert [m for m in errors if m not in style] == []
    assert {Path(m["Filename"]).name for m in style} <= {"ScalerPipeline.template.json"}


# ---------------------------------------------------------------- without the pipeline


def test_the_stages_alone_without_the_pipeline() -> None:
    app = build_app(context={CONTEXT_KEY: json.dumps({"with_pipeline": False})})
    children = app.node.children
    assert all(isinstance(c, ScalerStage) for c in children)
    assert [c.node.id for c in children] == [stage_id(t) for t in SETTINGS.targets]
    for stage in children:
        assert isinstance(stage, ScalerStage)
        assert (stage.stack.account, stage.stack.region) == (
            stage.target.account,
            stage.target.region,
        )


def test_context_gives_the_settings() -> None:
    given = {
        "pipeline_account": "123456789012",
        "targets": [{"account": "210987654321", "region": "ap-southeast-2"}],
        "with_pipeline": False,
    }
    app = build_app(context={CONTEXT_KEY: given})
    (stage,) = app.node.children
    assert stage.node.id == "DdbCapacity-210987654321-ap-southeast-2"


# ---------------------------------------------------------------- bad settings


def targets(*given: Target) -> Settings:
    return replace(SETTINGS, targets=given)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        pytest.param(
            targets(Target("12345678901", "eu-west-1")),
            "targets[0].account must be an AWS account id of exactly 12 digits, as a string "
            "(e.g. '123456789012'); got '12345678901'",
            id="short-account",
        ),
        pytest.param(
            targets(Target("111111111111", "eu-west-1"), Target("1111-2222-3333", "eu-west-1")),
            "targets[1].account must be an AWS account id of exactly 12 digits, as a string "
            "(e.g. '123456789012'); got '1111-2222-3333'",
            id="dashed-account",
        ),
        pytest.param(
            targets(Target("111111111111", "eu-westt-1")),
            "targets[0].region must be a Region that aws-cdk-lib knows (e.g. 'eu-west-1', "
            "'us-east-1'; {n} known); got 'eu-westt-1'",
            id="unknown-region",
        ),
        pytest.param(
            targets(
                Target("111111111111", "eu-west-1"),
                Target("222222222222", "eu-west-1"),
                Target("111111111111", "eu-west-1", alarm_email="a@example.com"),
            ),
            "targets[2] repeats account 111111111111 in eu-west-1, already targets[0]; each "
            "(account, Region) must appear once",
            id="duplicate",
        ),
        pytest.param(
            targets(),
            "targets must name at least one (account, Region) to deploy the scaler to; got []",
            id="empty",
        ),
        pytest.param(
            targets(Target("111111111111", "cn-north-1")),
            "targets[0].region must be in the pipeline's partition 'aws' (one pipeline deploys "
            "within one partition); got 'cn-north-1', in 'aws-cn'",
            id="other-partition",
        ),
        pytest.param(
            targets(Target("111111111111", "eu-west-1", alarm_email="dba-at-example.com")),
            "targets[0].alarm_email must be an e-mail address (name@domain) or absent; "
            "got 'dba-at-example.com'",
            id="email",
        ),
        pytest.param(
            replace(SETTINGS, pipeline_account=123456789012),  # type: ignore[arg-type]
            "pipeline_account must be an AWS account id of exactly 12 digits, as a string "
            "(e.g. '123456789012'); got 123456789012",
            id="pipeline-account-number",
        ),
        pytest.param(
            replace(SETTINGS, connection_arn="arn:aws:iam::123456789012:role/x"),
            "connection_arn must be the ARN of a CodeConnections connection "
            "(arn:aws:codeconnections:<region>:<account>:connection/<id>); "
            "got 'arn:aws:iam::123456789012:role/x'",
            id="connection",
        ),
        pytest.param(
            replace(SETTINGS, repository="ddb-capacity-deploy"),
            "repository must be 'owner/name' of the repository the connection reaches; "
            "got 'ddb-capacity-deploy'",
            id="repository",
        ),
    ],
)
def test_bad_settings_are_refused_naming_field_value_and_what_is_allowed(
    settings: Settings, message: str
) -> None:
    known = len(cdk.region_info.RegionInfo.regions)
    with pytest.raises(ValueError) as raised:
        check_settings(settings)
    assert str(raised.value) == message.replace("{n}", str(known))


@pytest.mark.parametrize(
    ("context", "message"),
    [
        pytest.param(
            '{"targets": [',
            "many_accounts: context must be a JSON object; got '{\"targets\": [' "
            "(Expecting value: line 1 column 14 (char 13))",
            id="not-json",
        ),
        pytest.param(
            "{",
            "many_accounts: context must be a JSON object; got '{' (Expecting property name "
            "enclosed in double quotes: line 1 column 2 (char 1)); on the command line give it "
            "on one line (the CDK CLI keeps only a -c value's first line)",
            id="first-line-only",
        ),
        pytest.param(
            {"target": []},
            "many_accounts: unknown setting(s) target; allowed: branch, connection_arn, "
            "pipeline_account, pipeline_region, repository, targets, with_pipeline",
            id="unknown-key",
        ),
        pytest.param(
            {"targets": [{"account": "111111111111"}]},
            "targets[0] must be an object with account, region and optionally alarm_email; "
            "got {'account': '111111111111'}",
            id="no-region",
        ),
        pytest.param(
            {"targets": [{"account": "111111111111", "region": "xx-nowhere-1"}]},
            "targets[0].region must be a Region that aws-cdk-lib knows (e.g. 'eu-west-1', "
            "'us-east-1'; {n} known); got 'xx-nowhere-1'",
            id="region-from-context",
        ),
    ],
)
def test_bad_context_is_refused(context: object, message: str) -> None:
    known = len(cdk.region_info.RegionInfo.regions)
    with pytest.raises(ValueError) as raised:
        build_app(context={CONTEXT_KEY: context})
    assert str(raised.value) == message.replace("{n}", str(known))


# ---------------------------------------------------------------- the guide follows the code

GUIDE = ROOT / "docs" / "guides" / "many-accounts.md"


def test_the_guide_shows_the_example_sections() -> None:
    example = (ROOT / "examples" / "many_accounts.py").read_text()
    for section in ("settings", "stages"):
        assert f"<!-- example: examples/many_accounts.py:{section} -->" in GUIDE.read_text()
        assert f"# --8<-- [start:{section}]" in example and f"# --8<-- [end:{section}]" in example


def test_the_guide_names_every_setting() -> None:
    table = GUIDE.read_text().split("## Settings", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([a-z_]+)(?:\[i\]\.[a-z_]+)?`", table))
    named |= set(re.findall(r"`targets\[i\]\.([a-z_]+)`", table))
    assert {f for f in Settings.__dataclass_fields__} <= named
    assert {f for f in Target.__dataclass_fields__} <= named


def test_the_guide_counts_the_actions_a_run_bills(assembly: Path) -> None:
    """Cost: "a run here has 4 + 2 x (number of targets) actions"."""
    assert "4 + 2 × (number of targets) actions" in GUIDE.read_text()
    actions = sum(len(stage["Actions"]) for stage in pipeline_stages(assembly))
    assert actions == 4 + 2 * len(SETTINGS.targets)
