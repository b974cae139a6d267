"""Runs in: workers (the user's own jobs and processes), workstation
(``ddb-capacity --broker``).

Invoking a Lambda function: synchronously, what the broker's client sends;
asynchronously, the fast path's reports.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..core.errors import InvokeError as InvokeError

INVOKE_HINTS = {
    "AccessDeniedException": "the caller may not invoke the function: grant it "
    "lambda:InvokeFunction on it (CapacityRequests.grant_signals / grant_requests)",
    "UnrecognizedClientException": "the caller's credentials are not valid in this account",
    "ExpiredTokenException": "the caller's credentials have expired",
    "NoCredentialsError": "no AWS credentials were found for the caller",
    "ResourceNotFoundException": "no such function in this account and Region: check the "
    "name (CAPACITY_SIGNALS, --function) and the Region",
    "TooManyRequestsException": "the function's reserved concurrency or the account's "
    "limit refused the call (signals_concurrency, broker_concurrency)",
    "RequestEntityTooLargeException": "the payload is over Lambda's limit",
    "EndpointConnectionError": "Lambda's endpoint was not reached: the network, a VPC "
    "endpoint or a proxy",
    "ConnectTimeoutError": "Lambda's endpoint was not reached in time: the network, a VPC "
    "endpoint or a proxy",
    "ReadTimeoutError": "Lambda did not answer in time",
}
"""One line per error code on what usually causes it."""


def invoke_hint(code: str) -> str:
    """One line on what usually causes ``code`` (an error code of Invoke, or botocore's
    error class)."""
    return INVOKE_HINTS.get(code, "see the error message; nothing was invoked")


def lambda_client() -> Any:
    """A Lambda client for an invocation that must not be repeated: one attempt (a retried
    request would record a second hold), and a read timeout that outlasts a function's own
    15-minute limit."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        "lambda",
        config=Config(read_timeout=960, retries={"total_max_attempts": 1}),
    )


def invoke(
    client: Any, name: str, payload: Mapping[str, Any], *, asynchronous: bool = False
) -> tuple[bytes, bool]:
    """Invoke the function ``name`` with ``payload`` (as JSON) and wait for its answer;
    returns the answer's body and whether the function failed. ``asynchronous``: Lambda
    queues the invocation and answers at once (an empty body). Raises InvokeError."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        response = client.invoke(
            FunctionName=name,
            InvocationType="Event" if asynchronous else "RequestResponse",
            Payload=json.dumps(payload).encode(),
        )
        body: bytes = response["Payload"].read()
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        raise InvokeError(str(exc), code, invoke_hint(code)) from None
    except BotoCoreError as exc:
        raise InvokeError(str(exc), type(exc).__name__, invoke_hint(type(exc).__name__)) from None
    return body, bool(response.get("FunctionError"))
