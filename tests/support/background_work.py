"""A provisioned table in moto and a thread-safe collector of what the background work
hands back, for the workers' tests."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def make_table(client: Any, name: str) -> None:
    client.create_table(
        TableName=name,
        BillingMode="PROVISIONED",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        ProvisionedThroughput={"ReadCapacityUnits": 100, "WriteCapacityUnits": 100},
    )


def collector() -> tuple[list[str], Callable[[int, list[dict[str, Any]]], None]]:
    seen: list[str] = []
    lock = threading.Lock()

    def handle(segment: int, items: list[dict[str, Any]]) -> None:
        with lock:
            seen.extend(i["pk"]["S"] for i in items)

    return seen, handle
