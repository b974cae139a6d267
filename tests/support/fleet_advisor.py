"""The IAM statements of a synthesized fleet stack."""

from __future__ import annotations

from typing import Any

from aws_cdk.assertions import Template


def statements_of(template: Template, role: str) -> dict[str, dict[str, Any]]:
    """The statements (by Sid) of the managed policies attached to ``role`` (a logical id)."""
    out = {}
    for policy in template.find_resources("AWS::IAM::ManagedPolicy").values():
        if {"Ref": role} in policy["Properties"].get("Roles", []):
            for s in policy["Properties"]["PolicyDocument"]["Statement"]:
                out[s["Sid"]] = s
    return out
