"""A capacity hold recorded on a fixed capacity while the settle step has yet to lower it:
its end brings the dimension to what the step settled it to, never back to its high-water
mark. The request records the dimension's base (what its end restores) from the table it
reads, still at its mark; the step, which alone knows the settled level, records that level
as the base in the hold store before it lowers. The table, its hold store and the request
are a moto server's (DescribeTable dating the step's decreases as DynamoDB does:
`conftest.dated_decreases`)."""

from __future__ import annotations

import json
import logging
import time
from datetime import timedelta
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders

from ddb_capacity_runtime.aws.clients import Clients
from ddb_capacity_runtime.aws.store import open_store
from ddb_capacity_runtime.requests import request_capacity
from ddb_capacity_runtime.settle.handler import is_complete, on_event
from ddb_capacity_runtime.settle.settle_plan import PERMISSION_WAIT_S
from tests.conftest import cfn_event, dated_decreases
from tests.test_retry_policy import _Raw
from tests.test_settle_holds import (
    counts,
)
from tests.test_settle_holds import (
    dynamodb as dynamodb,  # noqa: F401 (fixture)
)
from tests.test_settle_holds import (
    in_lambda as in_lambda,  # noqa: F401 (fixture)
)
from tests.test_settle_holds import (
    store as store,  # noqa: F401 (fixture)
)
from tests.test_settle_live import (
    autoscaling as autoscaling,  # noqa: F401 (fixture)
)
from tests.test_settle_live import (
    cloudwatch as cloudwatch,  # noqa: F401 (fixture)
)
from tests.test_settle_live import left_events, targets
from tests.test_settle_races import MARKED, capacity, hold_reader, provider, table_at_marks


@pytest.fixture(autouse=True)
def dated(dynamodb: Any) -> None:
    dated_decreases(dynamodb)


@pytest.fixture
def clients(dynamodb: Any, autoscaling: Any, cloudwatch: Any, aws_client: Any) -> Clients:
    """A capacity request's clients (direct mode), on the moto server."""
    return Clients(dynamodb, autoscaling, cloudwatch, aws_client("resourcegroupstaggingapi"))


def fixed_create(name: str, store: str) -> dict[str, Any]:
    """The Create of a step on the new table ``name``, its targets fixed capacities (read
    2,000 -> 100, write 500 -> 5, the GSI's read 1,000 -> 10), served by ``store``."""
    props = {"TableName": name, "Targets": targets(2000, 500, None), "HoldStore": store}
    event = cfn_event("Create", props)
    return {**event, **on_event(event, None)}


def ask(name: str, read: int, store: str, clients: Clients) -> Any:
    return request_capacity(
        name,
        read=read,
        hold=timedelta(minutes=15),
        store=store,
        clients=clients,
        sleep=lambda _: None,
    )


@pytest.mark.usefixtures("in_lambda")
@pytest.mark.parametrize(
    ("units", "while_held"),
    [(400, 400), (2500, 2500)],
    ids=["held-below-its-mark", "held-above-its-mark"],
)
def test_a_hold_made_before_the_step_lowers_ends_at_the_settled_level(
    dynamodb: Any,
    store: str,
    autoscaling: Any,
    clients: Clients,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    units: int,
    while_held: int,
) -> None:
    # GIVEN a new table of fixed capacities at its marks (read 2,000, to settle at 100),
    # and a batch job's capacity request of ``units`` reads made before the step lowers: it
    # reads the table at its mark (and raises it where that is not enough)
    name = table_at_marks(dynamodb)
    held = ask(name, units, store, clients)
    # WHEN the provider runs the step's Create
    with caplog.at_level(logging.INFO):
        answers = provider(
            fixed_create(name, store), dynamodb=dynamodb, autoscaling=autoscaling, holds=dynamodb
        )
    # THEN the read stays at the hold's level while it is held (the others settle)
    assert answers[-1]["IsComplete"] is True
    assert capacity(dynamodb, name) == {None: (while_held, 5), "bySku": (10, 5)}
    # AND when the hold ends, the read goes to its settled level, not back to its mark
    held.release()
    assert capacity(dynamodb, name) == {None: (100, 5), "bySku": (10, 5)}
    # AND a later request raises it over its settled level only, and its end lowers it there
    again = ask(name, 50, store, clients)
    assert capacity(dynamodb, name)[None] == (100, 5)
    again.release()
    assert capacity(dynamodb, name)[None] == (100, 5)
    # AND nothing was left at its mark: nothing logged or counted as such
    assert left_events(caplog) == []
    assert [r for r in counts(capsys) if "SettleLeft" in r] == []
    # AND the hold store keeps the settled level as the read's base
    recorded = open_store(store, clients).get(name, None, "read")
    assert recorded is not None and recorded.base == 100


def denied_updates(dynamodb: Any, only: bytes = b"") -> Any:
    """A client of the hold store's server that may Query it, its every UpdateItem (whose body
    holds ``only``) denied (a permissions boundary, or IAM still applying the step's grant), as
    AWS answers it."""
    client = hold_reader(dynamodb)

    def answer(request: Any, **_: Any) -> AWSResponse | None:
        if only not in (request.body or b""):
            return None
        body = json.dumps(
            {"__type": "com.amazonaws.dynamodb.v20120810#AccessDeniedException", "message": "no"}
        ).encode()
        headers = HTTPHeaders.from_dict({"Content-Type": "application/x-amz-json-1.0"})
        return AWSResponse(request.url, 400, headers, _Raw(body))

    client.meta.events.register("before-send.dynamodb.UpdateItem", answer)
    return client


@pytest.mark.usefixtures("in_lambda")
def test_a_settled_base_that_cannot_be_recorded_leaves_its_dimension_at_its_mark_counted(
    dynamodb: Any,
    store: str,
    autoscaling: Any,
    clients: Clients,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a new table of fixed capacities at its marks, held by a request made before the
    # step lowers (its base recorded at the read's mark), and a step whose writes to the hold
    # store are denied
    name = table_at_marks(dynamodb)
    ask(name, 400, store, clients)
    event = fixed_create(name, store)
    denied = denied_updates(dynamodb)
    step = {"dynamodb": dynamodb, "autoscaling": autoscaling, "holds": denied}
    # WHEN the provider runs the step's Create: first within the time IAM may take to apply
    # the step's grant, then past it
    with caplog.at_level(logging.INFO):
        first = is_complete(event, None, **step)
        late = time.time() + PERMISSION_WAIT_S + 1
        last = is_complete(event, None, clock=lambda: late, **step)
    # THEN the first call waits, lowering nothing; the last lowers nothing either (a hold's
    # end would bring a dimension lowered back to its mark): each stays at its mark, logged
    # with why and counted once (SettleLeft, which the step's alarm watches)
    assert first == {"IsComplete": False}
    assert last == {"IsComplete": True, "Data": {"Settled": "false"}}
    assert capacity(dynamodb, name) == MARKED
    left = left_events(caplog)
    assert {(e["index"], e["dimension"]) for e in left} == {
        (None, "read"),
        (None, "write"),
        ("bySku", "read"),
    }
    assert all("could not be recorded as its base" in e["reason"] for e in left), left
    assert [r["SettleLeft"] for r in counts(capsys)] == [3]


@pytest.mark.usefixtures("in_lambda")
def test_a_lease_held_while_the_step_records_its_base_is_waited_for(
    dynamodb: Any, store: str, autoscaling: Any, clients: Clients
) -> None:
    # GIVEN a new table of fixed capacities at its marks, and a capacity request or release
    # of its read holding the read's lease in the hold store when the step would record the
    # read's settled base
    name = table_at_marks(dynamodb)
    event = fixed_create(name, store)
    step = {"dynamodb": dynamodb, "autoscaling": autoscaling, "holds": dynamodb}
    holds = open_store(store, clients)
    # WHEN the provider calls the step while the lease is held, and again once it is given back
    with holds.lease(name, None, "read", deadline=time.time() + 30):
        first = is_complete(event, None, **step)
        assert capacity(dynamodb, name) == MARKED
    answers = provider(event, **step)
    # THEN the first call waits, lowering nothing (the holder writes the base it read), and
    # the step settles the table once the lease is free, the read's settled level recorded as
    # its base
    assert first == {"IsComplete": False}
    assert answers[-1] == {"IsComplete": True, "Data": {"Settled": "true"}}
    assert capacity(dynamodb, name) == {None: (100, 5), "bySku": (10, 5)}
    recorded = holds.get(name, None, "read")
    assert recorded is not None and recorded.base == 100


@pytest.mark.usefixtures("in_lambda")
def test_a_dimension_above_its_mark_whose_base_is_refused_is_counted_once(
    dynamodb: Any,
    store: str,
    autoscaling: Any,
    clients: Clients,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a new table of fixed capacities, its read raised past its mark by a request made
    # before the step (its base recorded at the mark), and a hold store that refuses, past the
    # time IAM may take, the write of the read's settled base alone
    name = table_at_marks(dynamodb)
    ask(name, 2500, store, clients)
    holds = denied_updates(dynamodb, only=b'"table:read"')
    late = time.time() + PERMISSION_WAIT_S + 1
    step = {"dynamodb": dynamodb, "autoscaling": autoscaling, "holds": holds}
    # WHEN the provider runs the step's Create
    with caplog.at_level(logging.INFO):
        first = is_complete(fixed_create(name, store), None, clock=lambda: late, **step)
        last = is_complete(fixed_create(name, store), None, clock=lambda: late + 15, **step)
    # THEN the others settle, and the read, which the end of its hold would bring back to its
    # mark, is logged with why and counted once, by the call that lowered the others (the one
    # after looks only at what it lowered and what is still at its mark)
    assert (first, last) == (
        {"IsComplete": False},
        {"IsComplete": True, "Data": {"Settled": "true"}},
    )
    assert capacity(dynamodb, name) == {None: (2500, 5), "bySku": (10, 5)}
    (left,) = left_events(caplog)
    assert (left["index"], left["dimension"]) == (None, "read")
    assert "could not be recorded as its base" in left["reason"], left
    assert [r["SettleLeft"] for r in counts(capsys)] == [1]
