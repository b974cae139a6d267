"""Runs in: tests.

Apps in the library's default alarm style. The test session sets the detailed style for
every app (tests/conftest.py), so that each check's alarm can be read on its own; an app of
`summary_app` is set back to the default, summary alarms."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk

from constructs_pkg.common._alarm_summary import ALARMS_CONTEXT


def summary_app(**props: Any) -> cdk.App:
    """An app whose constructs make summary alarms, the library's default."""
    app = cdk.App(**props)
    app.node.set_context(ALARMS_CONTEXT, "summary")
    return app
