"""The scaler Lambda's entry point: read the configuration, run one tick, report."""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ..aws.clients import make_clients
from ..core.settings import ScalerConfig
from ..events import log_event
from .tick import run_tick


def lambda_handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """AWS Lambda entry point: a bad configuration fails the invocation with its message."""
    config = ScalerConfig.from_env(os.environ)
    summary = run_tick(config, make_clients(), datetime.now(UTC))
    log_event(
        "tick-done",
        tables=summary["tables"],
        dimensions=summary["dimensions"],
        changes=summary["changes"],
        failed=summary["failed"],
        skipped=summary["skipped"],
        dry_run=summary["dry_run"],
    )
    return summary
