"""A small IAM policy evaluator for synthesized templates.

No maintained Python library evaluates identity policies offline (AWS's own simulator is an
API call), so this one covers what the library's templates use and fails loudly on anything
else: Allow and Deny statements, Action and Resource with IAM wildcards (``*`` and ``?``,
actions case-insensitive), and the condition operators StringEquals, StringLike,
StringNotEquals, ArnLike, ArnEquals, ForAllValues:StringLike, ForAnyValue:StringEquals,
StringEqualsIfExists and Null, with IAM's rules for missing keys and for multi-valued keys. Templates' intrinsic
functions are resolved with each resource's logical id as its physical name.

A request is allowed when an Allow statement matches and no Deny does (identity policies
only: no SCPs, boundaries or resource policies, which the library never relies on).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

PARTITION, REGION, ACCOUNT = "aws", "us-east-1", "111111111111"


class Unsupported(ValueError):
    """Something in a policy this evaluator does not know; the test must not guess."""


def _arn(kind: str, logical: str, region: str = REGION) -> str:
    arns = {
        "AWS::DynamoDB::Table": f"arn:{PARTITION}:dynamodb:{region}:{ACCOUNT}:table/{logical}",
        "AWS::DynamoDB::GlobalTable": f"arn:{PARTITION}:dynamodb:{region}:{ACCOUNT}:table/{logical}",
        "AWS::Lambda::Function": f"arn:{PARTITION}:lambda:{region}:{ACCOUNT}:function:{logical}",
        "AWS::SQS::Queue": f"arn:{PARTITION}:sqs:{region}:{ACCOUNT}:{logical}",
        "AWS::Logs::LogGroup": f"arn:{PARTITION}:logs:{region}:{ACCOUNT}:log-group:{logical}:*",
        "AWS::IAM::Role": f"arn:{PARTITION}:iam::{ACCOUNT}:role/{logical}",
        "AWS::SNS::Topic": f"arn:{PARTITION}:sns:{region}:{ACCOUNT}:{logical}",
        "AWS::KMS::Key": f"arn:{PARTITION}:kms:{region}:{ACCOUNT}:key/{logical}",
    }
    if kind not in arns:
        raise Unsupported(f"no ARN for {kind} {logical}")
    return arns[kind]


class Template:
    """A synthesized template with its intrinsic functions resolvable, deployed in
    ``region``."""

    def __init__(self, template: Mapping[str, Any], region: str = REGION) -> None:
        self.resources: Mapping[str, Any] = template["Resources"]
        self.region = region

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if set(value) == {"Ref"}:
            ref = value["Ref"]
            pseudo = {
                "AWS::Partition": PARTITION,
                "AWS::Region": self.region,
                "AWS::AccountId": ACCOUNT,
                "AWS::URLSuffix": "amazonaws.com",
            }
            if ref in pseudo:
                return pseudo[ref]
            if ref in self.resources:
                return ref
            raise Unsupported(f"Ref to {ref}")
        if set(value) == {"Fn::GetAtt"}:
            logical, attribute = value["Fn::GetAtt"]
            if attribute != "Arn":
                raise Unsupported(f"Fn::GetAtt {logical}.{attribute}")
            return _arn(self.resources[logical]["Type"], logical, self.region)
        if set(value) == {"Fn::Join"}:
            separator, parts = value["Fn::Join"]
            return separator.join(str(p) for p in self.resolve(parts))
        if any(k.startswith("Fn::") for k in value):
            raise Unsupported(f"intrinsic {sorted(value)}")
        return {k: self.resolve(v) for k, v in value.items()}

    def of_type(self, kind: str) -> dict[str, Mapping[str, Any]]:
        return {k: r for k, r in self.resources.items() if r["Type"] == kind}

    def tags(self, logical: str) -> dict[str, str]:
        """A resource's tags, resolved."""
        raw = self.resources[logical].get("Properties", {}).get("Tags", [])
        return {t["Key"]: t["Value"] for t in self.resolve(raw)}

    def statements_of(self, role: str) -> list[dict[str, Any]]:
        """Every statement of every policy attached to the role ``role`` (a logical id):
        its inline policies, customer-managed policies and the AWS::IAM::Policy resources
        that name it. An AWS managed policy fails: its text is not in the template."""
        props = self.resources[role].get("Properties", {})
        if props.get("ManagedPolicyArns"):
            attached = self.resolve(props["ManagedPolicyArns"])
            if any(":iam::aws:policy/" in arn for arn in attached):
                raise Unsupported(f"{role} has an AWS managed policy: {attached}")
        documents = [p["PolicyDocument"] for p in props.get("Policies", [])]
        for kind in ("AWS::IAM::ManagedPolicy", "AWS::IAM::Policy"):
            for resource in self.of_type(kind).values():
                policy = resource["Properties"]
                if {"Ref": role} in policy.get("Roles", []):
                    documents.append(policy["PolicyDocument"])
        statements: list[dict[str, Any]] = []
        for document in documents:
            for statement in self.resolve(document)["Statement"]:
                for unsupported in ("NotAction", "NotResource", "NotPrincipal"):
                    if unsupported in statement:
                        raise Unsupported(f"{role}: {unsupported}")
                statements.append(statement)
        return statements


@dataclass(frozen=True)
class Request:
    """One API call: the action, the resource's ARN and the request context."""

    action: str
    resource: str
    context: Mapping[str, str | Sequence[str]] = field(default_factory=dict)


def _pattern(glob: str, *, ignore_case: bool = False) -> re.Pattern[str]:
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in glob)
    return re.compile(f"^{body}$", re.IGNORECASE if ignore_case else 0)


def _listed(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def _condition_holds(operator: str, key: str, wanted: Any, context: Mapping[str, Any]) -> bool:
    wanted_values = [str(v) for v in _listed(wanted)]
    present = key in context
    values = [str(v) for v in _listed(context[key])] if present else []
    if operator == "Null":
        (flag,) = wanted_values
        return (not present) if flag == "true" else present
    if operator == "ForAllValues:StringLike":
        return all(any(_pattern(w).match(v) for w in wanted_values) for v in values)
    if operator == "ForAllValues:StringEquals":  # true with no value at all, as in IAM
        return all(v in wanted_values for v in values)
    if operator == "ForAnyValue:StringEquals":
        return any(v in wanted_values for v in values)
    if operator == "StringEqualsIfExists":
        return not present or (len(values) == 1 and values[0] in wanted_values)
    if not present:
        return operator == "StringNotEquals"  # a missing key matches only negated operators
    if len(values) != 1:
        raise Unsupported(f"{operator} on the multi-valued key {key}")
    (value,) = values
    if operator == "StringEquals" or operator == "ArnEquals":
        return value in wanted_values
    if operator == "StringNotEquals":
        return value not in wanted_values
    if operator in ("StringLike", "ArnLike"):
        return any(_pattern(w).match(value) for w in wanted_values)
    raise Unsupported(f"condition operator {operator}")


def _matches(statement: Mapping[str, Any], request: Request) -> bool:
    if not any(
        _pattern(a, ignore_case=True).match(request.action) for a in _listed(statement["Action"])
    ):
        return False
    if not any(_pattern(r).match(request.resource) for r in _listed(statement["Resource"])):
        return False
    for operator, pairs in statement.get("Condition", {}).items():
        for key, wanted in pairs.items():
            if not _condition_holds(operator, key, wanted, request.context):
                return False
    return True


def allowed(statements: Sequence[Mapping[str, Any]], request: Request) -> bool:
    """IAM's answer for identity policies: an explicit Deny wins, then any Allow."""
    matching = [s for s in statements if _matches(s, request)]
    if any(s["Effect"] == "Deny" for s in matching):
        return False
    return any(s["Effect"] == "Allow" for s in matching)
