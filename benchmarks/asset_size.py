"""The scaler function's asset size, zipped as the CDK zips it, measured in one run.

Stages the scaler's asset as the constructs stage it (`constructs_pkg.common._runtime.staged_asset`:
the run-time modules its handler imports, docstrings and comments stripped, the modules of
`constructs_pkg.common._runtime.COMPILED_MODULES` with their bytecode) and zips it with deflate, as
``tests/common/test_assets.py`` does. Printed: the asset zipped, its source alone zipped, the
bytecode it holds (unzipped), and the whole run-time package's source zipped (what every
function would carry without the per-handler assets).

Usage:
    .venv/bin/python -m benchmarks.asset_size
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from constructs_pkg.common._runtime import RUNTIME_PACKAGE, staged_asset

SCALER = "ddb_capacity_runtime.scaler.handler.lambda_handler"


def zipped(root: Path, only_source: bool = False) -> int:
    """Bytes of ``root``'s files (its ``.py`` files only with ``only_source``) zipped."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*")):
            if path.is_file() and (not only_source or path.suffix == ".py"):
                archive.write(path, path.relative_to(root))
    return len(buffer.getvalue())


def main() -> None:
    asset = staged_asset(SCALER)
    bytecode = sum(p.stat().st_size for p in asset.rglob("*.pyc"))
    print(f"scaler asset zipped:           {zipped(asset):>8,} bytes")
    print(f"  its source alone zipped:     {zipped(asset, only_source=True):>8,} bytes")
    print(f"  its bytecode, unzipped:      {bytecode:>8,} bytes")
    package = zipped(RUNTIME_PACKAGE, only_source=True)
    print(f"whole run-time package zipped: {package:>8,} bytes (source)")


if __name__ == "__main__":
    main()
