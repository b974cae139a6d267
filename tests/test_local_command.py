"""``ddb-capacity local``: a user's own app, written here (not the project's example),
synthesized and deployed by the pinned CDK CLI to the command's own moto server, each
scaler ticked once; and the bad input it names before deploying anything."""

from __future__ import annotations

import io
import re
import socket
import sys
from pathlib import Path

import pytest

from ddb_capacity_tools import local_aws
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
    assert re.search(r"deployed Scaled: \d+ resources, 0 scalable targets", out), out
    assert re.search(r"Scaled/ScalerFunction\w+ \(", out), out
    assert "one scaler tick: 1 tables managed, 1 changes, 0 failed" in out, out
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


def test_no_app_is_named_with_an_example() -> None:
    code, out, err = run("local")
    assert (code, out) == (2, "")
    assert err.startswith("ddb-capacity: error: --app: got ''; expected the command that runs")
    assert '"python app.py"' in err and err.count("\n") == 1


def test_an_app_that_fails_to_synth_is_named(user_app: str, tmp_path: Path) -> None:
    # GIVEN an app that raises when it runs
    (tmp_path / "app.py").write_text("raise SystemExit('no stacks here: bad config')\n")
    # WHEN local runs it
    code, out, err = run("local", "--app", user_app)
    # THEN the error names --app, the command, what it takes, and the app's own output
    assert code == 2, err
    assert err.startswith(f"ddb-capacity: error: --app: got {user_app!r}; expected a command ")
    assert "no stacks here: bad config" in err


def test_an_unknown_stack_is_named_with_the_apps_stacks(user_app: str) -> None:
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
    assert f"npm install --save-dev {local_aws.CDK_CLI_PIN}" in err
    assert "make install" in err  # run from this clone
    # installed from the wheel, there is no checkout to run make in
    monkeypatch.setattr(local_aws, "REPO", tmp_path / "site-packages")
    code, _, err = run("local", "--app", user_app)
    assert code == 2 and f"npm install --save-dev {local_aws.CDK_CLI_PIN}" in err
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


def test_a_stack_with_an_explicit_env_is_deployed_in_its_account_and_region(
    user_app: str, tmp_path: Path
) -> None:
    # GIVEN an app whose stack names its account and Region
    (tmp_path / "app.py").write_text(ENV_APP)
    # WHEN local runs it
    code, out, err = run("local", "--app", user_app)
    # THEN it is deployed there (the local server is that account) and its scaler ticked
    assert (code, err) == (0, ""), out
    assert "one scaler tick: 1 tables managed, 1 changes, 0 failed" in out, out
    rows = [line.split() for line in out.splitlines() if line.startswith("  Pinned-Orders")]
    assert [row[2:6] for row in rows][-1] == ["write", "update-table", "3", "5"], out


def test_stacks_in_two_accounts_are_refused_naming_them(user_app: str, tmp_path: Path) -> None:
    two = ENV_APP.replace(
        "app.synth()",
        'cdk.Stack(app, "Other", env=cdk.Environment(account="222222222222", '
        'region="eu-west-1"))\napp.synth()',
    )
    (tmp_path / "app.py").write_text(two)
    code, out, err = run("local", "--app", user_app)
    assert code == 2 and "deploying" not in out
    assert "accounts ['111111111111', '222222222222']" in err and "--stack" in err


def test_a_missing_moto_server_says_how_to_install_it(
    user_app: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(local_aws, "MOTO_SERVER", tmp_path / "none" / "moto_server")
    code, out, err = run("local", "--app", user_app)
    assert code == 2 and err.count("\n") == 1, err
    assert "moto's server is missing" in err and local_aws.MOTO_PIN in err
