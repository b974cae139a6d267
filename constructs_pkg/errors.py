"""Errors shared by the constructs and the tools; importing this module loads no CDK."""


class CapacityConfigError(ValueError):
    """A capacity setting that DynamoDB or Application Auto Scaling would refuse."""
