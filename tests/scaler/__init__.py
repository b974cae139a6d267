"""The tests of the scaler: its construct, its tick against moto and under faults, its policy,
forecast and settings."""
