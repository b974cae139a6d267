"""The release workflow: every gate and the checked distributions before anything is
published; publishing only from a published release, once switched on, through PyPI's
trusted publishing (no stored token) with attestations."""

from __future__ import annotations

import re
from typing import Any

import yaml

from tests.support.shape import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


def workflow() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text())
    return loaded


def runs(job: dict[str, Any]) -> list[str]:
    return [step["run"] for step in job["steps"] if "run" in step]


def test_the_build_runs_every_gate_then_the_checked_distributions() -> None:
    build = workflow()["jobs"]["build"]
    assert runs(build) == ["make test", "make dist"]
    python = next(s for s in build["steps"] if s.get("uses", "").startswith("actions/setup-python"))
    assert python["with"]["python-version"] == "3.11"


def test_publishing_is_switched_on_by_a_variable_and_needs_no_token() -> None:
    flow = workflow()
    publish = flow["jobs"]["publish"]
    assert publish["needs"] == "build"
    assert "vars.PUBLISH_TO_PYPI == 'true'" in publish["if"]
    assert "github.event_name == 'release'" in publish["if"]
    assert publish["permissions"] == {"id-token": "write", "attestations": "write"}
    assert flow["permissions"] == {"contents": "read"}
    (upload,) = [s for s in publish["steps"] if "pypi-publish" in s.get("uses", "")]
    assert upload["with"] == {"attestations": True}
    assert "secrets." not in WORKFLOW.read_text()


def test_every_action_is_pinned_to_a_commit_and_names_its_release() -> None:
    lines = [line.strip() for line in WORKFLOW.read_text().splitlines()]
    uses = [line.split("uses:", 1)[1].strip() for line in lines if "uses:" in line]
    assert len(uses) == 6
    for use in uses:
        action, _, rest = use.partition("@")
        commit, _, comment = rest.partition(" # ")
        assert re.fullmatch(r"[0-9a-f]{40}", commit), f"{action} is not pinned to a commit: {use}"
        assert re.fullmatch(r"v\d+\.\d+\.\d+", comment), f"{action} names no release: {use}"


def test_the_gates_run_on_the_oldest_node_supported_and_the_cdks_lines() -> None:
    build = workflow()["jobs"]["build"]
    assert build["strategy"]["matrix"]["node"] == ["20", "22", "24"]
    node = next(s for s in build["steps"] if s.get("uses", "").startswith("actions/setup-node"))
    assert node["with"]["node-version"] == "${{ matrix.node }}"
    (upload,) = [s for s in build["steps"] if "upload-artifact" in s.get("uses", "")]
    assert upload["if"] == "matrix.node == '24'"
