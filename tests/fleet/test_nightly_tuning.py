"""The nightly tuning loop against a moto server: the fleet advisor's worker advises a
table from its CloudWatch history, the loop moves the table's owned target values toward
the recommendation within the bounds (kept in the scaler's state store), and the scaler's
next tick writes them to the target-tracking policies it owns. A table at its bound gets
no change, a dry run changes nothing but logs, a result that cannot be read changes
nothing and is counted, one table that fails leaves the others tuned, and billing advice
is never applied."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from ddb_capacity_runtime.core.names import scope_label
from ddb_capacity_runtime.events import LOGGER
from ddb_capacity_tools import fleet_lambda
from ddb_capacity_tools.fleet_settings import AdvisorSettings
from ddb_capacity_tools.tuning_lambda import tuning_handler
from ddb_capacity_tools.tuning_rules import (
    Bounds,
    SettingsError,
    TuningSettings,
    read_recommendation,
    step,
)
from tests.support.moto_world import World
from tests.support.nightly_tuning import (
    AUTOPILOT,
    advised,
    policy_target,
    put_result,
    settings,
    start_run,
    tune,
    tuned,
)
from tests.support.nightly_tuning import world as world  # noqa: F401 (fixture)

# ------------------------------------------------------------------------------ the rule


def test_a_step_moves_toward_the_recommendation_within_the_allowed_targets() -> None:
    bounds = Bounds((50, 60, 70, 80, 90), 10)
    assert step(70, 90, bounds) == 80  # no further than the step
    assert step(80, 90, bounds) == 90
    assert step(90, 90, bounds) is None  # there already
    assert step(90, 95 - 5, Bounds((50, 90), 10)) is None
    assert step(70, 30, bounds) == 60  # down too: never below the lowest allowed
    assert step(50, 30, bounds) is None  # at its bound
    assert step(72, 90, Bounds((50, 90), 10)) is None  # nothing allowed within the step
    assert step(65, 65, bounds) == 60  # between two: the lower target, more capacity
    assert step(70, 90, Bounds(tuple(range(50, 91)), 5)) == 75


def test_bounds_and_settings_name_the_bad_value() -> None:
    with pytest.raises(SettingsError, match=r"here: allowed_targets: got '\[10, 50\]'"):
        Bounds.checked("here", [10, 50], 5)
    with pytest.raises(SettingsError, match=r"allowed_targets: got '\(\)'; expected one or more"):
        Bounds.checked("here", (), 5)
    with pytest.raises(SettingsError, match=r"here: max_step: got 0; expected a whole number"):
        Bounds.checked("here", range(50, 91), 0)
    good = TuningSettings("b", "s", {"T": {"write": 70}}, Bounds((60, 70), 5), dry_run=True)
    assert TuningSettings.from_env(good.to_env()) == good
    with pytest.raises(SettingsError, match=r"NIGHTLY_TUNING_MAX_STEP: got 'x'"):
        TuningSettings.from_env({**good.to_env(), "NIGHTLY_TUNING_MAX_STEP": "x"})
    with pytest.raises(SettingsError, match=r"NIGHTLY_TUNING_ALLOWED is not set"):
        TuningSettings.from_env({})


def test_a_recommendation_is_read_as_the_report_reads_it() -> None:
    assert read_recommendation(advised("T1x", "stock:90"), "T1x").target == 90
    assert read_recommendation(advised("T1x", "autopilot+stock:80+owned"), "T1x").target == 80
    demand = read_recommendation(advised("T1x", "on-demand", 3.5), "T1x")
    assert demand.target is None and demand.advice and demand.usd_per_month == 3.5
    # declared or learned on-demand windows: advice only, their target value never applied
    for name in ("windows:70", "hybrid:80", "hybrid"):
        windows = read_recommendation(advised("T1x", name), "T1x")
        assert (windows.target, windows.advice, windows.malformed) == (None, True, False), name
        assert windows.why == f"{name} switches the billing mode: advice only, never applied"
    assert read_recommendation(advised("Other", "stock:90"), "T1x").malformed
    assert read_recommendation({**advised("T1x", "stock:95")}, "T1x").malformed
    nan = advised("T1x", "stock:90")
    nan["options"][0]["usd_per_month"] = float("inf")
    assert read_recommendation(nan, "T1x").malformed
    failed = {"table": "T1x", "status": "failed", "reason": "no such table"}
    assert not read_recommendation(failed, "T1x").malformed  # the advisor's failure
    # a candidate simulated with a feature the loop does not set up is no target value to
    # apply, and no unreadable result either (which alarms as a corrupt one)
    for name in ("autopilot+stock:90+prewarm", "autopilot+stock:80+stream"):
        featured = read_recommendation(advised("T1x", name), "T1x")
        assert (featured.target, featured.malformed, featured.advice) == (None, False, False)
        assert featured.policy == name and "never sets up" in featured.why


# ------------------------------------------------------------------------------ on moto


def test_a_table_whose_traffic_changed_gets_a_new_target_that_its_scaler_applies(
    world: World, aws_client: Any
) -> None:
    # GIVEN a table whose write target the autopilot owns at 70 %, writing a steady 150
    # units/s for the last 22 hours of its day, and the advisor's worker advising it from its
    # CloudWatch history: no stock target refuses steady traffic, so the advisor's rule (the
    # cheapest that refuses no more than the stock target refusing least,
    # docs/guides/tune.md) picks the highest stock target it runs, 90 %
    name = world.table("Steady", 10, 400, tagged=False)
    world.target(name, "write", 10, 20_000)
    world.traffic(name, "write", 150, minutes=range(1, 1321))
    world.traffic(name, "read", 1, minutes=range(1, 1321))
    run_id = start_run(world)
    clients = {
        "cloudwatch": world.cw,
        "dynamodb": world.ddb,
        "autoscaling": world.aas,
        "s3": world.s3,  # type: ignore[attr-defined]
    }
    advisor = AdvisorSettings(world.bucket, "", days=1, candidates="stock:50,stock:90")  # type: ignore[attr-defined]
    body = json.dumps({"run_id": run_id, "table": name})
    assert fleet_lambda.advise_message(body, clients, advisor) == "advised"
    doc = json.loads(
        world.s3.get_object(  # type: ignore[attr-defined]
            Bucket=world.bucket,  # type: ignore[attr-defined]
            Key=f"runs/{run_id}/tables/{name}.json",
        )["Body"].read()
    )
    assert doc["recommended"] == "stock:90", doc["reason"]
    expected = 80  # 70 moved up toward 90 by the step of 10 points, and no further
    owned = {name: {"write": 70}}
    # WHEN the loop runs with targets 50-90 allowed and a step of 10 points
    counts, events = tune(world, settings(world, owned))
    # THEN the write target moves 10 points toward the recommendation, logged with why
    assert tuned(world, name, "write") == expected
    assert counts["TargetsChanged"] == 1 and counts["Failures"] == 0
    (said,) = [e for e in events if e.get("event") == "target-tuned"]
    assert (said["table"], said["dimension"], said["old"]) == (name, "write", 70)
    assert said["new"] == expected
    assert said["run_id"] == run_id and doc["recommended"] in said["why"]
    # AND a retry of the same run changes nothing again
    counts, _ = tune(world, settings(world, owned))
    assert tuned(world, name, "write") == expected and counts["TargetsKept"] == 1
    # AND the scaler's next tick writes it to the policy it owns
    env = {
        **AUTOPILOT,
        "SCALER_TABLES": name,
        "SCALER_OWNED_TARGETS": json.dumps(owned),
        "SCALER_TUNED_TARGETS": "true",
    }
    world.tick(None, None, **env)
    assert policy_target(world, name, "write") == expected
    # AND without the setting (the loop removed) the scaler aims at the configured 70
    world.tick(None, None, **{**env, "SCALER_TUNED_TARGETS": "false"})
    assert policy_target(world, name, "write") == 70


def test_the_scaler_refuses_a_tuned_value_outside_the_allowed_targets(world: World) -> None:
    # GIVEN a table whose write target the autopilot owns at 70 %, tuned to 80 by the loop,
    # and beside it one tuned to 60
    name = world.table("Narrowed", 10, 400, tagged=False)
    other = world.table("Beside", 10, 400, tagged=False)
    for table in (name, other):
        world.target(table, "write", 10, 20_000)
    run_id = start_run(world)
    put_result(world, run_id, name, advised(name, "stock:90"))
    put_result(world, run_id, other, advised(other, "stock:50"))
    owned = {name: {"write": 70}, other: {"write": 70}}
    tune(world, settings(world, owned))
    assert (tuned(world, name, "write"), tuned(world, other, "write")) == (80, 60)
    env = {
        **AUTOPILOT,
        "SCALER_TABLES": f"{name},{other}",
        "SCALER_OWNED_TARGETS": json.dumps(owned),
        "SCALER_TUNED_TARGETS": "true",
    }
    # WHEN the scaler is told the allowed targets are 50, 60 and 70 (the app narrowed them)
    _, events = world.tick(None, None, **env, SCALER_TUNED_ALLOWED="50,60,70")
    # THEN it aims at the configured 70, not at the 80 it does not know as allowed, and says
    # so: logged, and counted in the table's EMF record (the loop's Refused alarm)
    assert policy_target(world, name, "write") == 70
    (refused,) = [e for e in events if e.get("event") == "tuned-target-refused"]
    assert (refused["table"], refused["dimension"], refused["value"]) == (name, "write", 80)
    (record,) = [e for e in events if "_aws" in e and e.get("TableName") == name]
    assert record["RefusedTunedTargets"] == 1
    # AND the table beside it, its tuned value allowed, aims at it and refuses nothing
    assert policy_target(world, other, "write") == 60
    (beside,) = [e for e in events if "_aws" in e and e.get("TableName") == other]
    assert "RefusedTunedTargets" not in beside
    # AND with 80 among the allowed targets it aims at 80, and refuses nothing
    _, events = world.tick(None, None, **env, SCALER_TUNED_ALLOWED="50,60,70,80")
    assert policy_target(world, name, "write") == 80
    (record,) = [e for e in events if "_aws" in e and e.get("TableName") == name]
    assert "RefusedTunedTargets" not in record
    assert not [e for e in events if e.get("event") == "tuned-target-refused"]
    # AND the loop's next run, with the narrowed bounds, moves the value back into them
    put_result(world, start_run(world, minutes_ago=1), name, advised(name, "stock:90"))
    tune(world, settings(world, owned, bounds=Bounds((50, 60, 70), 10)))
    assert tuned(world, name, "write") == 70


def test_a_table_at_its_bound_gets_no_change(world: World) -> None:
    name = world.table("AtBound", 10, 10, tagged=False)
    run_id = start_run(world)
    put_result(world, run_id, name, advised(name, "stock:90"))
    owned = {name: {"read": 90, "write": 70}}
    counts, events = tune(world, settings(world, owned, bounds=Bounds((50, 60, 70), 10)))
    assert tuned(world, name, "read") is None and tuned(world, name, "write") is None
    assert counts["TargetsChanged"] == 0 and counts["TargetsKept"] == 2
    kept = [e for e in events if e.get("event") == "target-kept"]
    assert {(e["dimension"], e["target"]) for e in kept} == {("read", 90), ("write", 70)}


def test_a_dry_run_changes_nothing_but_logs_and_counts(world: World) -> None:
    name = world.table("DryRun", 10, 10, tagged=False)
    run_id = start_run(world)
    put_result(world, run_id, name, advised(name, "stock:90"))
    counts, events = tune(world, settings(world, {name: {"write": 70}}, dry_run=True))
    assert tuned(world, name, "write") is None
    assert counts["TargetsWouldChange"] == 1 and counts["TargetsChanged"] == 0
    (said,) = [e for e in events if e.get("event") == "target-tuned"]
    assert said["dry_run"] is True and (said["old"], said["new"]) == (70, 80)


@pytest.mark.parametrize(
    ("doc", "why"),
    [
        ("not json", ".json: not JSON (Expecting value)"),
        ("[" * 40 + "]" * 40, ".json: nested 40 levels deep; expected at most 16"),
        ({"table": "someone-else", "status": "advised"}, "the result is not this table's"),
        (
            {"status": "advised", "recommended": "stock:90", "options": []},
            "not advised: the result has no figures for its option",
        ),
        ("bad-figures", "not advised: the result's usd_per_month is 1e+300; expected a number"),
        ("bad-policy", "recommended 'stock:99': target utilization 99 is outside 20 to 90"),
    ],
)
def test_a_malformed_result_changes_nothing_and_is_counted(
    world: World, doc: Any, why: str, caplog: pytest.LogCaptureFixture
) -> None:
    name = world.table("Malformed", 10, 10, tagged=False)
    run_id = start_run(world)
    if doc == "bad-figures":
        doc = advised(name, "stock:90")
        doc["options"][0]["usd_per_month"] = 1e300
    elif doc == "bad-policy":
        doc = advised(name, "stock:99")
    elif isinstance(doc, dict) and "table" not in doc:
        doc = {**doc, "table": name}
    put_result(world, run_id, name, doc)
    caplog.set_level(logging.INFO, logger="ddb_capacity_runtime")
    counts, events = tune(world, settings(world, {name: {"write": 70}}))
    assert tuned(world, name, "write") is None
    assert counts["Unreadable"] == 1 and counts["TablesFailed"] == 0, counts
    assert counts["TargetsChanged"] == 0
    # the one event logged beside the progress: the result unreadable, an error, naming the
    # table and why
    (said,) = [e for e in events if e["event"] != "progress"]
    assert (said["event"], said["table"], said["run_id"]) == (
        "recommendation-unreadable",
        name,
        run_id,
    )
    assert why in said["why"], said
    logged = [
        (r.levelno, r.getMessage())
        for r in caplog.records
        if r.name == LOGGER.name and getattr(r, "event", None) != "progress"
    ]
    assert logged == [(logging.ERROR, "recommendation-unreadable")]


def test_one_failing_table_leaves_the_others_tuned(world: World) -> None:
    # GIVEN two tables recommended stock:90, and the store refusing the first's write
    names = [world.table(n, 10, 10, tagged=False) for n in ("Fails", "Fine")]
    run_id = start_run(world)
    for name in names:
        put_result(world, run_id, name, advised(name, "stock:90"))
    failing, fine = names

    def refuse(params: dict[str, Any], **_: Any) -> None:
        if params.get("Key", {}).get("pk", {}).get("S") == failing:
            raise world.ddb.exceptions.ProvisionedThroughputExceededException(
                {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow"}},
                "UpdateItem",
            )

    hook = "provide-client-params.dynamodb.UpdateItem"
    world.ddb.meta.events.register(hook, refuse)
    try:
        counts, events = tune(world, settings(world, {n: {"write": 70} for n in names}))
    finally:
        world.ddb.meta.events.unregister(hook, refuse)
    assert counts["TablesFailed"] == 1 and counts["TargetsChanged"] == 1  # the one written
    assert tuned(world, failing, "write") is None and tuned(world, fine, "write") == 80
    assert [e["table"] for e in events if e.get("event") == "target-tuned"] == [fine]
    (failed,) = [e for e in events if e.get("event") == "table-not-tuned"]
    assert failed["table"] == failing and "ProvisionedThroughputExceeded" in failed["error"]
    # AND the progress is logged as the command line writes it to a file, the failed table
    # counted as done
    said = [e["progress"] for e in events if e.get("event") == "progress"]
    assert [s.split(" (")[0] for s in said] == ["tuning: 0%", "tuning: 50%", "tuning: 100%"]
    assert said[-1].startswith("tuning: 100% (2 of 2 tables, ")


@pytest.mark.parametrize("policy", ["on-demand", "hybrid:80"])
def test_billing_advice_is_logged_with_its_dollars_and_never_applied(
    world: World, policy: str
) -> None:
    name = world.table("Demand", 10, 10, tagged=False)
    run_id = start_run(world)
    put_result(world, run_id, name, advised(name, policy, 3.25))
    # the hybrid's target (80) is its autopilot's, not one the loop may set on the table
    counts, events = tune(world, settings(world, {name: {"write": 70}}))
    assert tuned(world, name, "write") is None and counts["BillingAdvice"] == 1
    (said,) = [e for e in events if e.get("event") == "billing-advice"]
    assert said["usd_per_month"] == 3.25 and said["usd_per_month_current"] == 14.0
    assert said["recommended"] == policy and "advice only" in said["why"]
    assert world.throughput(name) == (10, 10)  # still provisioned, as it was


def test_a_stale_run_changes_nothing_and_is_a_counted_failure(
    world: World, monkeypatch: pytest.MonkeyPatch, aws_env: dict[str, str], capsys: Any
) -> None:
    name = world.table("Stale", 10, 10, tagged=False)
    run_id = start_run(world, minutes_ago=180 + 121)
    put_result(world, run_id, name, advised(name, "stock:90"))
    config = settings(world, {name: {"write": 70}})
    for key, value in {**aws_env, **config.to_env()}.items():
        monkeypatch.setenv(key, value)
    counts = tuning_handler({})
    assert counts["Failures"] == 1 and tuned(world, name, "write") is None
    (emf,) = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert emf["Failures"] == 1 and emf["TargetsChanged"] == 0
    # for its scaler's deployment (dimension StateStore), never another tuning's of the account
    (metrics,) = emf["_aws"]["CloudWatchMetrics"]
    assert metrics["Dimensions"] == [["StateStore"]] and emf["StateStore"] == config.store


def test_a_tuned_target_outlives_a_forgotten_plan_and_a_plan_outlives_nothing_else(
    world: World,
) -> None:
    # GIVEN a tuned write target, and a plan the autopilot keeps and then forgets
    name = world.table("Kept", 10, 10, tagged=False)
    put_result(world, start_run(world), name, advised(name, "stock:90"))
    tune(world, settings(world, {name: {"write": 70}}))
    world.set_plan(name, "write", "1:90:0:0:20")
    world.set_plan(name, "write", None)
    # THEN the item, and its tuned target, stay (forgetting a plan deletes only a bare item)
    assert tuned(world, name, "write") == 80 and world.plan(name, "write") is None


def test_a_loop_that_finds_its_run_written_meanwhile_keeps_it_reading_only_the_tuned_value(
    world: World,
) -> None:
    # GIVEN a table whose write target the loop moves from 70 toward 90, and another loop of
    # the same run that writes that dimension's value between this one's read and its write
    name = world.table("TwoLoops", 10, 10, tagged=False)
    run_id = start_run(world)
    put_result(world, run_id, name, advised(name, "stock:90"))
    sort_key = f"{scope_label(None)}:write"
    meanwhile = {"M": {"target": {"N": "80"}, "run": {"S": run_id}}}
    reads: list[dict[str, Any]] = []
    written: list[bool] = []

    def other_loop(params: dict[str, Any], **_: Any) -> None:
        if params["TableName"] == world.store.name and not written:
            written.append(True)  # once
            world.store_ddb.update_item(
                TableName=world.store.name,
                Key={"pk": {"S": name}, "sk": {"S": sort_key}},
                UpdateExpression="SET tuned = :t",
                ExpressionAttributeValues={":t": meanwhile},
            )

    def read(params: dict[str, Any], **_: Any) -> None:
        if params["TableName"] == world.store.name:
            reads.append(params)

    events = world.ddb.meta.events
    hooks = (
        ("before-parameter-build.dynamodb.UpdateItem", other_loop),
        ("before-parameter-build.dynamodb.GetItem", read),
    )
    for event, hook in hooks:
        events.register(event, hook)
    try:
        # WHEN this loop runs
        counts, said = tune(world, settings(world, {name: {"write": 70}}))
    finally:
        for event, hook in hooks:
            events.unregister(event, hook)
    # THEN its conditional write fails, it finds the value its run's, and keeps it
    assert counts["TargetsKept"] == 1 and counts["TargetsChanged"] == 0
    (kept,) = [e for e in said if e.get("event") == "target-kept"]
    assert kept["why"] == "another run of the loop wrote it"
    assert tuned(world, name, "write") == 80
    # AND every read of the state store named the tuned value alone, as its grant requires
    assert len(reads) == 2
    assert all(r.get("ProjectionExpression") == "#t" for r in reads), reads
