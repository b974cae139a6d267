"""``ddb-capacity flags``: aws-cdk-lib's recommended feature flags merged into an app's
cdk.json in one step, the app's own values kept (real files, the installed aws-cdk-lib's
bundle, and the pinned CDK CLI's own report of the flags an app leaves unset)."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest

from ddb_capacity_tools import local_aws
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
    added = [line.split(":", 2) for line in out.splitlines() if ": added, " in line]
    assert {f"{scope}:{name}" for scope, name, _ in added} == set(flags) - {KEPT}
    # AND a check now passes; a second merge changes nothing
    assert run("--cdk-json", str(path), "--check")[0] == 0
    before = path.read_text()
    assert run("--cdk-json", str(path))[0] == 0 and path.read_text() == before


def test_a_missing_cdk_json_is_made_with_the_flags(tmp_path: Path) -> None:
    path = tmp_path / "cdk.json"
    code, out, _ = run("--cdk-json", str(path))
    assert code == 0 and json.loads(path.read_text()) == {"context": recommended_flags()[1]}
    assert "0 of yours kept" in out


def test_a_folder_is_its_cdk_json_and_the_apps_text_is_kept_as_written(tmp_path: Path) -> None:
    # GIVEN an app whose command names a folder in words of its own language
    (tmp_path / "cdk.json").write_text('{"app": "python3 tâches/app.py", "watch": {}}')
    # WHEN the folder is given THEN its cdk.json gets the flags, its text unescaped
    assert run("--cdk-json", str(tmp_path))[0] == 0
    text = (tmp_path / "cdk.json").read_text(encoding="utf-8")
    assert '"app": "python3 tâches/app.py"' in text
    assert json.loads(text)["watch"] == {}


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


APP = """\
import aws_cdk as cdk

app = cdk.App()
cdk.Stack(app, "Empty")
app.synth()
"""


def test_the_cdk_cli_reports_no_unset_flag_in_an_app_the_command_wrote(tmp_path: Path) -> None:
    """The pinned CDK CLI's ``cdk flags`` (which asks the app's own aws-cdk-lib) finds no
    unconfigured flag once ``flags`` has written the app's cdk.json, the app's own value of
    one flag kept: the bundle's file is the CLI's recommendation."""
    # GIVEN a new app whose cdk.json sets one flag off, as this repository's does
    (tmp_path / "app.py").write_text(APP)
    app = {"app": f"{sys.executable} app.py", "context": {KEPT: False}}
    (tmp_path / "cdk.json").write_text(json.dumps(app))
    assert run("--cdk-json", str(tmp_path / "cdk.json"))[0] == 0
    # WHEN the CLI reports the app's flags
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    report = local_aws.run_cdk("flags", "--unstable=flags", env={"PATH": path}, cwd=tmp_path)
    said = local_aws.without_node_notice(report.stdout + report.stderr)
    # THEN none is unconfigured, the one the app set off included
    assert "All feature flags are already set to their recommended values" in said, said


def test_a_cdk_json_that_cannot_be_written_is_refused_before_any_flag_is_named(
    tmp_path: Path,
) -> None:
    path = tmp_path / "no such folder" / "cdk.json"
    code, out, err = run("--cdk-json", str(path))
    assert code == 2 and out == "" and f"{path}: cannot be written" in err
    assert not path.parent.exists()
