"""Runs in: on-demand switch Lambda.

Declared on-demand windows carried out: the switch function turns a table (its GSIs with it)
to on-demand at a window's start and back to provisioned at its end, suspending and then
restoring its scalable targets exactly, within DynamoDB's limit of switches a day.
"""

__all__: list[str] = []
