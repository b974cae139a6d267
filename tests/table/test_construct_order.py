"""PROVISION_THEN_SETTLE tables, and global tables with a GlobalTableCapacity, made to depend
on one another (``b.node.add_dependency(a)``, as an app does to create its tables one after
the other) synthesize to a template CloudFormation can deploy: cfn-lint finds no circular
dependency, and each table's custom resources wait for its own grant alone. The stack's one
settle function, and its one replica-schedule function, serve every table; a grant naming
every table would make the second table's creation wait for the first one's resource, and
that resource for the second table (a cycle, or with no order written, a resource whose
grant never comes)."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk.assertions import Template

from constructs_pkg import GlobalTableCapacity
from tests.support.construct_surface import settled
from tests.support.many_accounts import cfn_lint


def test_settled_tables_made_to_depend_on_one_another_wait_for_their_own_grants(
    tmp_path: Path,
) -> None:
    # GIVEN two settled tables, the second made to wait for the first
    stack = cdk.Stack(cdk.App(), "Ordered", env=cdk.Environment(region="us-east-1"))
    catalog, prices = (settled(stack, name, None) for name in ("Catalog", "Prices"))
    prices.node.add_dependency(catalog)
    # WHEN the stack is synthesized
    template = Template.from_stack(stack).to_json()
    (tmp_path / "Ordered.template.json").write_text(json.dumps(template))
    # THEN cfn-lint finds no error (a cycle is E3004)
    errors = [m for m in cfn_lint([tmp_path / "Ordered.template.json"]) if m["Level"] == "Error"]
    assert errors == [], errors
    # AND each step waits for a grant naming its own table alone, and the order holds
    resources = template["Resources"]
    tables = {k[:-8]: k for k, v in resources.items() if v["Type"] == "AWS::DynamoDB::Table"}
    for name, step in (
        (k.split("SettleStep")[0], k)
        for k, v in resources.items()
        if v["Type"] == "Custom::CapacitySettle"
    ):
        (grant,) = [d for d in resources[step]["DependsOn"] if d.startswith(f"{name}SettleGrant")]
        (statement,) = resources[grant]["Properties"]["PolicyDocument"]["Statement"]
        assert statement["Resource"] == {"Fn::GetAtt": [tables[name], "Arn"]}
    prices_step = next(k for k in resources if k.startswith("PricesSettleStep"))
    assert any(d.startswith("CatalogSettleStep") for d in resources[prices_step]["DependsOn"])


def test_the_settle_functions_wait_for_their_roles_own_policies() -> None:
    # GIVEN a settled table
    stack = cdk.Stack(cdk.App(), "Settled", env=cdk.Environment(region="us-east-1"))
    settled(stack, "Catalog", None)
    resources = Template.from_stack(stack).to_json()["Resources"]
    # THEN is_complete and the framework's three functions are created after their roles'
    # own policies (which name no table), and deleted before them
    waits = {
        "CapacitySettleProviderIsComplete": "CapacitySettleProviderIsCompletePolicy",
        "CapacitySettleProviderframeworkonEvent": "CapacitySettleProviderFrameworkOnEventPolicy",
        "CapacitySettleProviderframeworkisComplete": "CapacitySettleProviderFrameworkCompleteAndTimeoutPolicy",
        "CapacitySettleProviderframeworkonTimeout": "CapacitySettleProviderFrameworkCompleteAndTimeoutPolicy",
    }
    functions = {k: v for k, v in resources.items() if v["Type"] == "AWS::Lambda::Function"}
    for function, policy in waits.items():
        (name,) = [k for k in functions if k[:-8] == function]
        assert any(d[:-8] == policy for d in functions[name]["DependsOn"]), (name, policy)


def test_global_tables_made_to_depend_on_one_another_wait_for_their_own_roles(
    tmp_path: Path,
) -> None:
    # GIVEN two global tables with their capacities, the second table made to wait for the
    # first one's capacity (its replicas' schedules)
    stack = cdk.Stack(cdk.App(), "OrderedGlobal", env=cdk.Environment(region="us-east-1"))
    capacities = {}
    for name in ("Orders", "Audit"):
        table = dynamodb.TableV2(
            stack,
            name,
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            billing=dynamodb.Billing.provisioned(
                read_capacity=dynamodb.Capacity.autoscaled(max_capacity=100),
                write_capacity=dynamodb.Capacity.autoscaled(max_capacity=100),
            ),
            replicas=[dynamodb.ReplicaTableProps(region="eu-west-1")],
        )
        capacities[name] = GlobalTableCapacity(stack, f"{name}Capacity", table=table)
    capacities["Audit"].table.node.add_dependency(capacities["Orders"])
    # WHEN the stack is synthesized
    template = Template.from_stack(stack).to_json()
    (tmp_path / "OrderedGlobal.template.json").write_text(json.dumps(template))
    # THEN cfn-lint finds no error (a cycle is E3004)
    found = cfn_lint([tmp_path / "OrderedGlobal.template.json"])
    assert [m for m in found if m["Level"] == "Error"] == []
    # AND each replica's schedule waits for its own table's grant alone, which names only
    # that table, and the order holds
    resources = template["Resources"]
    tables = {k[:-8]: k for k, v in resources.items() if v["Type"] == "AWS::DynamoDB::GlobalTable"}
    schedules = {k: v for k, v in resources.items() if v["Type"] == "Custom::ReplicaSchedule"}
    assert len(schedules) == 4
    for key, schedule in schedules.items():
        name = key.split("Capacity")[0]
        grants = [d for d in schedule["DependsOn"] if "ScheduleGrant" in d]
        assert [g.split("Capacity")[0] for g in grants] == [name]
        named = json.dumps(resources[grants[0]]["Properties"]["PolicyDocument"])
        assert {t for t in tables.values() if t in named} == {tables[name]}
    audit = tables["Audit"]
    assert any(d.startswith("OrdersCapacitySchedule") for d in resources[audit]["DependsOn"])
