"""Runs in: scaler Lambda, broker Lambda, settle Lambda, workers (the user's own jobs), CDK
app (synth), workstation (simulator, ``ddb-capacity``).

How DynamoDB, Application Auto Scaling and this library name things: dimensions,
resource ids, scalable dimensions and the library's table tags."""

from __future__ import annotations

import os
from collections.abc import Mapping

from .validators import is_whole, whole_text

DIMENSIONS = ("read", "write")
MAX_SCHEDULED_ACTIONS = 200
"""Scheduled actions Application Auto Scaling keeps on one scalable target (not adjustable)."""
MAX_SCHEDULE_TEXT = 1_600
"""The longest schedule expression or time zone Application Auto Scaling takes."""
UNITS = {"read": "ReadCapacityUnits", "write": "WriteCapacityUnits"}
DEFAULT_TABLE_QUOTA = 40_000
"""DynamoDB's default quota of read (and of write) capacity units per table: the largest
capacity the library reads, sets or obeys unless it is given the table quota of the
account (``table_quota`` of the constructs, `TABLE_QUOTA_ENV` at run time)."""
MAX_TABLE_QUOTA = 1_000_000
"""The largest table quota accepted: DynamoDB publishes no hard per-table maximum (the quota is
raised on request), so this ceiling only refuses nonsense, 25 times the default."""
TABLE_QUOTA_ENV = "CAPACITY_TABLE_QUOTA"
"""The environment variable that carries the table quota to the run-time functions (part of the
scaler's settings contract, and read by the state store's bounds)."""
BATCH_QUEUE_ENV = "CAPACITY_BATCH_QUEUE_URL"
"""The sharded scaler's batch queue, for its scheduled function (the construct sets it;
without it, a tick is never sharded: `scaler.shard`)."""
STORE_ENV = "CAPACITY_HOLDS_TABLE"
"""The environment variable that names the state store (the hold store) for workers and for the
Lambda functions (set by ``CapacityRequests`` and the ``ThrottleAwareScaler``)."""
TAG_PREFIX = "ddb-capacity:"
"""Every tag this library reads or writes on a table starts with this prefix."""
BASE_MIN_TAG = f"{TAG_PREFIX}base-min:"
"""0.4's state tags (a remembered minimum, a plan of floors): state lives in the state store now,
and a tick moves these into it once, then removes them. Nothing writes them."""
FORECAST_TAG = f"{TAG_PREFIX}forecast:"
SCALER_TAGS = (BASE_MIN_TAG, FORECAST_TAG)
TARGET_TAG = f"{TAG_PREFIX}table"
"""The tag on a scalable target that this library may move: its value is the table's name. The
constructs put it on every target they create; the library's roles may call RegisterScalableTarget
only on targets that carry it (with one of their tables' names)."""
OWNER_TAG = f"{TAG_PREFIX}schedule-role"
"""The tag a global table's replica-schedule role puts beside `TARGET_TAG`: its own ARN. A
table's name is unique in one Region only; the role deletes scheduled actions and the tags in
any Region only where this tag names it (a Region dropped from the table, the table replaced)."""


METRICS_NAMESPACE = "DynamoDBCapacity"
"""Where the scaler, the broker, the signals function, the stream reader and the client
hook in a Lambda function send their Embedded Metric Format counts: per table (dimension
``TableName``) or for their deployment (dimension ``StateStore``, `metrics_store`)."""
METRICS_STORE_ENV = "CAPACITY_METRICS_STORE"
"""The environment variable that names, in a user's function that reports to the fast path
(``CapacityRequests.grant_signals``, ``instrument``), the hold store of the deployment its
hook's counts belong to: the function is not given `STORE_ENV`, which would let its
requests go to the store directly."""


def metrics_store(env: Mapping[str, str] = os.environ) -> str | None:
    """The state store whose deployment a function's counts belong to, the value of their
    ``StateStore`` dimension: `METRICS_STORE_ENV`, else `STORE_ENV` (every function the
    constructs deploy has it); None when neither is set (the counts then carry no dimension,
    which no construct's alarm watches)."""
    return env.get(METRICS_STORE_ENV, "").strip() or env.get(STORE_ENV, "").strip() or None


WORST_TABLE_METRICS = frozenset(
    {"CapacityAtMax", "BadTargets", "RefusedTags", "TargetsNotOwned", "Updating"}
    | {"RefusedTunedTargets", "IgnoredTags", "PlansNotKept", "MetricsStalled"}
)
"""The scaler's per-table metrics its alarms (and nightly tuning's) watch: each table's record
publishes them for the scaler's deployment too (dimension ``StateStore``), where a period's
Maximum is the worst table's. An alarm cannot watch a SEARCH over the tables' metrics (it
returns many series)."""


NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
"""The characters of a DynamoDB table or index name (3 to 255 of them)."""


def whole_units(raw: object) -> int | None:
    """``raw`` as a whole number of capacity units from 1 to `MAX_TABLE_QUOTA`: an int, or
    its text of digits (as CloudFormation and environment variables carry numbers); None for
    anything else."""
    text = raw if isinstance(raw, str) else str(raw) if is_whole(raw) else ""
    return whole_text(text, 1, MAX_TABLE_QUOTA, digits=7)


def parse_table_quota(raw: object, name: str = TABLE_QUOTA_ENV) -> int:
    """The table quota in ``raw`` (a whole number from 1 to `MAX_TABLE_QUOTA`, as
    text or int; None or empty: `DEFAULT_TABLE_QUOTA`). Raises ValueError naming
    ``name``, the value received and what is allowed."""
    if raw is None or raw == "":
        return DEFAULT_TABLE_QUOTA
    units = whole_units(raw.strip() if isinstance(raw, str) else raw)
    if units is not None:
        return units
    raise ValueError(
        f"{name}: got {raw!r:.100}; expected a whole number of capacity units from 1 to "
        f"{MAX_TABLE_QUOTA:,} (DynamoDB's default quota is {DEFAULT_TABLE_QUOTA:,})"
    )


def is_table_name(name: object) -> bool:
    """Whether ``name`` is a name DynamoDB allows for a table or an index."""
    return isinstance(name, str) and 3 <= len(name) <= 255 and set(name) <= NAME_CHARS


def table_of_arn(arn: object) -> str | None:
    """The table a DynamoDB ARN names (``arn:<partition>:dynamodb:<region>:<account>:table/
    <NAME>``, or one of the table's own resources under it); None when ``arn`` names none."""
    if not isinstance(arn, str):
        return None
    head, sep, rest = arn.partition(":table/")
    name = rest.split("/", 1)[0]
    sound = head.startswith("arn:") and head.split(":")[2:3] == ["dynamodb"]
    return name if sep and sound and is_table_name(name) else None


def resource_id(table: str, index: str | None) -> str:
    """Application Auto Scaling's ResourceId of a table or one of its GSIs."""
    return f"table/{table}" if index is None else f"table/{table}/index/{index}"


def scalable_dimension(index: str | None, dimension: str) -> str:
    kind = "table" if index is None else "index"
    return f"dynamodb:{kind}:{UNITS[dimension]}"


def scope_label(index: str | None) -> str:
    """How tags name the table itself or one of its GSIs: ``table`` or ``index/NAME``."""
    return "table" if index is None else f"index/{index}"


def scope_of(sort_key: str) -> tuple[str | None, str] | None:
    """The (index, dimension) a state store item's sort key ``<table|index/NAME>:<read|write>``
    names (`scope_label`'s, then the dimension); None for any other."""
    scope, _, dimension = sort_key.rpartition(":")
    if dimension not in DIMENSIONS:
        return None
    if scope == "table":
        return None, dimension
    if scope.startswith("index/") and len(scope) > len("index/"):
        return scope[len("index/") :], dimension
    return None
