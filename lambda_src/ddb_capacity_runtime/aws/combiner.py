"""Runs in: signals Lambda.

The fast path's combiner items in the state store: one per dimension a process reports on
(``pk`` = the table, ``sk`` = ``surge:<table|index/NAME>:<read|write>``), whose map
``reports`` keeps each reporting process's last `Rates`, keyed by its
process id. A process's entry is written alone (UpdateItem ``SET reports.#p = :r``,
conditional, ReturnValues ALL_NEW), so processes reporting at once never overwrite each
other, and every writer reads back everyone's entries in the same call. An entry is only
replaced by a later one of its process (its ``at`` earlier than the new one's): a report
that arrives after a newer one of the same process is ignored.

Beside ``reports``, the item keeps what the signals function remembers of the dimension's
surge (`SurgeMark`, written under the dimension's lease by `mark`): when it
started, when it last raised, the target utilization and max its level was sized with, and
when CloudWatch was last read to corroborate a capped surge (`claim_check`). It also keeps
the burst-bucket estimate of each signal (`BUCKETS`: the hook's reports and the stream,
each `core.bucket.Bucket.text`), written by `keep_bucket` on the text read.

The map is bounded: a process not yet in it is let in only while it holds fewer than
`MAX_PROCESSES` entries (past that, newcomers share the one `OVERFLOW` entry, so none is
refused), and entries older than `FRESH_SECONDS` are removed by later writes (`forget`),
each with a condition that it is still the entry that was read, so a process's fresh entry
is never removed. An item holding more than the library writes is rewritten with its fresh
entries alone (`_repair`).

The item is untrusted input: every entry read back is checked (`entries`), and one
that breaks a bound is ignored, counted and removed. The state store's other readers skip
these items: their sort key names no dimension (``HoldStore._parse``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ..core.errors import CombinerContended as CombinerContended
from ..core.names import MAX_TABLE_QUOTA
from ..core.surge import Budget, Rates, read_budget
from ..core.surge_report import (
    CLOCK_SKEW_SECONDS,
    FRESH_SECONDS,
    MAX_REQUESTS_PER_SECOND,
    MAX_UNITS_PER_SECOND,
    is_process_id,
)
from .error_codes import CONDITION_FAILED, error_code

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

COMBINER = "surge:"
"""The sort key prefix of a combiner item."""
MAX_PROCESSES = 100
"""The most processes one dimension's combiner keeps. It bounds the item, and so what each report's
write costs: at 100 processes of the longest ids, under 12 KB, so 12 write units at most (1 with a
few processes)."""
OVERFLOW = "overflow"
"""The entry every process shares once the item holds `MAX_PROCESSES` others (made-up process
ids can fill it): the latest such report is its rates, so a real process is still heard, and the
item holds at most one entry more."""
MAX_REMOVED = 25
"""The most entries one write removes (an expression is at most 4 KB)."""
MAX_DEMAND = MAX_UNITS_PER_SECOND + 400 * MAX_REQUESTS_PER_SECOND
"""The largest demand one process's entry may say: its units, plus its failed requests at the
largest units per request (`core.surge.rates`)."""
MAX_AHEAD_SECONDS = CLOCK_SKEW_SECONDS + 5
"""How far ahead of the reader's clock an entry's time may be (a report's clock may be
`CLOCK_SKEW_SECONDS` ahead; the functions' clocks a little apart)."""
NAMES = {"#r": "reports"}
"""Attribute names in expressions."""
_FIELDS = {
    "demand": "d",
    "throttled": "t",
    "key_range": "k",
    "at": "at",
    "consumed": "c",
    "unknown": "u",
    "since": "s",
}
_OPTIONAL = {"consumed", "unknown", "since"}
"""Fields an entry may lack (an entry written before they were kept): read as 0."""
_BOUNDS = {
    "demand": MAX_DEMAND,
    "throttled": MAX_REQUESTS_PER_SECOND,
    "key_range": MAX_REQUESTS_PER_SECOND,
    "consumed": MAX_UNITS_PER_SECOND,
    "unknown": MAX_REQUESTS_PER_SECOND,
}
"""The bounds of an entry's fields (``at`` apart)."""
_MARKS = {
    "started": "surge_started",
    "raised": "surge_raised",
    "aim": "surge_aim",
    "confirmed": "surge_confirmed",
    "unknown": "surge_unknown",
}
"""The surge's attributes of the item (`SurgeMark`)."""
_MARK_MAX = "surge_max"
_BUDGET = "surge_budget"
_CHECKED = "surge_checked"
BUCKETS = {"hook": "bucket_hook", "stream": "bucket_stream"}
"""The attribute that keeps each signal's burst-bucket estimate (`core.bucket`), by source: the
hook's reports and the table's stream see different consumption, so each has its own."""
MAX_BUCKET_CHARS = 256
"""The longest estimate's text kept as read (for the condition of its next write); a longer value
is not one (`core.bucket.read_bucket` reads at most 96 characters), and is written over."""


@dataclass(frozen=True)
class SurgeMark:
    """What the combiner item remembers of its dimension's surge: when it started and last
    raised (epoch seconds of the signals function's clock), and the target utilization
    (``aim``) and max its level was last sized with. None: not known."""

    started: float | None = None
    raised: float | None = None
    aim: float | None = None
    max_capacity: int | None = None
    budget: Budget | None = None
    """The dimension's surge budget window (None: none yet) and its text as read (the condition of
    the next `spend`)."""
    budget_text: str | None = None
    checked: float | None = None
    """When CloudWatch was last read to corroborate the dimension's capped surge (`claim_check`;
    None: never, or not a time)."""
    confirmed: float | None = None
    """When DynamoDB's own measure last showed the demand a surge was raised for (None: never,
    or not a time); a confirmation before the surge ``started`` is another surge's."""
    unknown: float | None = None
    """When a read of CloudWatch for the dimension last could not settle its surge (it failed,
    or its answer had minutes not to be trusted; None: never, or not a time): while it is
    the last read (at ``checked``), the looks that do not read again let the surge go on, as
    that read did."""


@dataclass(frozen=True)
class Entries:
    """What a combiner item holds: the well-formed entries (``rates``, by process id);
    the stale ones (older than fresh) and the malformed ones (``ignored``), each with the
    raw ``at`` value read (None: none usable), which `forget` removes."""

    rates: dict[str, Rates] = field(default_factory=dict)
    stale: dict[str, str | None] = field(default_factory=dict)
    ignored: dict[str, str | None] = field(default_factory=dict)
    mark: SurgeMark = field(default_factory=SurgeMark)
    buckets: dict[str, str | None] = field(default_factory=dict)
    """Each source's burst-bucket estimate (`BUCKETS`) that the item holds, as its text
    (None: a value that is not a string of at most `MAX_BUCKET_CHARS`); a source the
    item holds none for is absent. Untrusted: read with `core.bucket.read_bucket`."""
    overflowed: bool = False
    """The report went into the shared `OVERFLOW` entry: the item held `MAX_PROCESSES` others."""
    repaired: int = 0
    """Entries dropped by rewriting an item that held more than the library ever writes."""

    @property
    def full(self) -> bool:
        return len(self.rates) + len(self.stale) + len(self.ignored) >= MAX_PROCESSES


def combiner_key(table: str, sort_key: str) -> dict[str, Any]:
    """The key of the combiner item of ``table``'s dimension ``sort_key``
    (``<table|index/NAME>:<read|write>``)."""
    return {"pk": {"S": table}, "sk": {"S": f"{COMBINER}{sort_key}"}}


def record(
    dynamodb: DynamoDBClient,
    store: str,
    key: Mapping[str, Any],
    process: str,
    rates: Rates,
    now: float,
) -> Entries | None:
    """Write ``process``'s ``rates`` into the combiner item ``key`` of the state store
    ``store``, and return every entry it then holds; None when the item holds
    `MAX_PROCESSES` others already (their stale entries are removed first). A report
    older than (or as old as) the process's entry in the item changes nothing: the
    entries are returned as they are. An item whose ``reports`` is not a map is reset.
    Raises `CombinerContended` when the item changed under every attempt, and
    ClientError for what else fails."""
    entry = {"M": _entry_item(rates)}
    repaired = 0
    for _ in range(4):
        try:
            answer = dynamodb.update_item(
                TableName=store,
                Key=dict(key),
                UpdateExpression="SET #r.#p = :e",
                ConditionExpression=(
                    "(attribute_exists(#r.#p) OR (attribute_type(#r, :map) AND size(#r) < :most))"
                    " AND (attribute_not_exists(#r.#p) OR #r.#p.#at < :at)"
                ),
                ExpressionAttributeNames={**NAMES, "#p": process, "#at": "at"},
                ExpressionAttributeValues={
                    ":e": entry,
                    ":map": {"S": "M"},
                    ":most": {"N": str(MAX_PROCESSES + (process == OVERFLOW))},
                    ":at": entry["M"]["at"],
                },
                ReturnValues="ALL_NEW",
            )
            return replace(entries(answer.get("Attributes", {}), now), repaired=repaired)
        except ClientError as exc:
            if error_code(exc) not in (CONDITION_FAILED, "ValidationException"):
                raise
        mended = _mend(dynamodb, store, key, process, entry, now)
        if isinstance(mended, _Repaired):
            repaired += mended.dropped
            continue
        if mended is False and process != OVERFLOW:
            shared = record(dynamodb, store, key, OVERFLOW, rates, now)
            return replace(shared, overflowed=True) if shared is not None else None
        if mended is not True:
            return mended or None
    raise CombinerContended(
        f"the combiner item {key['sk']['S']} of table {key['pk']['S']} changed under each of "
        f"4 attempts to write process {process[:64]!r}'s entry"
    )


def read(dynamodb: DynamoDBClient, store: str, key: Mapping[str, Any], now: float) -> Entries:
    """The combiner item ``key`` as it stands (a consistent read), checked (`entries`);
    empty when there is none. The stream reader reads its dimension's surge mark here."""
    item = dynamodb.get_item(TableName=store, Key=dict(key), ConsistentRead=True).get("Item")
    return entries(item or {}, now)


def _mend(
    dynamodb: DynamoDBClient,
    store: str,
    key: Mapping[str, Any],
    process: str,
    entry: Mapping[str, Any],
    now: float,
) -> Entries | bool | _Repaired:
    """After a refused write of ``process``'s ``entry``, read the item and see why: no map
    yet (make it with the entry: its entries), a map that is not one (reset it: True, try
    again), a newer entry of the process (its entries: the report is ignored), an entry of
    the process whose time is no number (forget it: True), more entries than the library
    writes or more stale and malformed ones than a write removes (`_repair`), a full one
    (forget its stale entries: True; none to forget: False), or none of these any more
    (True)."""
    item = dynamodb.get_item(TableName=store, Key=dict(key), ConsistentRead=True).get("Item")
    reports = (item or {}).get("reports")
    if reports is None:
        made = conditional_update(
            dynamodb,
            store,
            key,
            "SET #r = :m",
            "attribute_not_exists(#r)",
            {":m": {"M": {process: entry}}},
            NAMES,
            all_new=True,
        )
        return True if made is None else entries(made, now)
    if not isinstance(reports, Mapping) or "M" not in reports:
        values = {":m": {"M": {}}, ":map": {"S": "M"}}
        conditional_update(
            dynamodb, store, key, "SET #r = :m", "NOT attribute_type(#r, :map)", values, NAMES
        )
        return True
    found = entries(item or {}, now)
    listed = reports.get("M")
    mine = listed.get(process) if isinstance(listed, Mapping) else None
    if mine is not None:
        at = _raw_number(mine.get("M") if isinstance(mine, Mapping) else None, "at")
        if at is None:
            forget(dynamodb, store, key, Entries(ignored={process: None}))
            return True
        if _float(at) >= float(entry["M"]["at"]["N"]):
            return found  # a newer (or the same) report of this process is in already
    size = len(listed) if isinstance(listed, Mapping) else 0
    if size > MAX_PROCESSES + 1 or len(found.stale) + len(found.ignored) > MAX_REMOVED:
        return _Repaired(_repair(dynamodb, store, key, found, size))
    if found.full and process not in found.rates:
        return forget(dynamodb, store, key, found) > 0
    return True


def _repair(
    dynamodb: DynamoDBClient, store: str, key: Mapping[str, Any], found: Entries, size: int
) -> int:
    """Rewrite an item holding more entries than the library writes, or more stale and
    malformed ones than a write removes: its fresh well-formed entries kept (the latest
    `MAX_PROCESSES`), the rest dropped, in one write conditioned on the map's size as read.
    Returns how many were dropped (0: it changed meanwhile). The item's other attributes
    (the surge mark, the budget, the estimates) are left as they are."""
    kept = sorted(found.rates.items(), key=lambda pr: pr[1].at, reverse=True)[:MAX_PROCESSES]
    fresh = {p: {"M": _entry_item(r)} for p, r in kept}
    done = conditional_update(
        dynamodb,
        store,
        key,
        "SET #r = :m",
        "size(#r) = :n",
        {":m": {"M": fresh}, ":n": {"N": str(size)}},
        NAMES,
    )
    return size - len(fresh) if done is not None else 0


@dataclass(frozen=True)
class _Repaired:
    """`_mend`'s answer after `_repair`: try the write again; ``dropped`` entries went."""

    dropped: int


def mark(
    dynamodb: DynamoDBClient,
    store: str,
    key: Mapping[str, Any],
    *,
    started: float | None = None,
    raised: float | None = None,
    aim: float | None = None,
    max_capacity: int | None = None,
    confirmed: float | None = None,
    unknown: float | None = None,
) -> None:
    """Remember what is given (not None) of the dimension's surge in its combiner item
    (`SurgeMark`); the caller holds the dimension's lease, but for ``confirmed`` and
    ``unknown`` alone."""
    given = {
        "started": started,
        "raised": raised,
        "aim": aim,
        "confirmed": confirmed,
        "unknown": unknown,
    }
    names: dict[str, str] = {}
    values: dict[str, Any] = {}
    sets: list[str] = []
    for n, (name, value) in enumerate(given.items()):
        if value is not None:
            names[f"#m{n}"], values[f":m{n}"] = _MARKS[name], {"N": _number(value)}
            sets.append(f"#m{n} = :m{n}")
    if max_capacity is not None:
        names["#mx"], values[":mx"] = _MARK_MAX, {"N": str(max_capacity)}
        sets.append("#mx = :mx")
    if sets:
        dynamodb.update_item(
            TableName=store,
            Key=dict(key),
            UpdateExpression="SET " + ", ".join(sets),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )


def forget(dynamodb: DynamoDBClient, store: str, key: Mapping[str, Any], found: Entries) -> int:
    """Remove up to `MAX_REMOVED` of ``found``'s stale and malformed entries, each
    only while it is still the entry read (its ``at`` unchanged), in one conditional
    write. Returns how many went (0 when someone wrote one of them meanwhile)."""
    gone = list({**found.stale, **found.ignored}.items())[:MAX_REMOVED]
    if not gone:
        return 0
    names: dict[str, str] = {**NAMES, "#at": "at"}
    values: dict[str, Any] = {}
    removes, conditions = [], []
    for n, (process, at) in enumerate(gone):
        names[f"#p{n}"] = process
        removes.append(f"#r.#p{n}")
        if at is None:
            values[":num"] = {"S": "N"}
            conditions.append(f"NOT attribute_type(#r.#p{n}.#at, :num)")
        else:
            values[f":a{n}"] = {"N": at}
            conditions.append(f"#r.#p{n}.#at = :a{n}")
    done = conditional_update(
        dynamodb,
        store,
        key,
        "REMOVE " + ", ".join(removes),
        " AND ".join(conditions),
        values,
        names,
    )
    return len(gone) if done is not None else 0


def entries(item: Mapping[str, Any], now: float) -> Entries:
    """The entries of a combiner item (DynamoDB's attribute values), checked: well-formed,
    stale, or ignored (malformed, or dated too far ahead)."""
    out = Entries()
    raw = item.get("reports")
    listed = raw.get("M") if isinstance(raw, Mapping) else None
    for process, value in (listed if isinstance(listed, Mapping) else {}).items():
        fields = value.get("M") if isinstance(value, Mapping) else None
        at = _raw_number(fields, "at")
        rates = _rates(fields) if isinstance(process, str) else None
        if rates is None or not is_process_id(process):
            out.ignored[process] = at
        elif rates.at > now + MAX_AHEAD_SECONDS:
            out.ignored[process] = at
        elif rates.at < now - FRESH_SECONDS:
            out.stale[process] = at
        else:
            out.rates[process] = rates
    return replace(out, mark=_mark(item, now), buckets=_buckets(item))


def _buckets(item: Mapping[str, Any]) -> dict[str, str | None]:
    """The item's burst-bucket estimates by source, as their texts (`Entries.buckets`)."""
    out: dict[str, str | None] = {}
    for source, name in BUCKETS.items():
        if name in item:
            raw = item[name]
            text = raw.get("S") if isinstance(raw, Mapping) else None
            good = isinstance(text, str) and len(text) <= MAX_BUCKET_CHARS
            out[source] = text if good else None
    return out


def _mark(item: Mapping[str, Any], now: float) -> SurgeMark:
    """The item's `SurgeMark`, each attribute checked (one out of bounds: None)."""
    times = {}
    names = {
        "started": _MARKS["started"],
        "raised": _MARKS["raised"],
        "checked": _CHECKED,
        "confirmed": _MARKS["confirmed"],
        "unknown": _MARKS["unknown"],
    }
    for name, attribute in names.items():
        value = _float(_raw_number(item, attribute))
        times[name] = value if 0 <= value <= now + MAX_AHEAD_SECONDS else None
    aim = _float(_raw_number(item, _MARKS["aim"]))
    most = _float(_raw_number(item, _MARK_MAX))
    raw = item.get(_BUDGET)
    text = raw.get("S") if isinstance(raw, Mapping) else None
    budget = read_budget(text, now)
    if raw is not None and budget is None:  # not one: spent, for a window from now
        budget = Budget(float(int(now)), 10 * MAX_TABLE_QUOTA, 10 * MAX_TABLE_QUOTA)
    return SurgeMark(
        times["started"],
        times["raised"],
        aim if 0 < aim <= 1 else None,
        int(most) if most.is_integer() and 1 <= most <= MAX_TABLE_QUOTA else None,
        budget,
        text if isinstance(text, str) else None,
        times["checked"],
        times["confirmed"],
        times["unknown"],
    )


def spend(
    dynamodb: DynamoDBClient,
    store: str,
    key: Mapping[str, Any],
    read: str | None,
    window: Budget,
) -> bool:
    """Write the budget ``window`` (its units used included) into the combiner item
    ``key``, only while the item still holds the window ``read`` (its text as read; None:
    no window, or one that is not a string). False when it changed meanwhile."""
    if read is None:
        condition = "attribute_not_exists(#b) OR NOT attribute_type(#b, :s)"
        values: dict[str, Any] = {":s": {"S": "S"}}
    else:
        condition, values = "#b = :read", {":read": {"S": read}}
    done = conditional_update(
        dynamodb,
        store,
        key,
        "SET #b = :b",
        condition,
        {**values, ":b": {"S": window.text()}},
        {"#b": _BUDGET},
    )
    return done is not None


def keep_bucket(
    dynamodb: DynamoDBClient,
    store: str,
    key: Mapping[str, Any],
    source: str,
    read: str | None,
    text: str,
) -> bool:
    """Write ``text``, ``source``'s burst-bucket estimate (`BUCKETS`), into the combiner item
    ``key``, only while the item still holds the estimate ``read`` (its text as read; None:
    none, or a value that is not one). False when it changed meanwhile: another look wrote
    a later estimate, and this one is skipped."""
    if read is not None:
        condition, values = "#e = :read", {":read": {"S": read}}
    else:
        condition = "attribute_not_exists(#e) OR NOT attribute_type(#e, :s) OR size(#e) > :most"
        values = {":s": {"S": "S"}, ":most": {"N": str(MAX_BUCKET_CHARS)}}
    done = conditional_update(
        dynamodb,
        store,
        key,
        "SET #e = :e",
        condition,
        {**values, ":e": {"S": text}},
        {"#e": BUCKETS[source]},
    )
    return done is not None


def claim_check(
    dynamodb: DynamoDBClient, store: str, key: Mapping[str, Any], now: float, every: float
) -> bool:
    """Record in the combiner item ``key`` that CloudWatch is read now (``now``) to
    corroborate its dimension's surge, unless it was within the last ``every`` seconds
    (`SurgeMark.checked`; a value that is not a time, or one ahead of ``now``, counts as
    none). False: another look has just read it, and this one does not."""
    done = conditional_update(
        dynamodb,
        store,
        key,
        "SET #c = :now",
        "attribute_not_exists(#c) OR NOT attribute_type(#c, :n) OR #c <= :since OR #c > :ahead",
        {
            ":now": {"N": _number(now)},
            ":n": {"S": "N"},
            ":since": {"N": _number(now - every)},
            ":ahead": {"N": _number(now + MAX_AHEAD_SECONDS)},
        },
        {"#c": _CHECKED},
    )
    return done is not None


def _float(text: str | None) -> float:
    """``text`` as a finite number; NaN when it is none."""
    try:
        value = float(text) if text is not None else math.nan
    except ValueError:
        return math.nan
    return value if math.isfinite(value) else math.nan


def _rates(fields: Mapping[str, Any] | None) -> Rates | None:
    """An entry's fields as Rates; None when one is missing or out of bounds."""
    if not isinstance(fields, Mapping):
        return None
    read = {}
    for name, short in _FIELDS.items():
        text = _raw_number(fields, short)
        if text is None and name in _OPTIONAL and short not in fields:
            text = "0"
        value = _float(text)
        if math.isnan(value):
            return None
        read[name] = value
    if not all(0 <= read[name] <= high for name, high in _BOUNDS.items()) or read["at"] < 0:
        return None
    if not 0 <= read["since"] <= read["at"] + CLOCK_SKEW_SECONDS:
        return None  # (the function's clock; the report's may be behind it by as much)
    return Rates(**read)


def _raw_number(fields: Mapping[str, Any] | None, name: str) -> str | None:
    """The N value of ``name`` among ``fields`` as DynamoDB wrote it; None otherwise."""
    value = fields.get(name) if isinstance(fields, Mapping) else None
    text = value.get("N") if isinstance(value, Mapping) else None
    return text if isinstance(text, str) and 0 < len(text) <= 40 else None


def _entry_item(rates: Rates) -> dict[str, Any]:
    return {short: {"N": _number(getattr(rates, name))} for name, short in _FIELDS.items()}


def _number(value: float) -> str:
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


def conditional_update(
    dynamodb: DynamoDBClient,
    store: str,
    key: Mapping[str, Any],
    update: str,
    condition: str,
    values: Mapping[str, Any],
    names: Mapping[str, str],
    *,
    all_new: bool = False,
) -> dict[str, Any] | None:
    """One conditional UpdateItem on the state store; the item after it with ``all_new``
    (else {}), or None when the condition failed (the combiner's and the stream reader's
    counters' one writer)."""
    try:
        answer = dynamodb.update_item(
            TableName=store,
            Key=dict(key),
            UpdateExpression=update,
            ConditionExpression=condition,
            ExpressionAttributeNames=dict(names),
            ExpressionAttributeValues=dict(values),
            ReturnValues="ALL_NEW" if all_new else "NONE",
        )
    except ClientError as exc:
        if error_code(exc) != CONDITION_FAILED:
            raise
        return None
    return dict(answer.get("Attributes", {})) if all_new else {}
