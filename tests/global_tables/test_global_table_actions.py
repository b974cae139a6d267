"""The replica-schedule function (``ddb_capacity_runtime.global_tables.handler``) against a
moto server in two Regions, as ``AWS::DynamoDB::GlobalTable`` leaves them: each replica's
scalable targets exist, registered by the service. Create puts the library's actions in
its Region alone, update removes exactly what it dropped, delete removes only what it made;
an action or a target of anyone else is never touched. moto does not implement Application
Auto Scaling's TagResource and UntagResource, so those two calls go to a client under
botocore's Stubber, which checks each one's arguments. Two tests have the server check
every call against IAM (moto's ``reset-auth``): the function acts as the role its resource
names, and a Delete denied its deletes tries every one and fails, naming them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
import requests
from botocore.stub import Stubber

from ddb_capacity_runtime.core.errors import ReplicaScheduleError
from ddb_capacity_runtime.core.names import (
    OWNER_TAG,
    TARGET_TAG,
    resource_id,
    scalable_dimension,
)
from ddb_capacity_runtime.global_tables.handler import (
    CLEANUP_MS,
    PERMISSION_POLL_S,
    PERMISSION_WAIT_S,
    REASON_CHARS,
    on_event,
)
from ddb_capacity_runtime.global_tables.replica_actions import ACTION_PREFIX, parse_schedule
from ddb_capacity_tools import local_aws
from ddb_capacity_tools.local_aws import recorded_events
from tests.support.global_table_actions import (
    INDEX,
    REGIONS,
    TABLE,
    Tagger,
    action,
    actions_in,
    event,
    ours,
    props,
    run,
)
from tests.support.global_table_actions import targets as targets  # noqa: F401 (fixture)


def test_create_update_delete_in_two_regions(targets: dict[str, Any], moto_endpoint: str) -> None:
    taggers = {r: Tagger(moto_endpoint, r, targets[r]) for r in REGIONS}
    others = {r: set(actions_in(targets[r])) for r in REGIONS}
    table, index = resource_id(TABLE, None), resource_id(TABLE, INDEX)
    # GIVEN a write window in every replica, and a read schedule in eu-west-1 alone
    write = [action("launch-raise", "write", 400), action("launch-restore", "write", 5)]
    spec = {
        "us-east-1": props("us-east-1", *write),
        "eu-west-1": props("eu-west-1", *write, action("eu-reads", "read", 150, INDEX)),
    }
    for region in REGIONS:
        taggers[region].expect_tags()
        answer = run(targets, taggers[region], event("Create", spec[region]))
        assert answer["PhysicalResourceId"] == f"{TABLE}@{region}"
    # THEN each Region has its own actions, on the right targets, and nothing else changed
    launch = {(table, f"{ACTION_PREFIX}launch-raise"), (table, f"{ACTION_PREFIX}launch-restore")}
    assert ours(targets["us-east-1"]) == launch
    assert ours(targets["eu-west-1"]) == launch | {(index, f"{ACTION_PREFIX}eu-reads")}
    raised = actions_in(targets["eu-west-1"])[(table, f"{ACTION_PREFIX}launch-raise")]
    assert raised["ScalableDimension"] == "dynamodb:table:WriteCapacityUnits"
    assert raised["ScalableTargetAction"] == {"MinCapacity": 400}
    assert raised["Schedule"] == "cron(45 8 ? * MON-FRI *)"
    # WHEN eu-west-1's read schedule is dropped and the raise changed
    new = props("eu-west-1", action("launch-raise", "write", 600), write[1])
    taggers["eu-west-1"].expect_tags()
    run(targets, taggers["eu-west-1"], event("Update", new, spec["eu-west-1"]))
    # THEN exactly the dropped action is gone, the changed one replaced
    assert ours(targets["eu-west-1"]) == launch
    raised = actions_in(targets["eu-west-1"])[(table, f"{ACTION_PREFIX}launch-raise")]
    assert raised["ScalableTargetAction"] == {"MinCapacity": 600}
    # WHEN both are deleted (once more in us-east-1: a retried delete)
    for region, last in (("us-east-1", spec["us-east-1"]), ("eu-west-1", new)):
        taggers[region].expect_untags()
        run(targets, taggers[region], event("Delete", last))
    taggers["us-east-1"].expect_untags()
    run(targets, taggers["us-east-1"], event("Delete", spec["us-east-1"]))
    # THEN the library's actions are gone, and every other one is still there
    for region in REGIONS:
        assert ours(targets[region]) == set()
        assert set(actions_in(targets[region])) == others[region]


def denied_create(
    targets: dict[str, Any], moto_endpoint: str, denials: int, then_tags: bool, context: Any = None
) -> list[float]:
    """A Create in us-east-1 whose first ``denials`` TagResource calls are denied (its grant
    not yet in force), then tagged (``then_tags``); the waits it slept."""
    tagger = Tagger(moto_endpoint, "us-east-1", targets["us-east-1"])
    for _ in range(denials):
        tagger.stubber.add_client_error("tag_resource", "AccessDeniedException", "not authorized")
    if then_tags:
        tagger.expect_tags()
    slept: list[float] = []
    given = event("Create", props("us-east-1", action("launch-raise", "write", 400)))
    with tagger.stubber:
        try:
            on_event(given, context, targets.__getitem__, lambda _: tagger.client, slept.append)
        finally:
            tagger.stubber.assert_no_pending_responses()
    return slept


def test_a_create_denied_before_its_grant_is_in_force_waits_then_puts(
    targets: dict[str, Any], moto_endpoint: str
) -> None:
    # GIVEN a Create whose policy CloudFormation is still creating beside it: two denials
    slept = denied_create(targets, moto_endpoint, denials=2, then_tags=True)
    # THEN it asked again after each, then tagged and put its action
    assert slept == [PERMISSION_POLL_S, PERMISSION_POLL_S]
    assert ours(targets["us-east-1"]) == {
        (resource_id(TABLE, None), f"{ACTION_PREFIX}launch-raise")
    }
    tagger = Tagger(moto_endpoint, "us-east-1", targets["us-east-1"])
    tagger.expect_untags()  # and leaves the server as it found it
    run(targets, tagger, event("Delete", props("us-east-1", action("launch-raise", "write", 400))))


@pytest.mark.parametrize(
    ("left_ms", "waits"),
    [(None, PERMISSION_WAIT_S // PERMISSION_POLL_S), (CLEANUP_MS + 1000, 0)],
)
def test_a_denial_that_lasts_fails_the_create_naming_the_grant(
    targets: dict[str, Any], moto_endpoint: str, left_ms: int | None, waits: int
) -> None:
    # GIVEN a grant that never comes (or a function without the time to wait for it)
    context = None if left_ms is None else Lambda(left_ms)
    with pytest.raises(ReplicaScheduleError) as raised:
        denied_create(targets, moto_endpoint, denials=waits + 1, then_tags=False, context=context)
    # THEN it fails after waiting what it may, naming the grant, and puts nothing
    assert "AccessDeniedException" in str(raised.value)
    assert f"still denied after {waits * PERMISSION_POLL_S} s" in str(raised.value)
    assert "needs application-autoscaling:DescribeScalableTargets and TagResource" in str(
        raised.value
    )
    assert ours(targets["us-east-1"]) == set()


def test_the_old_resource_of_a_renamed_construct_leaves_the_new_ones_actions_and_tag(
    targets: dict[str, Any], moto_endpoint: str
) -> None:
    # GIVEN a resource's actions, and a second resource of the same table and Region (the
    # construct renamed: CloudFormation creates the new one first) with its own
    old = props("us-east-1", action("0ld00000-raise", "write", 400))
    new = props("us-east-1", action("4e000000-raise", "write", 400))
    tagger = Tagger(moto_endpoint, "us-east-1", targets["us-east-1"])
    for given in (old, new):
        tagger.expect_tags()
        run(targets, tagger, event("Create", given))
    # WHEN the old one is deleted
    write = (resource_id(TABLE, None), "dynamodb:table:WriteCapacityUnits")
    tagger.expect_untags(but=write)
    run(targets, tagger, event("Delete", old))
    # THEN only its actions are gone, and the target the new one schedules keeps its tag
    table = resource_id(TABLE, None)
    assert ours(targets["us-east-1"]) == {(table, f"{ACTION_PREFIX}4e000000-raise")}


def test_a_failed_creation_deletes_what_it_put(moto_endpoint: str) -> None:
    """The second put meets LimitExceededException (a target's 200 actions; moto never
    refuses one), so the first is deleted before the deployment fails. The whole client is
    under botocore's Stubber, which checks every call and its order."""
    autoscaling = local_aws.client(moto_endpoint, "application-autoscaling", "us-east-1")
    arn = "arn:aws:application-autoscaling:us-east-1:123456789012:scalable-target/0abc"
    target = {
        "ResourceId": resource_id(TABLE, None),
        "ScalableDimension": "dynamodb:table:WriteCapacityUnits",
    }
    put = {"ServiceNamespace": "dynamodb", **target, "Schedule": "cron(45 8 ? * MON-FRI *)"}
    put |= {"Timezone": "Europe/Paris"}
    with Stubber(autoscaling) as stub:
        stub.add_response(
            "describe_scalable_targets",
            {
                "ScalableTargets": [
                    {
                        **target,
                        "ServiceNamespace": "dynamodb",
                        "MinCapacity": 5,
                        "MaxCapacity": 100,
                        "RoleARN": "r",
                        "CreationTime": 0,
                        "ScalableTargetARN": arn,
                    }
                ]
            },
        )
        stub.add_response("tag_resource", {}, {"ResourceARN": arn, "Tags": {TARGET_TAG: TABLE}})
        first = {
            **put,
            "ScheduledActionName": f"{ACTION_PREFIX}good",
            "ScalableTargetAction": {"MinCapacity": 9},
        }
        stub.add_response("put_scheduled_action", {}, first)
        stub.add_client_error("put_scheduled_action", "LimitExceededException", "too many")
        stub.add_response(
            "delete_scheduled_action",
            {},
            {
                "ServiceNamespace": "dynamodb",
                **target,
                "ScheduledActionName": f"{ACTION_PREFIX}good",
            },
        )
        given = props("us-east-1", action("good", "write", 9), action("next", "write", 5))
        with pytest.raises(ReplicaScheduleError, match=f"'{TABLE}' in 'us-east-1'.*LimitExceeded"):
            on_event(event("Create", given), None, lambda _: autoscaling)
        stub.assert_no_pending_responses()


class Lambda:
    """Lambda's context: the function's time left, in milliseconds, call by call."""

    def __init__(self, *left: int) -> None:
        self.left = list(left)

    def get_remaining_time_in_millis(self) -> int:
        return self.left.pop(0) if len(self.left) > 1 else self.left[0]


def stubbed_create(
    names: list[str], puts: int, failing_deletes: set[str], context: Any = None
) -> ReplicaScheduleError:
    """A Create of actions ``names`` on the table's write target, under botocore's Stubber
    (which checks every call and its order): ``puts`` of them put, the next one refused
    (unless all are put), then every one put deleted again, those of ``failing_deletes``
    throttled; the error it fails with."""
    autoscaling = boto3.client(
        "application-autoscaling", region_name="us-east-1", aws_access_key_id="x",
        aws_secret_access_key="x",
    )  # fmt: skip
    arn = "arn:aws:application-autoscaling:us-east-1:123456789012:scalable-target/0abc"
    target = {
        "ServiceNamespace": "dynamodb",
        "ResourceId": resource_id(TABLE, None),
        "ScalableDimension": "dynamodb:table:WriteCapacityUnits",
    }
    listed = {**target, "MinCapacity": 5, "MaxCapacity": 100, "RoleARN": "r", "CreationTime": 0}
    with Stubber(autoscaling) as stub:
        stub.add_response(
            "describe_scalable_targets", {"ScalableTargets": [{**listed, "ScalableTargetARN": arn}]}
        )
        stub.add_response("tag_resource", {}, {"ResourceARN": arn, "Tags": {TARGET_TAG: TABLE}})
        for _ in names[:puts]:
            stub.add_response("put_scheduled_action", {})
        if puts < len(names) and context is None:
            stub.add_client_error("put_scheduled_action", "LimitExceededException", "too many")
        for name in names[:puts]:
            expected = {**target, "ScheduledActionName": f"{ACTION_PREFIX}{name}"}
            if name in failing_deletes:
                stub.add_client_error(
                    "delete_scheduled_action",
                    "ThrottlingException",
                    "slow",
                    expected_params=expected,
                )
            else:
                stub.add_response("delete_scheduled_action", {}, expected)
        given = props("us-east-1", *(action(n, "write", 9) for n in names))
        with pytest.raises(ReplicaScheduleError) as raised:
            on_event(event("Create", given), context, lambda _: autoscaling)
        stub.assert_no_pending_responses()
    return raised.value


def test_a_failed_creation_tries_every_delete_and_names_what_stays() -> None:
    # GIVEN a Create whose fourth put is refused, and whose first delete after it is
    # throttled (after botocore's retries)
    names = ["a0", "a1", "a2", "a3", "a4"]
    # WHEN it fails THEN every other action it put is deleted, and the error names the
    # cause and the action left on the target
    error = stubbed_create(names, puts=3, failing_deletes={"a0"})
    assert "LimitExceededException" in str(error)
    assert f"actions left on the targets: {ACTION_PREFIX}a0 (ClientError" in str(error)


def test_a_creation_short_of_time_stops_and_deletes_what_it_put() -> None:
    # GIVEN a Create of five actions in a function with 60 s left, then 10 s after two puts
    context = Lambda(60_000, 60_000, 10_000)
    # WHEN it runs THEN it puts no more, deletes the two it put, and says why
    error = stubbed_create(["a0", "a1", "a2", "a3", "a4"], 2, set(), context)
    assert "TimeoutError: 2 of 5 actions put when the function's time ran low" in str(error)


def test_a_rollback_from_properties_never_acted_on_puts_the_good_ones(
    targets: dict[str, Any], moto_endpoint: str
) -> None:
    # GIVEN an Update that failed on properties naming an action not the library's, and
    # CloudFormation's rollback: an Update back, those properties now the old ones
    good = props("us-east-1", action("a", "write", 5))
    bad = props("us-east-1", action("a", "write", 5))
    bad["Actions"][0]["ScheduledActionName"] = "operators-own"
    tagger = Tagger(moto_endpoint, "us-east-1", targets["us-east-1"])
    tagger.expect_tags()
    # WHEN the rollback runs THEN it succeeds: the good action is put, nothing deleted
    with recorded_events() as events:
        run(targets, tagger, event("Update", good, bad))
    assert (resource_id(TABLE, None), f"{ACTION_PREFIX}a") in actions_in(targets["us-east-1"])
    assert (resource_id(TABLE, None), "operators-own") in actions_in(targets["us-east-1"])
    assert [e["event"] for e in events] == [
        "replica-schedule-old-properties-unread",
        "replica-schedule-updated",
    ]


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ({"RequestType": "Replace", "ResourceProperties": {}}, "RequestType: got 'Replace'"),
        ({"RequestType": "Create", "ResourceProperties": ["x"]}, "properties: got list"),
    ],
)
def test_an_event_not_shaped_as_cloudformations_is_refused(
    shape: dict[str, Any], message: str
) -> None:
    with pytest.raises(ReplicaScheduleError, match=message):
        on_event(shape, None, lambda _: pytest.fail("no call"))


def test_a_dimension_with_no_target_is_refused_naming_it(
    targets: dict[str, Any], moto_endpoint: str
) -> None:
    autoscaling = targets["us-east-1"]
    autoscaling.deregister_scalable_target(
        ServiceNamespace="dynamodb",
        ResourceId=resource_id(TABLE, INDEX),
        ScalableDimension=scalable_dimension(INDEX, "read"),
    )
    tagger = Tagger(moto_endpoint, "us-east-1", autoscaling)
    before = set(actions_in(autoscaling))
    with pytest.raises(ReplicaScheduleError, match=f"no scalable target for {INDEX} read"):
        run(targets, tagger, event("Create", props("us-east-1", action("r", "read", 9, INDEX))))
    assert set(actions_in(autoscaling)) == before


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (
            lambda p: p["Actions"][0].update(ScheduledActionName="operators-own"),
            "ScheduledActionName",
        ),
        (lambda p: p["Actions"][0].update(Dimension="both"), "Dimension"),
        (lambda p: p["Actions"][0].update(Index="unknown"), "Index"),
        (lambda p: p["Actions"][0].update(Index=["byCustomer"]), "Index"),
        (lambda p: p["Actions"][0]["ScalableTargetAction"].update(MinCapacity="0"), "MinCapacity"),
        (
            lambda p: p["Actions"][0]["ScalableTargetAction"].update(MinCapacity="1e3"),
            "MinCapacity",
        ),
        (lambda p: p.update(Region="not a region"), "Region"),
        (lambda p: p.update(TableName="x"), "TableName"),
        (lambda p: p.update(Actions=[p["Actions"][0]] * 2), "used twice"),
        (lambda p: p.update(RoleArn="arn:aws:iam::123456789012:user/someone"), "RoleArn"),
        (lambda p: p.update(RoleArn={"Fn::GetAtt": ["Role", "Arn"]}), "RoleArn"),
    ],
)
def test_properties_that_are_not_the_librarys_are_refused(change: Any, field: str) -> None:
    given = props("us-east-1", action("a", "write", 5))
    change(given)
    with pytest.raises(ReplicaScheduleError, match=field):
        parse_schedule(given)


def test_an_action_of_another_name_is_never_deleted(
    targets: dict[str, Any], moto_endpoint: str
) -> None:
    """A delete whose properties were changed to name the operator's own action refuses,
    and the action stays."""
    given = props("us-east-1", action("a", "write", 5))
    given["Actions"][0]["ScheduledActionName"] = "operators-own"
    tagger = Tagger(moto_endpoint, "us-east-1", targets["us-east-1"])
    with pytest.raises(ReplicaScheduleError, match="ScheduledActionName"):
        run(targets, tagger, event("Delete", given))
    assert (resource_id(TABLE, None), "operators-own") in actions_in(targets["us-east-1"])


TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}],
}


def allow(action: str) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": action, "Resource": "*"}],
        }
    )


@contextmanager
def enforcing(moto_endpoint: str) -> Iterator[tuple[Any, dict[str, str]]]:
    """The moto server checking every call against IAM (its ``reset-auth``), with a
    session that may do anything, and the environment of the replica-schedule function's
    own credentials (an IAM user given no policy); unchecked again afterwards."""
    # the users made before any call is checked (a call of another thread meanwhile cannot
    # take one of a counted few unchecked calls)
    iam = local_aws.client(moto_endpoint, "iam")
    iam.create_user(UserName="admin")
    iam.put_user_policy(UserName="admin", PolicyName="all", PolicyDocument=allow("*"))
    key = iam.create_access_key(UserName="admin")["AccessKey"]
    admin = boto3.Session(
        region_name="us-east-1",
        aws_access_key_id=key["AccessKeyId"],
        aws_secret_access_key=key["SecretAccessKey"],
    )
    iam.create_user(UserName="replica-schedules")
    own = iam.create_access_key(UserName="replica-schedules")["AccessKey"]
    reset = f"{moto_endpoint}/moto-api/reset-auth"
    requests.post(reset, data="0", timeout=10).raise_for_status()  # every call checked from now
    try:
        env = {
            **local_aws.aws_env(moto_endpoint),
            "AWS_ACCESS_KEY_ID": own["AccessKeyId"],
            "AWS_SECRET_ACCESS_KEY": own["SecretAccessKey"],
        }
        yield admin, env
    finally:
        requests.post(reset, data="inf", timeout=10).raise_for_status()


def role(admin: Any, name: str, grant: str | None) -> str:
    """A role any principal may assume, allowed ``grant`` (None: nothing); its ARN."""
    arn = admin.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(TRUST))["Role"][
        "Arn"
    ]
    if grant is not None:
        admin.put_role_policy(RoleName=name, PolicyName="grant", PolicyDocument=allow(grant))
    return str(arn)


def test_the_function_acts_as_the_role_its_resource_names(
    targets: dict[str, Any], moto_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    autoscaling = targets["us-east-1"]
    for (resource, name), found in actions_in(autoscaling).items():  # earlier tests' own
        if name.startswith(ACTION_PREFIX):
            autoscaling.delete_scheduled_action(
                ServiceNamespace="dynamodb",
                ScheduledActionName=name,
                ResourceId=resource,
                ScalableDimension=found["ScalableDimension"],
            )
    tagger = Tagger(moto_endpoint, "us-east-1", autoscaling)  # moto has no TagResource
    scheduling = "arn:aws:iam::123456789012:role/OrdersScheduleRole"  # made below
    for _ in range(3):  # a Create and two Updates tag, naming the role; the Delete untags
        tagger.expect_tags(owner=scheduling)
    tagger.expect_untags(owner=scheduling)
    given = props("us-east-1", action("launch-raise", "write", 400))

    def call(kind: str, role: str | None, old: str | None = None, **kw: Any) -> dict[str, Any]:
        def named(arn: str | None) -> dict[str, Any]:
            return {**given, **({} if arn is None else {"RoleArn": arn})}

        ev = event(kind, named(role), named(old) if kind == "Update" else None)
        with tagger.stubber:
            return on_event(ev, kw.pop("context", None), tagger_of=lambda _: tagger.client, **kw)

    with enforcing(moto_endpoint) as (session, env):
        admin = session.client("iam", endpoint_url=moto_endpoint)
        watched = session.client("application-autoscaling", endpoint_url=moto_endpoint)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        # boto3's default session keeps the credentials it first found: a new one reads these
        monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
        # GIVEN the function's own credentials, which may not yet assume roles, and two
        # roles: the table's, which may call Application Auto Scaling, and one that may not
        assert role(admin, "OrdersScheduleRole", "application-autoscaling:*") == scheduling
        bare = role(admin, "BareRole", None)

        slept: list[float] = []

        def granted(seconds: float) -> None:  # IAM applies the grant while the function waits
            slept.append(seconds)
            admin.put_user_policy(
                UserName="replica-schedules",
                PolicyName="assume",
                PolicyDocument=allow("sts:AssumeRole"),
            )

        # WHEN a Create's AssumeRole is denied with no time left to wait THEN it fails,
        # naming what the function's role needs
        with pytest.raises(ReplicaScheduleError) as raised:
            call("Create", scheduling, context=Lambda(CLEANUP_MS))
        assert (
            f"still denied after 0 s: the replica-schedule function's role needs sts:AssumeRole on {scheduling}"
            in str(raised.value)
        )
        # WHEN a Create names the table's role, its AssumeRole denied at first, THEN it asks
        # again, and its calls are made as that role
        answer = call("Create", scheduling, sleep=granted)
        assert answer["PhysicalResourceId"] == f"{TABLE}@us-east-1" and slept == [PERMISSION_POLL_S]
        # WHEN one names a role that may not, or none, THEN it is denied as that role, or
        # as the function itself
        for role_arn, who in (
            (bare, "assumed-role/BareRole/ddb-capacity-replica-schedule"),
            (None, "user/replica-schedules"),
        ):
            with pytest.raises(ReplicaScheduleError) as raised:
                call("Create", role_arn, context=Lambda(CLEANUP_MS))
            assert f"{who} is not authorized to perform: application-autoscaling:" in str(
                raised.value
            )
        # WHEN the first Update names the role (the properties before it named none), and a
        # rollback goes back to those, THEN both act as the role
        call("Update", scheduling, old=None)
        call("Update", None, old=scheduling)
        # WHEN a Delete names no role (a resource of before the roles) THEN it is made as
        # the function itself, which may not: it fails, naming the table and who was denied
        with pytest.raises(
            ReplicaScheduleError, match=f"(?s)table '{TABLE}'.*user/replica-schedules is not"
        ):
            call("Delete", None)
        # WHEN the resource is deleted as its role THEN its action is gone
        call("Delete", scheduling)
        assert ours(watched) == set()
        tagger.stubber.assert_no_pending_responses()


ROLE = "arn:aws:iam::123456789012:role/Global-OrdersCapacityScheduleRole-0a1b"
"""The role that put a replica's actions in the Delete tests."""
OTHER_ROLE = "arn:aws:iam::123456789012:role/Global-RenamedCapacityScheduleRole-9f8e"


def create_as_role(targets: dict[str, Any], tagger: Tagger, given: dict[str, Any]) -> Any:
    """``given`` created as the role it names (each target tagged by it); the maker of the
    role's clients, for later events."""
    tagger.expect_tags(owner=given["RoleArn"])

    def as_role(arn: str) -> Any:
        return targets.__getitem__

    with tagger.stubber:
        on_event(
            event("Create", given),
            None,
            targets.__getitem__,
            lambda _: tagger.client,
            as_role=as_role,
        )
    return as_role


def test_a_delete_leaves_the_tags_of_targets_another_role_took_over(
    targets: dict[str, Any], moto_endpoint: str
) -> None:
    # GIVEN a replica's action put by a role, whose targets another resource's role has
    # since tagged (the construct renamed: its new resource is created before the old one's
    # Delete, and schedules other targets of the table)
    role = ROLE
    given = {**props("us-east-1", action("launch-raise", "write", 400)), "RoleArn": role}
    tagger = Tagger(moto_endpoint, "us-east-1", targets["us-east-1"])
    as_role = create_as_role(targets, tagger, given)
    for arn in tagger.arns(TABLE):
        tagger.stubber.add_response(
            "list_tags_for_resource",
            {"Tags": {TARGET_TAG: TABLE, OWNER_TAG: OTHER_ROLE}},
            {"ResourceARN": arn},
        )
    # WHEN the old resource is deleted THEN its action is gone, and no target's tags are
    # removed (no untag is expected: the Stubber fails any)
    with tagger.stubber, recorded_events() as events:
        on_event(
            event("Delete", given),
            None,
            targets.__getitem__,
            lambda _: tagger.client,
            as_role=as_role,
        )
        tagger.stubber.assert_no_pending_responses()
    assert (resource_id(TABLE, None), f"{ACTION_PREFIX}launch-raise") not in ours(
        targets["us-east-1"]
    )
    (deleted,) = [e for e in events if e["event"] == "replica-schedule-deleted"]
    assert len(deleted["tag_kept"]) == len(tagger.arns(TABLE))


def test_a_delete_tries_every_untag_and_fails_naming_tags_unread_or_left(
    targets: dict[str, Any], moto_endpoint: str
) -> None:
    # GIVEN a replica's action on the table's write target, put by its role, and of the
    # table's four targets (free once it is deleted), one whose tags cannot be read (a
    # service control policy denies it) and one whose tags cannot be removed (moto has
    # neither call: botocore's Stubber answers both)
    role = ROLE
    given = {**props("us-east-1", action("launch-raise", "write", 400)), "RoleArn": role}
    tagger = Tagger(moto_endpoint, "us-east-1", targets["us-east-1"])
    as_role = create_as_role(targets, tagger, given)
    unread, stuck, *freed = tagger.arns(TABLE)
    tags = {"Tags": {TARGET_TAG: TABLE, OWNER_TAG: role}}
    tagger.stubber.add_client_error("list_tags_for_resource", "AccessDeniedException", "scp")
    for arn in (stuck, *freed):
        tagger.stubber.add_response("list_tags_for_resource", tags, {"ResourceARN": arn})
    tagger.stubber.add_client_error("untag_resource", "ValidationException", "not now")
    for arn in freed:
        tagger.stubber.add_response(
            "untag_resource", {}, {"ResourceARN": arn, "TagKeys": [TARGET_TAG, OWNER_TAG]}
        )
    # WHEN the resource is deleted THEN its action is gone and every target's tags are
    # tried, and the Delete fails, naming the target whose tags it could not read (kept)
    # and the one whose tags it could not remove
    with tagger.stubber, recorded_events() as events:
        with pytest.raises(ReplicaScheduleError) as raised:
            on_event(
                event("Delete", given),
                None,
                targets.__getitem__,
                lambda _: tagger.client,
                as_role=as_role,
            )
        tagger.stubber.assert_no_pending_responses()
    assert ours(targets["us-east-1"]) == set()
    assert str(raised.value) == (
        f"table '{TABLE}' in 'us-east-1': ReplicaScheduleError: the Delete left targets "
        f"whose tags it could not read (their tags kept): {unread} (ClientError: 'An error "
        "occurred (AccessDeniedException) when calling the ListTagsForResource operation: "
        f"scp'); targets whose tags it could not remove: {stuck} (ValidationException: 'An "
        "error occurred (ValidationException) when calling the UntagResource operation: not "
        "now')"
    )
    (left,) = [e for e in events if e["event"] == "replica-schedule-left"]
    assert left["actions"] == [] and len(left["tags"]) == 2
    assert [e["event"] for e in events][-1] == "replica-schedule-failed"


def test_a_delete_tries_every_delete_and_untag_and_fails_naming_the_actions_left(
    targets: dict[str, Any], moto_endpoint: str
) -> None:
    # GIVEN a replica's actions on the table's read target and 30 on its write target, and a
    # Delete whose deletes are denied (the moto server checks every call against IAM: the
    # resource's credentials may only read), whose GSI's targets carry none of the
    # library's actions
    autoscaling = targets["us-east-1"]
    names = {"read": ["r"], "write": [f"w{n:02}" for n in range(30)]}
    given = props("us-east-1", *(action(n, d, 9) for d in names for n in names[d]))
    for dim, named in names.items():
        for name in named:
            autoscaling.put_scheduled_action(
                ServiceNamespace="dynamodb",
                ScheduledActionName=f"{ACTION_PREFIX}{name}",
                ResourceId=resource_id(TABLE, None),
                ScalableDimension=scalable_dimension(None, dim),
                Schedule="cron(45 8 ? * MON-FRI *)",
                ScalableTargetAction={"MinCapacity": 9},
            )
    every = [f"{ACTION_PREFIX}{n}" for named in names.values() for n in named]
    tagger = Tagger(moto_endpoint, "us-east-1", autoscaling)
    free = sorted(
        t["ScalableTargetARN"]
        for t in autoscaling.describe_scalable_targets(
            ServiceNamespace="dynamodb", ResourceIds=[resource_id(TABLE, INDEX)]
        )["ScalableTargets"]
    )
    for arn in free:
        tagger.stubber.add_response(
            "list_tags_for_resource", {"Tags": {TARGET_TAG: TABLE}}, {"ResourceARN": arn}
        )
    for arn in free:
        tagger.stubber.add_response(
            "untag_resource", {}, {"ResourceARN": arn, "TagKeys": [TARGET_TAG]}
        )
    asked: list[str] = []
    with reading_only(moto_endpoint) as reader, recorded_events() as events:
        reader.meta.events.register(
            "provide-client-params.application-autoscaling.DeleteScheduledAction",
            lambda params, **_: asked.append(params["ScheduledActionName"]),
        )
        # WHEN it is deleted
        with tagger.stubber, pytest.raises(ReplicaScheduleError) as raised:
            on_event(event("Delete", given), None, lambda _: reader, lambda _: tagger.client)
        # THEN every delete is tried, and the GSI's targets are untagged
        tagger.stubber.assert_no_pending_responses()
    assert asked == every
    # and the Delete fails naming the actions left, its reason cut short of what
    # CloudFormation takes (4,096 bytes, the provider's stack trace included); the log
    # names every one
    said = str(raised.value)
    assert said.startswith(
        f"table '{TABLE}' in 'us-east-1': ReplicaScheduleError: the Delete left actions not "
        f"deleted: {every[0]} (ClientError: 'An error occurred (403) when calling the "
        "DeleteScheduledAction operation: "
    ), said
    assert f"), {every[1]} (ClientError: 'An error occurred (403) " in said
    assert len(said) <= REASON_CHARS + 100
    assert said.endswith(" characters); the function's log has it whole (replica-schedule-failed)")
    (left,) = [e for e in events if e["event"] == "replica-schedule-left"]
    assert [a.split(" ")[0] for a in left["actions"]] == every and left["tags"] == []
    (failed,) = [e for e in events if e["event"] == "replica-schedule-failed"]
    assert all(name in failed["error"] for name in every)
    # (the actions are still there: removed here for the tests after)
    for dim, named in names.items():
        for name in named:
            autoscaling.delete_scheduled_action(
                ServiceNamespace="dynamodb",
                ScheduledActionName=f"{ACTION_PREFIX}{name}",
                ResourceId=resource_id(TABLE, None),
                ScalableDimension=scalable_dimension(None, dim),
            )


@contextmanager
def reading_only(moto_endpoint: str) -> Iterator[Any]:
    """An Application Auto Scaling client of a user who may only describe, while the moto
    server checks every call against IAM (its ``reset-auth``); unchecked again
    afterwards."""
    iam = local_aws.client(moto_endpoint, "iam")
    iam.create_user(UserName="reader")
    iam.put_user_policy(
        UserName="reader",
        PolicyName="read",
        PolicyDocument=allow("application-autoscaling:Describe*"),
    )
    key = iam.create_access_key(UserName="reader")["AccessKey"]
    client = boto3.client(
        "application-autoscaling",
        region_name="us-east-1",
        endpoint_url=moto_endpoint,
        aws_access_key_id=key["AccessKeyId"],
        aws_secret_access_key=key["SecretAccessKey"],
    )
    reset = f"{moto_endpoint}/moto-api/reset-auth"
    requests.post(reset, data="0", timeout=10).raise_for_status()
    try:
        yield client
    finally:
        requests.post(reset, data="inf", timeout=10).raise_for_status()


def test_a_delete_after_its_targets_are_gone_asks_for_nothing_on_them(
    targets: dict[str, Any], moto_endpoint: str
) -> None:
    # GIVEN a replica's resource whose table's targets are gone (the replica removed: its
    # targets deregistered, their actions with them), where a delete would be refused, not
    # answered "not found", since the grant's conditions read the target's tags
    given = {**props("us-east-1", action("launch-raise", "write", 400)), "TableName": "Gone"}
    asked: list[str] = []
    autoscaling = targets["us-east-1"]
    autoscaling.meta.events.register(
        "provide-client-params.application-autoscaling.DeleteScheduledAction",
        lambda params, **_: asked.append(params["ScheduledActionName"]),
    )
    # WHEN it is deleted THEN it succeeds, asks to delete nothing, and says what it skipped
    with recorded_events() as events:
        on_event(event("Delete", given), None, targets.__getitem__)
    assert asked == []
    (deleted,) = [e for e in events if e["event"] == "replica-schedule-deleted"]
    assert deleted["skipped"] == [f"{ACTION_PREFIX}launch-raise"] and deleted["deleted"] == []
