"""Limits AWS applies only at deploy time, checked at synth: a function's environment (Lambda:
4,096 bytes of compact JSON) and a managed policy (IAM: 6,144 characters). The check's
lengths are held against the synthesized template itself, its deploy-time values put in at
their shortest and at their longest; a scaler past a limit fails synthesis naming it, one
that may pass it warns, and a function the fast path instruments is checked too."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk.assertions import Annotations, Match

from constructs_pkg import (
    Capacity,
    CapacityRequests,
    FastPath,
    ProvisionedTable,
    ThrottleAwareScaler,
)
from constructs_pkg.deploy_limits import (
    ENVIRONMENT_LIMIT,
    POLICY_LIMIT,
    UNSEEN,
    WARNING_ID,
    Deployed,
    DeployLimits,
    check_function,
    json_length,
)
from tests.test_capacity_requests_construct import synth_errors, tables
from tests.test_instrument_construct import _app_function

KEY = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
PSEUDO = {  # each pseudo parameter's value at its shortest and at its longest
    "AWS::Partition": ("aws", "aws-us-gov"),
    "AWS::Region": ("us-east-1", "ap-southeast-5"),
    "AWS::AccountId": ("123456789012", "123456789012"),
    "AWS::URLSuffix": ("amazonaws.com", "amazonaws.com.cn"),
}


def _scaler_app(
    count: int,
    *,
    indexes: int = 0,
    named: int = 0,
    env: cdk.Environment | None = None,
    own_target: bool = True,
) -> tuple[cdk.App, cdk.Stack, ThrottleAwareScaler]:
    """A scaler (owning the target values) of ``count`` tables with ``indexes`` GSIs each,
    the first ``named`` of them named (names of 10 to 60 characters), the rest generated."""
    app = cdk.App()
    stack = cdk.Stack(app, "Shop", env=env)
    scaler = ThrottleAwareScaler(stack, "Scaler", own_target=own_target)
    for n in range(count):
        name = f"t{n}-" + "n" * (10 + 7 * n) if n < named else None
        table = ProvisionedTable(
            stack,
            f"Orders{n}",
            partition_key=KEY,
            read=Capacity(min_capacity=10, max_capacity=4_000),
            write=Capacity(min_capacity=10, max_capacity=2_000),
            table_name=name,
        )
        for i in range(indexes):
            table.add_global_secondary_index(
                index_name=f"byCustomer{i}",
                partition_key=KEY,
                read=Capacity(min_capacity=5, max_capacity=1_000),
                write=Capacity(min_capacity=5, max_capacity=2_000),
            )
        table.enable_throttle_aware_scaling(scaler)
    return app, stack, scaler


def _deployed(
    value: Any, template: dict[str, Any], longest: bool, env: cdk.Environment | None = None
) -> Any:
    """``value`` of ``template`` (of the stack "Shop", in ``env``) as CloudFormation deploys
    it: each intrinsic function replaced by its value at its shortest or at its longest (a
    generated table name with 12 or 13 random characters; another resource's name or ARN
    empty or of `UNSEEN` characters)."""
    pseudo = dict(PSEUDO)
    if env is not None:
        pseudo["AWS::Region"] = (env.region, env.region)  # type: ignore[assignment]
        pseudo["AWS::AccountId"] = (env.account, env.account)  # type: ignore[assignment]

    def name(logical_id: str) -> str:
        resource = template["Resources"][logical_id]
        if resource["Type"] != "AWS::DynamoDB::Table":
            return "x" * UNSEEN if longest else ""
        given = resource["Properties"].get("TableName")
        return given or f"Shop-{logical_id}-" + "R" * (13 if longest else 12)

    def arn(logical_id: str) -> str:
        if template["Resources"][logical_id]["Type"] != "AWS::DynamoDB::Table":
            return "x" * UNSEEN if longest else ""
        partition, region, account = (pseudo[p][longest] for p in pseudo if p != "AWS::URLSuffix")
        return f"arn:{partition}:dynamodb:{region}:{account}:table/{name(logical_id)}"

    def walk(v: Any) -> Any:
        if isinstance(v, list):
            return [walk(x) for x in v]
        if not isinstance(v, dict):
            return v
        if set(v) == {"Ref"}:
            ref = v["Ref"]
            return pseudo[ref][longest] if ref in pseudo else name(ref)
        if set(v) == {"Fn::GetAtt"}:
            logical_id, attribute = v["Fn::GetAtt"]
            assert attribute == "Arn", v
            return arn(logical_id)
        if set(v) == {"Fn::Join"}:
            separator, parts = v["Fn::Join"]
            return separator.join(str(walk(p)) for p in parts)
        return {k: walk(x) for k, x in v.items()}

    return walk(value)


def _compact(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")))


def _documents(app: cdk.App, scaler: ThrottleAwareScaler) -> dict[str, Any]:
    """The scaler's environment and policy as the synthesized template holds them."""
    template = app.synth().get_stack_by_name("Shop").template
    stack = cdk.Stack.of(scaler)
    function = stack.get_logical_id(scaler.function.node.default_child)  # type: ignore[arg-type]
    policy = stack.get_logical_id(scaler.policy.node.default_child)  # type: ignore[arg-type]
    resources = template["Resources"]
    return {
        "template": template,
        "environment": resources[function]["Properties"]["Environment"]["Variables"],
        "policy": resources[policy]["Properties"]["PolicyDocument"],
    }


def _measured(stack: cdk.Stack, owner: Any) -> tuple[int, int | None]:
    [limit] = [x for x in DeployLimits.of(stack).limits if x.owner is owner]
    span = json_length(limit.document(), Deployed(stack))
    return span.low, span.high


@pytest.mark.parametrize(
    "env",
    [None, cdk.Environment(account="210987654321", region="eu-central-1")],
    ids=["environment-agnostic", "account-and-region"],
)
def test_the_lengths_are_the_templates_at_their_shortest_and_longest(
    env: cdk.Environment | None,
) -> None:
    # GIVEN a scaler of named and generated tables, with GSIs and owned targets
    app, stack, scaler = _scaler_app(5, indexes=2, named=3, env=env)
    documents = _documents(app, scaler)
    # THEN each document's length, measured as the check does, is the synthesized template's
    # with every deploy-time value at its shortest, and at its longest (the stack's own
    # account and Region where it has them)
    for owner, document in ((scaler.function, "environment"), (scaler.policy, "policy")):
        shortest, longest = (
            _compact(_deployed(documents[document], documents["template"], at, env))
            for at in (False, True)
        )
        assert _measured(stack, owner) == (shortest, longest), document


def test_a_scaler_past_both_limits_fails_synth_naming_each() -> None:
    # GIVEN 30 tables whose names CloudFormation generates
    app, stack, scaler = _scaler_app(30)
    # THEN synthesis fails, for the environment and for the policy, at their shortest
    errors = synth_errors(stack)
    assert len(errors) == 2, errors
    environment, policy = sorted(errors, key=lambda e: "FunctionPolicy" in e)
    assert environment.startswith(
        "[Shop/DdbCapacityDeployLimits] Shop/Scaler/Function: its environment comes to "
    )
    assert f"past the {ENVIRONMENT_LIMIT:,} bytes AWS takes" in environment
    assert "SCALER_OVERRIDES" in environment and "tag_key" in environment
    assert policy.startswith(
        "[Shop/DdbCapacityDeployLimits] Shop/Scaler/FunctionPolicy: its document comes to "
    )
    assert f"past the {POLICY_LIMIT:,} characters AWS takes" in policy
    assert "ManageTables" in policy
    low, _ = _measured(stack, scaler.policy)
    assert f"comes to {low:,} characters or more" in policy and low > POLICY_LIMIT


def _warnings(stack: cdk.Stack) -> list[str]:
    found = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp(".*"))
    return [str(w.entry.data) for w in found if WARNING_ID in str(w.entry.data)]


def test_a_policy_that_may_pass_its_limit_warns_and_synthesizes() -> None:
    # GIVEN 20 tables: the policy within IAM's limit in us-east-1, past it at its longest
    app, stack, scaler = _scaler_app(20, own_target=False)
    low, high = _measured(stack, scaler.policy)
    assert high is not None and low <= POLICY_LIMIT < high
    # THEN synth succeeds and warns on the policy, with both lengths
    [warning] = _warnings(stack)
    assert warning.startswith(
        f"Shop/Scaler/FunctionPolicy: its document may come to {high:,} characters (at "
        f"least {low:,}) once deployed, past the {POLICY_LIMIT:,} characters AWS takes"
    )
    assert synth_errors(stack) == []


def test_a_scaler_of_a_few_tables_is_far_from_both() -> None:
    app, stack, _ = _scaler_app(3, indexes=1)
    assert _warnings(stack) == []
    assert synth_errors(stack) == []


def test_an_instrumented_function_is_checked_too() -> None:
    # GIVEN an app's own function whose environment is already near Lambda's limit
    stack = cdk.Stack(cdk.App(), "Shop")
    shipments, _ = tables(stack)
    requests = CapacityRequests(stack, "Requests", tables=[shipments], fast_path=FastPath())
    function = _app_function(stack)
    function.add_environment("SETTINGS", "s" * 4_000)
    # WHEN the fast path instruments it (its wrapper, mode and destination added)
    requests.instrument(function)
    check_function(function)  # asked again: checked once
    # THEN synthesis fails for that function's environment, once
    [error] = [e for e in synth_errors(stack) if "Shop/App:" in e]
    assert "Shop/App: its environment comes to" in error and "SETTINGS 4,002" in error
