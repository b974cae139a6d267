"""Runs in: tests.

Apps in the library's default alarm style. The test session sets the detailed style for
every app (tests/conftest.py), so that each check's alarm can be read on its own; an app of
`summary_app` is set back to the default, summary alarms."""

from __future__ import annotations

from typing import Any, cast

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch

from constructs_pkg.common._alarm_sink import OPS_ITEM
from constructs_pkg.common._alarm_summary import ALARMS_CONTEXT


def summary_app(**props: Any) -> cdk.App:
    """An app whose constructs make summary alarms, the library's default."""
    app = cdk.App(**props)
    app.node.set_context(ALARMS_CONTEXT, "summary")
    return app


def alarm_actions_of(stack: cdk.Stack, construct: Any) -> list[Any]:
    """The actions, resolved, that every alarm of ``construct`` takes: its topic's ARN,
    else an OpsItem's."""
    topic = construct.alarm_topic
    if topic is not None:
        return [stack.resolve(topic.topic_arn)]
    found = stack.node.try_find_child("ActionOf")
    alarm = cast(
        cloudwatch.IAlarm,
        found or cloudwatch.Alarm.from_alarm_arn(stack, "ActionOf", "arn:aws:cloudwatch:::a"),
    )
    return [stack.resolve(OPS_ITEM.bind(stack, alarm).alarm_action_arn)]
