"""What the unread-only and status filters cost: the list's first page and its count, each
filter against none, on a copy of a store (its watermarks stamped here, never the original's).

    python -m bench.reading PATH [--repeat N]

Figures go in bench/README.md ("Unread and lifecycle status")."""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from hermes_state import ListQuery, SessionDB
from hermes_state.unread import set_read


def _median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.reading")
    parser.add_argument("path", type=Path)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "state.db"
        shutil.copyfile(args.path, copy)
        db = SessionDB(copy)
        try:
            if not db.capabilities.has_session_column("last_read_at"):
                print("the store has no last_read_at: unread-only lists nothing (schema < v30)")
            else:
                # Every tenth conversation read long ago (unread), every tenth marked unread.
                ids = db.lister.rank_listed(ListQuery.human()) if hasattr(db.lister, "rank_listed") else []
                for n, sid in enumerate(ids):
                    if n % 10 == 0:
                        set_read(db.store, sid, True, now=1.0)
                    elif n % 10 == 5:
                        set_read(db.store, sid, False)
            sessions = db._fetchone("SELECT COUNT(*) FROM sessions")[0]
            print(f"{args.path}: {sessions:,} sessions; median of {args.repeat} (ms)")
            print(f"{'filter':<24} {'order':<9} {'page 50':>9} {'count':>9} {'rows':>7}")
            for label, fields in (
                ("none", {}), ("unread only", {"unread_only": True}),
                ("status interrupted", {"statuses": ("interrupted",)}),
                ("status error,empty", {"statuses": ("error", "empty")}),
            ):
                for order in ("started", "activity"):
                    query = ListQuery.human(order=order, **fields)
                    page = _median_ms(lambda: db.list_summaries(query, 50), args.repeat)
                    count = _median_ms(lambda: db.lister.count_listed(query), args.repeat)
                    rows = db.lister.count_listed(query)
                    print(f"{label:<24} {order:<9} {page:>9.1f} {count:>9.1f} {rows:>7,}")
        finally:
            db.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
