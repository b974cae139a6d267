"""Runs in: CDK app (synth time).

The on-demand switch of declared on-demand windows (``add_on_demand_window``): one a stack,
made with the first window, so that a table with none deploys nothing of it.
"""

__all__: list[str] = []
