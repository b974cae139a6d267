"""The tests of the table feature: ProvisionedTable's template, adopting a table, the quota
check, tables made to depend on one another."""
