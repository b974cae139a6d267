"""Runs in: CDK app (synth), workstation (simulator, schedules).

Errors shared by the constructs, the run-time code and the tools."""


class CapacityConfigError(ValueError):
    """A capacity setting that DynamoDB or Application Auto Scaling would refuse."""
