"""Runs in: workers (the user's own jobs).

The checks of what the workers are given to work with, before any call: a DynamoDB client
(not a boto3 resource, nor another service's client), a table's or an index's name as
DynamoDB allows it. Each refusal names the argument, the value received and what is
allowed; the caller chooses the error (`ScanError`, `WriteError`)."""

from __future__ import annotations

from collections.abc import Iterable

from ..core.errors import CapacityError, shown
from ..core.names import is_table_name, table_of_arn

NAME_RULE = "3 to 255 letters, digits, '_', '.' or '-'"
"""DynamoDB's rule for a table's or an index's name, in words."""


def check_client(error: type[CapacityError], value: object, calls: Iterable[str]) -> None:
    """Refuse ``value`` with ``error`` unless it is a DynamoDB client that makes ``calls``
    (the methods the worker calls on it; any object that has them stands in for one)."""
    meta = getattr(value, "meta", None)
    if hasattr(meta, "client") and not hasattr(meta, "service_model"):
        raise error(
            f"dynamodb: got a boto3 resource ({type(value).__name__}); expected a DynamoDB "
            "client (boto3.client('dynamodb'), or the resource's own: resource.meta.client)"
        )
    service = getattr(getattr(meta, "service_model", None), "service_name", "dynamodb")
    if service == "dynamodb" and all(callable(getattr(value, c, None)) for c in calls):
        return
    got = f"a {service} client" if service != "dynamodb" else shown(value)
    raise error(f"dynamodb: got {got}; expected a DynamoDB client (boto3.client('dynamodb'))")


def check_table(error: type[CapacityError], field: str, value: object) -> None:
    """Refuse ``value`` with ``error``, naming ``field``, unless it is a table's name or
    ARN as DynamoDB allows them."""
    if not is_table_name(value) and table_of_arn(value) is None:
        raise error(
            f"{field}: got {shown(value)}; expected a table name ({NAME_RULE}) or a table's ARN"
        )


def check_index(error: type[CapacityError], value: object) -> None:
    """Refuse ``value`` with ``error`` unless it is None or an index's name."""
    if value is not None and not is_table_name(value):
        raise error(f"index: got {shown(value)}; expected None or an index name ({NAME_RULE})")
