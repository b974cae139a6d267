"""A local deploy: the pinned CDK CLI bootstraps and deploys the example app to a moto
server on 127.0.0.1, then boto3 checks what exists.

moto's CloudFormation skips scalable targets and scaling policies, and it cannot run the
settle functions (no Docker): the template tests cover the former, and the deployed settle
step is run here in-process against the deployed table with the properties CloudFormation
holds for it, as its provider calls it (on_event, then is_complete).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from ddb_capacity_runtime.settle.handler import is_complete, on_event
from ddb_capacity_tools.local_aws import drop_key_tags
from tests.conftest import ACCOUNT, REGION, cfn_event, dated_decreases, run_cdk

pytestmark = pytest.mark.deploy


@pytest.fixture(scope="module")
def deployed(
    cli_assembly: Path, aws_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    assembly = tmp_path_factory.mktemp("deploy") / "cdk.out"
    shutil.copytree(cli_assembly, assembly)  # the deploy adapts its templates to moto
    drop_key_tags(assembly)
    run_cdk("bootstrap", f"aws://{ACCOUNT}/{REGION}", "--app", str(assembly), env=aws_env)
    run_cdk("deploy", "--all", "--app", str(assembly), "--require-approval", "never", env=aws_env)
    return assembly


def physical_table(aws_client: Any, stack: str, logical_prefix: str = "") -> str:
    """The stack's one DynamoDB table (other than a hold store), or the one whose logical id
    starts with ``logical_prefix``."""
    resources = aws_client("cloudformation").describe_stack_resources(StackName=stack)
    (name,) = [
        r["PhysicalResourceId"]
        for r in resources["StackResources"]
        if r.get("ResourceType") == "AWS::DynamoDB::Table"
        and r["LogicalResourceId"].startswith(logical_prefix)
        and (logical_prefix or "HoldStore" not in r["LogicalResourceId"])
    ]
    return str(name)


def describe(aws_client: Any, stack: str) -> dict[str, Any]:
    table: dict[str, Any] = aws_client("dynamodb").describe_table(
        TableName=physical_table(aws_client, stack)
    )["Table"]
    return table


def tags(aws_client: Any, table: dict[str, Any]) -> dict[str, str]:
    listed = aws_client("dynamodb").list_tags_of_resource(ResourceArn=table["TableArn"])["Tags"]
    return {t["Key"]: t["Value"] for t in listed}


def throughput(spec: dict[str, Any]) -> tuple[int, int]:
    pt = spec["ProvisionedThroughput"]
    return pt["ReadCapacityUnits"], pt["WriteCapacityUnits"]


def test_minimal_table_is_deployed(deployed: Path, aws_client: Any) -> None:
    table = describe(aws_client, "MinimalTable")
    assert table["KeySchema"] == [{"AttributeName": "pk", "KeyType": "HASH"}]
    assert throughput(table) == (5, 5)
    assert table["DeletionProtectionEnabled"] is True
    assert tags(aws_client, table).get("app") == "sessions"


def test_orders_table_is_pre_warmed(deployed: Path, aws_client: Any) -> None:
    table = describe(aws_client, "OrdersLaunch")
    assert throughput(table) == (50, 50)
    warm = table["WarmThroughput"]
    assert (warm["ReadUnitsPerSecond"], warm["WriteUnitsPerSecond"]) == (30_000, 20_000)
    gsis = {g["IndexName"]: g for g in table["GlobalSecondaryIndexes"]}
    assert set(gsis) == {"byCustomer", "byStatus"}
    assert gsis["byCustomer"]["KeySchema"] == [
        {"AttributeName": "customerId", "KeyType": "HASH"},
        {"AttributeName": "createdAt", "KeyType": "RANGE"},
    ]
    assert gsis["byStatus"]["Projection"]["ProjectionType"] == "KEYS_ONLY"
    assert throughput(gsis["byCustomer"]) == (20, 20)
    assert gsis["byCustomer"]["WarmThroughput"]["ReadUnitsPerSecond"] == 15_000
    assert gsis["byStatus"]["WarmThroughput"]["WriteUnitsPerSecond"] == 20_000
    assert tags(aws_client, table) == {"app": "orders", "ddb-capacity:prewarm": "WARM_THROUGHPUT"}


def test_catalog_is_created_at_its_mark_then_settled(deployed: Path, aws_client: Any) -> None:
    # GIVEN the catalog as CloudFormation created it: at its high-water mark
    table = describe(aws_client, "SettledCatalog")
    assert throughput(table) == (8_000, 2_000)
    assert tags(aws_client, table)["ddb-capacity:prewarm"] == "PROVISION_THEN_SETTLE"
    # AND the deployed settle functions, as CloudFormation knows them
    functions = aws_client("lambda").list_functions()["Functions"]
    handlers = {f["Handler"] for f in functions if "CapacitySettleProvider" in f["FunctionName"]}
    assert {
        "ddb_capacity_runtime.settle.handler.on_event",
        "ddb_capacity_runtime.settle.handler.is_complete",
    } <= handlers
    template = json.loads((deployed / "SettledCatalog.template.json").read_text())
    (settle,) = [r for r in template["Resources"].values() if r["Type"] == "Custom::CapacitySettle"]
    properties = {**settle["Properties"], "TableName": table["TableName"]}
    # WHEN the settle step runs against the deployed table, as its provider calls it
    event = cfn_event("Create", json.loads(json.dumps(properties)))
    started = on_event(event, None)
    dynamodb = aws_client("dynamodb")
    dated_decreases(dynamodb)
    answers = [
        is_complete(
            {**event, **started},
            None,
            dynamodb=dynamodb,
            autoscaling=aws_client("application-autoscaling"),
        )
        for _ in range(2)
    ]
    # THEN it lowers the table at once (it is ACTIVE), and the next call, its floors read
    # again, is done: the catalog is at its operating minimum
    assert answers == [{"IsComplete": False}, {"IsComplete": True, "Data": {"Settled": "true"}}]
    assert throughput(describe(aws_client, "SettledCatalog")) == (25, 10)


# ---------------------------------------------------------------- the throttle-aware scaler


@pytest.fixture(scope="module")
def ticked(deployed: Path, moto_endpoint: str) -> dict[str, Any]:
    from examples.local_tick import tick_against_deployment

    return tick_against_deployment(moto_endpoint, deployed, deploy_first=False)


def test_scaler_function_is_deployed_as_declared(ticked: dict[str, Any], aws_client: Any) -> None:
    from constructs_pkg.common._runtime import function_runtime

    functions = aws_client("lambda").list_functions()["Functions"]
    (function,) = [f for f in functions if "ScalerFunction" in f["FunctionName"]]
    assert function["Handler"] == "ddb_capacity_runtime.scaler.handler.lambda_handler"
    assert function["Runtime"] == function_runtime().name
    env = function["Environment"]["Variables"]
    feed = ticked["tables"]["Feed"]
    assert env["SCALER_TABLES"] == feed
    assert (env["SCALER_TAG_KEY"], env["SCALER_TAG_VALUE"]) == (
        "autoscaling_manager_enabled",
        "true",
    )
    assert json.loads(env["SCALER_OVERRIDES"]) == {
        feed: {
            "read": {"min": 50, "max": 4000, "target": 70},
            "write": {"min": 20, "max": 1000, "target": 70},
        }
    }
    assert (env["SCALER_TICK_MINUTES"], env["SCALER_DRY_RUN"]) == ("2", "false")


def test_scaler_rule_targets_the_function(ticked: dict[str, Any], aws_client: Any) -> None:
    events = aws_client("events")
    (rule,) = [r for r in events.list_rules()["Rules"] if "ScalerSchedule" in r["Name"]]
    assert rule["ScheduleExpression"] == "rate(2 minutes)" and rule["State"] == "ENABLED"
    (target,) = events.list_targets_by_rule(Rule=rule["Name"])["Targets"]
    assert "ScalerFunction" in target["Arn"]
    assert target["RetryPolicy"]["MaximumRetryAttempts"] == 2
    assert "DeadLetterQueue" in target["DeadLetterConfig"]["Arn"]


def test_scaler_role_has_only_its_managed_policies(ticked: dict[str, Any], aws_client: Any) -> None:
    iam = aws_client("iam")
    (role,) = [r for r in iam.list_roles()["Roles"] if "ScalerFunctionRole" in r["RoleName"]]
    assert iam.list_role_policies(RoleName=role["RoleName"])["PolicyNames"] == []
    attached = iam.list_attached_role_policies(RoleName=role["RoleName"])["AttachedPolicies"]
    documents = []
    for each in attached:
        policy = iam.get_policy(PolicyArn=each["PolicyArn"])["Policy"]
        document = iam.get_policy_version(
            PolicyArn=each["PolicyArn"], VersionId=policy["DefaultVersionId"]
        )["PolicyVersion"]["Document"]
        documents.append(json.loads(document) if isinstance(document, str) else document)
    # the tables' policy (shared with the batch function), and (sharded) what is its own
    # alone: its logs and dead letters, and sending batches; nothing else
    sids = sorted([s.get("Sid") for s in d["Statement"]] for d in documents)
    assert len(documents) == 3 and ["SendBatches"] in sids
    assert ["WriteOwnLogs", "DeadLetters"] in sids
    (document,) = [
        d
        for d in documents
        if [s.get("Sid") for s in d["Statement"]]
        not in (["SendBatches"], ["WriteOwnLogs", "DeadLetters"])
    ]
    by_sid = {s.get("Sid"): s for s in document["Statement"]}
    feed_arn = aws_client("dynamodb").describe_table(TableName=ticked["tables"]["Feed"])["Table"][
        "TableArn"
    ]
    assert by_sid["ManageTables"]["Resource"] == feed_arn
    assert by_sid["ManageTaggedTables"]["Condition"] == {
        "StringEquals": {"aws:ResourceTag/autoscaling_manager_enabled": "true"}
    }
    assert by_sid["MoveMinimums"]["Condition"] == {
        "StringEquals": {
            "application-autoscaling:service-namespace": "dynamodb",
            "aws:ResourceTag/ddb-capacity:table": [ticked["tables"]["Feed"]],
        },
        "Null": {"aws:TagKeys": "true"},
    }
    assert "PublishOwnMetrics" not in by_sid  # EMF needs no PutMetricData
    # no tag is written at run time: 0.4's state tags may only be removed
    assert by_sid["ForgetStateTags"]["Action"] == "dynamodb:UntagResource"
    assert by_sid["ForgetStateTags"]["Condition"] == {
        "ForAllValues:StringLike": {
            "aws:TagKeys": ["ddb-capacity:base-min:*", "ddb-capacity:forecast:*"]
        }
    }
    assert by_sid["StateStore"]["Action"] == [
        "dynamodb:GetItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:Query",
        "dynamodb:Scan",
    ]


def test_deployed_handler_decides_against_deployed_tables(
    ticked: dict[str, Any], aws_client: Any
) -> None:
    summary, tables = ticked["summary"], ticked["tables"]
    # THEN it managed the explicit and the tagged table, not the third
    assert summary["tables"] == 2 and summary["failed"] == [], summary
    assert summary["shared_failures"] == [] and summary["failures"] == [], summary
    managed = {line["table"] for line in ticked["lines"] if line.get("event") == "decision"}
    assert managed == {tables["Feed"], tables["Clicks"]}
    # AND Feed (under target tracking) got its minimum raised, not an UpdateTable
    (target,) = aws_client("application-autoscaling").describe_scalable_targets(
        ServiceNamespace="dynamodb",
        ResourceIds=[f"table/{tables['Feed']}"],
        ScalableDimension="dynamodb:table:ReadCapacityUnits",
    )["ScalableTargets"]
    assert target["MinCapacity"] == 115  # (50 + 1800 / 60) / 0.7
    feed = aws_client("dynamodb").describe_table(TableName=tables["Feed"])["Table"]
    assert throughput(feed) == (50, 20)
    # AND Clicks (found by tag, no auto scaling) was updated directly
    clicks = aws_client("dynamodb").describe_table(TableName=tables["Clicks"])["Table"]
    assert throughput(clicks) == (5, 215)
    # AND Accounts, throttled too, is left to its own target tracking
    accounts = aws_client("dynamodb").describe_table(TableName=tables["Accounts"])["Table"]
    assert throughput(accounts) == (5, 5)


# ---------------------------------------------------------------- capacity requests


def test_capacity_requests_deploy_a_broker_and_its_restorer_rule(
    deployed: Path,
    moto_endpoint: str,
    aws_client: Any,
    aws_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ddb_capacity_runtime.requests import request_capacity
    from ddb_capacity_runtime.requests.broker import broker_handler
    from ddb_capacity_tools.local_aws import function_environment, physical_ids
    from tests.support.local_lambda import local_lambda

    table = physical_table(aws_client, "PartnerImport")
    store = physical_table(aws_client, "PartnerImport", "RequestsHoldStore")
    broker_env = function_environment(moto_endpoint, "PartnerImport", "RequestsBroker")
    assert broker_env["CAPACITY_HOLDS_TABLE"] == store
    assert json.loads(broker_env["CAPACITY_SCOPES"]) == [{"table": table, "indexes": []}]
    (broker,) = [
        v
        for k, v in physical_ids(moto_endpoint, "PartnerImport").items()
        if k.startswith("RequestsBroker")
        and "Logs" not in k
        and "Role" not in k
        and "Policy" not in k
        and "Alarm" not in k
    ]
    broker_arn = aws_client("lambda").get_function(FunctionName=broker)["Configuration"][
        "FunctionArn"
    ]
    # the restorer: a rule whose one target is the broker, with the restore action
    (rule,) = [
        v
        for k, v in physical_ids(moto_endpoint, "PartnerImport").items()
        if k.startswith("RequestsRestoreSchedule") and "Allow" not in k
    ]
    (target,) = aws_client("events").list_targets_by_rule(Rule=rule)["Targets"]
    assert target["Arn"] == broker_arn
    restore = json.loads(target["Input"])
    # The worker's role may invoke the broker, and nothing else
    iam = aws_client("iam")
    (role,) = [r for r in iam.list_roles()["Roles"] if "ImportWorker" in r["RoleName"]]
    assert iam.list_attached_role_policies(RoleName=role["RoleName"])["AttachedPolicies"] == []
    (inline,) = iam.list_role_policies(RoleName=role["RoleName"])["PolicyNames"]
    document = iam.get_role_policy(RoleName=role["RoleName"], PolicyName=inline)["PolicyDocument"]
    assert document["Statement"] == [
        {"Effect": "Allow", "Action": "lambda:InvokeFunction", "Resource": broker_arn}
    ]
    # A worker's request through the deployed broker, run in-process with the deployed
    # broker's environment; then the deployed restorer's event: nothing expired yet.
    for key, value in {**aws_env, **broker_env}.items():
        monkeypatch.setenv(key, value)
    with local_lambda({broker: broker_handler}) as url:
        monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", url)
        with request_capacity(table, write=500, broker=broker) as hold:
            assert throughput(describe(aws_client, "PartnerImport")) == (10, 500)
            # the deployed rule's event to the deployed broker: nothing has expired yet
            assert broker_handler(restore, None) == {"ok": True, "restored": [], "failed": []}
            held = aws_client("dynamodb").scan(TableName=store)["Items"]
            assert [list(item["holds"]["M"]) for item in held] == [[hold.id]]
        # released through the broker on leaving the block
        assert throughput(describe(aws_client, "PartnerImport")) == (10, 10)
        # a table the broker does not serve is refused, by name
        other = physical_table(aws_client, "MinimalTable")
        with pytest.raises(Exception, match=f"table: got '{other}'; this broker serves only"):
            request_capacity(other, write=5, broker=broker)
