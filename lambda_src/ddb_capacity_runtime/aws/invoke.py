"""Runs in: workers (the user's own jobs and processes), restorer Lambda, workstation
(``ddb-capacity --broker``).

Invoking a Lambda function: synchronously, what the broker's client and the restorer send;
asynchronously, the fast path's reports.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..core.errors import CapacityError


class InvokeError(CapacityError):
    """The invocation itself failed (AWS refused it, or the connection failed); the
    message is AWS's."""


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
    except (ClientError, BotoCoreError) as exc:
        raise InvokeError(str(exc)) from None
    return body, bool(response.get("FunctionError"))
