"""Who can change what, evaluated from the synthesized template with its real policies and
conditions (``tests/support/iam_eval.py``, a small evaluator: no maintained library evaluates IAM
policies offline).

The app: a table managed by a scaler and by capacity requests (``Orders``), a table found
by the scaler's discovery tag (``Tagged``), a table pre-warmed by PROVISION_THEN_SETTLE
(``Catalog``), and an unmanaged table with its own auto scaling (``Unmanaged``), all in one
account; the principals are the scaler (owning its ProvisionedTable's target values), the
broker, the settle step's functions (and its provider's) and a worker granted
capacity requests. The scaler writes no tag: it may only remove 0.4's state
tags, and it writes the items of its state store (here the requests' hold store) alone.
"""

from __future__ import annotations

import copy
from typing import Any

import aws_cdk as cdk
import pytest

from examples.global_orders import GlobalOrdersReplicaStack, GlobalOrdersStack
from tests.support.iam_eval import ACCOUNT, PARTITION, REGION, Request, Template, allowed
from tests.support.least_privilege import DISCOVERY, global_template, synthesize

TABLES = ("Orders", "Tagged", "Catalog", "Unmanaged")
PRINCIPALS = (
    "scaler",
    "broker",
    "settle",
    "settle-check",
    "provider",
    "provider-waiter",
    "worker",
)
STATE_TAGS = ("ddb-capacity:base-min:table:write", "ddb-capacity:forecast:index/byDay:read")
ITEM_WRITES = ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem")


@pytest.fixture(scope="module")
def template() -> Template:
    return synthesize()


def table_logical(template: Template, name: str) -> str:
    (logical,) = [k for k in template.of_type("AWS::DynamoDB::Table") if k.startswith(name)]
    return logical


def roles(template: Template) -> dict[str, str]:
    """Principal -> its role's logical id, found through the functions' handlers."""
    handlers = {
        "ddb_capacity_runtime.scaler.handler.lambda_handler": "scaler",
        "ddb_capacity_runtime.requests.broker.broker_handler": "broker",
        "ddb_capacity_runtime.settle.handler.is_complete": "settle",
        "ddb_capacity_runtime.settle.handler.on_event": "settle-check",
        # the settle step's provider (aws-cdk-lib's framework functions, on roles of ours)
        "framework.onEvent": "provider",
        "framework.isComplete": "provider-waiter",
        "framework.onTimeout": "provider-waiter",
    }
    found = {
        handlers[f["Properties"]["Handler"]]: f["Properties"]["Role"]["Fn::GetAtt"][0]
        for f in template.of_type("AWS::Lambda::Function").values()
    }
    (worker,) = [k for k in template.of_type("AWS::IAM::Role") if k.startswith("Worker")]
    return {**found, "worker": worker}


def requests_on(template: Template, name: str) -> dict[str, Request]:
    """The calls that would change ``name`` or its tags, with the context IAM would see."""
    logical = table_logical(template, name)
    table_arn = f"arn:{PARTITION}:dynamodb:{REGION}:{ACCOUNT}:table/{logical}"
    table_tags = {f"aws:ResourceTag/{k}": v for k, v in template.tags(logical).items()}
    targets = [
        t
        for t, r in template.of_type("AWS::ApplicationAutoScaling::ScalableTarget").items()
        if template.resolve(r["Properties"]["ResourceId"]) == f"table/{logical}"
    ]
    target = targets[0]
    target_context = {
        "application-autoscaling:service-namespace": "dynamodb",
        **{f"aws:ResourceTag/{k}": v for k, v in template.tags(target).items()},
    }
    target_arn = f"arn:{PARTITION}:application-autoscaling:{REGION}:{ACCOUNT}:scalable-target/0a1b"

    def tagging(action: str, key: str) -> Request:
        return Request(
            f"dynamodb:{action}",
            table_arn,
            {**table_tags, "aws:TagKeys": [key], f"aws:RequestTag/{key}": "x"},
        )

    def untagging(*keys: str) -> Request:
        return Request(
            "dynamodb:UntagResource", table_arn, {**table_tags, "aws:TagKeys": list(keys)}
        )

    return {
        "UpdateTable": Request("dynamodb:UpdateTable", table_arn, table_tags),
        "RegisterScalableTarget": Request(
            "application-autoscaling:RegisterScalableTarget", target_arn, target_context
        ),
        "PutScalingPolicy": Request(
            "application-autoscaling:PutScalingPolicy", target_arn, target_context
        ),
        "PutScalingPolicy with tags": Request(
            "application-autoscaling:PutScalingPolicy",
            target_arn,
            {**target_context, "aws:TagKeys": ["ddb-capacity:table"]},
        ),
        "RegisterScalableTarget with tags": Request(
            "application-autoscaling:RegisterScalableTarget",
            target_arn,
            {**target_context, "aws:TagKeys": ["ddb-capacity:table"]},
        ),
        "TagResource, a foreign key": tagging("TagResource", "owner"),
        "TagResource, the discovery tag": tagging("TagResource", DISCOVERY[0]),
        "UntagResource, the discovery tag": tagging("UntagResource", DISCOVERY[0]),
        "TagResource, the target tag": tagging("TagResource", "ddb-capacity:table"),
        "TagResource, a state tag": tagging("TagResource", STATE_TAGS[0]),
        "TagResource, a plan tag": tagging("TagResource", STATE_TAGS[1]),
        "UntagResource, the state tags": untagging(*STATE_TAGS),
        "UntagResource, a state tag and a foreign key": untagging(STATE_TAGS[0], "owner"),
        "UntagResource, a foreign key": untagging("owner"),
        "UntagResource, the target tag": untagging("ddb-capacity:table"),
    }


def matrix(template: Template) -> dict[tuple[str, str, str], bool]:
    """(principal, action, table) -> allowed, for every principal, action and table."""
    out = {}
    for principal, role in roles(template).items():
        statements = template.statements_of(role)
        for table in TABLES:
            for action, request in requests_on(template, table).items():
                out[(principal, action, table)] = allowed(statements, request)
    return out


def test_only_the_scaler_and_the_broker_change_capacity_and_only_on_managed_tables(
    template: Template,
) -> None:
    granted = {key for key, yes in matrix(template).items() if yes}
    assert granted == {
        # the scaler: its explicit table, and the table (and target) tagged for discovery
        ("scaler", "UpdateTable", "Orders"),
        ("scaler", "RegisterScalableTarget", "Orders"),
        # and, owning its ProvisionedTable's target values, that table's policies alone
        ("scaler", "PutScalingPolicy", "Orders"),
        ("scaler", "UpdateTable", "Tagged"),
        ("scaler", "RegisterScalableTarget", "Tagged"),
        # the broker: the tables of its CapacityRequests
        ("broker", "UpdateTable", "Orders"),
        ("broker", "RegisterScalableTarget", "Orders"),
        # the settle function, once at deploy time: the table it settles, nothing else
        ("settle", "UpdateTable", "Catalog"),
        # the scaler removes 0.4's state tags (once moved into its store) from its tables
        ("scaler", "UntagResource, the state tags", "Orders"),
        ("scaler", "UntagResource, the state tags", "Tagged"),
    }
    # so nobody can change the unmanaged table, nobody writes a tag (the discovery tag, the
    # target tag, a state tag, someone else's), and only 0.4's state tags can be removed
    assert not any(table == "Unmanaged" for _, _, table in granted)
    assert not any(action.startswith("TagResource") for _, action, _ in granted)
    assert {action for _, action, _ in granted if "tag" in action.lower()} == {
        "UntagResource, the state tags"
    }


def test_the_evaluator_says_yes_where_the_policies_do(template: Template) -> None:
    """What each principal is meant to do is allowed, so the denials above are real."""
    role = roles(template)
    logical = table_logical(template, "Orders")
    orders = f"arn:{PARTITION}:dynamodb:{REGION}:{ACCOUNT}:table/{logical}"
    forget = Request(
        "dynamodb:UntagResource",
        orders,
        {"aws:TagKeys": ["ddb-capacity:base-min:table:write", "ddb-capacity:forecast:table:read"]},
    )
    assert allowed(template.statements_of(role["scaler"]), forget)
    assert not allowed(template.statements_of(role["broker"]), forget)
    store = table_logical(template, "RequestsHoldStore")
    write = Request(
        "dynamodb:UpdateItem", f"arn:{PARTITION}:dynamodb:{REGION}:{ACCOUNT}:table/{store}"
    )
    for principal in ("scaler", "broker"):
        assert allowed(template.statements_of(role[principal]), write)
    (broker,) = [
        k
        for k, r in template.of_type("AWS::Lambda::Function").items()
        if r["Properties"]["Handler"].endswith("broker_handler")
    ]
    invoke = Request(
        "lambda:InvokeFunction", f"arn:{PARTITION}:lambda:{REGION}:{ACCOUNT}:function:{broker}"
    )
    statements = template.statements_of(role["worker"])
    assert allowed(statements, invoke)
    assert not allowed(
        statements, Request("lambda:InvokeFunction", invoke.resource.replace(broker, "X"))
    )


def test_the_matrix_reads_the_template_not_a_copy(template: Template) -> None:
    """Dropping the target-tag condition from the broker's policy makes the evaluator grant
    the unmanaged table, and dropping the state-tag condition from the scaler's lets it
    remove any tag: the matrix follows the template."""
    raw: dict[str, Any] = copy.deepcopy(dict(template.resources))
    for resource in raw.values():
        if resource["Type"] != "AWS::IAM::ManagedPolicy":
            continue
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
            if statement.get("Sid") == "MoveMinimums":
                statement["Condition"]["StringEquals"].pop("aws:ResourceTag/ddb-capacity:table")
                statement["Condition"].pop("Null")
            if statement.get("Sid") == "ForgetStateTags":
                statement["Condition"].pop("ForAllValues:StringLike")
    loosened = matrix(Template({"Resources": raw}))
    assert loosened[("broker", "RegisterScalableTarget", "Unmanaged")]
    # and without the state-tag condition, the scaler could remove any tag of its table
    assert loosened[("scaler", "UntagResource, the discovery tag", "Orders")]


def item_writes(template: Template) -> dict[str, set[str]]:
    """Principal -> the tables (logical ids) whose items it may write."""
    tables = template.of_type("AWS::DynamoDB::Table")
    out: dict[str, set[str]] = {}
    for principal, role in roles(template).items():
        statements = template.statements_of(role)
        out[principal] = {
            logical
            for logical in tables
            for action in ITEM_WRITES
            if allowed(
                statements,
                Request(
                    f"dynamodb:{action}",
                    f"arn:{PARTITION}:dynamodb:{REGION}:{ACCOUNT}:table/{logical}",
                ),
            )
        }
    return out


@pytest.mark.parametrize("connected", [True, False])
def test_the_scaler_writes_the_items_of_its_state_store_only(connected: bool) -> None:
    # GIVEN the app, its scaler connected to the capacity requests or not
    template = synthesize(connected=connected)
    writes = item_writes(template)
    hold_store = table_logical(template, "RequestsHoldStore")
    # THEN the scaler writes one table's items: the hold store once connected, else its own
    if connected:
        assert writes["scaler"] == {hold_store}
        assert not [k for k in template.of_type("AWS::DynamoDB::Table") if "StateStore" in k]
    else:
        assert writes["scaler"] == {table_logical(template, "ScalerStateStore")}
    # AND the broker the hold store's; nobody else any item of any table
    assert writes["broker"] == {hold_store}
    for principal in set(PRINCIPALS) - {"scaler", "broker"}:
        assert writes[principal] == set(), principal


def test_each_global_tables_role_touches_its_targets_in_its_regions_only() -> None:
    template = global_template()
    (function,) = [
        f
        for f in template.of_type("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"].endswith("global_tables.handler.on_event")
    ]
    function_role = function["Properties"]["Role"]["Fn::GetAtt"][0]
    tables = {
        name: next(k for k in template.of_type("AWS::DynamoDB::GlobalTable") if k.startswith(name))
        for name in ("Orders", "Audit")
    }
    roles = {
        name: next(
            k
            for k in template.of_type("AWS::IAM::Role")
            if k.startswith(f"{name}CapacityScheduleRole")
        )
        for name in ("Orders", "Audit")
    }
    tag, owner_tag = "ddb-capacity:table", "ddb-capacity:schedule-role"

    def arn_of(role: str) -> str:
        return f"arn:{PARTITION}:iam::{ACCOUNT}:role/{role}"

    def can(
        role: str, action: str, region: str, tagged: str | None, owner: str = "", /, **extra: Any
    ) -> bool:
        arn = f"arn:{PARTITION}:application-autoscaling:{region}:{ACCOUNT}:scalable-target/0a1b"
        context: dict[str, Any] = {"application-autoscaling:service-namespace": "dynamodb"}
        if tagged is not None:
            context[f"aws:ResourceTag/{tag}"] = tagged
        if owner:
            context[f"aws:ResourceTag/{owner_tag}"] = arn_of(owner)
        return allowed(
            template.statements_of(role),
            Request(f"application-autoscaling:{action}", arn, {**context, **extra}),
        )

    orders, audit = tables["Orders"], tables["Audit"]
    as_orders, as_audit = roles["Orders"], roles["Audit"]
    for action in ("PutScheduledAction", "DeleteScheduledAction"):
        assert can(as_orders, action, "us-east-1", orders)
        assert can(as_orders, action, "eu-west-1", orders)
        assert can(as_audit, action, "ap-south-1", audit)
        assert not can(as_orders, action, "eu-west-1", None)  # an untagged target
        assert not can(as_orders, action, "eu-west-1", "SomeoneElses")  # another table's
        assert not can(as_orders, action, "us-east-1", audit)  # the other global table's
        assert not can(as_audit, action, "us-east-1", orders)
        assert not can(function_role, action, "us-east-1", orders)  # never as the function
        # outside its replicas' Regions, a table of the same name is another table
        assert not can(as_orders, action, "sa-east-1", orders)
        assert not can(as_orders, action, "ap-south-1", orders)
    # deletes (actions, the tags) in any Region where its own tag names it: a Region
    # dropped from the table, the table replaced (its targets tagged with the old name)
    keys = {"aws:TagKeys": [tag, owner_tag]}
    for region, table in (("sa-east-1", orders), ("us-east-1", "OldOrders")):
        assert can(as_orders, "DeleteScheduledAction", region, table, as_orders)
        assert can(as_orders, "UntagResource", region, table, as_orders, **keys)
        assert not can(as_orders, "PutScheduledAction", region, table, as_orders)
        assert not can(as_orders, "DeleteScheduledAction", region, table, as_audit)
        assert not can(as_orders, "UntagResource", region, table, as_audit, **keys)
    assert not can(
        as_orders, "UntagResource", "sa-east-1", orders, as_orders, **{"aws:TagKeys": ["owner"]}
    )
    # tagging: the two tags, naming its own table and itself, and nothing else
    mine = {f"aws:RequestTag/{owner_tag}": arn_of(as_orders), **keys}
    assert can(
        as_orders, "TagResource", "eu-west-1", None, **{f"aws:RequestTag/{tag}": orders}, **mine
    )
    for other in ("SomeoneElses", audit):
        assert not can(
            as_orders, "TagResource", "eu-west-1", None, **{f"aws:RequestTag/{tag}": other}, **mine
        )
    theirs = {f"aws:RequestTag/{owner_tag}": arn_of(as_audit), **keys}
    assert not can(
        as_orders, "TagResource", "eu-west-1", None, **{f"aws:RequestTag/{tag}": orders}, **theirs
    )
    assert not can(
        as_orders,
        "TagResource",
        "eu-west-1",
        None,
        **{f"aws:RequestTag/{tag}": orders, **mine, "aws:TagKeys": [tag, owner_tag, "owner"]},
    )
    # a target tagged already: its own table's tag again, never over another table's
    own = {f"aws:RequestTag/{tag}": orders, **mine}
    assert can(as_orders, "TagResource", "eu-west-1", orders, **own)
    assert not can(as_orders, "TagResource", "eu-west-1", "SomeoneElses", **own)
    assert not can(as_orders, "TagResource", "us-east-1", audit, **own)
    assert can(as_orders, "UntagResource", "eu-west-1", orders, **keys)
    assert not can(as_orders, "UntagResource", "eu-west-1", "SomeoneElses", **keys)
    assert not can(as_orders, "UntagResource", "us-east-1", audit, **keys)
    assert not can(as_orders, "UntagResource", "eu-west-1", orders, **{"aws:TagKeys": ["owner"]})
    # and never a capacity: no RegisterScalableTarget, PutScalingPolicy or UpdateTable
    for role in (as_orders, function_role):
        for action in ("RegisterScalableTarget", "PutScalingPolicy", "DeregisterScalableTarget"):
            assert not can(role, action, "eu-west-1", orders)
        table_arn = f"arn:{PARTITION}:dynamodb:us-east-1:{ACCOUNT}:table/{orders}"
        assert not allowed(template.statements_of(role), Request("dynamodb:UpdateTable", table_arn))
    # the function may assume the two roles, and no other
    for role, allowed_to in ((as_orders, True), (as_audit, True), ("Someone", False)):
        arn = f"arn:{PARTITION}:iam::{ACCOUNT}:role/{role}"
        assert (
            allowed(template.statements_of(function_role), Request("sts:AssumeRole", arn))
            == allowed_to
        )


def replica_scaler_templates() -> dict[str, tuple[Template, str]]:
    """The global table example's two stacks, by Region: each template (resolved in its
    Region) and the table's name as that stack's scaler names it."""
    app = cdk.App()
    primary = GlobalOrdersStack(app, "GlobalOrders", env=cdk.Environment(region="us-east-1"))
    replica = GlobalOrdersReplicaStack(
        app, "GlobalOrdersEu", primary.capacity, env=cdk.Environment(region="eu-west-1")
    )
    found = {}
    for stack, region in ((primary, "us-east-1"), (replica, "eu-west-1")):
        template = Template(cdk.assertions.Template.from_stack(stack).to_json(), region)
        tables = list(template.of_type("AWS::DynamoDB::GlobalTable"))
        found[region] = (template, tables[0] if tables else "orders")
    return found


def test_each_replicas_scaler_touches_its_replica_in_its_own_region_only() -> None:
    templates = replica_scaler_templates()
    for region, (template, name) in templates.items():
        (function,) = [
            f
            for f in template.of_type("AWS::Lambda::Function").values()
            if f["Properties"]["Handler"].endswith("scaler.handler.lambda_handler")
        ]
        statements = template.statements_of(function["Properties"]["Role"]["Fn::GetAtt"][0])
        (elsewhere,) = set(templates) - {region}
        assert_replica_scaler(statements, region, elsewhere, name)


def assert_replica_scaler(
    statements: list[dict[str, Any]], region: str, elsewhere: str, name: str
) -> None:
    """What the scaler of ``region``'s replica of table ``name`` may and may not do."""
    tag = "ddb-capacity:table"

    def can(action: str, arn: str, **context: Any) -> bool:
        return allowed(statements, Request(action, arn, context))

    def target(where: str) -> str:
        return f"arn:{PARTITION}:application-autoscaling:{where}:{ACCOUNT}:scalable-target/0a"

    def table(where: str, table_name: str = name) -> str:
        return f"arn:{PARTITION}:dynamodb:{where}:{ACCOUNT}:table/{table_name}"

    move = "application-autoscaling:RegisterScalableTarget"
    namespace = {"application-autoscaling:service-namespace": "dynamodb"}
    # its own replica's targets, in its own Region: their minimums
    assert can(move, target(region), **namespace, **{f"aws:ResourceTag/{tag}": name})
    assert can("dynamodb:UpdateTable", table(region)), region
    # never another Region's targets or table, another table's, or an untagged target
    assert not can(move, target(elsewhere), **namespace, **{f"aws:ResourceTag/{tag}": name})
    assert not can(move, target(region), **namespace, **{f"aws:ResourceTag/{tag}": "other"})
    assert not can(move, target(region), **namespace)
    assert not can("dynamodb:UpdateTable", table(elsewhere)), region
    assert not can("dynamodb:UpdateTable", table(region, "other"))
    # nor a target's tags, its scaling policy or its scheduled actions
    for action in ("TagResource", "PutScalingPolicy", "PutScheduledAction"):
        assert not can(
            f"application-autoscaling:{action}",
            target(region),
            **namespace,
            **{f"aws:ResourceTag/{tag}": name},
        ), (region, action)
