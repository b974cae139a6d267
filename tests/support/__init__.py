"""Helpers the tests of several features share; no test module imports another."""

__all__: list[str] = []
