"""Shared fixtures: CDK scopes, the example app synthesized by the real CDK CLI, a local
moto server (emptied at the start of each test module) and dynalite (each on 127.0.0.1 on a
free port, stopped afterwards), and a stand-in for CloudFormation's pre-signed response
URL. Loads the hypothesis profile (tests/support/hypothesis_profiles.py) first.

Under pytest-xdist (``make unit`` runs ``-n 2``) each worker has its own servers and
temporary folders; a test module runs whole on one worker (its module fixtures are made
once), and the modules that read the CLI's synthesized example app share one worker, so
the app is synthesized once (:func:`pytest_xdist_make_scheduler`)."""

from __future__ import annotations

import os

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")
# One alarm per check, so that each check's alarm can be read on its own; the summary alarms
# (the default) are tested with the context set back on their apps (tests/common/
# test_alarm_summary.py). The CDK reads this variable in every App, and the CLI sets its own.
os.environ.setdefault("CDK_CONTEXT_JSON", '{"ddb-capacity:alarms": "detailed"}')

import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ddb_capacity_tools import local_aws
from ddb_capacity_tools.local_aws import ACCOUNT, REGION
from tests.support.hypothesis_profiles import load_profile
from tests.support.shape import long_modules

#: The temporary folder of aws-cdk-lib's Node process (the jsii runtime, which the import of
#: aws_cdk below starts with this environment; nothing imported above starts it): an App given
#: no outdir writes its cloud assembly to a new folder of it, and leaves it there. One folder
#: for the session (`CDK_TMP_ENV`: made by the process that starts pytest, inherited by its
#: xdist workers, each of which makes its own inside it), removed by that process at the
#: session's end (`pytest_unconfigure`), so that a run leaves no assemblies behind; a worker
#: removes nothing (xdist interrupts a worker still busy 5 s after it was asked to end, and
#: removing a worker's assemblies takes seconds). This process's own TMPDIR stays as it was.
CDK_TMP_ENV = "DDB_CAPACITY_TESTS_CDK_TMPDIR"
_session_tmp = os.environ.get(CDK_TMP_ENV)
if _session_tmp is None or not os.path.isdir(_session_tmp):
    _session_tmp = os.environ[CDK_TMP_ENV] = tempfile.mkdtemp(prefix="ddb-capacity-tests-cdk-")
    SESSION_CDK_TMPDIR: str | None = _session_tmp  # this process made it, and removes it
else:
    SESSION_CDK_TMPDIR = None  # a worker's: the session's process removes it
CDK_TMPDIR = tempfile.mkdtemp(prefix="process-", dir=_session_tmp)
_tmpdir = os.environ.get("TMPDIR")
os.environ["TMPDIR"] = CDK_TMPDIR
import aws_cdk as cdk  # noqa: E402 (its Node process starts with CDK_TMPDIR as TMPDIR)

if _tmpdir is None:
    del os.environ["TMPDIR"]
else:
    os.environ["TMPDIR"] = _tmpdir

# the gate's profile unless HYPOTHESIS_PROFILE asks to explore: loaded before any test
# module is imported, so every @settings a test sets inherits it
load_profile()

__all__ = ["ACCOUNT", "REGION"]


#: The modules that read :func:`cli_assembly`: one xdist work unit, so one synth.
ASSEMBLY_MODULES = ("test_checkov.py", "test_examples.py", "test_local_deploy.py")
#: The longest work units, longest first (their measured times under ``-n 2``), handed out
#: before the others so that neither worker is left with a long one at the end; the others
#: follow, the modules with the most tests first.
LONGEST_FIRST = (
    "tests/simulator/test_advise.py",
    "cli_assembly",
    "tests/requests/test_hold_races.py",
    "tests/project/test_packaging.py",
    "tests/requests/test_state_machine.py",
    "tests/tools/test_local_command.py",
    "tests/project/test_docs.py",
    "tests/simulator/test_tune.py",
    "tests/scaler/test_faults.py",
    "tests/fast_path/test_surge_state_machine.py",
    "tests/project/test_readme.py",
    "tests/fast_path/test_instrument_construct.py",
    "tests/table/test_adoption.py",
    "tests/common/test_least_privilege.py",
)


def _work_unit(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    return "cli_assembly" if Path(path).name in ASSEMBLY_MODULES else path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's file-by-file scheduling, but :data:`ASSEMBLY_MODULES` as one unit and the
    units of :data:`LONGEST_FIRST` handed out first."""
    from xdist.scheduler import LoadFileScheduling

    class ByModule(LoadFileScheduling):  # type: ignore[misc]  # xdist ships no types
        def _split_scope(self, nodeid: str) -> str:
            return _work_unit(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            for unit in reversed(LONGEST_FIRST):  # to the front of the queue, in order
                if unit in self.workqueue:
                    self.workqueue.move_to_end(unit, last=False)
            super()._assign_work_unit(node)

    return ByModule(config, log)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The modules over the advisory caps (tests/support/shape.py), reported, never failed."""
    too_long = long_modules()
    if too_long:
        terminalreporter.write_sep("-", "modules over the advisory length caps")
        for line in too_long:
            terminalreporter.write_line(line)


def pytest_unconfigure(config: pytest.Config) -> None:
    """In the process that started the session, remove its `CDK_TMPDIR` folders (its
    workers', once they are done), with the assemblies the session's Apps wrote there."""
    if SESSION_CDK_TMPDIR is not None:
        shutil.rmtree(SESSION_CDK_TMPDIR, ignore_errors=True)


@pytest.fixture
def stack() -> cdk.Stack:
    return cdk.Stack(cdk.App(), "Test")


def run_cdk(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The pinned CDK CLI; a failure fails the test with the CLI's output."""
    try:
        return local_aws.run_cdk(*args, env=env or {})
    except RuntimeError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def cli_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example app (cdk.json) synthesized by the pinned CDK CLI under the nag packs and
    the CDK's built-in validation."""
    outdir = tmp_path_factory.mktemp("cdk") / "cdk.out"
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "CDK_VALIDATION": "true",  # whatever the shell says: with cdk.json's flag, an error fails
    }
    run_cdk("synth", "--quiet", "--output", str(outdir), env=env)
    return outdir


#: The session's moto server, once started.
_moto: list[str] = []


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """A moto server on 127.0.0.1 for the whole session, stopped afterwards."""
    with local_aws.moto_server() as endpoint:
        _moto.append(endpoint)
        yield endpoint
        _moto.clear()


@pytest.fixture(scope="module", autouse=True)
def empty_moto() -> None:
    """Each test module starts on an empty moto server (the modules share nothing in it:
    every one makes its own tables, targets and stacks). Without it the metric data of
    every earlier module stays, and moto's GetMetricData, which looks through all of it on
    every query, grew to a second a call by the end of the session."""
    if _moto:
        reset = urllib.request.Request(f"{_moto[0]}/moto-api/reset", method="POST")
        with urllib.request.urlopen(reset, timeout=30) as answer:  # noqa: S310 (local moto)
            answer.read()


@pytest.fixture(scope="session")
def dynalite_endpoint() -> Iterator[str]:
    """dynalite on 127.0.0.1 for the whole session, stopped afterwards: the hold stores of
    the race tests live there, since moto's conditional writes are not atomic."""
    with local_aws.dynalite_server() as endpoint:
        yield endpoint


@pytest.fixture(scope="session")
def store_dynamodb(dynalite_endpoint: str) -> Any:
    """A DynamoDB client of dynalite, for hold stores that threads race on."""
    return local_aws.client(dynalite_endpoint, "dynamodb")


@pytest.fixture(scope="session")
def aws_env(moto_endpoint: str) -> dict[str, str]:
    return local_aws.aws_env(moto_endpoint)


@pytest.fixture
def aws_client(aws_env: dict[str, str]) -> Any:
    def make(service: str) -> Any:
        return local_aws.client(aws_env["AWS_ENDPOINT_URL"], service)

    return make


def cfn_event(request_type: str, properties: dict[str, Any]) -> dict[str, Any]:
    """A custom-resource event as the provider passes it to its handlers."""
    return {
        "RequestType": request_type,
        "ResponseURL": "https://cloudformation-custom-resource-response.example/response",
        "StackId": f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/Test/1",
        "RequestId": "req-1",
        "LogicalResourceId": "Settle",
        "ResourceType": "Custom::CapacitySettle",
        "ResourceProperties": {"ServiceToken": "arn", **properties},
    }


def dated_decreases(client: Any, clock: Callable[[], float] = time.time) -> None:
    """DescribeTable through ``client`` (a moto server's DynamoDB) dates each decrease sent
    through it, per table and GSI (``LastDecreaseDateTime``, at ``clock``), as DynamoDB does
    and moto does not: the settle step knows from it that it has lowered."""
    dated: dict[tuple[str, str | None], datetime] = {}
    plain = local_aws.client(client.meta.endpoint_url, "dynamodb")

    def sent(params: dict[str, Any], **_: Any) -> None:
        name = params["TableName"]
        table = plain.describe_table(TableName=name)["Table"]
        now = {None: table["ProvisionedThroughput"]}
        now.update(
            {
                g["IndexName"]: g["ProvisionedThroughput"]
                for g in table.get("GlobalSecondaryIndexes", [])
            }
        )
        asked = {None: params.get("ProvisionedThroughput")}
        for update in params.get("GlobalSecondaryIndexUpdates", []):
            gsi = update.get("Update", {})
            asked[gsi.get("IndexName")] = gsi.get("ProvisionedThroughput")
        for index, throughput in asked.items():
            if throughput and any(throughput[k] < now[index][k] for k in throughput):
                dated[(name, index)] = datetime.fromtimestamp(clock(), UTC)

    def described(parsed: dict[str, Any], **_: Any) -> None:
        table = parsed.get("Table", {})
        specs = [
            (None, table),
            *((g.get("IndexName"), g) for g in table.get("GlobalSecondaryIndexes", [])),
        ]
        for index, spec in specs:
            when = dated.get((table.get("TableName"), index))
            if when is not None:
                spec["ProvisionedThroughput"]["LastDecreaseDateTime"] = when

    client.meta.events.register("provide-client-params.dynamodb.UpdateTable", sent)
    client.meta.events.register("after-call.dynamodb.DescribeTable", described)
