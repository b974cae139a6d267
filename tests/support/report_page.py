"""The report pages' parts as the page tests read them: a page's data, a chart's panels,
and an SVG's series."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.support.cli import HistoryTable, a_day_of, history_table  # noqa: F401 (a fixture)


def data_of(html: str) -> dict[str, Any]:
    block = re.search(r'<script type="application/json" id="page-data">(.*?)</script>', html)
    assert block is not None
    parsed: dict[str, Any] = json.loads(block.group(1))
    return parsed


def panels(dom: str, chart: str) -> list[str]:
    """The SVG panels the browser drew inside one chart's holder."""
    start = dom.index(f'data-chart="{chart}"')
    end = dom.find('data-chart="', start + 1)
    return re.findall(
        r"<svg [^>]*class=\"panel[^\"]*\".*?</svg>", dom[start : end if end > 0 else None]
    )


def series(svg: str) -> list[tuple[str, str, int]]:
    return [
        (name, role, int(points))
        for name, role, points in re.findall(
            r'data-series="([^"]*)" data-role="([^"]*)" data-points="(\d+)"', svg
        )
    ]
