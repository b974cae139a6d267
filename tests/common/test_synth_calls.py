"""What a construct costs the synth in calls into jsii's kernel (each a round trip to the node
process, counted, not timed): a scaler's tables are written once, when the template is, so
the tenth table added costs what the second did, and the template still names every
table."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template
from jsii._kernel.providers.process import ProcessProvider

from constructs_pkg import Capacity, ProvisionedTable, ThrottleAwareScaler
from ddb_capacity_runtime.core.settings import SETTINGS_BY_KEY
from tests.support.scaler_construct import PK

CALLS = ("create", "get", "set", "sget", "sset", "invoke", "sinvoke")


@pytest.fixture
def kernel_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], int]]:
    """The number of calls into jsii's kernel so far."""
    count = [0]
    for name in CALLS:
        original = getattr(ProcessProvider, name)

        def counted(self: ProcessProvider, request: object, _f: object = original) -> object:
            count[0] += 1
            return _f(self, request)  # type: ignore[operator]

        monkeypatch.setattr(ProcessProvider, name, counted)
    yield lambda: count[0]


def _costs(add: Callable[[int], None], kernel_calls: Callable[[], int], n: int) -> list[int]:
    """The kernel calls each of ``n`` additions made."""
    costs = []
    for i in range(n):
        before = kernel_calls()
        add(i)
        costs.append(kernel_calls() - before)
    return costs


def test_each_table_added_costs_the_scaler_the_same_calls(
    kernel_calls: Callable[[], int],
) -> None:
    stack = cdk.Stack(cdk.App(), "Fleet")
    scaler = ThrottleAwareScaler(stack, "Scaler", own_target=True)
    tables = [
        ProvisionedTable(
            stack,
            f"T{i}",
            partition_key=PK,
            table_name=f"orders-{i:02d}",
            read=Capacity(min_capacity=5, max_capacity=100),
            write=Capacity(min_capacity=5, max_capacity=100),
        )
        for i in range(10)
    ]
    costs = _costs(lambda i: scaler.add_table(tables[i]), kernel_calls, 10)
    assert costs[1:] == [costs[1]] * 9, costs
    # and the template still names every table, in the settings and in the grants
    template = Template.from_stack(stack)
    ids = {
        t["Properties"]["TableName"]: logical
        for logical, t in template.find_resources("AWS::DynamoDB::Table").items()
        if "TableName" in t["Properties"]
    }
    refs = [{"Ref": ids[f"orders-{i:02d}"]} for i in range(10)]
    (function,) = [
        f
        for f in template.find_resources("AWS::Lambda::Function").values()
        if SETTINGS_BY_KEY["tables"].name in str(f)
    ]
    variables = function["Properties"]["Environment"]["Variables"]
    assert variables[SETTINGS_BY_KEY["tables"].name]["Fn::Join"][1] == refs
    for key in ("overrides", "owned_targets"):
        assert all(str(ref) in str(variables[SETTINGS_BY_KEY[key].name]) for ref in refs)
    policies = str(template.find_resources("AWS::IAM::ManagedPolicy"))
    assert all(policies.count(str(ref)) >= 2 for ref in refs)
