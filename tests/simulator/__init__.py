"""The tests of the simulator and the commands built on it: simulate, tune, advise, reserve,
the ensemble and the policies."""
