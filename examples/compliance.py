"""What the example apps decide about encryption, written where checkov reads it."""

from __future__ import annotations

import jsii
from aws_cdk import IAspect
from aws_cdk import aws_dynamodb as dynamodb
from constructs import IConstruct

from constructs_pkg import skip_checkov

REASON = (
    "Encrypted at rest with DynamoDB's AWS owned key: this example's data needs no key policy "
    "of its own, and a customer managed key costs $1 a month plus requests."
)


@jsii.implements(IAspect)
class AwsOwnedKeys:
    """The examples' tables use DynamoDB's AWS owned key, their owners' choice: each table
    without a reason of its own gets this one for checkov's CKV_AWS_119. Add it with
    ``Aspects.of(stack).add(AwsOwnedKeys())``."""

    def visit(self, node: IConstruct) -> None:
        if not isinstance(node, dynamodb.CfnTable):
            return
        skips = (node.get_metadata("checkov") or {}).get("skip", [])
        if not any(s["id"] == "CKV_AWS_119" for s in skips):
            skip_checkov(node, "CKV_AWS_119", REASON)
