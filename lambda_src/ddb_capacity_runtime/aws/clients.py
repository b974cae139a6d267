"""Runs in: scaler Lambda, broker Lambda, settle Lambda, global-table schedule Lambda,
workers (the user's own jobs, in direct mode), workstation (``ddb-capacity``, examples, benchmarks).

The AWS clients the run-time code uses, made once and passed in."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ..core.holds import CapacityRequestError

CONNECT_TIMEOUT_SECONDS = 2
"""Every control-plane call (DynamoDB, Application Auto Scaling) of the library's own clients: at
most this long to connect, this long to read an answer, this many attempts in all (standard retries,
jittered backoff of at most 1 s, then 2 s): 33 s at worst (`call_bound`), well inside a state-store
lease (60 s, renewed before each call)."""
READ_TIMEOUT_SECONDS = 8
CONTROL_PLANE_ATTEMPTS = 3
MAX_BACKOFF_SECONDS = 20
"""botocore's longest backoff between two attempts, and its legacy mode's attempts."""
LEGACY_ATTEMPTS = 5
ADAPTIVE_WAIT_SECONDS = 2
"""What adaptive retries' client-side rate limiter may add to an attempt (its slowest rate is 0.5
requests a second)."""
NO_REGION = "no AWS Region: set AWS_DEFAULT_REGION, or a region in your AWS profile"
"""What botocore's NoRegionError means to a user, where the library says it."""

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_resourcegroupstaggingapi import ResourceGroupsTaggingAPIClient


@dataclass(frozen=True, eq=False)
class Clients:
    """The AWS clients a tick (or a request) makes its calls with."""

    dynamodb: DynamoDBClient
    autoscaling: ApplicationAutoScalingClient
    cloudwatch: CloudWatchClient
    tagging: ResourceGroupsTaggingAPIClient
    sqs: Any = None
    """SQS, for the batches of a sharded tick (None where nothing sends them)"""
    cloudwatch_of: Callable[[str], CloudWatchClient] | None = None
    """CloudWatch of another Region, by its name (a global table's other replicas' metrics);
    None where nothing reads them"""


_Made = TypeVar("_Made")


def regional(make: Callable[[], _Made]) -> _Made:
    """``make()``, AWS clients for the requests' API: botocore's NoRegionError (no Region
    set anywhere) raised as a `CapacityRequestError` that says how to set one."""
    from botocore.exceptions import NoRegionError

    try:
        return make()
    except NoRegionError:
        raise CapacityRequestError(NO_REGION) from None


def make_clients(*, with_sqs: bool = False, session: Any = None, **kwargs: Any) -> Clients:
    """Clients of boto3's default session, or of the botocore ``session``
    (`botocore_session`): DynamoDB and Application Auto Scaling bounded
    (`CONTROL_PLANE_ATTEMPTS` standard retries, short timeouts), since they are
    called under state-store leases; CloudWatch, the tagging API and SQS (``with_sqs``)
    with adaptive retries (throttled calls back off)."""
    from botocore.config import Config

    if session is None:
        import boto3

        client = boto3.client
    else:
        client = session.create_client

    config = Config(retries={"mode": "adaptive", "max_attempts": 10})
    bounded = _bounded()
    elsewhere = {k: v for k, v in kwargs.items() if k != "region_name"}

    @functools.cache
    def cloudwatch_of(region: str) -> CloudWatchClient:
        # bounded as the control plane's: another Region's outage costs a tick seconds
        return client("cloudwatch", config=bounded, region_name=region, **elsewhere)

    return Clients(
        client("dynamodb", config=bounded, **kwargs),
        client("application-autoscaling", config=bounded, **kwargs),
        client("cloudwatch", config=config, **kwargs),
        client("resourcegroupstaggingapi", config=config, **kwargs),
        client("sqs", config=config, **kwargs) if with_sqs else None,
        cloudwatch_of,
    )


@functools.cache
def botocore_session() -> Any:
    """One botocore session for the process, as boto3's default session is: clients made
    from it (`make_clients`) spare a cold start boto3's import (its resources and
    s3transfer, some 15 ms of the scaler's)."""
    from botocore.session import get_session

    return get_session()


def autoscaling_client(region: str) -> ApplicationAutoScalingClient:
    """An Application Auto Scaling client of ``region``, bounded as `make_clients`'s (a
    global table's replicas are each in their own Region)."""
    import boto3

    return boto3.client("application-autoscaling", region_name=region, config=_bounded())


def assumed_autoscaling(
    role_arn: str, session_name: str
) -> Callable[[str], ApplicationAutoScalingClient]:
    """Application Auto Scaling clients by Region (`autoscaling_client`'s bounds), as the
    role ``role_arn``: one AssumeRole (its error raised as it comes), its credentials
    shared by every Region's client."""
    import boto3

    sts = boto3.client("sts", config=_bounded())
    found = sts.assume_role(RoleArn=role_arn, RoleSessionName=session_name)["Credentials"]
    keys = {
        "aws_access_key_id": found["AccessKeyId"],
        "aws_secret_access_key": found["SecretAccessKey"],
        "aws_session_token": found["SessionToken"],
    }

    @functools.cache
    def client(region: str) -> ApplicationAutoScalingClient:
        return boto3.client(
            "application-autoscaling", region_name=region, config=_bounded(), **keys
        )

    return client


def _bounded() -> Any:
    """The configuration of the control-plane clients: short timeouts,
    `CONTROL_PLANE_ATTEMPTS` standard retries."""
    from botocore.config import Config

    return Config(
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
        read_timeout=READ_TIMEOUT_SECONDS,
        retries={"mode": "standard", "total_max_attempts": CONTROL_PLANE_ATTEMPTS},
    )


def call_bound(client: Any) -> float:
    """The longest one call of ``client`` can take, from its own configuration: every
    attempt waiting its connect and read timeouts, and the longest backoff between them
    (with adaptive retries, the rate limiter's wait too). A lease is renewed to cover it
    before a control-plane call under it (a client of the user's with botocore's
    defaults, 60 s timeouts and 5 legacy attempts, gets a lease of about 10 minutes)."""
    mode, attempts = _retries(client)
    backoff = sum(_backoff(mode, made) for made in range(1, attempts))
    return float(attempts * _attempt_bound(client, mode) + backoff)


OWN_CALL_SECONDS = CONTROL_PLANE_ATTEMPTS * (CONNECT_TIMEOUT_SECONDS + READ_TIMEOUT_SECONDS) + sum(
    2 ** (made - 1) for made in range(1, CONTROL_PLANE_ATTEMPTS)
)
"""The longest call of the library's own control-plane clients (33 s): a lease is never
renewed for longer, whatever the caller's client (`lease_bound`)."""


def lease_bound(client: Any) -> float:
    """How long a lease is renewed to cover one call of ``client``: `call_bound`, at most
    `OWN_CALL_SECONDS`. A caller's client with botocore's defaults could take about 10
    minutes a call; a killed caller then holds the dimension no longer than the library's
    own bound (a call that lands after its lease ran out is still read as the library's:
    its intent was written first, `aws.minimum`)."""
    return min(call_bound(client), float(OWN_CALL_SECONDS))


def retry_bound(client: Any, made: int) -> float:
    """The longest a retry of a call of ``client`` can take once ``made`` attempts failed:
    botocore's longest backoff after them, then one attempt (its timeouts, and with
    adaptive retries the rate limiter's wait)."""
    mode, _ = _retries(client)
    return _backoff(mode, made) + _attempt_bound(client, mode)


def _retries(client: Any) -> tuple[str, int]:
    """``client``'s retry mode, and the most attempts it makes of one call."""
    retries = client.meta.config.retries or {}
    total = retries.get("total_max_attempts")
    retried = retries.get("max_attempts")
    attempts = int(total) if total is not None else LEGACY_ATTEMPTS
    if total is None and retried is not None:
        attempts = int(retried) + 1
    return str(retries.get("mode", "legacy")), attempts


def _attempt_bound(client: Any, mode: str) -> float:
    """The longest one attempt of a call of ``client`` can take."""
    config = client.meta.config
    per_attempt = float(config.connect_timeout) + float(config.read_timeout)
    return per_attempt + (ADAPTIVE_WAIT_SECONDS if mode == "adaptive" else 0.0)


def _backoff(mode: str, made: int) -> float:
    """botocore's longest wait before the next attempt once ``made`` attempts failed."""
    wait = 2 ** (made - 1)
    return float(wait if mode == "legacy" else min(wait, MAX_BACKOFF_SECONDS))
