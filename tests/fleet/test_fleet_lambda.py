"""The nightly fleet advisor's handlers against a moto server: the lister's manifest and
one SQS message per table on a real (moto) queue, the worker on each message, the report
over the run; one table faulty (deleted after the listing: its failure is its result), one
missing (its message never handled), an invalid message counted and dropped, a result
that cannot be written returned as a batch item failure."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from ddb_capacity_tools import fleet_lambda
from ddb_capacity_tools.fleet_settings import (
    NAMESPACE,
    AdvisorSettings,
    SettingsError,
    run_id_of,
    time_of,
)
from ddb_capacity_tools.local_aws import put_traffic, recorded_events

#: A Region no other test uses: the lister sees only these tables.
REGION = "eu-north-1"


@pytest.fixture
def world(aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    for name, value in {**aws_env, "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(fleet_lambda, "_clients", {})  # made again, on this endpoint
    stamp = f"{datetime.now(UTC):%H%M%S%f}"
    s3, sqs = boto3.client("s3"), boto3.client("sqs")
    bucket = f"advisor-{stamp}"
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
    queue = sqs.create_queue(QueueName=f"advisor-{stamp}")["QueueUrl"]
    settings = AdvisorSettings(bucket, queue, days=1, candidates="on-demand")
    for name, value in settings.to_env().items():
        monkeypatch.setenv(name, value)
    ddb = boto3.client("dynamodb")
    for name in ddb.list_tables()["TableNames"]:
        ddb.delete_table(TableName=name)
    moment = datetime.now(UTC).replace(second=0, microsecond=0)
    return {"s3": s3, "sqs": sqs, "ddb": ddb, "settings": settings, "moment": moment}


def busy(world: dict[str, Any], name: str, write: float) -> str:
    world["ddb"].create_table(
        TableName=name,
        BillingMode="PROVISIONED",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        ProvisionedThroughput={"ReadCapacityUnits": 10, "WriteCapacityUnits": 10},
    )
    cloudwatch = boto3.client("cloudwatch")
    for dim, level in (("write", write), ("read", 50)):
        put_traffic(cloudwatch, name, dim, level, end=world["moment"], minutes=range(1, 121))
    return name


def metrics(out: str) -> list[dict[str, Any]]:
    """The EMF records the handlers wrote to stdout."""
    records = [json.loads(line) for line in out.splitlines() if line.startswith('{"_aws"')]
    assert all(r["_aws"]["CloudWatchMetrics"][0]["Namespace"] == NAMESPACE for r in records)
    return records


def receive(world: dict[str, Any]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    while True:
        got = (
            world["sqs"]
            .receive_message(QueueUrl=world["settings"].queue_url, MaxNumberOfMessages=10)
            .get("Messages", [])
        )
        if not got:
            return messages
        messages += got


def record(message: dict[str, Any]) -> dict[str, Any]:
    """The SQS event record Lambda would pass for ``message``."""
    return {"messageId": message["MessageId"], "body": message["Body"]}


def test_lister_worker_report_over_one_run(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN three tables with traffic, of which one is deleted once listed and one is
    # never advised, and eight more without traffic (two SendMessageBatch calls)
    stamp = f"{datetime.now(UTC):%H%M%S%f}"
    good, faulty, late = (busy(world, f"Fleet{k}{stamp}", 200) for k in ("Good", "Gone", "Late"))
    for n in range(8):
        world["ddb"].create_table(
            TableName=f"Idle{n:02d}{stamp}",
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        )
    # WHEN the list step runs at the scheduled time (the rule's event)
    event = {"step": "list", "time": world["moment"].isoformat()}
    counts = fleet_lambda.advisor_handler(event)
    run_id = run_id_of(world["moment"])
    assert counts == {"TablesListed": 11, "Failures": 0}
    world["ddb"].delete_table(TableName=faulty)
    manifest = json.loads(
        world["s3"]
        .get_object(Bucket=world["settings"].bucket, Key=f"runs/{run_id}/manifest.json")["Body"]
        .read()
    )
    assert set(manifest["tables"]) >= {good, faulty, late} and len(manifest["tables"]) == 11
    # THEN one message per table is on the queue, and the worker handles each but one
    messages = receive(world)
    bodies = [json.loads(m["Body"]) for m in messages]
    assert sorted(b["table"] for b in bodies) == sorted(manifest["tables"])
    assert {b["run_id"] for b in bodies} == {run_id}
    with recorded_events() as events:
        for message, body in zip(messages, bodies, strict=True):
            if body["table"] != late:
                answer = fleet_lambda.advisor_handler({"Records": [record(message)]})
                assert answer == {"batchItemFailures": []}
    # (the advised table's progress logged as lines, its runs from the first to the last)
    said = [e for e in events if e.get("event") == "progress"]
    assert {e["table"] for e in said} == {good} and {e["run_id"] for e in said} == {run_id}
    assert said[0]["progress"].startswith("advise: 0% (0 of ")
    assert said[-1]["progress"].startswith("advise: 100% (") and len(said) == 21
    worked = [m for m in metrics(capsys.readouterr().out) if "TablesAdvised" in m]
    assert len(worked) == 10  # one record per message handled
    assert sum(m["TablesAdvised"] for m in worked) == 1
    assert sum(m["TablesIdle"] for m in worked) == 8  # idle: counted apart, never alarmed
    assert sum(m["TablesFailed"] for m in worked) == 1  # the deleted table: alarmed
    # AND the report lists the good table advised, the deleted one failed, the late missing
    counts = fleet_lambda.advisor_handler({"step": "report", "time": "2026-01-01T05:00:00Z"})
    assert counts == {"TablesReported": 11, "TablesMissing": 1, "Failures": 0}
    [emf] = metrics(capsys.readouterr().out)
    assert emf["TablesMissing"] == 1 and emf["Failures"] == 0
    # for this advisor (dimension ReportBucket, its bucket), never another's of the account
    (group,) = emf["_aws"]["CloudWatchMetrics"]
    assert group["Dimensions"] == [["ReportBucket"]]
    assert emf["ReportBucket"] == world["settings"].bucket
    for prefix in (f"runs/{run_id}", "latest"):
        doc = json.loads(
            world["s3"]
            .get_object(Bucket=world["settings"].bucket, Key=f"{prefix}/report.json")["Body"]
            .read()
        )
        rows = {r["table"]: r for r in doc["tables"]}
        assert rows[good]["status"] == "advised"
        assert rows[good]["current"] == "fixed:10"  # 10 units without auto scaling
        assert rows[good]["refusals_avoided_per_month"] > 0  # 200 WCU/s on 10
        assert rows[faulty]["status"] == "failed" and "no such table" in rows[faulty]["reason"]
        assert rows[late]["status"] == "missing"
        assert doc["run_id"] == run_id
    # AND each worker wrote its table's page beside its result; both fleet pages link it
    bucket = world["settings"].bucket
    table_page = f"runs/{run_id}/tables/{good}.html"
    answer = world["s3"].get_object(Bucket=bucket, Key=table_page)
    assert answer["ContentType"].startswith("text/html")
    assert "What to paste" in answer["Body"].read().decode()
    for prefix, href in (
        (f"runs/{run_id}", f"tables/{good}.html"),
        ("latest", f"../runs/{run_id}/tables/{good}.html"),
    ):
        fleet_page = world["s3"].get_object(Bucket=bucket, Key=f"{prefix}/report.html")
        assert f'href="{href}"' in fleet_page["Body"].read().decode()


def test_an_invalid_message_is_counted_and_dropped(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    bad = [
        "not json",
        json.dumps({"run_id": "../../etc", "table": "Orders"}),
        json.dumps({"run_id": run_id_of(world["moment"]), "table": "a/b\x1b[2J"}),
        json.dumps(["a list"]),
        '{"run_id": ' + "[" * 992 + "]" * 992 + ', "table": "Orders"}',  # deeper than repr
        json.dumps({"run_id": run_id_of(world["moment"]), "table": "Orders", "x": "y" * 5000}),
    ]
    records: list[Any] = [{"messageId": str(n), "body": b} for n, b in enumerate(bad)]
    event = {"Records": [*records, "not a record", None]}  # the last two: SQS never sends
    with recorded_events() as events:
        assert fleet_lambda.worker_handler(event) == {"batchItemFailures": []}
    out = capsys.readouterr().out
    [emf] = metrics(out)
    assert emf["Failures"] == 8 and emf["TablesAdvised"] == 0
    assert [e["record"] for e in events if e["event"] == "invalid_record"] == [
        "'not a record'",
        "None",
    ]
    listed = world["s3"].list_objects_v2(Bucket=world["settings"].bucket)
    assert listed.get("KeyCount", 0) == 0  # nothing written


@pytest.mark.parametrize("event", [{}, {"step": "advise"}, {"step": ["list"]}, "list", None])
def test_an_event_of_no_step_is_counted_and_fails_the_run(
    event: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ValueError, match="step: got .*; expected 'list' or 'report'"):
        fleet_lambda.advisor_handler(event)
    [emf] = metrics(capsys.readouterr().out)
    assert emf["Failures"] == 1


def test_a_result_that_cannot_be_written_is_a_batch_item_failure(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    name = busy(world, f"FleetNoBucket{datetime.now(UTC):%H%M%S%f}", 100)
    monkeypatch.setenv("FLEET_ADVISOR_BUCKET", "no-such-bucket-for-results")
    body = json.dumps({"run_id": run_id_of(world["moment"]), "table": name})
    answer = fleet_lambda.worker_handler({"Records": [{"messageId": "m-1", "body": body}]})
    assert answer == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}
    [emf] = metrics(capsys.readouterr().out)
    assert emf["Failures"] == 1


def test_a_report_without_a_recent_run_is_a_failure(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    settings = world["settings"]
    assert fleet_lambda.report_run(world["s3"], settings, world["moment"]) == {"Failures": 1}
    old = world["moment"] - timedelta(minutes=settings.report_delay_minutes + 61)
    world["s3"].put_object(
        Bucket=settings.bucket, Key="runs/latest.json", Body=json.dumps({"run_id": run_id_of(old)})
    )
    assert fleet_lambda.report_run(world["s3"], settings, world["moment"]) == {"Failures": 1}


def test_settings_round_trip_and_name_the_bad_variable() -> None:
    settings = AdvisorSettings("bucket-1", "https://q", 7, 120, "on-demand,stock:70")
    assert AdvisorSettings.from_env(settings.to_env()) == settings
    assert settings.candidate_list == ["on-demand", "stock:70"]
    env = {**settings.to_env(), "FLEET_ADVISOR_DAYS": "16"}
    with pytest.raises(SettingsError, match="FLEET_ADVISOR_DAYS: got 16; expected a whole"):
        AdvisorSettings.from_env(env)
    env = {**settings.to_env(), "FLEET_ADVISOR_DAYS": "x"}
    with pytest.raises(SettingsError, match="FLEET_ADVISOR_DAYS: got 'x'; expected a whole"):
        AdvisorSettings.from_env(env)
    with pytest.raises(SettingsError, match="FLEET_ADVISOR_BUCKET is not set"):
        AdvisorSettings.from_env({})
    assert time_of("20261122T0200Z") == datetime(2026, 11, 22, 2, 0, tzinfo=UTC)
    assert time_of("20261399T0200Z") is None and time_of(None) is None


@pytest.mark.parametrize("listed", [True, False], ids=["listed", "listing-denied"])
def test_a_result_that_cannot_be_read_is_a_counted_failure_named_by_the_manifest(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str], listed: bool
) -> None:
    # GIVEN a run whose manifest lists three tables: one result names another table, one is
    # not a JSON object, and one is missing (and the results either listed, or their
    # listing denied: every table's is then asked for)
    settings, s3 = world["settings"], world["s3"]
    if not listed:
        s3 = boto3.client("s3")
        denied = ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "ListObjectsV2")
        s3.meta.events.register("before-call.s3.ListObjectsV2", lambda **_: _raise(denied))
    run_id = run_id_of(world["moment"])
    names = ["Named", "Broken", "Absent"]

    def put(key: str, body: object) -> None:
        s3.put_object(Bucket=settings.bucket, Key=key, Body=json.dumps(body).encode())

    put("runs/latest.json", {"run_id": run_id})
    put(f"runs/{run_id}/manifest.json", {"tables": names, "days": 1})
    put(f"runs/{run_id}/tables/Named.json", {"table": "<b>Other</b>", "status": "failed"})
    put(f"runs/{run_id}/tables/Broken.json", [1, 2])
    # WHEN the report runs
    with recorded_events() as events:
        counts = fleet_lambda.report_run(s3, settings, world["moment"])
    # THEN the unreadable one is a failure, counted (and a listing denied, one more); every
    # row is named by the manifest
    assert counts == {"TablesReported": 3, "TablesMissing": 1, "Failures": 1 + (not listed)}
    assert ("results_not_listed" in [e["event"] for e in events]) != listed
    doc = json.loads(
        s3.get_object(Bucket=settings.bucket, Key=f"runs/{run_id}/report.json")["Body"].read()
    )
    rows = {r["table"]: r for r in doc["tables"]}
    assert set(rows) == set(names)
    assert rows["Broken"]["status"] == "failed" and "not a JSON object" in rows["Broken"]["reason"]
    assert rows["Absent"]["status"] == "missing"


def strict_json(body: bytes) -> Any:
    """JSON as RFC 8259 has it: ``Infinity`` and ``NaN`` are refused."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(body, parse_constant=refuse)


def test_tampered_finite_figures_are_unreadable_results_and_the_report_stays_json(
    world: dict[str, Any],
) -> None:
    # GIVEN a run whose results hold figures a real result cannot: the largest floats
    # (their sums overflow), an integer too large for a float, and one honest result
    settings, s3 = world["settings"], world["s3"]
    run_id = run_id_of(world["moment"])
    huge = 1.7e308

    def result(usd: Any, now_usd: Any) -> dict[str, Any]:
        return {
            "status": "advised",
            "recommended": "on-demand",
            "options": [{"policy": "on-demand", "usd_per_month": usd, "refused_per_month": 0}],
            "current": {"policy": "fixed:5", "usd_per_month": now_usd, "refused_per_month": 0},
        }

    results = {
        "Plus": result(-huge, huge),
        "Minus": result(huge, -huge),
        "Wide": result(10**400, 1.0),
        "Honest": result(2.5, 4.0),
    }
    s3.put_object(
        Bucket=settings.bucket, Key="runs/latest.json", Body=json.dumps({"run_id": run_id})
    )
    s3.put_object(
        Bucket=settings.bucket,
        Key=f"runs/{run_id}/manifest.json",
        Body=json.dumps({"tables": list(results), "days": 1}),
    )
    for name, doc in results.items():
        s3.put_object(
            Bucket=settings.bucket, Key=f"runs/{run_id}/tables/{name}.json", Body=json.dumps(doc)
        )
    # WHEN the report runs
    counts = fleet_lambda.report_run(s3, settings, world["moment"])
    # THEN the three tampered results are counted as unreadable, failed rows that say why,
    # and report.json is JSON (no Infinity) with the honest table's figures in its totals
    assert counts == {"TablesReported": 4, "TablesMissing": 0, "Failures": 3}
    body = s3.get_object(Bucket=settings.bucket, Key=f"runs/{run_id}/report.json")["Body"]
    doc = strict_json(body.read())
    rows = {r["table"]: r for r in doc["tables"]}
    for name in ("Plus", "Minus", "Wide"):
        assert rows[name]["status"] == "failed"
        assert "usd_per_month" in rows[name]["reason"] and "from 0 to" in rows[name]["reason"]
    assert rows["Honest"]["usd_saved_per_month"] == 1.5
    assert doc["totals"]["usd_saved_per_month"] == 1.5


@pytest.mark.parametrize("days", ["1e400", "-1e400", '"7<br>"', "true", "15", "3.5", "[7]"])
def test_a_manifests_odd_days_is_left_out_of_the_report(world: dict[str, Any], days: str) -> None:
    # GIVEN a run whose manifest's days is no whole number of days from 1 to 14 (1e400 reads
    # as infinity, which JSON cannot write back)
    settings, s3 = world["settings"], world["s3"]
    run_id = run_id_of(world["moment"])
    s3.put_object(
        Bucket=settings.bucket, Key="runs/latest.json", Body=json.dumps({"run_id": run_id})
    )
    s3.put_object(
        Bucket=settings.bucket,
        Key=f"runs/{run_id}/manifest.json",
        Body='{"tables": ["Orders"], "days": ' + days + "}",
    )
    s3.put_object(
        Bucket=settings.bucket,
        Key=f"runs/{run_id}/tables/Orders.json",
        Body=json.dumps({"table": "Orders", "status": "idle", "reason": "no traffic"}),
    )
    # WHEN the report runs
    counts = fleet_lambda.report_run(s3, settings, world["moment"])
    # THEN the report is written, its table in it, without a number of days
    assert counts["TablesReported"] == 1 and counts["Failures"] == 0
    body = s3.get_object(Bucket=settings.bucket, Key=f"runs/{run_id}/report.json")["Body"]
    doc = strict_json(body.read())
    assert doc["days"] is None
    assert [r["table"] for r in doc["tables"]] == ["Orders"]


def on_demand(world: dict[str, Any], names: list[str]) -> None:
    """On-demand tables named ``names``, without traffic."""
    for name in names:
        world["ddb"].create_table(
            TableName=name,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        )


def test_a_send_that_fails_leaves_out_its_batch_alone(world: dict[str, Any]) -> None:
    # GIVEN 25 tables (three SendMessageBatch calls of 10), the second call failing each
    # time it is made (an AWS error after botocore's retries)
    stamp = f"{datetime.now(UTC):%H%M%S%f}"
    names = [f"Send{n:02d}{stamp}" for n in range(25)]
    on_demand(world, names)
    sqs = boto3.client("sqs")
    calls: list[list[str]] = []

    def failing(params: dict[str, Any], **_: Any) -> None:
        tables = [json.loads(e["MessageBody"])["table"] for e in params["Entries"]]
        calls.append(tables)
        if tables[0] == names[10]:
            raise ClientError(
                {"Error": {"Code": "InternalError", "Message": "try again"}}, "SendMessageBatch"
            )

    sqs.meta.events.register("before-parameter-build.sqs.SendMessageBatch", failing)
    # WHEN the lister runs
    with recorded_events() as events:
        counts = fleet_lambda.list_run(
            world["ddb"], world["s3"], sqs, world["settings"], world["moment"]
        )
    # THEN the failing batch is tried twice and counted, and the batch after it is sent
    assert counts == {"TablesListed": 25, "Failures": 10}
    assert [c[0] for c in calls] == [names[0], names[10], names[10], names[20]]
    sent = sorted(json.loads(m["Body"])["table"] for m in receive(world))
    assert sent == names[:10] + names[20:]
    (logged,) = [e for e in events if e["event"] == "messages_not_sent"]
    assert logged["tables"] == names[10:20] and logged["error"].startswith("InternalError")
    # AND the report (no worker ran) tells the tables never sent from those not advised
    reasons = {r.table: r.reason for r in report_rows(world)}
    assert all(reasons[t] == "no result: its advice did not finish in time" for t in sent)
    for table in names[10:20]:
        assert reasons[table].startswith("no result: it was never sent for advice (InternalError")


def report_rows(world: dict[str, Any]) -> list[Any]:
    """The rows of the report of the run the lister started at ``world``'s moment."""
    fleet_lambda.report_run(world["s3"], world["settings"], world["moment"])
    key = f"runs/{run_id_of(world['moment'])}/report.json"
    doc = json.loads(
        world["s3"].get_object(Bucket=world["settings"].bucket, Key=key)["Body"].read()
    )
    return [SimpleNamespace(**row) for row in doc["tables"]]


def test_an_entry_the_answer_lists_as_failed_is_reported_with_its_code(
    world: dict[str, Any],
) -> None:
    # GIVEN 3 tables, and SendMessageBatch answers that list one of them as failed each time
    stamp = f"{datetime.now(UTC):%H%M%S%f}"
    names = [f"Failed{n}{stamp}" for n in range(3)]
    on_demand(world, names)
    sqs = boto3.client("sqs")

    def failing(parsed: dict[str, Any], **_: Any) -> None:
        entry = parsed["Successful"].pop(0)
        failed = {"Id": entry["Id"], "Code": "KMS.ThrottlingException", "SenderFault": False}
        parsed["Failed"] = [{**failed, "Message": "slow down"}]

    sqs.meta.events.register("after-call.sqs.SendMessageBatch", failing)
    # WHEN the lister runs
    with recorded_events() as events:
        counts = fleet_lambda.list_run(
            world["ddb"], world["s3"], sqs, world["settings"], world["moment"]
        )
    # THEN that table is counted, logged and reported with the code the answer gave
    assert counts == {"TablesListed": 3, "Failures": 1}
    (logged,) = [e for e in events if e["event"] == "messages_not_sent"]
    (table,) = logged["tables"]
    assert "KMS.ThrottlingException: slow down" in logged["error"]
    reasons = {r.table: r.reason for r in report_rows(world)}
    assert reasons[table] == (
        "no result: it was never sent for advice (SendMessageBatch failed it: "
        "KMS.ThrottlingException: slow down)"
    )


def test_a_fleet_whose_every_send_fails_keeps_its_report_and_its_counts(
    world: dict[str, Any],
) -> None:
    # GIVEN 25 tables of names as long as DynamoDB allows, every SendMessageBatch denied:
    # the run's record of them is written once, and once it cannot be
    stamp = f"{datetime.now(UTC):%H%M%S%f}"
    names = [f"{n:02d}{stamp}".ljust(255, "x") for n in range(25)]
    denied = ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "SendMessageBatch")
    sqs = boto3.client("sqs")
    sqs.meta.events.register("before-call.sqs.SendMessageBatch", lambda **_: _raise(denied))

    def lister(s3: Any) -> dict[str, int]:
        # tables ListTables answers, not made in the moto server (their names alone count)
        from botocore.stub import Stubber

        dynamodb = boto3.client("dynamodb")
        with Stubber(dynamodb) as stub, recorded_events() as events:
            stub.add_response("list_tables", {"TableNames": names})
            counts = fleet_lambda.list_run(dynamodb, s3, sqs, world["settings"], world["moment"])
        assert [e["event"] for e in events].count("messages_not_sent") == 3
        return counts

    # WHEN the lister runs THEN every table is counted, and the report gives each its reason
    assert lister(boto3.client("s3")) == {"TablesListed": 25, "Failures": 25}
    reasons = {r.table: r.reason for r in report_rows(world)}
    assert sorted(reasons) == names
    assert all(
        r.startswith("no result: it was never sent for advice (AccessDenied")
        for r in reasons.values()
    )
    # AND WHEN the record cannot be written THEN that is one failure more, the counts kept
    failing = boto3.client("s3")
    failing.meta.events.register(
        "before-parameter-build.s3.PutObject",
        lambda params, **_: _raise(denied) if params["Key"].endswith("unsent.json") else None,
    )
    with recorded_events() as events:
        assert lister(failing) == {"TablesListed": 25, "Failures": 26}
    assert [e["event"] for e in events].count("unsent_not_recorded") == 1


@pytest.mark.parametrize(
    ("record", "failures"),
    [
        ('{"Throttled": ["TABLE", 5, {"x": 1}], "7": "not a list"}', 0),
        ('["TABLE"]', 1),
        ("{not json", 1),
    ],
    ids=["odd-entries", "not-an-object", "not-json"],
)
def test_the_record_of_unsent_tables_is_untrusted(
    world: dict[str, Any], record: str, failures: int
) -> None:
    # GIVEN a run of two tables that were never advised, and a record of unsent tables as
    # anyone with the bucket may have written it
    stamp = f"{datetime.now(UTC):%H%M%S%f}"
    names = [f"Record{n}{stamp}" for n in range(2)]
    on_demand(world, names)
    fleet_lambda.list_run(
        world["ddb"], world["s3"], world["sqs"], world["settings"], world["moment"]
    )
    key = f"runs/{run_id_of(world['moment'])}/unsent.json"
    body = record.replace("TABLE", names[0])
    world["s3"].put_object(Bucket=world["settings"].bucket, Key=key, Body=body.encode())
    # WHEN the report runs
    with recorded_events() as events:
        counts = fleet_lambda.report_run(world["s3"], world["settings"], world["moment"])
    # THEN a record it cannot read is a counted failure, and only what reads as a table and
    # an error gives a reason: every other table's advice did not finish
    assert counts["Failures"] == failures and counts["TablesMissing"] == 2
    assert [e["event"] for e in events].count("unsent_not_read") == failures
    reasons = {r.table: r.reason for r in report_rows(world)}
    late = "no result: its advice did not finish in time"
    sent = "no result: it was never sent for advice (Throttled)"
    assert reasons == {names[0]: late if failures else sent, names[1]: late}


def _raise(error: Exception) -> None:
    raise error


def test_an_entry_the_answer_does_not_list_as_sent_is_sent_again(world: dict[str, Any]) -> None:
    # GIVEN 3 tables, and a first SendMessageBatch answer that lists one of them nowhere
    stamp = f"{datetime.now(UTC):%H%M%S%f}"
    names = [f"Listed{n}{stamp}" for n in range(3)]
    on_demand(world, names)
    sqs = boto3.client("sqs")
    answers: list[int] = []

    def silent(parsed: dict[str, Any], **_: Any) -> None:
        answers.append(len(parsed.get("Successful", [])))
        if len(answers) == 1:
            parsed["Successful"] = parsed["Successful"][1:]

    sqs.meta.events.register("after-call.sqs.SendMessageBatch", silent)
    # WHEN the lister runs
    counts = fleet_lambda.list_run(
        world["ddb"], world["s3"], sqs, world["settings"], world["moment"]
    )
    # THEN the entry not listed is sent again (a message twice advises a table twice): every
    # table has its message, and nothing is counted unsent
    assert answers == [3, 1] and counts == {"TablesListed": 3, "Failures": 0}
    sent = sorted(json.loads(m["Body"])["table"] for m in receive(world))
    assert set(sent) == set(names) and len(sent) == 4


def test_a_run_of_more_tables_than_a_megabyte_names_is_reported_whole(
    world: dict[str, Any],
) -> None:
    # GIVEN a run whose manifest, and record of unsent tables, are larger than a result may
    # be: 4,000 tables of names as long as DynamoDB allows, none sent (SendMessageBatch
    # denied), so none has a result
    stamp = f"{datetime.now(UTC):%H%M%S%f}"
    names = [f"{n:04d}{stamp}".ljust(255, "x") for n in range(4_000)]
    assert len(json.dumps(names)) > fleet_lambda.MAX_OBJECT
    denied = ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "SendMessageBatch")
    sqs = boto3.client("sqs")
    sqs.meta.events.register("before-call.sqs.SendMessageBatch", lambda **_: _raise(denied))
    from botocore.stub import Stubber

    dynamodb = boto3.client("dynamodb")
    with Stubber(dynamodb) as stub:
        stub.add_response("list_tables", {"TableNames": names})
        counts = fleet_lambda.list_run(
            dynamodb, world["s3"], sqs, world["settings"], world["moment"]
        )
    assert counts == {"TablesListed": 4_000, "Failures": 4_000}
    # WHEN the report runs THEN it reads both and gives every table its reason, asking for
    # no result of a table that has none (GETs: the pointer, the manifest, the record of
    # unsent tables, and the test's own read of the report)
    gets: list[str] = []
    world["s3"].meta.events.register(
        "provide-client-params.s3.GetObject", lambda params, **_: gets.append(params["Key"])
    )
    reasons = {r.table: r.reason for r in report_rows(world)}
    assert len(gets) == 4, gets
    assert sorted(reasons) == names
    assert all("never sent for advice (AccessDenied" in r for r in reasons.values())
