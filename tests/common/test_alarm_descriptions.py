"""The alarms as an on-call engineer meets them: every description says what happened,
where to look first, what to do first and its heading in the runbook, within CloudWatch's
1,024 characters; a team appends its own runbook with ``description_suffix``; and every
command of the runbook runs as written."""

from __future__ import annotations

import json
import re
from typing import Any

import aws_cdk as cdk
import botocore.session
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Template
from botocore import xform_name

from constructs_pkg import (
    AlarmOptions,
    Capacity,
    GlobalTableCapacity,
    ProvisionedTable,
    ThrottleAwareScaler,
)
from constructs_pkg.common._alarms import DESCRIPTION_LIMIT, AlarmSet, AlarmSpec, metric, says
from ddb_capacity_runtime.core.errors import CapacityConfigError
from tests.support.shape import ROOT

RUNBOOK = ROOT / "docs" / "operations" / "alarms.md"
SNAPSHOTS = ROOT / "tests" / "snapshots" / "templates"
SAID = re.compile(
    r"^(?P<what>.+?)\. Look first: (?P<look>.+?)\. Do: (?P<do>.+?)\. "
    r"Runbook: (?P<heading>.+) under (?P<section>\w+) in docs/operations/alarms\.md\.$",
    re.S,
)
KEY = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)


def runbook_headings() -> dict[str, set[str]]:
    """The runbook's entries by section (its ``## `Construct``` headings): each ``###``
    heading, backticks removed."""
    sections: dict[str, set[str]] = {}
    section = ""
    for line in RUNBOOK.read_text().splitlines():
        if line.startswith("## "):
            section = line[3:].strip("` ")
            sections[section] = set()
        elif line.startswith("### ") and section:
            sections[section].add(line[4:].replace("`", ""))
    return sections


def global_table_alarms() -> dict[str, str]:
    """The descriptions of a GlobalTableCapacity's alarms (its stack's replica-schedule
    function's), by logical id."""
    stack = cdk.Stack(cdk.App(), "Global", env=cdk.Environment(region="us-east-1"))
    table = dynamodb.TableV2(
        stack,
        "Orders",
        partition_key=KEY,
        billing=dynamodb.Billing.provisioned(
            read_capacity=dynamodb.Capacity.autoscaled(min_capacity=5, max_capacity=100),
            write_capacity=dynamodb.Capacity.autoscaled(min_capacity=5, max_capacity=50),
        ),
        replicas=[dynamodb.ReplicaTableProps(region="eu-west-1")],
    )
    GlobalTableCapacity(stack, "Capacity", table=table)
    found = Template.from_stack(stack).find_resources("AWS::CloudWatch::Alarm")
    return {k: a["Properties"]["AlarmDescription"] for k, a in found.items()}


def on_demand_switch_alarms() -> dict[str, str]:
    """The descriptions of the on-demand switch's alarms (a table with an on-demand window),
    each an alarm of its own (the detailed style), by logical id."""
    stack = cdk.Stack(cdk.App(context={"ddb-capacity:alarms": "detailed"}), "Windowed")
    table = ProvisionedTable(
        stack,
        "Orders",
        partition_key=KEY,
        read=Capacity(min_capacity=5, max_capacity=100),
        write=Capacity(min_capacity=5, max_capacity=50),
    )
    table.add_on_demand_window("Evening", start="18:00", duration=cdk.Duration.hours(2))
    found = Template.from_stack(stack).find_resources("AWS::CloudWatch::Alarm")
    return {k: a["Properties"]["AlarmDescription"] for k, a in found.items()}


def every_alarm() -> dict[str, str]:
    """Every alarm description of the template snapshots (kept equal to what the constructs
    write by test_template_snapshots: every construct, the sharded scaler with own_target,
    the fast path with its stream) and of a GlobalTableCapacity, by template and logical
    id."""
    said: dict[str, str] = {}
    for path in sorted(SNAPSHOTS.glob("*.json")):
        template: dict[str, Any] = json.loads(path.read_text())
        for key, resource in template["Resources"].items():
            if resource["Type"] == "AWS::CloudWatch::Alarm":
                said[f"{path.stem}/{key}"] = resource["Properties"]["AlarmDescription"]
    said.update({f"Global/{k}": d for k, d in global_table_alarms().items()})
    said.update({f"Windowed/{k}": d for k, d in on_demand_switch_alarms().items()})
    return said


def test_every_alarm_says_what_happened_where_to_look_what_to_do_and_its_runbook_entry() -> None:
    sections = runbook_headings()
    alarms = every_alarm()
    assert len(alarms) > 60
    named: set[tuple[str, str]] = set()
    for key, description in alarms.items():
        # THEN each is plain text within CloudWatch's limit
        assert isinstance(description, str), key
        assert len(description) <= DESCRIPTION_LIMIT, (key, len(description))
        # AND says what happened, where to look first, the first action, and its entry
        said = SAID.match(description)
        assert said is not None, (key, description)
        assert all(len(said[part]) > 10 for part in ("what", "look", "do")), (key, description)
        section, heading = said["section"], said["heading"]
        assert heading in sections.get(section, set()), (key, section, heading)
        named.add((section, heading))
    # AND every entry of the runbook is one an alarm names (none left behind by a rename)
    assert {(s, h) for s, hs in sections.items() for h in hs} - named == set()


def test_an_alarm_on_the_worst_table_names_the_metric_that_finds_the_table() -> None:
    alarms = every_alarm()
    for alarm in (
        "PinnedAtMax",
        "BadTargets",
        "RefusedTags",
        "IgnoredTags",
        "Updating",
        "PlansNotKept",
        "TargetNotOwned",
    ):
        description = alarms[
            next(k for k in alarms if k.startswith(f"ThrottleAware/Scaler{alarm}"))
        ]
        said = SAID.match(description)
        assert said is not None
        assert "metric by TableName" in said["look"], (alarm, said["look"])
        assert "for which table" in said["look"], (alarm, said["look"])


def test_the_refused_tags_alarm_counts_only_tags_refused_against_a_known_consumption() -> None:
    # GIVEN the scaler's RefusedTags alarm (a tag refused while the consumption is not known
    # is logged at info level and not counted: scaler/refusals.py)
    alarms = every_alarm()
    refused = alarms[next(k for k in alarms if k.startswith("ThrottleAware/ScalerRefusedTags"))]
    # THEN its description does not claim it fires for those, and says they are not counted
    assert "while that is not known" not in refused
    assert "only logged, not counted" in refused


def scaler_with(
    options: AlarmOptions, ids: tuple[str, ...] = ("Errors", "SustainedThrottling")
) -> tuple[cdk.Stack, ThrottleAwareScaler]:
    stack = cdk.Stack(cdk.App(), "Suffix")
    table = ProvisionedTable(
        stack,
        "Orders",
        partition_key=KEY,
        read=Capacity(min_capacity=5, max_capacity=100),
        write=Capacity(min_capacity=5, max_capacity=100),
    )
    scaler = ThrottleAwareScaler(
        stack,
        "Scaler",
        tables=[table],
        alarm_topic=sns.Topic(stack, "Pager"),
        alarm_options=dict.fromkeys(ids, options),
    )
    return stack, scaler


def test_a_description_suffix_is_appended_to_the_librarys_description() -> None:
    # GIVEN the team's runbook URL on the Errors alarm and on every table's throttling alarm
    url = "Team runbook: https://wiki.example.com/ddb-capacity#errors"
    stack, scaler = scaler_with(AlarmOptions(description_suffix=url))
    template = Template.from_stack(stack)
    described = {
        k: a["Properties"]["AlarmDescription"]
        for k, a in template.find_resources("AWS::CloudWatch::Alarm").items()
    }
    # THEN it follows the library's own description, whole, after a space
    errors = described[next(k for k in described if k.startswith("ScalerErrorsAlarm"))]
    assert errors.endswith(" " + url)
    assert SAID.match(errors.removesuffix(" " + url)) is not None
    throttled = [d for k, d in described.items() if k.startswith("ScalerThrottled")]
    assert len(throttled) == 2 and all(d.endswith(" " + url) for d in throttled)
    # AND the alarms without it keep the library's alone
    pinned = described[next(k for k in described if k.startswith("ScalerPinnedAtMax"))]
    assert "wiki.example.com" not in pinned
    assert scaler.alarms["Errors"] is not None


@pytest.mark.parametrize(
    ("suffix", "message"),
    [
        (42, "alarm_options['Errors'].description_suffix: got 42; expected plain text"),
        ("  ", "alarm_options['Errors'].description_suffix: got '  '; expected plain text"),
        (cdk.Fn.ref("AWS::StackName"), "expected plain text that is not blank (not a token"),
        ("x" * DESCRIPTION_LIMIT, "description_suffix: got 1024 characters; expected at most"),
    ],
    ids=["a number", "blank", "a token", "too long"],  # a token's text differs run to run
)
def test_a_description_suffix_that_cannot_be_appended_is_refused(suffix: Any, message: str) -> None:
    with pytest.raises(CapacityConfigError, match=re.escape(message)):
        scaler_with(AlarmOptions(description_suffix=suffix))


def test_a_suffix_is_refused_naming_how_much_room_the_alarm_leaves() -> None:
    # GIVEN a suffix one character longer than the Errors alarm leaves room for
    _, scaler = scaler_with(AlarmOptions())
    own = scaler.alarms["Errors"].node.default_child
    assert isinstance(own, cloudwatch.CfnAlarm)
    length = len(cdk.Stack.of(scaler).resolve(own.alarm_description))
    room = DESCRIPTION_LIMIT - length - 1
    # THEN the longest that fits is taken, and one more character is refused naming the room
    scaler_with(AlarmOptions(description_suffix="y" * room), ("Errors",))
    with pytest.raises(CapacityConfigError, match=f"expected at most {room} for alarm ErrorsAlarm"):
        scaler_with(AlarmOptions(description_suffix="y" * (room + 1)), ("Errors",))


def test_a_library_description_over_cloudwatchs_limit_is_refused_at_synth() -> None:
    stack = cdk.Stack(cdk.App(), "Long")
    alarms = AlarmSet(stack, "Long", sns.Topic(stack, "T"), {}, "ThrottleAwareScaler")
    spec = AlarmSpec(metric("N", "M"), says("w" * DESCRIPTION_LIMIT), look="l" * 20, do="d" * 20)
    with pytest.raises(CapacityConfigError, match="CloudWatch takes at most 1024"):
        alarms.add("Errors", spec)


# ---------------------------------------------------------------- the runbook's commands


GLOBAL_OPTIONS = {"--region"}


def runbook_commands() -> list[str]:
    """Every ``aws ...`` command of the runbook, as one line."""
    spans = re.findall(r"`(aws [^`]+)`", RUNBOOK.read_text())
    return [" ".join(span.split()) for span in spans]


def test_every_runbook_command_gives_every_required_option() -> None:
    """Each command names a real operation of its service, every option it gives is one of
    the operation's, and it gives every option the operation requires (placeholders in
    <>)."""
    session = botocore.session.get_session()
    commands = runbook_commands()
    assert len(commands) >= 6
    wrong = []
    for command in commands:
        _, service, operation, *rest = command.split()
        model = session.get_service_model(service)
        name = "".join(part.capitalize() for part in operation.split("-"))
        names = {n.lower(): n for n in model.operation_names}
        assert name.lower() in names, command
        shape = model.operation_model(names[name.lower()]).input_shape
        assert shape is not None, command
        members = {xform_name(m, "-"): m for m in shape.members}  # the CLI's own names
        given = {w[2:] for w in rest if w.startswith("--")} - {o[2:] for o in GLOBAL_OPTIONS}
        unknown = given - set(members)
        required = {m for m, member in members.items() if member in shape.required_members}
        if unknown or required - given:
            wrong.append(
                f"{command}: unknown {sorted(unknown)}, missing {sorted(required - given)}"
            )
    assert wrong == []
