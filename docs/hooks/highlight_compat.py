"""Build hook: lets mkdocstrings 0.x render code with pymdown-extensions 13 or later.

pymdown-extensions 13 made ``Highlight(md, ...)`` take the Markdown instance; mkdocstrings
before 1.0 builds its highlighter without it and fails on the first ``:::`` block. This
passes the instance through. It does nothing when mkdocstrings already passes it (1.0 and
later) or when pymdown-extensions does not ask for it.
"""

from __future__ import annotations

import inspect
from typing import Any

from pymdownx.highlight import Highlight


def _patch() -> None:
    if "md" not in inspect.signature(Highlight).parameters:
        return
    from mkdocstrings._internal.handlers import rendering

    original = rendering.Highlighter.__init__
    if "signature(Highlight)" in inspect.getsource(original):
        return

    def init(self: Any, md: Any) -> None:
        base = Highlight.__init__

        def with_md(inner: Any, *args: Any, **kwargs: Any) -> None:
            if not args and "md" not in kwargs:
                kwargs["md"] = md
            base(inner, *args, **kwargs)

        Highlight.__init__ = with_md  # type: ignore[method-assign]
        try:
            original(self, md)
        finally:
            Highlight.__init__ = base  # type: ignore[method-assign]

    rendering.Highlighter.__init__ = init  # type: ignore[method-assign]


def on_startup(**kwargs: Any) -> None:
    _patch()
