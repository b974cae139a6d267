"""Runs in: CDK app (synth time).

Where the library's alarms go: the topic a construct is given (``alarm_topic``), else one
shared topic and KMS key per stack (`shared_alarm_topic`)."""

from __future__ import annotations

from typing import cast

from aws_cdk import Annotations, Aws, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from constructs import Construct

from ddb_capacity_runtime.core.errors import CapacityConfigError, shown

SHARED_ALARMS_ID = "DynamoDBCapacityAlarms"
"""The id, under its stack, of the library's shared alarm topic and its key."""


def alarm_topic(scope: Construct, display_name: str) -> sns.Topic:
    """A topic for alarms: SSL enforced, encrypted with its own KMS key (about $1 a month),
    which only CloudWatch alarms of this account may use to publish. Its topic policy (made
    for the SSL rule, it replaces SNS's default one) allows those alarms to publish: without
    that statement CloudWatch is not authorized to (sns:Publish), and no alarm notifies."""
    key = kms.Key(
        scope,
        "TopicKey",
        enable_key_rotation=True,
        description=f"Encrypts the topic {display_name}",
    )
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid="AlarmsOfThisAccount",
            principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
            actions=["kms:Decrypt", "kms:GenerateDataKey*"],
            resources=["*"],
            conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
        )
    )
    topic = sns.Topic(scope, "Alarms", master_key=key, enforce_ssl=True, display_name=display_name)
    topic.add_to_resource_policy(
        iam.PolicyStatement(
            sid="AlarmsOfThisAccountPublish",
            principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
            actions=["sns:Publish"],
            resources=[topic.topic_arn],
            conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
        )
    )
    return topic


def shared_alarm_topic(scope: Construct) -> sns.ITopic:
    """The library's alarm topic of ``scope``'s stack: one topic and one KMS key a stack,
    made by the first construct that needs it (under the stack, id `SHARED_ALARMS_ID`) and
    shared by every construct of the library given no ``alarm_topic``."""
    stack = Stack.of(scope)
    holder = stack.node.try_find_child(SHARED_ALARMS_ID)
    if holder is None:
        holder = Construct(stack, SHARED_ALARMS_ID)
        return alarm_topic(holder, "DynamoDB capacity alarms")
    return cast(sns.ITopic, holder.node.find_child("Alarms"))


def chosen_alarm_topic(
    scope: Construct, where: str, alarm_topic: object, topic: object
) -> sns.ITopic:
    """A construct's alarm topic: ``alarm_topic``; else ``topic`` (the earlier name, with a
    warning at synth); else the stack's `shared_alarm_topic`."""
    if alarm_topic is not None and topic is not None:
        raise CapacityConfigError(
            f"{where}: topic: got a topic beside alarm_topic; expected alarm_topic alone "
            "(topic is its earlier name)"
        )
    given = alarm_topic if alarm_topic is not None else topic
    name = "alarm_topic" if alarm_topic is not None else "topic"
    if given is None:
        return shared_alarm_topic(scope)
    if not isinstance(getattr(given, "topic_arn", None), str):
        raise CapacityConfigError(
            f"{where}: {name}: got {shown(given)}; expected an SNS topic (aws_sns.ITopic), "
            "or None (the stack's shared library topic)"
        )
    if topic is not None:
        Annotations.of(scope).add_warning_v2(
            "ddb-capacity:topic-renamed",
            "topic is now alarm_topic, the same name on every construct of the library; "
            "topic will be removed in a later release",
        )
    return cast(sns.ITopic, given)
