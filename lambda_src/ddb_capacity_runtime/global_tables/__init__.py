"""Runs in: global-table schedule Lambda.

The scheduled actions of a global table's replicas (``GlobalTableCapacity``): one
CloudFormation custom resource per Region puts the library's actions on that replica's
scalable targets (which ``AWS::DynamoDB::GlobalTable`` creates itself) and removes them
again, never any other. Import the modules themselves.
"""

__all__: list[str] = []
