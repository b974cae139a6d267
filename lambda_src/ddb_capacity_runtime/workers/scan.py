"""Runs in: workers (the user's own jobs).

A scan that paces itself by consumed capacity, runs parallel segments in threads,
keeps pages small, and can resume after a crash from a cursor kept in a DynamoDB table.

Delivery is **at least once**: a page is handed to the caller's function first and its
cursor saved after, so a crash between the two delivers that page again on resume.

    store = CursorStore(dynamodb, "scan-cursors")     # key: scan_id (S), segment (N)
    result = RateLimitedScan(dynamodb, "Orders", rate=200, segments=4, store=store,
                             scan_id="reindex-2026-03").run(handle_page)

``handle_page(segment, items)`` gets each page's items (low-level attribute-value form).
``run`` stops cleanly on KeyboardInterrupt or when ``stop`` is set: every segment finishes the
page in hand, saves its cursor, and the result says ``interrupted``.

A throttled page is retried by its own segment, with exponential backoff; the others go on at
the scan's rate, which never changes. A hot-key throttle (``ThrottlingReasons`` say
``KeyRangeThroughputExceeded``) is retried with a jittered backoff, so that segments stuck on
the same partition do not retry in step. ``throttled_by_cause`` counts throttles by cause.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ..aws import items as table_items
from ..aws.error_codes import error_code
from ..core.call_limits import most_page_units
from ..core.errors import ScanError as ScanError
from ..core.errors import shown
from ..core.validators import is_whole, whole_text
from ..events import log_event
from .arguments import check_client, check_index, check_table
from .pacing import (
    CAUSES,
    HOT_KEY,
    ITEM_KB,
    TokenBucket,
    item_bytes,
    jittered,
    reported_units,
    throttle_cause,
)
from .pacing import THROTTLED as THROTTLED

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

MAX_LIMIT = 1000
MAX_SEGMENTS = 1_000_000
MAX_SCAN_ID = 1024
"""The most characters of a scan id (a cursor's partition key: DynamoDB allows 2,048 bytes)."""
KINDS = {
    "M": "a map (M) of the key's attributes",
    "BOOL": "a boolean (BOOL)",
    "N": "a number (N), whole",
}
"""What a stored cursor's fields are, in words."""
Page = Callable[[int, list[dict[str, Any]]], None]


@dataclass(frozen=True)
class Cursor:
    last_key: dict[str, Any] | None
    done: bool
    items: int
    segments: int | None = None
    """TotalSegments of the scan that wrote the cursor (None: written by an older version)"""


class CursorStore:
    """Per (scan id, segment): the LastEvaluatedKey, whether the segment is done, and how many
    items it delivered. Reads are strongly consistent."""

    def __init__(self, dynamodb: DynamoDBClient, table: str) -> None:
        check_client(ScanError, dynamodb, ("get_item", "put_item"))
        check_table(ScanError, "table", table)
        self.dynamodb = dynamodb
        self.table = table

    def load(self, scan_id: str, segment: int) -> Cursor:
        try:
            item = table_items.get_consistent(
                self.dynamodb,
                self.table,
                {"scan_id": {"S": scan_id}, "segment": {"N": str(segment)}},
            )
        except ClientError as exc:
            if error_code(exc) != "ResourceNotFoundException":
                raise
            raise ScanError(
                f"cursor table {self.table!r}: not found; create it before the scan runs: "
                f"create_cursor_table(dynamodb, {self.table!r})"
            ) from None
        if item is None:
            return Cursor(None, False, 0)
        return self._cursor_of(item, scan_id, segment)

    def _cursor_of(self, item: dict[str, Any], scan_id: str, segment: int) -> Cursor:
        """A stored cursor, each field checked: one this library did not write is refused,
        naming the item and the field (a scan never resumes from a key it cannot trust)."""

        def field(name: str, kind: str, check: Callable[[Any], bool], optional: bool) -> Any:
            if name not in item and optional:
                return None
            wrapped = item.get(name)
            value = wrapped.get(kind) if isinstance(wrapped, dict) and len(wrapped) == 1 else None
            if value is None or not check(value):
                raise ScanError(
                    f"cursor table {self.table!r}, scan {scan_id!r} segment {segment}: "
                    f"{name} is {shown(wrapped)}; expected {KINDS[kind]}, as this library "
                    "writes it. Delete that item to scan the segment again from its start"
                )
            return value

        last_key = field("last_key", "M", lambda v: isinstance(v, dict) and bool(v), True)
        done = field("done", "BOOL", lambda v: isinstance(v, bool), False)
        items = field("items", "N", lambda v: whole_text(v, 0, 10**15) is not None, False)
        segments = field(
            "segments", "N", lambda v: whole_text(v, 1, MAX_SEGMENTS) is not None, True
        )
        return Cursor(
            dict(last_key) if last_key is not None else None,
            done,
            int(items),
            int(segments) if segments is not None else None,
        )

    def save(self, scan_id: str, segment: int, cursor: Cursor) -> None:
        item: dict[str, Any] = {
            "scan_id": {"S": scan_id},
            "segment": {"N": str(segment)},
            "done": {"BOOL": cursor.done},
            "items": {"N": str(cursor.items)},
            **({"segments": {"N": str(cursor.segments)}} if cursor.segments else {}),
            "updated": {"S": datetime.now(UTC).isoformat()},
        }
        if cursor.last_key is not None:
            item["last_key"] = {"M": cursor.last_key}
        table_items.put(self.dynamodb, self.table, item)


def create_cursor_table(dynamodb: DynamoDBClient, name: str) -> None:
    """Create the cursor table ``name`` (on-demand: it sees a few writes a second at most)
    and wait. A table of that name with the cursor's key is kept as it is, so a job that
    creates it can be run again to resume; one with another key is refused (ScanError),
    naming both, as are a client that is not DynamoDB's and a name DynamoDB would refuse."""
    check_client(ScanError, dynamodb, ("create_table", "describe_table", "get_waiter"))
    check_table(ScanError, "name", name)
    table_items.create_cursor_table(dynamodb, name)


@dataclass
class ScanResult:
    items: int = 0
    pages: int = 0
    consumed: float = 0.0
    throttled: int = 0
    """throttled pages retried, of every cause"""
    interrupted: bool = False
    segments_done: list[int] = field(default_factory=list)
    throttled_by_cause: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CAUSES, 0))
    """``throttled`` by cause (see ``pacing.CAUSES``): every cause, 0 if none"""


def page_cost(items: object, index: bool) -> float:
    """The read units a page of ``items`` is estimated to cost by their size: one (a
    strongly consistent read) for each 4 KB started, of the page, or on an ``index`` of
    each item (fetched one by one from a local index's table); 0 for none (the estimate
    stands)."""
    if not isinstance(items, list) or not items:
        return 0.0
    if index:
        return float(sum(math.ceil(item_bytes(i) / (4 * ITEM_KB)) for i in items))
    return float(math.ceil(item_bytes(items) / (4 * ITEM_KB)))


def _check_kinds(
    dynamodb: object,
    table: object,
    store: object,
    scan_id: object,
    index: object,
    projection: object,
    consistent_read: object,
    bucket: object,
) -> None:
    """Refuse a scan's argument of the wrong kind, naming it, before any call."""
    if (store is None) != (scan_id is None):
        raise ScanError("store and scan_id: got only one; a resumable scan needs both")
    check_client(ScanError, dynamodb, ("scan",))
    check_table(ScanError, "table", table)
    check_index(ScanError, index)
    if store is not None and not isinstance(store, CursorStore):
        hint = f" (CursorStore(dynamodb, {store!r}))" if isinstance(store, str) else ""
        raise ScanError(f"store: got {shown(store)}; expected a CursorStore{hint}, or None")
    if scan_id is not None and not (isinstance(scan_id, str) and 0 < len(scan_id) <= MAX_SCAN_ID):
        raise ScanError(
            f"scan_id: got {shown(scan_id)}; expected the id its cursors are kept under: 1 to "
            f"{MAX_SCAN_ID} characters"
        )
    if projection is not None and not (isinstance(projection, str) and projection.strip()):
        raise ScanError(
            f"projection: got {shown(projection)}; expected None or a ProjectionExpression"
        )
    if not isinstance(consistent_read, bool):
        raise ScanError(f"consistent_read: got {shown(consistent_read)}; expected True or False")
    if bucket is not None and not isinstance(bucket, TokenBucket):
        raise ScanError(f"bucket: got {shown(bucket)}; expected a TokenBucket, or None for its own")


class RateLimitedScan:
    """
    :param rate: read capacity units per second for the whole scan (all segments).
    :param segments: parallel segments (``TotalSegments``), one thread each. Default 4.
    :param page_units: capacity one page should consume; the page ``Limit`` is adapted to it
        from the items per unit seen so far. Default: a quarter second of the rate per
        segment, at least 1.
    :param initial_limit: the first page's ``Limit``. Default 25.
    :param store: where cursors live; without a store the scan cannot resume.
    :param scan_id: the id its cursors are kept under in ``store``.
    :param index: passed to Scan as ``IndexName``.
    :param consistent_read: passed to Scan as ``ConsistentRead``.
    :param projection: passed to Scan as ``ProjectionExpression``.
    :param max_throttle_retries: how often one page is retried when throttled, whatever the
        cause; then the scan stops with the error. Default 10.
    :param rng: the source of the hot-key backoff's jitter (for tests). Default: its own.
    """

    def __init__(
        self,
        dynamodb: DynamoDBClient,
        table: str,
        *,
        rate: float,
        segments: int = 4,
        page_units: float | None = None,
        initial_limit: int = 25,
        store: CursorStore | None = None,
        scan_id: str | None = None,
        index: str | None = None,
        consistent_read: bool = False,
        projection: str | None = None,
        max_throttle_retries: int = 10,
        sleep: Callable[[float], None] = time.sleep,
        bucket: TokenBucket | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if not is_whole(segments, 1, MAX_SEGMENTS):
            raise ScanError(
                f"segments: got {segments!r}; expected a whole number from 1 to {MAX_SEGMENTS}"
            )
        if not isinstance(initial_limit, int) or not 1 <= initial_limit <= MAX_LIMIT:
            raise ScanError(
                f"initial_limit: got {initial_limit!r}; expected a whole number "
                f"from 1 to {MAX_LIMIT}"
            )
        if not is_whole(max_throttle_retries, 0, 1_000):
            raise ScanError(
                f"max_throttle_retries: got {max_throttle_retries!r}; expected a whole number "
                "from 0 to 1000"
            )
        _check_kinds(dynamodb, table, store, scan_id, index, projection, consistent_read, bucket)
        self.dynamodb = dynamodb
        self.table = table
        self.bucket = bucket or TokenBucket(rate)
        self.segments = segments
        self.page_units = page_units or max(1.0, self.bucket.rate / segments / 4)
        if self.page_units <= 0 or not math.isfinite(self.page_units):
            raise ScanError(f"page_units: got {page_units!r}; expected a number > 0")
        self.initial_limit = initial_limit
        self.store = store
        self.scan_id = scan_id
        self.extra: dict[str, Any] = {}
        if index:
            self.extra["IndexName"] = index
        if consistent_read:
            self.extra["ConsistentRead"] = True
        if projection:
            self.extra["ProjectionExpression"] = projection
        self.max_throttle_retries = max_throttle_retries
        self.sleep = sleep
        if rng is not None and not isinstance(rng, random.Random):
            raise ScanError(f"rng: got {rng!r}; expected a random.Random, or None for its own")
        self.rng = rng or random.Random()  # noqa: S311 (jitter, not secrets)
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self._result = ScanResult()

    @staticmethod
    def next_limit(items: int, units: float, page_units: float) -> int:
        """The Limit that makes a page cost about ``page_units``, from the last page's
        ``items`` and ``units`` (both > 0)."""
        return max(1, min(MAX_LIMIT, int(items / units * page_units)))

    def _page(
        self, segment: int, limit: int, start: dict[str, Any] | None, estimate: float
    ) -> dict[str, Any] | None:
        request = {
            "TableName": self.table,
            "Segment": segment,
            "TotalSegments": self.segments,
            "Limit": limit,
            "ReturnConsumedCapacity": "TOTAL",
            **self.extra,
        }
        if start is not None:
            request["ExclusiveStartKey"] = start
        for attempt in range(self.max_throttle_retries + 1):
            try:
                return table_items.scan_page(self.dynamodb, request)
            except ClientError as exc:
                if error_code(exc) == "ResourceNotFoundException":
                    self.bucket.settle(-estimate)
                    raise self._missing() from None
                cause = throttle_cause(exc)
                if cause is None or attempt == self.max_throttle_retries:
                    self.bucket.settle(-estimate)
                    raise
                with self._lock:
                    self._result.throttled += 1
                    self._result.throttled_by_cause[cause] += 1
                delay = min(20.0, 0.1 * 2**attempt)
                if cause == HOT_KEY:
                    delay = jittered(delay, self.rng)
                log_event("scan-throttled", segment=segment, cause=cause, retry_in_seconds=delay)
                self.sleep(delay)
                if self.stop.is_set():
                    self.bucket.settle(-estimate)
                    return None
        return None  # not reached

    def _missing(self) -> ScanError:
        """The error of a scan whose table is not there: it names the table and where."""
        region = getattr(getattr(self.dynamodb, "meta", None), "region_name", None)
        where = f" ({region})" if isinstance(region, str) and region else ""
        return ScanError(
            f"table: got {self.table!r}; no such table in this account and Region{where}: "
            "check the name, and the client's credentials and Region"
        )

    def _segment(self, segment: int, handle: Page, cursor: Cursor) -> None:
        """Scan ``segment`` from ``cursor``, each page's ``Limit`` sized to cost about
        `page_units` by the last known page; a page whose cost the answer does not say (or
        says past belief) is charged the larger of its estimate and `page_cost`."""
        if cursor.done:
            with self._lock:
                self._result.segments_done.append(segment)
            return
        limit, per_unit = self.initial_limit, 0.0
        while not self.stop.is_set():
            estimate = limit / per_unit if per_unit else self.page_units
            if not self.bucket.acquire(estimate, self.stop):
                return
            response = self._page(segment, limit, cursor.last_key, estimate)
            if response is None:
                return
            items = response.get("Items", [])
            # a page costs half a unit at least, and `most_page_units` at most
            index = "IndexName" in self.extra
            most = most_page_units(limit, index)
            reported = reported_units(response.get("ConsumedCapacity"), 0.5, most)
            # unknown: charged as estimated, or by the size of what came back when larger
            charged = max(estimate, page_cost(items, index)) if reported is None else reported
            self.bucket.settle(charged - estimate)
            if items:
                handle(segment, items)
            last = response.get("LastEvaluatedKey")
            cursor = Cursor(last, last is None, cursor.items + len(items), self.segments)
            if self.store is not None and self.scan_id is not None:
                self.store.save(self.scan_id, segment, cursor)
            with self._lock:
                r = self._result
                r.items += len(items)
                r.pages += 1
                r.consumed += reported or 0.0
            if cursor.done:
                with self._lock:
                    self._result.segments_done.append(segment)
                return
            if reported is not None and items:  # else: keep the Limit
                per_unit = len(items) / reported
                limit = self.next_limit(len(items), reported, self.page_units)

    def _cursor(self, segment: int) -> Cursor:
        """The segment's saved cursor (a fresh one without a store); [`ScanError`][] if it
        was saved by a scan of another number of segments."""
        if self.store is None or self.scan_id is None:
            return Cursor(None, False, 0)
        cursor = self.store.load(self.scan_id, segment)
        if cursor.segments is not None and cursor.segments != self.segments:
            raise ScanError(
                f"segments: got {self.segments}; the cursor of scan {self.scan_id!r} segment "
                f"{segment} was saved by a scan of {cursor.segments} segments; it resumes only "
                f"with {cursor.segments} (or use a new scan_id)"
            )
        return cursor

    def run(self, handle: Page) -> ScanResult:
        """Scan every segment; returns when all are done, or stopped. Resuming a scan with
        another number of segments than it began with raises [`ScanError`][] (a segment
        of one split is not a segment of another: items would be lost or repeated). Every
        segment's cursor is checked before any page is read."""
        if not callable(handle):
            raise ScanError(
                f"handle: got {shown(handle)}; expected a function taking a segment and a "
                "page of items"
            )
        cursors = [self._cursor(segment) for segment in range(self.segments)]
        errors: list[BaseException] = []

        def worker(segment: int) -> None:
            try:
                self._segment(segment, handle, cursors[segment])
            except BaseException as exc:  # noqa: BLE001 (reported by run, others stop)
                errors.append(exc)
                self.stop.set()

        threads = [
            threading.Thread(target=worker, args=(s,), name=f"scan-segment-{s}", daemon=True)
            for s in range(self.segments)
        ]
        try:  # Ctrl-C at any moment, even while the threads start, stops them cleanly
            for t in threads:
                t.start()
            while any(t.is_alive() for t in threads):
                for t in threads:
                    t.join(timeout=0.2)
        except KeyboardInterrupt:
            self.stop.set()
            for t in threads:
                if t.ident is not None:  # started
                    t.join()
        self._result.interrupted = self.stop.is_set() and not errors
        if errors:
            raise errors[0]
        self._result.segments_done.sort()
        return self._result
