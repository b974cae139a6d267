"""The example apps: five cdk-nag packs with zero unacknowledged findings, every
acknowledgement exact and reasoned, cfn-lint clean, and the demo summary."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb

from constructs_pkg import Capacity, ProvisionedTable, apply_nag_packs
from constructs_pkg.common._compliance import NAG_PACKS, acknowledgment_id
from ddb_capacity_tools.summary import render, summarize_assembly
from tests.support.shape import ROOT

STACKS = {
    "MinimalTable",
    "OrdersLaunch",
    "SettledCatalog",
    "BulkLoad",
    "PrimeTime",
    "ThrottleAware",
    "PartnerImport",
}
PACK_NAMES = {"AwsSolutions", "Serverless", "HIPAA.Security", "NIST.800.53.R5", "PCI.DSS.321"}


@pytest.fixture(scope="module")
def assembly(cli_assembly: Path) -> Path:
    """The example app as the CDK CLI synthesized it (cdk.json's ``python -m examples``,
    ``build_app().synth()``), once for the modules that read it: that synth fails on any
    unacknowledged finding (the packs' ValidationFailed, as
    test_a_missing_acknowledgement_fails_the_synth shows in-process)."""
    return cli_assembly


def test_the_five_packs_are_applied(assembly: Path) -> None:
    report = json.loads((assembly / "validation-report.json").read_text())
    assert len(NAG_PACKS) == 5
    assert {r["pluginName"] for r in report["pluginReports"]} == {
        "AwsSolutions",
        "Serverless",
        "HIPAA.Security",
        "NIST.800.53.R5",
        "PCI.DSS.321",
    }


def test_examples_synthesize_with_zero_unacknowledged_findings(assembly: Path) -> None:
    manifest = json.loads((assembly / "manifest.json").read_text())
    stacks = {
        k for k, v in manifest["artifacts"].items() if v["type"] == "aws:cloudformation:stack"
    }
    assert stacks == STACKS


def test_every_acknowledgement_is_exact_and_reasoned(assembly: Path) -> None:
    seen = 0
    for stack in STACKS:
        metadata = json.loads((assembly / f"{stack}.metadata.json").read_text())
        for path, entries in metadata.items():
            for entry in entries:
                if entry["type"] != "aws:cdk:acknowledged-rules":
                    continue
                ((finding, reason),) = entry["data"].items()
                pack, rule = finding.split("::", 1)
                seen += 1
                # named pack, named rule, on a construct below the stack, with a real reason
                assert pack in PACK_NAMES and rule.startswith(f"{pack}-"), finding
                assert path.count("/") >= 2, f"{finding} acknowledged stack-wide at {path}"
                assert len(reason) > 40 and "false positive" not in reason.lower(), reason
    assert seen > 0


def test_every_function_runs_the_python_the_tests_run_on(assembly: Path) -> None:
    """The code a function runs on Lambda is the code these tests ran: its runtime is this
    interpreter's major.minor (one constant, ``FUNCTION_PYTHON``)."""
    from constructs_pkg.common._runtime import FUNCTION_PYTHON

    tested = f"python{sys.version_info.major}.{sys.version_info.minor}"
    assert FUNCTION_PYTHON == sys.version_info[:2]
    runtimes = {
        f"{template.stem}/{name}": resource["Properties"]["Runtime"]
        for template in assembly.glob("*.template.json")
        for name, resource in json.loads(template.read_text())["Resources"].items()
        if resource["Type"] == "AWS::Lambda::Function"
        # not the CDK's own (a custom-resource provider's framework, on Node.js)
        and resource["Properties"]["Handler"].startswith("ddb_capacity_")
    }
    assert len(runtimes) >= 4  # the scaler, the broker, the restorer, the settle function
    assert {k: v for k, v in runtimes.items() if v != tested} == {}


#: The recommended feature flags ``cdk.json`` sets otherwise, and why: each would change the
#: example app's templates without fixing anything.
FLAGS_KEPT = {
    # sorts each IAM statement's actions: the same grants, every policy rewritten
    "@aws-cdk/aws-iam:minimizePolicies": False,
}


def test_cdk_json_sets_the_recommended_feature_flags() -> None:
    """``cdk.json`` carries every feature flag a new app of the installed aws-cdk-lib gets
    (its ``recommended-feature-flags.json``, what ``cdk init`` writes), at that value but
    for ``FLAGS_KEPT``: the CLI then has no unconfigured flag to report."""
    from ddb_capacity_tools.flags_command import recommended_flags

    _, recommended = recommended_flags()
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    assert len(recommended) > 50
    expected = {**recommended, **FLAGS_KEPT}
    assert {k: v for k, v in expected.items() if context.get(k) != v} == {}


def test_a_missing_acknowledgement_fails_the_synth(tmp_path: Path) -> None:
    # GIVEN a table whose backup finding nobody acknowledged
    app = cdk.App(outdir=str(tmp_path))
    apply_nag_packs(app)
    stack = cdk.Stack(app, "Bare")
    ProvisionedTable(
        stack,
        "T",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        read=Capacity(min_capacity=1, max_capacity=5),
        write=Capacity(min_capacity=1, max_capacity=5),
    )
    # THEN the packs stop the synth and name the finding
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()
    report = (tmp_path / "validation-report.json").read_text()
    assert "DynamoDBInBackupPlan" in report


def test_acknowledgment_ids_are_qualified_by_pack() -> None:
    assert acknowledgment_id("AwsSolutions-IAM5[Resource::*]") == (
        "AwsSolutions::AwsSolutions-IAM5[Resource::*]"
    )
    assert acknowledgment_id("NIST.800.53.R5-LambdaDLQ") == (
        "NIST.800.53.R5::NIST.800.53.R5-LambdaDLQ"
    )
    assert acknowledgment_id("Serverless::Serverless-LambdaDLQ") == (
        "Serverless::Serverless-LambdaDLQ"
    )


def test_cli_synth_produces_every_stack(cli_assembly: Path) -> None:
    assert {p.name for p in cli_assembly.glob("*.template.json")} == {
        f"{s}.template.json" for s in STACKS
    }


def test_cfn_lint_finds_no_errors(cli_assembly: Path) -> None:
    templates = sorted(str(p) for p in cli_assembly.glob("*.template.json"))
    result = subprocess.run(
        [str(Path(sys.executable).parent / "cfn-lint"), *templates],
        capture_output=True,
        text=True,
        timeout=300,
    )
    # cfn-lint's exit code is a bit mask: 2 = errors, 4 = warnings, 8 = informational
    assert result.returncode & 2 == 0, result.stdout
    assert result.returncode & 1 == 0, result.stderr


def test_summary_reads_ranges_and_marks_off_the_templates(cli_assembly: Path) -> None:
    summaries = {s.name: s for s in summarize_assembly(cli_assembly)}
    orders = {(r.index, r.dimension): r for r in summaries["OrdersLaunch"].rows}
    assert len(orders) == 6
    write = orders[(None, "write")]
    assert (write.min_capacity, write.max_capacity, write.target_percent) == (50, 20_000, 60)
    assert (write.high_water_mark, write.prewarm, write.initial) == (20_000, "WARM_THROUGHPUT", 50)
    assert orders[("byStatus", "read")].high_water_mark is None
    catalog = {(r.index, r.dimension): r for r in summaries["SettledCatalog"].rows}
    assert catalog[(None, "write")].scale_in is False
    assert catalog[(None, "write")].prewarm == "PROVISION_THEN_SETTLE"
    assert catalog[(None, "read")].initial == 8_000
    text = render(list(summaries.values()))
    assert "Stack OrdersLaunch: cdk-nag 5 packs, 0 unacknowledged findings" in text
    assert "Orders / byCustomer" in text


def test_schedule_examples_carry_their_actions_without_warnings(assembly: Path) -> None:
    # GIVEN the bulk-load and prime-time stacks as synthesized
    def actions(stack: str) -> list[dict[str, Any]]:
        template = json.loads((assembly / f"{stack}.template.json").read_text())
        return [
            a
            for r in template["Resources"].values()
            if r["Type"] == "AWS::ApplicationAutoScaling::ScalableTarget"
            for a in r["Properties"].get("ScheduledActions", [])
        ]

    bulk = {a["ScheduledActionName"]: a for a in actions("BulkLoad")}
    assert bulk["nightly-load-raise"]["Schedule"] == "cron(50 4 ? * MON,TUE,WED,THU,FRI *)"
    assert bulk["nightly-load-raise"]["Timezone"] == "Europe/Paris"
    assert len(actions("BulkLoad")) == 4  # table and index, raise and restore
    prime = [a["ScalableTargetAction"]["MinCapacity"] for a in actions("PrimeTime")]
    assert prime == [1_200, 1_800, 2_600, 1_200, 400, 200]
    # THEN neither carries a schedule warning: prime-time's three nightly steps down fit
    for stack in ("BulkLoad", "PrimeTime"):
        metadata = json.loads((assembly / f"{stack}.metadata.json").read_text())
        warnings = [
            e for entries in metadata.values() for e in entries if e["type"] == "aws:cdk:warning"
        ]
        assert warnings == [], warnings


def test_examples_keep_their_logical_ids(assembly: Path) -> None:
    """Logical ids are public: a changed one makes CloudFormation replace the resource (a
    new, empty table). The snapshot holds every example resource's id and type."""
    snapshot = json.loads((ROOT / "tests" / "snapshots" / "example_logical_ids.json").read_text())
    now = {}
    for stack in snapshot:
        template = json.loads((assembly / f"{stack}.template.json").read_text())
        now[stack] = {
            k: v["Type"]
            for k, v in template["Resources"].items()
            if v["Type"] != "AWS::CDK::Metadata"
        }  # the CLI adds it, in-process not
    assert now == snapshot
