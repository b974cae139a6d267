"""The project's checkov, run over synthesized templates, and its reports."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.shape import ROOT

CHECKOV = ROOT / ".venv-checkov" / "bin" / "checkov"


def start_checkov(directory: Path) -> subprocess.Popen[str]:
    if not CHECKOV.exists():
        pytest.fail(f"{CHECKOV} is missing: run `make install`")
    # Run from inside the directory: checkov puts each template's path into the dicts it
    # parses (as `__file__`) and its CKV_AWS_45 reads that path as an environment value, so
    # a temporary path such as `130/checkov0/templates/FleetAdvisorStack` (40 characters
    # of [A-Za-z0-9/]) passes for an AWS secret key; `.` keeps the paths short and fixed.
    # Every result is reported (no --quiet): the folders' results are told apart by path
    # (`split`). --skip-download: nothing is fetched from Prisma Cloud (its guidelines map
    # BC_* ids; every skip here names a CKV_* id).
    return subprocess.Popen(  # noqa: S603 (the project's own checkov, fixed arguments)
        [str(CHECKOV), "-d", ".", "--framework", "cloudformation"]
        + ["--output", "json", "--compact", "--skip-download"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=directory,
    )


def checkov_reports(process: subprocess.Popen[str]) -> list[dict[str, Any]]:
    try:
        stdout, stderr = process.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    if process.returncode not in (0, 1):  # 1: failed checks, reported in the JSON
        pytest.fail(f"checkov exited {process.returncode}: {stderr[-2000:]}")
    reports = json.loads(stdout)
    return reports if isinstance(reports, list) else [reports]


def templates(assemblies: list[Path], into: Path) -> Path:
    into.mkdir()
    for assembly in assemblies:
        for template in assembly.glob("*.template.json"):
            shutil.copy(template, into)
    return into
