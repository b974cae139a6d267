"""The reason the scaler gives for units it cannot set."""

from __future__ import annotations

UNITS_REASON = "expected a whole number of capacity units from 1 to 40000"
