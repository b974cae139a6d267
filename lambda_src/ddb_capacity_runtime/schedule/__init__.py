"""Runs in: CDK app (synth time), workstation (simulator, schedule files), fleet advisor.

Scheduled scaling checked at build time: Application Auto Scaling's expressions
(`expressions`: ``cron``, ``at``, ``rate``, time zones) and the entries, windows and
timeline a table's schedule makes (`entries`: ``ScheduleEntry``). The constructs check a
schedule with it at synth, and the simulator replays the same schedule with it. Cron
occurrences are computed by cronsim; no Lambda function's asset imports it. Import the
modules themselves.
"""

__all__: list[str] = []
