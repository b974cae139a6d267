"""A shell block of the docs, run as the reader would run it."""

from __future__ import annotations

import contextlib
import io
import runpy
from pathlib import Path


def run_block(code: str, tmp_path: Path) -> str:
    """Run ``code``, a page's python block saved as ``tmp_path / "app.py"``, as a script in
    this process (one CDK toolkit for every block, none started for each); returns what it
    printed. The cloud assembly of the app it makes is ``tmp_path / "cdk.out"``."""
    script = tmp_path / "app.py"
    script.write_text(code)
    printed = io.StringIO()
    with contextlib.chdir(tmp_path), contextlib.redirect_stdout(printed):
        names = runpy.run_path(str(script), run_name="__main__")
    if "app" in names:
        (tmp_path / "cdk.out").symlink_to(names["app"].outdir)
    return printed.getvalue()
