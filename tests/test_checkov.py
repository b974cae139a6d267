"""checkov on the example app's templates, synthesized by the CDK CLI: no failed check, and
every skipped one carries its reason in the resource's metadata, where checkov (and a
reviewer reading the template) finds it. checkov runs from its own venv, made by
``make install`` (its pins conflict with the project's)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

CHECKOV = Path(__file__).resolve().parent.parent / ".venv-checkov" / "bin" / "checkov"


def checkov(directory: Path) -> list[dict[str, Any]]:
    if not CHECKOV.exists():
        pytest.fail(f"{CHECKOV} is missing: run `make install`")
    result = subprocess.run(  # noqa: S603 (the project's own checkov, fixed arguments)
        [str(CHECKOV), "-d", str(directory), "--framework", "cloudformation"]
        + ["--output", "json", "--quiet", "--compact"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if result.returncode not in (0, 1):  # 1: failed checks, reported in the JSON
        pytest.fail(f"checkov exited {result.returncode}: {result.stderr[-2000:]}")
    reports = json.loads(result.stdout)
    return reports if isinstance(reports, list) else [reports]


def templates(cli_assembly: Path, into: Path) -> Path:
    into.mkdir()
    for template in cli_assembly.glob("*.template.json"):
        shutil.copy(template, into)
    return into


def test_no_failed_check_and_every_skip_has_its_reason(cli_assembly: Path, tmp_path: Path) -> None:
    directory = templates(cli_assembly, tmp_path / "templates")
    (report,) = checkov(directory)
    summary = report["summary"]
    failed = report["results"].get("failed_checks", [])
    assert summary["failed"] == 0, [(f["check_id"], f["resource"]) for f in failed]
    assert summary["passed"] > 50
    assert summary["skipped"] > 0
    # each skip is written on its resource with a reason
    for path in directory.glob("*.template.json"):
        for logical, resource in json.loads(path.read_text())["Resources"].items():
            for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", []):
                assert skip["id"].startswith("CKV_AWS_"), (logical, skip)
                assert len(skip["comment"]) > 40, (logical, skip)


def test_a_skip_removed_is_a_failure(cli_assembly: Path, tmp_path: Path) -> None:
    """The skips are what keeps checkov quiet: without them, it fails the same checks."""
    directory = templates(cli_assembly, tmp_path / "templates")
    skipped = set()
    for path in directory.glob("*.template.json"):
        template = json.loads(path.read_text())
        for logical, resource in template["Resources"].items():
            for skip in resource.get("Metadata", {}).pop("checkov", {}).get("skip", []):
                skipped.add((skip["id"], f"{resource['Type']}.{logical}"))
        path.write_text(json.dumps(template))
    (report,) = checkov(directory)
    failed = {(f["check_id"], f["resource"]) for f in report["results"]["failed_checks"]}
    assert failed == skipped  # and no skip is there for nothing
