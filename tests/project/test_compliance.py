"""Acknowledging a finding or skipping a checkov check: a reason is required, and a refusal
is the library's own `CapacityConfigError` (a `ValueError`), as every refused prop is."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from constructs_pkg.common._compliance import acknowledge, apply_nag_packs, skip_checkov
from ddb_capacity_runtime.core.errors import CapacityConfigError


def test_an_acknowledgement_without_a_reason_is_refused(stack: cdk.Stack) -> None:
    queue = sqs.Queue(stack, "Queue")
    with pytest.raises(CapacityConfigError, match="finding 'AwsSolutions-SQS3' needs a reason"):
        acknowledge(queue, "AwsSolutions-SQS3", "  ")


def test_a_checkov_skip_without_a_reason_is_refused(stack: cdk.Stack) -> None:
    queue = sqs.Queue(stack, "Queue")
    with pytest.raises(CapacityConfigError, match="check 'CKV_AWS_27' needs a reason"):
        skip_checkov(queue, "CKV_AWS_27", "")


def test_a_checkov_skip_on_a_construct_without_a_resource_is_refused(stack: cdk.Stack) -> None:
    with pytest.raises(CapacityConfigError, match="Test/Empty has no CloudFormation resource"):
        skip_checkov(Construct(stack, "Empty"), "CKV_AWS_27", "the reason under test")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: acknowledge("Queue", "AwsSolutions-SQS3", "why"),  # type: ignore[arg-type]
            "acknowledge: construct: got 'Queue'; expected a construct (a resource, a stack, "
            "the app)",
        ),
        (
            lambda: skip_checkov(None, "CKV_AWS_27", "why"),  # type: ignore[arg-type]
            "skip_checkov: construct: got None; expected a construct (a resource, a stack, "
            "the app)",
        ),
        (
            lambda: apply_nag_packs("app"),  # type: ignore[arg-type]
            "apply_nag_packs: scope: got 'app'; expected a construct (a resource, a stack, "
            "the app)",
        ),
    ],
    ids=["acknowledge", "skip_checkov", "apply_nag_packs"],
)
def test_a_construct_that_is_not_one_is_refused(call: Any, message: str) -> None:
    # WHEN something else is given where a construct is expected THEN it is refused, named
    with pytest.raises(CapacityConfigError) as caught:
        call()
    assert str(caught.value) == message


def test_a_reason_that_is_not_text_is_refused(stack: cdk.Stack) -> None:
    queue = sqs.Queue(stack, "Queue")
    with pytest.raises(CapacityConfigError, match="finding 'AwsSolutions-SQS3' needs a reason"):
        acknowledge(queue, "AwsSolutions-SQS3", None)  # type: ignore[arg-type]
    with pytest.raises(CapacityConfigError, match="check 'CKV_AWS_27' needs a reason"):
        skip_checkov(queue, "CKV_AWS_27", None)  # type: ignore[arg-type]


def test_a_reasoned_checkov_skip_is_written_to_the_resource(stack: cdk.Stack) -> None:
    queue = sqs.Queue(stack, "Queue")
    skip_checkov(queue, "CKV_AWS_27", "the reason under test")
    resource = queue.node.default_child
    assert isinstance(resource, cdk.CfnResource)
    assert resource.get_metadata("checkov") == {
        "skip": [{"id": "CKV_AWS_27", "comment": "the reason under test"}]
    }
