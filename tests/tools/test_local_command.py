"""``ddb-capacity local``: a user's own app, written here (not the project's example),
synthesized and deployed by the pinned CDK CLI to the command's own moto server, each
scaler ticked once; and the bad input it names before deploying anything.

One test runs its app's Python through ``local``; the others run an ``app.py`` that hands
the CLI their app's assembly as the CLI synthesized it once for the module (`synthesized`):
each synth is mostly aws-cdk-lib loading, some 10 s an app."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import socket
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from ddb_capacity_tools import local, local_aws
from ddb_capacity_tools.cli import main

APP = """
import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb

from constructs_pkg import ThrottleAwareScaler

app = cdk.App()
scaled = cdk.Stack(app, "Scaled")
orders = dynamodb.Table(
    scaled,
    "Orders",
    partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
    billing_mode=dynamodb.BillingMode.PROVISIONED,
    read_capacity=7,
    write_capacity=3,
)
ThrottleAwareScaler(scaled, "Scaler", tables=[orders])
plain = cdk.Stack(app, "Plain")
dynamodb.Table(
    plain,
    "Audit",
    partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
    billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
)
app.synth()
"""


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def user_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A folder of the user's own with ``app.py``; the command runs there."""
    (tmp_path / "app.py").write_text(APP)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
    return f"{sys.executable} app.py"


SYNTH_ALL = """
import os
from pathlib import Path

# each app of apps/ into a folder of its name beside the CLI's output, and last the app
# named as the CLI's output folder into that folder, where the CLI reads it
cli = Path(os.environ["CDK_OUTDIR"])
for source in sorted(Path("apps").glob("*.py"), key=lambda path: path.stem == cli.name):
    code = source.read_text()
    if source.stem != cli.name:
        code = code.replace("cdk.App()", f"cdk.App(outdir={str(cli.parent / source.stem)!r})")
    exec(compile(code, source, "exec"), {"__name__": "__main__"})
"""


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Mapping[str, Path]:
    """The cloud assembly of each app below (APP, ENV_APP, SEVERAL_APP, GLOBAL_APP,
    SETTLE_APP, QUALIFIED_APP) by name, synthesized as `local` synthesizes an app: by the
    pinned CDK CLI, against a moto server, all of them in one run of one Python (aws-cdk-lib
    is loaded once, not once an app); the CDK's validation off (these tests are about the
    deploy)."""
    apps = {
        "app": APP,
        "env": ENV_APP,
        "several": SEVERAL_APP,
        "global": GLOBAL_APP,
        "settle": SETTLE_APP,
        "qualified": QUALIFIED_APP,
    }
    folder, out = tmp_path_factory.mktemp("synth"), tmp_path_factory.mktemp("assemblies")
    (folder / "apps").mkdir()
    for name, source in apps.items():
        (folder / "apps" / f"{name}.py").write_text(source)
    (folder / "synth_all.py").write_text(SYNTH_ALL)
    with local_aws.moto_server() as endpoint:
        local_aws.run_cdk(
            "synth",
            *("--app", f"{sys.executable} synth_all.py", "--output", str(out / "app")),
            "--quiet",
            env={**local_aws.aws_env(endpoint), "CDK_VALIDATION": "false"},
            cwd=folder,
        )
    return {name: out / name for name in apps}


def replay(assembly: Path) -> str:
    """An ``app.py`` that writes ``assembly`` where the CDK CLI asks for its app's cloud
    assembly: the CLI then reads the app as synthesized, without running aws-cdk-lib again."""
    return (
        "import os\nimport shutil\n\n"
        f"shutil.copytree({str(assembly)!r}, os.environ['CDK_OUTDIR'], dirs_exist_ok=True)\n"
    )


def test_a_users_app_is_deployed_locally_and_its_scaler_ticked(
    user_app: str, tmp_path: Path
) -> None:
    # GIVEN the user's app: a stack with a ThrottleAwareScaler on one table, one without
    # WHEN `ddb-capacity local` runs it, the assembly kept in --out
    code, out, err = run("local", "--app", user_app, "--out", "assembly")
    # THEN both stacks are deployed and the scaler ticked once, managing its one table
    assert (code, err) == (0, ""), out
    assert "deploying Scaled, Plain to a local moto server" in out or (
        "deploying Plain, Scaled to a local moto server" in out
    ), out
    deployed = re.search(
        r"deployed Scaled: (\d+) resources of the template's (\d+) \(moto's CloudFormation "
        r"skips the others\), 0 scalable targets registered",
        out,
    )
    assert deployed, out
    template = json.loads((tmp_path / "assembly" / "Scaled.template.json").read_text())
    assert 0 < int(deployed.group(1)) <= int(deployed.group(2)) == len(template["Resources"])
    assert re.search(r"Scaled/ScalerFunction\w+ \(", out), out
    assert "one scaler tick: 1 table managed, 1 change, 0 failed" in out, out
    # AND its decisions are about the deployed table: the writes raised to the scaler's
    # floor of 5 with UpdateTable, the reads held (no history to lower them on)
    rows = [line.split() for line in out.splitlines() if line.startswith("  Scaled-Orders")]
    assert [row[2:6] for row in rows] == [
        ["read", "update-table", "7", "7"],
        ["write", "update-table", "3", "5"],
    ], out
    # AND the stack without one is named as such
    assert "Plain: no ThrottleAwareScaler in this stack, nothing to tick" in out
    assert (tmp_path / "assembly" / "Scaled.template.json").exists()
    # AND the server is stopped: its port refuses connections
    port = int(re.search(r"\(http://localhost:(\d+)\)", out).group(1))  # type: ignore[union-attr]
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass
    assert out.endswith("server stopped\n")


def test_an_empty_app_is_named_with_an_example(user_app: str) -> None:
    code, out, err = run("local", "--app", " ")
    assert (code, out) == (2, "")
    assert err.startswith("ddb-capacity: error: --app: got ' '; expected the command that runs")
    assert '".venv/bin/python app.py"' in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("cdk_json", "found"),
    [
        (None, "there is no cdk.json in "),
        ('{"output": "cdk.out"}', 'cdk.json has no "app"'),
        ('{"app": 3}', 'cdk.json has "app": 3'),
        ('["python app.py"]', 'cdk.json has no "app"'),
        ("{not json", "cdk.json cannot be read as JSON ("),
        (
            "[" * 100_000 + "]" * 100_000,
            "cdk.json cannot be read as JSON (nested 100,000 levels deep; expected at most ",
        ),
    ],
    ids=["no-cdk-json", "no-app-key", "app-not-a-string", "not-an-object", "not-json", "deep"],
)
def test_no_app_nor_cdk_json_app_names_both(
    user_app: str, tmp_path: Path, cdk_json: str | None, found: str
) -> None:
    # GIVEN no --app, and a folder whose cdk.json gives no command (or no cdk.json at all)
    if cdk_json is not None:
        (tmp_path / "cdk.json").write_text(cdk_json)
    # WHEN local runs there
    code, out, err = run("local")
    # THEN one line names --app, what cdk.json held, and both places a command is taken from
    assert (code, out) == (2, ""), err
    assert err.startswith("ddb-capacity: error: --app: got none, and ") and found in err, err
    assert (
        f"in {tmp_path}" in err
        and '--app ".venv/bin/python app.py"' in err
        and err.count("\n") == 1
    )
    assert "or a cdk.json in " in err and 'whose "app" is that command' in err


def test_without_app_the_app_of_cdk_json_is_run(
    user_app: str, tmp_path: Path, synthesized: Mapping[str, Path]
) -> None:
    # GIVEN a folder whose cdk.json names the app's command, as the CDK CLI reads it (the
    # app's assembly, as synthesized)
    (tmp_path / "app.py").write_text(replay(synthesized["app"]))
    (tmp_path / "cdk.json").write_text(json.dumps({"app": user_app, "output": "cdk.out"}))
    # WHEN local runs there without --app (an unknown --stack stops it before deploying)
    code, out, err = run("local", "--stack", "Nope")
    # THEN cdk.json's app was synthesized: its stacks are the ones listed
    assert out == f'synthesizing {user_app} (cdk.json\'s "app") in {tmp_path} ...\n'
    assert (code, err) == (
        2,
        "ddb-capacity: error: --stack: got 'Nope'; expected one of the app's stacks: "
        "['Scaled', 'Plain']\n",
    )
    # AND an app of cdk.json that fails is named as cdk.json's
    (tmp_path / "app.py").write_text("raise SystemExit('bad config')\n")
    code, _, err = run("local")
    assert code == 2 and "bad config" in err, err
    assert err.startswith(
        f'ddb-capacity: error: --app: got none; cdk.json\'s "app" is {user_app!r}; the app '
        "failed to synthesize"
    )


def test_an_app_that_fails_to_synth_is_named(
    user_app: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN an app that raises when it runs, once aws-cdk-lib is loaded (and jsii's notice of
    # an old Node.js not silenced, as in a user's shell)
    (tmp_path / "app.py").write_text(
        "import aws_cdk\n\nraise SystemExit('no stacks here: bad config')\n"
    )
    for name in (
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION",
        "JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION",
    ):
        monkeypatch.delenv(name, raising=False)
    # WHEN local runs it
    code, out, err = run("local", "--app", user_app)
    # THEN the error names --app, says the app failed to synthesize, shows the command as
    # given (quoted) and the app's own output, without the Node.js notice
    assert code == 2, err
    assert err.startswith(
        f"ddb-capacity: error: --app: got {user_app!r}; the app failed to synthesize (run by "
    )
    assert f"cdk synth --app {shlex.quote(user_app)} --output" in err
    assert "no stacks here: bad config" in err
    assert "!!" not in err


def test_an_app_run_by_a_python_without_the_library_gets_a_hint(
    user_app: str, tmp_path: Path
) -> None:
    # GIVEN an app run by a Python that cannot import aws-cdk-lib (no site-packages)
    (tmp_path / "app.py").write_text(APP)
    # WHEN local runs it
    code, _, err = run("local", "--app", f"{sys.executable} -S app.py")
    # THEN the app's failure ends with a hint naming the Python to run it with
    assert code == 2 and "No module named 'aws_cdk'" in err, err
    assert err.rstrip().endswith(
        f"hint: the app's Python cannot import aws_cdk: run it with the Python they are "
        f'installed in, e.g. --app "{sys.executable} app.py" (the one this command runs on), '
        "or activate that environment first"
    ), err


def test_the_decision_report_counts_in_words_and_keeps_its_columns() -> None:
    # GIVEN a tick of two tables with one change, a decision on a GSI of a long name
    summary = {"tables": 2, "changes": [{}], "failed": []}
    row = {"event": "decision", "table": "Orders", "from": 5, "reason": "held"}
    lines = [
        {**row, "index": None, "dimension": "read", "via": "update-table", "to": 5},
        {**row, "index": "byCustomerAndDay", "dimension": "write", "via": "target-min", "to": 9},
    ]
    # WHEN reported
    counts, _, header, *rows = local.decision_report(summary, lines, {}).splitlines()
    # THEN its counts read as words, and each row's dimension is under the header's "dim"
    assert counts == "one scaler tick: 2 tables managed, 1 change, 0 failed"
    assert [r.index(f" {d} ") for r, d in zip(rows, ("read", "write"), strict=True)] == [
        header.index(" dim ")
    ] * 2


def test_the_node_notice_is_left_out_of_what_an_error_shows() -> None:
    notice = [
        "b'" + "!" * 20 + "\\n'",
        "b'!!  Node 20 is end-of-life and not supported anymore by this software.  !!\\n'",
        "b'" + "!" * 20 + "\\n'",
    ]
    output = "\n".join(["Traceback (most recent call last):", *notice, "SystemExit: bad config"])
    assert local_aws.without_node_notice(output) == (
        "Traceback (most recent call last):\nSystemExit: bad config"
    )
    assert local_aws.without_node_notice("a != b !! c") == "a != b !! c"


def test_an_unknown_stack_is_named_with_the_apps_stacks(
    user_app: str, tmp_path: Path, synthesized: Mapping[str, Path]
) -> None:
    # GIVEN the user's app (its assembly, as synthesized), WHEN local runs an unknown stack
    (tmp_path / "app.py").write_text(replay(synthesized["app"]))
    code, out, err = run("local", "--app", user_app, "--stack", "Nope")
    assert code == 2, err
    assert err == (
        "ddb-capacity: error: --stack: got 'Nope'; expected one of the app's stacks: "
        "['Scaled', 'Plain']\n"
    )
    assert "deploying" not in out


def test_a_missing_cdk_cli_says_how_to_install_it(
    user_app: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # GIVEN no CDK CLI in the app's folder nor in this checkout
    monkeypatch.setattr(local_aws, "CDK_CLI", tmp_path / "none" / "cdk")
    code, out, err = run("local", "--app", user_app)
    assert (code, out) == (2, "")
    assert "the CDK CLI is missing: no node_modules/.bin/cdk in " in err
    assert f"npm install --save-dev --save-exact {local_aws.CDK_CLI_PIN}" in err
    assert "make install" in err  # run from this clone
    # installed from the wheel, there is no checkout to run make in
    monkeypatch.setattr(local_aws, "REPO", tmp_path / "site-packages")
    code, _, err = run("local", "--app", user_app)
    assert code == 2 and f"npm install --save-dev --save-exact {local_aws.CDK_CLI_PIN}" in err
    assert "make install" not in err


ENV_APP = """
import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb

from constructs_pkg import ThrottleAwareScaler

app = cdk.App()
stack = cdk.Stack(
    app, "Pinned", env=cdk.Environment(account="111111111111", region="eu-west-1")
)
orders = dynamodb.Table(
    stack,
    "Orders",
    partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
    billing_mode=dynamodb.BillingMode.PROVISIONED,
    read_capacity=7,
    write_capacity=3,
)
ThrottleAwareScaler(stack, "Scaler", tables=[orders])
app.synth()
"""

SEVERAL_APP = ENV_APP.replace(
    "app.synth()",
    'cdk.Stack(app, "Other", env=cdk.Environment(account="222222222222", region="eu-west-1"))\n'
    'cdk.Stack(app, "Loose")\n'
    'cdk.Stack(app, "Regional", env=cdk.Environment(region="eu-west-1"))\n'
    "app.synth()",
)
"""ENV_APP and three more stacks: one in another account, one without an env, one whose env
names a Region only"""


def test_a_stack_with_an_explicit_env_is_deployed_in_its_account_and_region(
    user_app: str, tmp_path: Path, synthesized: Mapping[str, Path]
) -> None:
    # GIVEN an app whose stack names its account and Region (its assembly, as synthesized)
    (tmp_path / "app.py").write_text(replay(synthesized["env"]))
    # WHEN local runs it
    code, out, err = run("local", "--app", user_app)
    # THEN it is deployed there (the local server is that account) and its scaler ticked
    assert (code, err) == (0, ""), out
    assert "one scaler tick: 1 table managed, 1 change, 0 failed" in out, out
    rows = [line.split() for line in out.splitlines() if line.startswith("  Pinned-Orders")]
    assert [row[2:6] for row in rows][-1] == ["write", "update-table", "3", "5"], out


QUALIFIER = "@aws-cdk/core:bootstrapQualifier"

SYNTHESIZER = (
    'cdk.DefaultStackSynthesizer(qualifier="local1", file_assets_bucket_name="local-assets")'
)
QUALIFIED_APP = APP.replace(
    'scaled = cdk.Stack(app, "Scaled")',
    f'scaled = cdk.Stack(app, "Scaled", synthesizer={SYNTHESIZER})',
).replace(
    'plain = cdk.Stack(app, "Plain")', f'plain = cdk.Stack(app, "Plain", synthesizer={SYNTHESIZER})'
)
"""APP on the bootstrap qualifier ``local1`` and the assets bucket ``local-assets``, as the
app of a cdk.json that names both synthesizes"""


def test_the_bootstrap_takes_the_settings_of_cdk_json(
    user_app: str, tmp_path: Path, synthesized: Mapping[str, Path]
) -> None:
    # GIVEN a cdk.json whose context names a bootstrap qualifier and whose toolkitBucket
    # names the assets bucket, and an app on both (its assembly, as synthesized)
    (tmp_path / "cdk.json").write_text(
        json.dumps(
            {
                "context": {"@aws-cdk/core:bootstrapQualifier": "local1"},
                "toolkitBucket": {"bucketName": "local-assets"},
            }
        )
    )
    (tmp_path / "app.py").write_text(replay(synthesized["qualified"]))
    # WHEN local runs it
    code, out, err = run("local", "--app", user_app)
    # THEN its place is bootstrapped with both: the stacks deploy (the scaler's asset
    # published to that bucket) and the scaler ticks
    assert (code, err) == (0, ""), out
    assert re.search(r"deployed Scaled: \d+ resources", out), out
    assert "one scaler tick: 1 table managed, 1 change, 0 failed" in out, out


def test_a_bootstrap_that_fails_is_named(
    user_app: str, tmp_path: Path, synthesized: Mapping[str, Path]
) -> None:
    # GIVEN a cdk.json naming an AWS profile there is none of (so the CLI has no credentials
    # to bootstrap with)
    (tmp_path / "cdk.json").write_text(json.dumps({"profile": "no-such-profile"}))
    (tmp_path / "app.py").write_text(replay(synthesized["app"]))
    # WHEN local runs the app
    code, out, err = run("local", "--app", user_app)
    # THEN the bootstrap's failure is the error, naming the place and the CLI's output
    assert code == 2, out
    assert f"the local deploy failed: cdk bootstrap {local.DEFAULT_PLACE} exited 1" in err, err
    assert "deployed" not in out


def test_stacks_in_several_accounts_are_refused_naming_each_accounts_stacks(
    user_app: str, tmp_path: Path, synthesized: Mapping[str, Path]
) -> None:
    # GIVEN stacks in two explicit accounts, one without an env and one whose env names a
    # Region only (both of the last deployed in moto's default account): SEVERAL_APP's
    # assembly, as synthesized
    (tmp_path / "app.py").write_text(replay(synthesized["several"]))
    # WHEN local runs without --stack
    code, out, err = run("local", "--app", user_app)
    # THEN it is refused before deploying, naming each account's stacks, and the stacks
    # without an account in their env as such
    assert code == 2 and "deploying" not in out
    assert err == (
        "ddb-capacity: error: --stack: got none; the stacks are in 3 accounts "
        "(111111111111: Pinned; "
        "123456789012: Loose (a stack without an env, deployed in moto's default account), "
        "Regional (a stack whose env names no account, deployed in moto's default account); "
        "222222222222: Other): the local server is one account, so choose the stacks of one "
        "account with --stack (repeatable)\n"
    )
    # AND stacks of two accounts named with --stack are refused too, naming the values given
    code, out, err = run("local", "--app", user_app, "--stack", "Loose", "--stack", "Other")
    assert code == 2 and "deploying" not in out
    assert err.startswith(
        "ddb-capacity: error: --stack: got ['Loose', 'Other']; the stacks are in 2 accounts "
        "(123456789012: Loose (a stack without an env, deployed in moto's default account); "
        "222222222222: Other)"
    ), err


def test_a_missing_moto_server_says_how_to_install_it(
    user_app: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(local_aws, "MOTO_SERVER", tmp_path / "none" / "moto_server")
    code, out, err = run("local", "--app", user_app)
    assert code == 2 and err.count("\n") == 1, err
    assert "moto's server is missing" in err and local_aws.MOTO_PIN in err


GLOBAL_APP = """
import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb

KEY = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
app = cdk.App()
main = cdk.Stack(app, "Global", env=cdk.Environment(region="us-east-1"))
dynamodb.TableV2(
    main, "Orders", partition_key=KEY, replicas=[dynamodb.ReplicaTableProps(region="eu-west-1")]
)
replica = cdk.Stack(app, "Replica", env=cdk.Environment(region="eu-west-1"))
replica.add_dependency(main)
solo = cdk.Stack(app, "Solo")
dynamodb.TableV2(solo, "Items", partition_key=KEY)  # no replica: a global table all the same
for name in ("Plain", "Audit"):
    dynamodb.Table(
        cdk.Stack(app, name), "Log", partition_key=KEY,
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
    )
app.synth()
"""


SETTLE_APP = """
import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb

from constructs_pkg import Capacity, PrewarmMethod, ProvisionedTable

KEY = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
app = cdk.App()
ProvisionedTable(
    cdk.Stack(app, "Settled"), "Orders", partition_key=KEY,
    read=Capacity(min_capacity=5, max_capacity=1_000, high_water_mark=1_000),
    write=Capacity(min_capacity=5, max_capacity=100),
    prewarm=PrewarmMethod.PROVISION_THEN_SETTLE,
)
dynamodb.Table(
    cdk.Stack(app, "Plain"), "Log", partition_key=KEY,
    billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
)
app.synth()
"""


def test_the_unsupported_types_are_those_motos_cloudformation_cannot_create() -> None:
    # moto's own CloudFormation answers: no model for each listed type but a custom
    # resource's, whose model waits for its function's answer (run in Docker); one for a table
    from moto.cloudformation.custom_model import CustomModel
    from moto.cloudformation.parsing import resource_class_from_type

    assert set(local.UNSUPPORTED) == {"AWS::DynamoDB::GlobalTable", "Custom::CapacitySettle"}
    assert resource_class_from_type("AWS::DynamoDB::GlobalTable") is None
    assert resource_class_from_type("Custom::CapacitySettle") is CustomModel
    assert resource_class_from_type("AWS::DynamoDB::Table") is not None


def test_a_stack_with_a_settle_step_is_refused_before_deploying(
    user_app: str, tmp_path: Path, synthesized: Mapping[str, Path]
) -> None:
    # GIVEN an app with a PROVISION_THEN_SETTLE table in one stack and a plain one in another
    (tmp_path / "app.py").write_text(replay(synthesized["settle"]))
    # WHEN local runs every stack
    code, out, err = run("local", "--app", user_app)
    # THEN one line names the stack, its settle resource, why, and the stack to deploy
    assert code == 2 and "deploying" not in out and err.count("\n") == 1, (out, err)
    assert err.startswith("ddb-capacity: error: --stack: got none; stack Settled holds "), err
    assert "(Custom::CapacitySettle at Settled/Orders/" in err, err
    assert "no PROVISION_THEN_SETTLE high-water mark can be tried locally" in err, err
    assert err.endswith("with --stack (repeatable): Plain\n"), err


def left_running(variable: str, value: str) -> list[str]:
    """The command lines of the processes, this one aside, started with ``variable`` set to
    ``value`` in their environment (what a command run here started, through any number of
    generations, and left running; a process ended but not yet reaped has no environment)."""
    mark = f"{variable}={value}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or entry.name == str(os.getpid()):
            continue
        try:
            if mark in (entry / "environ").read_bytes().split(b"\0"):
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:  # ended meanwhile, or not ours to read
            continue
    return found


def test_stacks_holding_a_global_table_are_refused_before_deploying(
    user_app: str, tmp_path: Path, synthesized: Mapping[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    if not Path("/proc/self/environ").is_file():
        pytest.skip("the check of what is left running reads /proc (Linux)")
    # GIVEN an app with a TableV2 and its replica, a stack that depends on it, a TableV2
    # without replicas, and stacks with plain tables (its assembly, as synthesized); each
    # process local starts marked by its environment
    (tmp_path / "app.py").write_text(replay(synthesized["global"]))
    monkeypatch.setenv("DDB_CAPACITY_TEST_RUN", tmp_path.name)
    # WHEN local runs every stack
    code, out, err = run("local", "--app", user_app)
    # THEN nothing it started is left running: its server, and the bootstrap it began beside
    # the synth, are stopped when the app is refused
    assert left_running("DDB_CAPACITY_TEST_RUN", tmp_path.name) == []
    # THEN one line names each stack holding one, the resource, why, and what can be deployed
    assert code == 2 and "deploying" not in out, out
    assert err == (
        "ddb-capacity: error: --stack: got none; "
        "stack Global holds OrdersA9B65338 (AWS::DynamoDB::GlobalTable at Global/Orders/Resource); "
        "stack Solo holds Items5C12978B (AWS::DynamoDB::GlobalTable at Solo/Items/Resource): "
        "the local moto server cannot create them (moto's CloudFormation has no global tables: "
        "no TableV2, with replicas or not, can be tried locally); the stacks that can be "
        "deployed locally, with --stack (repeatable): Plain, Audit\n"
    )
    # AND a stack depending on one is refused, naming the stack it depends on
    code, out, err = run("local", "--app", user_app, "--stack", "Replica")
    assert code == 2 and "deploying" not in out and err.count("\n") == 1, err
    assert err.startswith(
        "ddb-capacity: error: --stack: got 'Replica'; Replica depends on stack Global, which "
        "holds OrdersA9B65338 (AWS::DynamoDB::GlobalTable at Global/Orders/Resource): the local "
        "moto server cannot create it ("
    ), err


def test_each_stack_given_is_deployed_and_no_other(
    user_app: str, tmp_path: Path, synthesized: Mapping[str, Path]
) -> None:
    # GIVEN the app with global tables, and two stacks without one (its assembly, as
    # synthesized)
    (tmp_path / "app.py").write_text(replay(synthesized["global"]))
    # WHEN local runs with --stack given twice
    code, out, err = run("local", "--app", user_app, "--stack", "Plain", "--stack", "Audit")
    # THEN both are deployed, and none of the others
    assert (code, err) == (0, ""), out
    assert "deploying Plain, Audit to a local moto server" in out, out
    assert re.search(r"deployed Plain: \d+ resources", out), out
    assert re.search(r"deployed Audit: \d+ resources", out), out
    assert not re.search(r"deployed (Global|Replica|Solo)\b", out), out


def test_the_local_extra_installs_the_moto_server_the_command_asks_for() -> None:
    """``pip install '.[local]'`` brings what ``ddb-capacity local`` needs: the extra is the
    pin its error names (`local_aws.MOTO_PIN`)."""
    import tomllib

    from tests.support.shape import ROOT

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert extras["local"] == [local_aws.MOTO_PIN]
