"""Runs in: workers (the user's own processes).

The client hook of the fast path, and its public face: [`watch`][] hooks a boto3 Session
(every DynamoDB client it makes from then on) or one DynamoDB client, sums per table, GSI
and dimension the capacity the process consumes and the throttles it meets, and a
background thread reports them to the signals function, which raises capacity within
seconds instead of waiting for CloudWatch's minutes. It never blocks, slows or fails the
caller.

Here: `watch` and the `Watcher` it installs on a boto3 Session's (or one DynamoDB
client's) events, its handlers, its sending thread, and stopping at exit and starting
afresh after a fork. The rest of the hook is `parse` (what a request touched, consumed and
met), `ledger` (the sums, and when a report is due), `sender` (the Lambda invocation) and
`emitters` (what is hooked, and the boto3 Session the Lambda client comes from).
Which requests it counts, what it does to them, when it reports, what it costs and what it
cannot see: docs/guides/fast-path.md#how-the-hook-counts.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import re
import secrets
import socket
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.call_limits import most_units, page_items
from ..core.errors import WatchError as WatchError
from ..core.errors import WatchTypeError as WatchTypeError
from ..core.report_batch import MAX_BATCH_REPORTS, MAX_BATCHES_PER_ROUND, batch_json, batches
from ..core.surge_report import MAX_PROCESS_CHARS, SIGNALS_ENV, Report
from ..core.validators import is_number
from ..events import LAMBDA_ENV, log_event
from .emitters import OwnSession as OwnSession
from .emitters import emitter_and_session
from .failures import HOOK_FAILURES as HOOK_FAILURES
from .failures import count_hook_failures
from .ledger import CHANGE, KEEPALIVE_SECONDS, MAX_TABLES, MIN_CHANGE, Ledger
from .parse import (
    OPERATIONS,
    arn_place,
    consumed,
    is_ours,
    request_tables,
    table_name,
    throttled,
    transact_items,
)
from .sender import LambdaSender

__all__ = [
    "CHANGE",
    "CONSUMED",
    "KEEPALIVE_SECONDS",
    "MAX_INTERVAL",
    "MAX_TABLES",
    "MIN_CHANGE",
    "MIN_INTERVAL",
    "MODES",
    "SIGNALS_ENV",
    "THROTTLES",
    "Watcher",
    "watch",
]

MIN_INTERVAL = 1.0
"""The shortest and longest wait between two rounds of reports, in seconds."""
MAX_INTERVAL = 60.0
MAX_LABEL_CHARS = 40
"""The longest ``process`` label: the pid and a random part fill the rest of the id."""
FAILED_CAUSES = frozenset({"provisioned", "unknown"})
"""The causes that make a request whose last attempt met them a failed one (never served for want of
capacity): its demand counts once in the report's ``failed``."""
MAX_LOGGED_KINDS = 32
"""The most distinct handler errors logged (each kind once); all of them are counted."""
CONSUMED = "consumed"
"""The hook's default mode: it asks DynamoDB for the consumed capacity of every request
counted (``ReturnConsumedCapacity="INDEXES"`` where the caller asked for none)."""
THROTTLES = "throttles"
"""The hook's mode that leaves every request exactly as the caller made it, and counts the
throttles, the requests answered and refused, and the capacity only of the requests whose
caller asked for it (an account whose IAM policies condition on
``dynamodb:ReturnConsumedCapacity`` may refuse a request that asks for it)."""
MODES = (CONSUMED, THROTTLES)
MAX_REPORTS_PER_ROUND = MAX_BATCH_REPORTS * MAX_BATCHES_PER_ROUND
"""The most reports a round of the sending thread takes (`core.report_batch`): the tables left
wait for the next round, their sums still adding up."""
MAX_LOCAL_INDEXES = 5_000
"""The most secondary indexes remembered as local (an LSI shares its table's capacity)."""

_NOT_IN_IDS = re.compile(r"[^A-Za-z0-9._-]")
"""What a process id does not take (`core.surge_report.PROCESS_ID`)."""
_CONTEXT_KEY = "ddb_capacity_signals"
_STRIP_ID = "ddb-capacity-signals-strip"


def _process_id(label: str) -> str:
    """``<label>-<pid>-<8 hex digits>``: a process id (`core.surge_report.is_process_id`);
    a character a process id does not take becomes ``_``."""
    plain = _NOT_IN_IDS.sub("_", label[:MAX_LABEL_CHARS])
    return f"{plain}-{os.getpid()}-{secrets.token_hex(4)}"[:MAX_PROCESS_CHARS]


def _warn(event: str, summary: str, **fields: Any) -> None:
    """Log ``event`` at WARNING, its message ``event: summary`` (readable under any logging
    configuration); a logging failure is not the caller's."""
    try:
        log_event(event, level=logging.WARNING, message=f"{event}: {summary}", **fields)
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


_Row = tuple[str, str | None, str, float, int, str | None, int]
"""(table, index, dimension, units, requests, throttle cause, failed requests)"""


class Watcher:
    """The hook [`watch`][] installs; [`stop`][] (or leaving a ``with`` block) sends
    the last reports and removes it. ``region`` and ``account``: the reporting account's
    (None: the region of the first request seen; any account). ``clock``: the monotonic
    seconds its windows and deadlines are measured in. Counters: [`sent`][],
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
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
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
        self._stop_by: float | None = None  # stop's deadline: no batch is started after it
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
        self._ledger = Ledger(self._clock(), self._interval)
        self._sent = self._failed = self._errors = 0
        self._pending = 0  # reports taken into a round and not yet sent, failed or lost
        self._settled = False  # stop has counted what was still pending: later outcomes aren't
        self._published = 0  # failures, drops and errors already in a HookFailures record
        self._send_logged = False
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
        """Reports not delivered: their batch's sending raised (never passed on; the first
        is logged), or `stop`'s time ran out before it."""
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
            with contextlib.suppress(RuntimeError):  # a thread refused here: counted already
                self._start()  # its rounds count the error, even when nothing is recorded
            first = kind not in self._logged and len(self._logged) < MAX_LOGGED_KINDS
            if first:
                self._logged.add(kind)
        if first:
            reason = str(exc)[:300]
            _warn(
                "signals-hook-error",
                f"{where}: {kind[1]}: {reason} (counted in Watcher.errors; the call went on)",
                handler=where,
                error=kind[1],
                reason=reason,
            )

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
            hits = self._throttled(parsed, call)
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
                hits = self._throttled(parsed, call)
                failed = [(t, i, d) for t, i, d, c in hits if c in FAILED_CAUSES]
                self._record([(t, i, d, 0.0, 0, None, 1) for t, i, d in dict.fromkeys(failed)])
                return
            self._record(self._answered(call, parsed))
        except Exception as exc:  # noqa: BLE001 (never fail the caller's request)
            self._failed_handler("after-call", exc)

    def _throttled(
        self, parsed: Mapping[str, Any], call: _Call
    ) -> list[tuple[str, str | None, str, str]]:
        """Where a throttled attempt of ``call`` counts (`throttled`, this process's tables)."""
        return throttled(
            parsed,
            call.operation,
            call.tables,
            call.index,
            call.items,
            region=self._region,
            account=self._account,
        )

    def _answered(self, call: _Call, parsed: Mapping[str, Any]) -> list[_Row]:
        """The rows of a request answered: one request per table, and its units (an entry
        for a same-named table of another Region or account counts nowhere)."""
        dimension = OPERATIONS[call.operation]
        rows: list[_Row] = [(t, None, dimension, 0.0, 1, None, 0) for t in call.tables]
        # the items a Query or Scan read: a local index may fetch each from the table
        items = page_items(parsed.get("Items"), parsed.get("ScannedCount"))
        answer = parsed.get("ConsumedCapacity")
        for entry in answer if isinstance(answer, list) else [answer]:
            if not isinstance(entry, Mapping):
                continue
            arn = entry.get("TableName")
            name = table_name(arn) if is_ours(arn, self._region, self._account) else None
            if name is None or name not in call.tables:
                continue
            self._remember_local(name, entry.get("LocalSecondaryIndexes"))
            for (index, dim), units in consumed(entry, dimension).items():
                # at most what one such call can consume there (the table's, with its LSIs)
                most = most_units(call.operation, on_gsi=index is not None, items=items)
                # a GSI's request counts where it consumed; the table's, once above
                rows.append((name, index, dim, min(units, most), int(index is not None), None, 0))
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
        now = self._clock()
        with self._lock:
            before = self._ledger.dropped
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
            first_drop = before == 0 and self._ledger.dropped > 0
            self._start()
        if first_drop:
            _warn(
                "signals-dropped",
                f"more than {self._ledger.max_tables:,} tables, or a table's dimensions "
                "past a report's bound, at once: the rest are not reported (counted in "
                "Watcher.dropped); pass tables= to watch only the tables the fast path "
                "serves",
                tables=len(self._ledger.tables),
            )

    # the sending thread
    def _start(self) -> None:
        """Start the sending thread unless it runs (the lock held): its rounds send the
        reports and count the failures (`_publish`)."""
        if self._thread is None and not self._stopped:
            thread = threading.Thread(target=self._run, name="ddb-capacity-signals", daemon=True)
            thread.start()  # if it cannot start (raised, counted), the next request tries again
            self._thread = thread

    def _run(self) -> None:
        wake = self._wake
        while not wake.wait(self._interval):
            try:
                self._round(every=False)
            except Exception as exc:  # noqa: BLE001 (the thread goes on)
                self._failed_handler("send", exc)

    def _round(self, *, every: bool, deadline: float | None = None, final: bool = False) -> None:
        """Send the reports due (``every``: every table's that has something to say), in
        batches: at most `MAX_REPORTS_PER_ROUND` a round unless ``every``, the tables that
        wait longest first after the throttled ones; none is taken once ``deadline``
        (a time of its clock) has passed. ``final`` (the round at stop): the reports the
        deadline left untaken are lost with the process, and counted as failed sends."""
        with self._lock:
            names = list(self._ledger.tables) if every else self._ledger.due(self._clock())
        if not every:
            names = names[:MAX_REPORTS_PER_ROUND]
        reports: list[Report] = []
        for position, name in enumerate(names):
            if deadline is not None and self._clock() >= deadline:
                if final:
                    self._lost(sum(self._take(n) is not None for n in names[position:]))
                break
            report = self._take(name)
            if report is not None:
                reports.append(report)
        with self._lock:
            self._pending += len(reports)
        for batch in batches([r.as_json() for r in reports]):
            if self._past(deadline):
                self._ended(len(batch), sent=False)
                continue
            self._deliver(batch)
        self._publish()

    def _past(self, deadline: float | None) -> bool:
        """Whether no batch may start now: past ``deadline`` (a round's; None: none), or
        past stop's (the sending thread's round under way when stop's time is up starts no
        more batches)."""
        limits = [d for d in (deadline, self._stop_by) if d is not None]
        return bool(limits) and self._clock() >= min(limits)

    def _publish(self) -> None:
        """In a Lambda function, one Embedded Metric Format line of the reports not sent,
        observations dropped and handler errors since the last (`HOOK_FAILURES`; none
        when there are none), for the deployment of the signals function it reports to
        (`failures.series`): Lambda makes it a metric, which ``CapacityRequests`` alarms
        on. Elsewhere a line in the program's own output is no metric: the counters are
        the watcher's ([`failed_sends`][], [`dropped`][], [`errors`][])."""
        if not os.environ.get(LAMBDA_ENV):
            return
        with self._lock:
            total = self._failed + self._errors + self._ledger.dropped
            new, self._published = total - self._published, total
        if new > 0:
            count_hook_failures(new, getattr(self._send, "function", None))

    def _take(self, name: str) -> Report | None:
        """The report ``name``'s table has to give now, taken from the ledger; None: none."""
        with self._lock:
            return self._ledger.take(name, self._clock(), time.time(), self._process)

    def _lost(self, reports: int) -> None:
        with self._lock:
            self._failed += reports

    def _ended(self, reports: int, *, sent: bool) -> bool:
        """Count ``reports`` of a round's batch as sent or not; False (nothing counted) when
        stop has already counted them as not sent (`_settle`)."""
        with self._lock:
            self._pending -= reports
            if self._settled:
                return False
            if sent:
                self._sent += reports
            else:
                self._failed += reports
            return True

    def _deliver(self, batch: list[Mapping[str, Any]]) -> None:
        try:
            self._send(batch_json(batch))
        except Exception as exc:  # noqa: BLE001 (a failed send is counted, never raised)
            with self._lock:
                first = not self._send_logged
                self._send_logged = True
            if self._ended(len(batch), sent=False) and first:
                self._send_failed(batch, exc)
            return
        self._ended(len(batch), sent=True)

    def _send_failed(self, batch: list[Mapping[str, Any]], exc: Exception) -> None:
        """Log the first failed send: AWS's error code, the reason and a one-line hint."""
        target = getattr(self._send, "function", None)
        code = getattr(exc, "code", "") or type(exc).__name__
        hint = getattr(exc, "hint", "") or "the send callable raised"
        reason = str(exc)[:300]
        _warn(
            "signals-send-failed",
            f"{code}: {hint} ({len(batch)} reports not sent, counted in "
            f"Watcher.failed_sends; later failures are not logged): {reason}",
            table=batch[0].get("table"),
            reports=len(batch),
            target=target if isinstance(target, str) else None,
            error=type(exc).__name__,
            code=code,
            hint=hint,
            reason=reason,
        )

    def flush(self, timeout: float | None = None) -> None:
        """Send now, on the calling thread, every table's report that has something to
        say (traffic, throttles, or a rate to bring to zero); none is started after
        ``timeout`` seconds (None: no bound)."""
        deadline = None if timeout is None else self._clock() + timeout
        self._round(every=True, deadline=deadline)

    def stop(self, timeout: float = 10.0) -> None:
        """Remove the hook, stop the thread and send the last reports, waiting at most
        ``timeout`` seconds in all: no batch is started after it (a send under way then
        finishes in the background, its reports counted in [`failed_sends`][]: the
        process may end first). Never raises; calling it again does nothing."""
        deadline = self._clock() + timeout
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            self._stop_by = deadline
            self._active = False
            thread = self._thread
        try:
            for emitter in list(self._emitters):
                for event, _handler in self._handlers:
                    emitter.unregister(event, unique_id=f"{self._uid}-{event}")
            self._wake.set()
            if thread is not None and thread is not threading.current_thread():
                thread.join(max(0.0, deadline - self._clock()))
            self._last_round(deadline)
            self._settle()
        except Exception as exc:  # noqa: BLE001 (stopping never fails the caller)
            self._failed_handler("stop", exc)

    def _settle(self) -> None:
        """At the end of stop: the reports a send still under way holds (a slow send, or
        the search for credentials the first send starts) are counted as not sent, and
        published in a Lambda function: the process may end before that send does. What
        such a send does afterwards changes no count."""
        with self._lock:
            stranded, self._pending = self._pending, 0
            self._settled = True
            self._failed += stranded
        self._publish()

    def _last_round(self, deadline: float) -> None:
        last = threading.Thread(
            target=self._round,
            kwargs={"every": True, "deadline": deadline, "final": True},
            name="ddb-capacity-signals-last",
            daemon=True,
        )
        try:
            last.start()
        except RuntimeError:  # at interpreter shutdown no thread starts (Python 3.12+):
            # a send on this thread could hold the exit for its timeouts, so none is made
            self._round(every=True, deadline=self._clock(), final=True)
            return
        last.join(max(0.0, deadline - self._clock()))

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


EXIT_SECONDS = 0.5
"""How long the watchers' last reports may hold the interpreter's exit, all together."""


def _stop_at_exit() -> None:
    deadline = time.monotonic() + EXIT_SECONDS
    for watcher in list(_WATCHERS):
        watcher.stop(timeout=max(0.0, deadline - time.monotonic()))


os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(_stop_at_exit)


def _interval(interval: object) -> float:
    if not is_number(interval, MIN_INTERVAL, MAX_INTERVAL):
        raise WatchError(
            f"interval: got {interval!r}; expected seconds from {MIN_INTERVAL:g} to "
            f"{MAX_INTERVAL:g}"
        )
    return float(interval)


def _scope(tables: Iterable[str] | None) -> frozenset[str] | None:
    if tables is None:
        return None
    if isinstance(tables, str | bytes) or not isinstance(tables, Iterable):
        raise WatchTypeError(
            f"tables: got {tables!r}; expected an iterable of table names, or None"
        )
    names = list(tables)
    if not names:  # nothing would ever be reported: a mistake, not "every table"
        raise WatchError(
            f"tables: got {tables!r}; expected at least one table name (or None, the "
            "default, to report every table)"
        )
    bad = [n for n in names if table_name(n) is None]
    if bad:
        raise WatchError(f"tables: got {bad[0]!r}; expected table names (or table ARNs)")
    return frozenset(n for n in (table_name(n) for n in names) if n)


def _account(account: str | None, function: str | None) -> str | None:
    """The reporting account: ``account``, else the one the function's ARN names."""
    if account is not None:
        if not isinstance(account, str) or len(account) != 12 or not account.isdigit():
            raise WatchError(f"account: got {account!r}; expected a 12-digit AWS account id")
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
        raise WatchError(
            f"process: got {process!r}; expected a label of 1 to {MAX_LABEL_CHARS} letters, "
            "digits, '.', '_' or '-' (the pid and a random part are added)"
        )
    return process


def _sending(
    send: Callable[[dict[str, Any]], object] | None,
    function: str | None,
    account: str | None,
    session: Any,
    callers: bool,
) -> tuple[Callable[[dict[str, Any]], object], str | None]:
    """Where reports go (``send``, else ``function`` or its default) and the account."""
    if send is not None and function is not None:
        raise WatchError(
            f"function: got {function!r} with send; expected one of them (send replaces "
            "the Lambda invocation)"
        )
    if send is not None and not callable(send):
        raise WatchTypeError(
            f"send: got {send!r}; expected a callable taking a batch of reports' JSON"
        )
    if send is None:
        name = function if function is not None else os.environ.get(SIGNALS_ENV, "")
        if not isinstance(name, str) or not name.strip():
            raise WatchError(
                f"function: got {function!r} and ${SIGNALS_ENV} is not set; expected the "
                "signals function's name or ARN (or send=, a callable)"
            )
        function = name.strip()
        owner = _account(account, function)
        return LambdaSender(function, session, eager=callers), owner
    return send, _account(account, None)


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
    """The client hook: watch the DynamoDB requests of ``session_or_client`` (a boto3
    Session: every DynamoDB client it makes from now on; or one DynamoDB client) and report
    them to the signals function ``function`` (default: ``$CAPACITY_SIGNALS``) every ``interval``
    seconds when it matters; ``send`` (called with each batch of reports, as the function
    receives it) replaces the Lambda invocation. ``tables``: the only tables reported.
    ``process``: a label for this process's id (default: the host name). ``account``: the
    account whose tables are reported (default: the one ``function``'s ARN names, if
    any); a table given as another account's ARN is not counted. The Lambda client is
    made from the boto3 Session, or, for a client, from the default credentials in the
    client's region; that region (the boto3 Session's, or the client's) is reported on.
    ``mode``: [`CONSUMED`][] (ask for the consumed capacity) or [`THROTTLES`][] (never
    change a request: throttles, and only the capacity the caller asked for). Raises
    [`WatchError`][ddb_capacity_runtime.core.errors.WatchError] (a ``ValueError``; a
    `WatchTypeError`, also a ``TypeError``, for an argument of the wrong kind) naming a
    wrong argument, the value received and what is allowed."""
    if mode not in MODES:
        raise WatchError(f"mode: got {mode!r}; expected one of {MODES}")
    emitter, session, callers = emitter_and_session(session_or_client)
    seconds = _interval(interval)
    scope = _scope(tables)
    label = _label(process)
    send, owner = _sending(send, function, account, session, callers)
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
