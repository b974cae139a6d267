"""The on-demand switch through a day of windows against the moto server: to on-demand with
its maximums as a cost guard, the scalable targets suspended, back to provisioned no lower
than before and the targets restored exactly, DynamoDB's four switches a day, and every
refusal and failure counted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from ddb_capacity_runtime.core.errors import SwitchError
from ddb_capacity_runtime.hybrid.handler import run
from ddb_capacity_runtime.hybrid.switcher import Window
from tests.support.switch_world import START, SwitchWorld, counts, switch_world

HOUR = 3600.0
WINDOW = Window("spikes", 2 * 3600, 500, 200)
ALL = {
    "DynamicScalingInSuspended": True,
    "DynamicScalingOutSuspended": True,
    "ScheduledScalingSuspended": True,
}
NONE = dict.fromkeys(ALL, False)


@pytest.fixture
def w(aws_client: Any) -> SwitchWorld:
    return switch_world(aws_client)


def billing(w: SwitchWorld) -> str:
    return str(w.described()["BillingModeSummary"]["BillingMode"])


def levels(w: SwitchWorld) -> tuple[dict[str, int], dict[str, int]]:
    table = w.described()
    gsi = table["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"]
    keys = ("ReadCapacityUnits", "WriteCapacityUnits")
    return (
        {k: table["ProvisionedThroughput"][k] for k in keys},
        {k: gsi[k] for k in keys},
    )


def as_given(state: dict[str, bool]) -> dict[str, bool]:
    """A suspended state as Application Auto Scaling means it (a part not given is False)."""
    return {k: state.get(k, False) for k in ALL}


def test_a_window_switches_to_on_demand_and_back_restoring_everything(w: SwitchWorld) -> None:
    # GIVEN a table auto scaled above its minimums, one target with scheduled scaling
    # suspended by its owner
    table_read = (f"table/{w.table}", "dynamodb:table:ReadCapacityUnits")
    w.world.aas.register_scalable_target(
        ServiceNamespace="dynamodb",
        ResourceId=table_read[0],
        ScalableDimension=table_read[1],
        MinCapacity=5,
        MaxCapacity=100,
        SuspendedState={**NONE, "ScheduledScalingSuspended": True},
    )
    before = w.targets()
    # WHEN the window starts
    assert w.switcher.start(w.table, WINDOW) == "switched-to-on-demand"
    # THEN the table (its GSI with it) is on-demand, capped by the window's maximums
    assert billing(w) == "PAY_PER_REQUEST"
    cap = {"MaxReadRequestUnits": 500, "MaxWriteRequestUnits": 200}
    assert w.sent[-1]["OnDemandThroughput"] == cap
    assert w.sent[-1]["GlobalSecondaryIndexUpdates"] == [
        {"Update": {"IndexName": "byUser", "OnDemandThroughput": cap}}
    ]
    # AND every target is suspended, its bounds untouched
    during = w.targets()
    assert {k: v[:2] for k, v in during.items()} == {k: v[:2] for k, v in before.items()}
    assert all(v[2] == ALL for v in during.values())
    # WHEN the check runs inside the window, and then the window ends
    w.clock.now += HOUR
    assert w.switcher.check(w.table) == "on-demand"
    w.clock.now += HOUR
    assert w.switcher.end(w.table) == "switched-to-provisioned"
    # THEN it is provisioned at its levels of before, and the targets are as they were
    assert billing(w) == "PROVISIONED"
    assert levels(w) == (
        {"ReadCapacityUnits": 20, "WriteCapacityUnits": 10},
        {"ReadCapacityUnits": 8, "WriteCapacityUnits": 4},
    )
    after = w.targets()
    assert {k: (v[0], v[1], as_given(v[2])) for k, v in after.items()} == {
        k: (v[0], v[1], as_given(v[2])) for k, v in before.items()
    }
    assert as_given(after[table_read][2])["ScheduledScalingSuspended"] is True


def test_a_window_returns_the_table_no_lower_than_it_served_at_its_end(w: SwitchWorld) -> None:
    # GIVEN a window whose table served 30 reads/s, and its GSI 6 writes/s, near its end
    w.switcher.start(w.table, WINDOW)
    end = datetime.fromtimestamp(START + WINDOW.seconds, UTC)
    for index, metric, units, minutes in (
        (None, "ConsumedReadCapacityUnits", 30, 10),
        ("byUser", "ConsumedWriteCapacityUnits", 6, 6),
        (None, "ConsumedWriteCapacityUnits", 500, 4),  # maybe not delivered at the end: unread
    ):
        dims = [{"Name": "TableName", "Value": w.table}]
        dims += [{"Name": "GlobalSecondaryIndexName", "Value": index}] if index else []
        stamp = end - timedelta(minutes=minutes)
        datum = {"MetricName": metric, "Dimensions": dims, "Timestamp": stamp, "Value": units * 60}
        w.world.cw.put_metric_data(Namespace="AWS/DynamoDB", MetricData=[datum])
    # WHEN it ends
    w.clock.now = START + WINDOW.seconds
    assert w.switcher.end(w.table) == "switched-to-provisioned"
    # THEN each dimension is back no lower than it served (and than before)
    assert levels(w) == (
        {"ReadCapacityUnits": 30, "WriteCapacityUnits": 10},
        {"ReadCapacityUnits": 8, "WriteCapacityUnits": 6},
    )


def test_the_way_back_is_never_below_a_minimum_of_before(w: SwitchWorld) -> None:
    # GIVEN a read minimum (30) above what the table had provisioned (20)
    w.world.target(w.table, "read", 30, 100)
    w.switcher.start(w.table, WINDOW)
    # WHEN the window ends
    w.clock.now += WINDOW.seconds
    w.switcher.end(w.table)
    # THEN the table comes back at its minimum, not below it
    assert levels(w)[0] == {"ReadCapacityUnits": 30, "WriteCapacityUnits": 10}


def test_a_target_deregistered_mid_window_is_not_registered_again_and_counted(
    w: SwitchWorld,
) -> None:
    # GIVEN a window during which the GSI's write target is deregistered
    w.switcher.start(w.table, WINDOW)
    gone = (f"table/{w.table}/index/byUser", "dynamodb:index:WriteCapacityUnits")
    w.world.aas.deregister_scalable_target(
        ServiceNamespace="dynamodb", ResourceId=gone[0], ScalableDimension=gone[1]
    )
    # WHEN the window ends
    w.clock.now += WINDOW.seconds
    with (
        counts() as counted,
        pytest.raises(SwitchError, match="byUser dynamodb:index:WriteCapacityUnits were"),
    ):
        run({"Action": "end", "Table": w.table}, w.switcher)
    # THEN the table is provisioned and its other targets restored, the one gone is not
    # registered again (the switch may change only targets tagged with the table's name, and
    # one registered anew carries no tag), and that is counted as SwitchFailed, once
    assert billing(w) == "PROVISIONED"
    targets = w.targets()
    assert gone not in targets and len(targets) == 3
    assert all(not any(s.values()) for _, _, s in targets.values())
    assert [(c["TableName"], c.get("SwitchFailed")) for c in counted] == [(w.table, 1)]
    assert w.switcher.check(w.table) == "not-on-demand"


def test_a_fifth_switch_in_24_hours_is_refused_and_counted(w: SwitchWorld) -> None:
    # GIVEN four windows of an hour, three hours apart
    for _ in range(4):
        assert w.switcher.start(w.table, WINDOW) == "switched-to-on-demand"
        w.clock.now += HOUR
        w.switcher.end(w.table)
        w.clock.now += 2 * HOUR
    # WHEN a fifth starts within 24 hours of the first
    event = {"Action": "start", "Table": w.table, "Window": "fifth", "DurationSeconds": 3600}
    event |= {"MaxReadRequestUnits": 100, "MaxWriteRequestUnits": 100}
    with (
        counts() as counted,
        pytest.raises(SwitchError, match="4 switches to on-demand in the last 24 hours"),
    ):
        run(event, w.switcher)
    # THEN the table stays provisioned, and the refusal is counted for the table
    assert billing(w) == "PROVISIONED"
    assert [(c["TableName"], c.get("SwitchRefused")) for c in counted] == [(w.table, 1)]
    # WHEN the first switch is 24 hours old
    w.clock.now = START + 24 * HOUR + 1
    # THEN a switch is allowed again
    assert w.switcher.start(w.table, WINDOW) == "switched-to-on-demand"


def test_a_switch_by_other_hands_counts_against_the_day(w: SwitchWorld) -> None:
    # GIVEN three switches of the windows, and DynamoDB telling of a later one made elsewhere
    for _ in range(3):
        w.switcher.start(w.table, WINDOW)
        w.clock.now += HOUR
        w.switcher.end(w.table)
        w.clock.now += HOUR
    elsewhere = datetime.fromtimestamp(w.clock.now - 1800, UTC)

    def told(parsed: dict[str, Any], **_: Any) -> None:
        parsed["Table"]["BillingModeSummary"]["LastUpdateToPayPerRequestDateTime"] = elsewhere

    w.world.ddb.meta.events.register("after-call.dynamodb.DescribeTable", told)
    # WHEN the next window starts, THEN it is refused: that was the fourth of the day
    with pytest.raises(SwitchError, match="4 switches") as refused:
        w.switcher.start(w.table, WINDOW)
    assert refused.value.metric == "SwitchRefused"


def test_a_failed_switch_leaves_the_table_and_its_targets_as_they_were(w: SwitchWorld) -> None:
    # GIVEN DynamoDB refusing the UpdateTable
    before = w.targets()

    def refuse(**_: Any) -> None:
        error = {"Error": {"Code": "LimitExceededException", "Message": "too many"}}
        raise ClientError(error, "UpdateTable")  # type: ignore[arg-type]

    w.world.ddb.meta.events.register("before-call.dynamodb.UpdateTable", refuse)
    # WHEN the window starts
    with pytest.raises(ClientError):
        w.switcher.start(w.table, WINDOW)
    # THEN the targets are restored, and the failed switch is not one of the day's
    assert billing(w) == "PROVISIONED"
    assert {k: (v[:2], as_given(v[2])) for k, v in w.targets().items()} == {
        k: (v[:2], as_given(v[2])) for k, v in before.items()
    }
    assert w.switcher.end(w.table) == "not-on-demand"
    w.world.ddb.meta.events.unregister("before-call.dynamodb.UpdateTable", refuse)
    for _ in range(4):
        assert w.switcher.start(w.table, WINDOW) == "switched-to-on-demand"
        w.clock.now += HOUR
        w.switcher.end(w.table)


def test_a_table_made_provisioned_underneath_gets_its_targets_back(w: SwitchWorld) -> None:
    # GIVEN a table on-demand by its window, then provisioned again by a deploy of its
    # template (CloudFormation sets the BillingMode and ProvisionedThroughput it declares)
    before = w.targets()
    w.switcher.start(w.table, WINDOW)
    w.deployed((5, 5), (5, 5))
    # WHEN the regular check runs
    w.clock.now += 600
    assert w.switcher.check(w.table) == "switched-back-underneath"
    # THEN its auto scaling is back (never a provisioned table without it)
    assert {k: (v[:2], as_given(v[2])) for k, v in w.targets().items()} == {
        k: (v[:2], as_given(v[2])) for k, v in before.items()
    }
    assert w.switcher.end(w.table) == "not-on-demand"


def test_a_target_resumed_by_a_deploy_mid_window_is_suspended_again(w: SwitchWorld) -> None:
    w.switcher.start(w.table, WINDOW)
    # GIVEN a deploy registering a target again, resumed
    w.world.target(w.table, "write", 3, 50)
    # WHEN the check runs, THEN it is suspended again
    w.switcher.check(w.table)
    assert all(v[2] == ALL for v in w.targets().values())


def test_a_missed_end_is_made_by_the_next_check(w: SwitchWorld) -> None:
    w.switcher.start(w.table, WINDOW)
    w.clock.now += WINDOW.seconds + 60
    assert w.switcher.check(w.table) == "switched-to-provisioned"
    assert billing(w) == "PROVISIONED"


def test_each_table_is_its_own_fault_domain(w: SwitchWorld) -> None:
    # GIVEN a check of a table whose switch state is unreadable and of a table on-demand by
    # its window, past its end
    w.switcher.start(w.table, WINDOW)
    w.clock.now += WINDOW.seconds
    missing = w.world.name("unreadable")
    w.world.ddb.put_item(
        TableName=w.switcher.store,
        Item={
            "pk": {"S": missing},
            "sk": {"S": "on-demand"},
            "state": {"S": "{not json"},
            "version": {"N": "1"},
        },
    )
    with counts() as counted, pytest.raises(SwitchError, match=f"check: failed for {missing}"):
        run({"Action": "check", "Tables": [missing, w.table]}, w.switcher)
    # THEN the other table was switched back, and the failure counted for its table
    assert billing(w) == "PROVISIONED"
    assert [(c["TableName"], c.get("SwitchFailed")) for c in counted] == [(missing, 1)]


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ({"Action": "stop", "Table": "t"}, "Action 'stop'; expected start, end, check or learned"),
        ({"Action": "check", "Tables": "t"}, "tables 't'"),
    ],
)
def test_a_malformed_event_is_refused_naming_what_is_wrong(
    w: SwitchWorld, event: dict[str, Any], message: str
) -> None:
    with pytest.raises(SwitchError, match=message):
        run(event, w.switcher)
