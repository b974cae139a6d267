"""The templates the constructs write do not move by accident: every example app, and an app
with every part of the fast path (signals, stream reader, instrumented function, a connected
scaler, an allowed index), synthesized and compared, resource by resource, with the
templates kept in ``tests/snapshots/templates/`` (asset hashes aside: they follow the
run-time code). A change of the constructs' code that is not meant to change a template
(a module split, a rename) must leave them identical; one that is meant to is recorded by
running this file with ``UPDATE_TEMPLATE_SNAPSHOTS=1``, and the diff is reviewed."""

from __future__ import annotations

import json
import os
import re
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_

from constructs_pkg import (
    Capacity,
    CapacityRequests,
    FastPath,
    ProvisionedTable,
    StreamSignal,
    ThrottleAwareScaler,
)
from examples.__main__ import build_app
from tests.support.shape import ROOT

SNAPSHOTS = ROOT / "tests" / "snapshots" / "templates"
ASSET_HASH = re.compile(r"\b[0-9a-f]{64}\b")


def fast_path_app(outdir: str) -> cdk.App:
    """A table with a GSI, its scaler, and capacity requests with every part of the fast
    path."""
    app = cdk.App(outdir=outdir)
    env = cdk.Environment(account="111111111111", region="eu-west-1")
    stack = cdk.Stack(app, "FastPathAll", env=env)
    table = ProvisionedTable(
        stack,
        "Orders",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        read=Capacity(min_capacity=5, max_capacity=100),
        write=Capacity(min_capacity=5, max_capacity=100),
    )
    table.add_global_secondary_index(
        index_name="byUser",
        partition_key=dynamodb.Attribute(name="user", type=dynamodb.AttributeType.STRING),
        read=Capacity(min_capacity=5, max_capacity=100),
        write=Capacity(min_capacity=5, max_capacity=100),
    )
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[table])
    requests = CapacityRequests(
        stack, "Requests", tables=[table], fast_path=FastPath(stream=StreamSignal())
    )
    requests.connect(scaler)
    requests.allow_index(table, "byUser")
    worker = lambda_.Function(
        stack,
        "Worker",
        runtime=lambda_.Runtime.PYTHON_3_12,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"),
    )
    requests.instrument(worker)
    requests.grant_request(worker)
    return app


def normalized(template: dict[str, Any]) -> dict[str, Any]:
    """``template`` with its asset hashes replaced by ``<asset>``."""
    replaced: dict[str, Any] = json.loads(ASSET_HASH.sub("<asset>", json.dumps(template)))
    return replaced


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for make in (build_app, fast_path_app):
        outdir = tmp_path_factory.mktemp("templates")
        make(outdir=str(outdir)).synth()
        for path in sorted(outdir.glob("*.template.json")):
            out[path.name.removesuffix(".template.json")] = normalized(json.loads(path.read_text()))
    return out


def _differences(kept: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What differs, section by section and resource by resource, in words."""
    out = []
    for section in sorted(set(kept) | set(now)):
        a, b = kept.get(section, {}), now.get(section, {})
        if not isinstance(a, dict) or not isinstance(b, dict):
            if a != b:
                out.append(f"{section} changed")
            continue
        out += [f"{section}.{k} removed" for k in sorted(set(a) - set(b))]
        out += [f"{section}.{k} added" for k in sorted(set(b) - set(a))]
        out += [f"{section}.{k} changed" for k in sorted(set(a) & set(b)) if a[k] != b[k]]
    return out


def test_every_template_is_as_kept(templates: dict[str, dict[str, Any]]) -> None:
    if os.environ.get("UPDATE_TEMPLATE_SNAPSHOTS") == "1":
        SNAPSHOTS.mkdir(parents=True, exist_ok=True)
        for old in SNAPSHOTS.glob("*.json"):
            old.unlink()
        for name, template in templates.items():
            text = json.dumps(template, indent=1, sort_keys=True) + "\n"
            (SNAPSHOTS / f"{name}.json").write_text(text)
    kept = {p.stem: json.loads(p.read_text()) for p in sorted(SNAPSHOTS.glob("*.json"))}
    assert sorted(kept) == sorted(templates), "stacks added or removed"
    changed = {
        name: _differences(kept[name], templates[name])
        for name in templates
        if kept[name] != templates[name]
    }
    assert changed == {}, (
        "templates moved; if that is meant, run UPDATE_TEMPLATE_SNAPSHOTS=1 .venv/bin/pytest "
        "tests/common/test_template_snapshots.py and review the diff"
    )


def test_no_alarm_watches_a_search_expression(templates: dict[str, dict[str, Any]]) -> None:
    """CloudWatch refuses an alarm on a SEARCH expression (it returns many series: "You
    can't create an alarm based on the SEARCH expression"), which synth, cfn-lint and moto
    all let through: every example's and the fast path's alarms are checked here. The
    scaler's worst-table alarms watch a metric of its deployment (dimension StateStore)
    instead."""
    searching = [
        f"{name}/{key}"
        for name, template in templates.items()
        for key, resource in template.get("Resources", {}).items()
        if resource["Type"] == "AWS::CloudWatch::Alarm"
        and "SEARCH(" in json.dumps(resource["Properties"].get("Metrics", [])).upper()
    ]
    assert searching == []
    alarms = [
        r["Properties"]
        for t in templates.values()
        for r in t.get("Resources", {}).values()
        if r["Type"] == "AWS::CloudWatch::Alarm"
    ]
    assert len(alarms) > 30  # the check saw the scalers' alarms


CHANGES_TARGETS = {
    "application-autoscaling:RegisterScalableTarget",
    "application-autoscaling:PutScalingPolicy",
    "application-autoscaling:PutScheduledAction",
}
"""The calls before which Application Auto Scaling checks its caller may call CloudWatch's
DescribeAlarms, PutMetricAlarm and DeleteAlarms (its permissions validation), failing them
otherwise: moto never checks it."""


def test_every_policy_that_changes_scalable_targets_lets_its_caller_pass_the_check(
    templates: dict[str, dict[str, Any]],
) -> None:
    changing, checked = [], []
    for name, template in templates.items():
        for key, resource in template.get("Resources", {}).items():
            if resource["Type"] not in ("AWS::IAM::ManagedPolicy", "AWS::IAM::Policy"):
                continue
            granted = set()
            for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
                actions = statement["Action"]
                granted |= {actions} if isinstance(actions, str) else set(actions)
            if granted & CHANGES_TARGETS:
                changing.append(f"{name}/{key}")
                if {
                    "cloudwatch:DescribeAlarms",
                    "cloudwatch:PutMetricAlarm",
                    "cloudwatch:DeleteAlarms",
                } <= granted:
                    checked.append(f"{name}/{key}")
    assert len(changing) >= 4  # the scalers', the brokers', the signals function's
    assert checked == changing
