"""The application function the instrumentation construct is given in its tests."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_


def _app_function(
    stack: cdk.Stack,
    runtime: lambda_.Runtime = lambda_.Runtime.PYTHON_3_12,
    name: str = "App",
    module: str = "index",
) -> lambda_.Function:
    return lambda_.Function(
        stack,
        name,
        runtime=runtime,
        handler=f"{module}.handler",
        code=lambda_.Code.from_inline("def handler(e, c): pass"),
    )
