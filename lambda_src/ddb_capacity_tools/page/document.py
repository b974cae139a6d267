"""Runs in: workstation (the `ddb-capacity` command), advisor report Lambda.

The one way a report page is put together: every untrusted value (table and index names,
trace names, reasons, policies) goes through `text` into HTML or through
`data_block` into the page's JSON, and the page's style and script
(``page.css``, ``page.js``, in this package) are inlined: the file opens offline, with no
server, no CDN and no web font.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..tool_errors import HtmlError as HtmlError

__all__ = [
    "HtmlError",
    "Markup",
    "bar",
    "link",
    "check_path",
    "data_block",
    "document",
    "figure",
    "money",
    "table",
    "text",
    "write",
]

OPTION = "--html"
"""The ``--html`` option's name, in its errors."""


class Markup(str):
    """HTML made here from escaped parts (`link`, `bar`): `text` and
    `table` leave it as it is."""


def text(value: object) -> str:
    """``value`` as HTML text or an attribute's value: ``& < > " '`` escaped (a
    `Markup` is already HTML)."""
    if isinstance(value, Markup):
        return value
    return html.escape(value if isinstance(value, str) else str(value), quote=True)


def link(href: str, label: str) -> Markup:
    """A link; ``href`` is percent-encoded (bar ``/``) and both are escaped."""
    return Markup(f'<a href="{text(quote(href))}">{text(label)}</a>')


def bar(label: str, share: float) -> Markup:
    """``label`` and a bar ``share`` (-1 to 1) of the column's width; red below 0."""
    width = f"{min(1.0, abs(share)) * 90:.1f}"
    loss = " loss" if share < 0 else ""
    return Markup(f'{text(label)}<span class="bar{loss}" style="width:{width}px"></span>')


def data_block(doc: Any, element_id: str = "page-data") -> str:
    """``doc`` as a ``<script type="application/json">`` block. ``<``, ``>`` and ``&`` are
    written as ``\\u003c``, ``\\u003e``, ``\\u0026`` (and every non-ASCII character
    escaped), so no value can end the block or open a tag; non-finite numbers are
    refused."""
    body = json.dumps(doc, separators=(",", ":"), allow_nan=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        body = body.replace(char, escaped)
    return f'<script type="application/json" id="{text(element_id)}">{body}</script>'


@cache
def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def document(title: str, body: str, data: Mapping[str, Any] | None = None) -> str:
    """A whole page: ``title`` (text, escaped here), ``body`` (HTML made with
    `text`), ``data`` for the charts (`data_block`), the style and the script
    inline."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{text(title)}</title><style>{_asset('page.css')}</style></head>"
        f"<body><main>{body}"
        "<footer>Written by ddb-capacity (cdk-dynamodb-capacity). Self-contained: it opens "
        "offline.</footer></main>"
        f"{data_block(dict(data or {'charts': {}}))}"
        f"<script>{_asset('page.js')}</script></body></html>\n"
    )


def money(value: float | None) -> str:
    """Dollars as text; None is ``unknown``."""
    if value is None:
        return "unknown"
    return f"-${-value:,.2f}" if value < 0 else f"${value:,.2f}"


def figure(caption: str, value: str, tone: str = "") -> str:
    """One headline figure (caption and value are text, escaped here)."""
    tone_class = f' class="{text(tone)}"' if tone else ""
    return f'<div class="figure">{text(caption)}<b{tone_class}>{text(value)}</b></div>'


def table(
    header: Iterable[tuple[str, bool]],
    rows: Iterable[Iterable[tuple[object, float | None]]],
    attrs: str = 'class="sortable"',
    row_attrs: Iterable[str] | None = None,
) -> str:
    """An HTML table. ``header``: (label, numeric) per column; each row's cells:
    (shown, sort key) where a numeric column sorts by the key (None: unknown, last).
    Every label and cell is escaped here; ``attrs`` and ``row_attrs`` are the caller's
    own markup."""
    heads = list(header)
    head = "".join(f"<th{' class=n' if n else ''}>{text(h)}</th>" for h, n in heads)
    extra = iter(row_attrs or ())
    out = []
    for row in rows:
        cells = []
        for (shown, key), (_, numeric) in zip(row, heads, strict=True):
            if numeric:
                sort = "" if key is None or not math.isfinite(key) else repr(float(key))
                cells.append(f'<td class="n" data-sort="{sort}">{text(shown)}</td>')
            else:
                cells.append(f"<td>{text(shown)}</td>")
        more = next(extra, "")
        out.append(f"<tr{' ' + more if more else ''}>{''.join(cells)}</tr>")
    return f"<table {attrs}><thead><tr>{head}</tr></thead><tbody>{''.join(out)}</tbody></table>"


def check_path(path: str | Path) -> Path:
    """``path`` if a page can go there: a name ending in .html in a folder that exists
    (none is created); checked before any work."""
    path = Path(path)
    if path.suffix.lower() not in (".html", ".htm"):
        raise HtmlError(f"{OPTION}: got {str(path)!r}; expected a file name ending in .html")
    if not path.parent.is_dir():
        raise HtmlError(
            f"{OPTION}: got {str(path)!r}; the folder {str(path.parent)!r} does not exist "
            "(create it first)"
        )
    return path


def write(path: str | Path, page: str) -> Path:
    """Write ``page`` to ``path`` (checked by
    [`check_path`][ddb_capacity_tools.page.check_path])."""
    path = check_path(path)
    try:
        path.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise HtmlError(f"{OPTION}: cannot write {str(path)!r}: {exc.strerror}") from None
    return path
