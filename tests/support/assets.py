"""Runs in: tests. The scaler's Lambda asset, measured as the tests of assets and of the
docs' figures read it: the one measure is `benchmarks.asset_size`'s (deflate, as the CDK
zips an asset), so what the benchmark prints and what the tests hold are the same bytes."""

from __future__ import annotations

from benchmarks.asset_size import SCALER
from benchmarks.asset_size import zipped as zipped_size

__all__ = ["SCALER", "zipped_size"]
