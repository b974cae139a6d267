"""The fast path's hook without editing the application: ``ddb-capacity-instrument -- CMD``
starts a plain boto3 program (not one line of it changed) with the hook installed at
start-up, against a real moto server; its reports reach the signals function as Lambda
invocations (a local HTTP server that answers as Lambda's Invoke does)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ddb_capacity_runtime.core.names import METRICS_NAMESPACE, METRICS_STORE_ENV
from ddb_capacity_runtime.core.report_batch import reports_of
from ddb_capacity_runtime.core.surge_report import SIGNALS_ENV, parse_report
from ddb_capacity_runtime.fast_path.hook import HOOK_FAILURES
from ddb_capacity_runtime.instrument import BOOTSTRAP, InstrumentError, environment, main
from ddb_capacity_tools.local_aws import REGION
from tests.support.signals_hook import FakeLambda, ddb, make_table

LAUNCHER = Path(sys.executable).with_name("ddb-capacity-instrument")

#: A program that knows nothing of the hook: the default session's client, and a client
#: of a Session of its own, each write to a table.
APP = textwrap.dedent(
    """
    import sys
    import boto3

    endpoint, first, second = sys.argv[1:4]
    boto3.client("dynamodb", endpoint_url=endpoint).put_item(
        TableName=first, Item={"pk": {"S": "a"}, "g": {"S": "x"}}
    )
    boto3.Session().client("dynamodb", endpoint_url=endpoint).put_item(
        TableName=second, Item={"pk": {"S": "b"}, "g": {"S": "x"}}
    )
    print("app done")
    """
)


def _env(fake: FakeLambda, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPACITY_")}
    env.update(
        AWS_ACCESS_KEY_ID="test",
        AWS_SECRET_ACCESS_KEY="test",  # noqa: S106 (moto takes any key)
        AWS_DEFAULT_REGION=REGION,
        AWS_ENDPOINT_URL_LAMBDA=fake.url,
        **extra,
    )
    env.pop("AWS_ENDPOINT_URL", None)
    return env


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 (the project's own launcher)
        args, env=env, cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture
def fake() -> object:
    server = FakeLambda()
    yield server
    server.close()


@pytest.fixture
def app(moto_endpoint: str, tmp_path: Path) -> list[str]:
    """The program's file in ``tmp_path`` and its arguments: the endpoint and two new
    tables."""
    client = ddb(moto_endpoint)
    (tmp_path / "app.py").write_text(APP)
    return ["app.py", moto_endpoint, make_table(client), make_table(client)]


def test_a_program_started_through_the_launcher_reports_without_a_change(
    app: list[str], fake: FakeLambda, tmp_path: Path
) -> None:
    first, second = app[2:]
    done = _run(
        [
            str(LAUNCHER),
            "--function",
            "capacity-signals",
            "--interval",
            "1",
            "--",
            sys.executable,
            *app,
        ],
        _env(fake),
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "app done" in done.stdout
    assert fake.requests, done.stderr
    paths = {path for path, _, _ in fake.requests}
    assert paths == {"/2015-03-31/functions/capacity-signals/invocations"}
    reports = [
        parse_report(raw, time.time())
        for _, _, body in fake.requests
        for raw in reports_of(json.loads(body))
    ]
    written = {
        r.table for r in reports if any(d.dimension == "write" and d.units > 0 for d in r.dims)
    }
    assert written == {first, second}  # the default session's client and the app's own Session
    assert len({r.process for r in reports}) == 1  # one watcher for the whole process


def test_the_hook_looks_for_credentials_only_when_it_first_reports(
    fake: FakeLambda, tmp_path: Path
) -> None:
    # GIVEN credentials that only a credential process gives (as a credential helper or the
    # instance metadata service would, which may take seconds), noting each time it runs
    noted = tmp_path / "looked-up"
    config = tmp_path / "config"
    answer = '{"Version": 1, "AccessKeyId": "AKID", "SecretAccessKey": "secret"}'
    config.write_text(
        f"[default]\nregion = {REGION}\n"
        f"credential_process = sh -c 'echo x >> {noted}; echo {json.dumps(answer)[1:-1]}'\n"
    )
    env = _env(fake, AWS_CONFIG_FILE=str(config), AWS_SHARED_CREDENTIALS_FILE=os.devnull)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        env.pop(name, None)
    # WHEN a program that never calls AWS starts through the launcher
    program = [sys.executable, "-c", "print('hello')"]
    done = _run([str(LAUNCHER), "--function", "capacity-signals", "--", *program], env, tmp_path)
    # THEN it runs, and nothing looked for credentials: at its start, the hook makes no
    # Lambda client (its sending thread makes one for its first report)
    assert (done.returncode, done.stdout) == (0, "hello\n"), done.stderr
    assert not noted.exists()
    # AND the same credentials are found when a program asks for them (the setup works)
    ask = "import boto3; print(boto3.Session().get_credentials().access_key)"
    done = _run([sys.executable, "-c", ask], env, tmp_path)
    assert (done.stdout, noted.exists()) == ("AKID\n", True), done.stderr


def test_without_a_signals_function_the_program_runs_and_one_line_says_why(
    app: list[str], fake: FakeLambda, tmp_path: Path
) -> None:
    env = _env(fake, PYTHONPATH=str(BOOTSTRAP))  # as the launcher sets it, without the name
    done = _run([sys.executable, *app], env, tmp_path)
    assert done.returncode == 0 and "app done" in done.stdout
    assert f"hook not installed: {SIGNALS_ENV}: not set" in done.stderr
    assert fake.requests == []


STORE = "orders-holds"
"""The hold store a function granted the signals function is told of (`METRICS_STORE_ENV`)."""


def _hook_failures(stdout: str, series: tuple[str, str] = ("StateStore", STORE)) -> int:
    """The ``HookFailures`` counted by the EMF lines of a program's standard output, each
    for the deployment ``series`` names (dimension, value: by default `STORE`'s, dimension
    ``StateStore``), as the library's other EMF counts are written."""
    lines = [json.loads(x) for x in stdout.splitlines() if x.startswith('{"_aws"')]
    for line in lines:
        (metrics,) = line["_aws"]["CloudWatchMetrics"]
        assert metrics == {
            "Namespace": METRICS_NAMESPACE,
            "Dimensions": [[series[0]]],
            "Metrics": [{"Name": HOOK_FAILURES}],
        }
        assert line[series[0]] == series[1]
    return sum(int(line.get(HOOK_FAILURES, 0)) for line in lines)


BAD_SETTINGS = {
    "CAPACITY_SIGNALS_INTERVAL": ("600", "got '600'; expected seconds from 1 to 60"),
    # a list of no table at all: refused (watch(tables=[]) is), never "every table"
    "CAPACITY_SIGNALS_TABLES": (
        " , ",
        "got ','; expected at least one table name (unset it to report every table)",
    ),
}


@pytest.mark.parametrize("variable", sorted(BAD_SETTINGS))
@pytest.mark.parametrize("in_lambda", [True, False])
def test_a_bad_setting_never_stops_the_program_and_is_counted_in_a_lambda_function(
    app: list[str], fake: FakeLambda, tmp_path: Path, in_lambda: bool, variable: str
) -> None:
    # GIVEN a program whose hook refuses its settings, in a Lambda function or not
    value, message = BAD_SETTINGS[variable]
    env = _env(
        fake,
        PYTHONPATH=str(BOOTSTRAP),
        CAPACITY_SIGNALS="capacity-signals",
        **{variable: value},
        **{METRICS_STORE_ENV: STORE},
        **({"AWS_LAMBDA_FUNCTION_NAME": "orders-worker"} if in_lambda else {}),
    )
    # WHEN it runs
    done = _run([sys.executable, *app], env, tmp_path)
    # THEN it runs, and in a Lambda function the hook not installed is one HookFailures
    # (the count the fast path's alarm watches: the function sends it nothing); elsewhere
    # the line on standard error is all, and nothing joins the program's own output
    assert done.returncode == 0 and "app done" in done.stdout
    assert done.stderr == f"ddb-capacity-instrument: hook not installed: {variable}: {message}\n"
    assert fake.requests == []
    assert _hook_failures(done.stdout) == (1 if in_lambda else 0)
    assert in_lambda or done.stdout == "app done\n"


def test_a_library_that_cannot_be_imported_is_counted_too(fake: FakeLambda, tmp_path: Path) -> None:
    # GIVEN a Lambda function whose copy of the library fails to import (first on the path)
    broken = tmp_path / "broken" / "ddb_capacity_runtime"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('a broken copy')\n")
    env = _env(
        fake,
        PYTHONPATH=f"{BOOTSTRAP}{os.pathsep}{broken.parent}",
        CAPACITY_SIGNALS="capacity-signals",
        AWS_LAMBDA_FUNCTION_NAME="orders-worker",
        **{METRICS_STORE_ENV: STORE},
    )
    # WHEN a program starts, and imports boto3
    done = _run([sys.executable, "-c", "import boto3; print('app done')"], env, tmp_path)
    # THEN it runs, the reason is on standard error, and the failure is counted
    assert done.returncode == 0 and "app done" in done.stdout
    assert "hook not installed: a broken copy" in done.stderr
    assert _hook_failures(done.stdout) == 1


SIGNALS_ARN = f"arn:aws:lambda:{REGION}:123456789012:function:capacity-signals"


@pytest.mark.parametrize("broken", ["setting", "library"])
def test_a_hook_granted_through_its_role_alone_counts_for_its_signals_function(
    app: list[str], fake: FakeLambda, tmp_path: Path, broken: str
) -> None:
    # GIVEN a Lambda function granted the signals function through its role alone (told its
    # ARN, no hold store), whose hook cannot be installed: a setting it refuses, or a copy
    # of the library that fails to import
    extra = {"CAPACITY_SIGNALS_INTERVAL": "600"} if broken == "setting" else {}
    path = f"{BOOTSTRAP}{os.pathsep}{BOOTSTRAP.parent.parent}"  # this library, whatever else
    if broken == "library":
        copy = tmp_path / "broken" / "ddb_capacity_runtime"
        copy.mkdir(parents=True)
        (copy / "__init__.py").write_text("raise ImportError('a broken copy')\n")
        path = f"{BOOTSTRAP}{os.pathsep}{copy.parent}"
    env = _env(
        fake,
        PYTHONPATH=path,
        CAPACITY_SIGNALS=SIGNALS_ARN,
        AWS_LAMBDA_FUNCTION_NAME="orders-worker",
        **extra,
    )
    # WHEN it runs: THEN it runs, and the hook not installed is counted for the signals
    # function it would have reported to (its name), which the fast path's alarm watches
    done = _run([sys.executable, *app], env, tmp_path)
    assert done.returncode == 0 and "app done" in done.stdout
    assert _hook_failures(done.stdout, ("SignalsFunction", "capacity-signals")) == 1


@pytest.mark.parametrize("signals", ["orders signals", "arn:aws:lambda:x:1:function:", "a" * 65])
def test_a_hook_told_no_function_name_counts_with_no_dimension_as_the_library_does(
    fake: FakeLambda, tmp_path: Path, signals: str
) -> None:
    # GIVEN a Lambda function granted the signals function through its role alone, told
    # something no Lambda function is named by, whose copy of the library fails to import
    copy = tmp_path / "broken" / "ddb_capacity_runtime"
    copy.mkdir(parents=True)
    (copy / "__init__.py").write_text("raise ImportError('a broken copy')\n")
    env = _env(
        fake,
        PYTHONPATH=f"{BOOTSTRAP}{os.pathsep}{copy.parent}",
        CAPACITY_SIGNALS=signals,
        AWS_LAMBDA_FUNCTION_NAME="orders-worker",
    )
    # WHEN a program starts, and imports boto3
    done = _run([sys.executable, "-c", "import boto3; print('app done')"], env, tmp_path)
    # THEN the hook not installed is counted as the library counts a hook told that name
    # (`failures.series`: no function named, no dimension), not for a signals function of
    # that name, which no alarm watches
    assert done.returncode == 0 and "app done" in done.stdout
    (line,) = [json.loads(x) for x in done.stdout.splitlines() if x.startswith('{"_aws"')]
    (metrics,) = line["_aws"]["CloudWatchMetrics"]
    assert metrics["Dimensions"] == [[]] and "SignalsFunction" not in line
    assert line[HOOK_FAILURES] == 1


def test_a_hook_that_cannot_start_says_so_in_one_line_and_the_program_runs(
    fake: FakeLambda, tmp_path: Path
) -> None:
    """No Region anywhere: boto3 cannot make the hook's client. The program runs; standard
    error has the one line the guide promises, not a second, bare event name from logging's
    last resort."""
    env = _env(fake, PYTHONPATH=str(BOOTSTRAP), CAPACITY_SIGNALS="capacity-signals")
    for name in ("AWS_DEFAULT_REGION", "AWS_REGION"):
        env.pop(name, None)
    env.update(AWS_CONFIG_FILE=str(tmp_path / "none"), AWS_SHARED_CREDENTIALS_FILE="/dev/null")
    done = _run([sys.executable, "-c", "import boto3; print('app done')"], env, tmp_path)
    assert done.returncode == 0 and "app done" in done.stdout
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ddb-capacity-instrument: hook not installed:")
    assert fake.requests == []


def test_the_programs_own_sitecustomize_still_runs(fake: FakeLambda, tmp_path: Path) -> None:
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("import os\nos.environ['OWN_SITE'] = 'ran'\n")
    env = _env(fake, PYTHONPATH=str(own), CAPACITY_SIGNALS="capacity-signals")
    done = _run(
        [
            str(LAUNCHER),
            "--",
            sys.executable,
            "-c",
            "import os, sys, boto3, sitecustomize; from ddb_capacity_runtime import instrument; "
            "print(os.environ.get('OWN_SITE'), bool(instrument._installed), "
            "sitecustomize.__file__)",
        ],
        env,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    # and `import sitecustomize` finds the program's own, not the hook's
    assert done.stdout.split() == ["ran", "True", str(own / "sitecustomize.py")]


def test_the_launcher_refuses_what_the_hook_could_not_use(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SIGNALS_ENV, raising=False)
    assert main(["--function", "f"]) == 2
    assert "no command given after --" in capsys.readouterr().err
    assert main(["--function", "f", "--interval", "soon", "--", "python"]) == 2
    assert "--interval (CAPACITY_SIGNALS_INTERVAL): got 'soon'; expected seconds from 1 to 60" in (
        capsys.readouterr().err
    )
    # without a function too: a bad setting is refused before the program starts
    assert main(["--interval", "600", "--", "python"]) == 2
    assert "--interval (CAPACITY_SIGNALS_INTERVAL): got '600'" in capsys.readouterr().err
    assert main(["--function", "f", "--mode", "all", "--", "python"]) == 2
    assert "--mode (CAPACITY_SIGNALS_MODE): got 'all'; expected one of consumed, throttles" in (
        capsys.readouterr().err
    )
    assert main(["--function", "f", "--", "no-such-command-here"]) == 127
    assert "no-such-command-here" in capsys.readouterr().err
    with pytest.raises(
        InstrumentError, match="--tables \\(CAPACITY_SIGNALS_TABLES\\): got 'a\\\\x00b'"
    ):
        environment({}, function="f", tables="a\x00b")


def test_the_bootstrap_folder_goes_first_on_the_path() -> None:
    env = environment({"PYTHONPATH": "/app"}, function="capacity-signals")
    assert env["PYTHONPATH"].split(os.pathsep) == [str(BOOTSTRAP), "/app"]
    assert env[SIGNALS_ENV] == "capacity-signals"
    assert (BOOTSTRAP / "sitecustomize.py").is_file()


def test_the_lambda_exec_wrapper_starts_the_runtime_with_the_hook(
    app: list[str], fake: FakeLambda, tmp_path: Path
) -> None:
    """The layer's layout: the wrapper at /opt/ddb-capacity-instrument, the run-time package
    under /opt/python; Lambda runs the wrapper with the runtime's own command."""
    import shutil

    opt = tmp_path / "opt"
    shutil.copytree(BOOTSTRAP.parent, opt / "python" / "ddb_capacity_runtime")
    wrapper = opt / "ddb-capacity-instrument"
    shutil.copy2(BOOTSTRAP / "lambda-exec-wrapper", wrapper)
    env = _env(fake, CAPACITY_SIGNALS="capacity-signals", CAPACITY_SIGNALS_INTERVAL="1")
    env["PYTHONPATH"] = str(opt / "python")  # as Lambda puts /opt/python on the path
    done = _run(
        [str(wrapper), sys.executable, "-B", *app],
        env,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    reports = [
        parse_report(raw, time.time())
        for _, _, body in fake.requests
        for raw in reports_of(json.loads(body))
    ]
    assert {r.table for r in reports} == set(app[2:])


def test_in_throttles_mode_the_program_s_requests_are_left_as_they_are(
    moto_endpoint: str, fake: FakeLambda, tmp_path: Path
) -> None:
    client = ddb(moto_endpoint)
    table = make_table(client)
    (tmp_path / "app.py").write_text(
        textwrap.dedent(
            """
            import sys
            import boto3

            client = boto3.client("dynamodb", endpoint_url=sys.argv[1])
            sent = []
            client.meta.events.register("before-send.dynamodb", lambda request, **_: sent.append(request.body))
            client.put_item(TableName=sys.argv[2], Item={"pk": {"S": "a"}, "g": {"S": "x"}})
            print(any(b"ReturnConsumedCapacity" in body for body in sent))
            """
        )
    )
    runs = {}
    for mode in ("consumed", "throttles"):
        done = _run(
            [
                str(LAUNCHER),
                "--function",
                "capacity-signals",
                "--mode",
                mode,
                "--",
                sys.executable,
                "app.py",
                moto_endpoint,
                table,
            ],
            _env(fake),
            tmp_path,
        )
        assert done.returncode == 0, done.stderr
        runs[mode] = done.stdout.split()[-1]
    assert runs == {"consumed": "True", "throttles": "False"}


@pytest.mark.parametrize(
    ("option", "value", "variable"),
    [
        ("--interval", "600", "CAPACITY_SIGNALS_INTERVAL"),
        ("--interval", "0", "CAPACITY_SIGNALS_INTERVAL"),
        ("--interval", "0.5", "CAPACITY_SIGNALS_INTERVAL"),
        ("--interval", "nan", "CAPACITY_SIGNALS_INTERVAL"),
        ("--interval", "inf", "CAPACITY_SIGNALS_INTERVAL"),
        ("--interval", "-5", "CAPACITY_SIGNALS_INTERVAL"),
        ("--process", "a b", "CAPACITY_SIGNALS_PROCESS"),
        ("--process", "p" * 41, "CAPACITY_SIGNALS_PROCESS"),
        ("--process", "a/b", "CAPACITY_SIGNALS_PROCESS"),
        ("--tables", "Orders,no such table", "CAPACITY_SIGNALS_TABLES"),
        ("--tables", "ab", "CAPACITY_SIGNALS_TABLES"),
        ("--tables", "t" * 256, "CAPACITY_SIGNALS_TABLES"),
        ("--tables", ",,,", "CAPACITY_SIGNALS_TABLES"),
        ("--tables", "", "CAPACITY_SIGNALS_TABLES"),
        ("--tables", "  ", "CAPACITY_SIGNALS_TABLES"),
        ("--interval", "", "CAPACITY_SIGNALS_INTERVAL"),
        ("--process", " ", "CAPACITY_SIGNALS_PROCESS"),
        ("--mode", "", "CAPACITY_SIGNALS_MODE"),
        ("--function", "", "CAPACITY_SIGNALS"),
    ],
)
def test_the_launcher_refuses_before_starting_what_the_hook_would_refuse(
    option: str,
    value: str,
    variable: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(SIGNALS_ENV, "capacity-signals")
    # main() returns only when it refuses: a command it accepted would replace this process
    assert main([option, value, "--", "no-such-command-here"]) == 2
    err = capsys.readouterr().err
    # named as typed: the option, then the variable it sets
    assert err.startswith(
        f"ddb-capacity-instrument: error: {option} ({variable}): got {value!r:.80}"
    )
    assert "no-such-command-here" not in err and err.count("\n") == 1


def test_without_a_function_the_launcher_warns_and_runs_the_program_unhooked(
    fake: FakeLambda, tmp_path: Path
) -> None:
    env = _env(fake)
    probe = (
        "import os, sys; print(os.environ.get('PYTHONPATH', ''), "
        "any(m.startswith('ddb_capacity_runtime') for m in sys.modules)); sys.exit(3)"
    )
    done = _run([str(LAUNCHER), "--", sys.executable, "-c", probe], env, tmp_path)
    assert done.returncode == 3  # the program's own status: it ran
    assert str(BOOTSTRAP) not in done.stdout and done.stdout.split()[-1] == "False"
    assert "warning: no signals function (--function or CAPACITY_SIGNALS)" in done.stderr


def test_a_program_that_is_not_python_runs_with_a_note_that_only_python_is_hooked(
    fake: FakeLambda, tmp_path: Path
) -> None:
    env = _env(fake)
    # GIVEN a shell script (a program the hook cannot load into) and a Python script
    shell, script = tmp_path / "job.sh", tmp_path / "job"
    shell.write_text("#!/bin/sh\necho shell done\nexit 4\n")
    script.write_text(f"#!{sys.executable}\nprint('script done')\n")
    for made in (shell, script):
        made.chmod(0o755)
    note = "is not Python: the hook loads only into the Python programs it starts"
    # WHEN each runs through the launcher with a signals function
    hooked = [str(LAUNCHER), "--function", "capacity-signals", "--"]
    done = _run([*hooked, str(shell)], env, tmp_path)
    # THEN the shell script runs, its status its own, with one note on stderr
    assert (done.returncode, done.stdout) == (4, "shell done\n")
    assert done.stderr == f"ddb-capacity-instrument: note: {shell} {note}\n"
    # AND so does a program that is no script at all (a binary)
    done = _run([*hooked, "/bin/sh", "-c", "exit 5"], env, tmp_path)
    assert (done.returncode, done.stderr) == (5, f"ddb-capacity-instrument: note: /bin/sh {note}\n")
    # AND a Python script (its #! line, or pip's /bin/sh launcher of a long path), an
    # interpreter, or either after env, gets no note
    launcher = tmp_path / "tool"
    trampoline = "'''exec' " + sys.executable + ' "$0" "$@"\n' + "' '''\n"
    launcher.write_text("#!/bin/sh\n" + trampoline + "print('script done')\n")
    launcher.chmod(0o755)
    for command in (
        [str(script)],
        [sys.executable, str(script)],
        [str(launcher)],
        ["env", "-u", "X", "A=1", str(script)],
        ["/usr/bin/env", sys.executable, str(script)],
    ):
        done = _run([*hooked, *command], env, tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (0, "script done\n", ""), command
    # AND without a signals function the warning is the only line: nothing is hooked
    done = _run([str(LAUNCHER), "--", str(shell)], env, tmp_path)
    assert done.returncode == 4 and note not in done.stderr
    assert done.stderr.count("\n") == 1 and "warning: no signals function" in done.stderr


def test_the_bootstrap_without_its_settings_imports_nothing(
    fake: FakeLambda, tmp_path: Path
) -> None:
    env = _env(fake, PYTHONPATH=str(BOOTSTRAP))  # inherited by a child, the hook's name not
    probe = (
        "import sys; print(sorted(m for m in sys.modules "
        "if m.startswith(('ddb_capacity', 'boto', 'botocore'))))"
    )
    done = _run([sys.executable, "-c", probe], env, tmp_path)
    assert done.returncode == 0
    assert done.stdout.strip() == "[]"
    assert f"hook not installed: {SIGNALS_ENV}: not set" in done.stderr
    # AND in a Lambda function, where the layer's wrapper expects it set, it is counted,
    # for the deployment that instrumented the function (its hold store, which the
    # construct names in CAPACITY_METRICS_STORE)
    env["AWS_LAMBDA_FUNCTION_NAME"] = "orders-worker"
    env[METRICS_STORE_ENV] = STORE
    done = _run([sys.executable, "-c", "print('app done')"], env, tmp_path)
    assert (done.returncode, _hook_failures(done.stdout)) == (0, 1)
    assert "app done" in done.stdout


def test_the_hook_waits_for_boto3_and_a_program_that_never_imports_it_pays_nothing(
    fake: FakeLambda, tmp_path: Path
) -> None:
    # GIVEN the hook set, with a setting it refuses (so its line shows when it installs)
    env = _env(
        fake,
        PYTHONPATH=str(BOOTSTRAP),
        CAPACITY_SIGNALS="capacity-signals",
        CAPACITY_SIGNALS_INTERVAL="600",
    )
    loaded = "print(sorted(m for m in sys.modules if m.startswith(('ddb_capacity', 'boto'))))"
    # WHEN a program never imports boto3: nothing of boto3 or the library is imported, and
    # nothing is said
    done = _run([sys.executable, "-c", f"import sys; {loaded}"], env, tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "[]\n", "")
    # WHEN it imports boto3 later: the hook installs then (here it refuses its setting)
    program = f"import sys; {loaded}; import boto3; print('boto3' in sys.modules)"
    done = _run([sys.executable, "-c", program], env, tmp_path)
    assert done.stdout == "[]\nTrue\n"
    assert done.stderr == (
        "ddb-capacity-instrument: hook not installed: CAPACITY_SIGNALS_INTERVAL: got '600'; "
        "expected seconds from 1 to 60\n"
    )
    # AND with good settings, the Session it makes then is hooked
    del env["CAPACITY_SIGNALS_INTERVAL"]
    program = (
        "import boto3; from ddb_capacity_runtime import instrument; "
        "print(bool(instrument._installed))"
    )
    done = _run([sys.executable, "-c", program], env, tmp_path)
    assert (done.stdout, done.stderr) == ("True\n", "")


def test_the_hook_start_up_benchmark_runs_in_its_quick_mode(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from benchmarks import hook_startup

    assert hook_startup.main(["--quick"]) == 0
    printed = capsys.readouterr().out
    assert "without the hook" in printed and "the hook's path, unset" in printed
