"""Synthesized stacks whose IAM the least-privilege and docs tests read."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam

from constructs_pkg import (
    Capacity,
    CapacityRequests,
    GlobalTableCapacity,
    PrewarmMethod,
    ProvisionedTable,
    ThrottleAwareScaler,
)
from tests.support.iam_eval import Template

PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)


DISCOVERY = ("team-capacity", "managed")


def synthesize(*, connected: bool = True) -> Template:
    """The app above; ``connected=False`` leaves the scaler unconnected (its own store):
    it manages no table the requests serve then (one that did would be connected without a
    call), and finds its tables by tag only."""
    stack = cdk.Stack(cdk.App(), "Access")
    orders = ProvisionedTable(
        stack,
        "Orders",
        partition_key=PK,
        read=Capacity(min_capacity=5, max_capacity=500),
        write=Capacity(min_capacity=5, max_capacity=500),
    )
    tagged = dynamodb.Table(
        stack, "Tagged", partition_key=PK, billing_mode=dynamodb.BillingMode.PROVISIONED
    )
    tagged.auto_scale_write_capacity(min_capacity=5, max_capacity=100).scale_on_utilization(
        target_utilization_percent=70
    )
    cdk.Tags.of(tagged).add(*DISCOVERY)  # the table and its scalable target
    ProvisionedTable(
        stack,
        "Catalog",
        partition_key=PK,
        read=Capacity(min_capacity=5, max_capacity=500, high_water_mark=400),
        write=Capacity(min_capacity=5, max_capacity=500),
        prewarm=PrewarmMethod.PROVISION_THEN_SETTLE,
    )
    unmanaged = dynamodb.Table(
        stack, "Unmanaged", partition_key=PK, billing_mode=dynamodb.BillingMode.PROVISIONED
    )
    unmanaged.auto_scale_write_capacity(min_capacity=5, max_capacity=100).scale_on_utilization(
        target_utilization_percent=70
    )
    scaler = ThrottleAwareScaler(
        stack,
        "Scaler",
        tables=[orders] if connected else [],
        tag_key=DISCOVERY[0],
        tag_value=DISCOVERY[1],
        own_target=True,
    )
    requests = CapacityRequests(stack, "Requests", tables=[orders])
    if connected:
        requests.connect(scaler)
    worker = iam.Role(stack, "Worker", assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"))
    requests.grant_request(worker)
    return Template(cdk.assertions.Template.from_stack(stack).to_json())


def global_template() -> Template:
    """A stack with two global tables (``Orders`` in us-east-1 and eu-west-1, ``Audit`` in
    us-east-1 and ap-south-1), each with a GlobalTableCapacity: one replica-schedule role
    serves both."""
    stack = cdk.Stack(cdk.App(), "Global", env=cdk.Environment(region="us-east-1"))
    for name, region in (("Orders", "eu-west-1"), ("Audit", "ap-south-1")):
        table = dynamodb.TableV2(
            stack,
            name,
            partition_key=PK,
            billing=dynamodb.Billing.provisioned(
                read_capacity=dynamodb.Capacity.autoscaled(max_capacity=100),
                write_capacity=dynamodb.Capacity.autoscaled(max_capacity=100),
            ),
            replicas=[dynamodb.ReplicaTableProps(region=region)],
        )
        GlobalTableCapacity(stack, f"{name}Capacity", table=table)
    return Template(cdk.assertions.Template.from_stack(stack).to_json())
