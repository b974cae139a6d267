"""Runs in: workers (the user's own processes).

What one DynamoDB request of the fast path's client hook touched, consumed and met: its
tables, its consumed capacity by table, GSI and dimension, and its throttled attempts by
cause (docs/guides/fast-path.md#how-the-hook-counts).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeGuard

from ..aws.error_codes import error_code
from ..aws.throttle_causes import MAX_REASONS, reasons_cause, throttle_cause
from ..core.names import table_of_arn
from ..core.validators import is_number

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
"""Each operation the hook watches, and the dimension it consumes."""
REPORT_CAUSES: Mapping[str, str] = {
    "provisioned": "provisioned",
    "key-range": "key_range",
    "account-limit": "other",
    "max-on-demand": "other",
    "unknown": "other",
}
"""A throttle's cause as the workers read it (`aws.throttle_causes.throttle_cause`), as a
report counts it."""
NO_REASON = {"ProvisionedThroughputExceededException": "unknown"}
"""What a throttle without any reason counts as, by error code; any other code: ``other``."""
TRANSACTION_CAUSE = "unknown"
"""What a throttled transaction's attempt counts as: DynamoDB names no cause in a
``ThrottlingError`` cancellation reason."""
_Key = tuple[str | None, str]


def table_name(name: object) -> str | None:
    """A table's name from a ``TableName`` (a name or a table's ARN); None if neither."""
    if not isinstance(name, str) or not name:
        return None
    return table_of_arn(name) if name.startswith("arn:") else name


def arn_place(name: object) -> tuple[str, str] | None:
    """(region, account) a table's ARN names; None for a plain name (or anything else)."""
    if not isinstance(name, str) or not name.startswith("arn:"):
        return None
    parts = name.split(":", 5)
    return (parts[3], parts[4]) if len(parts) == 6 else None


def is_ours(name: object, region: str | None, account: str | None) -> bool:
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
    return tuple(table_name(n) if is_ours(n, region, account) else None for n in names)


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
    found = (table_name(n) for n in names if is_ours(n, region, account))
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
    return is_number(value, 0)


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
    region: str | None = None,
    account: str | None = None,
) -> list[tuple[str, str | None, str, str]]:
    """The (table, index, dimension, cause) each throttled attempt counts on, from the
    error ``parsed`` as botocore parsed it; empty if it is not a throttle. With reasons
    that name their resources: once per resource and dimension, with the strongest of
    its reasons (a reason naming a table of another ``region`` or ``account``, each when
    known, counts nowhere); else once per table the request names, on the operation's dimension (on
    ``index``, the GSI a Query or Scan reads, if any). A cancelled transaction counts
    through `cancelled` (``items``: its tables by position)."""
    from botocore.exceptions import ClientError

    dimension = OPERATIONS[operation]
    code = error_code(parsed)
    if code == "TransactionCanceledException":
        return cancelled(parsed, dimension, tuple(tables), items)
    cause = throttle_cause(ClientError(dict(parsed), operation))  # type: ignore[arg-type]
    if cause is None:
        return []
    reasons = parsed.get("ThrottlingReasons") or parsed.get("throttlingReasons")
    if isinstance(reasons, list) and 0 < len(reasons) <= MAX_REASONS:
        groups: dict[tuple[str, str | None, str], list[object]] = {}
        foreign = 0  # reasons naming another Region's or account's table of the same name
        for entry in reasons:
            resource = entry.get("resource") if isinstance(entry, Mapping) else None
            if resource is not None and not is_ours(resource, region, account):
                foreign += 1
                continue
            where = _resource(resource)
            if where is None or not isinstance(entry, Mapping):
                groups = {}
                break
            groups.setdefault((*where, _reason_dimension(entry, dimension)), []).append(entry)
        if groups:
            return [(*k, REPORT_CAUSES[reasons_cause(v)]) for k, v in groups.items()]
        if foreign == len(reasons):
            return []
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
