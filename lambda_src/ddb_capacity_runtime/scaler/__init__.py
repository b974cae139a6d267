"""Runs in: scaler Lambda, workstation (examples, benchmarks).

The throttle-aware scaler Lambda: `handler` (entry point) and `tick`, whose
steps are `prepare`, `refusals` and `plans`."""

__all__: list[str] = []
