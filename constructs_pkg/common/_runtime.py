"""Runs in: CDK app (synth time).

The Lambda side shared by every function this library deploys: the assets (each
function's holds the run-time modules its handler imports; the fleet advisor's functions
have their own, `advisor_code`, with the tools and their pure-Python dependencies), the
one Python runtime they run on (`FUNCTION_PYTHON`, the Python the tests run on), and an
explicit log group; and the state store table the run-time keeps its state in."""

from __future__ import annotations

import atexit
import functools
import importlib
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from aws_cdk import (
    AssetStaging,
    CfnResource,
    Names,
    RemovalPolicy,
    Stack,
    StackSynthesizer,
)
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct

import ddb_capacity_runtime

from ._assets import asset_key, cached_asset, handler_closure, staged_modules
from ._compliance import LAMBDA_PACKS, acknowledge, acknowledge_all, skip_checkov
from ._deploy_limits import check_function, check_policy
from ._function_options import FunctionConfig

RUNTIME_PACKAGE = Path(ddb_capacity_runtime.__file__).resolve().parent
"""The installed run-time package, found through its import, never through the current directory: a
user's own ``lambda_src/`` folder cannot take its place."""

LOG_KEY_REASON = (
    "The log holds table names and capacity numbers only; CloudWatch Logs encrypts it at "
    "rest with its own key, and a KMS key would cost $1 a month per function."
)
"""Why the functions' logs have no KMS key of their own."""
ARCHITECTURE = lambda_.Architecture.ARM_64
"""The architecture of a function whose FunctionOptions name none (`DEFAULT_ARCHITECTURE`)."""
ADVISOR_PACKAGES = ("ddb_capacity_runtime", "ddb_capacity_tools", "cronsim", "tzdata")
"""The advisor asset's packages: the run-time, the tools (the simulator, ``advise``, the fleet
report) and the pure-Python packages the tools import (cronsim for schedules, tzdata for time zones
where the Lambda image has no zoneinfo database). boto3 and botocore come with Lambda's Python
runtime."""


ASSET_METADATA = "aws:cdk:enable-asset-metadata"
"""The context key under which the CDK marks each resource with its asset's folder (the
CLI sets it; SAM's local tools read the marks)."""


class StagedCode(lambda_.Code):
    """The code of a function or layer from a folder, as ``Code.from_asset(folder)`` makes
    it (the same staged asset, the same template, the same metadata) without the S3
    bucket construct that the CDK's asset adds for grants this library never makes:
    loading the CDK's S3 code for it in jsii's kernel, and the Python classes of its
    constructs when the app's tree is walked, was about 0.2 s of every synth of an app
    with a scaler (``benchmarks/synth_time.py``).

    A stack whose synthesizer the app made or wrote in Python (``DefaultStackSynthesizer(
    qualifier=...)``, an App's ``default_stack_synthesizer``, a subclass) gets
    ``Code.from_asset`` itself (`bound_synthesizer`)."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self._folder = str(folder)
        self._asset_path = ""
        self._cdk_code: lambda_.Code | None = None

    def bind(self, scope: Construct) -> lambda_.CodeConfig:
        """Stage the folder under ``scope``/Code and add it to the stack's assets."""
        stack = Stack.of(scope)
        synthesizer = bound_synthesizer(stack)
        if synthesizer is None:
            self._cdk_code = lambda_.Code.from_asset(self._folder)
            return self._cdk_code.bind(scope)
        self._cdk_code = None
        holder = Construct(scope, "Code")
        staging = AssetStaging(holder, "Stage", source_path=self._folder)
        self._asset_path = staging.relative_staged_path(stack)
        location = synthesizer.add_file_asset(
            source_hash=staging.asset_hash,
            file_name=self._asset_path,
            packaging=staging.packaging,
            deploy_time=True,
            display_name=Names.stack_relative_construct_path(holder),
        )
        return lambda_.CodeConfig(
            s3_location=s3.Location(
                bucket_name=location.bucket_name, object_key=location.object_key
            )
        )

    def bind_to_resource(
        self, resource: CfnResource, *, resource_property: str | None = None
    ) -> None:
        """Mark ``resource`` with the asset's folder when the CDK asks for the marks."""
        if self._cdk_code is not None:
            self._cdk_code.bind_to_resource(resource, resource_property=resource_property)
        elif resource.node.try_get_context(ASSET_METADATA):
            resource.add_metadata("aws:asset:path", self._asset_path)
            resource.add_metadata("aws:asset:is-bundled", False)
            resource.add_metadata("aws:asset:property", resource_property or "Code")


def bound_synthesizer(stack: Stack) -> StackSynthesizer | None:
    """``stack``'s synthesizer, one of the CDK's own bound to it, as Python can call it;
    None where Python is handed another object: for a synthesizer made in Python, which the
    stack copies and binds the copy (jsii resolves the copy to the original, never bound:
    calling it fails with ``StackSynthesizerBoundStackFirst``), or one written in Python
    (whose ``add_file_asset`` may take fewer arguments than the CDK passes when it calls
    it through jsii)."""
    synthesizer = stack.synthesizer
    cdks_own = type(synthesizer).__module__.split(".")[0] == "aws_cdk"
    if not (cdks_own and isinstance(synthesizer, StackSynthesizer)):
        return None
    try:
        # aws-cdk-lib's own state (no public way to ask): the stack the synthesizer is bound to
        bound = synthesizer._bound_stack
    except RuntimeError:  # jsii's form of the CDK's error: not bound
        return None
    return synthesizer if bound.node.path == stack.node.path else None


@functools.cache
def staged_advisor() -> Path:
    """A folder holding a copy of `ADVISOR_PACKAGES` and nothing else (no caches),
    each found through its import; removed when the process ends. No Docker: every
    package is pure Python, copied as installed."""
    root = Path(tempfile.mkdtemp(prefix="ddb-capacity-advisor-asset-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    for name in ADVISOR_PACKAGES:
        module = importlib.import_module(name)
        source = Path(str(module.__file__)).resolve().parent
        shutil.copytree(source, root / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return root


def advisor_code() -> lambda_.Code:
    """The fleet advisor's asset: `ADVISOR_PACKAGES` (no aws_cdk, no tests)."""
    return StagedCode(staged_advisor())


HOOK_WRAPPER = "/opt/ddb-capacity-instrument"
"""Where the fast path's exec wrapper sits in a function that has the hook's layer."""


@functools.cache
def staged_hook_layer() -> Path:
    """A folder laid out as the hook's Lambda layer: the run-time package under
    ``python/`` (Lambda puts ``/opt/python`` on the path) and the exec wrapper at the
    root (``/opt/ddb-capacity-instrument``, executable); removed when the process ends."""
    root = Path(tempfile.mkdtemp(prefix="ddb-capacity-layer-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    shutil.copytree(
        RUNTIME_PACKAGE,
        root / "python" / RUNTIME_PACKAGE.name,
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    wrapper = root / Path(HOOK_WRAPPER).name
    shutil.copy2(RUNTIME_PACKAGE / "bootstrap" / "lambda-exec-wrapper", wrapper)
    wrapper.chmod(0o755)
    return root


def hook_runtimes() -> list[lambda_.Runtime]:
    """The Lambda Python runtimes the hook runs on (3.11 and later) that this aws-cdk-lib
    knows."""
    found = (getattr(lambda_.Runtime, f"PYTHON_3_{minor}", None) for minor in range(11, 30))
    return [r for r in found if isinstance(r, lambda_.Runtime)]


def hook_layer(scope: Construct) -> lambda_.LayerVersion:
    """The fast path's hook layer, one per stack."""
    stack = Stack.of(scope)
    found = stack.node.try_find_child("DdbCapacityHookLayer")
    if isinstance(found, lambda_.LayerVersion):
        return found
    return lambda_.LayerVersion(
        stack,
        "DdbCapacityHookLayer",
        code=StagedCode(staged_hook_layer()),
        compatible_runtimes=hook_runtimes(),
        description="The DynamoDB capacity fast path's client hook, installed at start-up "
        "by its exec wrapper (AWS_LAMBDA_EXEC_WRAPPER)",
    )


COMPILED_MODULES = frozenset({"ddb_capacity_runtime.scaler.tick"})
"""The modules shipped compiled too, in every asset that holds them, when the Python
synthesizing is the functions' (`FUNCTION_PYTHON`; `assets.write_bytecode`): Lambda's
``/var/task`` is read-only, so without it a cold start compiles every module it imports.
The scaler's tick, its largest module: its bytecode saves each of the scaler's cold starts
some 10 ms of compiling (``benchmarks/handler_import.py``), and fits the scaler asset's
size (``tests/common/test_assets.py``)."""


def compiled_modules(python: tuple[int, int] | None = None) -> frozenset[str]:
    """`COMPILED_MODULES` when ``python`` (default: the Python running this, a CPython)
    is `FUNCTION_PYTHON`, the Python the functions run on; else none: another Python's
    bytecode would be of no use to them."""
    if python is None:
        if sys.implementation.name != "cpython":
            return frozenset()
        python = (sys.version_info.major, sys.version_info.minor)
    return COMPILED_MODULES if python == FUNCTION_PYTHON else frozenset()


def staged_asset(handler: str, package: Path = RUNTIME_PACKAGE) -> Path:
    """The folder of the asset of the function whose handler is ``handler``
    (``"ddb_capacity_runtime.module.function"``): the modules of the run-time ``package``
    that handler imports and nothing else (no aws_cdk, no tools, no other function's
    code), found from the package's import graph (`assets.handler_closure`), those of
    `compiled_modules` with their bytecode; staged once for each content of the package,
    and kept between processes (`assets.cached_asset`)."""
    compiled = compiled_modules()

    def stage() -> Path:
        modules = handler_closure(package, handler)
        return staged_modules(package, modules, modules & compiled)

    return cached_asset(asset_key(package, handler, bool(compiled)), stage)


def runtime_code(handler: str) -> lambda_.Code:
    """The asset of the function whose handler is ``handler`` (`staged_asset`)."""
    return StagedCode(staged_asset(handler))


FUNCTION_PYTHON = (3, 11)
"""The Python (major, minor) of every function this library deploys: the one its tests run
on, so the code a function runs is the code that was tested. Lambda's ``python3.11`` runs on
Amazon Linux 2; AWS lists its deprecation for June 30, 2027 (creating functions blocked
from July 31, 2027, updating them from August 31, 2027)."""

RUNTIME_REASON = (
    "Runs on python3.11, the Python the library's tests run on, so the code deployed is the "
    "code tested; the newest runtime would run untested code."
)
"""Why AwsSolutions-L1 and Serverless-LambdaLatestVersion (the newest runtime) do not apply."""


def function_runtime() -> lambda_.Runtime:
    """The Lambda runtime of every function this library deploys (`FUNCTION_PYTHON`)."""
    major, minor = FUNCTION_PYTHON
    runtime: lambda_.Runtime = getattr(lambda_.Runtime, f"PYTHON_{major}_{minor}")
    return runtime


def runtime_function(
    scope: Construct,
    id: str,
    *,
    handler: str,
    description: str,
    config: FunctionConfig,
    environment: dict[str, str] | None = None,
    configured_by_environment: bool = True,
    reserved_concurrent_executions: int | None = None,
    code: lambda_.Code | None = None,
    own: Sequence[iam.PolicyStatement] = (),
    shared: bool = False,
) -> tuple[lambda_.Function, iam.ManagedPolicy]:
    """A function on its own run-time asset (`runtime_code`, or ``code``), with its own
    role and log group, as ``config`` says (memory, timeout, log retention, architecture).

    The role carries no AWS managed policy and no inline policy: one customer-managed
    policy (returned) lets it write to its own log group, and does what ``own`` grants;
    callers add what the function needs to that policy. ``shared``: the returned policy
    will be attached to another function's role too, so what is this function's alone
    (its log group, ``own``) is in a second policy, of this role only (child
    ``{id}OwnPolicy``).
    """
    log_group = logs.LogGroup(
        scope, f"{id}Logs", retention=config.log_retention, removal_policy=RemovalPolicy.DESTROY
    )
    role = iam.Role(
        scope,
        f"{id}Role",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=f"Execution role of {description}",
    )
    if shared:
        own_policy(scope, f"{id}OwnPolicy", f"{description}, its own", role, log_group, own)
        policy = iam.ManagedPolicy(
            scope, f"{id}Policy", description=f"Permissions of {description}", roles=[role]
        )
        check_policy(policy)
    else:
        policy = own_policy(scope, f"{id}Policy", description, role, log_group, own)
    function = lambda_.Function(
        scope,
        id,
        runtime=function_runtime(),
        architecture=config.architecture or ARCHITECTURE,
        code=code or runtime_code(handler),
        handler=handler,
        description=description,
        timeout=config.timeout,
        memory_size=config.memory_size,
        role=role,
        log_group=log_group,
        logging_format=lambda_.LoggingFormat.JSON,
        environment=environment,
        reserved_concurrent_executions=reserved_concurrent_executions,
    )
    _acknowledge_function(function, log_group, configured_by_environment)
    check_function(function)
    return function, policy


def own_policy(
    scope: Construct,
    id: str,
    description: str,
    role: iam.Role,
    log_group: logs.LogGroup,
    own: Sequence[iam.PolicyStatement] = (),
) -> iam.ManagedPolicy:
    """A function's customer-managed policy of what is its own: writing to its own log
    group, and ``own``."""
    policy = iam.ManagedPolicy(
        scope,
        id,
        description=f"Permissions of {description}",
        roles=[role],
        statements=[
            iam.PolicyStatement(
                sid="WriteOwnLogs",
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[log_group.log_group_arn],
            ),
            *own,
        ],
    )
    check_policy(policy)
    acknowledge(
        policy,
        f"AwsSolutions-IAM5[Resource::<{_logical_ref(log_group)}.Arn>:*]",
        "Log streams are created at run time with generated names; the grant is limited "
        "to the function's own log group.",
    )
    return policy


def _acknowledge_function(
    function: lambda_.Function,
    log_group: logs.LogGroup,
    configured_by_environment: bool,
) -> None:
    """What every run-time function and its log group are acknowledged for."""
    acknowledge_all(
        function,
        dict.fromkeys(("AwsSolutions-L1", "Serverless-LambdaLatestVersion"), RUNTIME_REASON),
    )
    acknowledge_all(
        log_group,
        {f"{pack}-CloudWatchLogGroupEncrypted": LOG_KEY_REASON for pack in LAMBDA_PACKS},
    )
    skip_checkov(log_group, "CKV_AWS_158", LOG_KEY_REASON)
    if configured_by_environment:
        skip_checkov(
            function,
            "CKV_AWS_173",
            "The environment holds table names and numeric bounds only, no secret; Lambda "
            "encrypts it at rest with its own key.",
        )
    skip_checkov(
        function,
        "CKV_AWS_117",
        "Calls only AWS APIs (DynamoDB, Application Auto Scaling, CloudWatch, Lambda); it "
        "reaches nothing in a VPC, and a VPC would need NAT or endpoints to reach them.",
    )


def state_store_table(
    scope: Construct, id: str, *, contents: str, backup_reason: str
) -> dynamodb.Table:
    """A state store (``ddb_capacity_runtime.aws.store``): an on-demand table keyed by
    ``pk`` and ``sk`` (strings), with point-in-time recovery, deleted with its stack (it
    holds run-time state only, never the user's data). ``contents`` says what it holds,
    for the reason it keeps DynamoDB's AWS owned key; ``backup_reason`` why no AWS Backup
    plan is needed."""
    table = dynamodb.Table(
        scope,
        id,
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        removal_policy=RemovalPolicy.DESTROY,
    )
    skip_checkov(
        table,
        "CKV_AWS_119",
        f"Encrypted at rest with DynamoDB's AWS owned key; it holds {contents} only, so a "
        f"customer managed key would protect nothing more and cost $1 a month plus requests.",
    )
    acknowledge_all(table, {f"{pack}-DynamoDBInBackupPlan": backup_reason for pack in LAMBDA_PACKS})
    return table


def _logical_ref(log_group: logs.LogGroup) -> str:
    child = log_group.node.default_child
    assert child is not None
    return Stack.of(log_group).get_logical_id(child)  # type: ignore[arg-type]
