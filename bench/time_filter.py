"""What a time window costs the list: ``python -m bench.time_filter --db PATH [--runs N]``.

A time window (``ListQuery.narrow``'s ``since`` / ``until``, BR-21, CLI-21) is matched against
each conversation's last activity, which is read per row (its newest visible message, and
along the chain for a compression root). This measures, on a store as it is (a bench corpus,
or a copy of a real ``state.db``), read-only:

* the first page (50 rows) by last activity and by start, without a window and with the
  last 7 / 30 days (counted from the store's newest message, so the windows hold the same
  share of any corpus whatever day it is measured) and "until 30 days ago";
* the list's count under each (what the browser's census and the picker's counts read).

Each figure is the median of ``--runs`` runs in one process (the first run warms the page
cache and is left out); wall time, so read them on a quiet machine.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from hermes_state import SessionDB
from hermes_state.listing import ListQuery
from hermes_state.listing.narrow import NO_NARROW, Narrow

DAY = 86400.0


def _median_ms(fn, runs: int) -> float:
    fn()  # (warm)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.time_filter", description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, type=Path, help="the store to measure (opened read-only)")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    db = SessionDB(args.db, read_only=True)
    try:
        newest = db.store.fetchone("SELECT MAX(timestamp) FROM messages")[0] or time.time()
        sessions = db.store.fetchone("SELECT COUNT(*) FROM sessions")[0]
        windows = {
            "no window": NO_NARROW,
            "last 7 days": Narrow(since=newest - 7 * DAY),
            "last 30 days": Narrow(since=newest - 30 * DAY),
            "until 30 days ago": Narrow(until=newest - 30 * DAY),
        }
        print(f"{args.db} ({sessions:,} sessions), median of {args.runs} runs, ms")
        print("| window | conversations | first page by activity | first page by start | count |")
        print("|---|---:|---:|---:|---:|")
        for name, narrow in windows.items():
            query = ListQuery.human(narrow=narrow)
            by_activity = query.with_(order="activity")
            count = db.lister.count_listed(query)
            page_activity = _median_ms(lambda: db.lister.list_summaries(by_activity, 50, 0), args.runs)
            page_start = _median_ms(lambda: db.lister.list_summaries(query, 50, 0), args.runs)
            counting = _median_ms(lambda: db.store.fetchone(
                "SELECT COUNT(*) FROM sessions s " + db.lister.filters(query)[0], db.lister.filters(query)[1]),
                args.runs)
            print(f"| {name} | {count:,} | {page_activity:.1f} | {page_start:.1f} | {counting:.1f} |")
    finally:
        db.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
