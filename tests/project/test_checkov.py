"""checkov on the example app's templates, synthesized by the CDK CLI (a ``FleetAdvisor``
and a ``NightlyTuning`` among them): no failed check, and every skipped one carries its
reason in the resource's metadata, where checkov (and a reviewer reading the template)
finds it. checkov runs from its own venv, made by
``make install`` (its pins conflict with the project's)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.checkov import checkov_reports, start_checkov, templates


def remove_skips(directory: Path) -> set[tuple[str, str]]:
    """Take the checkov skips out of the templates in ``directory``; returns them, as
    (check, resource) pairs in checkov's naming."""
    skipped = set()
    for path in directory.glob("*.template.json"):
        template = json.loads(path.read_text())
        for logical, resource in template["Resources"].items():
            for skip in resource.get("Metadata", {}).pop("checkov", {}).get("skip", []):
                skipped.add((skip["id"], f"{resource['Type']}.{logical}"))
        path.write_text(json.dumps(template))
    return skipped


RESULTS = ("passed_checks", "failed_checks", "skipped_checks")


def split(report: dict[str, Any], folders: list[str]) -> list[dict[str, Any]]:
    """One checkov report of several folders as one report a folder, each with its own
    results and their counts (as checkov counts them: one a result); every result of the
    report is in one of them."""
    parts: list[dict[str, Any]] = []
    for folder in folders:
        results = {
            kind: [
                r
                for r in report["results"].get(kind, [])
                if r["file_path"].startswith(f"/{folder}/")
            ]
            for kind in RESULTS
        }
        summary = {kind.split("_")[0]: len(found) for kind, found in results.items()}
        parts.append({"results": results, "summary": summary})
    for kind in RESULTS:
        assert sum(len(p["results"][kind]) for p in parts) == len(report["results"].get(kind, []))
    return parts


class Scans:
    """checkov on the templates as synthesized, and on the same templates with their skips
    removed: one checkov run over both folders (a run is mostly checkov's own start-up)."""

    def __init__(self, cli_assembly: Path, tmp: Path) -> None:
        assemblies = [cli_assembly]
        self.directory = templates(assemblies, tmp / "templates")
        self.unskipped = templates(assemblies, tmp / "unskipped")
        self.skipped = remove_skips(self.unskipped)
        scan = start_checkov(tmp)
        try:
            (report,) = checkov_reports(scan)
        finally:
            if scan.poll() is None:
                scan.kill()
                scan.communicate()
        assert report["summary"]["parsing_errors"] == 0, report["results"].get("parsing_errors")
        self.report, self.unskipped_report = split(report, ["templates", "unskipped"])


@pytest.fixture(scope="module")
def scans(cli_assembly: Path, tmp_path_factory: pytest.TempPathFactory) -> Scans:
    return Scans(cli_assembly, tmp_path_factory.mktemp("checkov"))


def test_no_failed_check_and_every_skip_has_its_reason(scans: Scans) -> None:
    directory, report = scans.directory, scans.report
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


def test_the_fleet_advisors_bucket_and_worker_are_scanned_and_acknowledged(scans: Scans) -> None:
    # GIVEN the example app's FleetAdvisor among the scanned templates; without its skips checkov
    # fails its bucket's access logs and versioning, and its function's reserved concurrency
    # (so they were scanned; its scheduled runs have a dead-letter queue) ...
    unskipped = scans.unskipped_report["results"]["failed_checks"]
    failed = {(f["check_id"], f["resource"].split(".")[1][:13]) for f in unskipped}
    expected = {
        ("CKV_AWS_18", "AdvisorReport"),
        ("CKV_AWS_21", "AdvisorReport"),
        ("CKV_AWS_115", "AdvisorWorker"),
    }
    assert expected <= failed
    # THEN ... each is acknowledged on its resource with its reason, and nothing fails
    skipped = {(check, resource.split(".")[1][:13]) for check, resource in scans.skipped}
    assert expected <= skipped
    assert scans.report["summary"]["failed"] == 0


def test_a_skip_removed_is_a_failure(scans: Scans) -> None:
    """The skips are what keeps checkov quiet: without them, it fails the same checks."""
    report = scans.unskipped_report
    failed = {(f["check_id"], f["resource"]) for f in report["results"]["failed_checks"]}
    assert failed == scans.skipped  # and no skip is there for nothing


TUNING_HANDLER = "ddb_capacity_tools.tuning_lambda.tuning_handler"


def test_the_nightly_tunings_function_is_scanned_and_acknowledged(scans: Scans) -> None:
    # GIVEN the example app's NightlyTuning: its function, found in the scanned templates
    # by the handler, with no dead-letter queue (a failed run is counted and alarmed)
    resources = {}
    for path in scans.directory.glob("*.template.json"):
        resources.update(json.loads(path.read_text())["Resources"])
    functions = [
        logical
        for logical, resource in resources.items()
        if resource["Type"] == "AWS::Lambda::Function"
        and resource["Properties"].get("Handler") == TUNING_HANDLER
    ]
    assert len(functions) == 1, f"{len(functions)} functions run {TUNING_HANDLER}"
    (function,) = functions
    assert "DeadLetterConfig" not in resources[function]["Properties"]
    # WHEN its skips are removed, checkov fails its VPC check and its dead-letter check (so
    # it was scanned) ...
    unskipped = scans.unskipped_report["results"]["failed_checks"]
    failed = {(f["check_id"], f["resource"].split(".", 1)[1]) for f in unskipped}
    expected = {("CKV_AWS_117", function), ("CKV_AWS_116", function)}
    assert expected <= failed
    # THEN ... each is acknowledged on its resource with its reason, and nothing fails
    skipped = {(check, resource.split(".", 1)[1]) for check, resource in scans.skipped}
    assert expected <= skipped
    assert scans.report["summary"]["failed"] == 0
