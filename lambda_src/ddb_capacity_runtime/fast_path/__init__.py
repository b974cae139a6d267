"""Runs in: workers (the client hook), signals Lambda, stream reader Lambda.

The fast path, whole: capacity raised within seconds of a surge or a throttle instead of
waiting for CloudWatch's minutes (docs/guides/fast-path.md). Its pure rules are in the core
(`core.surge`: the one surge decision's bounds and reports; `core.bucket`: the burst-bucket
estimate; `core.stream`: DynamoDB's sizing of stream records; `core.report_batch`); the
rest is here, a module each:

- the client hook, in the user's own processes: `hook`
  ([`watch`][ddb_capacity_runtime.fast_path.hook.watch], the public face), `parse` (what
  a request touched, consumed and met), `ledger` (the sums, and when a report is due),
  `sender` (the Lambda invocation);
- the signals function: `signals_function` (its entry point: one report or a batch) and
  `surge_raise` (the one surge decision, `surge_dimension`, and the raise under the lease),
  `surge_settings` (its environment and fixed times) and `corroboration` (what CloudWatch
  measured, against what the processes report);
- the stream reader: `stream_reader`.

Their items in the state store are read and written by the one layer that calls AWS:
`aws.combiner` (where every process's and the stream's reports of a dimension meet) and
`aws.stream_counts` (the per-10-second counters every shard of a stream adds to).

Nothing is imported here, so that the hook loads only what it needs.
"""

__all__: list[str] = []
