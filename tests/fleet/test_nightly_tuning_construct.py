"""NightlyTuning as a template: one function on the advisor asset, scheduled after the
advisor's report, its settings contract, least-privilege IAM (the ``tuned`` attribute of
the owned tables' items in the scaler's state store, the advisor's runs read), the scaler
told to obey the tuned values, the alarms; synthesized under the five cdk-nag packs,
cfn-lint clean; bad props refused with the prop, the value and what is allowed."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk.assertions import Template

from constructs_pkg import apply_nag_packs
from constructs_pkg.common._alarms import AlarmOptions
from constructs_pkg.common._compliance import acknowledge
from constructs_pkg.common._function_options import FunctionOptions
from constructs_pkg.fleet._advisor import FleetAdvisor
from constructs_pkg.fleet._tuning import NightlyTuning
from constructs_pkg.scaler._scaler import ThrottleAwareScaler
from constructs_pkg.table._capacity import Capacity
from constructs_pkg.table._provisioned_table import ProvisionedTable
from ddb_capacity_tools.tuning_rules import Bounds, TuningSettings
from tests.support.fleet_advisor import statements_of
from tests.support.many_accounts import cfn_lint

HANDLER = "ddb_capacity_tools.tuning_lambda.tuning_handler"


def app_with(
    stack: cdk.Stack, *, own_target: bool = True, days: int = 14, **tuning: Any
) -> NightlyTuning:
    table = ProvisionedTable(
        stack,
        "Orders",
        partition_key=cdk.aws_dynamodb.Attribute(
            name="pk", type=cdk.aws_dynamodb.AttributeType.STRING
        ),
        read=Capacity(min_capacity=5, max_capacity=100, target_utilization_percent=60),
        write=Capacity(min_capacity=5, max_capacity=100),
    )
    for pack in ("HIPAA.Security", "NIST.800.53.R5"):
        acknowledge(table.table, f"{pack}-DynamoDBInBackupPlan", "A table of this test only.")
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[table], own_target=own_target)
    advisor = FleetAdvisor(
        stack,
        "Advisor",
        schedule=events.CronOptions(minute="30", hour="23"),
        report_delay=Duration.hours(2),
        days=days,
    )
    props = {"allowed_targets": range(50, 91, 5), **tuning}
    return NightlyTuning(stack, "Tuning", advisor=advisor, scaler=scaler, **props)


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> tuple[Template, Path]:
    outdir = tmp_path_factory.mktemp("tuning")
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "Tuned")
    app_with(stack, max_step=5, dry_run=True)
    apply_nag_packs(app)
    app.synth()
    return Template.from_stack(stack), outdir


def tuner(template: Template) -> Mapping[str, Any]:
    (found,) = [
        f
        for f in template.find_resources("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] == HANDLER
    ]
    return found


def test_one_function_after_the_report_with_one_settings_contract(
    synthesized: tuple[Template, Path],
) -> None:
    template, _ = synthesized
    props = tuner(template)["Properties"]
    env = props["Environment"]["Variables"]
    assert set(env) == set(TuningSettings("b", "s", {}, Bounds((50,), 1)).to_env())
    assert env["NIGHTLY_TUNING_ALLOWED"] == "50,55,60,65,70,75,80,85,90"
    assert (env["NIGHTLY_TUNING_MAX_STEP"], env["NIGHTLY_TUNING_DRY_RUN"]) == ("5", "true")
    assert env["NIGHTLY_TUNING_REPORT_DELAY_MINUTES"] == "120"
    assert props["ReservedConcurrentExecutions"] == 1 and props["Timeout"] == 900
    crons = sorted(
        r["Properties"]["ScheduleExpression"]
        for r in template.find_resources("AWS::Events::Rule").values()
    )
    # the lister at 23:30, the report at 01:30, the loop 30 minutes later
    assert "cron(0 2 * * ? *)" in crons


def test_the_scaler_obeys_the_tuned_values_and_both_read_one_owned_map(
    synthesized: tuple[Template, Path],
) -> None:
    template, _ = synthesized
    functions = template.find_resources("AWS::Lambda::Function").values()
    (scaler,) = [
        f for f in functions if f["Properties"]["Handler"].endswith("scaler.handler.lambda_handler")
    ]
    scaler_env = scaler["Properties"]["Environment"]["Variables"]
    assert scaler_env["SCALER_TUNED_TARGETS"] == "true"
    # the scaler knows the allowed targets too, and obeys no tuned value outside them
    assert scaler_env["SCALER_TUNED_ALLOWED"] == "50,55,60,65,70,75,80,85,90"
    tuner_env = tuner(template)["Properties"]["Environment"]["Variables"]
    assert tuner_env["NIGHTLY_TUNING_OWNED"] == scaler_env["SCALER_OWNED_TARGETS"]
    assert tuner_env["NIGHTLY_TUNING_STORE"] == scaler_env["CAPACITY_HOLDS_TABLE"]


def statements(template: Template) -> dict[str, dict[str, Any]]:
    return statements_of(template, tuner(template)["Properties"]["Role"]["Fn::GetAtt"][0])


def test_it_may_read_the_runs_and_write_the_tuned_attribute_of_owned_tables_only(
    synthesized: tuple[Template, Path],
) -> None:
    template, _ = synthesized
    found = statements(template)
    assert set(found) == {"WriteOwnLogs", "ReadRuns", "ListRuns", "TuneOwnedTargets"}
    assert found["ReadRuns"]["Action"] == "s3:GetObject"
    assert found["ReadRuns"]["Resource"]["Fn::Join"][1][-1] == "/runs/*"
    tune = found["TuneOwnedTargets"]
    assert sorted(tune["Action"]) == ["dynamodb:GetItem", "dynamodb:UpdateItem"]
    tables = template.find_resources("AWS::DynamoDB::Table")
    (store,) = [t for t in tables if t.startswith("ScalerStateStore")]
    (orders,) = [t for t in tables if t.startswith("Orders")]
    assert tune["Resource"] == {"Fn::GetAtt": [store, "Arn"]}
    condition = tune["Condition"]["ForAllValues:StringEquals"]
    assert condition["dynamodb:Attributes"] == ["pk", "sk", "tuned"]
    assert condition["dynamodb:LeadingKeys"] == [{"Ref": orders}]  # the owned table only
    # a call naming no attributes (a whole item read or returned) is refused too
    assert tune["Condition"]["StringEqualsIfExists"] == {
        "dynamodb:Select": "SPECIFIC_ATTRIBUTES",
        "dynamodb:ReturnValues": ["NONE", "UPDATED_OLD", "UPDATED_NEW"],
    }
    # no scaling policy, scalable target or table write: the scaler applies the value
    actions = {
        a
        for s in found.values()
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert not {a for a in actions if a.startswith("application-autoscaling")}
    assert "dynamodb:UpdateTable" not in actions


def test_alarms_on_changes_failures_unreadable_results_and_dead_letters(
    synthesized: tuple[Template, Path],
) -> None:
    template, _ = synthesized
    alarms = template.find_resources("AWS::CloudWatch::Alarm").values()
    ours = {
        a["Properties"].get("MetricName"): a["Properties"]
        for a in alarms
        if a["Properties"].get("Namespace") == "DynamoDBCapacity/NightlyTuning"
    }
    assert set(ours) == {"TargetsChanged", "Failures", "TablesFailed", "Unreadable"}
    (store,) = [t for t in template.find_resources("AWS::DynamoDB::Table") if "StateStore" in t]
    for props in ours.values():
        assert props["Threshold"] == 1 and len(props["AlarmActions"]) == 1
        # its scaler's deployment's series (its state store), never another tuning's
        assert props["Dimensions"] == [{"Name": "StateStore", "Value": {"Ref": store}}]


def test_an_alarm_on_tuned_values_the_scaler_refuses(synthesized: tuple[Template, Path]) -> None:
    # GIVEN the scaler counts, per table, the tuned values it refuses (RefusedTunedTargets)
    template, _ = synthesized
    alarms = template.find_resources("AWS::CloudWatch::Alarm").values()
    # THEN the loop alarms on the worst table's count, at any value
    (refused,) = [
        a["Properties"]
        for a in alarms
        if any(
            m.get("MetricStat", {}).get("Metric", {}).get("MetricName") == "RefusedTunedTargets"
            for m in a["Properties"].get("Metrics", [])
        )
    ]
    # for the scaler's deployment (dimension StateStore, its state store): each table's
    # record publishes it so too, the worst table's Maximum
    (query,) = refused["Metrics"]
    (store,) = [t for t in template.find_resources("AWS::DynamoDB::Table") if "StateStore" in t]
    assert query["MetricStat"]["Metric"] == {
        "MetricName": "RefusedTunedTargets",
        "Namespace": "DynamoDBCapacity",
        "Dimensions": [{"Name": "StateStore", "Value": {"Ref": store}}],
    }
    assert query["MetricStat"]["Stat"] == "Maximum" and "Expression" not in query
    assert refused["Threshold"] == 1 and len(refused["AlarmActions"]) == 1


def test_alarms_are_returned_by_id_and_can_be_turned_off(stack: cdk.Stack) -> None:
    tuning = app_with(stack, alarm_options={"Changed": AlarmOptions(enabled=False)})
    assert set(tuning.alarms) == {
        "Errors",
        "RunsDropped",
        "RunsExpired",
        "Failures",
        "TablesFailed",
        "Unreadable",
        "Refused",
    }


def test_function_options_merge_over_the_defaults(stack: cdk.Stack) -> None:
    tuning = app_with(stack, function_options={"Tuner": FunctionOptions(memory_size=512)})
    template = Template.from_stack(stack)
    props = tuner(template)["Properties"]
    assert (props["MemorySize"], props["Timeout"]) == (512, 900)
    assert tuning.function.node.path == "Test/Tuning/Function"


def test_cfn_lint_finds_no_errors(synthesized: tuple[Template, Path]) -> None:
    _, outdir = synthesized
    found = cfn_lint([outdir / "Tuned.template.json"])
    assert [m for m in found if m["Level"] == "Error"] == []


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"allowed_targets": [10, 50]}, "allowed_targets: got '[10, 50]'; expected one or more"),
        ({"allowed_targets": []}, "allowed_targets: got '[]'; expected one or more"),
        ({"allowed_targets": "70"}, "allowed_targets: got '70'; expected one or more"),
        ({"max_step": 0}, "max_step: got 0; expected a whole number of percentage points"),
        ({"max_step": 7.5}, "max_step: got 7.5; expected a whole number"),
        ({"dry_run": "yes"}, "dry_run: got 'yes'; expected True or False"),
        (
            {"own_target": False},
            "scaler: got ThrottleAwareScaler Bad/Scaler without own_target=True; expected a "
            "ThrottleAwareScaler with own_target=True",
        ),
        (
            {"days": 1},
            "advisor: got a FleetAdvisor with days=1; expected days of at least 2: on less "
            "history each recommendation is a guess",
        ),
    ],
)
def test_bad_props_are_refused_with_the_prop_and_the_value(
    props: dict[str, Any], message: str
) -> None:
    stack = cdk.Stack(cdk.App(), "Bad")
    with pytest.raises(ValueError) as caught:
        app_with(stack, **props)
    assert "NightlyTuning Bad/Tuning: " + message in str(caught.value)
