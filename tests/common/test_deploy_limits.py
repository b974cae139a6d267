"""Limits AWS applies only at deploy time, checked at synth: a function's environment (Lambda:
4,096 bytes of compact JSON) and a managed policy (IAM: 6,144 characters). The check's
lengths are held against the synthesized template itself, its deploy-time values put in at
their shortest and at their longest; a scaler past a limit fails synthesis naming it, one
that may pass it warns, and a function the fast path instruments is checked too."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Annotations, Match
from constructs import Construct

from constructs_pkg import (
    Capacity,
    CapacityRequests,
    FastPath,
    PrewarmMethod,
    ProvisionedTable,
    StreamSignal,
    ThrottleAwareScaler,
)
from constructs_pkg.common._deploy_limits import (
    ENVIRONMENT_LIMIT,
    POLICY_LIMIT,
    UNSEEN,
    WARNING_ID,
    Deployed,
    DeployLimits,
    Span,
    check_function,
    check_policy,
    escaped,
    json_length,
)
from tests.support.capacity_requests_construct import synth_errors, tables
from tests.support.instrument_construct import _app_function

KEY = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
PSEUDO = {  # each pseudo parameter's value at its shortest and at its longest
    "AWS::Partition": ("aws", "aws-us-gov"),
    "AWS::Region": ("us-east-1", "ap-southeast-5"),
    "AWS::AccountId": ("123456789012", "123456789012"),
    "AWS::URLSuffix": ("amazonaws.com", "amazonaws.com.cn"),
}


def _orders(
    scope: Construct, scaler: ThrottleAwareScaler, count: int, indexes: int = 0, named: int = 0
) -> None:
    """``count`` tables in ``scope`` with ``indexes`` GSIs each, managed by ``scaler``: the
    first ``named`` of them named (names of 10 to 60 characters), the rest generated."""
    for n in range(count):
        name = f"t{n}-" + "n" * (10 + 7 * n) if n < named else None
        table = ProvisionedTable(
            scope,
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


def _scaler_app(
    count: int,
    *,
    indexes: int = 0,
    named: int = 0,
    env: cdk.Environment | None = None,
    own_target: bool = True,
) -> tuple[cdk.App, cdk.Stack, ThrottleAwareScaler]:
    """A scaler (owning the target values unless not ``own_target``) of `_orders`."""
    app = cdk.App()
    stack = cdk.Stack(app, "Shop", env=env)
    scaler = ThrottleAwareScaler(stack, "Scaler", own_target=own_target)
    _orders(stack, scaler, count, indexes, named)
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
            if attribute == "StreamArn":  # a stream's label is a time to the millisecond
                return arn(logical_id) + "/stream/2027-03-01T12:00:00.000"
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


@pytest.mark.parametrize(("own_target", "warns", "fails"), [(True, 15, 15), (False, 19, 22)])
def test_the_scaler_guides_thresholds(own_target: bool, warns: int, fails: int) -> None:
    """The Scaler guide's Many tables: in a stack named Shop, a warning from ``warns``
    tables and an error from ``fails``."""

    def said(count: int) -> set[bool]:
        stack = _scaler_app(count, own_target=own_target)[1]
        return {certain for _, (certain, _) in DeployLimits.of(stack).results()}

    assert said(warns - 1) == set()
    assert False in said(warns)
    assert True not in said(fails - 1)
    assert True in said(fails)


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


def test_a_stream_readers_policy_is_measured_with_its_stream_arns() -> None:
    # GIVEN the fast path's stream reader over a few tables
    app = cdk.App()
    stack = cdk.Stack(app, "Shop")
    served = [
        ProvisionedTable(
            stack,
            f"Orders{n}",
            partition_key=KEY,
            read=Capacity(min_capacity=5, max_capacity=500),
            write=Capacity(min_capacity=5, max_capacity=500),
        )
        for n in range(3)
    ]
    requests = CapacityRequests(
        stack, "Requests", tables=served, fast_path=FastPath(stream=StreamSignal())
    )
    reader = requests.stream_reader
    assert reader is not None
    template = app.synth().get_stack_by_name("Shop").template
    logical_id = stack.get_logical_id(reader.policy.node.default_child)  # type: ignore[arg-type]
    document = template["Resources"][logical_id]["Properties"]["PolicyDocument"]
    assert "StreamArn" in json.dumps(document)
    # THEN its length is the template's with each stream ARN as deployed
    shortest, longest = (_compact(_deployed(document, template, at)) for at in (False, True))
    assert _measured(stack, reader.policy) == (shortest, longest)


def test_a_table_named_by_a_parameter_counts_as_another_resource() -> None:
    # GIVEN tables enough to look them up, one named by a CloudFormation parameter
    app, stack, scaler = _scaler_app(5)
    name = cdk.CfnParameter(stack, "OrdersName", type="String").value_as_string
    named = ProvisionedTable(
        stack,
        "Named",
        partition_key=KEY,
        table_name=name,
        read=Capacity(min_capacity=5, max_capacity=500),
        write=Capacity(min_capacity=5, max_capacity=500),
    )
    named.enable_throttle_aware_scaling(scaler)
    # THEN its name counts as at most `UNSEEN` characters, and the app synthesizes
    cfn = named.table.node.default_child
    assert isinstance(cfn, dynamodb.CfnTable)
    assert Deployed(stack).name(stack.get_logical_id(cfn)) == Span(0, UNSEEN)
    assert synth_errors(stack) == []


def test_tables_of_another_stack_are_measured_where_they_are() -> None:
    # GIVEN 30 tables in one stack and their scaler in another (cross-stack references)
    app = cdk.App()
    data, ops = cdk.Stack(app, "Data"), cdk.Stack(app, "Ops")
    _orders(data, ThrottleAwareScaler(ops, "Scaler", own_target=True), 30)
    # THEN synthesis fails for both, as it does with the tables beside the scaler
    errors = synth_errors(ops)
    assert any("Ops/Scaler/FunctionPolicy: its document comes to" in e for e in errors)
    assert any("Ops/Scaler/Function: its environment comes to" in e for e in errors)


def test_a_nested_stacks_tables_are_bounded_by_dynamodbs_longest_name() -> None:
    # GIVEN a scaler and 24 tables in a nested stack (its name known at deploy time only)
    app = cdk.App()
    inner = cdk.NestedStack(cdk.Stack(app, "Shop"), "Inner")
    scaler = ThrottleAwareScaler(inner, "Scaler", own_target=True)
    _orders(inner, scaler, 24)
    # THEN its policy's length has a longest, and synthesis fails for both
    low, high = _measured(inner, scaler.policy)
    assert high is not None and low < high
    errors = " ".join(synth_errors(inner))
    assert "Shop/Inner/Scaler/FunctionPolicy: its document comes to" in errors
    assert "Shop/Inner/Scaler/Function: its environment comes to" in errors


def test_a_character_past_ascii_is_itself_at_the_shortest_and_escaped_at_the_longest() -> None:
    assert escaped('é"') == Span(3, 8)  # é or \u00e9, and \"


def _settled(stack: cdk.Stack, count: int) -> None:
    """``count`` tables pre-warmed by the settle step (each with an inline policy of its own
    on the step's role)."""
    for n in range(count):
        ProvisionedTable(
            stack,
            f"Launch{n}",
            partition_key=KEY,
            prewarm=PrewarmMethod.PROVISION_THEN_SETTLE,
            read=Capacity(min_capacity=5, max_capacity=500, high_water_mark=400),
            write=Capacity(min_capacity=5, max_capacity=500),
        )


def test_the_settle_roles_inline_policies_are_measured_together() -> None:
    # GIVEN three tables settled by the stack's one settle step
    app = cdk.App()
    stack = cdk.Stack(app, "Shop")
    _settled(stack, 3)
    [limit] = [x for x in DeployLimits.of(stack).limits if x.what == "inline policies' total"]
    template = app.synth().get_stack_by_name("Shop").template
    role = stack.get_logical_id(limit.owner.node.default_child)  # type: ignore[arg-type]
    documents = [
        r["Properties"]["PolicyDocument"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::IAM::Policy" and {"Ref": role} in r["Properties"]["Roles"]
    ]
    assert len(documents) == 3
    # THEN their length together is the template's, at the shortest and at the longest
    shortest, longest = (
        sum(_compact(_deployed(d, template, at)) for d in documents) for at in (False, True)
    )
    span = limit.measure(limit.document(), Deployed(stack))
    assert (span.low, span.high) == (shortest, longest)


def test_too_many_settled_tables_for_one_role_fail_synth_saying_what_to_do() -> None:
    def said(count: int) -> list[tuple[bool, str]]:
        stack = cdk.Stack(cdk.App(), "Shop")
        _settled(stack, count)
        return [verdict for _, verdict in DeployLimits.of(stack).results()]

    # GIVEN 42 settled tables THEN a warning (past the limit in a longer partition or Region)
    assert [certain for certain, _ in said(42)] == [False]
    # GIVEN 43 THEN an error, naming the role and what to do
    [(certain, message)] = said(43)
    assert certain
    assert message.startswith(
        "Shop/CapacitySettleProvider/IsCompleteRole: its inline policies' total comes to "
        "10,343 characters or more once deployed, past the 10,240 characters AWS takes"
    )
    assert "WARM_THROUGHPUT" in message


def _reserved_warnings(stack: cdk.Stack) -> list[str]:
    found = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp(".*"))
    return [str(w.entry.data) for w in found if "reserved-concurrency" in str(w.entry.data)]


def test_functions_reserving_past_a_default_accounts_concurrency_warn() -> None:
    # GIVEN a sharded scaler whose batches reserve 899 and its tick 1: 900 in all
    stack = cdk.Stack(cdk.App(), "Shop")
    ThrottleAwareScaler(stack, "Sharded", sharded=True, batch_concurrency=899, tag_key="scaled")
    # THEN no warning: a default account can reserve 900
    assert _reserved_warnings(stack) == []
    # GIVEN 900 for the batches THEN a warning naming the total and the largest
    other = cdk.Stack(cdk.App(), "Other")
    ThrottleAwareScaler(other, "Sharded", sharded=True, batch_concurrency=900, tag_key="scaled")
    [warning] = _reserved_warnings(other)
    assert warning.startswith(
        "the library's functions of this stack reserve 901 concurrent executions "
        "(Other/Sharded/BatchFunction 900, Other/Sharded/Function 1): "
    ), warning
    assert "batch_concurrency" in warning


def test_a_function_of_the_apps_own_is_not_counted_as_the_librarys_reservation() -> None:
    # GIVEN a function of the app's own reserving 950, granted requests (its environment
    # checked)
    stack = cdk.Stack(cdk.App(), "Shop")
    shipments, _ = tables(stack)
    requests = CapacityRequests(stack, "Requests", tables=[shipments])
    function = _app_function(stack)
    (function.node.default_child).reserved_concurrent_executions = 950  # type: ignore[union-attr]
    requests.grant_request(function)
    # THEN the library's reservation warning does not blame the library for it
    assert _reserved_warnings(stack) == []


Tail = Callable[[cdk.Stack], str]
"""What ends a document's text, made in its stack: a value known at deploy time only."""


def _document_of(kind: str, pad: int, tail: Tail | None = None) -> tuple[cdk.Stack, Any]:
    """A stack "Shop" with one document holding ``pad`` characters and then ``tail``, checked
    as the library's are: a function's environment (``kind`` "environment": the variable
    PAD) or a managed policy's document (``kind`` "policy": a statement's resource). Also
    the document, resolved."""
    stack = cdk.Stack(cdk.App(), "Shop")
    text = "x" * pad + (tail(stack) if tail else "")
    if kind == "environment":
        function = _app_function(stack)
        function.add_environment("PAD", text)
        check_function(function, library=False)
        return stack, {"PAD": stack.resolve(text)}
    statement = iam.PolicyStatement(actions=["s3:GetObject"], resources=[f"arn:aws:s3:::{text}"])
    policy = iam.ManagedPolicy(stack, "Policy", statements=[statement])
    check_policy(policy)
    return stack, stack.resolve(policy.document)


def _sized(kind: str, size: int, longest: bool, tail: Tail | None = None) -> cdk.Stack:
    """`_document_of` padded so that the document, as compact JSON once deployed (`_deployed`),
    comes to ``size`` characters at its longest (else at its shortest)."""
    bare, document = _document_of(kind, 0, tail)
    template = cdk.Stage.of(bare).synth().get_stack_by_name("Shop").template  # type: ignore[union-attr]

    def length(document: Any) -> int:
        return _compact(_deployed(document, template, longest))

    stack, document = _document_of(kind, size - length(document), tail)
    assert length(document) == size
    return stack


LIMITS = pytest.mark.parametrize(
    ("kind", "limit", "unit"),
    [("environment", 4_096, "bytes"), ("policy", 6_144, "characters")],
)


@LIMITS
def test_a_document_exactly_at_its_limit_synthesizes_and_one_more_fails(
    kind: str, limit: int, unit: str
) -> None:
    # GIVEN a document of exactly Lambda's 4,096 bytes or IAM's 6,144 characters
    at = _sized(kind, limit, longest=True)
    # THEN it synthesizes, with no warning
    assert synth_errors(at) == []
    assert _warnings(at) == []
    # GIVEN one character more THEN synthesis fails, naming both lengths
    [error] = synth_errors(_sized(kind, limit + 1, longest=True))
    assert f"comes to {limit + 1:,} {unit} or more once deployed, past the {limit:,}" in error


def _region(stack: cdk.Stack) -> str:
    return cdk.Aws.REGION


def _table_arn(stack: cdk.Stack) -> str:
    table = dynamodb.Table(stack, "Orders", partition_key=KEY, table_name="orders")
    return table.table_arn


@LIMITS
@pytest.mark.parametrize(
    ("tail", "spread"),
    [(_region, 14 - 9), (_table_arn, 14 - 9 + len("aws-us-gov") - len("aws"))],
    ids=["region", "table-arn"],
)
def test_a_deploy_time_value_at_the_limit_warns_only_where_its_longest_passes_it(
    kind: str, limit: int, unit: str, tail: Tail, spread: int
) -> None:
    """The Region comes to 9 to 14 characters in an environment-agnostic stack; a named
    table's ARN spreads by its Region's and its partition's (3 to 10 characters)."""
    # GIVEN a document exactly at its limit with the value at its longest THEN no warning
    longest = _sized(kind, limit, longest=True, tail=tail)
    assert synth_errors(longest) == []
    assert _warnings(longest) == []
    # GIVEN one exactly at its limit with the value at its shortest THEN a warning, not an
    # error
    shortest = _sized(kind, limit, longest=False, tail=tail)
    [warning] = _warnings(shortest)
    amount = f"may come to {limit + spread:,} {unit} (at least {limit:,}) once deployed"
    assert amount in warning
    assert synth_errors(shortest) == []
    # GIVEN one more character THEN an error: even the shortest passes it
    [error] = synth_errors(_sized(kind, limit + 1, longest=False, tail=tail))
    assert f"comes to {limit + 1:,} {unit} or more once deployed" in error


def _elsewhere(stack: cdk.Stack) -> str:
    return cdk.Fn.import_value("SharedPrefix")


@LIMITS
def test_a_value_from_outside_the_app_counts_as_empty_with_no_longest(
    kind: str, limit: int, unit: str
) -> None:
    # GIVEN a document whose literal text is exactly at its limit, with a value imported
    # from a stack outside the app (no length known)
    pad = limit - _compact(_document_of(kind, 0)[1])
    at = _document_of(kind, pad, _elsewhere)[0]
    # THEN it synthesizes with no warning; one character more fails
    assert synth_errors(at) == []
    assert _warnings(at) == []
    [error] = synth_errors(_document_of(kind, pad + 1, _elsewhere)[0])
    assert f"comes to {limit + 1:,} {unit} or more once deployed" in error


def _generated_name(stack: cdk.Stack, table_id: str) -> Span:
    """The length of the name CloudFormation generates for the table ``table_id`` of
    ``stack``, as the check counts it."""
    table = ProvisionedTable(
        stack,
        table_id,
        partition_key=KEY,
        read=Capacity(min_capacity=5, max_capacity=500),
        write=Capacity(min_capacity=5, max_capacity=500),
    )
    cfn = table.table.node.default_child
    assert isinstance(cfn, dynamodb.CfnTable)
    return Deployed(stack).name(stack.get_logical_id(cfn))


def test_a_generated_table_name_is_at_most_dynamodbs_255_characters() -> None:
    # GIVEN a table in a nested stack (its stack's name known at deploy time only)
    inner = cdk.NestedStack(cdk.Stack(cdk.App(), "Shop"), "Inner")
    name = _generated_name(inner, "Orders")
    # THEN its name has the logical id, two hyphens, one character of the stack's name and
    # 12 random ones at the shortest, and DynamoDB's 255 at the longest
    logical_id = len("Orders") + 8  # the id and its hash
    assert name == Span(logical_id + 2 + 1 + 12, 255)
    # GIVEN a stack of the longest name (128) and a table whose logical id has 128
    # characters THEN even the shortest would pass 255: both are 255
    app = cdk.App()
    assert _generated_name(cdk.Stack(app, "S" * 128), "T" * 120) == Span(255, 255)


@pytest.mark.parametrize("across", [False, True])
def test_stream_arns_of_the_longest_table_names_are_measured_in_full(across: bool) -> None:
    # GIVEN an app's function granted capacity requests, and 11 variables each holding the
    # stream ARN of a table named with 255 characters (of its stack, or of another stack
    # of the app): 3,773 to 4,225 bytes in all, past Lambda's 4,096 at the longest only
    app = cdk.App()
    stack = cdk.Stack(app, "Shop")
    home = cdk.Stack(app, "Data") if across else stack
    served, _ = tables(stack)
    requests = CapacityRequests(stack, "Requests", tables=[served])
    function = _app_function(stack)
    for n in range(11):
        table = dynamodb.Table(
            home,
            f"Streamed{n}",
            partition_key=KEY,
            table_name=f"{n:02d}" + "o" * 253,
            stream=dynamodb.StreamViewType.KEYS_ONLY,
        )
        assert table.table_stream_arn is not None
        function.add_environment(f"STREAM_{n:02d}", table.table_stream_arn)
    requests.grant_request(function)
    # WHEN the app synthesizes: THEN the function's environment warns, and fails nothing
    assert [w.split(":")[0] for w in _warnings(stack)] == ["Shop/App"]
    assert synth_errors(stack) == []
