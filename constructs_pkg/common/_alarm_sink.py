"""Runs in: CDK app (synth time).

Where the library's alarms go: the topic a construct is given (``alarm_topic``; an
`AlarmTopic` is one made for them), else an OpsItem in Systems Manager OpsCenter
(`OPS_ITEM`), which needs no resource of its own."""

from __future__ import annotations

from typing import cast

from aws_cdk import Annotations, Aws
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from constructs import Construct

from ddb_capacity_runtime.core.errors import CapacityConfigError, shown

OPS_ITEM = cw_actions.SsmAction(
    cw_actions.OpsItemSeverity.HIGH, cw_actions.OpsItemCategory.PERFORMANCE
)
"""The action of an alarm given no topic: an OpsItem in the account's and Region's
OpsCenter (severity 2, category Performance), one per alarm until it is resolved
(CloudWatch deduplicates by alarm); no topic, key or policy to deploy or pay for."""


class AlarmTopic(Construct):
    """An SNS topic for the library's alarms, to pass as constructs' ``alarm_topic`` (one for
    all of them, say) and subscribe to: SSL enforced, encrypted with its own KMS key (about
    $1 a month, kept on ``cdk destroy`` as CDK keeps keys), which only CloudWatch alarms of
    this account may use to publish. Its topic policy (made for the SSL rule, it replaces
    SNS's default one) allows those alarms to publish: without that statement CloudWatch is
    not authorized to (sns:Publish), and no alarm notifies. ``topic`` is the topic (child
    ``Alarms``), ``key`` its key (child ``TopicKey``)."""

    def __init__(
        self, scope: Construct, id: str, *, display_name: str = "DynamoDB capacity alarms"
    ) -> None:
        super().__init__(scope, id)
        self.key = kms.Key(
            self,
            "TopicKey",
            enable_key_rotation=True,
            description=f"Encrypts the topic {display_name}",
        )
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AlarmsOfThisAccount",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
                conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
            )
        )
        self.topic = sns.Topic(
            self, "Alarms", master_key=self.key, enforce_ssl=True, display_name=display_name
        )
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AlarmsOfThisAccountPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
            )
        )


def alarm_action(topic: sns.ITopic | None) -> cloudwatch.IAlarmAction:
    """The action every alarm of a construct takes: notify ``topic``, else `OPS_ITEM`."""
    return OPS_ITEM if topic is None else cw_actions.SnsAction(topic)


def chosen_alarm_topic(
    scope: Construct, where: str, alarm_topic: object, topic: object
) -> sns.ITopic | None:
    """A construct's alarm topic: ``alarm_topic``; else ``topic`` (the earlier name, with a
    warning at synth); else None (its alarms open OpsItems, `OPS_ITEM`)."""
    if alarm_topic is not None and topic is not None:
        raise CapacityConfigError(
            f"{where}: topic: got a topic beside alarm_topic; expected alarm_topic alone "
            "(topic is its earlier name)"
        )
    given = alarm_topic if alarm_topic is not None else topic
    name = "alarm_topic" if alarm_topic is not None else "topic"
    if given is None:
        return None
    if not isinstance(getattr(given, "topic_arn", None), str):
        raise CapacityConfigError(
            f"{where}: {name}: got {shown(given)}; expected an SNS topic (aws_sns.ITopic), "
            "or None (an OpsItem in OpsCenter for each alarm)"
        )
    if topic is not None:
        Annotations.of(scope).add_warning_v2(
            "ddb-capacity:topic-renamed",
            "topic is now alarm_topic, the same name on every construct of the library; "
            "topic will be removed in a later release",
        )
    return cast(sns.ITopic, given)
