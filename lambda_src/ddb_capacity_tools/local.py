"""Runs in: workstation, CI.

``ddb-capacity local``: deploy your own CDK app to a moto server on 127.0.0.1 with the
pinned CDK CLI, run one tick of each ``ThrottleAwareScaler`` in-process with its deployed
function's environment, and print the decisions. The server is stopped at the end.
"""

from __future__ import annotations

import io
import json
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from ddb_capacity_runtime.aws.clients import Clients
from ddb_capacity_runtime.aws.store import HoldStore
from ddb_capacity_runtime.core.names import STORE_ENV
from ddb_capacity_runtime.core.settings import ScalerConfig
from ddb_capacity_runtime.scaler.tick import run_tick

from .local_aws import (
    ACCOUNT,
    REGION,
    aws_env,
    cdk_cli,
    client,
    create_store_table,
    deploy,
    moto_server,
    physical_ids,
    recorded_events,
    register_skipped_targets,
    run_cdk,
)
from .tool_errors import LocalError as LocalError

SCALER_HANDLER = "ddb_capacity_runtime.scaler.handler.lambda_handler"
"""The handler of a ThrottleAwareScaler's scheduled function (its batch function differs)"""


def state_store(dynamodb: Any, env: Mapping[str, str], fallback: str) -> HoldStore:
    """The scaler's state store: the table the deployed function names, or, for a scaler
    that names none, a new table ``fallback`` in the same local server."""
    name = env.get(STORE_ENV, "")
    if not name:
        name = fallback
        create_store_table(dynamodb, name)
    return HoldStore(dynamodb, name)


def tick_once(
    endpoint: str,
    env: Mapping[str, str],
    now: datetime,
    fallback_store: str,
    region: str = REGION,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One scaler tick against the local server in ``region``, configured by a deployed
    function's environment. Returns the tick's summary and the events it logged."""
    config = ScalerConfig.from_env(dict(env))
    clients = Clients(
        client(endpoint, "dynamodb", region),
        client(endpoint, "application-autoscaling", region),
        client(endpoint, "cloudwatch", region),
        client(endpoint, "resourcegroupstaggingapi", region),
        cloudwatch_of=lambda other: client(endpoint, "cloudwatch", other),  # replicas' Regions
    )
    store = state_store(clients.dynamodb, env, fallback_store)
    with recorded_events() as lines:
        summary = run_tick(config, clients, now, out=io.StringIO(), store=store)
    return summary, lines


def decision_report(
    summary: Mapping[str, Any], lines: Iterable[Mapping[str, Any]], names: Mapping[str, str]
) -> str:
    """The tick's counts and one row per decision; ``names`` maps a table's physical name
    to the name shown (others are shown as they are)."""
    decisions = [line for line in lines if line.get("event") == "decision"]
    shown = [names.get(line["table"], line["table"]) for line in decisions]
    width = max([10, *(len(name) for name in shown)])
    rows = [
        f"one scaler tick: {summary['tables']} tables managed, {len(summary['changes'])} "
        f"changes, {len(summary['failed'])} failed\n",
        f"  {'table':<{width}} {'index':<8} {'dim':<5} {'via':<15} {'from':>5} {'to':>5}  reason",
    ]
    for name, line in zip(shown, decisions, strict=True):
        rows.append(
            f"  {name:<{width}} {line['index'] or '-':<8} "
            f"{line['dimension']:<5} {line['via']:<15} {line['from']:>5} {line['to']:>5}  "
            f"{line['reason']}"
        )
    return "\n".join(rows) + "\n"


def app_stacks(assembly: Path) -> list[str]:
    """The stacks of a synthesized cloud assembly, by artifact id."""
    manifest = json.loads((assembly / "manifest.json").read_text())
    return [
        name
        for name, artifact in manifest.get("artifacts", {}).items()
        if artifact.get("type") == "aws:cloudformation:stack"
    ]


def stack_places(assembly: Path, stacks: Iterable[str]) -> dict[str, tuple[str, str]]:
    """Each stack's (account, Region) as its manifest says: an explicit ``env``'s, else the
    local server's defaults. Refused when the stacks name more than one account (the local
    server is one account: deploy them one at a time with ``--stack``)."""
    manifest = json.loads((assembly / "manifest.json").read_text())
    artifacts = manifest.get("artifacts", {})
    places = {}
    for name in stacks:
        raw = str(artifacts.get(name, {}).get("environment", ""))
        account, _, region = raw.removeprefix("aws://").partition("/")
        places[name] = (
            account if account.isdigit() and len(account) == 12 else ACCOUNT,
            region if region and not region.startswith("unknown") else REGION,
        )
    accounts = sorted({a for a, _ in places.values()})
    if len(accounts) > 1:
        raise LocalError(
            f"--stack: got none; the app's stacks are in accounts {accounts}: the local server "
            "is one account, so choose the stacks of one with --stack"
        )
    return places


def scaler_functions(assembly: Path, stack: str) -> list[str]:
    """Logical ids of the stack's ThrottleAwareScaler functions."""
    template = json.loads((assembly / f"{stack}.template.json").read_text())
    return sorted(
        logical
        for logical, resource in template.get("Resources", {}).items()
        if resource.get("Type") == "AWS::Lambda::Function"
        and resource.get("Properties", {}).get("Handler") == SCALER_HANDLER
    )


def _synth(app: str, assembly: Path, env: Mapping[str, str], cwd: Path) -> list[str]:
    try:
        run_cdk("synth", "--app", app, "--output", str(assembly), "--quiet", env=env, cwd=cwd)
    except RuntimeError as exc:
        raise LocalError(
            f"--app: got {app!r}; expected a command that synthesizes a CDK app (as "
            f'cdk.json\'s "app", run in {cwd}); `cdk synth` failed:\n{str(exc).strip()}'
        ) from None
    stacks = app_stacks(assembly)
    if not stacks:
        raise LocalError(f"--app: got {app!r}; expected an app with at least one stack, got none")
    return stacks


def _chosen(stack: str | None, stacks: list[str]) -> list[str]:
    if stack is None:
        return stacks
    if stack not in stacks:
        raise LocalError(f"--stack: got {stack!r}; expected one of the app's stacks: {stacks}")
    return [stack]


@contextmanager
def _assembly_dir(out_dir: str | None) -> Iterator[Path]:
    if out_dir:
        yield Path(out_dir).resolve()
        return
    with tempfile.TemporaryDirectory(prefix="ddb-capacity-local-") as tmp:
        yield Path(tmp)


def _tick_stack(endpoint: str, assembly: Path, stack: str, region: str, out: TextIO) -> int:
    """Register the stack's scalable targets, tick each of its scalers once, print the
    decisions. Returns how many scalers it ticked."""
    targets = register_skipped_targets(endpoint, assembly, stack, region)
    ids = physical_ids(endpoint, stack, region)
    out.write(f"deployed {stack}: {len(ids)} resources, {targets} scalable targets\n")
    functions = scaler_functions(assembly, stack)
    if not functions:
        out.write(f"{stack}: no ThrottleAwareScaler in this stack, nothing to tick\n")
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    lambdas = client(endpoint, "lambda", region)
    for logical in functions:
        name = ids[logical]
        config = lambdas.get_function_configuration(FunctionName=name)
        env: dict[str, str] = config.get("Environment", {}).get("Variables", {})
        out.write(f"\n{stack}/{logical} ({name}):\n")
        summary, lines = tick_once(endpoint, env, now, f"{stack}-local-state", region)
        out.write(decision_report(summary, lines, {}))
    return len(functions)


def _deploy_and_tick(
    assembly: Path, places: Mapping[str, tuple[str, str]], cwd: Path, out: TextIO
) -> int:
    """Deploy the stacks of ``places`` to a moto server of their account (each to its
    Region) and tick their scalers; how many were ticked."""
    (account,) = {a for a, _ in places.values()}
    with _server(account) as endpoint:
        env = aws_env(endpoint, account=account)
        out.write(f"deploying {', '.join(places)} to a local moto server ({endpoint}) ...\n")
        try:
            where = sorted({f"aws://{a}/{r}" for a, r in places.values()})
            deploy(assembly, env, *places, cwd=cwd, places=where)
        except RuntimeError as exc:
            raise LocalError(f"the local deploy failed: {exc}") from None
        return sum(_tick_stack(endpoint, assembly, n, r, out) for n, (_, r) in places.items())


@contextmanager
def _server(account: str) -> Iterator[str]:
    """A moto server of ``account`` (`local_aws.moto_server`); one that cannot start is a
    LocalError saying how to install it."""
    try:
        server = moto_server(account)
        endpoint = server.__enter__()
    except RuntimeError as exc:
        raise LocalError(str(exc)) from None
    try:
        yield endpoint
    finally:
        server.__exit__(None, None, None)


def run_local(app: str, stack: str | None, out_dir: str | None, out: TextIO) -> int:
    """Synthesize ``app`` in the current folder, deploy its stacks (or ``stack``) to a new
    moto server, tick each scaler once and print the decisions. Returns the exit status."""
    if not app.strip():
        raise LocalError(
            f"--app: got {app!r}; expected the command that runs your CDK app, "
            f'e.g. --app "python app.py"'
        )
    if out_dir is not None and Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise LocalError(
            f"--out: got {out_dir!r}; it names a file: expected a folder for the cloud "
            "assembly (made if missing)"
        )
    if out_dir is not None:
        try:
            Path(out_dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LocalError(
                f"--out: got {out_dir!r}; it cannot be made ({exc.strerror or exc}): expected "
                "a folder for the cloud assembly (made if missing)"
            ) from None
    cwd = Path.cwd()
    try:
        cdk_cli(cwd)
    except RuntimeError as exc:
        raise LocalError(str(exc)) from None
    with _assembly_dir(out_dir) as assembly:
        with _server(ACCOUNT) as endpoint:  # the CLI resolves the default account from it
            out.write(f"synthesizing {app} in {cwd} ...\n")
            chosen = _chosen(stack, _synth(app, assembly, aws_env(endpoint), cwd))
        places = stack_places(assembly, chosen)
        ticked = _deploy_and_tick(assembly, places, cwd, out)
    if not ticked:
        out.write(
            "\nthe app has no ThrottleAwareScaler: nothing was ticked (add one with "
            "constructs_pkg.ThrottleAwareScaler to see its decisions here)\n"
        )
    out.write("server stopped\n")
    return 0
