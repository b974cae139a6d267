"""Runs in: settle Lambda.

The settle custom resource of ``PROVISION_THEN_SETTLE``: `plan` decides (pure),
`handler` talks to DynamoDB and CloudFormation."""

__all__: list[str] = []
