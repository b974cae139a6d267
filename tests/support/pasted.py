"""The construct code ``tune`` and ``advise`` print, run as pasted into a CDK app."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk.assertions import Template

from constructs_pkg import (
    EVERY_DAY,
    Capacity,
    CapacityRequests,
    FastPath,
    PrewarmMethod,
    ProvisionedTable,
    ThrottleAwareScaler,
)

KEY = "dynamodb.Attribute(name='pk', type=dynamodb.AttributeType.STRING)"
"""The partition key put in place of the code's ``partition_key=...``."""


def synthesized_stack(code: str) -> Template:
    """The template of a stack made by running ``code`` as pasted into the README's quick
    start (its stack ``stack``; ``Duration`` from aws_cdk and ``EVERY_DAY`` from the
    library imported), a real partition key in place of ``...``; the app's checks run."""
    app = cdk.App()
    stack = cdk.Stack(app, "Pasted")
    names = {
        "stack": stack,
        "dynamodb": dynamodb,
        "Duration": cdk.Duration,
        "EVERY_DAY": EVERY_DAY,
        "ProvisionedTable": ProvisionedTable,
        "Capacity": Capacity,
        "ThrottleAwareScaler": ThrottleAwareScaler,
        "CapacityRequests": CapacityRequests,
        "FastPath": FastPath,
        "PrewarmMethod": PrewarmMethod,
    }
    exec(
        compile(code.replace("partition_key=...", f"partition_key={KEY}"), "pasted", "exec"), names
    )
    return Template.from_stack(stack)
