"""Learned on-demand windows through a day against the moto server: the day's hours learned at
23:55 from eight days of the table's CloudWatch metrics, the table switched to on-demand 5
minutes before its learned hour and back on the hour no lower than before (its targets
restored), DynamoDB's four switches a day kept by skipping, a deploy in the middle of a window,
a window run on past midnight, and metrics that cannot be read or say nothing never switching
a table."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ddb_capacity_runtime.aws import switch_calls as calls
from ddb_capacity_runtime.core.errors import SwitchError
from ddb_capacity_runtime.core.on_demand_hours import DAY_S, HOUR_S
from ddb_capacity_runtime.hybrid.billing_plan import parse_state
from ddb_capacity_runtime.hybrid.handler import run
from ddb_capacity_runtime.hybrid.learning import Learning
from ddb_capacity_tools import local_aws
from tests.support.switch_world import START, SwitchWorld, counts, learned_entry, switch_world

DAY = int(START // DAY_S) + 10
"""A day whose hours are learned (from the epoch, UTC)."""
_DAYS = itertools.count(DAY, 20)
SPIKY_HOUR = 10


def at(day: int, hour: int, minute: int = 0) -> float:
    return float(day * DAY_S + hour * HOUR_S + minute * 60)


def _datapoint(table: str, index: str | None, name: str, when: float, value: float) -> Any:
    dims = [{"Name": "TableName", "Value": table}]
    if index:
        dims.append({"Name": "GlobalSecondaryIndexName", "Value": index})
    stamp = datetime.fromtimestamp(when, UTC)
    return {"MetricName": name, "Dimensions": dims, "Timestamp": stamp, "Value": value}


def history(
    w: SwitchWorld, days: range | list[int], spiky: int | tuple[int, ...] = SPIKY_HOUR
) -> None:
    """The table's metrics as DynamoDB publishes them over ``days``: 8 write units/s (the
    hour's first minute, then the rest of the hour in one datapoint at minute 15: on-demand
    charges for the units, the first 15 minutes' busiest sets a return level, and the
    hour's busiest matters only where the hour ran on-demand) but in the hour(s) ``spiky``,
    a quiet 1/s there with one minute at 800/s; auto scaling keeps the table's writes at 10
    units and raises them to 1,200 for that hour, its reads at 20 and its GSI at 8 and 4
    (idle)."""
    spikes = (spiky,) if isinstance(spiky, int) else spiky
    data = []
    levels = {
        (None, "Read"): 20,
        (None, "Write"): 10,
        ("byUser", "Read"): 8,
        ("byUser", "Write"): 4,
    }
    for day in days:
        for hour in range(24):
            for (index, dim), level in levels.items():
                top = 1200 if (index, dim) == (None, "Write") and hour in spikes else level
                name = f"Provisioned{dim}CapacityUnits"
                data.append(_datapoint(w.table, index, name, at(day, hour), top))
            consumed = "ConsumedWriteCapacityUnits"
            if hour in spikes:
                data.append(_datapoint(w.table, None, consumed, at(day, hour, 29), 59 * 60))
                data.append(_datapoint(w.table, None, consumed, at(day, hour, 30), 800 * 60))
            else:  # the hour's first minute, then the rest of it in one datapoint
                data.append(_datapoint(w.table, None, consumed, at(day, hour), 480))
                data.append(_datapoint(w.table, None, consumed, at(day, hour, 15), 480 * 59))
    for i in range(0, len(data), 1000):
        w.world.cw.put_metric_data(Namespace="AWS/DynamoDB", MetricData=data[i : i + 1000])


@pytest.fixture
def day() -> int:
    """The day whose hours a test learns, its own: moto's GetMetricData reads every datapoint
    of the server within its time range for each minute it returns, so tests that shared
    days would slow each other down."""
    return next(_DAYS)


@pytest.fixture
def w(aws_client: Any) -> SwitchWorld:
    made = switch_world(aws_client)
    made.switcher.cloudwatch = made.world.cw
    # warm throughput as DynamoDB gives a new table (moto gives its first capacity)
    warm = {"ReadUnitsPerSecond": 12_000, "WriteUnitsPerSecond": 4_000}
    made.world.ddb.update_table(TableName=made.table, WarmThroughput=warm)
    return made


LEARNING_MAX = (500, 200)


def learning(w: SwitchWorld) -> Learning:
    return Learning(w.table, 70, *LEARNING_MAX)


def state(w: SwitchWorld) -> Any:
    text, _ = calls.read_state(w.world.ddb, w.switcher.store, w.table)
    return parse_state(text)


def targets(w: SwitchWorld) -> dict[Any, Any]:
    """The table's targets, a suspended state's parts not given read as False (as
    Application Auto Scaling means them)."""
    parts = ("DynamicScalingInSuspended", "DynamicScalingOutSuspended", "ScheduledScalingSuspended")
    return {
        k: (low, high, {p: s.get(p, False) for p in parts})
        for k, (low, high, s) in w.targets().items()
    }


def billing(w: SwitchWorld) -> str:
    return str(w.described()["BillingModeSummary"]["BillingMode"])


def at_run(w: SwitchWorld, when: float) -> str:
    w.clock.now = when
    return w.switcher.learned(learning(w))


def test_the_spiky_hour_is_learned_and_switched_through_a_day(w: SwitchWorld, day: int) -> None:
    # GIVEN eight days of history with one spiky hour a day
    history(w, range(day - 8, day))
    before = targets(w)
    # WHEN the 23:55 run learns the day's hours
    assert at_run(w, at(day - 1, 23, 55)) == "provisioned"
    # THEN the spiky hour alone runs on-demand
    learned = state(w)
    assert learned.plan_day == day
    assert [h for h, on in enumerate(learned.plan) if on] == [SPIKY_HOUR]
    assert learned.returns == {
        SPIKY_HOUR + 1: {"|read": 1, "|write": 12, "byUser|read": 1, "byUser|write": 1}
    }
    # AND the table stays provisioned until 5 minutes before it
    assert at_run(w, at(day, SPIKY_HOUR - 1)) == "provisioned"
    assert billing(w) == "PROVISIONED"
    assert at_run(w, at(day, SPIKY_HOUR - 1, 55)) == "switched-to-on-demand"
    assert billing(w) == "PAY_PER_REQUEST"
    cap = {"MaxReadRequestUnits": 500, "MaxWriteRequestUnits": 200}
    assert w.sent[-1]["OnDemandThroughput"] == cap
    assert all(all(s.values()) for *_, s in w.targets().values())
    assert state(w).until == at(day, SPIKY_HOUR + 1)
    # AND it stays on-demand through the hour, and is back on the hour after it
    assert at_run(w, at(day, SPIKY_HOUR)) == "on-demand"
    assert at_run(w, at(day, SPIKY_HOUR, 55)) == "on-demand"
    # (the table served 30 reads/s at 10:50, above its 20 units of before the window)
    when = at(day, SPIKY_HOUR, 50)
    read = _datapoint(w.table, None, "ConsumedReadCapacityUnits", when, 30 * 60)
    w.world.cw.put_metric_data(Namespace="AWS/DynamoDB", MetricData=[read])
    assert at_run(w, at(day, SPIKY_HOUR + 1)) == "switched-to-provisioned"
    assert billing(w) == "PROVISIONED"
    # AT the level the hour after usually needs where that is higher than before: 8 writes/s
    # at 70 %, 12 units; never below what it served at the window's end: 30 reads; the idle
    # GSI as it was
    table = w.described()
    assert table["ProvisionedThroughput"] == {
        **table["ProvisionedThroughput"],
        "ReadCapacityUnits": 30,
        "WriteCapacityUnits": 12,
    }
    gsi = table["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"]
    assert (gsi["ReadCapacityUnits"], gsi["WriteCapacityUnits"]) == (8, 4)
    assert targets(w) == before
    assert at_run(w, at(day, SPIKY_HOUR + 1, 55)) == "provisioned"
    # AND the plan was learned once: the day's later runs read no metrics
    calls_made: list[str] = []
    w.world.cw.meta.events.register(
        "before-call.cloudwatch.GetMetricData", lambda **_: calls_made.append("read")
    )
    assert at_run(w, at(day, 15, 55)) == "provisioned"
    assert calls_made == []
    assert state(w).plan == learned.plan


def test_a_window_past_the_rolling_limit_is_skipped_not_refused(w: SwitchWorld, day: int) -> None:
    history(w, range(day - 8, day))
    at_run(w, at(day - 1, 23, 55))
    # GIVEN four switches to on-demand in the 24 hours before the learned hour, the oldest
    # of them leaving that span at 09:58
    text, version = calls.read_state(w.world.ddb, w.switcher.store, w.table)
    recent = (int(at(day - 1, 9, 58)), *(int(at(day - 1, h)) for h in (12, 14, 16)))
    calls.write_state(
        w.world.ddb,
        w.switcher.store,
        w.table,
        replace(parse_state(text), switches=recent).as_text(),
        version,
    )
    # WHEN the window's run comes, through the handler
    w.clock.now = at(day, SPIKY_HOUR - 1, 55)
    with counts() as counted:
        outcome = run({"Action": "learned", "Tables": [learned_entry(w.table)]}, w.switcher)
    # THEN it is skipped (no failure: counted as a skip, not alarmed) and the table stays
    # provisioned
    assert outcome == {w.table: "skipped-at-the-limit"}
    assert [(c["TableName"], c.get("SwitchSkipped")) for c in counted] == [(w.table, 1)]
    assert billing(w) == "PROVISIONED"
    # AND skipped whole: its hour's own run does not start it late, though the limit allows
    # a switch by then
    assert at_run(w, at(day, SPIKY_HOUR)) == "skipped-at-the-limit"
    assert billing(w) == "PROVISIONED"
    # AND the next day, with the oldest switch out of the span, the hour switches again
    history(w, [day])
    assert at_run(w, at(day, 23, 55)) == "provisioned"
    assert at_run(w, at(day + 1, SPIKY_HOUR - 1, 55)) == "switched-to-on-demand"


def test_a_deploy_mid_window_gives_the_table_its_targets_back(w: SwitchWorld, day: int) -> None:
    history(w, range(day - 8, day))
    at_run(w, at(day - 1, 23, 55))
    before = targets(w)
    assert at_run(w, at(day, SPIKY_HOUR - 1, 55)) == "switched-to-on-demand"
    # GIVEN a deploy of the table's template mid-window: provisioned again, as it declares
    w.deployed((20, 10), (8, 4))
    # WHEN the check comes
    w.clock.now = at(day, SPIKY_HOUR, 15)
    assert w.switcher.check(w.table) == "switched-back-underneath"
    # THEN the table keeps its auto scaling, and the later runs leave it provisioned
    assert targets(w) == before
    assert at_run(w, at(day, SPIKY_HOUR + 1)) == "provisioned"
    assert billing(w) == "PROVISIONED"


def test_a_window_running_past_midnight_is_extended_by_the_next_days_plan(
    w: SwitchWorld,
    day: int,
) -> None:
    # GIVEN days whose first and last hours are spiky: each day's plan runs both on-demand
    history(w, range(day - 8, day + 1), spiky=(0, 23))
    assert at_run(w, at(day - 1, 23, 55)) == "switched-to-on-demand"  # the day's hour 0
    assert [h for h, on in enumerate(state(w).plan) if on] == [0, 23]
    assert at_run(w, at(day, 1)) == "switched-to-provisioned"
    assert at_run(w, at(day, 22, 55)) == "switched-to-on-demand"
    assert state(w).until == at(day + 1, 0)
    # WHEN the 23:55 run learns the next day, whose first hour runs on-demand too
    assert at_run(w, at(day, 23, 55)) == "on-demand-extended"
    assert state(w).plan_day == day + 1 and state(w).plan[0]
    # THEN the window runs on to the end of the next day's first hour, without a new switch
    assert state(w).until == at(day + 1, 1)
    assert len(state(w).switches) == 2
    assert at_run(w, at(day + 1, 0)) == "on-demand"
    assert at_run(w, at(day + 1, 1)) == "switched-to-provisioned"


def test_a_table_without_metrics_is_never_switched(w: SwitchWorld, day: int) -> None:
    # GIVEN no metric at all for the table (none published, or none delivered)
    assert at_run(w, at(day - 1, 23, 55)) == "provisioned"
    # THEN no hour is learned on-demand
    assert state(w).plan == (False,) * 24
    assert at_run(w, at(day, SPIKY_HOUR - 1, 55)) == "provisioned"


def test_metrics_that_cannot_be_read_fail_the_run_counted_and_switch_nothing(
    w: SwitchWorld,
    day: int,
) -> None:
    # GIVEN CloudWatch out of reach
    w.switcher.cloudwatch = local_aws.client("http://127.0.0.1:9", "cloudwatch")
    w.clock.now = at(day - 1, 23, 55)
    # WHEN the run comes, THEN it fails once the table was tried, and counts the failure
    with counts() as counted, pytest.raises(SwitchError, match="could not be learned"):
        run({"Action": "learned", "Tables": [learned_entry(w.table)]}, w.switcher)
    assert [(c["TableName"], c.get("SwitchFailed")) for c in counted] == [(w.table, 1)]
    # AND the table is left as it was, with no plan
    assert billing(w) == "PROVISIONED"
    assert state(w).plan_day == -1


def test_a_window_whose_last_minutes_cannot_be_read_stays_on_demand(
    w: SwitchWorld, day: int
) -> None:
    history(w, range(day - 8, day))
    at_run(w, at(day - 1, 23, 55))
    assert at_run(w, at(day, SPIKY_HOUR - 1, 55)) == "switched-to-on-demand"
    # GIVEN CloudWatch out of reach at the window's end
    w.switcher.cloudwatch = local_aws.client("http://127.0.0.1:9", "cloudwatch")
    # THEN the end fails (what the table served is not known) and it stays on-demand
    with pytest.raises(SwitchError, match="could not be read"):
        at_run(w, at(day, SPIKY_HOUR + 1))
    assert billing(w) == "PAY_PER_REQUEST"
    # AND the check ends it once CloudWatch answers
    w.switcher.cloudwatch = w.world.cw
    w.clock.now = at(day, SPIKY_HOUR + 1, 15)
    assert w.switcher.check(w.table) == "switched-to-provisioned"


@pytest.mark.parametrize(
    ("entry", "wrong"),
    [
        ({"TargetUtilization": 95}, "TargetUtilization"),
        ({"Table": "x"}, "Table"),
        ({"MaxReadRequestUnits": 0}, "MaxRead"),
        ({"MaxWriteRequestUnits": True}, "MaxRead/Write"),
    ],
)
def test_a_malformed_learned_event_is_refused_naming_the_field(
    w: SwitchWorld, entry: dict[str, Any], wrong: str
) -> None:
    with pytest.raises(SwitchError, match=f"learned event: table .*{wrong}"):
        run({"Action": "learned", "Tables": [learned_entry(w.table, **entry)]}, w.switcher)
    with pytest.raises(SwitchError, match="learned event: Tables"):
        run({"Action": "learned", "Tables": "all"}, w.switcher)


def test_the_plan_day_is_the_day_of_the_hour_acted_for() -> None:
    from ddb_capacity_runtime.hybrid.learning import acting_for, run_end

    assert acting_for(at(DAY - 1, 23, 55)) == (DAY, 0)
    assert acting_for(at(DAY, 0)) == (DAY, 0)
    assert acting_for(at(DAY, 9, 55)) == (DAY, 10)
    assert acting_for(at(DAY, 10, 53)) == (DAY, 10)
    plan = [h in (3, 4, 5, 23) for h in range(24)]
    assert run_end(plan, DAY, 3) == at(DAY, 6)
    assert run_end(plan, DAY, 23) == at(DAY + 1, 0)
    assert datetime.fromtimestamp(at(DAY, 0), UTC).time() == datetime.min.time()
    assert timedelta(seconds=at(DAY, 1) - at(DAY, 0)) == timedelta(hours=1)


def test_a_learned_return_level_raises_within_the_targets_maximum_and_never_lowers() -> None:
    from ddb_capacity_runtime.hybrid.billing_plan import SwitchState, Target, back_levels

    target = Target("table/t", "dynamodb:table:WriteCapacityUnits", (3, 50), {})
    description = {
        "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
    }
    before = SwitchState(levels={"|read": 20, "|write": 10}, targets=(target,))
    # a return level above the target's maximum: the maximum
    high = replace(before, back={"|write": 686, "|read": 30})
    assert back_levels("t", high, description) == {"|read": 30, "|write": 50}
    # one below the level before the window: the level before
    low = replace(before, back={"|write": 4, "|read": 2})
    assert back_levels("t", low, description) == {"|read": 20, "|write": 10}
    # within the warm throughput the table has, and never below what it served
    warm = {"ReadUnitsPerSecond": 25, "WriteUnitsPerSecond": 40, "Status": "ACTIVE"}
    warmed = {**description, "WarmThroughput": warm}
    assert back_levels("t", high, warmed) == {"|read": 25, "|write": 40}
    served = {"|read": 27, "|write": 45}
    assert back_levels("t", high, warmed, None, served) == {"|read": 27, "|write": 45}
    assert back_levels("t", high, warmed, None, {"|write": 80}) == {"|read": 25, "|write": 50}
    updating = {**description, "WarmThroughput": {**warm, "Status": "UPDATING"}}
    assert back_levels("t", high, updating) == {"|read": 30, "|write": 50}
    # the returns survive the state's round trip, and a malformed one is refused
    text = replace(high, plan_day=3, plan=(False,) * 24, returns={11: {"|write": 12}}).as_text()
    assert parse_state(text).returns == {11: {"|write": 12}}
    assert parse_state(text).back == {"|write": 686, "|read": 30}
    broken = json.loads(text)
    broken["plan"]["returns"] = {"25": {"|write": 12}}
    with pytest.raises(ValueError, match="plan returns"):
        parse_state(json.dumps(broken))
    broken["plan"]["returns"] = {"11": {"|write": 0}}
    with pytest.raises(ValueError, match="plan returns"):
        parse_state(json.dumps(broken))


def test_a_day_holds_at_most_three_learned_windows(w: SwitchWorld, day: int) -> None:
    # GIVEN four spiky hours a day, each worth a window of its own
    history(w, range(day - 8, day), spiky=(2, 8, 14, 20))
    at_run(w, at(day - 1, 23, 55))
    # THEN the day's plan makes them three windows (two joined by the hours between them):
    # windows about 24 hours apart day after day, a fourth would be a fifth switch in 24
    # hours whenever a day's switch came a little later
    plan = state(w).plan
    starts = [h for h in range(24) if plan[h] and (h == 0 or not plan[h - 1])]
    assert len(starts) == 3 and all(plan[h] for h in (2, 8, 14, 20))


def test_hours_whose_provisioned_capacity_is_not_trusted_are_not_known() -> None:
    from ddb_capacity_runtime.aws.metrics import HourReads
    from ddb_capacity_runtime.hybrid.learning import _hour

    begin = datetime.fromtimestamp(at(DAY, 10), UTC)
    consumed = {begin + timedelta(minutes=m): 600.0 for m in range(60)}
    key = ("t", None, "write")

    def reads(provisioned: dict[datetime, float] | None, bad: frozenset[datetime]) -> Any:
        return {key: HourReads(consumed, frozenset(), provisioned, bad)}

    known = _hour(reads({begin: 20.0}, frozenset()), (DAY, 10), 70)
    assert known is not None and known.provisioned == pytest.approx(20 * 0.00065)
    # no datapoint of a trusted query: the table was on-demand, costed at its least level
    on_demand = _hour(reads({}, frozenset()), (DAY, 10), 70)
    assert on_demand is not None and on_demand.provisioned is None
    # the query not trusted, or the hour's value bad: not known, so never on-demand by it
    assert _hour(reads(None, frozenset()), (DAY, 10), 70) is None
    assert _hour(reads({}, frozenset({begin})), (DAY, 10), 70) is None


def test_a_window_past_its_end_is_ended_when_the_next_days_hours_cannot_be_learned(
    w: SwitchWorld, day: int
) -> None:
    from botocore.stub import Stubber

    # GIVEN a learned window ending at midnight
    history(w, range(day - 8, day), spiky=23)
    at_run(w, at(day - 1, 23, 55))
    assert at_run(w, at(day, 22, 55)) == "switched-to-on-demand"
    # AND CloudWatch refusing the next day's learning (throttled: moto never is) while it
    # still answers the window's last minutes
    cloudwatch = local_aws.client(w.world.cw.meta.endpoint_url, "cloudwatch")
    stub = Stubber(cloudwatch)
    stub.add_client_error("get_metric_data", "Throttling", "Rate exceeded", 400)
    delivered = [
        {"Id": f"c{i}", "StatusCode": "Complete", "Timestamps": [], "Values": []} for i in range(4)
    ]
    stub.add_response("get_metric_data", {"MetricDataResults": delivered})
    w.switcher.cloudwatch = cloudwatch
    # WHEN the midnight run comes
    with stub, pytest.raises(SwitchError, match="could not be learned"):
        at_run(w, at(day + 1, 0))
    # THEN the window was ended all the same, and the failure raised (counted) after it
    assert billing(w) == "PROVISIONED"
    assert state(w).plan_day == day


def test_one_malformed_entry_fails_alone(w: SwitchWorld, day: int) -> None:
    history(w, range(day - 8, day))
    w.clock.now = at(day - 1, 23, 55)
    with pytest.raises(SwitchError, match="learned entry 0") as failed:
        run({"Action": "learned", "Tables": [{"Table": 7}, learned_entry(w.table)]}, w.switcher)
    assert f"'{w.table}': 'provisioned'" in str(failed.value)
    assert state(w).plan_day == day


def test_a_day_is_not_learned_without_time_left_and_a_window_due_still_ends(
    w: SwitchWorld, day: int
) -> None:
    # GIVEN a learned window ending at midnight, and a midnight run with 5 seconds left
    history(w, range(day - 8, day), spiky=23)
    at_run(w, at(day - 1, 23, 55))
    assert at_run(w, at(day, 22, 55)) == "switched-to-on-demand"
    w.switcher.remaining = lambda: 5.0
    w.clock.now = at(day + 1, 0)
    with counts() as counted:
        outcome = run({"Action": "learned", "Tables": [learned_entry(w.table)]}, w.switcher)
    # THEN the day is not learned (deferred, counted, not a failure), the window is ended
    assert outcome == {w.table: "learning-deferred"}
    assert [(c["TableName"], c.get("LearningDeferred")) for c in counted] == [(w.table, 1)]
    assert billing(w) == "PROVISIONED"
    assert state(w).plan_day == day
    # AND the next run with time learns it
    w.switcher.remaining = lambda: 100.0
    w.clock.now = at(day + 1, 0, 55)
    assert at_run(w, at(day + 1, 0, 55)) == "provisioned"
    assert state(w).plan_day == day + 1
