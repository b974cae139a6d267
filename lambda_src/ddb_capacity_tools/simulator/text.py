"""Runs in: workstation (the `ddb-capacity` command).

Fixed-width text tables, as every simulator command prints them."""

from __future__ import annotations

from collections.abc import Sequence


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
