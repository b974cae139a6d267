"""Runs in: scaler Lambda.

A global table's replica, managed by the scaler of its own Region: its write dimensions
are decided on every replica's writes (`core.series.with_replicas`), read from each other
replica's Region, so that every Region's scaler makes the same write decision and the
replicas' write capacity stays one; its read dimensions are its own. Nothing here changes
AWS: the scaler moves only the targets of its own Region.

Another Region's metrics are untrusted like any: a minute that cannot be read there is
unknown here (no decrease of that dimension), and a Region that cannot be read at all is a
failure of each table read from it (counted, and alarmed), never a lowered capacity. There,
no table is read every tick to show the minutes delivered (the state store is here): every
minute is taken for delivered, and one without a datapoint of the dimension's own, older
than the minutes still arriving, reads as idle (`metrics.fetch`, ``delivered``). A decrease
resting on a minute read as idle in any replica's own series, merged or not, waits for
the table's delivery witness in every Region of its replicas (`witness`, through
`region_cloudwatch`): a replica whose metrics stopped arriving never hides its writes."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from ..aws import metrics
from ..aws.clients import Clients, call_bound
from ..aws.error_codes import describe_error
from ..core.deadline import NONE, Deadline, DeadlinePassed
from ..core.delivery import decided_from, decided_idle
from ..core.series import MINUTE, Key, Series, with_replicas
from ..core.settings import ScalerConfig
from ..core.tables import ManagedTable

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient


def replicated(
    config: ScalerConfig,
    clients: Clients,
    tables: Sequence[ManagedTable],
    series: Mapping[Key, Series],
    window: tuple[datetime, datetime],
    fail: Callable[[str, str], None],
    deadline: Deadline = NONE,
    idle: dict[Key, list[bool]] | None = None,
) -> dict[Key, Series]:
    """``series`` with each replicated table's write dimensions read in every Region of
    its replicas (`ScalerConfig.replica_regions`) and merged; ``fail(table, reason)`` for a
    table whose other Region could not be read (its writes then forbid a decrease). A
    Region is not read once the tick's ``deadline`` leaves less than one bounded call, so
    another Region's outage never takes the time this Region's decisions need. ``idle``
    (given: filled): per dimension merged, its minutes read as idle in a replica's own
    series, this Region's or another's, within the minutes a decrease at the window's end
    is decided on (`core.delivery.decided_idle`)."""
    wanted: dict[str, list[Key]] = {}
    for table in tables:
        for region in config.replica_regions(table.name):
            keys = [d.key for d in table.dimensions if d.key[2] == "write" and d.key in series]
            wanted.setdefault(region, []).extend(keys)
    others: dict[Key, list[Series]] = {}
    for region, keys in sorted(wanted.items()):
        read = _read_region(clients, region, keys, window, config.arriving_minutes, fail, deadline)
        for key, found in read.items():
            others.setdefault(key, []).append(found)
    out = dict(series)
    for key, theirs in others.items():
        out[key] = with_replicas(series[key], theirs)
        if idle is not None:
            since = decided_from(window[1], config)
            alike = [s for s in theirs if s.minute_starts == series[key].minute_starts]
            masks = [decided_idle(s, since) for s in (series[key], *alike)]
            idle[key] = [any(m) for m in zip(*masks, strict=True)]
    return out


def region_cloudwatch(clients: Clients, region: str, deadline: Deadline) -> CloudWatchClient:
    """The CloudWatch client of another ``region``. Raises when there is none, or when the
    tick's ``deadline`` leaves less than one bounded call of it: another Region's outage
    never takes the time this Region's decisions need."""
    if clients.cloudwatch_of is None:
        raise RuntimeError("no CloudWatch client of another Region was given")
    cloudwatch = clients.cloudwatch_of(region)
    if deadline.left() < 2 * call_bound(cloudwatch):
        raise DeadlinePassed(f"too little of the tick left to read {region}")
    return cloudwatch


def _read_region(
    clients: Clients,
    region: str,
    keys: list[Key],
    window: tuple[datetime, datetime],
    arriving: int,
    fail: Callable[[str, str], None],
    deadline: Deadline,
) -> dict[Key, Series]:
    """``keys``' series in ``region`` (its own throttles told apart by cause; ``arriving``:
    the newest minutes, known only with a datapoint of their own: `metrics.fetch`); all unknown,
    and each table failed, where the Region cannot be read (a table whose series came back
    from another batch of the Region is not failed)."""
    start, end = window
    errors: list[str] = []
    by_cause: dict[Key, str] = {}
    try:
        cloudwatch = region_cloudwatch(clients, region, deadline)
        found = metrics.fetch(
            cloudwatch, keys, start, end, errors=errors, arriving=arriving, delivered=True
        )
        found = metrics.fetch_causes(cloudwatch, found, start, end, errors=by_cause)
    except Exception as exc:  # the Region's writes are unknown: no decrease of them
        errors.append(describe_error(exc))
        starts = [start + i * MINUTE for i in range(int((end - start) / MINUTE))]
        found = {key: Series.all_unknown(starts) for key in keys}
    unknown = {key[0] for key in keys if found[key].unknown and all(found[key].unknown)}
    failed = unknown if errors else set()
    for table in sorted(failed):
        fail(table, f"replica {region}: {'; '.join(errors)}")
    for key, error in by_cause.items():
        fail(key[0], f"replica {region} {key[1] or 'table'} write: {error}")
    return found
