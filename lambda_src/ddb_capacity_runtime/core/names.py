"""How DynamoDB, Application Auto Scaling and this library name things: dimensions,
resource ids, scalable dimensions and the library's table tags."""

from __future__ import annotations

DIMENSIONS = ("read", "write")
UNITS = {"read": "ReadCapacityUnits", "write": "WriteCapacityUnits"}
#: DynamoDB's default quota of read (and of write) capacity units per table.
TABLE_QUOTA = 40_000
#: Every tag this library reads or writes on a table starts with this prefix.
TAG_PREFIX = "ddb-capacity:"
BASE_MIN_TAG = f"{TAG_PREFIX}base-min:"
#: The autopilot's plan of floors, kept between ticks (core.floorplan).
FORECAST_TAG = f"{TAG_PREFIX}forecast:"
#: The tag keys the scaler writes on tables.
SCALER_TAGS = (BASE_MIN_TAG, FORECAST_TAG)
#: The tag on a scalable target that this library may move: its value is the table's name.
#: The constructs put it on every target they create; the library's roles may call
#: RegisterScalableTarget only on targets that carry it (with one of their tables' names).
TARGET_TAG = f"{TAG_PREFIX}table"


def resource_id(table: str, index: str | None) -> str:
    """Application Auto Scaling's ResourceId of a table or one of its GSIs."""
    return f"table/{table}" if index is None else f"table/{table}/index/{index}"


def scalable_dimension(index: str | None, dimension: str) -> str:
    kind = "table" if index is None else "index"
    return f"dynamodb:{kind}:{UNITS[dimension]}"


def scope_label(index: str | None) -> str:
    """How tags name the table itself or one of its GSIs: ``table`` or ``index/NAME``."""
    return "table" if index is None else f"index/{index}"


def base_min_tag(index: str | None, dimension: str) -> str:
    """The table tag that remembers a minimum while the scaler or a capacity request holds
    it raised (the target's MinCapacity; without a target, the provisioned capacity)."""
    return f"{BASE_MIN_TAG}{scope_label(index)}:{dimension}"


def forecast_tag(index: str | None, dimension: str) -> str:
    """The table tag that keeps the autopilot's plan of floors for one dimension."""
    return f"{FORECAST_TAG}{scope_label(index)}:{dimension}"
