"""Runs in: workstation (the fleet benchmark, the docs' cost table).

What the nightly fleet advisor (``FleetAdvisor``: SQS to Lambda, results in S3) costs a
month, from AWS's public list prices (us-east-1, arm64) and the seconds a table takes.

Per night, for ``tables`` tables: SQS requests (one SendMessageBatch per 10 tables, one
ReceiveMessage and one DeleteMessage per table at batch size 1, and the event source's
own long polls while the queue is empty: `IDLE_POLLS_PER_MONTH`); Lambda requests
(one per table, the list step's and the report step's) and GB-seconds (the seconds per
table of each step, at the function's memory); S3 PUTs
(one result per table, the manifest, the report's three files twice: the run's and
``latest/``) and GETs (every result and the manifest). Storage is left out: a few
kilobytes per table a night, expired by the bucket's lifecycle rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .simulator.prices import Prices

__all__ = ["NIGHTS_PER_MONTH", "Costs", "monthly_cost"]

NIGHTS_PER_MONTH = 730 / 24
"""Nights in a month of 730 hours."""
SQS_PER_MILLION = 0.40
LAMBDA_GB_SECOND = Prices().lambda_gb_second
LAMBDA_PER_MILLION = Prices().lambda_request_million
S3_PUT_PER_THOUSAND = 0.005
S3_GET_PER_THOUSAND = 0.0004
IDLE_POLLS_PER_MONTH = 5 * 3 * 60 * 730
"""The SQS event source's long polls (up to 20 s each) on an empty queue, a month: about 5 pollers x
3 a minute (an estimate; AWS does not publish the poller count)."""
STEP_SECONDS_PER_TABLE = 0.002
"""The list step's and the report step's seconds per table each (ListTables pages and
SendMessageBatch calls; GetObject calls 16 at a time)."""


@dataclass(frozen=True)
class Costs:
    """Dollars a month, by service."""

    tables: int
    sqs: float
    lambda_requests: float
    lambda_compute: float
    s3: float

    @property
    def total(self) -> float:
        return self.sqs + self.lambda_requests + self.lambda_compute + self.s3


def monthly_cost(tables: int, seconds_per_table: float, worker_mb: int) -> Costs:
    """The advisor's dollars a month for ``tables`` tables, a worker taking
    ``seconds_per_table`` to advise one at ``worker_mb`` MB (the function's memory: its list
    and report steps run at it too)."""
    nights = NIGHTS_PER_MONTH
    sqs_requests = (math.ceil(tables / 10) + 2 * tables) * nights + IDLE_POLLS_PER_MONTH
    gb_seconds = tables * (seconds_per_table + 2 * STEP_SECONDS_PER_TABLE) * worker_mb
    puts, gets = tables + 1 + 6, tables + 1
    return Costs(
        tables,
        sqs_requests / 1e6 * SQS_PER_MILLION,
        (tables + 2) * nights / 1e6 * LAMBDA_PER_MILLION,
        gb_seconds / 1024 * nights * LAMBDA_GB_SECOND,
        (puts / 1e3 * S3_PUT_PER_THOUSAND + gets / 1e3 * S3_GET_PER_THOUSAND) * nights,
    )
