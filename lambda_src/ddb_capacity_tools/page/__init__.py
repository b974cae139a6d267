"""Runs in: workstation (the `ddb-capacity` command), advisor Lambdas.

The report page: one self-contained HTML file per answer (``--html FILE`` on ``simulate``,
``backtest``, ``tune`` and ``advise``) and the fleet page of ``advise --all-tables
--report`` and the nightly advisor. Charts are drawn in the browser by a small script
inlined in the page (``page.js``) from the page's own JSON: no plotting library, no CDN, no
server. Every name is escaped (`document`)."""

from __future__ import annotations

from .document import HtmlError, check_path, write
from .fleet_page import TABLE_PAGES, fleet_page, page_name, table_pages
from .pages import run_page, table_page, tune_page

__all__ = [
    "TABLE_PAGES",
    "HtmlError",
    "check_path",
    "fleet_page",
    "page_name",
    "run_page",
    "table_page",
    "table_pages",
    "tune_page",
    "write",
]
