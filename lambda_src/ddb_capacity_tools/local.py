"""Runs in: workstation, CI.

``ddb-capacity local``: deploy your own CDK app to a moto server on 127.0.0.1 with the
pinned CDK CLI, run one tick of each ``ThrottleAwareScaler`` in-process with its deployed
function's environment, and print the decisions. The server is stopped at the end.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from ddb_capacity_runtime.aws.clients import Clients
from ddb_capacity_runtime.aws.store import HoldStore
from ddb_capacity_runtime.core.names import STORE_ENV
from ddb_capacity_runtime.core.settings import ScalerConfig
from ddb_capacity_runtime.scaler.tick import run_tick

from . import json_files
from .local_aws import (
    ACCOUNT,
    REGION,
    aws_env,
    cdk_cli,
    client,
    create_store_table,
    deploy,
    finish_cdk,
    moto_server,
    physical_ids,
    recorded_events,
    register_skipped_targets,
    run_cdk,
    stack_template,
    start_cdk,
)
from .simulator.text import counted
from .tool_errors import LocalError as LocalError
from .tool_errors import printable

SCALER_HANDLER = "ddb_capacity_runtime.scaler.handler.lambda_handler"
"""The handler of a ThrottleAwareScaler's scheduled function (its batch function differs)"""

DEFAULT_PLACE = f"aws://{ACCOUNT}/{REGION}"
"""Where a stack without an account and Region in its ``env`` is deployed: the local
server's account, moto's default, and its default Region."""

RUNS_THE_APP = ("app", "build")
"""The keys of the app's cdk.json the early bootstrap leaves out (`_early_bootstrap`): the
commands the CLI would run first. Every other setting is kept (a qualifier in its context,
``toolkitStackName``, ``toolkitBucket``, ``tags``, ...)."""


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
    wide = max([5, *(len(line["index"] or "-") for line in decisions)])
    tables, changes = summary["tables"], len(summary["changes"])
    rows = [
        f"one scaler tick: {counted(tables, 'table')} managed, {counted(changes, 'change')}, "
        f"{len(summary['failed'])} failed\n",
        f"  {'table':<{width}} {'index':<{wide}} {'dim':<5} {'via':<15} {'from':>5} {'to':>5}"
        "  reason",
    ]
    for name, line in zip(shown, decisions, strict=True):
        rows.append(
            f"  {name:<{width}} {line['index'] or '-':<{wide}} "
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


def _given(stacks: Sequence[str]) -> str:
    """The ``--stack`` values as an error shows them: ``none``, ``'A'``, or ``['A', 'B']``."""
    if not stacks:
        return "none"
    return repr(stacks[0]) if len(stacks) == 1 else repr(list(stacks))


def stack_places(
    assembly: Path, stacks: Iterable[str], given: Sequence[str] = ()
) -> dict[str, tuple[str, str]]:
    """Each stack's (account, Region) as its manifest says: an explicit ``env``'s, else the
    local server's defaults. Refused when the stacks are in more than one account (the local
    server is one account: deploy one account's with ``--stack``), naming each account's
    stacks, and those without an account in their env as such (``given``: the ``--stack``
    values, for the message)."""
    manifest = json.loads((assembly / "manifest.json").read_text())
    artifacts = manifest.get("artifacts", {})
    places, defaulted = {}, {}
    for name in stacks:
        raw = str(artifacts.get(name, {}).get("environment", ""))
        account, _, region = raw.removeprefix("aws://").partition("/")
        explicit_region = bool(region) and not region.startswith("unknown")
        if not (account.isdigit() and len(account) == 12):
            account = ACCOUNT
            defaulted[name] = (
                "a stack whose env names no account"
                if explicit_region
                else "a stack without an env"
            ) + ", deployed in moto's default account"
        places[name] = (account, region if explicit_region else REGION)
    accounts = sorted({a for a, _ in places.values()})
    if len(accounts) > 1:
        groups = "; ".join(
            f"{account}: "
            + ", ".join(
                f"{n} ({defaulted[n]})" if n in defaulted else n
                for n, (a, _) in places.items()
                if a == account
            )
            for account in accounts
        )
        raise LocalError(
            f"--stack: got {_given(given)}; the stacks are in {len(accounts)} accounts "
            f"({groups}): the local server is one account, so choose the stacks of one "
            "account with --stack (repeatable)"
        )
    return places


UNSUPPORTED = {
    "AWS::DynamoDB::GlobalTable": (
        "moto's CloudFormation has no global tables: no TableV2, with replicas or not, can be "
        "tried locally"
    ),
    "Custom::CapacitySettle": (
        "moto's CloudFormation completes a custom resource only once its function, run in a "
        "Docker container, answers, which never happens here: no PROVISION_THEN_SETTLE "
        "high-water mark can be tried locally, a WARM_THROUGHPUT one can"
    ),
}
"""The resource types the local moto server's CloudFormation cannot create, each with what
that means, where a stack holding one would fail to deploy: checked before deploying
(`check_deployable`)."""


def unsupported_resources(assembly: Path, stack: str) -> list[tuple[str, str, str]]:
    """(logical id, type, construct path) of each resource of the stack's template whose type
    is in `UNSUPPORTED`."""
    template = stack_template(assembly, stack)
    return [
        (logical, resource["Type"], resource.get("Metadata", {}).get("aws:cdk:path", ""))
        for logical, resource in template.get("Resources", {}).items()
        if resource.get("Type") in UNSUPPORTED
    ]


def with_dependencies(assembly: Path, stack: str) -> list[str]:
    """``stack`` and every stack it depends on, directly or not (the CDK CLI deploys them
    with it), as the manifest says."""
    artifacts = json.loads((assembly / "manifest.json").read_text()).get("artifacts", {})
    found, todo = [stack], [stack]
    while todo:
        for dependency in artifacts.get(todo.pop(), {}).get("dependencies", []):
            is_stack = artifacts.get(dependency, {}).get("type") == "aws:cloudformation:stack"
            if is_stack and dependency not in found:
                found.append(dependency)
                todo.append(dependency)
    return found


def check_deployable(
    assembly: Path, chosen: Sequence[str], stacks: Sequence[str], given: Sequence[str] = ()
) -> None:
    """Refuse, before deploying, stacks to deploy (``chosen`` and the stacks they depend on)
    holding a resource the local server cannot create (`UNSUPPORTED`), naming the stack, each
    such resource and the app's ``stacks`` that can be deployed instead."""
    held = {s: unsupported_resources(assembly, s) for s in stacks}
    bad = {s for s in stacks if held[s]}
    deployed = {d: s for s in chosen for d in with_dependencies(assembly, s)}
    deployed.update({s: s for s in chosen})  # a chosen stack is named as such
    named = {s: held[s] for s in stacks if s in bad and s in deployed}
    if named:
        fine = [s for s in stacks if not bad.intersection(with_dependencies(assembly, s))]
        raise LocalError(f"--stack: got {_given(given)}; {_undeployable(named, deployed, fine)}")


def _undeployable(
    named: Mapping[str, list[tuple[str, str, str]]], deployed: Mapping[str, str], fine: list[str]
) -> str:
    """Which stacks hold what the local server cannot create (and which chosen stack brings
    each in), why, and the stacks ``fine`` to deploy instead."""
    parts = []
    for stack, resources in named.items():
        by = deployed[stack]
        who = f"stack {stack}" if by == stack else f"{by} depends on stack {stack}, which"
        what = ", ".join(
            f"{logical} ({kind}{' at ' + path if path else ''})"
            for logical, kind, path in resources
        )
        parts.append(f"{who} holds {what}")
    kinds = {kind for resources in named.values() for _, kind, _ in resources}
    why = "; ".join(UNSUPPORTED[kind] for kind in sorted(kinds))
    them = "it" if sum(map(len, named.values())) == 1 else "them"
    then = (
        f"the stacks that can be deployed locally, with --stack (repeatable): {', '.join(fine)}"
        if fine
        else "no stack of this app can be deployed locally"
    )
    return f"{'; '.join(parts)}: the local moto server cannot create {them} ({why}); {then}"


def scaler_functions(assembly: Path, stack: str) -> list[str]:
    """Logical ids of the stack's ThrottleAwareScaler functions."""
    template = stack_template(assembly, stack)
    return sorted(
        logical
        for logical, resource in template.get("Resources", {}).items()
        if resource.get("Type") == "AWS::Lambda::Function"
        and resource.get("Properties", {}).get("Handler") == SCALER_HANDLER
    )


def _synth(app: str, named: str, assembly: Path, env: Mapping[str, str], cwd: Path) -> list[str]:
    """The app's stacks, synthesized into ``assembly``; ``named``: where the command came from,
    for an error (``--app: got ...``)."""
    try:
        run_cdk("synth", "--app", app, "--output", str(assembly), "--quiet", env=env, cwd=cwd)
    except RuntimeError as exc:
        raise LocalError(
            f"{named}; the app failed to synthesize (run by `cdk synth` in {printable(cwd)}; "
            "expected a command that synthesizes a CDK app):\n"
            f"{str(exc).strip()}{_python_hint(str(exc))}"
        ) from None
    stacks = app_stacks(assembly)
    if not stacks:
        raise LocalError(f"{named}; expected an app with at least one stack, got none")
    return stacks


LIBRARY_MODULES = re.compile(r"No module named '(aws_cdk|constructs|constructs_pkg)'")
"""What a Python without aws-cdk-lib or this library says when the app imports them."""


def _python_hint(output: str) -> str:
    """A line for a synth whose Python could not import aws-cdk-lib or this library (the
    app's ``python`` is not the one they are installed in); else nothing."""
    found = LIBRARY_MODULES.search(output)
    if found is None:
        return ""
    return (
        f"\nhint: the app's Python cannot import {found.group(1)}: run it with the Python "
        f'they are installed in, e.g. --app "{sys.executable} app.py" (the one this '
        "command runs on), or activate that environment first"
    )


def _chosen(given: Sequence[str], stacks: list[str]) -> list[str]:
    """The stacks named with ``--stack`` (each once, in the order given), or every one."""
    if not given:
        return stacks
    for stack in given:
        if stack not in stacks:
            raise LocalError(f"--stack: got {stack!r}; expected one of the app's stacks: {stacks}")
    return list(dict.fromkeys(given))


def app_command(app: str | None, cwd: Path) -> str:
    """``--app``, else the ``"app"`` of ``cwd``'s cdk.json, as the CDK CLI reads it; refused
    when neither gives a command, naming both."""
    if app is not None:
        if not app.strip():
            raise LocalError(
                f"--app: got {app!r}; expected the command that runs your CDK app, "
                f'e.g. --app ".venv/bin/python app.py"'
            )
        return app
    config = cwd / "cdk.json"
    expected = (
        "expected --app with the command that runs your CDK app, e.g. "
        '--app ".venv/bin/python app.py", '
        f'or a cdk.json in {printable(cwd)} whose "app" is that command'
    )
    if not config.is_file():
        raise LocalError(
            f"--app: got none, and there is no cdk.json in {printable(cwd)}; {expected}"
        )
    try:
        settings = _cdk_json(cwd)
    except CDK_JSON_ERRORS as exc:
        raise LocalError(
            f"--app: got none, and {printable(config)} cannot be read as JSON ({exc}); {expected}"
        ) from None
    found = settings.get("app") if isinstance(settings, dict) else None
    if not isinstance(found, str) or not found.strip():
        shown = 'no "app"' if found is None else f'"app": {found!r}'
        raise LocalError(f"--app: got none, and {printable(config)} has {shown}; {expected}")
    return found


CDK_JSON_ERRORS = (OSError, UnicodeDecodeError, ValueError)
"""What reading a cdk.json that is missing, unreadable or not JSON raises (`_cdk_json`)."""


def _cdk_json(cwd: Path) -> object:
    """``cwd``'s cdk.json as JSON; raises one of `CDK_JSON_ERRORS` when it cannot be read."""
    return json_files.loads((cwd / "cdk.json").read_text())


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
    total = len(stack_template(assembly, stack).get("Resources", {}))
    out.write(
        f"deployed {stack}: {len(ids)} resources of the template's {total} (moto's "
        f"CloudFormation skips the others), {targets} scalable targets registered\n"
    )
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
    assembly: Path,
    places: Mapping[str, tuple[str, str]],
    cwd: Path,
    out: TextIO,
    synth_server: tuple[str, subprocess.Popen[str]],
) -> int:
    """Deploy the stacks of ``places`` to a moto server of their account (each to its
    Region) and tick their scalers; how many were ticked. The default account's stacks go
    to ``synth_server``, the one the app was synthesized against (its endpoint, and the
    bootstrap of `DEFAULT_PLACE` begun there); another account's to a server of its own."""
    (account,) = {a for a, _ in places.values()}
    if account == ACCOUNT:
        return _deploy_to(synth_server, account, assembly, places, cwd, out)
    with _server(account) as endpoint:
        return _deploy_to((endpoint, None), account, assembly, places, cwd, out)


def _deploy_to(
    server: tuple[str, subprocess.Popen[str] | None],
    account: str,
    assembly: Path,
    places: Mapping[str, tuple[str, str]],
    cwd: Path,
    out: TextIO,
) -> int:
    """`_deploy_and_tick` to the moto server of ``account`` (its endpoint, and the bootstrap
    of `DEFAULT_PLACE` begun there, if any: waited for, not run again)."""
    endpoint, bootstrapping = server
    env = aws_env(endpoint, account=account)
    out.write(f"deploying {', '.join(places)} to a local moto server ({endpoint}) ...\n")
    try:
        where = sorted({f"aws://{a}/{r}" for a, r in places.values()})
        if bootstrapping is not None and DEFAULT_PLACE in where:
            finish_cdk(bootstrapping)
            where.remove(DEFAULT_PLACE)
        deploy(assembly, env, *places, cwd=cwd, places=where)
    except RuntimeError as exc:
        raise LocalError(f"the local deploy failed: {exc}") from None
    except subprocess.TimeoutExpired as exc:
        raise LocalError(
            f"the local deploy failed: the CDK CLI had not finished after {exc.timeout:.0f} s "
            "(a resource the local server started but never completes)"
        ) from None
    return sum(_tick_stack(endpoint, assembly, n, r, out) for n, (_, r) in places.items())


@contextmanager
def _early_bootstrap(endpoint: str, cwd: Path) -> Iterator[subprocess.Popen[str]]:
    """``cdk bootstrap`` of `DEFAULT_PLACE` on the server at ``endpoint``, started at once so
    that it runs beside the app's synth (most apps deploy there; the deploy waits for it with
    `finish_cdk`), and stopped if still running when this returns (the app refused). The CLI
    runs in a folder of its own holding ``cwd``'s cdk.json without `RUNS_THE_APP` (from
    ``cwd`` it would run the app first) and ``cwd``'s cdk.context.json."""
    cli = cdk_cli(cwd)
    with tempfile.TemporaryDirectory(prefix="ddb-capacity-bootstrap-") as folder:
        settings = _bootstrap_settings(cwd)
        if settings:
            (Path(folder) / "cdk.json").write_text(json.dumps(settings))
        if (cwd / "cdk.context.json").is_file():
            shutil.copy(cwd / "cdk.context.json", folder)
        env = aws_env(endpoint)
        process = start_cdk("bootstrap", DEFAULT_PLACE, env=env, cwd=Path(folder), cli=cli)
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()
            process.communicate()


def _bootstrap_settings(cwd: Path) -> dict[str, object]:
    """``cwd``'s cdk.json without `RUNS_THE_APP`; none when there is none or it cannot be
    read (the synth then says what is wrong with it)."""
    try:
        settings = _cdk_json(cwd)
    except CDK_JSON_ERRORS:
        return {}
    if not isinstance(settings, dict):
        return {}
    return {key: value for key, value in settings.items() if key not in RUNS_THE_APP}


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


def run_local(app: str | None, stacks: Sequence[str], out_dir: str | None, out: TextIO) -> int:
    """Synthesize ``app`` (None: the "app" of the current folder's cdk.json) in the current
    folder, deploy its ``stacks`` (none: every one) to a local moto server, tick each scaler
    once and print the decisions. Returns the exit status."""
    cwd = Path.cwd()
    command = app_command(app, cwd)
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
    try:
        cdk_cli(cwd)
    except RuntimeError as exc:
        raise LocalError(str(exc)) from None
    with _assembly_dir(out_dir) as assembly:
        # the CLI resolves the default account from the server
        with _server(ACCOUNT) as endpoint, _early_bootstrap(endpoint, cwd) as bootstrapping:
            source = "" if app is not None else ' (cdk.json\'s "app")'
            out.write(f"synthesizing {command}{source} in {printable(cwd)} ...\n")
            named = f"--app: got {app!r}" if app is not None else "--app: got none"
            if app is None:
                named += f'; cdk.json\'s "app" is {command!r}'
            every = _synth(command, named, assembly, aws_env(endpoint), cwd)
            chosen = _chosen(stacks, every)
            check_deployable(assembly, chosen, every, stacks)
            places = stack_places(assembly, chosen, stacks)
            ticked = _deploy_and_tick(assembly, places, cwd, out, (endpoint, bootstrapping))
    if not ticked:
        out.write(
            "\nthe app has no ThrottleAwareScaler: nothing was ticked (add one with "
            "constructs_pkg.ThrottleAwareScaler to see its decisions here)\n"
        )
    out.write("server stopped\n")
    return 0
