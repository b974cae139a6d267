"""Runs in: workers (the user's own processes), Lambda functions (the client hook's).

``HookFailures``, the one count of the fast path's client hook, and the deployment it belongs
to. A hook in a Lambda function writes it to the function's log (Embedded Metric Format),
which Lambda makes a metric that ``CapacityRequests``' ``HookFailuresAlarm`` watches.

A function the construct knows (``grant_signals``, ``instrument``) is told the hold store of
its deployment (``CAPACITY_METRICS_STORE``): its counts carry that store's name (dimension
``StateStore``), as every count of the deployment's own functions does. A function granted
the signals function through its role alone (a user's own IAM) is told no such thing; but
every hook knows the signals function it reports to, whose name is as much the deployment's
(a function's name is unique in its account and Region). So its counts carry that name
(dimension `SIGNALS_FUNCTION_DIMENSION`), which the same alarm watches too: no count of a
hook that reports to a deployment goes unwatched, no other deployment's alarm hears it, and
the hook makes no call and refuses nothing to learn it. Only a hook told neither (a ``send``
callable of its own, or no signals function at all) counts with no dimension.
"""

from __future__ import annotations

import re

from ..core.names import METRICS_NAMESPACE, metrics_store
from ..events import STORE_DIMENSION, count_in_lambda

HOOK_FAILURES = "HookFailures"
"""The count a hook in a Lambda function writes to its log (EMF, namespace
``DynamoDBCapacity``): reports not sent, observations dropped, errors its handlers met, a hook
that could not be installed."""
SIGNALS_FUNCTION_DIMENSION = "SignalsFunction"
"""The dimension of a hook's counts when no hold store names its deployment: the name of the
signals function it reports to."""
FUNCTION_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""A Lambda function's name (an ARN, a partial ARN or a name with a qualifier holds one)."""


def function_name(function: object) -> str | None:
    """The name of the Lambda function ``function`` names (its name, its name and a
    qualifier, a partial or full ARN); None for anything else."""
    if not isinstance(function, str):
        return None
    parts = function.strip().split(":")
    if parts[0] == "arn" and len(parts) >= 7 and parts[5] == "function":
        name = parts[6]  # arn:aws:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER]
    elif len(parts) >= 3 and parts[1] == "function":
        name = parts[2]  # ACCOUNT:function:NAME[:QUALIFIER]
    else:
        name = parts[0]  # NAME[:QUALIFIER]
    return name if FUNCTION_NAME.fullmatch(name) else None


def series(function: object) -> tuple[str | None, str]:
    """The deployment a hook's counts belong to, and the name of the dimension whose value
    it is: its hold store (`core.names.metrics_store`, dimension ``StateStore``), else the
    signals function ``function`` it reports to (`SIGNALS_FUNCTION_DIMENSION`), else none."""
    store = metrics_store()
    if store is not None:
        return store, STORE_DIMENSION
    name = function_name(function)
    if name is not None:
        return name, SIGNALS_FUNCTION_DIMENSION
    return None, STORE_DIMENSION


def count_hook_failures(value: int, function: object) -> None:
    """In a Lambda function, one ``HookFailures`` count of ``value``, for the deployment of
    the hook that reports to ``function`` (`series`); elsewhere nothing."""
    store, dimension = series(function)
    count_in_lambda(METRICS_NAMESPACE, HOOK_FAILURES, value, store=store, dimension=dimension)
