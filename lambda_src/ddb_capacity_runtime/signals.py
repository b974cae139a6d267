"""Runs in: workers (the user's own processes).

The client hook of the fast path: [`watch`][] hooks a boto3 Session (every DynamoDB
client it makes from then on) or one DynamoDB client, sums per table, GSI and dimension
the capacity units the process consumes, the requests answered, the throttled attempts
by cause (`core.surge.CAUSES`) and the requests that failed for want of
capacity, and a background thread sends them as `core.surge.Report`s to the
signals function, which raises capacity within seconds instead of waiting for
CloudWatch's minutes.

Which requests it counts: only those to the reporting account's tables in the reporting
region, the ones the signals function can raise. The region is the watched boto3
Session's, or the watched client's: the Lambda client's (with ``send=`` too); a boto3
Session with no region takes the first request's. A request of a client in another region
is not counted. The account is ``account=``, else the one the signals function's ARN names;
a table given as an ARN of another account or region is not counted (with no account
known, an ARN's account is not checked). With ``tables=``, only those tables are counted.
A request not counted is left exactly as the caller made it.

What the hook does to the requests it counts:

- in its default mode ([`CONSUMED`][]) it asks for ``ReturnConsumedCapacity="INDEXES"``
  where the caller did not ask for any (or asked ``NONE``), and removes
  ``ConsumedCapacity`` from the response the caller sees in that case; a caller that asked
  keeps its answer exactly as it was. In mode [`THROTTLES`][] it changes no request: it
  then sees the consumed capacity only of the requests whose caller asked for it, so a
  surge is due on throttles but sized only from the requests refused;
- it counts each throttled attempt (``needs-retry``, which sees every attempt; botocore's
  retries included) with its cause from the error's ``ThrottlingReasons``: ``key_range``
  for a hot partition, ``provisioned`` for provisioned throughput, ``other`` for anything
  else (account limits, on-demand maximum, RequestLimitExceeded or ThrottlingException
  without a reason), and ``unknown`` for a ProvisionedThroughputExceededException that
  gives no reason (older SDKs and endpoints, DynamoDB Local, moto): the signals function
  lets those make a surge due, never size one. A reason whose resource is
  ``.../index/NAME`` counts on that GSI, else on the table; a throttle that names no
  resource counts on the GSI a Query or Scan reads (its ``IndexName``, unless the read is
  consistent or the index answered before as an LSI), else on each table the request
  names;
- it counts a TransactionCanceledException whose ``CancellationReasons`` include
  ``ThrottlingError`` as a throttled attempt of cause ``unknown`` (DynamoDB gives none)
  on the table of each item so cancelled, when the reasons match the items one for one;
  else once, on the first table the request names;
- it counts a request whose last attempt was throttled for provisioned throughput or of
  no known cause (``after-call`` with an error: botocore retries no more) once as
  ``failed`` on each dimension so throttled: never served, its demand counts once,
  however many attempts it made;
- it counts consumption (``after-call``, the last attempt's answer): read for GetItem,
  Query, Scan, BatchGetItem and TransactGetItems, write for the others, unless the answer
  names ``ReadCapacityUnits`` or ``WriteCapacityUnits``. A table's own dimension gets the
  request's units less its GSIs' (LSIs share the table's capacity).

It never blocks, slows or fails the caller: the handlers only add to sums under a lock
and swallow every error (counted in [`Watcher.errors`][]); only the background thread
sends, and a failed send is counted ([`Watcher.failed_sends`][]), never raised. The
first failed send, and the first handler error of each kind, are logged at WARNING
(``signals-send-failed``, ``signals-hook-error``: a missing ``lambda:InvokeFunction``
grant shows there). A thread that cannot start is tried again on the next request. Memory
is bounded: at most `MAX_TABLES` tables of at most
`core.surge.MAX_DIMENSIONS` dimensions each; anything beyond is dropped and
counted ([`Watcher.dropped`][]); a table quiet for `core.surge.FRESH_SECONDS`
is forgotten.

When it reports: the thread wakes every ``interval`` seconds (1 to 60) and sends at most
one report per table, only when it matters: a throttle; a dimension's consumption rate
that changed by `CHANGE` (20 %) and at least `MIN_CHANGE` units per second
since the last report (a drop to zero included, so the signals function stops counting a
process that went quiet); or `KEEPALIVE_SECONDS` since the last report while the
table has traffic (the signals function counts a process's last report for 45 s). A
report's ``seconds`` is the time since the table's last report (or since watching
started, or one interval before traffic resumed after a quiet spell), at most 60: a
longer window is scaled down to 60 s at the same rate.

Cost, per table and per process, with the us-east-1 prices: each report is one
asynchronous Lambda invocation ($0.20 per million requests: $0.000000200), the signals
function's run at 256 MB for about 50 ms (0.0125 GB-s at $0.0000166667: $0.000000208),
and one on-demand write per dimension reported on the state store's combiner item, of
one write request unit per KB of the item ($0.625 per million): about 1 unit with a few
processes reporting on a dimension, 8 with 100. A report on a table's read and write,
with a few processes: about $0.0000016. At the most, one report every ``interval``
seconds (17,280 a day at 5 s) costs $0.028 a day ($0.84 a month); typically, while busy
at a steady rate, one keepalive every 30 s (2,880 a day) costs $0.0046 a day ($0.14 a
month). A quiet table costs nothing. With 100 processes on the same table, a report costs
about $0.0000104: $0.030 a day each at the keepalive rate, $3.00 a day for all 100.

The process id is ``<label>-<pid>-<random>`` (label: the host name unless ``process``
is given), at most 64 characters. After ``os.fork`` the child starts afresh: its own id,
sums and counters, its own thread when it first has something to report, and its own
Lambda client, from a fresh boto3 Session (same region, profile and explicit keys); the
parent's sums stay the parent's. A child that ends with ``os._exit`` (as multiprocessing's
do) sends its last sums only if it calls [`Watcher.stop`][] first; a normal exit does.

Stopping ([`Watcher.stop`][], and at interpreter exit, 2 s for each watcher) is bounded:
no report is started after its timeout, on the last thread or, at exit when no thread
starts, on the calling one (a send under way finishes: the Lambda client gives up within
2 s to connect and 5 s to read, twice at most). It never raises.

Limits: one request is counted by one watcher (the first that counts it), so a boto3
Session and one of its clients both watched never count twice; the PartiQL operations are not
watched, nor a BatchWriteItem's or BatchGetItem's unprocessed items (a batch's partial
throttle); with ``ReturnConsumedCapacity="TOTAL"`` asked by the caller, a request's GSI
units count on the table; a throttle that names no resource on a Query or Scan of an LSI
not yet seen answering (nor read consistently) counts on an index of its name, which the
signals function refuses as not served; a throttled transaction's GSIs are not told
apart from its tables; a table named by plain name is taken to be the reporting
account's. After [`Watcher.stop`][], the clients a watched boto3 Session made
keep inert copies of the handlers (botocore copies the boto3 Session's handlers into
each client), and every watched emitter keeps the one stateless handler that takes out the
``ConsumedCapacity`` the hook asked for (a request under way when it stopped needs it).
"""

from __future__ import annotations

import atexit
import logging
import math
import os
import re
import secrets
import socket
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from .aws.invoke import invoke
from .core.surge import (
    FRESH_SECONDS,
    MAX_DIMENSIONS,
    MAX_PROCESS_CHARS,
    MAX_REQUESTS_PER_SECOND,
    MAX_UNITS_PER_SECOND,
    MAX_WINDOW_SECONDS,
    MIN_WINDOW_SECONDS,
    DimensionReport,
    Report,
)
from .core.surge import SIGNALS_ENV as SIGNALS_ENV
from .events import log_event
from .workers.pacing import MAX_REASONS, reasons_cause, throttle_cause

#: The shortest and longest wait between two rounds of reports, in seconds.
MIN_INTERVAL = 1.0
MAX_INTERVAL = 60.0
#: A report is due when a dimension's rate changed by this share of the last reported one
#: and by at least `MIN_CHANGE` units per second.
CHANGE = 0.2
MIN_CHANGE = 1.0
#: A busy table is reported at least this often, well within the signals function's
#: `core.surge.FRESH_SECONDS`.
KEEPALIVE_SECONDS = 30.0
#: The most tables one watcher tracks at once.
MAX_TABLES = 1_000
#: The longest ``process`` label: the pid and a random part fill the rest of the id.
MAX_LABEL_CHARS = 40
#: Each operation the hook watches, and the dimension it consumes.
OPERATIONS: Mapping[str, str] = {
    "GetItem": "read",
    "Query": "read",
    "Scan": "read",
    "BatchGetItem": "read",
    "TransactGetItems": "read",
    "PutItem": "write",
    "UpdateItem": "write",
    "DeleteItem": "write",
    "BatchWriteItem": "write",
    "TransactWriteItems": "write",
}
#: A throttle's cause as the workers read it (`workers.pacing.throttle_cause`), as
#: a report counts it.
REPORT_CAUSES: Mapping[str, str] = {
    "provisioned": "provisioned",
    "key-range": "key_range",
    "account-limit": "other",
    "max-on-demand": "other",
    "unknown": "other",
}
#: What a throttle without any reason counts as, by error code; any other code: ``other``.
NO_REASON = {"ProvisionedThroughputExceededException": "unknown"}
#: The causes that make a request whose last attempt met them a failed one (never served
#: for want of capacity): its demand counts once in the report's ``failed``.
FAILED_CAUSES = frozenset({"provisioned", "unknown"})
#: What a throttled transaction's attempt counts as: DynamoDB names no cause in a
#: ``ThrottlingError`` cancellation reason.
TRANSACTION_CAUSE = "unknown"
#: The most distinct handler errors logged (each kind once); all of them are counted.
MAX_LOGGED_KINDS = 32
CONSUMED = "consumed"
"""The hook's default mode: it asks DynamoDB for the consumed capacity of every request
counted (``ReturnConsumedCapacity="INDEXES"`` where the caller asked for none)."""
THROTTLES = "throttles"
"""The hook's mode that leaves every request exactly as the caller made it, and counts the
throttles, the requests answered and refused, and the capacity only of the requests whose
caller asked for it (an account whose IAM policies condition on
``dynamodb:ReturnConsumedCapacity`` may refuse a request that asks for it)."""
MODES = (CONSUMED, THROTTLES)
#: The most secondary indexes remembered as local (an LSI shares its table's capacity).
MAX_LOCAL_INDEXES = 5_000

#: What a process id does not take (`core.surge.PROCESS_ID`).
_NOT_IN_IDS = re.compile(r"[^A-Za-z0-9._-]")
_CONTEXT_KEY = "ddb_capacity_signals"
_STRIP_ID = "ddb-capacity-signals-strip"
_Key = tuple[str | None, str]


# --- what a request touched, consumed and met -------------------------------------------


def table_name(name: object) -> str | None:
    """A table's name from a ``TableName`` (a name or a table's ARN); None if neither."""
    if not isinstance(name, str) or not name:
        return None
    if name.startswith("arn:"):
        resource = name.split(":", 5)[-1].split("/")
        return resource[1] if len(resource) > 1 and resource[0] == "table" else None
    return name


def arn_place(name: object) -> tuple[str, str] | None:
    """(region, account) a table's ARN names; None for a plain name (or anything else)."""
    if not isinstance(name, str) or not name.startswith("arn:"):
        return None
    parts = name.split(":", 5)
    return (parts[3], parts[4]) if len(parts) == 6 else None


def _ours(name: object, region: str | None, account: str | None) -> bool:
    """Whether ``name`` may be one of the reporting account's tables in ``region``: a
    plain name is; an ARN is when it names that region and account (each when known)."""
    place = arn_place(name)
    if place is None:
        return True
    return (region is None or place[0] == region) and (account is None or place[1] == account)


def _item_table(item: object) -> object:
    """The ``TableName`` of one of a transaction's items (``{"Put": {...}}``)."""
    if not isinstance(item, Mapping):
        return None
    parts = [part for part in item.values() if isinstance(part, Mapping)]
    return parts[0].get("TableName") if len(parts) == 1 else None


def transact_items(
    params: Mapping[str, Any], region: str | None = None, account: str | None = None
) -> tuple[str | None, ...]:
    """The table of each of a transaction's items, by position (None: none, or not one of
    the reporting account's tables in ``region``)."""
    items = params.get("TransactItems")
    if not isinstance(items, list | tuple):
        return ()
    names = (_item_table(item) for item in items)
    return tuple(table_name(n) if _ours(n, region, account) else None for n in names)


def request_tables(
    operation: str,
    params: Mapping[str, Any],
    region: str | None = None,
    account: str | None = None,
) -> tuple[str, ...]:
    """The tables a request names, each once, in order; a table given as an ARN of
    another region or account than ``region`` and ``account`` (when given) is left out."""
    if operation in ("BatchGetItem", "BatchWriteItem"):
        items = params.get("RequestItems")
        names: list[object] = list(items) if isinstance(items, Mapping) else []
    elif operation in ("TransactGetItems", "TransactWriteItems"):
        return tuple(dict.fromkeys(n for n in transact_items(params, region, account) if n))
    else:
        names = [params.get("TableName")]
    found = (table_name(n) for n in names if _ours(n, region, account))
    return tuple(dict.fromkeys(n for n in found if n is not None))


def _units(capacity: object, dimension: str) -> dict[str, float]:
    """A ``Capacity`` (or ``ConsumedCapacity``) by dimension: its explicit read and write
    units when given, else its ``CapacityUnits`` on ``dimension``."""
    if not isinstance(capacity, Mapping):
        return {}
    explicit = {
        dim: float(capacity[field_name])
        for dim, field_name in (("read", "ReadCapacityUnits"), ("write", "WriteCapacityUnits"))
        if _finite(capacity.get(field_name))
    }
    if explicit:
        return explicit
    total = capacity.get("CapacityUnits")
    return {dimension: float(total)} if _finite(total) else {}


def _finite(value: object) -> TypeGuard[float]:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def consumed(entry: object, dimension: str) -> dict[_Key, float]:
    """One ``ConsumedCapacity`` entry as units by (index, dimension): each GSI's own, and
    the table's (the entry's total less its GSIs'; the table's and its LSIs' when the
    entry gives no total). ``dimension``: the operation's, for units that name none."""
    if not isinstance(entry, Mapping):
        return {}
    out: dict[_Key, float] = {}
    gsi_sum: dict[str, float] = {}
    gsis = entry.get("GlobalSecondaryIndexes")
    for name, capacity in gsis.items() if isinstance(gsis, Mapping) else ():
        for dim, units in _units(capacity, dimension).items():
            if isinstance(name, str) and name:
                out[(name, dim)] = out.get((name, dim), 0.0) + units
                gsi_sum[dim] = gsi_sum.get(dim, 0.0) + units
    total = _units(entry, dimension)
    if total:
        table = {dim: max(0.0, units - gsi_sum.get(dim, 0.0)) for dim, units in total.items()}
    else:
        table = _units(entry.get("Table"), dimension)
        lsis = entry.get("LocalSecondaryIndexes")
        for capacity in lsis.values() if isinstance(lsis, Mapping) else ():
            for dim, units in _units(capacity, dimension).items():
                table[dim] = table.get(dim, 0.0) + units
    for dim, units in table.items():
        out[(None, dim)] = units
    return out


def _resource(arn: object) -> tuple[str, str | None] | None:
    """(table, index or None) of a table's or index's ARN; None if it is neither."""
    if not isinstance(arn, str) or not arn.startswith("arn:"):
        return None
    parts = arn.split(":", 5)[-1].split("/")
    if len(parts) < 2 or parts[0] != "table" or not parts[1]:
        return None
    index = parts[3] if len(parts) >= 4 and parts[2] == "index" and parts[3] else None
    return parts[1], index


def _reason_dimension(entry: Mapping[str, Any], dimension: str) -> str:
    reason = entry.get("reason")
    if isinstance(reason, str):
        if reason[5:].startswith("Read"):  # "Table" and "Index" are both 5 letters
            return "read"
        if reason[5:].startswith("Write"):
            return "write"
    return dimension


def throttled(
    parsed: Mapping[str, Any],
    operation: str,
    tables: Iterable[str],
    index: str | None = None,
    items: tuple[str | None, ...] = (),
) -> list[tuple[str, str | None, str, str]]:
    """The (table, index, dimension, cause) each throttled attempt counts on, from the
    error ``parsed`` as botocore parsed it; empty if it is not a throttle. With reasons
    that name their resources: once per resource and dimension, with the strongest of
    its reasons; else once per table the request names, on the operation's dimension (on
    ``index``, the GSI a Query or Scan reads, if any). A cancelled transaction counts
    through `cancelled` (``items``: its tables by position)."""
    from botocore.exceptions import ClientError

    dimension = OPERATIONS[operation]
    error = parsed.get("Error")
    code = error.get("Code") if isinstance(error, Mapping) else None
    if code == "TransactionCanceledException":
        return cancelled(parsed, dimension, tuple(tables), items)
    cause = throttle_cause(ClientError(dict(parsed), operation))  # type: ignore[arg-type]
    if cause is None:
        return []
    reasons = parsed.get("ThrottlingReasons") or parsed.get("throttlingReasons")
    if isinstance(reasons, list) and 0 < len(reasons) <= MAX_REASONS:
        groups: dict[tuple[str, str | None, str], list[object]] = {}
        for entry in reasons:
            where = _resource(entry.get("resource")) if isinstance(entry, Mapping) else None
            if where is None or not isinstance(entry, Mapping):
                groups = {}
                break
            groups.setdefault((*where, _reason_dimension(entry, dimension)), []).append(entry)
        if groups:
            return [(*k, REPORT_CAUSES[reasons_cause(v)]) for k, v in groups.items()]
        counted = REPORT_CAUSES[cause]
    else:
        counted = NO_REASON.get(code, "other") if isinstance(code, str) else "other"
    return [(table, index, dimension, counted) for table in tables]


def cancelled(
    parsed: Mapping[str, Any],
    dimension: str,
    tables: tuple[str, ...],
    items: tuple[str | None, ...],
) -> list[tuple[str, str | None, str, str]]:
    """What a TransactionCanceledException counts as: a throttled attempt (cause
    `TRANSACTION_CAUSE`) once per table of an item whose cancellation reason is
    ``ThrottlingError``, when the reasons match the items one for one; else once, on the
    first table the request names. Empty when no reason is a throttle."""
    reasons = parsed.get("CancellationReasons")
    if not isinstance(reasons, list) or len(reasons) > 1_000:
        return []
    hit = [
        i
        for i, reason in enumerate(reasons)
        if isinstance(reason, Mapping) and reason.get("Code") == "ThrottlingError"
    ]
    if not hit:
        return []
    if len(reasons) == len(items):
        named = tuple(dict.fromkeys(n for n in (items[i] for i in hit) if n is not None))
    else:
        named = tables[:1]
    return [(table, None, dimension, TRANSACTION_CAUSE) for table in named]


# --- the sums and when they are reported ------------------------------------------------


def report_due(
    elapsed: float,
    since_report: float,
    rates: Mapping[_Key, float],
    reported: Mapping[_Key, float],
    *,
    throttles: bool,
    traffic: bool,
) -> bool:
    """Whether a table's report is due: a throttle (``throttles``); a dimension whose
    rate over the ``elapsed`` window (``rates``, units per second) moved from the last
    reported one by `CHANGE` of it and at least `MIN_CHANGE`; or ``traffic``
    and `KEEPALIVE_SECONDS` ``since_report``."""
    if elapsed <= 0:
        return False
    if throttles:
        return True
    for key in set(rates) | set(reported):
        now, before = rates.get(key, 0.0), reported.get(key, 0.0)
        if abs(now - before) >= max(CHANGE * before, MIN_CHANGE):
            return True
    return traffic and since_report >= KEEPALIVE_SECONDS


@dataclass
class _Sums:
    units: float = 0.0
    requests: int = 0
    throttles: dict[str, int] = field(default_factory=dict)
    failed: int = 0


@dataclass
class _Table:
    since: float  # the start of the window the sums cover (monotonic seconds)
    last: float | None = None  # the last report (monotonic seconds)
    sums: dict[_Key, _Sums] = field(default_factory=dict)
    reported: dict[_Key, float] = field(default_factory=dict)  # units per second, not 0


class Ledger:
    """The sums of one process, per table and dimension, and when each is reported. Times
    are monotonic seconds passed in; not thread-safe (a [`Watcher`][] holds a lock)."""

    def __init__(self, start: float, interval: float, max_tables: int = MAX_TABLES) -> None:
        self.start = start
        self.interval = interval
        self.max_tables = max_tables
        self.tables: dict[str, _Table] = {}
        self.dropped = 0

    def add(
        self,
        now: float,
        table: str,
        index: str | None,
        dimension: str,
        *,
        units: float = 0.0,
        requests: int = 0,
        cause: str | None = None,
        failed: int = 0,
    ) -> bool:
        """Add to a dimension's sums; False (and counted in `dropped`) when that
        would track more than `max_tables` tables or one report's dimensions."""
        state = self.tables.get(table)
        if state is None:
            if len(self.tables) >= self.max_tables:
                self.dropped += 1
                return False
            state = self.tables[table] = _Table(since=self.start)
        key = (index, dimension)
        sums = state.sums.get(key)
        if sums is None:
            others = sum(1 for k in state.reported if k not in state.sums)
            if len(state.sums) + others + (key not in state.reported) > MAX_DIMENSIONS:
                self.dropped += 1
                return False
            if not state.sums:  # traffic resumes: the window starts one interval back
                state.since = max(state.since, now - self.interval)
            sums = state.sums[key] = _Sums()
        sums.units += units
        sums.requests += requests
        sums.failed += failed
        if cause is not None:
            sums.throttles[cause] = sums.throttles.get(cause, 0) + 1
        return True

    def _due(self, state: _Table, now: float) -> bool:
        elapsed = now - state.since
        rates = {k: s.units / elapsed for k, s in state.sums.items()} if elapsed > 0 else {}
        return report_due(
            elapsed,
            now - (state.last if state.last is not None else state.since),
            rates,
            state.reported,
            throttles=any(any(s.throttles.values()) or s.failed for s in state.sums.values()),
            traffic=bool(state.sums),
        )

    def due(self, now: float) -> list[str]:
        """The tables whose report is due at ``now``; forgets the tables quiet for
        `core.surge.FRESH_SECONDS` with nothing left to report."""
        for name, state in list(self.tables.items()):
            quiet = now - (state.last if state.last is not None else state.since)
            if not state.sums and not state.reported and quiet >= FRESH_SECONDS:
                del self.tables[name]
        return [name for name, state in self.tables.items() if self._due(state, now)]

    def take(self, table: str, now: float, sent: float, process: str) -> Report | None:
        """``table``'s report at ``now`` (``sent``: seconds since the epoch), its sums
        reset; None if it has nothing to say (no traffic, no rate to bring to zero)."""
        state = self.tables.get(table)
        if state is None:
            return None
        keys = [*state.sums, *(k for k in state.reported if k not in state.sums)]
        if not keys:
            return None
        elapsed = max(0.0, now - state.since)
        seconds = min(max(elapsed, MIN_WINDOW_SECONDS), MAX_WINDOW_SECONDS)
        scale = seconds / elapsed if elapsed > MAX_WINDOW_SECONDS else 1.0
        most = int(MAX_REQUESTS_PER_SECOND * seconds)
        dims = []
        for index, dimension in keys[:MAX_DIMENSIONS]:
            s = state.sums.get((index, dimension)) or _Sums()
            units = min(s.units * scale, MAX_UNITS_PER_SECOND * seconds)
            throttles = {c: min(math.ceil(n * scale), most) for c, n in s.throttles.items()}
            requests = min(round(s.requests * scale), most)
            failed = min(math.ceil(s.failed * scale), most)
            dims.append(DimensionReport(index, dimension, units, requests, throttles, failed))
        state.reported = {(d.index, d.dimension): d.units / seconds for d in dims if d.units}
        state.sums = {}
        state.since = state.last = now
        return Report(table, process, seconds, sent, tuple(dims))


# --- sending ------------------------------------------------------------------------------


class LambdaSender:
    """Sends a report to the signals function as an asynchronous invocation (``Event``:
    Lambda queues it and answers at once). The Lambda client is made from ``session``;
    ``eager`` makes it now (a caller's session is not shared with the sending thread),
    else on first use. After a fork the child makes its own from a fresh boto3 Session of
    the same region and profile (and the same keys, when the caller's session was given
    them): a session object of the parent may hold a lock another thread had then."""

    def __init__(self, function: str, session: Any, *, eager: bool) -> None:
        self.function = function
        self._session = session
        #: The region of the Lambda client: the region the watcher reports on.
        self.region: str | None = getattr(session, "region_name", None)
        profile = getattr(session, "profile_name", None)
        self._profile = profile if isinstance(profile, str) and profile != "default" else None
        self._keys: dict[str, str] = {}
        self._lock = threading.Lock()
        self._client: Any = self._make() if eager else None
        if eager:
            self._keys = _explicit_keys(session)

    def fresh_session(self) -> Any:
        """A new boto3 Session of the sender's region, profile and explicit keys."""
        import boto3

        keys = self._keys
        return boto3.session.Session(
            aws_access_key_id=keys.get("aws_access_key_id"),
            aws_secret_access_key=keys.get("aws_secret_access_key"),
            aws_session_token=keys.get("aws_session_token"),
            region_name=self.region,
            profile_name=self._profile,
        )

    def _make(self) -> Any:
        from botocore.config import Config

        config = Config(
            connect_timeout=2, read_timeout=5, retries={"total_max_attempts": 2, "mode": "standard"}
        )
        session = self._session if self._session is not None else self.fresh_session()
        return session.client("lambda", config=config)

    def __call__(self, payload: dict[str, Any]) -> None:
        with self._lock:
            if self._client is None:
                self._client = self._make()
            client = self._client
        invoke(client, self.function, payload, asynchronous=True)  # InvokeError on a refusal

    def after_fork(self) -> None:
        self._lock = threading.Lock()
        self._client = None
        self._session = None  # the child's client comes from a fresh session


def _explicit_keys(session: Any) -> dict[str, str]:
    """The keys a session was given explicitly (none for any other credentials: a fresh
    session finds those again)."""
    try:
        credentials = session.get_credentials()
    except Exception:  # noqa: BLE001 (a fresh session then finds its own)
        return {}
    if credentials is None or getattr(credentials, "method", None) != "explicit":
        return {}
    frozen = credentials.get_frozen_credentials()
    keys = {"aws_access_key_id": frozen.access_key, "aws_secret_access_key": frozen.secret_key}
    if frozen.token:
        keys["aws_session_token"] = frozen.token
    return keys


# --- the watcher ----------------------------------------------------------------------------


def _process_id(label: str) -> str:
    """``<label>-<pid>-<8 hex digits>``: a process id (`core.surge.is_process_id`);
    a character a process id does not take becomes ``_``."""
    plain = _NOT_IN_IDS.sub("_", label[:MAX_LABEL_CHARS])
    return f"{plain}-{os.getpid()}-{secrets.token_hex(4)}"[:MAX_PROCESS_CHARS]


def _warn(event: str, **fields: Any) -> None:
    """Log ``event`` at WARNING; a logging failure is not the caller's."""
    try:
        log_event(event, level=logging.WARNING, **fields)
    except Exception:  # noqa: BLE001, S110 (never fail the caller's request)
        pass


def _strip_added(parsed: Any = None, context: Any = None, **_: Any) -> None:
    """Runs last after every call: takes out the ``ConsumedCapacity`` the hook asked for."""
    try:
        call = context.get(_CONTEXT_KEY) if isinstance(context, dict) else None
        if isinstance(call, _Call) and call.added and isinstance(parsed, dict):
            parsed.pop("ConsumedCapacity", None)
    except Exception:  # noqa: BLE001, S110 (never fail the caller's request)
        pass


@dataclass(frozen=True)
class _Call:
    """What the hook noted about one request: its tables (the reporting account's, in its
    region, in ``tables=``), whether it asked for the consumed capacity itself, the GSI a
    Query or Scan reads, and a transaction's tables by position."""

    operation: str
    tables: tuple[str, ...]
    added: bool
    owner: object  # the watcher that counts it: two watchers never count one request twice
    index: str | None = None
    items: tuple[str | None, ...] = ()


#: (table, index, dimension, units, requests, throttle cause, failed requests)
_Row = tuple[str, str | None, str, float, int, str | None, int]


class Watcher:
    """The hook [`watch`][] installs; [`stop`][] (or leaving a ``with`` block) sends
    the last reports and removes it. ``region`` and ``account``: the reporting account's
    (None: the region of the first request seen; any account). Counters: [`sent`][],
    [`failed_sends`][], [`dropped`][], [`errors`][]."""

    def __init__(
        self,
        emitter: Any,
        *,
        tables: frozenset[str] | None,
        send: Callable[[dict[str, Any]], object],
        interval: float,
        label: str,
        region: str | None = None,
        account: str | None = None,
        mode: str = CONSUMED,
    ) -> None:
        self._ask = mode == CONSUMED  # ask for the consumed capacity the caller did not
        self._scope = tables
        self._send = send
        self._interval = interval
        self._label = label
        self._region = region
        self._account = account
        self._uid = f"ddb-capacity-signals-{id(self)}-{secrets.token_hex(4)}"
        self._active = True
        self._stopped = False
        self._fresh_state()
        self._handlers = (
            ("before-parameter-build.dynamodb", self._before_parameters),
            ("needs-retry.dynamodb", self._needs_retry),
            ("after-call.dynamodb", self._after_call),
        )
        self._emitters: weakref.WeakSet[Any] = weakref.WeakSet()
        self.attach(emitter)
        _WATCHERS.add(self)

    def attach(self, emitter: Any) -> None:
        """Hook one more boto3 Session's event emitter: its DynamoDB clients report through this
        watcher too (the launcher's: every boto3 Session of the process, one watcher)."""
        for event, handler in self._handlers:
            emitter.register(event, handler, unique_id=f"{self._uid}-{event}")
        emitter.register_last("after-call.dynamodb", _strip_added, unique_id=_STRIP_ID)
        self._emitters.add(emitter)

    def _fresh_state(self) -> None:
        """Counters, sums, lock, thread and process id as new (at start, and in a forked
        child)."""
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._ledger = Ledger(time.monotonic(), self._interval)
        self._sent = self._failed = self._errors = 0
        self._logged: set[tuple[str, str]] = set()
        self._local: set[tuple[str, str]] = set()
        self._process = _process_id(self._label)

    # observability
    @property
    def process(self) -> str:
        """This process's id in its reports."""
        return self._process

    @property
    def region(self) -> str | None:
        """The region reported on: requests to any other are not counted."""
        return self._region

    @property
    def account(self) -> str | None:
        """The account reported on (None: any): another account's table ARNs not counted."""
        return self._account

    @property
    def sent(self) -> int:
        """Reports sent."""
        return self._sent

    @property
    def failed_sends(self) -> int:
        """Reports whose sending raised (never passed on; the first is logged)."""
        return self._failed

    @property
    def dropped(self) -> int:
        """Observations dropped because the tables or dimensions tracked were at their
        bound."""
        with self._lock:
            return self._ledger.dropped

    @property
    def errors(self) -> int:
        """Errors the hook's handlers met and swallowed (the first of each kind logged)."""
        return self._errors

    @property
    def tracked(self) -> int:
        """How many tables the watcher tracks now."""
        with self._lock:
            return len(self._ledger.tables)

    # the handlers: never raise, never block
    def _failed_handler(self, where: str, exc: BaseException) -> None:
        kind = (where, type(exc).__name__)
        with self._lock:
            self._errors += 1
            first = kind not in self._logged and len(self._logged) < MAX_LOGGED_KINDS
            if first:
                self._logged.add(kind)
        if first:
            _warn("signals-hook-error", handler=where, error=kind[1], reason=str(exc)[:300])

    def _in_region(self, region: object) -> bool:
        """Whether a request to ``region`` is counted (the first request's region is
        the reporting one when none was given)."""
        if not isinstance(region, str) or not region:
            return True
        if self._region is None:
            with self._lock:
                if self._region is None:
                    self._region = region
        return region == self._region

    def _read_index(self, operation: str, params: Mapping[str, Any], table: str) -> str | None:
        """The GSI a Query or Scan reads: its ``IndexName``, unless the read is consistent
        or the index answered as a local one (an LSI uses its table's capacity)."""
        name = params.get("IndexName")
        if operation not in ("Query", "Scan") or not isinstance(name, str) or not name:
            return None
        if params.get("ConsistentRead") is True or (table, name) in self._local:
            return None
        return name

    def _before_parameters(self, params: Any = None, model: Any = None, **kw: Any) -> None:
        try:
            context = kw.get("context")
            operation = getattr(model, "name", None)
            if not (self._active and isinstance(operation, str) and isinstance(context, dict)):
                return
            if operation not in OPERATIONS or not isinstance(params, dict):
                return
            if isinstance(context.get(_CONTEXT_KEY), _Call):  # another watcher noted it
                return
            if not self._in_region(context.get("client_region")):
                return  # another region's tables: left exactly as the caller made it
            tables = request_tables(operation, params, self._region, self._account)
            tables = tuple(t for t in tables if self._scope is None or t in self._scope)
            if not tables:
                return
            items: tuple[str | None, ...] = ()
            if operation.startswith("Transact"):
                mine = transact_items(params, self._region, self._account)
                items = tuple(n if n in tables else None for n in mine)
            # NONE asks for nothing; any other value, even a wrong one, is the caller's
            asked = params.get("ReturnConsumedCapacity", "NONE") != "NONE"
            index = self._read_index(operation, params, tables[0])
            add = not asked and self._ask
            context[_CONTEXT_KEY] = _Call(operation, tables, add, self, index, items)
            if add:
                params["ReturnConsumedCapacity"] = "INDEXES"
        except Exception as exc:  # noqa: BLE001 (never fail the caller's request)
            self._failed_handler("before-parameter-build", exc)

    def _needs_retry(self, response: Any = None, request_dict: Any = None, **_: Any) -> None:
        try:
            if not self._active or not isinstance(response, tuple) or len(response) != 2:
                return
            http, parsed = response
            if getattr(http, "status_code", 200) < 300 or not isinstance(parsed, Mapping):
                return
            context = request_dict.get("context") if isinstance(request_dict, dict) else None
            call = context.get(_CONTEXT_KEY) if isinstance(context, dict) else None
            if not isinstance(call, _Call) or call.owner is not self:
                return
            hits = throttled(parsed, call.operation, call.tables, call.index, call.items)
            self._record([(t, i, d, 0.0, 0, c, 0) for t, i, d, c in hits])
        except Exception as exc:  # noqa: BLE001 (never fail the caller's request)
            self._failed_handler("needs-retry", exc)

    def _after_call(self, http_response: Any = None, parsed: Any = None, **kw: Any) -> None:
        try:
            context = kw.get("context")
            call = context.get(_CONTEXT_KEY) if isinstance(context, dict) else None
            if not isinstance(call, _Call) or call.owner is not self or not self._active:
                return
            if not isinstance(parsed, dict):
                return
            if getattr(http_response, "status_code", 500) >= 300:
                # the last attempt failed: a request never served for want of capacity
                hits = throttled(parsed, call.operation, call.tables, call.index, call.items)
                failed = [(t, i, d) for t, i, d, c in hits if c in FAILED_CAUSES]
                self._record([(t, i, d, 0.0, 0, None, 1) for t, i, d in dict.fromkeys(failed)])
                return
            self._record(self._answered(call, parsed))
        except Exception as exc:  # noqa: BLE001 (never fail the caller's request)
            self._failed_handler("after-call", exc)

    def _answered(self, call: _Call, parsed: Mapping[str, Any]) -> list[_Row]:
        """The rows of a request answered: one request per table, and its units."""
        dimension = OPERATIONS[call.operation]
        rows: list[_Row] = [(t, None, dimension, 0.0, 1, None, 0) for t in call.tables]
        answer = parsed.get("ConsumedCapacity")
        for entry in answer if isinstance(answer, list) else [answer]:
            name = table_name(entry.get("TableName")) if isinstance(entry, Mapping) else None
            if name is None or name not in call.tables or not isinstance(entry, Mapping):
                continue
            self._remember_local(name, entry.get("LocalSecondaryIndexes"))
            for (index, dim), units in consumed(entry, dimension).items():
                # a GSI's request counts where it consumed; the table's, once above
                rows.append((name, index, dim, units, int(index is not None), None, 0))
        return rows

    def _remember_local(self, table: str, lsis: object) -> None:
        if not isinstance(lsis, Mapping) or len(self._local) >= MAX_LOCAL_INDEXES:
            return
        with self._lock:
            self._local.update((table, n) for n in lsis if isinstance(n, str))

    def _record(self, rows: list[_Row]) -> None:
        rows = [r for r in rows if self._scope is None or r[0] in self._scope]
        if not rows:
            return
        now = time.monotonic()
        with self._lock:
            for table, index, dimension, units, requests, cause, failed in rows:
                self._ledger.add(
                    now,
                    table,
                    index,
                    dimension,
                    units=units,
                    requests=requests,
                    cause=cause,
                    failed=failed,
                )
            if self._thread is None and not self._stopped:
                thread = threading.Thread(
                    target=self._run, name="ddb-capacity-signals", daemon=True
                )
                thread.start()  # if it cannot start, the next request tries again
                self._thread = thread

    # the sending thread
    def _run(self) -> None:
        wake = self._wake
        while not wake.wait(self._interval):
            try:
                self._round(every=False)
            except Exception as exc:  # noqa: BLE001 (the thread goes on)
                self._failed_handler("send", exc)

    def _round(self, *, every: bool, deadline: float | None = None) -> None:
        """Send the reports due (``every``: every table's that has something to say);
        none is started once ``deadline`` (monotonic seconds) has passed."""
        with self._lock:
            names = list(self._ledger.tables) if every else self._ledger.due(time.monotonic())
        for name in names:
            if deadline is not None and time.monotonic() >= deadline:
                return
            with self._lock:
                report = self._ledger.take(name, time.monotonic(), time.time(), self._process)
            if report is not None:
                self._deliver(report)

    def _deliver(self, report: Report) -> None:
        try:
            self._send(report.as_json())
        except Exception as exc:  # noqa: BLE001 (a failed send is counted, never raised)
            with self._lock:
                self._failed += 1
                first = self._failed == 1
            if first:
                target = getattr(self._send, "function", None)
                _warn(
                    "signals-send-failed",
                    table=report.table,
                    target=target if isinstance(target, str) else None,
                    error=type(exc).__name__,
                    reason=str(exc)[:300],
                )
            return
        with self._lock:
            self._sent += 1

    def flush(self, timeout: float | None = None) -> None:
        """Send now, on the calling thread, every table's report that has something to
        say (traffic, throttles, or a rate to bring to zero); none is started after
        ``timeout`` seconds (None: no bound)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        self._round(every=True, deadline=deadline)

    def stop(self, timeout: float = 10.0) -> None:
        """Remove the hook, stop the thread and send the last reports, waiting at most
        ``timeout`` seconds in all: no report is started after it (a send under way then
        finishes in the background). Never raises; calling it again does nothing."""
        deadline = time.monotonic() + timeout
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            self._active = False
            thread = self._thread
        try:
            for emitter in list(self._emitters):
                for event, _handler in self._handlers:
                    emitter.unregister(event, unique_id=f"{self._uid}-{event}")
            self._wake.set()
            if thread is not None and thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
            self._last_round(deadline)
        except Exception as exc:  # noqa: BLE001 (stopping never fails the caller)
            self._failed_handler("stop", exc)

    def _last_round(self, deadline: float) -> None:
        last = threading.Thread(
            target=self._round,
            kwargs={"every": True, "deadline": deadline},
            name="ddb-capacity-signals-last",
            daemon=True,
        )
        try:
            last.start()
        except RuntimeError:  # at interpreter shutdown no thread starts (Python 3.12+)
            self._round(every=True, deadline=deadline)
            return
        last.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> Watcher:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def _after_fork_in_child(self) -> None:
        self._fresh_state()
        if isinstance(self._send, LambdaSender):
            self._send.after_fork()


_WATCHERS: weakref.WeakSet[Watcher] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for watcher in list(_WATCHERS):
        watcher._after_fork_in_child()


def _stop_at_exit() -> None:
    for watcher in list(_WATCHERS):
        watcher.stop(timeout=2.0)


os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(_stop_at_exit)


# --- watch ----------------------------------------------------------------------------------


def _emitter_and_session(session_or_client: object) -> tuple[Any, Any, bool]:
    """The event emitter to hook, the session to make a Lambda client from, and whether
    that session is the caller's."""
    import boto3
    import botocore.session

    if isinstance(session_or_client, boto3.session.Session):
        return session_or_client.events, session_or_client, True
    if isinstance(session_or_client, botocore.session.Session):
        emitter = session_or_client.get_component("event_emitter")
        return emitter, boto3.session.Session(botocore_session=session_or_client), True
    meta = getattr(session_or_client, "meta", None)
    model = getattr(meta, "service_model", None)
    if meta is not None and model is not None and hasattr(meta, "events"):
        if model.service_name != "dynamodb":
            raise ValueError(
                f"session_or_client: got a {model.service_name} client; expected a "
                "DynamoDB client or a boto3 Session"
            )
        return meta.events, boto3.session.Session(region_name=meta.region_name), False
    raise TypeError(
        f"session_or_client: got {type(session_or_client).__name__}; expected a boto3 "
        "Session (every DynamoDB client it makes is watched) or a DynamoDB client"
    )


def _interval(interval: object) -> float:
    if (
        isinstance(interval, bool)
        or not isinstance(interval, int | float)
        or not MIN_INTERVAL <= interval <= MAX_INTERVAL
    ):
        raise ValueError(
            f"interval: got {interval!r}; expected seconds from {MIN_INTERVAL:g} to "
            f"{MAX_INTERVAL:g}"
        )
    return float(interval)


def _scope(tables: Iterable[str] | None) -> frozenset[str] | None:
    if tables is None:
        return None
    if isinstance(tables, str | bytes) or not isinstance(tables, Iterable):
        raise TypeError(f"tables: got {tables!r}; expected an iterable of table names, or None")
    names = list(tables)
    bad = [n for n in names if table_name(n) is None]
    if bad:
        raise ValueError(f"tables: got {bad[0]!r}; expected table names (or table ARNs)")
    return frozenset(n for n in (table_name(n) for n in names) if n)


def _account(account: str | None, function: str | None) -> str | None:
    """The reporting account: ``account``, else the one the function's ARN names."""
    if account is not None:
        if not isinstance(account, str) or len(account) != 12 or not account.isdigit():
            raise ValueError(f"account: got {account!r}; expected a 12-digit AWS account id")
        return account
    place = arn_place(function)
    return place[1] if place is not None and place[1] else None


def _label(process: str | None) -> str:
    if process is None:
        return socket.gethostname()[:MAX_LABEL_CHARS] or "process"
    if (
        not isinstance(process, str)
        or not 0 < len(process) <= MAX_LABEL_CHARS
        or _NOT_IN_IDS.search(process)
    ):
        raise ValueError(
            f"process: got {process!r}; expected a label of 1 to {MAX_LABEL_CHARS} letters, "
            "digits, '.', '_' or '-' (the pid and a random part are added)"
        )
    return process


def watch(
    session_or_client: Any,
    *,
    tables: Iterable[str] | None = None,
    function: str | None = None,
    interval: float = 5.0,
    send: Callable[[dict[str, Any]], object] | None = None,
    process: str | None = None,
    account: str | None = None,
    mode: str = CONSUMED,
) -> Watcher:
    """Watch the DynamoDB requests of ``session_or_client`` (a boto3 Session: every
    DynamoDB client it makes from now on; or one DynamoDB client) and report them to the
    signals function ``function`` (default: ``$CAPACITY_SIGNALS``) every ``interval``
    seconds when it matters; ``send`` (called with each report's JSON object) replaces
    the Lambda invocation. ``tables``: the only tables reported (default: all).
    ``process``: a label for this process's id (default: the host name). ``account``: the
    account whose tables are reported (default: the one ``function``'s ARN names, if
    any); a table given as another account's ARN is not counted. The Lambda client is
    made from the boto3 Session, or, for a client, from the default credentials in the
    client's region; that region (the boto3 Session's, or the client's) is reported on.
    ``mode``: [`CONSUMED`][] (ask for the consumed capacity) or [`THROTTLES`][] (never
    change a request: throttles, and only the capacity the caller asked for). Raises
    TypeError or ValueError naming a wrong argument."""
    if mode not in MODES:
        raise ValueError(f"mode: got {mode!r}; expected one of {MODES}")
    emitter, session, callers = _emitter_and_session(session_or_client)
    seconds = _interval(interval)
    scope = _scope(tables)
    label = _label(process)
    if send is not None and function is not None:
        raise ValueError(
            f"function: got {function!r} with send; expected one of them (send replaces "
            "the Lambda invocation)"
        )
    if send is not None and not callable(send):
        raise TypeError(f"send: got {send!r}; expected a callable taking a report's JSON")
    if send is None:
        name = function if function is not None else os.environ.get(SIGNALS_ENV, "")
        if not isinstance(name, str) or not name.strip():
            raise ValueError(
                f"function: got {function!r} and ${SIGNALS_ENV} is not set; expected the "
                "signals function's name or ARN (or send=, a callable)"
            )
        function = name.strip()
        owner = _account(account, function)
        send = LambdaSender(function, session, eager=callers)
    else:
        owner = _account(account, None)
    region = getattr(session, "region_name", None)
    return Watcher(
        emitter,
        tables=scope,
        send=send,
        interval=seconds,
        label=label,
        region=region if isinstance(region, str) and region else None,
        account=owner,
        mode=mode,
    )
