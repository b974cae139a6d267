"""The scaler's Lambda asset, built and measured as the tests of assets and of the README's
figures read it."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

SCALER = "ddb_capacity_runtime.scaler.handler.lambda_handler"


def zipped_size(folder: Path) -> int:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder))
    return len(buffer.getvalue())
