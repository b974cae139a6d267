"""The throttle-aware scaler Lambda: :mod:`.handler` (entry point) and :mod:`.tick`."""
