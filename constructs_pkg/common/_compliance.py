"""Runs in: CDK app (synth time).

cdk-nag packs and exact acknowledgements.

``apply_nag_packs(app)`` adds the five packs the project is held to. ``acknowledge``
records one finding on one construct with its reason; it never acknowledges a rule
stack-wide. ``skip_checkov`` writes a checkov skip, with its reason, into one resource's
template metadata, where checkov and a reviewer reading the template find it.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Acknowledgment, CfnResource, Validations
from constructs import Construct, IConstruct

from ddb_capacity_runtime.core.errors import CapacityConfigError, shown

NAG_PACKS = (
    "AwsSolutionsChecks",
    "ServerlessChecks",
    "HIPAASecurityChecks",
    "NIST80053R5Checks",
    "PCIDSS321Checks",
)
"""The packs `apply_nag_packs` adds, by their class names in ``cdk_nag``."""


def apply_nag_packs(scope: IConstruct) -> None:
    """Validate everything under ``scope`` with AwsSolutions, Serverless, HIPAA Security,
    NIST 800-53 R5 and PCI DSS 3.2.1. An unacknowledged error makes synth fail.

    Needs cdk-nag (``pip install 'cdk-nag>=3,<4'``, what the package's ``[nag]`` extra
    installs); the constructs do not.
    """
    _construct("apply_nag_packs", "scope", scope)
    try:
        import cdk_nag
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            "apply_nag_packs needs cdk-nag: pip install 'cdk-nag>=3,<4' (what the package's "
            "[nag] extra installs)"
        ) from exc
    Validations.of(scope).add_plugins(*(getattr(cdk_nag, pack)(scope) for pack in NAG_PACKS))


def _construct(where: str, name: str, value: object) -> None:
    """Refuse ``value`` unless it is a construct (anything with a ``node.path``), naming
    the function ``where`` and its argument ``name``: jsii's own refusal says neither. A
    ``Construct`` made in Python is one without asking jsii's kernel for its path."""
    if isinstance(value, Construct):
        return
    if not isinstance(getattr(getattr(value, "node", None), "path", None), str):
        raise CapacityConfigError(
            f"{where}: {name}: got {shown(value)}; expected a construct (a resource, a "
            "stack, the app)"
        )


def _reason(where: str, what: str, reason: object) -> None:
    """Refuse a ``reason`` that is not text with something in it."""
    if not isinstance(reason, str) or not reason.strip():
        raise CapacityConfigError(f"{where}: {what} needs a reason; got {shown(reason)}")


def acknowledgment_id(finding: str) -> str:
    """The id a validation plugin matches: ``"<pack>::<finding>"``, e.g.
    ``"AwsSolutions::AwsSolutions-IAM5[Resource::*]"``. Already-qualified ids pass through."""
    rule = finding.split("[", 1)[0]
    if "::" in rule:
        return finding
    pack = rule.split("-", 1)[0]
    return f"{pack}::{finding}"


def acknowledge(construct: IConstruct, finding: str, reason: str) -> None:
    """Acknowledge one finding (``"AwsSolutions-L1"``, ``"AwsSolutions-IAM5[Resource::*]"``)
    on ``construct`` and what it contains, with the reason it is safe."""
    acknowledge_all(construct, {finding: reason})


def acknowledge_all(construct: IConstruct, reasons: Mapping[str, str]) -> None:
    """Acknowledge each finding of ``reasons`` on ``construct`` and what it contains, with
    the reason it is safe (one call into jsii for them all)."""
    _construct("acknowledge", "construct", construct)
    for finding, reason in reasons.items():
        _reason("acknowledge", f"finding {finding!r}", reason)
    Validations.of(construct).acknowledge(
        *(Acknowledgment(id=acknowledgment_id(f), reason=r) for f, r in reasons.items())
    )


def skip_checkov(construct: IConstruct, check_id: str, reason: str) -> None:
    """Skip checkov's ``check_id`` (``"CKV_AWS_117"``) on ``construct``'s CloudFormation
    resource (the construct itself, or its default child), with the reason it is safe:
    ``Metadata.checkov.skip[] = {id, comment}``."""
    _construct("skip_checkov", "construct", construct)
    _reason("skip_checkov", f"check {check_id!r}", reason)
    resource = construct if isinstance(construct, CfnResource) else construct.node.default_child
    if not isinstance(resource, CfnResource):
        raise CapacityConfigError(
            f"skip_checkov: {construct.node.path} has no CloudFormation resource"
        )
    metadata = resource.get_metadata("checkov") or {}
    skips = [s for s in metadata.get("skip", []) if s["id"] != check_id]
    resource.add_metadata("checkov", {"skip": [*skips, {"id": check_id, "comment": reason}]})


LAMBDA_PACKS = ("HIPAA.Security", "NIST.800.53.R5", "PCI.DSS.321")
"""The packs whose Lambda rules the library's functions acknowledge alike."""


def acknowledge_function(
    function: IConstruct,
    concurrency: int | None,
    serverless: dict[str, str],
    per_pack: dict[str, str],
    no_dlq: str,
) -> None:
    """A function's acknowledgements: ``serverless`` (finding: reason), then each rule of
    ``per_pack`` in every pack of `LAMBDA_PACKS`; its reserved concurrency's only
    with one. Checkov's dead-letter check is skipped for ``no_dlq``, its concurrency check
    for the same reason as the packs' without one."""
    reasons = {
        **serverless,
        **{f"{pack}-{rule}": reason for pack in LAMBDA_PACKS for rule, reason in per_pack.items()},
    }
    acknowledge_all(
        function,
        {
            finding: reason
            for finding, reason in reasons.items()
            if concurrency is None or not finding.endswith("LambdaConcurrency")
        },
    )
    skip_checkov(function, "CKV_AWS_116", no_dlq)
    if concurrency is None:
        skip_checkov(function, "CKV_AWS_115", per_pack["LambdaConcurrency"])
