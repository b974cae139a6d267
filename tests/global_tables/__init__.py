"""The tests of global tables: the replica-schedule function, the construct, and each replica's
scaler."""
