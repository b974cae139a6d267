"""Runs in: workstation (the `ddb-capacity` command).

Fixed-width text tables, as every simulator command prints them, and the progress bar of
those that count what they have done."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO


def fixed_width(rows: Sequence[Sequence[str]], left: int = 2) -> list[str]:
    """``rows`` (the header first) as lines: the first ``left`` columns left-aligned, the
    others right-aligned, a rule under the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        lines.append(
            "  ".join(
                cell.ljust(widths[i]) if i < left else cell.rjust(widths[i])
                for i, cell in enumerate(row)
            ).rstrip()
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def bar(out: TextIO | None, command: str, done: int, total: int, what: str, label: str) -> None:
    """A progress bar on ``out`` (a terminal's stderr), redrawn in place: ``command`` has
    done ``done`` of ``total`` ``what`` (tables, runs); ``label`` the one begun or done. A
    new line once all are done. Nothing when ``out`` is None or there is nothing to do."""
    if out is None or not total:
        return
    width = 30
    filled = "#" * (width * done // total)
    out.write(f"\r{command} [{filled:<{width}}] {done}/{total} {what} {label:<43}")
    if done == total:
        out.write("\n")
    out.flush()
