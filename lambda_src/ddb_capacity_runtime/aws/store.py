"""Runs in: scaler Lambda, broker Lambda, workers (the user's own jobs, in direct mode), CDK
app (synth: its environment's names and bounds), workstation (``ddb-capacity``, examples,
benchmarks).

The state store: a small DynamoDB table (made by ``CapacityRequests`` or
``ThrottleAwareScaler``) with conditional writes, where every piece of the library's
run-time state lives, so concurrent requests, releases, restores and scaler ticks never
lose a hold or a configured minimum. Tags are configuration only.

One item per dimension the library holds anything of (partition key ``pk`` = the table
name, sort key ``sk`` = ``<table|index/NAME>:<read|write>``):

- ``base``: the configured minimum (or, without a scalable target, the provisioned
  capacity) the dimension had before its first hold, restored when the last hold ends;
  under a raise of the scaler, the base the scaler remembers, not its raise;
- ``holds``: a map of hold id to ``{units, expires, baseline, token}`` (``token``: the
  SHA-256 digest of the hold's release token);
- ``set_to``: the minimum of the dimension's scalable target the library last set, while
  it holds the minimum above ``base`` (a raise of the scaler, a hold, a forecast floor); a
  minimum found to be neither ``set_to`` nor ``intent`` was set by someone else, and
  becomes the new base (`core.memory`);
- ``intent``: a minimum about to be set, written before RegisterScalableTarget and folded
  into ``set_to`` after it, so a crash between the two is never read as someone else's
  change;
- ``plan``: the autopilot's plan of floors for the dimension (``<start minute>:<aim %>:
  <reserve>:<least fall>:<floor>/...``), written without the lease (a plan touches
  nothing else) but never while another process holds it;
- ``tuned``: the target value (percent) the nightly tuning loop set for the dimension, and
  the report run that set it (``{target, run}``, `TUNED`); the scaler obeys it in place
  of the configured target of a dimension whose target value it owns, once the deployment
  says so (``SCALER_TUNED_TARGETS``);
- ``recent``: the library's last `RECENT_INTENTS` intents (minimum to the time it
  was written), each for `INTENT_MEMORY`: a minimum that is one of them is the
  library's own (a register that landed late), never someone else's change;
- ``lock_owner``, ``lock_until``, ``lease_version``: a fenced lease. Whoever changes the
  dimension (records or ends a hold and moves the minimum to match) takes the lease first,
  with a conditional write that adds 1 to ``lease_version`` (the fencing token: it only
  grows, since an item that was ever leased is never deleted), and gives it back after.
  Every write under the lease is conditional on its owner and version, so a process whose
  lease ended and was taken by another writes nothing. The lease is renewed (conditional on
  the version) right before each control-plane call, for longer than that call can take
  (`aws.clients.call_bound`). A lease left by a process that died runs out after
  ``LEASE``; a taker's clock is trusted only to within `CLOCK_SKEW`, so another
  process takes it once ``lock_until + CLOCK_SKEW`` is past by its own clock.

Once nothing is held, an item stays at rest (its base, its recent intents, its lease
version), so a late register of the library is still read as the library's.

Items are untrusted input like tags: a hold whose units exceed the configured maximum, or
that expires later than the longest hold from now, is malformed, never obeyed, and removed
by the next restore; so is a ``holds`` that is not a map (`NOT_A_MAP`), never read as none.
"""

from __future__ import annotations

import logging
import math
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal, localcontext
from typing import TYPE_CHECKING, Any, Literal

from botocore.exceptions import ClientError

from ..core.errors import HoldStoreMissing, shown
from ..core.holds import (
    MAX_HOLD,
    MAX_HOLD_MINUTES,
    CapacityRequestError,
    CapacityRequestFailed,
    CapacityRequestTimeout,
    HeldDimension,
    Hold,
    LeaseLost,
)
from ..core.names import (
    DEFAULT_TABLE_QUOTA,
    MAX_TABLE_QUOTA,
    METRICS_NAMESPACE,
    STORE_ENV,
    TABLE_QUOTA_ENV,
    metrics_store,
    parse_table_quota,
    scope_label,
    scope_of,
)
from ..core.ownership import HIGHEST, LOWEST
from ..core.validators import whole_text
from ..events import count_in_lambda, log_event
from .clients import OWN_CALL_SECONDS, Clients
from .error_codes import CONDITION_FAILED, describe_error, error_code

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

NAMES = {
    "#b": "base",
    "#h": "holds",
    "#o": "lock_owner",
    "#u": "lock_until",
    "#s": "set_to",
    "#i": "intent",
    "#p": "plan",
    "#v": "lease_version",
    "#r": "recent",
    "#t": "tuned",
}
"""Attribute names in expressions (``base`` is a reserved word)."""
TUNED = "tuned"
"""The attribute of a dimension's item that holds the nightly tuning loop's target value."""
KEEP: Any = object()
"""Leaves an attribute of `Lease.write` as it is."""
LEASE = timedelta(seconds=60)
"""How long a lease lasts: far longer than the few calls made under it (each control-plane call
of the library's own clients takes at most `aws.clients.call_bound`, 33 s, renewed right before)."""
CLOCK_SKEW = timedelta(seconds=180)
"""The clock skew tolerated between two writers of the store: a lease is taken from another process
only once its ``lock_until`` is this far past by the taker's own clock, so writers whose clocks are
each within 90 s of the true time never take a held lease."""
RENEW_MARGIN = timedelta(seconds=5)
"""A renewal covers the call it precedes and this much more."""
LONGEST_LEASE = max(LEASE, timedelta(seconds=2 * OWN_CALL_SECONDS) + RENEW_MARGIN)
"""The longest a lease is ever taken or renewed for, by any writer (`Lease.write`: for two calls
at most, each within `aws.clients.lease_bound`)."""
RECENT_INTENTS = 8
"""The library's intents kept per dimension, and how long each counts as the library's."""
INTENT_MEMORY = timedelta(days=1)
MAX_UNITS_ENV = "CAPACITY_MAX_UNITS"
"""The environment variables that bound the hold store's holds (``core.names.STORE_ENV`` names
the store), for workers and for the Lambda functions (set by ``CapacityRequests``)."""
MAX_HOLD_ENV = "CAPACITY_MAX_HOLD_MINUTES"
MAX_TOTAL_UNITS_ENV = "CAPACITY_MAX_TOTAL_UNITS"
NOT_A_MAP = "(holds: not a map)"
"""The one malformed hold of an item whose ``holds`` is not a map: what it holds is unknown."""
MARKER = "once:"  # the sort key prefix of a marker item (`HoldStore.mark`)
MAX_PLAN_CHARS = 256  # the longest plan value read back (a plan of 7 floors is far shorter)
MAX_HOLDS = 2_000
"""The most holds one dimension's item records: the active ones, and those ended that no
restore has removed yet. A hold takes about 120 bytes of the item, so 2,000 fill some
240 KB of DynamoDB's 400 KB, the rest left for the item's lease, memory, plan and recent
intents; a request past them is refused by name (past some 3,300 holds of the largest
fields, DynamoDB refuses every write that grows the item, the scaler's among them)."""


@dataclass(frozen=True, eq=False)
class HoldLimits:
    """The largest hold the store obeys (units per dimension and duration), the most
    units the active holds of one dimension may add up to, and the table quota. What the
    store remembers of a dimension (a base, a minimum set, an intent, a baseline) is read up
    to `MAX_TABLE_QUOTA` whatever the quota: a level the table had is no raise, and a
    component run with a smaller quota than the one that wrote it still restores it."""

    max_units: int = DEFAULT_TABLE_QUOTA
    max_hold: timedelta = MAX_HOLD
    max_total_units: int = DEFAULT_TABLE_QUOTA
    quota: int = DEFAULT_TABLE_QUOTA


@dataclass(eq=False)
class HoldStore:
    """The store table ``name``, through ``dynamodb``. ``clock``: the time (POSIX seconds)
    its leases and holds are read by; ``sleep``: how a wait for a lease passes (`lease`)."""

    dynamodb: DynamoDBClient
    name: str
    limits: HoldLimits = field(default_factory=HoldLimits)
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep

    @staticmethod
    def sort_key(index: str | None, dimension: str) -> str:
        return f"{scope_label(index)}:{dimension}"

    def _key(self, table: str, index: str | None, dimension: str) -> dict[str, Any]:
        return {"pk": {"S": table}, "sk": {"S": self.sort_key(index, dimension)}}

    # ------------------------------------------------------------------ reading

    def get(self, table: str, index: str | None, dimension: str) -> HeldDimension | None:
        item = self.dynamodb.get_item(
            TableName=self.name, Key=self._key(table, index, dimension), ConsistentRead=True
        ).get("Item")
        return None if item is None else self._parse(item)

    def table(self, table: str, max_pages: int | None = None) -> list[HeldDimension]:
        """Every held dimension of ``table`` (`read`)."""
        return self.read(table, max_pages)[0]

    def read(
        self, table: str, max_pages: int | None = None
    ) -> tuple[list[HeldDimension], set[str]]:
        """Every held dimension of ``table``, and its markers (`mark`): one paginated
        Query of its partition, of at most ``max_pages`` pages (a ValueError, saying so, for
        a partition longer than that)."""
        pages = self._pages(
            "query",
            KeyConditionExpression="pk = :t",
            ExpressionAttributeValues={":t": {"S": table}},
            ConsistentRead=True,
        )
        held: dict[str, list[HeldDimension]] = {}
        markers: set[tuple[str, str]] = set()
        for made, page in enumerate(pages, 1):
            self._sort(page.get("Items", []), held, markers)
            if made == max_pages and page.get("LastEvaluatedKey"):
                raise ValueError(f"the items of {table} take more than {made} pages of its Query")
        return held.get(table, []), {what for name, what in markers if name == table}

    def everything(self) -> dict[str, list[HeldDimension]]:
        """Every held dimension of every table, by table (one paginated Scan)."""
        return self.scan()[0]

    def scan(self) -> tuple[dict[str, list[HeldDimension]], set[tuple[str, str]]]:
        """Every held dimension of every table, by table, and every marker (`mark`)
        as ``(table, what)``: one paginated Scan."""
        out: dict[str, list[HeldDimension]] = {}
        markers: set[tuple[str, str]] = set()
        for page in self._pages("scan", ConsistentRead=True):
            self._sort(page.get("Items", []), out, markers)
        return out, markers

    def _pages(self, operation: Literal["query", "scan"], **kwargs: Any) -> Iterator[Any]:
        """The pages of a paginated read of the store; a store that is no table of the
        account and Region raises `HoldStoreMissing`, naming it."""
        pages = self.dynamodb.get_paginator(operation)
        try:
            yield from pages.paginate(TableName=self.name, **kwargs)
        except ClientError as exc:
            if error_code(exc) == "ResourceNotFoundException":
                raise _store_error(self.name, exc) from None
            raise

    def _sort(
        self,
        items: Iterable[Mapping[str, Any]],
        held: dict[str, list[HeldDimension]],
        markers: set[tuple[str, str]],
    ) -> None:
        """Each item into ``held`` (by table) or ``markers``; any other item is left out."""
        for item in items:
            parsed = self._parse(item)
            if parsed is not None:
                held.setdefault(parsed.table, []).append(parsed)
                continue
            table, sk = item.get("pk", {}).get("S"), item.get("sk", {}).get("S", "")
            if table and sk.startswith(MARKER):
                markers.add((table, sk[len(MARKER) :]))

    def _parse(self, item: Mapping[str, Any]) -> HeldDimension | None:
        """An item as a HeldDimension; None for an item that names no dimension or holds
        nothing (a lease alone)."""
        table = item.get("pk", {}).get("S")
        scope = scope_of(item.get("sk", {}).get("S", ""))
        if not table or scope is None:
            return None
        index, dimension = scope
        quota = MAX_TABLE_QUOTA  # levels the table had, whatever this store's quota
        base = _base(item)
        now = datetime.fromtimestamp(self.clock(), UTC)
        holds, malformed = self._holds(item.get("holds"), index, dimension, now)
        set_to = whole_text(item.get("set_to", {}).get("N"), 1, quota)
        intent = whole_text(item.get("intent", {}).get("N"), 1, quota)
        recent = recent_intents(item.get("recent"), quota, now.timestamp())
        plan = item.get("plan", {}).get("S")
        plan = plan if isinstance(plan, str) and len(plan) <= MAX_PLAN_CHARS else None
        if base is None:  # a memory without its base means nothing
            set_to = intent = None
            recent = {}
        tuned = tuned_of(item)
        unread = tuned is None and TUNED in item
        nothing = not holds and not malformed and plan is None and tuned is None and not unread
        base_unread = base is None and "base" in item
        if base is None and nothing and not base_unread:
            return None
        return HeldDimension(
            table,
            index,
            dimension,
            base,
            tuple(holds),
            tuple(malformed),
            set_to,
            intent,
            plan,
            tuple(sorted(recent)),
            tuned,
            unread,
            base_unread,
        )

    def _holds(
        self, raw: Any, index: str | None, dimension: str, now: datetime
    ) -> tuple[list[Hold], list[str]]:
        """An item's holds (``raw``: its ``holds`` attribute, absent for none): the well-formed
        ones, and the ids of the others (units over the largest hold, an expiry past the
        longest hold from ``now`` by more than the `CLOCK_SKEW` tolerated between two
        writers, a baseline over `MAX_TABLE_QUOTA`, a token that is not a digest), or
        `NOT_A_MAP` alone for a ``holds`` that is not a map (none of it can be read)."""
        latest = (now + self.limits.max_hold + CLOCK_SKEW).timestamp()
        entries = raw.get("M") if isinstance(raw, Mapping) else None
        if not isinstance(entries, Mapping):
            return [], [] if raw is None else [NOT_A_MAP]
        holds, malformed = [], []
        for ident, entry in entries.items():
            fields = entry.get("M", {}) if isinstance(entry, Mapping) else {}
            units = whole_text(fields.get("units", {}).get("N"), 1, self.limits.max_units)
            expires = whole_text(fields.get("expires", {}).get("N"), 0, int(latest))
            baseline = whole_text(fields.get("baseline", {}).get("N"), 0, MAX_TABLE_QUOTA)
            token = fields.get("token", {}).get("S") if "token" in fields else None
            if units is None or expires is None or baseline is None:
                malformed.append(ident)
            elif token is not None and not _is_digest(token):
                malformed.append(ident)
            else:
                when = datetime.fromtimestamp(expires, UTC)
                holds.append(Hold(ident, index, dimension, units, when, baseline, token))
        return holds, malformed

    def mark(self, table: str, what: str) -> None:
        """Record that ``what`` happened to ``table`` (a marker item, ``sk`` = ``once:<what>``,
        written with a conditional write; `scan` returns them), until `unmark`."""
        try:
            self.dynamodb.update_item(
                TableName=self.name,
                Key={"pk": {"S": table}, "sk": {"S": f"{MARKER}{what}"}},
                UpdateExpression="SET #m = :t",
                ConditionExpression="attribute_not_exists(pk)",
                ExpressionAttributeNames={"#m": "marked"},
                ExpressionAttributeValues={":t": {"N": str(int(self.clock()))}},
            )
        except ClientError as exc:
            if error_code(exc) != CONDITION_FAILED:
                raise _store_error(self.name, exc) from None

    def unmark(self, table: str, what: str) -> None:
        """Remove ``table``'s marker ``what`` (`mark`), if there."""
        key = {"pk": {"S": table}, "sk": {"S": f"{MARKER}{what}"}}
        self.dynamodb.delete_item(TableName=self.name, Key=key)

    def keep_plan(self, table: str, index: str | None, dimension: str, plan: str | None) -> bool:
        """Keep ``plan`` (None: forget it) as the dimension's plan, with conditional writes
        made only while nobody holds the dimension's lease (an item left with nothing goes).
        False when someone held it: the plan is then not kept this time."""
        key = self._key(table, index, dimension)
        values = {":now": {"N": str(int(self.clock() - CLOCK_SKEW.total_seconds()))}}
        free = "(attribute_not_exists(#u) OR #u < :now)"

        def write(call: str, expression: str, names: tuple[str, ...], **kw: Any) -> bool:
            try:
                getattr(self.dynamodb, call)(
                    TableName=self.name,
                    Key=key,
                    ConditionExpression=expression,
                    ExpressionAttributeNames={k: NAMES[k] for k in names},
                    **kw,
                )
                return True
            except ClientError as exc:
                if error_code(exc) != CONDITION_FAILED:
                    raise _store_error(self.name, exc) from None
                return False

        if plan is not None:
            return write(
                "update_item",
                free,
                ("#p", "#u"),
                UpdateExpression="SET #p = :p",
                ExpressionAttributeValues={**values, ":p": {"S": plan}},
            )
        # an item that was ever leased stays (its lease version only grows)
        empty = (
            f"{free} AND (attribute_not_exists(#h) OR size(#h) = :zero) AND "
            "attribute_not_exists(#s) AND attribute_not_exists(#i) AND attribute_not_exists(#v) "
            "AND attribute_not_exists(#t)"
        )
        if write(
            "delete_item",
            empty,
            ("#u", "#h", "#s", "#i", "#v", "#t"),
            ExpressionAttributeValues={**values, ":zero": {"N": "0"}},
        ):
            return True  # it held nothing else (or was not there)
        return write(
            "update_item",
            f"attribute_exists(pk) AND {free}",
            ("#p", "#u"),
            UpdateExpression="REMOVE #p",
            ExpressionAttributeValues=values,
        )

    # ------------------------------------------------------------------ changing

    @contextmanager
    def lease(
        self,
        table: str,
        index: str | None,
        dimension: str,
        *,
        deadline: float,
        sleep: Callable[[float], None] | None = None,
    ) -> Iterator[Lease]:
        """Hold the dimension's lease inside the ``with`` block, waiting for it until
        ``deadline`` (a ``clock`` value; a wait never sleeps past it) through ``sleep``
        (default: the store's); raises CapacityRequestTimeout after."""
        key = self._key(table, index, dimension)
        pause = self.sleep if sleep is None else sleep
        wait = 0.05
        while True:
            lease = self._take(key)
            if lease is not None:
                break
            left = deadline - self.clock()
            if left <= 0:
                raise CapacityRequestTimeout(
                    f"table {table} {scope_label(index)} {dimension}: another request or "
                    f"restore kept the hold store busy until the timeout"
                )
            pause(min(wait, left))
            wait = min(1.0, wait * 2)
        try:
            yield lease
        except BaseException:
            lease.give_back_after_failure()
            raise
        lease.give_back()

    def _take(self, key: dict[str, Any]) -> Lease | None:
        """The dimension's lease, taken with one conditional write that adds 1 to its
        version, when nobody holds it (its ``lock_until`` is `CLOCK_SKEW` past by this
        clock), or when no writer could have set it (not a number, or later than the
        longest lease reaches even from a clock `CLOCK_SKEW` ahead: taken over, and told,
        `_unsound_lease`); None when somebody does."""
        owner = uuid.uuid4().hex
        now = self.clock()
        until = now + LEASE.total_seconds()
        far = now + CLOCK_SKEW.total_seconds() + LONGEST_LEASE.total_seconds() + 1
        try:
            answer = self.dynamodb.update_item(
                TableName=self.name,
                Key=key,
                UpdateExpression="SET #o = :o, #u = :u ADD #v :one",
                ConditionExpression="attribute_not_exists(#u) OR NOT attribute_type(#u, :n) "
                "OR #u < :free OR #u > :far",
                ExpressionAttributeNames={k: NAMES[k] for k in ("#o", "#u", "#v")},
                ExpressionAttributeValues={
                    ":o": {"S": owner},
                    ":u": {"N": str(int(until))},
                    ":n": {"S": "N"},
                    ":free": {"N": str(int(now - CLOCK_SKEW.total_seconds()))},
                    ":far": {"N": str(int(far))},
                    ":one": {"N": "1"},
                },
                ReturnValues="ALL_OLD",  # the item as it was: the take changes only the lease
            )
        except ClientError as exc:
            if error_code(exc) != CONDITION_FAILED:
                raise _store_error(self.name, exc) from None
            return None
        item = answer.get("Attributes", {})
        version = _next_version(item.get("lease_version"))
        recent = recent_intents(item.get("recent"), MAX_TABLE_QUOTA, now)
        unread = "base" in item and _base(item) is None
        if "lock_until" in item:
            _unsound_lease(key, item["lock_until"], now, far)
        return Lease(self, key, owner, version, int(until), recent, base_unread=unread)


def _base(item: Mapping[str, Any]) -> int | None:
    """An item's base (the configured minimum); None: none, or not one (untrusted: a whole
    number from 1 to the largest quota, whatever this store's own)."""
    raw = item.get("base")
    return whole_text(raw.get("N") if isinstance(raw, Mapping) else None, 1, MAX_TABLE_QUOTA)


def _next_version(raw: Any) -> int | Decimal:
    """The lease version a take made of ``raw``, the item's before it (its ADD of 1): 1
    when there was none. Any number DynamoDB holds, a forged one included, so that the
    writes under the lease match it."""
    text = raw.get("N") if isinstance(raw, Mapping) else None
    if not isinstance(text, str):
        return 1
    try:
        with localcontext() as exact:
            exact.prec = 80  # DynamoDB's numbers have 38 digits at most: none is rounded
            number = Decimal(text) + 1
    except ArithmeticError:  # DynamoDB holds no such number: the take's ADD would fail
        return 1
    return int(number) if number == number.to_integral_value() else number


def _unsound_lease(key: Mapping[str, Any], raw: Any, now: float, far: float) -> None:
    """Tell a lease taken over whose ``lock_until`` (``raw``) no writer could have set: not
    a number, or later than ``far`` (a forged or corrupted item would otherwise keep the
    dimension from every change of the library's for good). Logged (``lease-taken-over``,
    an error) and, in a Lambda function, counted as ``HoldsDropped``."""
    value = whole_text(raw.get("N") if isinstance(raw, Mapping) else None, 0, math.inf)
    if value is not None and value <= far:
        return  # a lease run out, as leases do
    _dropped(
        "lease-taken-over",
        logging.ERROR,
        key,
        lock_until=shown(raw, 100),
        reason=f"no writer sets a lease past {int(far - now)} s from now, nor one that is not "
        "a number: the item was written by something other than the library",
    )


def base_replaced(key: Mapping[str, Any], base: int) -> None:
    """A write under a lease recorded ``base`` where the item held a base that is not one:
    the configured minimum it stood for is lost, the level the dimension had then kept in
    its place (never lower), and paid for until someone sets it again. Logged
    (``base-replaced``, a warning) and, in a Lambda function, counted as ``HoldsDropped``
    (alarmed by ``CapacityRequests``), wherever it happens."""
    _dropped(
        "base-replaced",
        logging.WARNING,
        key,
        base=base,
        reason="the state store's base (the configured minimum) was not a whole number "
        "within its bounds: the level the dimension had is recorded in its place",
    )


def _dropped(event: str, level: int, key: Mapping[str, Any], **fields: Any) -> None:
    """Something of the item ``key`` no writer of the library could have written, dropped:
    logged as ``event`` with the item and ``fields``; in a Lambda function, ``HoldsDropped``."""
    log_event(event, level=level, table=key["pk"]["S"], item=key["sk"]["S"], **fields)
    count_in_lambda(METRICS_NAMESPACE, "HoldsDropped", store=metrics_store())


@dataclass(eq=False)
class Lease:
    """A held lease on one dimension's item: the only way to change it. ``version`` is its
    fencing token: every write under it is conditional on it (and on ``owner``). ``until``:
    when it runs out, by the store's clock; ``recent``: the library's recent intents."""

    store: HoldStore
    key: dict[str, Any]
    owner: str
    version: int | Decimal
    until: int
    recent: dict[int, int] = field(default_factory=dict)
    done: bool = False
    base_unread: bool = False
    """the item held a base that is not one when the lease was taken (`base_replaced`)"""

    def _condition(self) -> dict[str, Any]:
        return {
            "ConditionExpression": "#o = :me AND #v = :v",
            "ExpressionAttributeNames": {"#o": NAMES["#o"], "#v": NAMES["#v"]},
            "ExpressionAttributeValues": {
                ":me": {"S": self.owner},
                ":v": {"N": str(self.version)},
            },
        }

    def left(self) -> float:
        """Seconds until the lease runs out, by the store's clock."""
        return self.until - self.store.clock()

    def write(
        self,
        base: int | Any = KEEP,
        holds: list[Hold] | Any = KEEP,
        *,
        set_to: int | None = KEEP,
        intent: int | None = KEEP,
        renew_for: float | None = None,
    ) -> None:
        """Record ``base``, and ``holds`` (exactly those), ``set_to`` and ``intent`` where
        given (None: forget it; `KEEP`, the default: as it is); an intent is added to the
        recent ones too. ``renew_for``: renew the lease in the same write, to cover a call of
        up to that many seconds (and `RENEW_MARGIN`), at least ``LEASE``. Raises
        CapacityRequestError when the lease is no longer this one's."""
        condition = self._condition()
        names = condition["ExpressionAttributeNames"]
        values = condition["ExpressionAttributeValues"]
        sets: list[str] = []
        removes: list[str] = []

        def put(attr: str, ref: str, value: dict[str, Any]) -> None:
            names[attr] = NAMES[attr]
            values[ref] = value
            sets.append(f"{attr} = {ref}")

        if base is not KEEP:
            put("#b", ":b", {"N": str(base)})
        if holds is not KEEP:
            put("#h", ":h", {"M": {h.id: {"M": _hold_item(h)} for h in holds}})
        for attr, value, ref in (("#s", set_to, ":s"), ("#i", intent, ":i")):
            if value is KEEP:
                continue
            if value is None:
                names[attr] = NAMES[attr]
                removes.append(attr)
            else:
                put(attr, ref, {"N": str(value)})
        now = self.store.clock()
        recent = self.recent
        if intent is not KEEP and intent is not None:
            recent = _remember(self.recent, intent, int(now))
            put("#r", ":r", {"M": {str(v): {"N": str(t)} for v, t in recent.items()}})
        until = self.until
        if renew_for is not None:
            span = max(LEASE.total_seconds(), renew_for + RENEW_MARGIN.total_seconds())
            until = int(now + span)
            put("#u", ":u", {"N": str(until)})
        update = " ".join(
            part
            for part in (
                "SET " + ", ".join(sets) if sets else "",
                "REMOVE " + ", ".join(removes) if removes else "",
            )
            if part
        )
        if update:
            self._call("update_item", UpdateExpression=update, **condition)
            self.recent, self.until = recent, until
            self._replaced(base)

    def _replaced(self, base: int | Any) -> None:
        """Tell a base written over one that was not one (`base_replaced`), once."""
        if base is not KEEP and self.base_unread:
            self.base_unread = False
            base_replaced(self.key, base)

    def give_back(self) -> None:
        """Give the lease back (one that another process took since the last write is its
        own: nothing to give back). The item stays (at rest once it holds nothing): its
        lease version only grows, and its recent intents keep a late register the
        library's."""
        if self.done:
            return
        self.done = True
        condition = self._condition()
        condition["ExpressionAttributeNames"]["#u"] = NAMES["#u"]
        try:
            self._call("update_item", UpdateExpression="REMOVE #o, #u", **condition)
        except LeaseLost:
            pass  # another process took it since the last write: nothing left to give back

    def give_back_after_failure(self) -> None:
        """`give_back` once the work under the lease has failed: a failure to give it back
        is logged (the lease runs out by itself, `LEASE` and `CLOCK_SKEW` after its last
        write) and never takes the place of the failure that is being raised, which the
        caller counts."""
        try:
            self.give_back()
        except Exception as exc:
            log_event(
                "lease-give-back-failed",
                level=logging.ERROR,
                table=self.key["pk"]["S"],
                item=self.key["sk"]["S"],
                error=f"{type(exc).__name__}: {shown(str(exc), 200)}",
            )

    def _call(self, operation: str, **kwargs: Any) -> None:
        try:
            getattr(self.store.dynamodb, operation)(
                TableName=self.store.name, Key=self.key, **kwargs
            )
        except ClientError as exc:
            if error_code(exc) == CONDITION_FAILED:
                raise LeaseLost(
                    "the hold store's lease ran out (another process took it) before the "
                    "change was recorded; nothing more was recorded, try again"
                ) from None
            raise _store_error(self.store.name, exc) from None


def open_store(
    store: str | HoldStore | None,
    clients: Clients,
    clock: Callable[[], float] = time.time,
    env: Mapping[str, str] = os.environ,
) -> HoldStore:
    """The hold store: ``store`` itself, or the table it names (default
    ``$CAPACITY_HOLDS_TABLE``), bounded by ``$CAPACITY_MAX_UNITS`` and
    ``$CAPACITY_MAX_HOLD_MINUTES`` where set."""
    if isinstance(store, HoldStore):
        return store
    return HoldStore(clients.dynamodb, store_name(store, env), limits_from_env(env), clock)


def store_quota(store: str | HoldStore | None, env: Mapping[str, str] = os.environ) -> int:
    """The table quota that bounds ``store``: its own, or ``$CAPACITY_TABLE_QUOTA``'s."""
    if isinstance(store, HoldStore):
        return store.limits.quota
    try:
        return parse_table_quota(env.get(TABLE_QUOTA_ENV))
    except ValueError as exc:
        raise CapacityRequestError(str(exc)) from None


def store_name(store: str | None, env: Mapping[str, str] = os.environ) -> str:
    """The hold store's table name: ``store``, else ``$CAPACITY_HOLDS_TABLE``."""
    name = store or env.get(STORE_ENV, "")
    if not isinstance(name, str) or not name.strip():
        raise CapacityRequestError(
            f"store: got {store!r} and no {STORE_ENV}; name the hold store table that "
            f"CapacityRequests made (its hold_store.table_name)"
        )
    return name.strip()


def limits_from_env(env: Mapping[str, str]) -> HoldLimits:
    """The store's bounds from the environment (the table quota, ``$CAPACITY_TABLE_QUOTA``,
    bounds the others); a bad value names the variable. Without
    ``CAPACITY_MAX_TOTAL_UNITS``, a dimension's holds add up to ``max_units`` at most."""
    quota = store_quota(None, env)
    read: dict[str, int] = {}
    for name, high in (
        (MAX_UNITS_ENV, quota),
        (MAX_HOLD_ENV, MAX_HOLD_MINUTES),
        (MAX_TOTAL_UNITS_ENV, quota),
    ):
        default = read.get(MAX_UNITS_ENV, high) if name == MAX_TOTAL_UNITS_ENV else high
        value = whole_text(env.get(name, str(default)), 1, high)
        if value is None:
            raise CapacityRequestError(
                f"{name}: got {env.get(name)!r:.200}; expected a whole number from 1 to {high}"
            )
        read[name] = value
    return HoldLimits(
        read[MAX_UNITS_ENV],
        timedelta(minutes=read[MAX_HOLD_ENV]),
        read[MAX_TOTAL_UNITS_ENV],
        quota,
    )


def recent_intents(raw: object, quota: int, now: float) -> dict[int, int]:
    """The recent intents of an item's ``recent`` attribute (minimum to the time written),
    those written within `INTENT_MEMORY` before ``now`` (or at most
    `CLOCK_SKEW` after it) and within the table quota; the newest
    `RECENT_INTENTS` of them. Anything else in it is left out."""
    entries = raw.get("M") if isinstance(raw, Mapping) else None
    if not isinstance(entries, Mapping):
        return {}
    oldest = now - INTENT_MEMORY.total_seconds()
    latest = now + CLOCK_SKEW.total_seconds()
    kept = {}
    for value, when in list(entries.items())[: RECENT_INTENTS * 4]:
        units = whole_text(value, 1, quota)
        at = whole_text(when.get("N") if isinstance(when, Mapping) else None, 0, int(latest))
        if units is not None and at is not None and at >= oldest:
            kept[units] = at
    newest = sorted(kept.items(), key=lambda kv: kv[1])[-RECENT_INTENTS:]
    return dict(newest)


def _remember(recent: Mapping[int, int], intent: int, now: int) -> dict[int, int]:
    """``recent`` with ``intent`` written at ``now``: the newest `RECENT_INTENTS`."""
    kept = {
        v: t for v, t in recent.items() if v != intent and t >= now - INTENT_MEMORY.total_seconds()
    }
    kept[intent] = now
    return dict(sorted(kept.items(), key=lambda kv: kv[1])[-RECENT_INTENTS:])


def tuned_of(item: Mapping[str, Any]) -> int | None:
    """The nightly tuning loop's target value kept in a dimension's ``item`` (`TUNED`'s
    ``target``): a whole percent from `ownership.LOWEST` to `ownership.HIGHEST`; None
    when there is none or it is malformed. The scaler and the loop both read it here."""
    kept = item.get(TUNED)
    fields = kept.get("M") if isinstance(kept, Mapping) else None
    target = fields.get("target") if isinstance(fields, Mapping) else None
    return whole_text(target.get("N") if isinstance(target, Mapping) else None, LOWEST, HIGHEST)


def _hold_item(h: Hold) -> dict[str, Any]:
    return {
        "units": {"N": str(h.units)},
        "expires": {"N": str(int(h.expires.timestamp()))},
        "baseline": {"N": str(h.baseline)},
        **({"token": {"S": h.token_hash}} if h.token_hash else {}),
    }


def _is_digest(raw: object) -> bool:
    return isinstance(raw, str) and len(raw) == 64 and all(c in "0123456789abcdef" for c in raw)


def _store_error(name: str, exc: ClientError) -> CapacityRequestFailed:
    if error_code(exc) == "ResourceNotFoundException":
        return HoldStoreMissing(
            f"hold store {name}: no such table in this account and Region "
            f"({describe_error(exc)}): name the state store the constructs made "
            "(CapacityRequests' hold_store)"
        )
    return CapacityRequestFailed(f"hold store {name}: {describe_error(exc)}")
