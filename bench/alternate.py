"""Old code against new, call by call in one process: the only comparison this box allows.

    git worktree add /tmp/old <commit>
    python -m bench.alternate --old /tmp/old --size 5m --schema 30

The box's speed drifts by 30-40 % within minutes, so two runs minutes apart (or two
processes one after the other) compare loosely: a change of 5-20 % drowns in it. Here the
``hermes_state`` of ``--old`` (a checkout) is copied aside as ``hermes_state_old`` -- the
package imports itself only relatively, so both load in one interpreter -- and each call of
the browser's default list (``first_page_by_activity``'s calls, and the first page by start)
is run on both, old and new alternating call by call, each on its own reader of the same
store. Both see the same minutes. Printed: p50 / p95 of the whole call and of the time inside
SQLite (every statement timed, as :mod:`bench.floor` does) for each, and new / old.

Nothing of the old checkout is imported but its ``hermes_state`` (copied to a temporary
directory, removed after).
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from .floor import _TimedConnection


def _calls(package: str, path: Path) -> tuple[dict[str, Callable[[], object]], list]:
    """The calls to compare, on a fresh reader of ``path`` from ``package``, and the log its
    timed connection fills."""
    state = importlib.import_module(package)
    listing = importlib.import_module(package + ".listing")
    internal = list(importlib.import_module(package + ".visibility").INTERNAL_SOURCES)
    db = state.SessionDB(path, read_only=True)
    calls = {
        "list_sessions_rich, by activity": lambda: db.list_sessions_rich(
            limit=50, exclude_sources=internal, order_by_last_active=True),
        "listing.page, by activity": lambda: listing.page(db, 0, 50, exclude_sources=internal, by_activity=True),
        "list_sessions_rich, by start": lambda: db.list_sessions_rich(limit=50, exclude_sources=["tool"]),
    }
    for call in calls.values():
        call()  # caches, the recency index, the count
    timed = _TimedConnection(db._conn, [])
    db._conn = timed
    return calls, timed


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def compare(old_root: Path, path: Path, runs: int) -> list[str]:
    scratch = Path(tempfile.mkdtemp(prefix="bench-alternate-"))
    try:
        shutil.copytree(old_root / "hermes_state", scratch / "hermes_state_old",
                        ignore=shutil.ignore_patterns("__pycache__"))
        sys.path.insert(0, str(scratch))
        old_calls, old_timed = _calls("hermes_state_old", path)
        new_calls, new_timed = _calls("hermes_state", path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    lines = []
    for name in new_calls:
        sides = {"old": (old_calls[name], old_timed), "new": (new_calls[name], new_timed)}
        walls: dict[str, list[float]] = {"old": [], "new": []}
        inside: dict[str, list[float]] = {"old": [], "new": []}
        for i in range(runs + 20):
            for label in ("old", "new") if i % 2 else ("new", "old"):
                call, timed = sides[label]
                timed._log = log = []
                t0 = time.perf_counter()
                call()
                wall = (time.perf_counter() - t0) * 1000
                if i >= 20:  # warm-up
                    walls[label].append(wall)
                    inside[label].append(sum(entry[1] for entry in log) * 1000)
        row = [f"{name}:"]
        for label in ("old", "new"):
            row.append(f"{label} {_quantile(walls[label], .5):.2f} / {_quantile(walls[label], .95):.2f}"
                       f" (SQLite {_quantile(inside[label], .5):.2f} / {_quantile(inside[label], .95):.2f})")
        row.append(f"new/old p50 {_quantile(walls['new'], .5) / _quantile(walls['old'], .5):.2f}"
                   f", SQLite {_quantile(inside['new'], .5) / _quantile(inside['old'], .5):.2f}")
        lines.append("  ".join(row))
    return lines


def main(argv: list[str] | None = None) -> int:
    from .run import corpus_path, parse_size

    parser = argparse.ArgumentParser(prog="python -m bench.alternate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="a checkout of the old code (git worktree)")
    parser.add_argument("--size", default="1m")
    parser.add_argument("--schema", type=int, choices=(16, 30), default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--db", type=Path)
    parser.add_argument("--runs", type=int, default=600, help="calls of each side per call compared (default 600)")
    args = parser.parse_args(argv)
    if not (args.old / "hermes_state" / "__init__.py").exists():
        parser.error(f"{args.old} has no hermes_state package")
    path = args.db or corpus_path(parse_size(args.size)[0], args.seed, args.schema)
    if not path.exists():
        parser.error(f"{path} does not exist (build it with python -m bench --size {args.size})")
    print(f"{path.name}: {args.runs} calls a side, old and new alternating (p50 / p95 ms)")
    for line in compare(args.old, path, args.runs):
        print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
