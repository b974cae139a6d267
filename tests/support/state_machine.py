"""The world of the holds' state machines: tables in moto, the hold store in dynalite."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.support.moto_world import World


@pytest.fixture(scope="module")
def world(aws_env: dict[str, str], store_dynamodb: Any) -> Iterator[World]:
    from ddb_capacity_tools import local_aws

    made = World(lambda s: local_aws.client(aws_env["AWS_ENDPOINT_URL"], s), store_dynamodb)
    made.now = datetime.now(UTC).replace(second=0, microsecond=0)
    yield made
    made.close()
