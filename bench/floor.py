"""Where a search's time goes: SQLite itself versus the Python around it.

    python -m bench.floor --size 5m --schema 30 docker "the server" 服务器
    python -m bench.floor --db state.db --ui dock kube

For each query, ``SessionDB.search`` is timed (median of ``--runs`` warm calls: a typed
prefix's expansion is then cached, as it is for the next keystrokes), then run
again with the store's connection wrapped so that every ``execute`` and every row fetched is
timed: the sum is the *floor*, what SQLite costs for the statements this search runs, with the
rows it reads, on this machine; the rest is the engine's Python. Then once under ``cProfile``
for the Python functions that cost most. ``--sql`` lists the statements with their time and
rows. ``--ui`` searches as the browser does (40 hits, the last word a prefix, internal runs
left out); the default is the bench's search classes (20 hits, nothing left out).

    python -m bench.floor --size 5m --schema 30 --listing

``--typed`` searches every prefix of the queries in order, as the browser does while they are
typed, ``--gap`` seconds apart (0.15, as the bench types) and then back to back, and prints
wall and CPU time of both: the query's floor in the keystroke row.

``--listing`` measures the browser's default list instead (``first_page_by_activity``: the 50
most recently active conversations, internal runs left out, as ``list_sessions_rich`` and as
``listing.page`` with its count), the same way: whole call, the part inside SQLite, the Python.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time
from pathlib import Path

class _TimedCursor:
    """A cursor that adds the time of every call into SQLite to ``log[-1]``."""

    def __init__(self, cursor, log: list) -> None:
        self._cursor = cursor
        self._log = log

    def _timed(self, fn, *args):
        t0 = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self._log[-1][1] += time.perf_counter() - t0

    def execute(self, sql, params=()):
        self._log.append([sql, 0.0, 0, list(params)])  # (params: to replay it, bench.instructions)
        self._timed(self._cursor.execute, sql, params)
        return self

    def fetchone(self):
        row = self._timed(self._cursor.fetchone)
        self._log[-1][2] += row is not None
        return row

    def fetchmany(self, size=None):
        rows = self._timed(self._cursor.fetchmany, *(() if size is None else (size,)))
        self._log[-1][2] += len(rows)
        return rows

    def fetchall(self):
        rows = self._timed(self._cursor.fetchall)
        self._log[-1][2] += len(rows)
        return rows

    def __iter__(self):
        return self

    def __next__(self):
        row = self._timed(self._cursor.__next__)
        self._log[-1][2] += 1
        return row

    def __getattr__(self, name):
        return getattr(self._cursor, name)

    def __setattr__(self, name, value):
        if name in ("_cursor", "_log"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._cursor, name, value)


class _TimedConnection:
    """The connection with every statement's SQLite time recorded in ``log``."""

    def __init__(self, conn, log: list) -> None:
        self._conn = conn
        self._log = log

    def execute(self, sql, params=()):
        return _TimedCursor(self._conn.cursor(), self._log).execute(sql, params)

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)

    def cursor(self):
        return _TimedCursor(self._conn.cursor(), self._log)

    def __getattr__(self, name):
        return getattr(self._conn, name)


def measure(db, query: str, *, runs: int, ui: bool) -> dict:
    """One search as the bench (or, ``ui``, the browser) runs it."""
    from hermes_state.visibility import INTERNAL_SOURCES

    # (sort="auto": what a keystroke asks, the search the targets are for)
    kwargs = (dict(limit=40, prefix_last=True, exclude_sources=list(INTERNAL_SOURCES), sort="auto") if ui
              else dict(limit=20, sort="auto"))
    from hermes_state.search import forget_answers

    def search():
        forget_answers(db.store)  # the same query again: its work, not the last run's memo
        return db.search(query, **kwargs)

    result = search()
    found = measure_call(db, search, runs=runs)
    return {"query": query, "path": f"{result.path}/{result.ranking}", "hits": len(result.hits), **found}


def listing_calls(db) -> dict:
    """The calls of the bench's ``first_page_by_activity`` class, by label."""
    from hermes_state import listing
    from hermes_state.listing import ListQuery, Order
    from hermes_state.visibility import INTERNAL_SOURCES

    excluded = list(INTERNAL_SOURCES)
    return {
        "list_sessions_rich(limit=50, by activity)": lambda: db.list_sessions_rich(
            limit=50, exclude_sources=excluded, order_by_last_active=True),
        "listing.page(0, 50, by_activity=True)": lambda: listing.page(
            db.store, ListQuery(exclude_sources=tuple(excluded), order=Order.ACTIVITY), 0, 50),
    }


def typed(db, queries: list[str], *, gap: float, rounds: int = 3) -> None:
    """Search every prefix of each query in order, as the browser does while they are typed
    (40 hits, the last word a prefix, internal runs left out), ``gap`` seconds apart -- the
    bench types ~0.15 s apart -- and back to back: p50 / p95 of the wall time and of the
    searching thread's CPU time. A search after an idle gap costs more CPU than the same
    search repeated at once (caches, the host waking the CPU): this is the query's floor in
    the keystroke row."""
    from hermes_state.search import forget_answers
    from hermes_state.visibility import INTERNAL_SOURCES

    from .run import percentile

    kwargs = dict(limit=40, prefix_last=True, exclude_sources=list(INTERNAL_SOURCES), sort="auto")
    for label, pause in ((f"{gap:.2f} s apart", gap), ("back to back", 0.0)):
        walls, cpus = [], []
        for round_index in range(rounds + 1):
            for query in queries:
                # Each query typed as if for the first time, as the keystroke row types it:
                # nothing kept from the last round's keys but the prefix expansions.
                forget_answers(db.store)
                for prefix in (query[:i] for i in range(1, len(query) + 1) if query[:i].strip()):
                    if pause:
                        time.sleep(pause)
                    w0, c0 = time.perf_counter(), time.thread_time()
                    db.search(prefix, **kwargs)
                    if round_index:  # the first round warms the page cache up
                        walls.append((time.perf_counter() - w0) * 1000)
                        cpus.append((time.thread_time() - c0) * 1000)
        print(f"typed, {label}: {len(walls)} searches, wall p50 {percentile(walls, 0.5):.2f} "
              f"p95 {percentile(walls, 0.95):.2f} ms, CPU p50 {percentile(cpus, 0.5):.2f} "
              f"p95 {percentile(cpus, 0.95):.2f} ms")


def measure_call(db, call, *, runs: int) -> dict:
    """``call()`` (reading through ``db``) timed whole, then with every statement's time in
    SQLite summed, then profiled: p50s in ms, the median run's statements, the top Python."""
    call()  # warm-up
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1000)
    real = db._conn
    logs: list[list] = []
    floors = []
    timed = _TimedConnection(real, [])
    try:
        db._conn = timed
        call()  # warm-up on this connection object (its caches)
        for _ in range(runs):
            timed._log = log = []
            call()
            floors.append(sum(entry[1] for entry in log) * 1000)
            logs.append(log)
    finally:
        db._conn = real
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(runs):
        call()
    profiler.disable()
    stats = pstats.Stats(profiler)
    top = sorted(
        ((tt, f"{Path(fn).name}:{name}") for (fn, _l, name), (_cc, _nc, tt, _ct, _c) in stats.stats.items()  # type: ignore[attr-defined]
         if fn != "~"),
        reverse=True,
    )[:6]
    median_log = logs[floors.index(sorted(floors)[len(floors) // 2])]
    times.sort()
    return {
        "p50_ms": statistics.median(times),
        "p95_ms": times[min(len(times) - 1, int(len(times) * 0.95))],
        "sqlite_ms": statistics.median(floors),
        "sqlite_p95_ms": sorted(floors)[min(len(floors) - 1, int(len(floors) * 0.95))],
        "statements": [(sql, seconds * 1000, rows) for sql, seconds, rows, _params in median_log],
        "python_top": [(name, tt / runs * 1000) for tt, name in top],
    }


def main(argv: list[str] | None = None) -> int:
    from hermes_state import SessionDB

    from .run import corpus_path, parse_size

    parser = argparse.ArgumentParser(prog="python -m bench.floor", description=__doc__.split("\n\n")[0])
    parser.add_argument("queries", nargs="*")
    parser.add_argument("--size", default="1m")
    parser.add_argument("--schema", type=int, choices=(16, 30), default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--db", type=Path)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--ui", action="store_true", help="search as the browser does (40 hits, prefix, no internal runs)")
    parser.add_argument("--sql", action="store_true", help="print every statement the search ran")
    parser.add_argument("--listing", action="store_true",
                        help="measure the first page by last activity (BR-10) instead of searches")
    parser.add_argument("--typed", action="store_true",
                        help="search every prefix of the queries as typed, --gap seconds apart and back to back")
    parser.add_argument("--gap", type=float, default=0.15, help="seconds between typed searches (default 0.15)")
    parser.add_argument("--cold-prefix", action="store_true",
                        help="also time the first search of each query on a fresh connection (no cached expansion)")
    args = parser.parse_args(argv)
    if not args.queries and not args.listing:
        parser.error("give queries to search, or --listing")
    path = args.db or corpus_path(parse_size(args.size)[0], args.seed, args.schema)
    db = SessionDB(path, read_only=True)
    try:
        if args.listing:
            for label, call in listing_calls(db).items():
                found = measure_call(db, call, runs=args.runs)
                _report(label, found, args.sql)
        if args.typed:
            typed(db, args.queries, gap=args.gap, rounds=max(1, min(args.runs, 5)))
            return 0
        for query in args.queries:
            found = measure(db, query, runs=args.runs, ui=args.ui)
            _report(f"{query!r}: {found['path']}, {found['hits']} hits — search", found, False)
            if args.cold_prefix:
                fresh = SessionDB(path, read_only=True)
                try:
                    fresh.search("warm the connection up", sort="auto")
                    t0 = time.perf_counter()
                    fresh.search(query, **(dict(limit=40, prefix_last=True, sort="auto") if args.ui
                                           else dict(limit=20, sort="auto")))
                    print(f"    first search on a fresh connection: {(time.perf_counter() - t0) * 1000:.2f} ms")
                finally:
                    fresh.close()
            if args.sql:
                _print_statements(found)
    finally:
        db.close()
    return 0


def _report(label: str, found: dict, sql: bool) -> None:
    share = found["sqlite_ms"] / found["p50_ms"] if found["p50_ms"] else 0.0
    print(f"{label} p50 {found['p50_ms']:.2f} ms (p95 {found['p95_ms']:.2f}), inside SQLite "
          f"{found['sqlite_ms']:.2f} ms ({share:.0%}; p95 {found['sqlite_p95_ms']:.2f}), "
          f"{len(found['statements'])} statements")
    print("    Python (tottime per call, profiled): "
          + ", ".join(f"{name} {ms:.2f}" for name, ms in found["python_top"]))
    if sql:
        _print_statements(found)


def _print_statements(found: dict) -> None:
    for sql, ms, rows in found["statements"]:
        print(f"    {ms:7.2f} ms {rows:5d} rows  {' '.join(sql.split())[:260]}")


if __name__ == "__main__":
    raise SystemExit(main())
