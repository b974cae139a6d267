"""``ddb-capacity flags``: aws-cdk-lib's recommended feature flags merged into an app's
cdk.json in one step, the app's own values kept (real files, the installed aws-cdk-lib's
bundle)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from ddb_capacity_tools.cli import main
from ddb_capacity_tools.flags_command import recommended_flags

KEPT = "@aws-cdk/aws-iam:minimizePolicies"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["flags", *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def test_the_flags_are_merged_and_the_apps_own_values_kept(tmp_path: Path) -> None:
    # GIVEN an app's cdk.json with its app command and one flag of its own
    path = tmp_path / "cdk.json"
    path.write_text(json.dumps({"app": "python app.py", "context": {KEPT: False}}))
    version, flags = recommended_flags()
    assert len(flags) > 50 and flags[KEPT] is True
    # WHEN checked THEN every other flag is missing, and it fails, writing nothing
    code, out, _ = run("--cdk-json", str(path), "--check")
    assert code == 1 and f"{len(flags) - 1} of aws-cdk-lib {version}'s {len(flags)}" in out
    assert json.loads(path.read_text())["context"] == {KEPT: False}
    # WHEN merged THEN the app keeps its command and its value, and has every other flag
    code, out, _ = run("--cdk-json", str(path))
    app = json.loads(path.read_text())
    assert code == 0 and app["app"] == "python app.py"
    assert app["context"] == {**flags, KEPT: False}
    assert f"{KEPT}: kept yours, false (recommended: true)" in out
    # AND a check now passes; a second merge changes nothing
    assert run("--cdk-json", str(path), "--check")[0] == 0
    before = path.read_text()
    assert run("--cdk-json", str(path))[0] == 0 and path.read_text() == before


def test_a_missing_cdk_json_is_made_with_the_flags(tmp_path: Path) -> None:
    path = tmp_path / "cdk.json"
    code, out, _ = run("--cdk-json", str(path))
    assert code == 0 and json.loads(path.read_text()) == {"context": recommended_flags()[1]}
    assert "0 of yours kept" in out


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[1]", "got a JSON list; expected a JSON object"),
        ("{", "not JSON (Expecting property name enclosed in double quotes, line 1)"),
        ('{"context": []}', "context: got list; expected a JSON object"),
    ],
)
def test_a_cdk_json_that_is_not_an_object_is_refused(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "cdk.json"
    path.write_text(text)
    code, _, err = run("--cdk-json", str(path))
    assert code == 2 and f"{path}: {said}" in err
    assert path.read_text() == text  # untouched
