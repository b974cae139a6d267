"""DescribeTable's answer as AWS gives it where moto does not: a table's class (moto drops
``TableClass``) and a global table's ``Replicas``, set on the answers of the tables named,
through botocore's after-call event."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

DESCRIBE_TABLE = "after-call.dynamodb.DescribeTable"


@contextmanager
def described(client: Any, fields: Mapping[str, Mapping[str, Any]]) -> Iterator[None]:
    """While open, ``client``'s DescribeTable answer of each table named in ``fields``
    carries those fields (``{"TableClassSummary": {"TableClass": ...}}``, say)."""

    def answer(parsed: dict[str, Any], **_: Any) -> None:
        table = parsed.get("Table", {})
        table.update(fields.get(table.get("TableName"), {}))

    client.meta.events.register(DESCRIBE_TABLE, answer)
    try:
        yield
    finally:
        client.meta.events.unregister(DESCRIBE_TABLE, answer)
