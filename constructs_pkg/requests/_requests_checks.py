"""Runs in: CDK app (synth time).

The checks of [`CapacityRequests`][constructs_pkg.requests.CapacityRequests]: its
props (each refusal naming the prop, the value received and what is allowed; ``where``
names the construct), each table listed once (`add_once`) and served by one
CapacityRequests of the app (`refuse_served_elsewhere`), a scaler connected to one only
(`connected_elsewhere`), all as the construct is built; once the app is built, that a
scaler finding one of its tables by tag is connected (`found_by_tag`) and expired holds
have something to end them (`unended_holds`); and, before the templates are
made, that the settle step of each table it serves reads its holds (`HoldReaders`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import jsii
from aws_cdk import Duration, IAspect, TagManager
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct, IConstruct

from ddb_capacity_runtime.core.errors import CapacityConfigError
from ddb_capacity_runtime.core.holds import MAX_HOLD_MINUTES
from ddb_capacity_runtime.core.validators import is_whole

from ..common._props import duration_prop, known_at_synth
from ..fast_path._stream_signal import STREAM_ALARM_IDS
from ..scaler._scaler import ThrottleAwareScaler
from ..table._parts import table_keys
from ..table._table import capacity_of

if TYPE_CHECKING:
    from ..fast_path._fast_path import FastPath
    from ..fast_path._served import Served


def total_units(
    where: str,
    table_quota: int,
    max_units: int,
    max_total_units: int | None,
    broker_concurrency: int | None,
) -> int:
    """The limits checked; returns the holds' total (``max_units`` unless given)."""
    if not is_whole(max_units, 1, table_quota):
        raise CapacityConfigError(
            f"{where}: max_units must be a whole number from 1 to table_quota "
            f"({table_quota}); got {max_units!r}"
        )
    if max_total_units is None:
        max_total_units = max_units
    if not is_whole(max_total_units, max_units, table_quota):
        raise CapacityConfigError(
            f"{where}: max_total_units must be a whole number from max_units "
            f"({max_units:,}) to table_quota ({table_quota}); got {max_total_units!r}"
        )
    if broker_concurrency is not None and not is_whole(broker_concurrency, 1, 1_000):
        raise CapacityConfigError(
            f"{where}: broker_concurrency must be a whole number from 1 to 1000, or "
            f"None; got {broker_concurrency!r}"
        )
    return max_total_units


def hold_minutes(where: str, max_hold: Duration) -> int:
    """``max_hold`` checked; returns it in whole minutes."""
    duration_prop(where, "max_hold", max_hold, Duration.seconds(0))  # range: below
    known_at_synth(
        where,
        "max_hold",
        max_hold,
        "the functions are configured with its minutes",
        "whole minutes from 1 minute to 24 hours",
    )
    hold_seconds = max_hold.to_seconds()
    minutes = hold_seconds / 60
    if not 1 <= minutes <= MAX_HOLD_MINUTES or hold_seconds % 60:
        raise CapacityConfigError(
            f"{where}: max_hold must be whole minutes from 1 minute to 24 hours; got "
            f"{max_hold.to_human_string()}"
        )
    return int(minutes)


def check_restore_every(where: str, restore_every: Duration | None) -> None:
    """``restore_every`` checked: whole minutes from 1 to 60, or None (no restorer)."""
    duration_prop(where, "restore_every", restore_every, Duration.seconds(0), optional=True)
    if restore_every is not None:
        seconds = restore_every.to_seconds()
        if seconds % 60 or not 60 <= seconds <= 3600:
            raise CapacityConfigError(
                f"{where}: restore_every must be whole minutes from 1 to 60, or None; got "
                f"{restore_every.to_human_string()}"
            )


def add_once(
    where: str, keys: dict[tuple[str, str], str], table: dynamodb.ITable, label: str
) -> None:
    """``table``'s keys (`table_keys`) added to ``keys``, to its ``label``; a table listed
    already (the same construct, or an import of the same name in the stack) refused."""
    mine = table_keys(table)
    if mine[0] in keys:
        raise CapacityConfigError(
            f"{where}: tables lists table {keys[mine[0]]} twice; list each table once"
        )
    first = next((keys[k] for k in mine if k in keys), None)
    if first is not None:
        raise CapacityConfigError(
            f"{where}: tables lists {first} and {label}, which are one table (named "
            f"{mine[-1][1]!r} in stack {mine[-1][0]}); list each table once"
        )
    keys.update(dict.fromkeys(mine, label))


def unused_options(
    where: str,
    made: Mapping[str, object | None],
    fast_path: FastPath | None,
    alarms: Sequence[str],
    function_options: object,
) -> None:
    """Options for an alarm (``alarms``: those no alarm was made for) or a function (``made``:
    each function by name, None where these props do not make it) never made, refused,
    naming the option and why it is not made."""
    given = function_options if isinstance(function_options, Mapping) else {}
    unused = [(f"alarm_options[{a!r}] configures an alarm", a) for a in alarms] + [
        (f"function_options[{f!r}] configures a function", f) for f in given if not made.get(f)
    ]
    if unused:
        option, name = unused[0]
        raise CapacityConfigError(
            f"{where}: {option} these props never make: {_never_made(name, fast_path)}; remove it"
        )


def _never_made(name: str, fast_path: FastPath | None) -> str:
    """Why the alarm or function ``name`` is not made."""
    if name.startswith("Restorer"):
        return "restore_every=None leaves the restorer out"
    if name == "HoldsBusy":
        return "restore_every=None leaves the restorer out, and there is no fast path"
    if fast_path is None:
        return "there is no fast path (fast_path=None)"
    if name == "SurgeUnits":
        return "FastPath(surge_alarm_units=None) leaves that alarm out"
    if name == "StreamReader" or name in STREAM_ALARM_IDS:
        return "the fast path has no stream signal (FastPath(stream=None))"
    return "it is not made with these props"


def store_of(scaler: ThrottleAwareScaler) -> str:
    """Where ``scaler`` keeps its state, in words."""
    store = scaler.state_store
    owner = store.node.scope
    if owner is not None and getattr(owner, "hold_store", None) is store:
        return f"the hold store of CapacityRequests {owner.node.path}"
    return store.node.path


def app_scalers(scope: Construct) -> list[ThrottleAwareScaler]:
    """Every ThrottleAwareScaler of ``scope``'s app."""
    return [s for s in scope.node.root.node.find_all() if isinstance(s, ThrottleAwareScaler)]


def _tables(labels: Sequence[str]) -> str:
    return f"{'table' if len(labels) == 1 else 'tables'} {', '.join(labels)}"


def refuse_served_elsewhere(
    where: str,
    keys: Mapping[tuple[str, str], str],
    others: Sequence[tuple[Construct, frozenset[tuple[str, str]]]],
) -> None:
    """A table of ``keys`` (`table_keys`, to its label) that other CapacityRequests of the
    app serve already (``others``, each with the keys it shares) refused: each keeps its
    holds in its own store, so neither would see the other's, and the release of a hold in
    one would lower the table under a hold of the other."""
    if not others:
        return
    other, shared = others[0]
    labels = sorted({keys[k] for k in shared})
    raise CapacityConfigError(
        f"{where}: tables has {_tables(labels)}, which CapacityRequests {other.node.path} "
        "serves already; a table is served by one CapacityRequests (each keeps its own hold "
        "store, so neither would see the other's holds, and a release in one would lower "
        "the table under the other's hold): list each table in the tables of one of them only"
    )


def connected_elsewhere(where: str, labels: Sequence[str], scaler: ThrottleAwareScaler) -> str:
    """Why ``scaler``, which manages the tables ``labels`` these requests serve, cannot be
    connected to them: it keeps its state with other CapacityRequests already."""
    them = "it" if len(labels) == 1 else "them"
    return (
        f"{where}: tables has {_tables(labels)}, which ThrottleAwareScaler "
        f"{scaler.node.path} manages, but that scaler keeps its state in {store_of(scaler)} "
        "already, and a scaler can be connected to one CapacityRequests only (it has one "
        f"state store): serve {them} from that one, or manage {them} with another scaler"
    )


def _tags(table: dynamodb.ITable) -> Mapping[str, str]:
    """The tags ``table`` carries in the template (its own and those its scopes gave it,
    once the app's aspects have run); none for an imported table."""
    for taggable in (table, table.node.default_child):
        manager = TagManager.of(taggable) if taggable is not None else None
        if manager is not None:
            return manager.tag_values()
    return {}


def found_by_tag(served: Served, scalers: Sequence[ThrottleAwareScaler]) -> list[str]:
    """Every one of the app's ``scalers`` that finds tables by a tag (its ``tag_key`` and
    ``tag_value``) which a table ``served`` carries in the template, but keeps its state
    elsewhere: at run time it would find that table and take a hold's raised minimum for
    the configured minimum. Checked at synth only, for two reasons: the tags are given to
    the tables as the app is synthesized (``Tags.of(scope).add`` is an aspect), and such a
    scaler is connected by hand, a call that may come after both are built. A tag given
    outside the app (the console, another stack) is not seen here."""
    errors = []
    for scaler in scalers:
        if not scaler.tag_key or scaler.state_store is served.hold_store:
            continue
        tag = f"{scaler.tag_key}={scaler.tag_value}"
        shared = sorted(
            (owner or table).node.path
            for table, owner, _ in served.indexes
            if _tags(table).get(scaler.tag_key) == scaler.tag_value
        )
        if not shared:
            continue
        it = "it" if len(shared) == 1 else "them"
        if scaler.state_store.node.scope is scaler:
            fix = "connect it: requests.connect(scaler)"
        else:
            fix = (
                f"it keeps its state in {store_of(scaler)}, and a scaler can be connected "
                f"to one CapacityRequests only: take the tag off {it}, or serve {it} from that one"
            )
        errors.append(
            f"{served.where}: ThrottleAwareScaler {scaler.node.path} finds tables by the tag "
            f"{tag} (tag_key, tag_value), which {_tables(shared)} of these requests "
            f"{'carries' if len(shared) == 1 else 'carry'}, but is not connected to them, so "
            f"it would take a hold's raised minimum for the configured minimum and keep it; "
            f"{fix}"
        )
    return errors


def unended_holds(
    served: Served, restored: bool, fast: bool, scalers: Sequence[ThrottleAwareScaler]
) -> list[str]:
    """With no restorer (``restored``), one of the app's ``scalers`` connected to the
    requests ``served`` and not a dry run must end the holds that expire unreleased (a
    worker that died) and the fast path's surges (``fast``: it has one): else nothing ends
    them, and the capacity they raised stays, paid for. Checked at synth only: a scaler
    made, given a served table or connected by hand after these requests may still end
    them."""
    if restored:
        return []
    connected = [s for s in scalers if s.state_store is served.hold_store]
    if any(not scaler.dry_run for scaler in connected):
        return []
    what = "fast_path with restore_every=None" if fast else "restore_every=None"
    ended = "expired holds and its surges" if fast else "expired holds"
    found = (
        "each one connected is a dry run, which changes nothing"
        if connected
        else "none is connected"
    )
    return [
        f"{served.where}: {what} needs a connected ThrottleAwareScaler to end {ended}, "
        f"and {found}: nothing would end a hold its worker never released; keep the "
        "restorer (restore_every), or manage a served table with a scaler that is not a dry "
        "run (its tables, add_table or enable_throttle_aware_scaling: it is connected "
        "without a call; one that finds tables by tag: requests.connect(scaler))"
    ]


@jsii.implements(IAspect)
class HoldReaders:
    """Once the app is built (an aspect of ``requests``, before the templates are made): the
    settle step of each table ``requests`` serve as the plain table (an ``ITable``, not its
    ``TableCapacity``) reads their hold store too, whichever of the two was made first: the
    ``TableCapacity`` that manages the table is found by the table (`capacity_of`). A table
    served through its ``TableCapacity`` is told when the requests are made."""

    def __init__(self, served: Served) -> None:
        self._served = served

    def visit(self, node: IConstruct) -> None:
        served = self._served
        if node is not served.scope:
            return
        for table, owner, _ in served.indexes:
            found = capacity_of(served.scope, table) if owner is None else None
            if found is not None:
                # the one call across features to a table's own state, as the requests make
                # it for a table given as its TableCapacity (`CapacityRequests`)
                found._read_holds(served.hold_store)
