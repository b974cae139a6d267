"""The tests of the fast path: the client hook, the signals function, the stream reader, surges
and their bounds."""
