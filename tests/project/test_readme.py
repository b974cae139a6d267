"""The README is a short entry point whose quick start is real: it is run as written and
synthesizes. The guides' examples are checked in tests/project/test_docs.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.shape import ROOT

README = ROOT / "README.md"
MAX_LINES = 300


def test_readme_starts_with_the_two_commands() -> None:
    first = README.read_text().splitlines()[:6]
    assert any(line.strip().startswith("make demo") for line in first)
    assert any(line.strip().startswith("make test") for line in first)


def test_readme_is_at_most_300_lines() -> None:
    lines = len(README.read_text().splitlines())
    assert lines <= MAX_LINES, f"README.md has {lines} lines; the details belong in docs/"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_readme_quick_start_synthesizes(tmp_path: Path) -> None:
    # GIVEN the README's quick start, its one python block, as a file
    blocks = python_blocks()
    assert len(blocks) == 1, "the README has one python example, the quick start"
    script = tmp_path / "app.py"
    script.write_text(blocks[0])
    # WHEN run as a user would run it, with the CLI's output directory (and the library's
    # default alarms, not the detailed ones this test session sets)
    env = {**os.environ, "CDK_OUTDIR": str(tmp_path / "cdk.out")}
    env.pop("CDK_CONTEXT_JSON", None)
    subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, check=True, timeout=300)
    # THEN it synthesized the table with its GSI and its mark, and the scaler
    template = json.loads((tmp_path / "cdk.out" / "Shop.template.json").read_text())
    resources = template["Resources"]
    (orders,) = [
        r
        for k, r in resources.items()
        if r["Type"] == "AWS::DynamoDB::Table" and k.startswith("Orders")
    ]
    assert orders["Properties"]["WarmThroughput"] == {"ReadUnitsPerSecond": 4000}
    assert orders["Properties"]["GlobalSecondaryIndexes"][0]["IndexName"] == "byCustomer"
    handlers = [
        r["Properties"]["Handler"]
        for r in resources.values()
        if r["Type"] == "AWS::Lambda::Function"
    ]
    assert handlers == ["ddb_capacity_runtime.scaler.handler.lambda_handler"]
    # AND it is as many resources and alarms as the README says
    said = re.search(
        r"The stack is (\d+) resources, (\d+) of them alarms", " ".join(README.read_text().split())
    )
    assert said is not None
    alarms = [r for r in resources.values() if r["Type"] == "AWS::CloudWatch::Alarm"]
    assert (int(said[1]), int(said[2])) == (len(resources), len(alarms))


def test_readme_quick_start_needs_no_extra() -> None:
    """cdk-nag is an extra: the quick start does not call apply_nag_packs, and the README
    says which extra it needs where it names it."""
    (block,) = python_blocks()
    assert "apply_nag_packs" not in block
    text = README.read_text()
    assert "[nag]" in text and "[charts]" in text
    for line in text.splitlines():
        if "apply_nag_packs" in line and "[nag]" not in line:
            # the sentence may wrap: the extra is named within the next line
            following = text[text.index(line) :].splitlines()[:2]
            assert any("[nag]" in f for f in following), line


def test_readme_links_resolve() -> None:
    """Every relative link of the README names a file of the repository."""
    text = README.read_text()
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if "://" not in link]
    assert "CHANGELOG.md" in local and "docs/index.md" in local
    missing = [link for link in local if not (ROOT / link).exists()]
    assert missing == []


def test_the_overview_states_what_destroy_retains() -> None:
    """The overview's costs section (the README's links to it) names every kind of resource
    the constructs keep on cdk destroy (DeletionPolicy Retain in the example app's
    templates), and says the state stores go."""
    import aws_cdk as cdk

    from examples.__main__ import build_app

    words = {
        "AWS::DynamoDB::Table": "ProvisionedTable",
        "AWS::KMS::Key": "KMS key",
        "AWS::S3::Bucket": "reports bucket",
    }
    assert "docs/overview.md#costs" in README.read_text()
    text = (ROOT / "docs" / "overview.md").read_text()
    section = text[text.index("## Costs") : text.index("## Which package ships where")]
    assert "cdk destroy" in section
    retained = set()
    for stack in build_app().node.children:
        if isinstance(stack, cdk.Stack):
            template = cdk.assertions.Template.from_stack(stack).to_json()
            for resource in template["Resources"].values():
                if resource.get("DeletionPolicy") == "Retain":
                    retained.add(resource["Type"])
    assert retained, "the example app retains its tables"
    assert retained <= set(words), f"retained and not in the overview: {retained - set(words)}"
    for kind in retained:
        assert words[kind] in section
    assert section.count("**retained**") == len(retained)
    assert "state store" in section


def test_readme_app_commands_name_an_environments_python() -> None:
    # GIVEN every `--app "..."` command the README prints, in prose or in a block
    text = " ".join(README.read_text().split())  # a command may wrap across lines
    commands = re.findall(r'--app "([^"]+)"', text)
    assert commands, "the README shows how to deploy or synthesize an app"
    # THEN each runs a virtual environment's Python: a bare `python` is the system's outside
    # an activated environment, where the CDK is not installed
    bare = [c for c in commands if c.split()[0] in {"python", "python3"}]
    assert not bare, f"README `--app` commands with a bare python: {bare}"


def test_readme_ships_jobs_from_a_folder_of_their_own() -> None:
    # GIVEN the overview's install line for the user's own jobs (the wheel without its
    # dependencies, installed into a folder that is then shipped)
    text = " ".join((ROOT / "docs" / "overview.md").read_text().split())
    targets = re.findall(r"pip install --no-deps --target (\S+)", text)
    assert targets, "the overview shows how to install the wheel for the user's own jobs"
    # THEN never into build/, where `pip install .` (setuptools) leaves its own copy of them
    assert all(t.rstrip("/") != "build" for t in targets), targets


def _refusals() -> dict[str, Callable[[], object]]:
    """Construct refusals, from one check in the construct's own code to ones several
    helpers deep (a function's options, the deepest)."""
    import aws_cdk as cdk
    from aws_cdk import aws_dynamodb as dynamodb

    import constructs_pkg as c

    def base() -> tuple[cdk.Stack, c.ProvisionedTable]:
        stack = cdk.Stack(cdk.App(), "Refused")
        key = dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING)
        units = c.Capacity(min_capacity=10, max_capacity=1000)
        return stack, c.ProvisionedTable(
            stack, "Orders", partition_key=key, read=units, write=units
        )

    def requests(**props: Any) -> object:
        stack, table = base()
        return c.CapacityRequests(stack, "Requests", tables=[table], **props)

    def window() -> None:
        _, table = base()
        hour = cdk.Duration.hours(1)
        table.add_capacity_window(
            "w", dimension="write", capacity=500, start="25:00", duration=hour
        )

    def scaler() -> object:
        stack, table = base()
        return c.ThrottleAwareScaler(
            stack,
            "Scaler",
            tables=[table],
            alarm_options={"x": 1},  # type: ignore[dict-item]
        )

    def stock_auto_scaled() -> object:
        stack = cdk.Stack(cdk.App(), "Refused")
        key = dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING)
        table = dynamodb.Table(stack, "Orders", partition_key=key)
        table.auto_scale_read_capacity(min_capacity=10, max_capacity=1000)
        units = c.Capacity(min_capacity=10, max_capacity=1000)
        return c.TableCapacity(stack, "Capacity", table=table, read=units, write=units)

    return {
        "min above max": lambda: c.Capacity(min_capacity=10, max_capacity=5),
        "stock auto scaling": stock_auto_scaled,
        "function options": lambda: requests(
            function_options={"Restorer": c.FunctionOptions(timeout=300)}  # type: ignore[arg-type]
        ),
        "fast path": lambda: requests(fast_path=c.FastPath(surge_for=5)),  # type: ignore[arg-type]
        "connect": lambda: requests().connect("scaler"),  # type: ignore[attr-defined]
        "alarm options": scaler,
        "capacity window": window,
    }


def test_a_refused_constructs_traceback_is_as_short_as_the_readme_says() -> None:
    # GIVEN the README's bound on the frames below the caller's line of a construct refusal
    text = " ".join(README.read_text().split())
    found = re.search(r"at most (\d+) frames below your line", text)
    assert found, "the README says how short a refused construct's traceback is"
    most = int(found.group(1))
    from ddb_capacity_runtime.core.errors import CapacityConfigError

    for name, refuse in _refusals().items():
        # WHEN a construct refuses its props
        try:
            refuse()
        except CapacityConfigError as exc:
            caught = exc
        else:
            raise AssertionError(f"{name}: not refused")
        # THEN below the call, at most that many frames, none of jsii's JavaScript kernel,
        # and the traceback ends with the message
        frames = traceback.extract_tb(caught.__traceback__)
        below = [f for f in frames if f.filename != __file__]
        assert len(below) <= most, f"{name}: {[f.name for f in below]}"
        assert not [f for f in frames if f"jsii{os.sep}_kernel" in f.filename], name
        last = traceback.format_exception(caught)[-1].rstrip("\n")
        assert last.endswith(f"{type(caught).__name__}: {caught}"), name


def test_the_cli_version_the_docs_name_is_the_pinned_one() -> None:
    # GIVEN the CDK CLI pinned in package.json, and the version the README and guides install
    pinned = json.loads((ROOT / "package.json").read_text())["devDependencies"]["aws-cdk"]
    pages = [README, ROOT / "docs" / "guides" / "scaler.md"]
    named = {p.name: re.findall(r"aws-cdk@([\d.]+)", p.read_text()) for p in pages}
    # THEN each names it, and only it
    assert all(named.values()), named
    assert {v for found in named.values() for v in found} == {pinned}, (named, pinned)
    # AND the testing page names its minor line
    testing = (ROOT / "docs" / "testing.md").read_text()
    assert f"`aws-cdk` {pinned.rsplit('.', 1)[0]}.x in `package.json`" in testing


def test_the_readmes_tick_is_the_scalers_default() -> None:
    from ddb_capacity_runtime.core.settings import DEFAULT_TICK_MINUTES

    text = " ".join(README.read_text().split())
    said = re.search(r"at its first tick \(every (\d+) minutes\)", text)
    assert said is not None
    assert int(said[1]) == DEFAULT_TICK_MINUTES
