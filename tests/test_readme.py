"""The README's usage example is real: it is run as written and synthesizes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from ddb_capacity_runtime.requests.store import create_store_table

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_starts_with_the_two_commands() -> None:
    first = README.read_text().splitlines()[:6]
    assert any(line.strip().startswith("make demo") for line in first)
    assert any(line.strip().startswith("make test") for line in first)


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def run_block(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "app.py"
    script.write_text(code)
    env = {**os.environ, "CDK_OUTDIR": str(tmp_path / "cdk.out")}
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        check=True,
        timeout=300,
        capture_output=True,
        text=True,
    )


def test_readme_schedule_example_synthesizes(tmp_path: Path) -> None:
    (block,) = [b for b in python_blocks() if "add_capacity_window" in b]
    result = run_block(block, tmp_path)
    template = json.loads((tmp_path / "cdk.out" / "Ledger.template.json").read_text())
    names = sorted(
        a["ScheduledActionName"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::ApplicationAutoScaling::ScalableTarget"
        for a in r["Properties"].get("ScheduledActions", [])
    )
    assert names == ["holiday", "nightly-load-raise", "nightly-load-restore"]
    assert len(result.stdout.strip().splitlines()) == 3  # the preview it prints


def test_readme_usage_example_synthesizes(tmp_path: Path) -> None:
    # GIVEN the first python block of the README, as a file
    blocks = python_blocks()
    assert blocks, "the README has no python example"
    script = tmp_path / "app.py"
    script.write_text(blocks[0])
    # WHEN run as a user would run it, with the CLI's output directory
    env = {**os.environ, "CDK_OUTDIR": str(tmp_path / "cdk.out")}
    subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, check=True, timeout=300)
    # THEN it synthesized the table with its GSI under the nag packs
    template = json.loads((tmp_path / "cdk.out" / "Shop.template.json").read_text())
    tables = [r for r in template["Resources"].values() if r["Type"] == "AWS::DynamoDB::Table"]
    assert len(tables) == 1
    assert tables[0]["Properties"]["WarmThroughput"] == {"ReadUnitsPerSecond": 4000}
    assert tables[0]["Properties"]["GlobalSecondaryIndexes"][0]["IndexName"] == "byCustomer"


def test_readme_scaler_example_synthesizes(tmp_path: Path) -> None:
    (block,) = [
        b for b in python_blocks() if "ThrottleAwareScaler(" in b and "TableCapacity(" not in b
    ]
    run_block(block, tmp_path)
    template = json.loads((tmp_path / "cdk.out" / "Feed.template.json").read_text())
    functions = [r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
    assert [f["Properties"]["Handler"] for f in functions] == [
        "ddb_capacity_runtime.scaler.handler.lambda_handler"
    ]


def test_readme_simulator_example_runs(tmp_path: Path) -> None:
    (block,) = [b for b in python_blocks() if "simulate(" in b]
    result = run_block(block, tmp_path)
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 4  # two policies x read and write
    assert lines[0].startswith("stock:70 (None, 'read')")


def test_readme_capacity_requests_construct_example_synthesizes(tmp_path: Path) -> None:
    (block,) = [b for b in python_blocks() if "CapacityRequests(" in b]
    run_block(block, tmp_path)
    template = json.loads((tmp_path / "cdk.out" / "Imports.template.json").read_text())
    handlers = [
        r["Properties"]["Handler"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
    ]
    assert sorted(handlers) == [
        "ddb_capacity_runtime.requests.broker.broker_handler",
        "ddb_capacity_runtime.requests.restorer.restorer_handler",
    ]
    descriptions = sorted(
        r["Properties"]["Description"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::IAM::ManagedPolicy"
    )
    assert descriptions == [
        "Permissions of DynamoDB capacity hold restorer",
        "Permissions of DynamoDB capacity request broker",
    ]
    # the worker's grant: invoking the broker, in its default policy
    (inline,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::IAM::Policy"]
    (statement,) = inline["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == "lambda:InvokeFunction"


def test_readme_capacity_request_example_runs_against_moto(
    tmp_path: Path, aws_env: dict[str, str], aws_client: Any
) -> None:
    (block,) = [b for b in python_blocks() if "request_capacity(" in b]
    ddb = aws_client("dynamodb")
    pages = ddb.get_paginator("list_tables").paginate()
    if "Shipments" not in [n for page in pages for n in page["TableNames"]]:
        ddb.create_table(
            TableName="Shipments",
            BillingMode="PROVISIONED",
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            ProvisionedThroughput={"ReadCapacityUnits": 10, "WriteCapacityUnits": 10},
        )
    store = f"holds-{tmp_path.name}"
    create_store_table(ddb, store)
    script = tmp_path / "worker.py"
    # run_import is the user's own work; here it checks the capacity it was promised.
    script.write_text(
        "import boto3\n"
        "def run_import():\n"
        "    table = boto3.client('dynamodb').describe_table(TableName='Shipments')['Table']\n"
        "    print(table['ProvisionedThroughput']['WriteCapacityUnits'])\n" + block
    )
    env = {**os.environ, **aws_env, "PYTHONPATH": str(README.parent), "CAPACITY_HOLDS_TABLE": store}
    result = subprocess.run(
        [sys.executable, str(script)],
        env=env,
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
    )
    assert result.stdout.splitlines() == ["{'write': 2000}", "2000"]
    table = ddb.describe_table(TableName="Shipments")["Table"]
    assert table["ProvisionedThroughput"]["WriteCapacityUnits"] == 10  # released on exit


def test_readme_adoption_example_synthesizes(tmp_path: Path) -> None:
    (block,) = [b for b in python_blocks() if "TableCapacity(" in b]
    run_block(block, tmp_path)
    template = json.loads((tmp_path / "cdk.out" / "Legacy.template.json").read_text())
    types = [r["Type"] for r in template["Resources"].values()]
    assert types.count("AWS::ApplicationAutoScaling::ScalableTarget") == 4
    tables = sorted(
        k for k, r in template["Resources"].items() if r["Type"] == "AWS::DynamoDB::Table"
    )
    # the table, under its own logical ID, and the scaler's state store
    assert len(tables) == 2
    assert tables[0].startswith("Orders") and tables[1].startswith("ScalerStateStore")


def test_the_permissions_section_lists_every_statement() -> None:
    """Every Sid the library writes, in the example app and in the least-privilege test's
    app (scaler with tag discovery, broker, restorer, settle function), is in the README's
    Permissions section; a numbered or per-table Sid as its pattern."""
    import aws_cdk as cdk

    from examples.__main__ import build_app
    from tests.test_least_privilege import synthesize

    text = README.read_text()
    section = text[text.index("## Permissions") : text.index("## Compliance")]
    listed = set(re.findall(r"^\| ([A-Za-z*]+) \|", section, re.M))
    app = build_app()
    templates = [
        cdk.assertions.Template.from_stack(s).to_json()
        for s in app.node.children
        if isinstance(s, cdk.Stack)
    ]
    templates.append({"Resources": dict(synthesize().resources)})
    sids = set()
    for template in templates:
        for resource in template["Resources"].values():
            props = resource.get("Properties", {})
            document = props.get("PolicyDocument") or props.get("KeyPolicy")
            for statement in (document or {}).get("Statement", []):
                if "Sid" in statement:
                    sid = re.sub(r"^ManageTable\d+$", "ManageTable*N*", statement["Sid"])
                    sid = re.sub(r"^AllowEventRule\w+$", "AllowEventRule*Schedule*", sid)
                    sids.add(re.sub(r"^Settle[A-Za-z0-9]+$", "Settle*Table*", sid))
    assert {"MoveMinimumsOfTaggedTargets", "AskTheBroker", "Settle*Table*"} <= sids
    missing = sids - listed - {"AlarmsOfThisAccount"}
    assert missing == set()
    assert "AlarmsOfThisAccount" in section
