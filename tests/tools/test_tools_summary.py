"""The cloud-assembly summary names each table as its user knows it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ddb_capacity_tools import summary
from ddb_capacity_tools.summary import render, summarize_assembly, summarize_template


def _table(**extra: Any) -> dict[str, Any]:
    table: dict[str, Any] = {
        "Type": "AWS::DynamoDB::Table",
        "Properties": {
            "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 10},
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": "byDay",
                    "ProvisionedThroughput": {"ReadCapacityUnits": 1, "WriteCapacityUnits": 2},
                }
            ],
        },
    }
    table["Properties"].update(extra.pop("Properties", {}))
    table.update(extra)
    return table


def test_a_physical_table_name_wins() -> None:
    table = _table(
        Properties={"TableName": "orders-prod"},
        Metadata={"aws:cdk:path": "Shop/Orders/Resource/Resource"},
    )
    assert summary.table_name("Shop", "Orders2A43276C", table) == "orders-prod"


def test_else_the_construct_id_without_stack_or_resource_levels() -> None:
    provisioned = _table(Metadata={"aws:cdk:path": "Shop/Orders/Resource/Resource"})
    plain = _table(Metadata={"aws:cdk:path": "Shop/Clicks/Resource"})
    nested = _table(Metadata={"aws:cdk:path": "Shop/Data/Ledger/Resource"})
    assert summary.table_name("Shop", "Orders2A43276C", provisioned) == "Orders"
    assert summary.table_name("Shop", "Clicks81B5095A", plain) == "Clicks"
    assert summary.table_name("Shop", "DataLedger0B0DA0A5", nested) == "Data/Ledger"


def test_a_token_table_name_or_no_path_falls_back_to_the_logical_id() -> None:
    token = _table(Properties={"TableName": {"Fn::Join": ["-", ["a", {"Ref": "Env"}]]}})
    assert summary.table_name("Shop", "Orders2A43276C", token) == "Orders2A43276C"
    paths = {"Orders2A43276C": "/Shop/Orders/Resource/Resource"}
    assert summary.table_name("Shop", "Orders2A43276C", token, paths) == "Orders"


def test_rows_carry_the_name_for_the_table_and_its_index() -> None:
    template = {"Resources": {"Orders2A43276C": _table()}}
    rows = summarize_template("Shop", template, {"Orders2A43276C": "/Shop/Orders/Resource"})
    assert [(r.table, r.index, r.dimension, r.initial) for r in rows] == [
        ("Orders", None, "read", 5),
        ("Orders", None, "write", 10),
        ("Orders", "byDay", "read", 1),
        ("Orders", "byDay", "write", 2),
    ]


def write_manifest(folder: Path) -> None:
    """A cloud assembly's manifest in ``folder`` with one stack, Shop."""
    manifest = {
        "artifacts": {
            "Shop": {
                "type": "aws:cloudformation:stack",
                "properties": {"templateFile": "Shop.template.json"},
            }
        }
    }
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_the_assembly_summary_prints_construct_ids_from_its_metadata(tmp_path: Path) -> None:
    """A synthesized assembly without path metadata in its templates (as the CDK writes
    when path metadata is off): the names come from ``<stack>.metadata.json``."""
    (tmp_path / "Shop.template.json").write_text(
        json.dumps({"Resources": {"Orders2A43276C": _table()}})
    )
    (tmp_path / "Shop.metadata.json").write_text(
        json.dumps(
            {
                "/Shop/Orders/Resource/Resource": [
                    {"type": "aws:cdk:logicalId", "data": "Orders2A43276C"}
                ]
            }
        )
    )
    write_manifest(tmp_path)
    text = render(summarize_assembly(tmp_path))
    assert "  Orders                       read" in text
    assert "  Orders / byDay               write" in text
    assert "2A43276C" not in text
    # AND each column the tables show, and their "-", are said once after them
    legend = text.split("\n\n")[-1]
    for column in ("min, max, target, scale-in:", "created at:", "high-water mark:"):
        assert column in legend and text.count(column) == 1, column
    assert legend.count("- where") == 2  # no range, no high-water mark
    assert render([]) == ""


def test_the_cdks_own_validation_entries_are_not_packs(tmp_path: Path) -> None:
    # GIVEN an assembly whose validation report holds two packs (one finding in the stack)
    # and the CDK's own entries (its CloudFormation validation, its construct annotations),
    # each with a finding in the stack
    (tmp_path / "Shop.template.json").write_text(json.dumps({"Resources": {"T": _table()}}))
    write_manifest(tmp_path)
    found = [{"violatingConstructs": [{"constructPath": "Shop/T/Resource"}]}]
    plugins = ["AwsSolutions", "HIPAA.Security", "CloudFormation Validate", "Construct Annotations"]
    report = {
        "pluginReports": [
            {"pluginName": name, "violations": found if name != "HIPAA.Security" else []}
            for name in plugins
        ]
    }
    (tmp_path / "validation-report.json").write_text(json.dumps(report))
    # WHEN summarized
    (summary,) = summarize_assembly(tmp_path)
    # THEN the packs are the two, and the unacknowledged findings theirs
    assert (summary.packs, summary.unacknowledged) == (2, 1)
    assert "Stack Shop: cdk-nag 2 packs, 1 unacknowledged findings" in render([summary])
