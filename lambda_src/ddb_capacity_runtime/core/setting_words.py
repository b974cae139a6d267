"""Runs in: workstation (the docs' settings table); never in a Lambda function.

The words of the scaler's settings contract (`settings.SETTINGS`), for the docs' settings
table (``ddb_capacity_tools.settings_table``): each setting's unit, what it may hold in words
and what it does, by its field (`Setting.key`). Apart from the contract so that the
functions' assets, which import the contract, do not carry the docs' words."""

from __future__ import annotations

from dataclasses import dataclass

from .modes import SCALE_DOWN_MINUTES
from .setting_values import MAX_REPLICA_REGIONS
from .settings import MAX_LEGACY_STATE_DAYS


@dataclass(frozen=True)
class Words:
    """What one setting is, in words."""

    doc: str
    """what the setting does, in one line"""
    unit: str = ""
    """what a number counts (minutes, percent, capacity units); empty: not a number"""
    allowed: str = ""
    """what a TEXT, OPTIONAL or JSON variable may hold (every other kind's is said from its
    kind and range)"""


WORDS: dict[str, Words] = {
    "table_quota": Words(
        doc="the account's per-table quota: the largest capacity read, remembered or set "
        "(`table_quota` of the constructs; [The largest "
        "capacity](../operations/state-store.md#the-largest-capacity))",
        unit="capacity units",
    ),
    "tag_key": Words(
        doc="the tag key of tag discovery (none: no discovery); this or `SCALER_TABLES` must "
        "be set",
        allowed="a tag key (empty: none)",
    ),
    "tag_value": Words(
        doc="the value of that tag a table must carry to be discovered", allowed="any text"
    ),
    "dry_run": Words(doc="decide and log, change nothing"),
    "tick_minutes": Words(
        doc="minutes between ticks; one default for the Lambda, the construct and the simulator",
        unit="minutes",
    ),
    "mode": Words(
        doc="`autopilot` (see [Autopilot](autopilot.md)) or `reactive` (the scaling policy "
        "alone: raises for any throttle since the last raise, slow decreases, no forecast)"
    ),
    "scale_down_ticks": Words(
        doc=f"ticks of low consumption a decrease needs (reactive: {SCALE_DOWN_MINUTES} "
        "minutes, rounded up to whole ticks)",
        unit="ticks",
    ),
    "namespace": Words(doc="the namespace of the scaler's own metrics"),
    "tables": Words(doc="the tables managed explicitly"),
    "overrides": Words(
        doc='per-table limits, e.g. `{"orders": {"min": 5, "max": 900, "target": 60, '
        '"write": {"min": 20}}}`; they win over the table\'s tags',
        allowed="a JSON object of table name to `min`, `max`, `target`, `read`, `write`",
    ),
    "owned_targets": Words(
        doc="the target-tracking policies whose target value the autopilot owns, and the "
        "value it sets back when no plan is in force ([Owning the target "
        "value](autopilot.md#owning-the-target-value)); `ThrottleAwareScaler(own_target=True)` "
        "writes it",
        allowed="a JSON object of table name to `read`, `write` (target values, 20 to 90) and "
        "`indexes` (index name to `read`, `write`); autopilot mode only",
    ),
    "replicas": Words(
        doc="a global table's replica managed here, and its other replicas' Regions, whose "
        "write metrics its writes are decided on too ([Global "
        "tables](global-tables.md#the-throttle-aware-scaler)); `ThrottleAwareScaler` writes it "
        "for a replica it manages",
        allowed=f"a JSON object of table name to `regions`: a list of up to "
        f"{MAX_REPLICA_REGIONS} distinct Region names",
    ),
    "tuned_targets": Words(
        doc="an owned dimension aims at the target value the [nightly "
        "tuning](nightly-tuning.md) loop keeps for it in the state store (`tuned`), where "
        "there is one, in place of its configured one; `NightlyTuning` writes it"
    ),
    "tuned_allowed": Words(
        doc="the target values the nightly tuning loop may set (its `allowed_targets`; none: "
        "any from 20 to 90): a tuned value outside them is refused, and the dimension aims at "
        "its configured one; `NightlyTuning` writes it",
        unit="percent",
    ),
    "default_min": Words(
        doc="the least capacity of a dimension without a scalable target", unit="capacity units"
    ),
    "default_max": Words(
        doc="the most capacity of a dimension without a scalable target", unit="capacity units"
    ),
    "target": Words(doc="the target utilization", unit="percent"),
    "buffer": Words(doc="a decrease needs consumption below the target less this", unit="percent"),
    "hysteresis_minutes": Words(doc="no decrease this soon after an increase", unit="minutes"),
    "min_step_percent": Words(
        doc="the smallest raise while throttled, of the capacity", unit="percent"
    ),
    "min_step_units": Words(
        doc="the smallest raise while throttled, in units", unit="capacity units"
    ),
    "units_per_throttled_request": Words(
        doc="the capacity units a refused request would have used", unit="capacity units"
    ),
    "min_saving_percent": Words(doc="a decrease must save at least this", unit="percent"),
    "reserve_decreases": Words(doc="decreases kept for the rest of the day", unit="decreases"),
    "large_saving_percent": Words(
        doc="the saving that may spend the decreases kept", unit="percent"
    ),
    "window_minutes": Words(doc="the minutes of metrics a tick decides on", unit="minutes"),
    "metric_lag_minutes": Words(
        doc="the newest minutes, which CloudWatch may not have finished: read for raises as "
        "soon as delivered, never for decreases",
        unit="minutes",
    ),
    "shard_above_tables": Words(
        doc="with a batch queue (`CAPACITY_BATCH_QUEUE_URL`, which "
        "`ThrottleAwareScaler(sharded=True)` sets), a tick that finds more tables than this is "
        "sent as batches ([Fleet scale](fleet-scale.md))",
        unit="tables",
    ),
    "tables_per_batch": Words(doc="the tables of one batch of a sharded tick", unit="tables"),
    "reserved_read_units": Words(
        doc="the Region's reserved read capacity: no decrease takes the provisioned reads of "
        "the tables the tick decides below it ([Reserved capacity](scaler.md#reserved-capacity)); "
        "0: none",
        unit="read capacity units",
    ),
    "reserved_write_units": Words(
        doc="the Region's reserved write capacity, as the read one; 0: none",
        unit="write capacity units",
    ),
    "read_legacy_state_until": Words(
        doc="the last UTC day on which 0.4's state tags are read (an upgrade's window, at most "
        f"{MAX_LEGACY_STATE_DAYS} days ahead; `ThrottleAwareScaler(read_legacy_state_until=...)` "
        "writes it); none: they are removed unread"
    ),
}
"""Each setting's words, by its field (every setting of `settings.SETTINGS`, no other)."""
