"""The browser's first page counted in instructions: a measure that does not drift with the box.

    python -m bench.instructions --size 1m [--schema 30] [--calls 20]

The wall clock of this machine drifts by up to 40 % within an hour, more than most changes
to a 2 ms call are worth. An instruction count does not: ``valgrind --tool=callgrind`` counts
the instructions the CPU retires, the same for the same code, data and interpreter whatever
else runs (repeat a run and it prints the same number). For each of the
``first_page_by_activity`` calls (``list_sessions_rich`` and ``listing.page``, as the bench
times them) this prints, per call:

* **the call**: warm calls counted alone (start-up, the first walk and the warm-up calls
  are left out: the counters are zeroed and dumped around the counted calls);
* **its statements**: the statements one call ran, replayed in one read transaction
  through a plain cursor -- what SQLite and Python's ``sqlite3`` module cost for them (the
  statements' work, every value turned into a Python object); the rest is the library's
  Python;
* **the rows alone**: the page's rows read by id in one statement with their previews and
  last activity, as dicts (``listing.page``: validated as summaries): what any listing
  must do to hand these rows to Python, without finding or ranking them (a compression
  chain's row is read as its tip's own, not projected onto its root).

and the wall-clock p50 of the same call measured beside it (no valgrind), to turn counts
into time on this box today. Needs ``valgrind`` (Debian's ``valgrind`` package); each count
takes a few seconds to a minute under it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CALLS = ("list_sessions_rich", "listing.page")
PARTS = ("call", "statements", "rows")
WARM = 5


def _calls(db) -> dict:
    from hermes_state import listing
    from hermes_state.listing import ListQuery, Order
    from hermes_state.visibility import INTERNAL_SOURCES

    excluded = list(INTERNAL_SOURCES)
    return {
        "list_sessions_rich": lambda: db.list_sessions_rich(
            limit=50, exclude_sources=excluded, order_by_last_active=True),
        "listing.page": lambda: listing.page(db.store, ListQuery(exclude_sources=excluded, order=Order.ACTIVITY), 0, 50),
    }


def _workload(db, which: str, part: str):
    """The function counted: ``part`` of call ``which`` (see the module's doc)."""
    call = _calls(db)[which]
    if part == "call":
        return call
    conn = db._conn
    result = call()
    if part == "statements":
        from .floor import _TimedConnection

        log: list = []
        db._conn = _TimedConnection(conn, log)  # (its timing is not counted: only the replay is)
        try:
            call()
        finally:
            db._conn = conn
        statements = [(sql, params) for sql, _s, _rows, params in log if sql not in ("BEGIN", "COMMIT")]
        cursor = conn.cursor()
        cursor.row_factory = None

        def replay():
            conn.execute("BEGIN")
            try:
                for sql, params in statements:
                    cursor.execute(sql, params).fetchall()
            finally:
                conn.execute("COMMIT")

        return replay
    from hermes_state.preview import compute_preview

    rows = result[0] if which == "listing.page" else result
    ids = [row.id if hasattr(row, "id") else row["id"] for row in rows]
    rules = db.rules
    columns = db.lister.summary_columns() if which == "listing.page" else "s.*"
    sql = (f"SELECT {columns}, {rules.preview_sql()} AS preview, {rules.last_active_sql()} AS last_active "
           f"FROM sessions s WHERE s.id IN ({','.join('?' * len(ids))})")
    cursor = conn.cursor()
    cursor.row_factory = None

    def read_dicts():
        cursor.execute(sql, ids)
        names = [d[0] for d in cursor.description]
        out = []
        for row in cursor.fetchall():
            data = dict(zip(names, row))
            data["preview"] = compute_preview(data["preview"])
            out.append(data)
        return out

    if which == "listing.page":
        from hermes_state.models import SessionSummary

        # (from_rows before the summary columns read their defaults in SQL, for an old checkout)
        typed = getattr(SessionSummary, "from_listing", SessionSummary.from_rows)
        return lambda: typed(read_dicts())
    return read_dicts


def _child(path: Path, which: str, part: str, calls: int) -> None:
    """Run under callgrind: the counted calls sit between ``getppid`` (counters zeroed) and
    ``getpgrp`` (counters dumped)."""
    from hermes_state import SessionDB

    db = SessionDB(path, read_only=True)
    fn = _workload(db, which, part)
    for _ in range(WARM):
        fn()
    os.getppid()
    for _ in range(calls):
        fn()
    os.getpgrp()
    db.close()


def count(path: Path, which: str, part: str, calls: int) -> int:
    """Instructions per call of ``part`` of ``which`` on ``path`` (callgrind)."""
    with tempfile.TemporaryDirectory(prefix="hermes-ir-") as tmp:
        out = Path(tmp) / "callgrind.out"
        env = dict(os.environ, PYTHONHASHSEED="0")
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", "--zero-before=os_getppid", "--dump-before=os_getpgrp",
             f"--callgrind-out-file={out}", sys.executable, "-m", "bench.instructions", "--child",
             which, part, str(path), "--calls", str(calls)],
            capture_output=True, text=True, env=env, cwd=Path(__file__).resolve().parent.parent,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"valgrind failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
        dumped = Path(f"{out}.1")  # the part dumped at getpgrp: the counted calls alone
        for line in dumped.read_text().splitlines():
            if line.startswith("summary:"):
                return int(line.split()[1]) // calls
    raise RuntimeError("callgrind wrote no summary")


def wall_p50(path: Path, which: str, runs: int = 200) -> float:
    """The call's wall-clock p50 in ms, here and now (no valgrind)."""
    from hermes_state import SessionDB

    db = SessionDB(path, read_only=True)
    try:
        call = _calls(db)[which]
        for _ in range(20):
            call()
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            call()
            times.append((time.perf_counter() - t0) * 1000)
        return statistics.median(times)
    finally:
        db.close()


def main(argv: list[str] | None = None) -> int:
    from .run import corpus_path, parse_size

    parser = argparse.ArgumentParser(prog="python -m bench.instructions", description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="1m")
    parser.add_argument("--schema", type=int, choices=(16, 30), default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--db", type=Path, help="database to count on instead of the cached corpus")
    parser.add_argument("--calls", type=int, default=20, help="calls counted per figure (default 20)")
    parser.add_argument("--child", nargs=3, metavar=("CALL", "PART", "DB"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        which, part, path = args.child
        _child(Path(path), which, part, args.calls)
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    path = args.db or corpus_path(parse_size(args.size)[0], args.seed, args.schema)
    if not Path(path).exists():
        print(f"{path} does not exist: build it first (python -m bench --size {args.size} ...)", file=sys.stderr)
        return 2
    print(f"{Path(path).name}, {args.calls} counted calls each (instructions per call)")
    for which in CALLS:
        counts = {part: count(Path(path), which, part, args.calls) for part in PARTS}
        ms = wall_p50(Path(path), which)
        rate = counts["call"] / ms / 1e6  # instructions a ms / 1e6: billions a second
        python = counts["call"] - counts["statements"]
        print(f"{which}: {counts['call'] / 1e6:.2f} M (wall p50 now {ms:.2f} ms: {rate:.2f} G instructions/s)")
        print(f"    its statements replayed (SQLite + sqlite3): {counts['statements'] / 1e6:.2f} M "
              f"({counts['statements'] / counts['call']:.0%}); the library's Python {python / 1e6:.2f} M")
        print(f"    the page's rows alone, read by id: {counts['rows'] / 1e6:.2f} M "
              f"= {counts['rows'] / rate / 1e6:.2f} ms at that rate")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
