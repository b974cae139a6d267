"""Runs in: CDK app (synth time).

Two limits AWS applies only when a stack deploys, checked when the app is built: the size of
a function's environment (Lambda takes at most 4 KB: its variables written as compact JSON,
at most 4,096 bytes) and of a customer-managed policy (IAM takes at most 6,144 characters,
white space not counted). Both grow with the tables a construct manages explicitly (a
scaler's table names, bounds and target values; its grants' ARNs), and both hold values
known at deploy time only: a table's generated name, the Region, the account.

Each such value is counted at its shortest and at its longest: a table name CloudFormation
generates is its stack's name, its logical id and 12 or 13 random characters, joined by
hyphens (in a stack named at deploy time only, as a nested stack, at least one character
more than the rest, at most DynamoDB's 255); a Region has 9 to 14 characters, a partition 3
to 10, an account 12; a table's ARN is made of them, its stream's ARN 31 characters more. A
value another stack of the app exports is measured there. Another resource's name, URL or
ARN (a queue's, a function's, a log group's) and a parameter's value count as empty at
their shortest and `UNSEEN` characters at their longest: the check may warn early and fail
late there. A value it cannot see through (an export from outside the app)
counts as empty, with no longest. A character past ASCII counts as itself at the shortest
and as its JSON escape at the longest. Past a limit at the shortest, synthesis fails (the
deploy would); past it at the longest only, synthesis warns (`WARNING_ID`).

The check is one per stack (`DeployLimits.of`): each function and policy the library makes
is added to it (`check_function`, `check_policy`), and a function of the app's own whose
environment the library adds to (instrumented, or granted requests or signals).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import jsii
from aws_cdk import Annotations, CfnOutput, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct, IConstruct, IValidation

from ._props import is_token

ENVIRONMENT_LIMIT = 4_096
"""Lambda's limit on a function's environment: its variables as compact JSON, in bytes."""
POLICY_LIMIT = 6_144
"""IAM's limit on a customer-managed policy's document, in characters (white space not
counted)."""
INLINE_LIMIT = 10_240
"""IAM's limit on the inline policies of one role together, in characters (white space not
counted)."""
UNRESERVED = (1_000, 100)
"""Lambda's default concurrency an account and Region, and the part it keeps unreserved."""
RESERVED_WARNING_ID = "ddb-capacity:reserved-concurrency"
"""The warning's id when a stack's functions reserve more than a default account allows."""
WARNING_ID = "ddb-capacity:deploy-limit"
"""The warning's id when a limit may be passed (``cdk synth`` prints it; ``Annotations``
can acknowledge it)."""
TABLE_NAME_MAX = 255
"""DynamoDB's longest table name."""
SUFFIX = (12, 13)
"""The random characters CloudFormation adds to a name it generates, shortest and longest."""
UNSEEN = 320
"""The most characters a value the library puts in an environment or a policy (a table's
name or ARN, a queue's URL, a function's name) comes to: below it everywhere, a document
far from its limit is passed without looking its tables up."""


@dataclass(frozen=True)
class Span:
    """A length known at deploy time only: at least ``low``, at most ``high`` (None: no
    bound known)."""

    low: int
    high: int | None

    def __add__(self, other: Span) -> Span:
        high = None if self.high is None or other.high is None else self.high + other.high
        return Span(self.low + other.low, high)


def exact(length: int) -> Span:
    """A length known now."""
    return Span(length, length)


UNKNOWN = Span(0, None)
PSEUDO = {
    "AWS::Partition": Span(3, 10),  # aws ... aws-us-gov
    "AWS::Region": Span(9, 14),  # us-east-1 ... ap-southeast-5
    "AWS::AccountId": exact(12),
    "AWS::URLSuffix": Span(10, 16),  # c2s.ic.gov ... amazonaws.com.cn
}
"""CloudFormation's pseudo parameters, by the lengths of their values."""


def total(spans: Iterable[Span]) -> Span:
    """The length of ``spans`` one after another."""
    out = exact(0)
    for span in spans:
        out = out + span
    return out


def escaped(text: str) -> Span:
    """Characters of ``text`` inside a JSON string: quotes, backslashes and control
    characters escaped; a character past ASCII as itself at the shortest, as its ``\\u``
    escape at the longest."""
    return Span(len(json.dumps(text, ensure_ascii=False)) - 2, len(json.dumps(text)) - 2)


STREAM_SUFFIX = len("/stream/2026-01-01T00:00:00.000")
"""What a table's stream ARN adds to the table's ARN."""
ARN_PARTS = ("AWS::Partition", "AWS::Region", "AWS::AccountId")
"""The pseudo parameters in a table's ARN."""
ARN_FIXED = len("arn::dynamodb:::table/")
"""What a table's ARN holds besides `ARN_PARTS` and its name."""
LONGEST_STREAM_ARN = (
    ARN_FIXED + sum(PSEUDO[part].high or 0 for part in ARN_PARTS) + TABLE_NAME_MAX + STREAM_SUFFIX
)
"""The longest stream ARN of a table (344 characters, its name of 255): longer than
`UNSEEN`, so a stream ARN not looked up counts up to this."""


class Exports:
    """The app's exported values by name (what a cross-stack reference's ``Fn::ImportValue``
    names), each with its stack's `Deployed`: found once, when first asked for."""

    def __init__(self, root: IConstruct) -> None:
        self._root = root
        self._found: dict[str, tuple[Deployed, Any]] | None = None
        self._stacks: dict[str, Deployed] = {}

    def deployed(self, stack: Stack) -> Deployed:
        """``stack``'s `Deployed`, one for each stack."""
        path = stack.node.path
        if path not in self._stacks:
            self._stacks[path] = Deployed(stack, exports=self)
        return self._stacks[path]

    def value(self, name: str) -> tuple[Deployed, Any] | None:
        """The value exported as ``name`` in this app, and its stack's `Deployed`."""
        if self._found is None:
            self._found = {}
            for node in self._root.node.find_all():
                if isinstance(node, CfnOutput) and node.export_name is not None:
                    stack = Stack.of(node)
                    export = stack.resolve(node.export_name)
                    if isinstance(export, str):
                        self._found[export] = (self.deployed(stack), stack.resolve(node.value))
        return self._found.get(name)


class Deployed:
    """What a stack's values come to when it deploys: its pseudo parameters, the names and
    ARNs of its DynamoDB tables, and the values it imports from the app's other stacks
    (looked up once, when first asked for; ``blind``: never, each at most `UNSEEN`
    characters, a stream ARN `LONGEST_STREAM_ARN`, an imported value with no longest)."""

    def __init__(
        self, stack: Stack, *, blind: bool = False, exports: Exports | None = None
    ) -> None:
        self._stack = stack
        self._blind = blind
        self._exports = exports
        self._tables: dict[str, Span] | None = None
        self._own = {
            "AWS::Region": stack.region,
            "AWS::AccountId": stack.account,
            "AWS::StackName": stack.stack_name,
        }

    def pseudo(self, name: str) -> Span:
        """The value of the pseudo parameter ``name``; the stack's own where it has one."""
        own = self._own.get(name)
        if own is not None and not is_token(own):
            return exact(len(own))
        return PSEUDO.get(name, UNKNOWN)

    def name(self, logical_id: str) -> Span:
        """What a ``Ref`` to the resource ``logical_id`` comes to: a DynamoDB table's name;
        another resource's name or URL, or a parameter's value, at most `UNSEEN`
        characters."""
        return self._tables_known().get(logical_id, Span(0, UNSEEN))

    def arn(self, logical_id: str, attribute: str) -> Span:
        """The ``attribute`` (``Arn``, ``StreamArn``) of the resource ``logical_id``: a
        DynamoDB table's, from its name; another's, or one not looked up, at most `UNSEEN`
        characters (a ``StreamArn``, `LONGEST_STREAM_ARN`)."""
        name = self._tables_known().get(logical_id)
        if name is None or attribute not in ("Arn", "StreamArn"):
            return Span(0, LONGEST_STREAM_ARN if attribute == "StreamArn" else UNSEEN)
        fixed = ARN_FIXED + (STREAM_SUFFIX if attribute == "StreamArn" else 0)
        return total([exact(fixed), *(self.pseudo(p) for p in ARN_PARTS), name])

    def imported(self, name: Any) -> Span:
        """What ``Fn::ImportValue`` of ``name`` comes to: the value exported under that
        name by a stack of the app, measured there; with no longest when ``blind`` (it may
        be any value of that stack) or when no stack of the app exports it."""
        if self._blind:
            return UNKNOWN
        found = self._exports.value(name) if self._exports and isinstance(name, str) else None
        if found is None:
            return UNKNOWN
        there, value = found
        return string_length(value, there)

    def _tables_known(self) -> dict[str, Span]:
        """The names of the stack's tables by logical id (none when ``blind``)."""
        if self._tables is None:
            self._tables = {}  # a name given by a Ref meanwhile is another resource's
            if not self._blind:
                self._tables = self._table_names()
        return self._tables

    def _table_names(self) -> dict[str, Span]:
        stack = self._stack
        found = {}
        for node in stack.node.find_all():
            if isinstance(node, dynamodb.CfnTable) and node.stack is stack:
                logical_id = stack.get_logical_id(node)
                given = stack.resolve(node.table_name)  # the L2's name is a token
                found[logical_id] = self._name(given, logical_id)
        return found

    def _name(self, given: Any, logical_id: str) -> Span:
        """A table's name: ``given`` (resolved), else the one CloudFormation generates (in a
        stack whose name is known at deploy time only, as a nested stack's, of at least one
        character and at most DynamoDB's longest name)."""
        if given is not None:
            return string_length(given, self)
        stack_name = self.pseudo("AWS::StackName")
        fixed = stack_name.low + len(logical_id) + 2
        if stack_name.high is None:
            return Span(min(fixed + 1 + SUFFIX[0], TABLE_NAME_MAX), TABLE_NAME_MAX)
        low, high = (min(fixed + n, TABLE_NAME_MAX) for n in SUFFIX)
        return Span(low, high)


def string_length(value: Any, at: Deployed) -> Span:
    """Characters of the string a resolved CloudFormation ``value`` becomes, inside a JSON
    string: its literal parts escaped, the names and ARNs it refers to as deployed."""
    if isinstance(value, str):
        return escaped(value)
    if isinstance(value, bool | int | float):
        return exact(len(json.dumps(value)))
    if not (isinstance(value, dict) and len(value) == 1):
        return UNKNOWN
    [(function, argument)] = value.items()
    if function == "Ref" and isinstance(argument, str):
        return at.pseudo(argument) if argument.startswith("AWS::") else at.name(argument)
    if function == "Fn::GetAtt" and isinstance(argument, list) and len(argument) == 2:
        return at.arn(str(argument[0]), str(argument[1]))
    if function == "Fn::ImportValue":
        return at.imported(argument)
    if function == "Fn::Join" and _join_shape(argument):
        separator, parts = argument
        joints = escaped(separator * max(len(parts) - 1, 0))
        return total([joints, *(string_length(p, at) for p in parts)])
    return UNKNOWN


def _join_shape(argument: Any) -> bool:
    return (
        isinstance(argument, list)
        and len(argument) == 2
        and isinstance(argument[0], str)
        and isinstance(argument[1], list)
    )


def json_length(value: Any, at: Deployed) -> Span:
    """Characters of a resolved CloudFormation ``value`` as compact JSON once deployed (an
    intrinsic function as the string it becomes)."""
    if isinstance(value, list):
        return total([exact(2 + max(len(value) - 1, 0)), *(json_length(v, at) for v in value)])
    if isinstance(value, dict) and not _intrinsic(value):
        keys = sum(len(json.dumps(key)) + 1 for key in value)  # each key and its colon
        shape = exact(2 + keys + max(len(value) - 1, 0))
        return total([shape, *(json_length(v, at) for v in value.values())])
    if isinstance(value, str | dict):
        return exact(2) + string_length(value, at)
    return exact(len(json.dumps(value)))


def _intrinsic(value: dict[str, Any]) -> bool:
    """Whether ``value`` is an intrinsic function (one key: ``Ref`` or ``Fn::...``)."""
    if len(value) != 1:
        return False
    key = next(iter(value))
    return key == "Ref" or key.startswith("Fn::")


@dataclass(frozen=True)
class Limit:
    """One document checked: whose it is, what it is, its limit and its unit, and how to
    read it and its parts."""

    owner: IConstruct
    what: str
    limit: int
    unit: str
    parts_name: str
    document: Callable[[], Any]
    parts: Callable[[Any], dict[str, Any]]
    measure: Callable[[Any, Deployed], Span] = json_length
    hint: str = (
        "Each table a scaler manages explicitly adds to it: find more of them by tag instead "
        "(tag_key), or share them among scalers (docs: Scaler, 'Many tables')"
    )
    library: bool = True
    """Whether its owner is the library's (a function of the app's own is checked too)."""


def within(limit: Limit, size: Span) -> bool:
    """Whether ``size`` is within ``limit``: at its longest, or, with no longest known, at its
    shortest."""
    return size.low <= limit.limit and (size.high is None or size.high <= limit.limit)


def verdict(limit: Limit, size: Span, parts: dict[str, Span]) -> tuple[bool, str]:
    """(certain, message) of a ``size`` past ``limit`` (not `within` it), its largest
    ``parts`` named: certain when even its shortest passes it."""
    if size.low <= limit.limit:
        amount = f"may come to {size.high:,} {limit.unit} (at least {size.low:,})"
    else:
        amount = f"comes to {size.low:,} {limit.unit} or more"
    largest = sorted(parts.items(), key=lambda item: -item[1].low)[:3]
    named = ", ".join(f"{name} {span.low:,}" for name, span in largest)
    return size.low > limit.limit, (
        f"{limit.owner.node.path}: its {limit.what} {amount} once deployed, past the "
        f"{limit.limit:,} {limit.unit} AWS takes (the largest {limit.parts_name}, at their "
        f"shortest: {named}). {limit.hint}"
    )


def _variables(document: Any) -> dict[str, Any]:
    found = document.get("Variables", document.get("variables")) if document else None
    return found if isinstance(found, dict) else {}


def _statements(document: Any) -> dict[str, Any]:
    statements = document.get("Statement") if isinstance(document, dict) else None
    if not isinstance(statements, list):
        return {}
    return {str(s.get("Sid", i)): s for i, s in enumerate(statements) if isinstance(s, dict)}


class DeployLimits(Construct):
    """The check of one stack: the functions' environments and the policies added to it,
    measured when the app is validated (at synth)."""

    ID = "DdbCapacityDeployLimits"

    def __init__(self, stack: Stack) -> None:
        super().__init__(stack, self.ID)
        self.limits: list[Limit] = []
        self.node.add_validation(_Validation(self))

    @classmethod
    def of(cls, scope: IConstruct) -> DeployLimits:
        """The check of ``scope``'s stack, made if it has none."""
        stack = Stack.of(scope)
        found = stack.node.try_find_child(cls.ID)
        if found is None:
            found = cls(stack)
        assert isinstance(found, DeployLimits)
        return found

    def add(self, limit: Limit) -> None:
        """Check ``limit`` at synth (once, however often its owner is added)."""
        if not any(known.owner is limit.owner for known in self.limits):
            self.limits.append(limit)

    def reserved(self) -> str | None:
        """A warning when the functions checked here reserve more concurrency together than
        an account at Lambda's default leaves reservable, else None."""
        quota, kept = UNRESERVED
        found = {}
        for limit in self.limits:
            cfn = limit.owner.node.default_child if limit.library else None
            if isinstance(cfn, lambda_.CfnFunction):
                units = cfn.reserved_concurrent_executions
                if isinstance(units, int) and not is_token(units):
                    found[limit.owner.node.path] = units
        if sum(found.values()) <= quota - kept:
            return None
        largest = sorted(found.items(), key=lambda item: -item[1])[:3]
        named = ", ".join(f"{path} {units:,}" for path, units in largest)
        return (
            f"the library's functions of this stack reserve {sum(found.values()):,} concurrent "
            f"executions ({named}): Lambda keeps {kept} of an account's concurrency "
            f"unreserved, so at its default of {quota:,} a Region at most {quota - kept:,} "
            "can be reserved, less what other functions reserve, and the deploy fails past "
            "it. Ask for more concurrency (Service Quotas: Lambda, 'Concurrent executions') "
            "or lower batch_concurrency, broker_concurrency or the fast path's concurrency"
        )

    def results(self) -> list[tuple[Limit, tuple[bool, str]]]:
        """Each document past its limit (or that may be), and its verdict."""
        stack = Stack.of(self)
        blind, seen = Deployed(stack, blind=True), Exports(self.node.root).deployed(stack)
        out = []
        for limit in self.limits:
            document = limit.document()
            far = limit.measure(document, blind)
            if far.high is not None and far.high <= limit.limit:
                continue  # far below, whatever its tables are called
            size = limit.measure(document, seen)
            if within(limit, size):
                continue
            parts = {name: json_length(p, seen) for name, p in limit.parts(document).items()}
            out.append((limit, verdict(limit, size, parts)))
        return out


def _environment(function: lambda_.Function) -> Any:
    """``function``'s environment, as the L2 renders it (lazily, at synth)."""
    cfn = function.node.default_child
    assert isinstance(cfn, lambda_.CfnFunction)
    # the L1's ``environment`` reads the L2's lazy value as an empty struct
    return cfn._cfn_properties.get("environment")


def environment_of(function: lambda_.Function) -> dict[str, Any]:
    """``function``'s environment variables as they stand now."""
    return _variables(Stack.of(function).resolve(_environment(function)))


def check_function(function: lambda_.Function, *, library: bool = True) -> None:
    """Check ``function``'s environment against Lambda's limit at synth (``library``: one
    the library made, whose reserved concurrency `DeployLimits.reserved` counts)."""
    stack = Stack.of(function)
    environment = _environment(function)
    DeployLimits.of(function).add(
        Limit(
            function,
            "environment",
            ENVIRONMENT_LIMIT,
            "bytes",
            "variables",
            lambda: _variables(stack.resolve(environment)),
            dict,
            library=library,
        )
    )


def check_policy(policy: iam.ManagedPolicy) -> None:
    """Check ``policy``'s document against IAM's limit at synth."""
    stack = Stack.of(policy)
    DeployLimits.of(policy).add(
        Limit(
            policy,
            "document",
            POLICY_LIMIT,
            "characters",
            "statements",
            lambda: stack.resolve(policy.document),
            _statements,
        )
    )


SETTLE_HINT = (
    "Each PROVISION_THEN_SETTLE table of the stack adds one: pre-warm some of them with "
    "WARM_THROUGHPUT instead, or put them in another stack (docs: High-water marks)"
)


def check_inline_policies(role: iam.IRole, policies: Callable[[], list[iam.Policy]]) -> None:
    """Check the inline ``policies()`` of ``role`` together against IAM's limit at synth
    (those of a stack's settle step: one for each PROVISION_THEN_SETTLE table)."""
    stack = Stack.of(role)
    DeployLimits.of(role).add(
        Limit(
            role,
            "inline policies' total",
            INLINE_LIMIT,
            "characters",
            "policies",
            lambda: {p.node.path: stack.resolve(p.document) for p in policies()},
            dict,
            lambda documents, at: total(json_length(d, at) for d in documents.values()),
            SETTLE_HINT,
        )
    )


@jsii.implements(IValidation)
class _Validation:
    """Runs the check when the app is validated: errors for limits passed for certain,
    warnings for those that may be."""

    def __init__(self, check: DeployLimits) -> None:
        self._check = check

    def validate(self) -> list[str]:
        errors = []
        for limit, (certain, message) in self._check.results():
            if certain:
                errors.append(message)
            else:
                Annotations.of(limit.owner).add_warning_v2(WARNING_ID, message)
        reserved = self._check.reserved()
        if reserved:
            Annotations.of(Stack.of(self._check)).add_warning_v2(RESERVED_WARNING_ID, reserved)
        return errors
