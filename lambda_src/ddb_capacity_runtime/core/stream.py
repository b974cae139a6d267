"""Runs in: stream reader Lambda, workstation (tests, the simulator's assumptions).

The table's own stream as a write signal: the write capacity units a batch of DynamoDB
Streams records stands for, per table and GSI, estimated from what each record carries,
with no client in the application's processes.

DynamoDB bills a write by the item's size in 1 KB steps, at least one unit: a put or
delete by the item written or removed, an update by the larger of the item before and
after ("Item sizes and formats"; "DynamoDB read and write capacity"). A GSI whose key
attributes the item has, before or after, is written too: once when the item enters or
leaves it, or changes anything it projects; twice when its index key changes (the old
entry is removed, the new one put); each write sized by what it projects (the table's
and the index's keys, plus the projected attributes: all of them for ``ALL``).

What a record shows depends on the stream's view type; the estimate is exact only where
the images are (`ACCURACY`). Never seen: writes that changed nothing (no record),
writes refused by a condition (they consume a unit, and make no record), and
transactional writes' doubling (a record does not say it came from a transaction): the
estimate is a lower bound of the units consumed. TTL deletions (``userIdentity`` of the
DynamoDB service) consume no capacity and are left out.

Records are untrusted input like metrics: a record that is not a well-formed stream
record of the expected shape counts as one unit on the table (a write happened), never
more.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from .validators import is_number

ACCURACY = {
    "NEW_AND_OLD_IMAGES": "exact for the table and every GSI (transactions count once)",
    "NEW_IMAGE": "puts and growing updates exact, deletes 1 unit, GSIs only where the item "
    "enters or stays",
    "OLD_IMAGE": "deletes exact, puts 1 unit, updates by the old size; GSIs not seen",
    "KEYS_ONLY": "1 unit a record (exact for items of 1 KB or less); GSIs not seen",
}
"""What an estimate from each view type sees, for the docs and the reader's log."""
WRITE_UNIT_BYTES = 1024
"""What DynamoDB bills a write unit for."""
MAX_DEPTH = 32
"""Deeper than DynamoDB allows an item to nest (32 levels): such a value is malformed."""
TTL_PRINCIPAL = "dynamodb.amazonaws.com"
"""The principal of TTL deletions in a record's ``userIdentity``."""
GSI_VIEWS = ("NEW_AND_OLD_IMAGES", "NEW_IMAGE")
"""The view types whose records show what the GSIs write (`ACCURACY`): with the others an update
would read as the item leaving every index, or show nothing."""
WINDOW_SECONDS = 10
"""The stream reader's counting window, in seconds: its shards' units add up per window."""


@dataclass(frozen=True)
class Index:
    """What the estimate needs of one GSI: its key attributes, and what it projects
    (``ALL``, ``KEYS_ONLY`` or ``INCLUDE`` with ``include``)."""

    name: str
    keys: tuple[str, ...]
    projection: str = "ALL"
    include: tuple[str, ...] = ()

    def projected(self, image: Mapping[str, Any], table_keys: Iterable[str]) -> dict[str, Any]:
        """The part of ``image`` this index holds."""
        if self.projection == "ALL":
            return dict(image)
        names = {*table_keys, *self.keys}
        if self.projection == "INCLUDE":
            names.update(self.include)
        return {k: v for k, v in image.items() if k in names}

    def holds(self, image: Mapping[str, Any] | None) -> bool:
        """Whether an item with ``image`` is in this index (it has every key attribute)."""
        return image is not None and all(k in image for k in self.keys)


@dataclass(frozen=True)
class Shape:
    """The table's key attributes and GSIs, from DescribeTable."""

    keys: tuple[str, ...]
    indexes: tuple[Index, ...] = ()


def value_size(value: object, depth: int = 0) -> int | None:
    """The bytes DynamoDB counts for one attribute value in the stream's JSON form (``{"S":
    ...}``, ``{"N": ...}``, ...); None when it is not a well-formed value."""
    if not isinstance(value, Mapping) or len(value) != 1 or depth > MAX_DEPTH:
        return None
    ((kind, raw),) = value.items()
    if kind in ("SS", "NS", "BS", "L", "M"):
        return _collection_size(kind, raw, depth)
    return _scalar_size(kind, raw)


def _scalar_size(kind: object, raw: object) -> int | None:
    """The bytes of a scalar value ``{kind: raw}``; None when malformed."""
    if kind == "S" and isinstance(raw, str):
        return len(raw.encode("utf-8", "surrogatepass"))
    if kind == "N" and isinstance(raw, str):
        return _number_size(raw)
    if kind == "B" and isinstance(raw, str | bytes):
        return _binary_size(raw)
    if kind in ("BOOL", "NULL"):
        return 1
    return None


def _collection_size(kind: str, raw: object, depth: int) -> int | None:
    """The bytes of a set, list or map ``{kind: raw}``; None when it or a member is
    malformed."""
    if kind in ("SS", "NS", "BS") and isinstance(raw, list):
        sizes = [value_size({kind[0]: v}, depth + 1) for v in raw]
        return None if None in sizes else sum(s for s in sizes if s is not None)
    if kind == "L" and isinstance(raw, list):
        sizes = [value_size(v, depth + 1) for v in raw]
        return None if None in sizes else 3 + sum(1 + s for s in sizes if s is not None)
    if kind == "M" and isinstance(raw, Mapping):
        size = item_size(raw, depth + 1)
        return None if size is None else 3 + size + len(raw)
    return None


def item_size(image: Mapping[str, Any], depth: int = 0) -> int | None:
    """The bytes of an item (its attributes' names and values); None when malformed."""
    total = 0
    for name, value in image.items():
        size = value_size(value, depth)
        if not isinstance(name, str) or size is None:
            return None
        total += len(name.encode("utf-8", "surrogatepass")) + size
    return total


def write_units(size: int | None) -> int:
    """Write units for an item of ``size`` bytes (unknown: 1, the least a write uses)."""
    return 1 if size is None else max(1, math.ceil(size / WRITE_UNIT_BYTES))


def _number_size(raw: str) -> int | None:
    try:
        number = Decimal(raw)
    except InvalidOperation:
        return None
    if not number.is_finite():
        return None
    digits = number.as_tuple().digits
    significant = len("".join(map(str, digits)).strip("0")) or 1
    return 1 + math.ceil(significant / 2)


def _binary_size(raw: str | bytes) -> int | None:
    if isinstance(raw, bytes):
        return len(raw)
    try:
        return len(base64.b64decode(raw, validate=True))
    except (binascii.Error, ValueError):
        return None


def seen_shape(shape: Shape, view: object) -> Shape:
    """``shape`` as records of the view type ``view`` let it be seen: its GSIs only where
    the images show them (`GSI_VIEWS`)."""
    return shape if view in GSI_VIEWS else Shape(shape.keys)


def shape_of(description: Mapping[str, Any]) -> Shape:
    """The `Shape` of a table from its DescribeTable ``Table`` (untrusted: a GSI
    whose key or projection cannot be read is left out, so it is never estimated)."""
    keys = _key_names(description.get("KeySchema"))
    indexes = []
    gsis = description.get("GlobalSecondaryIndexes")
    for gsi in gsis if isinstance(gsis, list) else []:
        name = gsi.get("IndexName") if isinstance(gsi, Mapping) else None
        index_keys = _key_names(gsi.get("KeySchema")) if isinstance(gsi, Mapping) else ()
        projection = gsi.get("Projection") if isinstance(gsi, Mapping) else None
        kind = projection.get("ProjectionType") if isinstance(projection, Mapping) else None
        include = projection.get("NonKeyAttributes", []) if isinstance(projection, Mapping) else []
        if (
            isinstance(name, str)
            and index_keys
            and kind in ("ALL", "KEYS_ONLY", "INCLUDE")
            and isinstance(include, list)
            and all(isinstance(a, str) for a in include)
        ):
            indexes.append(Index(name, index_keys, kind, tuple(include)))
    return Shape(keys, tuple(indexes))


def _key_names(schema: object) -> tuple[str, ...]:
    """The attribute names of a KeySchema; () when it is not one."""
    if not isinstance(schema, list) or not 1 <= len(schema) <= 2:
        return ()
    names = [k.get("AttributeName") if isinstance(k, Mapping) else None for k in schema]
    return tuple(n for n in names if isinstance(n, str)) if all(names) else ()


def record_time(record: object) -> float | None:
    """A record's ``ApproximateCreationDateTime`` as seconds since the epoch (None: it
    has none that can be read)."""
    body = record.get("dynamodb") if isinstance(record, Mapping) else None
    return _seconds(body.get("ApproximateCreationDateTime") if isinstance(body, Mapping) else None)


def window_rate(
    units: float, start: float, latest: float, previous: float, window: int = WINDOW_SECONDS
) -> float:
    """Write units per second from the counting windows: the window under way's ``units``
    over the seconds from its ``start`` to its ``latest`` record (1 second at least, the
    window at most), or the window before's ``previous`` units over a whole window,
    whichever is more. DynamoDB rounds a record's time down to the second."""
    elapsed = min(float(window), max(1.0, math.floor(latest) - start + 1.0))
    return max(units / elapsed, previous / window)


def _seconds(when: object) -> float | None:
    """A record's time as seconds since the epoch: a number in a Lambda event, a datetime
    from the Streams API through boto3; None for anything else."""
    if isinstance(when, datetime):
        return when.timestamp()
    return float(when) if is_number(when) else None  # not a JSON integer of 400 digits


def _image(record: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    image = record.get(name)
    return image if isinstance(image, Mapping) else None


def is_ttl_deletion(record: Mapping[str, Any]) -> bool:
    """Whether ``record`` is a deletion by Time to Live (it consumes no capacity)."""
    who = record.get("userIdentity")
    return (
        isinstance(who, Mapping)
        and who.get("type") == "Service"
        and who.get("principalId") == TTL_PRINCIPAL
    )


def record_units(record: Mapping[str, Any], shape: Shape) -> dict[str | None, int]:
    """Write units one stream record stands for, per table (None) and GSI; {} for a TTL
    deletion. A malformed record: one unit on the table."""
    if is_ttl_deletion(record):
        return {}
    body = record.get("dynamodb")
    if not isinstance(body, Mapping):
        return {None: 1}
    old, new = _image(body, "OldImage"), _image(body, "NewImage")
    sizes = [item_size(i) for i in (old, new) if i is not None]
    table = max((write_units(s) for s in sizes), default=1)
    out: dict[str | None, int] = {None: table}
    for index in shape.indexes:
        units = _index_units(index, shape.keys, old, new)
        if units:
            out[index.name] = units
    return out


def _index_units(
    index: Index,
    table_keys: tuple[str, ...],
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any] | None,
) -> int:
    """Write units one table write costs ``index``, from what the images show."""
    before = index.projected(old, table_keys) if old is not None and index.holds(old) else None
    after = index.projected(new, table_keys) if new is not None and index.holds(new) else None
    if before is None:  # enters the index, or was never in it
        return 0 if after is None else write_units(item_size(after))
    if after is None:  # leaves it
        return write_units(item_size(before))
    assert old is not None and new is not None
    if any(old.get(k) != new.get(k) for k in index.keys):  # its index key moved: 2 writes
        return write_units(item_size(before)) + write_units(item_size(after))
    if before == after:
        return 0
    return max(write_units(item_size(before)), write_units(item_size(after)))


@dataclass(frozen=True)
class StreamRates:
    """Write units per second a batch of records stands for, per table (None) and GSI,
    over ``seconds``, and how many records were TTL deletions or malformed."""

    units: Mapping[str | None, float]
    seconds: float
    ttl: int = 0
    malformed: int = 0
    totals: Mapping[str | None, float] = field(default_factory=dict)
    """The units themselves, per table (None) and GSI."""


def batch_rates(records: Iterable[object], shape: Shape) -> StreamRates:
    """The write rates of a batch of stream records: their units over the seconds from
    the first record's ``ApproximateCreationDateTime`` to the last one's, at least one
    second (DynamoDB rounds the time down to the second)."""
    totals: dict[str | None, float] = {}
    times: list[float] = []
    ttl = malformed = 0
    for record in records:
        if not isinstance(record, Mapping):
            malformed += 1
            totals[None] = totals.get(None, 0.0) + 1
            continue
        if is_ttl_deletion(record):
            ttl += 1
            continue
        when = record_time(record)
        if when is not None:
            times.append(when)
        if not isinstance(record.get("dynamodb"), Mapping):
            malformed += 1
        for scope, units in record_units(record, shape).items():
            totals[scope] = totals.get(scope, 0.0) + units
    seconds = max(1.0, max(times) - min(times) + 1.0) if times else 1.0
    rates = {k: v / seconds for k, v in totals.items()}
    return StreamRates(rates, seconds, ttl, malformed, totals)
