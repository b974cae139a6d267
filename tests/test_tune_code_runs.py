"""The construct code `tune` and `advise` print to paste runs where the docs' examples run:
in an app whose stack is ``stack`` (the README's quick start), the key filled in. Each kind
of recommendation's code is synthesized: stock, the autopilot alone and on stock (owning
the target), on-demand, pre-warmed, Standard-IA, with the fast path's hook and the stream."""

from __future__ import annotations

from dataclasses import replace

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk.assertions import Template

import constructs_pkg
from ddb_capacity_tools.simulator.params import ModelParams
from ddb_capacity_tools.simulator.policies import parse
from ddb_capacity_tools.simulator.scenarios import scenario
from ddb_capacity_tools.simulator.table_class import STANDARD_IA
from ddb_capacity_tools.simulator.tune_code import code_for

KEY = "partition_key=dynamodb.Attribute(name='pk', type=dynamodb.AttributeType.STRING)"

CASES = {
    "stock": ("stock:70", {}),
    "autopilot": ("autopilot:70", {}),
    "autopilot on stock, owned": ("autopilot+stock:70+owned", {}),
    "on-demand": ("on-demand", {}),
    "pre-warmed, settled": (
        "autopilot+stock:70",
        {"warm": {"read": 4_000, "write": 2_000}, "extras": ("PROVISION_THEN_SETTLE",)},
    ),
    "pre-warmed autopilot": ("autopilot:70", {"warm": {"read": 4_000, "write": 0}}),
    "standard-ia": ("stock:60", {"table_class": STANDARD_IA}),
    "stream": ("autopilot+stock:70", {"extras": ("stream",)}),
}


@pytest.mark.parametrize("case", CASES)
def test_the_pasted_code_synthesizes_in_the_quick_starts_stack(case: str) -> None:
    policy, options = CASES[case]
    params = ModelParams()
    if case == "pre-warmed autopilot":
        params = replace(params, fast_path_seconds=2)  # and the hook's fast path
    code = code_for(parse(policy), scenario("diurnal"), params, **options)  # type: ignore[arg-type]
    assert code.count("partition_key=...") == 1, code
    # GIVEN the quick start's app and stack, the library's names imported as it does
    app = cdk.App()
    stack = cdk.Stack(app, "Shop")
    names = {n: getattr(constructs_pkg, n) for n in constructs_pkg.__all__}
    # WHEN the code runs there, the key filled in
    exec(code.replace("partition_key=...", KEY), {**names, "dynamodb": dynamodb, "stack": stack})  # noqa: S102
    # THEN it synthesizes a table
    tables = Template.from_stack(stack).find_resources("AWS::DynamoDB::Table")
    assert any(t["Properties"]["KeySchema"][0]["AttributeName"] == "pk" for t in tables.values())
