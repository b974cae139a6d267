"""Runs in: scaler Lambda, broker Lambda, workers (the user's own jobs, in direct mode),
workstation (``ddb-capacity`` in direct mode, examples).

Which tables and dimensions a tick manages, and what DynamoDB and Application Auto
Scaling say about them. Clients are passed in; nothing here decides."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from ..core.decreases import DecreaseLedger
from ..core.errors import NotManaged as NotManaged
from ..core.errors import OnDemand as OnDemand
from ..core.errors import TableUnavailable as TableUnavailable
from ..core.errors import TableUpdating as TableUpdating
from ..core.errors import UnsoundListing as UnsoundListing
from ..core.errors import shown, shown_text
from ..core.floorplan import FloorPlan, parse_plan
from ..core.memory import Memory, reconcile
from ..core.names import (
    DIMENSIONS,
    SCALER_TAGS,
    UNITS,
    resource_id,
    scalable_dimension,
    table_of_arn,
)
from ..core.reservation import not_covered
from ..core.settings import ScalerConfig
from ..core.table_limits import Limits, RefusedTag, within_quota
from ..core.tables import (
    Dimension,
    ManagedTable,
    ScalableTarget,
    TrackingPolicy,
    began_of,
    named_gsis,
    provisioned_units,
    tags_of,
    warm_of,
)
from ..core.tags import IgnoredTag, TableTags, parse_tags
from ..core.validators import is_whole
from ..events import log_event
from . import table_calls

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_application_autoscaling.literals import ScalableDimensionType
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_resourcegroupstaggingapi import ResourceGroupsTaggingAPIClient

    from ..core.holds import HeldDimension


RESOURCES_PER_LISTING = 50
"""Resources named in one DescribeScalableTargets listing (a page holds 50 targets)."""


def find_tables(
    tagging: ResourceGroupsTaggingAPIClient,
    config: ScalerConfig,
    unsound: list[str] | None = None,
) -> dict[str, dict[str, str] | None]:
    """Table names to manage: the configured ones plus those carrying the discovery tag
    (Resource Groups Tagging API, paginated). Tags come along where discovery saw them
    sound (None: read with the table). An entry that names no table is passed over, and
    it and an entry whose tags are unsound are told in ``unsound``, for the caller to
    count: one bad entry never hides the others' tables."""
    found: dict[str, dict[str, str] | None] = {name: None for name in config.tables}
    if config.tag_key:
        pages = tagging.get_paginator("get_resources").paginate(
            TagFilters=[{"Key": config.tag_key, "Values": [config.tag_value]}],
            ResourceTypeFilters=["dynamodb:table"],
            PaginationConfig={"PageSize": 100},
        )
        found.update(_tagged(pages, unsound))
    return found


ARNS_PER_CALL = 100
"""ARNs named in one GetResources call."""


def tags_of_tables(
    tagging: ResourceGroupsTaggingAPIClient,
    arns: Sequence[str],
    unsound: list[str] | None = None,
) -> dict[str, dict[str, str] | None]:
    """The tags of the tables ``arns``, by table name (GetResources, 100 ARNs a call): a
    table the tagging API does not return is not in the answer, and one whose tags it
    returns unsound is, with None (unknown). Entries that name no table are passed over;
    they and the unsound ones are told in ``unsound``."""
    out: dict[str, dict[str, str] | None] = {}
    for i in range(0, len(arns), ARNS_PER_CALL):
        pages = tagging.get_paginator("get_resources").paginate(
            ResourceARNList=list(arns[i : i + ARNS_PER_CALL])
        )
        out.update(_tagged(pages, unsound))
    return out


def _tagged(
    pages: Iterable[Mapping[str, Any]], unsound: list[str] | None
) -> dict[str, dict[str, str] | None]:
    """The tables of GetResources' ``pages`` and their tags (None: unsound), each entry that
    names no table or carries unsound tags told in ``unsound``; a page without its list
    raises UnsoundListing (the tables on it are not known)."""
    out: dict[str, dict[str, str] | None] = {}
    told = unsound if unsound is not None else []
    for page in pages:
        listed = page.get("ResourceTagMappingList") if isinstance(page, Mapping) else None
        if not isinstance(listed, list):  # its tables are not known: none is taken as untagged
            raise UnsoundListing("GetResources: a page without its ResourceTagMappingList")
        for item in listed:
            arn = item.get("ResourceARN") if isinstance(item, Mapping) else None
            name = table_of_arn(arn)
            if name is None:
                told.append(f"GetResources: an entry's ResourceARN {arn!r:.200} names no table")
                continue
            out[name] = tags_of(item.get("Tags"))  # no list, as no tag: unsound
            if out[name] is None:
                told.append(f"GetResources: the tags of {name} are unsound; read with the table")
    return out


def scalable_targets(
    aas: ApplicationAutoScalingClient, resource_ids: Sequence[str] = ()
) -> dict[tuple[str, str], ScalableTarget]:
    """Every DynamoDB scalable target of the account and Region, with whether it has a
    target-tracking policy: a constant number of paginated calls, whatever the table count.
    With ``resource_ids``, only those resources' targets: one listing of each
    `RESOURCES_PER_LISTING` of them, then the policies of the resources that have a
    target (DescribeScalingPolicies takes one resource a call)."""
    policies = aas.get_paginator("describe_scaling_policies")
    if resource_ids:
        listed = listed_targets(aas, resource_ids)
        tracked = _tracked(
            page
            for r in sorted({resource for resource, _ in listed})
            for page in policies.paginate(ServiceNamespace="dynamodb", ResourceId=r)
        )
    else:
        tracked = _tracked(policies.paginate(ServiceNamespace="dynamodb"))
        listing = aas.get_paginator("describe_scalable_targets")
        listed = _listed(listing.paginate(ServiceNamespace="dynamodb"))
    return {
        key: replace(
            t,
            target_tracking=key in tracked,
            target_percent=tracked[key][0] if key in tracked else None,
            policy=tracked[key][1] if key in tracked else None,
        )
        for key, t in listed.items()
    }


def listed_targets(
    aas: ApplicationAutoScalingClient, resource_ids: Sequence[str]
) -> dict[tuple[str, str], ScalableTarget]:
    """The DynamoDB scalable targets of the resources ``resource_ids`` (at least one), by
    ResourceId and ScalableDimension, tracking not yet known: one paginated
    DescribeScalableTargets of each `RESOURCES_PER_LISTING` of them. Raises
    `UnsoundListing` when an answer says nothing sound (a page without its list, an entry
    without its scope or whole capacities)."""
    listing = aas.get_paginator("describe_scalable_targets")
    ids = list(resource_ids)
    return _listed(
        page
        for i in range(0, len(ids), RESOURCES_PER_LISTING)
        for page in listing.paginate(
            ServiceNamespace="dynamodb", ResourceIds=ids[i : i + RESOURCES_PER_LISTING]
        )
    )


def table_targets(
    aas: ApplicationAutoScalingClient, name: str, description: Mapping[str, Any]
) -> dict[tuple[str, str], ScalableTarget]:
    """The scalable targets of the table ``name`` and of each of its GSIs (``description``
    is DescribeTable's ``Table``): `scalable_targets` of their ResourceIds."""
    return scalable_targets(aas, table_resource_ids(name, description))


def current_minimum(aas: ApplicationAutoScalingClient, target: ScalableTarget) -> int | None:
    """The minimum ``target`` has now (one DescribeScalableTargets of it alone); None when
    the target is gone (none listed); `UnsoundListing` when the answer says nothing sound
    (a null, an entry without a whole MinCapacity): not known, which the caller counts."""
    answer = aas.describe_scalable_targets(
        ServiceNamespace="dynamodb",
        ResourceIds=[target.resource_id],
        ScalableDimension=cast("ScalableDimensionType", target.scalable_dimension),
    )
    found = _entries(answer, "ScalableTargets", "DescribeScalableTargets")
    if not found:
        return None
    minimum = found[0].get("MinCapacity")
    if not is_whole(minimum, 0):
        raise UnsoundListing(
            f"DescribeScalableTargets: the target of {target.resource_id} "
            f"({target.scalable_dimension}) has MinCapacity {shown(minimum, 100)}"
        )
    return int(minimum)


def _tracked(
    pages: Iterable[Mapping[str, Any]],
) -> dict[tuple[str, str], tuple[float | None, TrackingPolicy | None]]:
    """The resources and dimensions with a target-tracking policy, with its target (a
    percentage from 20 to 90; None when the policy's is not one) and the policy, when it
    can be written back as it is (`_policy`)."""
    tracked: dict[tuple[str, str], tuple[float | None, TrackingPolicy | None]] = {}
    for page in pages:
        for policy in _entries(page, "ScalingPolicies", "DescribeScalingPolicies"):
            if policy.get("PolicyType") == "TargetTrackingScaling":
                name = f"the policy {policy.get('PolicyName')!r}"
                key = _scope(policy, "DescribeScalingPolicies", name)
                config = policy.get("TargetTrackingScalingPolicyConfiguration", {})
                if not isinstance(config, Mapping):
                    raise UnsoundListing(
                        f"DescribeScalingPolicies: {shown_text(name, 300)} of {key[0]} ({key[1]}) "
                        f"has TargetTrackingScalingPolicyConfiguration {shown(config, 100)}"
                    )
                value = config.get("TargetValue")
                ok = isinstance(value, (int, float)) and 20 <= value <= 90  # untrusted
                tracked[key] = (
                    float(value) if ok and value is not None else None,
                    _policy(policy.get("PolicyName"), config),
                )
    return tracked


def _policy(name: object, config: Mapping[str, Any]) -> TrackingPolicy | None:
    """A target-tracking policy the scaler can write back with only its target value
    changed: a name, a predefined metric and nothing else it would lose (a customized
    metric, or anything unknown, makes it None: such a policy is never touched)."""
    known = {
        "TargetValue",
        "PredefinedMetricSpecification",
        "ScaleInCooldown",
        "ScaleOutCooldown",
        "DisableScaleIn",
    }
    metric = config.get("PredefinedMetricSpecification", {})
    kind = metric.get("PredefinedMetricType") if isinstance(metric, Mapping) else None
    if not (isinstance(name, str) and name and isinstance(kind, str)) or set(config) - known:
        return None
    if set(metric) - {"PredefinedMetricType"}:  # a resource label would be lost
        return None

    cooldowns = [config.get(k) for k in ("ScaleInCooldown", "ScaleOutCooldown")]
    scale_in = config.get("DisableScaleIn")
    if any(c is not None and not is_whole(c) for c in cooldowns) or not (
        scale_in is None or isinstance(scale_in, bool)
    ):
        return None  # a value it could not send back as it is
    return TrackingPolicy(name, kind, cooldowns[0], cooldowns[1], scale_in)


def _entries(page: object, key: str, operation: str) -> list[Mapping[str, Any]]:
    """The entries ``key`` of one page of ``operation``'s listing (untrusted): raises
    `UnsoundListing` when the page has no list of them, or one is not an object (a null
    in the list: which table it was is not known)."""
    entries = page.get(key) if isinstance(page, Mapping) else None
    if not isinstance(entries, list):
        raise UnsoundListing(f"{operation}: a page without its {key}")
    odd = [e for e in entries if not isinstance(e, Mapping)]
    if odd:
        raise UnsoundListing(f"{operation}: an entry of {key} is {shown(odd[0], 100)}")
    return entries


def _scope(entry: Mapping[str, Any], operation: str, what: str) -> tuple[str, str]:
    """The (ResourceId, ScalableDimension) of ``entry``, ``what`` in ``operation``'s
    listing; raises `UnsoundListing` when either is not a string."""
    rid, dim = entry.get("ResourceId"), entry.get("ScalableDimension")
    if not (isinstance(rid, str) and isinstance(dim, str)):
        raise UnsoundListing(
            f"{operation}: {what} has ResourceId {rid!r} and ScalableDimension {dim!r}"
        )
    return rid, dim


def _listed(pages: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], ScalableTarget]:
    """The scalable targets of DescribeScalableTargets' ``pages``, tracking not yet known."""
    targets: dict[tuple[str, str], ScalableTarget] = {}
    for page in pages:
        for t in _entries(page, "ScalableTargets", "DescribeScalableTargets"):
            rid, dim = _scope(t, "DescribeScalableTargets", "a target")
            low, high = t.get("MinCapacity"), t.get("MaxCapacity")
            if not (is_whole(low, 0) and is_whole(high, 0)):
                raise UnsoundListing(
                    f"DescribeScalableTargets: the target of {rid} ({dim}) has MinCapacity "
                    f"{low!r} and MaxCapacity {high!r}; expected whole numbers from 0"
                )
            targets[(rid, dim)] = ScalableTarget(rid, dim, low, high, target_tracking=False)
    return targets


def table_resource_ids(name: str, description: Mapping[str, Any]) -> list[str]:
    """Application Auto Scaling's ResourceIds of the table and of each of its GSIs, from
    its DescribeTable answer (untrusted): ValueError, naming the table, when its GSIs are
    not a list of entries each with a name."""
    gsis = named_gsis(f"DescribeTable {name}", description.get("GlobalSecondaryIndexes") or [])
    return [resource_id(name, None), *(resource_id(name, i) for i, _ in gsis)]


def table_arn(name: str, description: Mapping[str, Any]) -> str:
    """The table's ARN from its DescribeTable answer (untrusted): ValueError, naming the
    table, when it is not an ARN of that table."""
    arn = description.get("TableArn")
    sound = isinstance(arn, str) and arn.startswith("arn:") and ":dynamodb:" in arn
    if not (sound and str(arn).endswith(f":table/{name}")):
        raise ValueError(
            f"DescribeTable {name}: TableArn is {shown(arn, 200)}; expected the ARN of that table"
        )
    return str(arn)


PASSING = frozenset({"CREATING", "DELETING"})
"""Table statuses that pass by themselves, with nothing to manage meanwhile: skipped, not
counted."""


def check_managed(table: Mapping[str, Any]) -> None:
    """Raise NotManaged for a table (DescribeTable's ``Table``) the tick does not manage
    now: one being created or deleted (`PASSING`), one UPDATING (TableUpdating: skipped and
    counted), one in any other status but ACTIVE (TableUnavailable: a failure), or
    on-demand (OnDemand)."""
    status = table["TableStatus"]
    if status == "UPDATING":
        raise TableUpdating("status UPDATING")
    if status in PASSING:
        raise NotManaged(f"status {status}")
    if status != "ACTIVE":
        raise TableUnavailable(
            f"status {shown(status)}: its capacity cannot be managed until it is ACTIVE "
            "again (its KMS key made accessible, say)"
        )
    if table.get("BillingModeSummary", {}).get("BillingMode") == "PAY_PER_REQUEST":
        raise OnDemand("on-demand billing")


def describe_table(
    dynamodb: DynamoDBClient,
    name: str,
    tags: dict[str, str] | None,
    config: ScalerConfig,
    targets: Mapping[tuple[str, str], ScalableTarget],
    now: datetime,
    description: Mapping[str, Any] | None = None,
    held: Sequence[HeldDimension] = (),
) -> ManagedTable:
    """The table's managed dimensions. Raises NotManaged, OverrideError (the configuration's
    own: a tag never raises), ClientError, UnsoundListing (its tags unsound), ValueError (its
    ARN or a capacity not sound). ``description``: DescribeTable's ``Table`` if just read;
    ``held``: what the state store says of its dimensions (minimums remembered, plans)."""
    table = description or table_calls.describe(dynamodb, name)
    check_managed(table)
    arn = table_arn(name, table)
    tags = _read_tags(dynamodb, arn) if tags is None else tags
    parsed = parse_tags(tags, config.table_quota)
    _log_ignored(name, parsed.ignored)
    limits, refused = _tag_limits(config, name, parsed.limits)
    managed = _managed(name, arn, tags, parsed, table)
    uncovered, managed.class_unknown = not_covered(table, bool(config.replica_regions(name)))
    for index, spec in _active_specs(managed, table):
        throughput, provisioned = provisioned_units(name, index, spec)
        ledger = DecreaseLedger.from_throughput(throughput, now)
        for dim in UNITS:
            target = targets.get((resource_id(name, index), scalable_dimension(index, dim)))
            state = next((h for h in held if h.scope == (index, dim)), None)
            owned = _owned(config, managed, index, dim, target, state)
            memory, dim_limits = _under_target(
                managed, index, dim, target, state, limits[dim], owned
            )
            dim_limits = within_quota(dim_limits, config.quota(dim), provisioned[dim])
            managed.dimensions.append(
                Dimension(
                    table=name,
                    index=index,
                    dimension=dim,
                    provisioned=provisioned[dim],
                    ledger=ledger,
                    last_increase=throughput.get("LastIncreaseDateTime"),
                    limits=dim_limits,
                    target=target,
                    memory=memory,
                    seen=(state.base, state.set_to, state.intent) if state else (None, None, None),
                    plan=_plan(managed, state, config.table_quota),
                    owned_target=owned,
                    warm=warm_of(spec, dim, config.table_quota),
                    covered=dim not in uncovered,
                )
            )
    _refused_conflicts(managed, refused, limits)
    return managed


def _managed(
    name: str, arn: str, tags: dict[str, str], parsed: TableTags, table: Mapping[str, Any]
) -> ManagedTable:
    """The table as its tags (``parsed``) and DescribeTable's ``table`` tell it, no
    dimension yet."""
    return ManagedTable(
        name,
        arn,
        tags,
        ignored_tags=len(parsed.ignored),
        tag_limits=dict(parsed.limits),
        legacy_memories=dict(parsed.base_mins),
        legacy_tags=sorted(k for k in tags if k.startswith(SCALER_TAGS)),
        began=began_of(table),
    )


def _tag_limits(
    config: ScalerConfig, name: str, tag_limits: Mapping[str, float]
) -> tuple[dict[str, Limits], dict[str, list[RefusedTag]]]:
    """Each dimension's limits, without the min and max tags that would put its min above
    its max (`ScalerConfig.conflicting_tags`: tags never raise), and those tags refused.
    Raises `OverrideError` for the configuration's own errors."""
    limits: dict[str, Limits] = {}
    refused: dict[str, list[RefusedTag]] = {}
    for dim in DIMENSIONS:
        kept, refused[dim] = config.conflicting_tags(name, tag_limits, dim)
        limits[dim] = config.limits(name, kept, (dim,))[dim]
    return limits, refused


def _refused_conflicts(
    managed: ManagedTable, refused: Mapping[str, list[RefusedTag]], limits: Mapping[str, Limits]
) -> None:
    """Report the tags refused for putting a dimension's min above its max, where a
    dimension of the table or of a GSI without a scalable target would have obeyed them
    (under a target, its min and max are the target's): each logged (``tag-refused``) and
    counted (``managed.refused_tags``, alarmed as ``RefusedTags``)."""
    for dim, tags in refused.items():
        if not tags or all(d.target is not None for d in managed.dimensions if d.dimension == dim):
            continue
        kept = limits[dim]
        managed.refused_tags += len(tags)
        for tag in tags:
            log_event(
                "tag-refused",
                level=logging.WARNING,
                table=managed.name,
                dimension=dim,
                key=tag.key,
                value=tag.value,
                reason=f"{tag.key}={tag.value} would put the {dim} min above its max, with "
                "the configuration's limits and the other tags: not obeyed for that "
                f"dimension, whose min and max stay {kept.min_capacity} and "
                f"{kept.max_capacity}",
            )


def _owned(
    config: ScalerConfig,
    managed: ManagedTable,
    index: str | None,
    dim: str,
    target: ScalableTarget | None,
    state: HeldDimension | None = None,
) -> float | None:
    """The target value the autopilot owns for this dimension's target-tracking policy:
    the configured one (or, with ``tuned_targets``, the one the nightly tuning loop keeps
    in the state store, if allowed: `_tuned_allowed`), when the policy can be written
    back as it is; else None (logged and counted when one is configured: that policy is
    left alone)."""
    name = managed.name
    owned = config.owned_target(name, index, dim)
    if owned is not None and config.tuned_targets and state is not None and state.tuned:
        owned = state.tuned / 100 if _tuned_allowed(config, managed, state) else owned
    elif owned is not None and config.tuned_targets and state is not None and state.tuned_unread:
        _tuned_unread(managed, state)
    if owned is None or (target is not None and target.policy is not None):
        return owned
    managed.targets_not_owned += 1  # counted (TargetsNotOwned): what was configured is not done
    log_event(
        "target-not-owned",
        level=logging.WARNING,
        table=name,
        index=index,
        dimension=dim,
        reason="no target-tracking policy with a predefined metric and nothing else "
        "unknown: its target value is left as it is",
    )
    return None


def _tuned_unread(managed: ManagedTable, state: HeldDimension) -> None:
    """A tuned target value that is not one (malformed, or outside 20 to 90: the loop never
    writes one): the configured target value is aimed at; logged and counted
    (``managed.refused_tuned``, as a value outside the allowed targets)."""
    managed.refused_tuned += 1
    log_event(
        "tuned-target-refused",
        level=logging.WARNING,
        table=managed.name,
        index=state.index,
        dimension=state.dimension,
        reason="not a tuned target value (a whole percent from 20 to 90): the configured "
        "target value is aimed at",
    )


def _tuned_allowed(config: ScalerConfig, managed: ManagedTable, state: HeldDimension) -> bool:
    """Whether the dimension's tuned target value is one the nightly tuning loop may set
    (``tuned_allowed``; none given: any the store reads). One that is not (the app narrowed
    the allowed targets since, or someone else wrote it) is unknown: refused, logged and
    counted (``managed.refused_tuned``), and the configured target value is aimed at."""
    if not config.tuned_allowed or state.tuned in config.tuned_allowed:
        return True
    managed.refused_tuned += 1
    log_event(
        "tuned-target-refused",
        level=logging.WARNING,
        table=managed.name,
        index=state.index,
        dimension=state.dimension,
        value=state.tuned,
        allowed=list(config.tuned_allowed),
        reason="not one of the nightly tuning's allowed targets: the configured target "
        "value is aimed at",
    )
    return False


def _log_ignored(name: str, ignored: Iterable[IgnoredTag]) -> None:
    for tag in ignored:
        log_event(
            "tag-ignored",
            level=logging.WARNING,
            table=name,
            key=tag.key,
            value=tag.value,
            reason=tag.reason,
        )


def _read_tags(dynamodb: DynamoDBClient, arn: str) -> dict[str, str]:
    """The table's tags: every page, since a library tag may be on any of them."""
    pages = dynamodb.get_paginator("list_tags_of_resource").paginate(ResourceArn=arn)
    tags = tags_of([tag for page in pages for tag in page.get("Tags") or []])
    if tags is None:
        raise UnsoundListing(f"ListTagsOfResource: the tags of {arn} are unsound")
    return tags


def _active_specs(
    managed: ManagedTable, table: Mapping[str, Any]
) -> list[tuple[str | None, Mapping[str, Any]]]:
    """The table's own description and each ACTIVE GSI's, by index name (None: the table);
    every GSI's name goes to ``managed.indexes``, and one not ACTIVE is logged. ValueError
    for GSIs not each named (`named_gsis`)."""
    specs: list[tuple[str | None, Mapping[str, Any]]] = [(None, table)]
    gsis = table.get("GlobalSecondaryIndexes", [])
    for name, gsi in named_gsis(f"DescribeTable {managed.name}", gsis):
        managed.indexes.append(name)
        status = gsi.get("IndexStatus", "ACTIVE")
        if status != "ACTIVE":
            log_event("index-skipped", table=managed.name, index=name, reason=f"status {status}")
            continue
        specs.append((name, gsi))
    return specs


def _under_target(
    managed: ManagedTable,
    index: str | None,
    dim: str,
    target: ScalableTarget | None,
    state: HeldDimension | None,
    dim_limits: Limits,
    owned: float | None = None,
) -> tuple[Memory | None, Limits]:
    """A dimension's memory and limits: under a scalable target, the state store's memory
    reconciled with the target's minimum (whose base is the minimum), the target's max and
    its policy's aim; elsewhere no memory and ``dim_limits``. A target whose minimum is
    above its maximum is counted (``managed.bad_targets``) and logged."""
    name = managed.name
    if target is None:
        return None, dim_limits
    if target.inverted:
        # a description is untrusted input: held, and counted
        managed.bad_targets += 1
        log_event(
            "target-held",
            level=logging.WARNING,
            table=name,
            index=index,
            dimension=dim,
            target_min=target.min_capacity,
            target_max=target.max_capacity,
            reason=f"the scalable target's MinCapacity ({target.min_capacity}) is above "
            f"its MaxCapacity ({target.max_capacity}); a target needs min <= max. The "
            "dimension is left as it is until the target is fixed",
        )
    memory = reconcile(state, target.min_capacity)
    if memory.changed_elsewhere:
        # Someone else (an operator, a deploy) set the minimum: it is the configured one
        # from now on, never undone
        log_event(
            "minimum-set-elsewhere",
            table=name,
            index=index,
            dimension=dim,
            remembered_base=state.base if state else None,
            remembered_set=state.set_to if state else None,
            target_min=target.min_capacity,
        )
    # the target-tracking policy's own target, where it has one: the scaler and auto
    # scaling aim at the same utilization; an owned policy's is the configured one (its
    # own may be a plan's aim, set by the scaler)
    aim = (
        owned
        if owned is not None
        else target.target_percent / 100
        if target.target_percent is not None
        else dim_limits.target_utilization
    )
    return memory, Limits(memory.base, target.max_capacity, aim)


def _plan(table: ManagedTable, state: HeldDimension | None, quota: int) -> FloorPlan | None:
    """The dimension's plan from the state store; a malformed one is ignored and counted
    (the store is untrusted input too)."""
    if state is None or state.plan is None:
        return None
    plan = parse_plan(state.plan, quota) if state.plan.isascii() else None
    if plan is None:
        table.ignored_tags += 1
        log_event(
            "plan-ignored",
            level=logging.WARNING,
            table=state.table,
            index=state.index,
            dimension=state.dimension,
            value=state.plan[:200],
            reason="expected <start minute>:<aim %>:<reserve>:<least fall>:<floor>/..., "
            "as the scaler writes a plan",
        )
    return plan
