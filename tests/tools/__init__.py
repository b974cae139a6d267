"""The tests of the command line and what it makes: its options and errors, the report pages,
the local command and deploy."""
