"""The coming week of every example table's schedule: each firing in the table's time zone
and in UTC, with the dimension's effective min and max after it (``make demo``)."""

from datetime import UTC, datetime, timedelta

from constructs_pkg import ProvisionedTable

from .__main__ import build_app


def main() -> None:
    app = build_app()
    start = datetime.now(UTC)
    for node in app.node.find_all():
        if not isinstance(node, ProvisionedTable):
            continue
        events = [
            e
            for e in node.schedule_preview(count=500, start=start)
            if e.when < start + timedelta(days=7)
        ]
        if not events:
            continue
        print(f"{node.node.path}: the coming week's schedule ({len(events)} firings)")
        print(
            f"  {'local time':<22} {'UTC':<17} {'dimension':<20} {'entry':<22} {'min':>6} "
            f"{'max':>6}"
        )
        for e in events:
            local = e.when.astimezone(e.placed.tz)
            dim = (
                e.placed.dimension
                if e.placed.index is None
                else (f"{e.placed.index} {e.placed.dimension}")
            )
            print(
                f"  {local:%a %d %b %H:%M %Z}".ljust(24)
                + f" {e.when.astimezone(UTC):%a %d %H:%M}".ljust(18)
                + f" {dim:<20} {e.placed.entry.name:<22} {e.min_capacity:>6} "
                f"{e.max_capacity:>6}"
            )
        print()


if __name__ == "__main__":
    main()
