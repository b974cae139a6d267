"""Runs in: scaler Lambda, workstation (examples, benchmarks).

The throttle-aware scaler Lambda: :mod:`.handler` (entry point) and :mod:`.tick`, whose
steps are :mod:`.prepare`, :mod:`.refusals` and :mod:`.plans`."""

__all__: list[str] = []
