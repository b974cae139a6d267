"""Runs in: scaler Lambda.

What a tick reads before it decides: every managed table of the account and Region, or a
batch's, each described, with its state-store items, tags and scalable targets (a table
not managed now skipped, one UPDATING counted, one in a status no wait ends a failure of
its own)."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ..aws import discovery, table_calls
from ..aws.discovery import NotManaged, TableUnavailable, TableUpdating
from ..aws.error_codes import describe_error
from ..core.holds import HeldDimension
from ..core.tables import ManagedTable, ScalableTarget
from ..events import log_event
from .prepare import STATE_MARKER, prepare, without_bad_targets
from .tick_state import TickState as _Tick

if TYPE_CHECKING:
    from .shard import Batch


def read_all(
    t: _Tick, threads: int, found: Mapping[str, dict[str, str] | None] | None
) -> tuple[list[ManagedTable], dict[str, list[HeldDimension]]]:
    """Every managed table of the account and Region, as the tick decides it: one listing
    of the scalable targets, tag discovery, one Scan of the state store."""
    clients, config = t.clients, t.config
    # None when the account's listing fails: each table's own targets are read instead,
    # and a table whose targets stay unknown is left as it is (never sent UpdateTable)
    targets: Mapping[tuple[str, str], ScalableTarget] | None = t.shared(
        "scalable targets",
        lambda: discovery.scalable_targets(clients.autoscaling),
        None,
        confined=True,
    )
    explicit: dict[str, dict[str, str] | None] = dict.fromkeys(config.tables)
    if found is None:
        unsound: list[str] = []
        found = t.shared(
            "tag discovery",
            lambda: discovery.find_tables(clients.tagging, config, unsound),
            explicit,
            confined=True,
        )
        t.throttled += [f"tag discovery: {entry}" for entry in unsound]
    # unread, no memory is known: a minimum is then never moved (its memory could not be
    # checked), and the shared failure forbids decreases
    scanned = t.shared("state store", t.store.scan, None)
    held: dict[str, list[HeldDimension]] = scanned[0] if scanned else {}
    markers = t.markers = None if scanned is None else scanned[1]
    return _prepare_tables(t, found, targets, held, markers, threads), held


def read_batch(
    t: _Tick, batch: Batch, threads: int
) -> tuple[list[ManagedTable], dict[str, list[HeldDimension]]]:
    """The batch's tables as the tick decides them: each described and its state-store
    items read (one Query each; a table whose items cannot be read fails alone; one not
    managed now is skipped, and one UPDATING counted), their tags read (`_batch_tags`:
    a message names tables, never their configuration), then the scalable targets of them
    all and their GSIs listed at once."""
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        reads = {n: pool.submit(_describe_and_read, t, n) for n in batch.tables}
    found: dict[str, dict[str, str] | None] = {}
    descriptions: dict[str, Mapping[str, Any]] = {}
    held: dict[str, list[HeldDimension]] = {}
    markers: set[tuple[str, str]] = set()
    ids: list[str] = []
    updating: list[str] = []
    for name, future in reads.items():
        try:
            descriptions[name], held[name], marks, table_ids = future.result()
        except NotManaged as exc:
            _not_managed(t, name, exc, updating)
            continue
        except Exception as exc:
            t.fail(name, describe_error(exc))
            continue
        found[name] = None
        markers |= {(name, what) for what in marks}
        ids += table_ids
    for name in updating:  # counted, so one stuck there alarms
        t.emf({"Updating": 1}, name)
    found = _batch_tags(t, found, descriptions)
    targets: Mapping[tuple[str, str], ScalableTarget] | None = t.shared(
        "scalable targets",
        lambda: discovery.scalable_targets(t.clients.autoscaling, ids) if ids else {},
        None,
        confined=True,
    )
    t.markers = markers
    tables = _prepare_tables(t, found, targets, held, markers, threads, descriptions)
    return tables, held


def _batch_tags(
    t: _Tick,
    found: dict[str, dict[str, str] | None],
    descriptions: Mapping[str, Mapping[str, Any]],
) -> dict[str, dict[str, str] | None]:
    """The batch's tables the scaler provably manages, with their tags where read: a
    message names tables, it never puts one under the scaler. A table is kept when it is
    listed in the scaler's tables, or when this batch's tag read (the tagging API, 100
    tables a call, as tag discovery reads them) shows it carrying the discovery tag; any
    other (never tagged, tagged otherwise, or named while the scaler discovers nothing by
    tag) is skipped. When the tag read fails, the tables not listed wait for the next tick:
    each a failure (counted), none acted on. A kept table's tags are the read's, or
    (None) read one by one with the table."""
    config, listed = t.config, set(t.config.tables)
    tags: dict[str, dict[str, str] | None] | None = {}
    if config.tag_key:
        arns = [discovery.table_arn(n, descriptions[n]) for n in found]  # each checked read
        unsound: list[str] = []
        tags = t.shared(
            "table tags",
            lambda: discovery.tags_of_tables(t.clients.tagging, arns, unsound),
            None,
            confined=True,
        )
        t.throttled += [f"table tags: {entry}" for entry in unsound]
    kept: dict[str, dict[str, str] | None] = {}
    for name in found:
        seen = None if tags is None else tags.get(name)
        if name in listed:
            kept[name] = seen
        elif tags is None or (name in tags and seen is None):
            t.fail(
                name,
                "not decided: its tags could not be read, so whether it carries the "
                "discovery tag is not known; the next tick decides it",
            )
        elif config.tag_key and (seen or {}).get(config.tag_key) == config.tag_value:
            kept[name] = seen
        else:
            reason = "not managed: neither listed nor carrying the discovery tag"
            t.skipped.append({"table": name, "reason": reason})  # logged with the others
    return kept


def _describe_and_read(
    t: _Tick, name: str
) -> tuple[Mapping[str, Any], list[HeldDimension], set[str], list[str]]:
    """One table of a batch: its description (NotManaged when it is not managed now), its
    state-store items and markers, and the ResourceIds of its targets. What the batch reads
    of the description for all its tables at once (the GSIs' names, the table's ARN) is
    checked here, so an odd answer fails its own table alone."""
    description = table_calls.describe(t.clients.dynamodb, name)
    discovery.check_managed(description)
    ids = discovery.table_resource_ids(name, description)
    discovery.table_arn(name, description)  # the batch's tag read, and the table's own
    held, markers = t.store.read(name)
    return description, held, markers, ids


def _prepare_tables(
    t: _Tick,
    found: Mapping[str, dict[str, str] | None],
    targets: Mapping[tuple[str, str], ScalableTarget] | None,
    held: Mapping[str, list[HeldDimension]],
    markers: set[tuple[str, str]] | None,
    threads: int,
    descriptions: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[ManagedTable]:
    """Every table found, as the tick will decide it (`prepare.prepare`, in
    ``threads`` threads, with its DescribeTable answer where ``descriptions`` has it); a
    table not managed now is skipped (and one UPDATING counted), one that fails is a
    failure of that table alone."""
    tables: list[ManagedTable] = []
    updating: list[str] = []  # skipped while UPDATING: counted, so one stuck there alarms
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        prepared = {
            name: pool.submit(
                prepare,
                name,
                tags,
                t.config,
                t.clients,
                targets,
                t.now,
                t.store,
                held.get(name, []),
                None if markers is None else (name, STATE_MARKER) in markers,
                (descriptions or {}).get(name),
                t.deadline,
            )
            for name, tags in found.items()
        }
        for name, future in prepared.items():
            try:
                tables.append(without_bad_targets(future.result()))
            except NotManaged as exc:
                _not_managed(t, name, exc, updating)
            except Exception as exc:
                (t.fail_late if t.passed(exc) else t.fail)(name, describe_error(exc))
    for entry in t.skipped:
        log_event("table-skipped", table=entry["table"], reason=entry["reason"])
    for name in updating:  # only while it happens (a billed custom metric)
        t.emf({"Updating": 1}, name)
    return tables


def _not_managed(t: _Tick, name: str, exc: NotManaged, updating: list[str]) -> None:
    """A table the tick does not manage now: skipped (one UPDATING added to ``updating``,
    to be counted), or a failure of that table in a status no wait ends (TableUnavailable)."""
    if isinstance(exc, TableUnavailable):
        t.fail(name, str(exc))
        return
    t.skipped.append({"table": name, "reason": str(exc)})  # logged with the others
    if isinstance(exc, TableUpdating):
        updating.append(name)
