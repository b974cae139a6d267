"""Runs in: workstation, CI.

A local AWS for ``ddb-capacity local``, demos, tests and benchmarks: a moto server on
127.0.0.1, dynalite where conditional writes must be atomic, the pinned CDK CLI, and the
pieces moto's CloudFormation leaves out.

moto's CloudFormation skips scalable targets, scaling policies and alarms, and cannot run
Lambda code. ``register_skipped_targets`` registers the template's scalable targets as
CloudFormation would have; the scaler's handler is run in-process with the deployed
function's environment.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3

from ddb_capacity_runtime.core.delivery import WITNESS_PERIOD_MINUTES
from ddb_capacity_runtime.core.series import step_start
from ddb_capacity_runtime.events import LOGGER, event_fields

from .tool_errors import printable

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

REPO = Path(__file__).resolve().parents[2]
CDK_CLI = REPO / "node_modules" / ".bin" / "cdk"
CDK_CLI_PIN = "aws-cdk@2.1148.1"
"""The CDK CLI version whose cloud assemblies aws-cdk-lib 2.275 writes (npm's ``latest`` is
older)"""
ACCOUNT, REGION = "123456789012", "us-east-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _local_server(
    command: list[str],
    what: str,
    ready: Callable[[], object],
    endpoint: str,
    env: Mapping[str, str] | None = None,
) -> Iterator[str]:
    """Run ``command`` (with ``env`` added to this process's environment) until the
    ``with`` block ends; yields ``endpoint`` once ``ready()`` stops raising OSError (30 s
    at most)."""
    proc = subprocess.Popen(  # noqa: S603 (the project's own servers, fixed arguments)
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                ready()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{what} did not start") from None
                time.sleep(0.2)
        yield endpoint
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


MOTO_SERVER = Path(sys.executable).parent / "moto_server"
"""moto's server, in this Python's environment: the ``[local]`` extra (pyproject.toml)."""
MOTO_PIN = "moto[server]>=5.1,<6"


@contextmanager
def moto_server(account: str = ACCOUNT) -> Iterator[str]:
    """A moto server subprocess on 127.0.0.1 whose account is ``account``, stopped on exit.
    Yields the endpoint, which names localhost: the CDK CLI's S3 uploads need it
    (path-style on 127.0.0.1 fails)."""
    if not MOTO_SERVER.exists():
        raise RuntimeError(
            f"moto's server is missing: no {MOTO_SERVER}; install it in this environment with "
            f"`pip install '{MOTO_PIN}'` (the `[local]` extra: `pip install '.[local]'` in a clone)"
        )
    port = free_port()
    with _local_server(
        [str(MOTO_SERVER), "-H", "127.0.0.1", "-p", str(port)],
        "moto server",
        lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/", timeout=1),  # noqa: S310
        f"http://localhost:{port}",
        env={"MOTO_ACCOUNT_ID": account},
    ) as endpoint:
        yield endpoint


DYNALITE = REPO / "node_modules" / "dynalite" / "cli.js"


@contextmanager
def dynalite_server() -> Iterator[str]:
    """dynalite (npm), an in-memory DynamoDB whose conditional writes are atomic, on
    127.0.0.1 on a free port, stopped on exit. Yields the endpoint. moto's DynamoDB does
    not serialize conditional writes across threads, so stores raced by threads live here."""
    if not DYNALITE.exists():
        raise RuntimeError("dynalite is missing: run `make install`")
    port = free_port()
    instant = ["--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0"]
    with _local_server(
        ["node", str(DYNALITE), "--host", "127.0.0.1", "--port", str(port), *instant],
        "dynalite",
        lambda: socket.create_connection(("127.0.0.1", port), timeout=1).close(),
        f"http://127.0.0.1:{port}",
    ) as endpoint:
        yield endpoint


def aws_env(endpoint: str, region: str = REGION, account: str = ACCOUNT) -> dict[str, str]:
    """Environment for the CDK CLI and boto3 to talk to the local server of ``account``
    (the access key names it: the CDK CLI caches the account of an access key)."""
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "CDK_S3_FORCE_PATH_STYLE": "true",
        "AWS_ACCESS_KEY_ID": "test" if account == ACCOUNT else f"local{account}",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": region,
        "AWS_REGION": region,
    }


def client(endpoint: str, service: str, region: str = REGION) -> Any:
    return boto3.client(  # type: ignore[call-overload]
        service,
        endpoint_url=endpoint,
        region_name=region,
        aws_access_key_id="test",
        aws_secret_access_key="test",  # noqa: S106 (moto takes any key; not a secret)
    )


def cdk_cli(cwd: Path) -> Path:
    """The pinned CDK CLI: ``cwd``'s ``node_modules/.bin/cdk``, else this checkout's (where the
    package runs from a clone of its repository: `REPO` has its Makefile)."""
    for found in (cwd / "node_modules" / ".bin" / "cdk", CDK_CLI):
        if found.exists():
            return found
    checkout = " (or `make install` in this checkout)" if (REPO / "Makefile").is_file() else ""
    raise RuntimeError(
        f"the CDK CLI is missing: no node_modules/.bin/cdk in {printable(cwd)}; install the "
        f"pinned one with `npm install --save-dev --save-exact {CDK_CLI_PIN}` there{checkout}"
    )


def run_cdk(
    *args: str,
    env: Mapping[str, str],
    timeout: int = 600,
    cwd: Path = REPO,
    cli: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """The pinned CDK CLI (``cli``, else `cdk_cli` of ``cwd``) run in ``cwd``; raises with
    its output when it fails."""
    return finish_cdk(start_cdk(*args, env=env, cwd=cwd, cli=cli), timeout)


def start_cdk(
    *args: str, env: Mapping[str, str], cwd: Path = REPO, cli: Path | None = None
) -> subprocess.Popen[str]:
    """`run_cdk` started, not waited for: `finish_cdk` waits."""
    return subprocess.Popen(  # noqa: S603 (the pinned CDK CLI from node_modules)
        [str(cli or cdk_cli(cwd)), *args],
        cwd=cwd,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish_cdk(
    process: subprocess.Popen[str], timeout: int = 600
) -> subprocess.CompletedProcess[str]:
    """Wait for the CDK CLI `start_cdk` started (killed past ``timeout`` seconds); raises with
    its output when it fails."""
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except BaseException:  # the timeout, or an interrupt: the CLI is not left running
        process.kill()
        process.communicate()
        raise
    if process.returncode != 0:
        args = shlex.join(str(arg) for arg in list(process.args)[1:])  # type: ignore[arg-type]
        stdout, stderr = without_node_notice(stdout), without_node_notice(stderr)
        raise RuntimeError(
            f"cdk {args} exited {process.returncode}:\n{stdout[-4000:]}\n{stderr[-4000:]}"
        )
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


NODE_NOTICE = re.compile(r"""^(b['"])?!!""")
"""A line of jsii's notice of an old Node.js: a box of ``!!`` lines, printed as bytes
(``b'!!  Node 20 is end-of-life ...  !!\\n'``) by every process of the app."""


def without_node_notice(output: str) -> str:
    """The CDK CLI's (or its app's) ``output`` without jsii's Node.js notice (`NODE_NOTICE`),
    which no failure is about and which took a quarter of what an error showed."""
    return "\n".join(line for line in output.splitlines() if not NODE_NOTICE.match(line.strip()))


def deploy(
    assembly: Path,
    env: Mapping[str, str],
    *stacks: str,
    cwd: Path = REPO,
    places: Iterable[str] = (f"aws://{ACCOUNT}/{REGION}",),
) -> None:
    """Bootstrap ``places`` (``aws://ACCOUNT/REGION`` each), then deploy ``stacks`` (all
    without) of ``assembly``, with the CDK CLI found from ``cwd``. Stacks are created or
    updated with CreateStack/UpdateStack directly (moto's change sets cannot update)."""
    drop_key_tags(assembly)
    for place in places:
        run_cdk("bootstrap", place, "--app", str(assembly), env=env, cwd=cwd)
    run_cdk(
        "deploy",
        *(stacks or ("--all",)),
        "--app",
        str(assembly),
        "--require-approval",
        "never",
        "--method",
        "direct",
        env=env,
        cwd=cwd,
    )


def drop_key_tags(assembly: Path) -> None:
    """Remove the Tags of KMS keys from the assembly's templates: moto's CloudFormation reads
    a key's tags as TagKey/TagValue (KMS's API shape), not CloudFormation's Key/Value, and
    fails the stack. Local deploys only; nothing reads a key's tags here."""
    for path in assembly.glob("*.template.json"):
        template = json.loads(path.read_text())
        keys = [
            r
            for r in template.get("Resources", {}).values()
            if r.get("Type") == "AWS::KMS::Key" and "Tags" in r.get("Properties", {})
        ]
        for resource in keys:
            del resource["Properties"]["Tags"]
        if keys:
            path.write_text(json.dumps(template, indent=1))


def physical_ids(endpoint: str, stack: str, region: str = REGION) -> dict[str, str]:
    """Logical id -> physical id of a deployed stack's resources."""
    cfn = client(endpoint, "cloudformation", region)
    resources = cfn.describe_stack_resources(StackName=stack)
    return {
        r["LogicalResourceId"]: r["PhysicalResourceId"]
        for r in resources["StackResources"]
        if "LogicalResourceId" in r and "PhysicalResourceId" in r
    }


def stack_template(assembly: Path, stack: str) -> dict[str, Any]:
    """The template of ``stack`` in the cloud assembly ``assembly``."""
    template: dict[str, Any] = json.loads((assembly / f"{stack}.template.json").read_text())
    return template


def register_skipped_targets(
    endpoint: str, assembly: Path, stack: str, region: str = REGION
) -> int:
    """Register the template's DynamoDB scalable targets, which moto's CloudFormation
    skips, with their deployed table names. Returns how many."""
    template = stack_template(assembly, stack)
    ids = physical_ids(endpoint, stack, region)
    aas = client(endpoint, "application-autoscaling", region)
    count = 0
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::ApplicationAutoScaling::ScalableTarget":
            continue
        props = resource["Properties"]
        given = props["ResourceId"]
        parts = [given] if isinstance(given, str) else given["Fn::Join"][1]
        resource_id = "".join(ids[p["Ref"]] if isinstance(p, dict) else p for p in parts)
        aas.register_scalable_target(
            ServiceNamespace="dynamodb",
            ResourceId=resource_id,
            ScalableDimension=props["ScalableDimension"],
            MinCapacity=props["MinCapacity"],
            MaxCapacity=props["MaxCapacity"],
        )
        count += 1
    return count


def put_traffic(
    cloudwatch: Any,
    table: str,
    dimension: str,
    per_second: float,
    *,
    end: datetime,
    minutes: range,
    throttles: float = 0,
    index: str | None = None,
    causes: Mapping[str, float] | None = None,
) -> None:
    """Consumed units per second (and throttle events per minute), ``minutes`` before
    ``end``, as DynamoDB would publish them; ``causes``: throttle events per minute by
    cause (``KeyRangeThroughput``, ``ProvisionedThroughput``, ...), published as
    ``{Read,Write}<cause>ThrottleEvents`` beside the lumped ones."""
    dims = [{"Name": "TableName", "Value": table}]
    if index:
        dims.append({"Name": "GlobalSecondaryIndexName", "Value": index})
    name = dimension.capitalize()
    data: list[dict[str, Any]] = []
    for m in minutes:
        ts = end - timedelta(minutes=m)
        data.append(
            {
                "MetricName": f"Consumed{name}CapacityUnits",
                "Dimensions": dims,
                "Timestamp": ts,
                "Value": per_second * 60,
            }
        )
        if throttles:
            data.append(
                {
                    "MetricName": f"{name}ThrottleEvents",
                    "Dimensions": dims,
                    "Timestamp": ts,
                    "Value": throttles,
                }
            )
        for cause, events in (causes or {}).items():
            data.append(
                {
                    "MetricName": f"{name}{cause}ThrottleEvents",
                    "Dimensions": dims,
                    "Timestamp": ts,
                    "Value": events,
                }
            )
    for i in range(0, len(data), 500):
        cloudwatch.put_metric_data(Namespace="AWS/DynamoDB", MetricData=data[i : i + 500])


def put_witness(
    cloudwatch: Any,
    table: str,
    *,
    end: datetime,
    periods: int = 12,
    index: str | None = None,
    units: tuple[float, float] = (1, 1),
) -> None:
    """``table``'s (or its GSI ``index``'s) provisioned read and write capacity (``units``)
    for the ``periods`` 5-minute periods that ended by ``end``, as DynamoDB publishes them
    whatever the traffic: one datapoint a period, stamped with its start. A tick reads them
    as the delivery witness of the table's metrics (`ddb_capacity_runtime.core.delivery`)
    before it lowers the table on minutes without a datapoint."""
    dims = [{"Name": "TableName", "Value": table}]
    if index:
        dims.append({"Name": "GlobalSecondaryIndexName", "Value": index})
    last = step_start(end, WITNESS_PERIOD_MINUTES) - timedelta(minutes=WITNESS_PERIOD_MINUTES)
    data = [
        {
            "MetricName": f"Provisioned{name}CapacityUnits",
            "Dimensions": dims,
            "Timestamp": last - timedelta(minutes=WITNESS_PERIOD_MINUTES * k),
            "Value": value,
        }
        for k in range(periods)
        for name, value in zip(("Read", "Write"), units, strict=True)
    ]
    for i in range(0, len(data), 500):
        cloudwatch.put_metric_data(Namespace="AWS/DynamoDB", MetricData=data[i : i + 500])


def function_environment(endpoint: str, stack: str, logical_prefix: str) -> dict[str, str]:
    """The environment of a deployed function, found by its logical id's prefix."""
    ids = physical_ids(endpoint, stack)
    (name,) = [
        v
        for k, v in ids.items()
        if k.startswith(logical_prefix)
        and not k.startswith(logical_prefix + "Logs")
        and not k.startswith(logical_prefix + "Role")
        and not k.startswith(logical_prefix + "Policy")
        and not k.startswith(logical_prefix + "OwnPolicy")
    ]
    config = client(endpoint, "lambda").get_function_configuration(FunctionName=name)
    variables: dict[str, str] = config["Environment"]["Variables"]
    return variables


def create_store_table(dynamodb: DynamoDBClient, name: str) -> None:
    """Create a hold store table (on-demand), as ``CapacityRequests`` does, and wait until
    it exists: for local runs and tests."""
    dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    # a local server may answer CREATING once: look again within a second, not 20 s
    dynamodb.get_waiter("table_exists").wait(
        TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
    )


@contextmanager
def recorded_events() -> Iterator[list[dict[str, Any]]]:
    """Collect the events logged inside the ``with`` block, as dicts of their fields (for
    tests and local runs, where no Lambda log format is configured)."""
    events: list[dict[str, Any]] = []

    class Recorder(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            fields = event_fields(record)
            if fields is not None:
                events.append(fields)

    handler, previous = Recorder(logging.DEBUG), LOGGER.level
    LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.DEBUG)
    try:
        yield events
    finally:
        LOGGER.removeHandler(handler)
        LOGGER.setLevel(previous)
