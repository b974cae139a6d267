"""One alarm sink: every construct of the library takes ``alarm_topic``, and the alarms of
those given none open OpsItems in OpsCenter, with no topic or key deployed (the
four-construct app, synthesized)."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from typing import Any, cast

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Annotations, Match, Template

from constructs_pkg.fast_path._fast_path import FastPath
from constructs_pkg.fleet._advisor import FleetAdvisor
from constructs_pkg.fleet._tuning import NightlyTuning
from constructs_pkg.global_tables._global_table import GlobalTableCapacity, HighWaterMark
from constructs_pkg.requests._capacity_requests import CapacityRequests
from constructs_pkg.scaler._scaler import ThrottleAwareScaler
from constructs_pkg.table._capacity import Capacity, PrewarmMethod
from constructs_pkg.table._provisioned_table import ProvisionedTable
from ddb_capacity_runtime.core.errors import CapacityConfigError
from tests.support.alarm_style import summary_app
from tests.support.shape import ROOT


def four_constructs(stack: cdk.Stack, topic: sns.ITopic | None = None) -> NightlyTuning:
    """A scaler, the fleet advisor, nightly tuning and capacity requests with the fast path:
    every construct of the library that alarms, each given ``topic``."""
    table = ProvisionedTable(
        stack,
        "Orders",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        read=Capacity(min_capacity=5, max_capacity=100),
        write=Capacity(min_capacity=5, max_capacity=100),
    )
    scaler = ThrottleAwareScaler(
        stack, "Scaler", tables=[table], own_target=True, alarm_topic=topic
    )
    advisor = FleetAdvisor(stack, "Advisor", alarm_topic=topic)
    requests = CapacityRequests(
        stack, "Requests", tables=[table], fast_path=FastPath(), alarm_topic=topic
    )
    requests.connect(scaler)
    return NightlyTuning(
        stack,
        "Tuning",
        advisor=advisor,
        scaler=scaler,
        allowed_targets=range(50, 91, 5),
        alarm_topic=topic,
    )


def counts(stack: cdk.Stack) -> tuple[int, int]:
    resources = Template.from_stack(stack).to_json()["Resources"]
    kinds = [r["Type"] for r in resources.values()]
    return kinds.count("AWS::SNS::Topic"), kinds.count("AWS::KMS::Key")


def alarm_actions(stack: cdk.Stack) -> list[Any]:
    """Every alarm's actions, resolved as the template writes them."""
    resources = Template.from_stack(stack).to_json()["Resources"]
    return [
        action
        for r in resources.values()
        if r["Type"] == "AWS::CloudWatch::Alarm"
        for action in r["Properties"]["AlarmActions"]
    ]


def test_constructs_given_no_topic_open_ops_items_and_deploy_no_topic(
    stack: cdk.Stack,
) -> None:
    tuning = four_constructs(stack)
    # THEN no topic and no key, and every alarm opens an OpsItem, severity 2, Performance
    assert counts(stack) == (0, 0)
    actions = alarm_actions(stack)
    assert actions and all(
        "".join(str(p) for p in a["Fn::Join"][1] if isinstance(p, str)).endswith(
            ":opsitem:2#CATEGORY=Performance"
        )
        for a in actions
    )
    assert tuning.alarm_topic is None and tuning.scaler.alarm_topic is None


def test_a_topic_given_to_each_leaves_no_ops_item(stack: cdk.Stack) -> None:
    mine = sns.Topic(stack, "Mine")
    four_constructs(stack, mine)
    ThrottleAwareScaler(stack, "Other", tag_key="capacity", alarm_topic=mine)
    FleetAdvisor(stack, "OtherAdvisor", alarm_topic=mine)
    assert counts(stack) == (1, 0)
    topic = stack.get_logical_id(cast(cdk.CfnElement, mine.node.default_child))
    assert {json.dumps(a) for a in alarm_actions(stack)} == {json.dumps({"Ref": topic})}


def test_the_earlier_prop_name_still_works_with_a_warning(stack: cdk.Stack) -> None:
    mine = sns.Topic(stack, "Mine")
    scaler = ThrottleAwareScaler(stack, "Scaler", tag_key="capacity", topic=mine)
    assert scaler.alarm_topic is mine and scaler.topic is mine
    Annotations.from_stack(stack).has_warning(
        "/Test/Scaler", Match.string_like_regexp("topic is now alarm_topic")
    )


def test_both_names_at_once_or_a_non_topic_are_refused(stack: cdk.Stack) -> None:
    mine = sns.Topic(stack, "Mine")
    with pytest.raises(CapacityConfigError, match="topic: got a topic beside alarm_topic"):
        ThrottleAwareScaler(stack, "Scaler", tag_key="k", topic=mine, alarm_topic=mine)
    with pytest.raises(
        CapacityConfigError,
        match=r"FleetAdvisor Test/Advisor: alarm_topic: got 'arn:aws:sns:x'; expected an SNS "
        r"topic \(aws_sns.ITopic\), or None \(an OpsItem in OpsCenter for each alarm\)",
    ):
        FleetAdvisor(stack, "Advisor", alarm_topic="arn:aws:sns:x")  # type: ignore[arg-type]


# --- what each construct adds, as the docs' table says -------------------------------------

ALARM_DOLLARS = 0.10
"""A standard-resolution alarm's price a month in us-east-1."""
SHARED = ("AWS::SNS::Topic", "AWS::SNS::TopicPolicy", "AWS::KMS::Key")
FOOTPRINT_PAGE = ROOT / "docs" / "guides" / "alarms-metrics-functions.md"


def with_table(stack: cdk.Stack) -> ProvisionedTable:
    return ProvisionedTable(
        stack,
        "Orders",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        read=Capacity(min_capacity=5, max_capacity=100),
        write=Capacity(min_capacity=5, max_capacity=100),
    )


def _scaler_and_advisor(s: cdk.Stack, t: ProvisionedTable) -> tuple[Any, Any]:
    return ThrottleAwareScaler(s, "S", tables=[t], own_target=True), FleetAdvisor(s, "A")


def _tuning(s: cdk.Stack, t: ProvisionedTable) -> None:
    scaler, advisor = _scaler_and_advisor(s, t)
    NightlyTuning(s, "N", scaler=scaler, advisor=advisor, allowed_targets=range(50, 91, 5))


def _global_table(s: cdk.Stack, _t: ProvisionedTable) -> dynamodb.TableV2:
    """A provisioned ``TableV2`` of two dimensions with a replica in another Region."""
    autoscaled = dynamodb.Capacity.autoscaled(min_capacity=5, max_capacity=100)
    return dynamodb.TableV2(
        s,
        "Global",
        table_name="global",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        billing=dynamodb.Billing.provisioned(read_capacity=autoscaled, write_capacity=autoscaled),
        replicas=[dynamodb.ReplicaTableProps(region="eu-west-1")],
    )


def _global_capacity(s: cdk.Stack, t: ProvisionedTable) -> None:
    GlobalTableCapacity(s, "G", table=_global_table(s, t), high_water_mark=HighWaterMark(read=50))


def _catalog(s: cdk.Stack, _t: ProvisionedTable, mark: int | None = 50) -> None:
    """A second table, its read pre-warmed by PROVISION_THEN_SETTLE to ``mark`` (None: the
    same table without one, what the settle step is counted over)."""
    ProvisionedTable(
        s,
        "Catalog",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        read=Capacity(min_capacity=5, max_capacity=100, high_water_mark=mark),
        write=Capacity(min_capacity=5, max_capacity=100),
        prewarm=PrewarmMethod.PROVISION_THEN_SETTLE,
    )


FOOTPRINTS: dict[str, tuple[Callable[[cdk.Stack, ProvisionedTable], object], Any]] = {
    "ThrottleAwareScaler": (lambda s, t: ThrottleAwareScaler(s, "S", tables=[t]), None),
    "CapacityRequests": (lambda s, t: CapacityRequests(s, "R", tables=[t]), None),
    "CapacityRequests, fast_path": (
        lambda s, t: CapacityRequests(s, "R", tables=[t], fast_path=FastPath()),
        None,
    ),
    "CapacityRequests, fast_path with the stream": (
        lambda s, t: CapacityRequests(s, "R", tables=[t], fast_path=FastPath(stream=True)),
        None,
    ),
    "FleetAdvisor": (lambda s, _t: FleetAdvisor(s, "A"), None),
    "NightlyTuning": (_tuning, _scaler_and_advisor),
    "GlobalTableCapacity": (_global_capacity, _global_table),
    "ProvisionedTable, PROVISION_THEN_SETTLE": (_catalog, lambda s, t: _catalog(s, t, None)),
}
"""Each row of the table: what makes it, and what it is counted over (None: the table alone)."""


def kinds(make: Callable[[cdk.Stack, ProvisionedTable], object] | None) -> Counter[str]:
    stack = cdk.Stack(summary_app(), "Footprint", env=cdk.Environment(region="us-east-1"))
    table = with_table(stack)
    if make is not None:
        make(stack, table)
    resources = Template.from_stack(stack).to_json()["Resources"].values()
    return Counter(r["Type"] for r in resources if r["Type"] not in SHARED)


def documented() -> dict[str, tuple[int, int, int]]:
    """The docs' table: construct -> (resources, functions, alarms)."""
    text = FOOTPRINT_PAGE.read_text()
    section = text.split("## What each construct adds", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[1].isdigit():
            rows[cells[0]] = (int(cells[1]), int(cells[2]), int(cells[3]))
            assert cells[4] == f"${int(cells[3]) * ALARM_DOLLARS:.2f}", line
    return rows


def test_the_docs_say_what_each_construct_adds() -> None:
    measured = {}
    for name, (make, over) in FOOTPRINTS.items():
        added = kinds(make)
        added.subtract(kinds(over))
        measured[name] = (
            sum(added.values()),
            added["AWS::Lambda::Function"],
            added["AWS::CloudWatch::Alarm"],
        )
    assert documented() == measured


def test_the_pages_count_the_scalers_own_alarms_as_it_makes_them() -> None:
    # GIVEN a scaler of one table, in each alarm style: detailed, its own alarms and those
    # of the table (their ids name it); summary, the alarms that watch them all
    stack = cdk.Stack(cdk.App(), "Own", env=cdk.Environment(region="us-east-1"))
    scaler = ThrottleAwareScaler(stack, "S", tables=[with_table(stack)])
    own = [alarm_id for alarm_id in scaler.alarms if "/" not in alarm_id]
    per_table = len(scaler.alarms) - len(own)
    summary = cdk.Stack(summary_app(), "Own", env=cdk.Environment(region="us-east-1"))
    folded = ThrottleAwareScaler(summary, "S", tables=[with_table(summary)])
    alarms = len({id(a) for a in folded.alarms.values()})
    # THEN each page that counts them says as many
    footprint = " ".join(FOOTPRINT_PAGE.read_text().split())
    said = re.search(
        r"The scaler of one table makes (\d+) summary alarms; in the detailed style, its (\d+) "
        r"alarms are (\d+) of its own and (\d+) for the",
        footprint,
    )
    assert said is not None
    assert [int(n) for n in said.groups()] == [alarms, len(scaler.alarms), len(own), per_table]
    global_tables = (FOOTPRINT_PAGE.parent / "global-tables.md").read_text()
    assert re.findall(r"the scaler's own (\d+)", " ".join(global_tables.split())) == [str(len(own))]
