"""Runs in: workstation (`python -m ddb_capacity_tools.summary`, after a synth; `make demo`).

A human summary of a synthesized cloud assembly: each stack, each table and GSI with
its capacity range, target and high-water mark, and the cdk-nag outcome.

It reads the templates CloudFormation would receive, not the constructs, so what it prints
is what deploys. ``python -m ddb_capacity_tools.summary cdk.out``. The cdk-nag outcome
comes from the assembly's ``validation-report.json`` (no report: no packs ran), the CDK's
own plugins' entries left out.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ddb_capacity_runtime.core.names import UNITS

from .tool_errors import printable

_DIMENSION = {units: dimension for dimension, units in UNITS.items()}


@dataclass(frozen=True)
class DimensionRow:
    stack: str
    table: str
    index: str | None
    dimension: str
    min_capacity: int | None
    max_capacity: int | None
    target_percent: float | None
    scale_in: bool | None
    initial: int
    high_water_mark: int | None
    prewarm: str | None


@dataclass(frozen=True)
class StackSummary:
    name: str
    rows: list[DimensionRow]
    acknowledged: int
    packs: int = 0
    unacknowledged: int = 0


def _ref_and_index(resource_id: Any) -> tuple[str, str | None] | None:
    """(table logical id, index name) from a scalable target's ResourceId Fn::Join."""
    parts = resource_id.get("Fn::Join", [None, []])[1] if isinstance(resource_id, dict) else []
    refs = [p["Ref"] for p in parts if isinstance(p, dict) and "Ref" in p]
    if not refs:
        return None
    tail = "".join(p for p in parts if isinstance(p, str))
    index = tail.split("/index/", 1)[1] if "/index/" in tail else None
    return refs[0], index


Where = tuple[str, str | None, str]
"""A dimension: (table logical id, index name or None, "read" or "write")."""


def table_name(
    stack: str, logical_id: str, resource: dict[str, Any], paths: dict[str, str] | None = None
) -> str:
    """The name a user knows a table by: its ``TableName`` when the template sets one, else
    its construct's id within the stack (``Orders``, from the path
    ``Stack/Orders/Resource/Resource`` that the template's ``aws:cdk:path`` or the
    assembly's metadata gives, in ``paths`` by logical id), else its logical id."""
    name = resource.get("Properties", {}).get("TableName")
    if isinstance(name, str) and name:
        return name
    path = resource.get("Metadata", {}).get("aws:cdk:path") or (paths or {}).get(logical_id)
    if not isinstance(path, str):
        return logical_id
    parts = path.strip("/").split("/")
    if parts and parts[0] == stack:
        parts = parts[1:]
    while parts and parts[-1] == "Resource":
        parts.pop()
    return "/".join(parts) or logical_id


def _targets(resources: dict[str, Any]) -> dict[Where, tuple[dict[str, Any], dict[str, Any]]]:
    """Each DynamoDB scalable target's properties and its target-tracking configuration."""
    policies = {
        props["ScalingTargetId"]["Ref"]: props.get("TargetTrackingScalingPolicyConfiguration", {})
        for props in (
            r["Properties"]
            for r in resources.values()
            if r["Type"] == "AWS::ApplicationAutoScaling::ScalingPolicy"
        )
        if isinstance(props.get("ScalingTargetId"), dict)
    }
    targets: dict[Where, tuple[dict[str, Any], dict[str, Any]]] = {}
    for logical_id, r in resources.items():
        if r["Type"] != "AWS::ApplicationAutoScaling::ScalableTarget":
            continue
        props = r["Properties"]
        found = _ref_and_index(props.get("ResourceId"))
        if found is None or not str(props.get("ServiceNamespace")) == "dynamodb":
            continue
        dimension = _DIMENSION[props["ScalableDimension"].rsplit(":", 1)[1]]
        targets[(found[0], found[1], dimension)] = (props, policies.get(logical_id, {}))
    return targets


def _settled(resources: dict[str, Any]) -> dict[Where, int]:
    """Each dimension's high-water mark, as the settle custom resource provisions it."""
    settled: dict[Where, int] = {}
    for r in resources.values():
        if r["Type"] == "Custom::CapacitySettle":
            table_ref = r["Properties"]["TableName"]["Ref"]
            for t in r["Properties"]["Targets"]:
                settled[(table_ref, t["Index"] or None, t["Dimension"])] = int(t["HighWaterMark"])
    return settled


def summarize_template(
    stack: str, template: dict[str, Any], paths: dict[str, str] | None = None
) -> list[DimensionRow]:
    """A row per provisioned dimension of every table and GSI of ``stack``'s template
    (``paths``: construct paths by logical id, for `table_name`)."""
    resources: dict[str, Any] = template.get("Resources", {})
    targets, settled = _targets(resources), _settled(resources)
    rows = []
    for logical_id, r in resources.items():
        if r["Type"] != "AWS::DynamoDB::Table":
            continue
        props = r["Properties"]
        if props.get("BillingMode") == "PAY_PER_REQUEST" or "ProvisionedThroughput" not in props:
            continue  # on demand (a hold store, say): no capacity to summarize
        name = table_name(stack, logical_id, r, paths)
        specs: list[tuple[str | None, dict[str, Any]]] = [(None, props)]
        specs += [(g["IndexName"], g) for g in props.get("GlobalSecondaryIndexes", [])]
        for index, spec in specs:
            for dimension in _DIMENSION.values():
                where = (logical_id, index, dimension)
                rows.append(_row(stack, name, where, spec, targets.get(where, ({}, {})), settled))
    return rows


def _row(
    stack: str,
    name: str,
    where: Where,
    spec: dict[str, Any],
    scaling: tuple[dict[str, Any], dict[str, Any]],
    settled: dict[Where, int],
) -> DimensionRow:
    """One dimension's row: its table's (or GSI's) ``spec``, its scalable target and
    policy (``scaling``), and how it is pre-warmed."""
    _, index, dimension = where
    target, policy = scaling
    warm_value = spec.get("WarmThroughput", {}).get(f"{dimension.capitalize()}UnitsPerSecond")
    settle_value = settled.get(where)
    prewarm = "WARM_THROUGHPUT" if warm_value else "PROVISION_THEN_SETTLE" if settle_value else None
    scale_in = policy.get("DisableScaleIn")
    return DimensionRow(
        stack=stack,
        table=name,
        index=index,
        dimension=dimension,
        min_capacity=target.get("MinCapacity"),
        max_capacity=target.get("MaxCapacity"),
        target_percent=policy.get("TargetValue"),
        scale_in=None if scale_in is None else not scale_in,
        initial=int(spec["ProvisionedThroughput"][UNITS[dimension]]),
        high_water_mark=warm_value or settle_value,
        prewarm=prewarm,
    )


def _paths(metadata: dict[str, Any]) -> dict[str, str]:
    """Construct paths by logical id, from a stack's ``<stack>.metadata.json``."""
    return {
        entry["data"]: path
        for path, entries in metadata.items()
        for entry in entries
        if entry.get("type") == "aws:cdk:logicalId" and isinstance(entry.get("data"), str)
    }


CDK_PLUGINS = frozenset({"CloudFormation Validate", "Construct Annotations"})
"""The validation report's plugins that are the CDK's own (its built-in CloudFormation
validation, and the construct annotations it reports when a feature flag asks), not packs."""


def summarize_assembly(outdir: Path) -> list[StackSummary]:
    manifest = json.loads((outdir / "manifest.json").read_text())
    report_file = outdir / "validation-report.json"
    every = (
        json.loads(report_file.read_text()).get("pluginReports", []) if report_file.exists() else []
    )
    reports = [r for r in every if r.get("pluginName") not in CDK_PLUGINS]
    summaries = []
    for name, artifact in manifest["artifacts"].items():
        if artifact["type"] != "aws:cloudformation:stack":
            continue
        template = json.loads((outdir / artifact["properties"]["templateFile"]).read_text())
        metadata_file = outdir / f"{name}.metadata.json"
        metadata = json.loads(metadata_file.read_text()) if metadata_file.exists() else {}
        acknowledged = sum(
            1
            for entries in metadata.values()
            for entry in entries
            if entry.get("type") == "aws:cdk:acknowledged-rules"
        )
        summaries.append(
            StackSummary(
                name,
                summarize_template(name, template, _paths(metadata)),
                acknowledged,
                len(reports),
                _unacknowledged(reports, name),
            )
        )
    return summaries


def _unacknowledged(reports: list[dict[str, Any]], stack: str) -> int:
    """Unacknowledged findings in ``stack`` among the validation plugins' reports."""
    return sum(
        1
        for report in reports
        for violation in report.get("violations", [])
        for where in violation.get("violatingConstructs", [])
        if where.get("constructPath", "").split("/", 1)[0] == stack
    )


def render(summaries: list[StackSummary]) -> str:
    lines = []
    header = (
        f"  {'table / index':<28} {'dim':<5} {'min':>6} {'max':>7} {'target':>6} "
        f"{'scale-in':>8} {'created at':>10}  high-water mark"
    )
    for s in summaries:
        lines.append(
            f"Stack {s.name}: cdk-nag {s.packs} packs, {s.unacknowledged} unacknowledged findings, "
            f"{s.acknowledged} acknowledged with reasons"
        )
        lines.append(header)
        for r in s.rows:
            label = r.table if r.index is None else f"{r.table} / {r.index}"
            target = "-" if r.target_percent is None else f"{r.target_percent:g}%"
            scale_in = "-" if r.scale_in is None else ("on" if r.scale_in else "off")
            hwm = "-" if r.high_water_mark is None else f"{r.high_water_mark} ({r.prewarm})"
            lines.append(
                f"  {label:<28} {r.dimension:<5} {r.min_capacity or '-':>6} "
                f"{r.max_capacity or '-':>7} {target:>6} {scale_in:>8} {r.initial:>10}  {hwm}"
            )
        lines.append("")
    return "\n".join([*lines, *(LEGEND if summaries else ())])


LEGEND = (
    "min, max, target, scale-in: the dimension's Application Auto Scaling target and policy;",
    "  - where it has none (a table the throttle-aware scaler manages by its tag, or fixed)",
    "created at: the units CloudFormation creates the table or index with",
    "high-water mark: the units it is warm for before traffic, and how: WARM_THROUGHPUT (the",
    "  table's warm throughput) or PROVISION_THEN_SETTLE (provisioned at the mark, then",
    "  settled to its minimum); - where none",
)
"""What the columns of `render`'s tables mean, printed once after them."""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    outdir = Path(args[0] if args else "cdk.out")
    if not (outdir / "manifest.json").exists():
        print(
            f"no cloud assembly at {printable(outdir)}: run `npx cdk synth` first", file=sys.stderr
        )
        return 2
    print(render(summarize_assembly(outdir)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
