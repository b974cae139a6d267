"""The release workflow: every gate and the checked distributions before anything is
published; publishing only from a published release, once switched on, through PyPI's
trusted publishing (no stored token) with attestations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

WORKFLOW = Path(__file__).parent.parent / ".github" / "workflows" / "release.yml"


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
