"""Old code against new, call by call in one process: the only comparison this box allows.

    git worktree add /tmp/old <commit>
    python -m bench.alternate --old /tmp/old --size 5m --schema 30
    python -m bench.alternate --old /tmp/old --size 5m --schema 30 --search "docker compose" "dock*"
    python -m bench.alternate --old /tmp/old --size 1m --schema 30 --typed docker "deploy fail"

The box's speed drifts by 30-40 % within minutes, so two runs minutes apart (or two
processes one after the other) compare loosely: a change of 5-20 % drowns in it. Here the
``hermes_state`` of ``--old`` (a checkout) is copied aside as ``hermes_state_old`` -- the
package imports itself only relatively, so both load in one interpreter -- and each call of
the browser's default list (``first_page_by_activity``'s calls, and the first page by start)
is run on both, old and new alternating call by call, each on its own reader of the same
store. Both see the same minutes. Printed: p50 / p95 of the whole call and of the time inside
SQLite (every statement timed, as :mod:`bench.floor` does) for each, and new / old.

``--search``: the given searches instead (``SessionDB.search``, 20 hits, each call on a reader
that forgot what its last search kept, as the bench's search rows do). ``--typed``: each word
typed key by key as the browser searches it (40 hits, the last word a prefix, internal
sources excluded), old and new alternating word by word, every key timed.

Nothing of the old checkout is imported but its ``hermes_state`` (copied to a temporary
directory, removed after).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from .floor import _TimedConnection


def _forgetter(package: str, db) -> Callable[[], None]:
    """What drops ``db``'s kept search answers in ``package``: the search package's
    ``forget_answers`` on the store, or (a checkout from before it) ``search_engine``'s on
    the facade."""
    try:
        forget = importlib.import_module(package + ".search").forget_answers
    except AttributeError:
        forget = importlib.import_module(package + ".search_engine").forget_answers
        return lambda: forget(db)
    return lambda: forget(db.store)


def _calls(
    package: str, path: Path, searches: list[str] | None = None
) -> tuple[dict[str, Callable[[], object]], list]:
    """The calls to compare, on a fresh reader of ``path`` from ``package``, and the log its
    timed connection fills."""
    state = importlib.import_module(package)
    listing = importlib.import_module(package + ".listing")
    internal = list(importlib.import_module(package + ".visibility").INTERNAL_SOURCES)
    db = state.SessionDB(path, read_only=True)
    if searches:
        forget = _forgetter(package, db)

        def searched(query: str) -> Callable[[], object]:
            return lambda: (forget(), db.search(query, limit=20, sort="auto"))[1]

        calls = {f"search {query!r}": searched(query) for query in searches}
    else:
        query_type = getattr(listing, "ListQuery", None)  # (an old checkout's list took loose filters)
        # (a newer checkout's list takes the store, an older one the SessionDB)
        on = db.store if next(iter(inspect.signature(listing.page).parameters)) == "store" else db
        if query_type is not None:
            def page() -> object:
                return listing.page(on, query_type(exclude_sources=tuple(internal), order="activity"), 0, 50)
        else:
            def page() -> object:
                return listing.page(db, 0, 50, exclude_sources=internal, by_activity=True)
        calls = {
            "list_sessions_rich, by activity": lambda: db.list_sessions_rich(
                limit=50, exclude_sources=internal, order_by_last_active=True),
            "listing.page, by activity": page,
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


def _old_package(old_root: Path) -> Path:
    """``old_root``'s ``hermes_state`` copied aside as ``hermes_state_old`` (importable once
    the returned folder is on ``sys.path``; remove the folder after)."""
    scratch = Path(tempfile.mkdtemp(prefix="bench-alternate-"))
    shutil.copytree(old_root / "hermes_state", scratch / "hermes_state_old",
                    ignore=shutil.ignore_patterns("__pycache__"))
    sys.path.insert(0, str(scratch))
    return scratch


def compare(old_root: Path, path: Path, runs: int, searches: list[str] | None = None) -> list[str]:
    scratch = _old_package(old_root)
    try:
        old_calls, old_timed = _calls("hermes_state_old", path, searches)
        new_calls, new_timed = _calls("hermes_state", path, searches)
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


def compare_typed(old_root: Path, path: Path, rounds: int, words: list[str]) -> list[str]:
    """Each of ``words`` typed key by key on each side (old and new alternating word by word,
    a reader that forgot its answers at each word's start): every key's search timed."""
    scratch = _old_package(old_root)
    try:
        sides = {}
        for label, package in (("old", "hermes_state_old"), ("new", "hermes_state")):
            state = importlib.import_module(package)
            internal = list(importlib.import_module(package + ".visibility").INTERNAL_SOURCES)
            db = state.SessionDB(path, read_only=True)
            sides[label] = (db, internal, _forgetter(package, db))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    keys: dict[str, dict[str, list[float]]] = {"old": {}, "new": {}}
    for i in range(rounds + 1):
        for word in words:
            for label in ("old", "new") if (i + len(word)) % 2 else ("new", "old"):
                db, internal, forget = sides[label]
                forget()
                for end in range(1, len(word) + 1):
                    t0 = time.perf_counter()
                    db.search(word[:end], limit=40, prefix_last=True, exclude_sources=internal, sort="auto")
                    if i:  # (the first round warms both)
                        keys[label].setdefault(word[:end], []).append((time.perf_counter() - t0) * 1000)
    every = {label: [ms for values in keys[label].values() for ms in values] for label in keys}
    lines = [
        f"every key: old {_quantile(every['old'], .5):.2f} / {_quantile(every['old'], .95):.2f}"
        f"  new {_quantile(every['new'], .5):.2f} / {_quantile(every['new'], .95):.2f}"
        f"  new/old p50 {_quantile(every['new'], .5) / _quantile(every['old'], .5):.2f}"
    ]
    for key in keys["new"]:
        old, new = _quantile(keys["old"][key], .5), _quantile(keys["new"][key], .5)
        lines.append(f"{key!r}: old {old:.2f}  new {new:.2f}  new/old {new / old:.2f}")
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
    parser.add_argument("--search", nargs="+", metavar="QUERY", help="compare these searches instead of the list")
    parser.add_argument("--typed", nargs="+", metavar="WORDS", help="compare these typed key by key (rounds: --runs)")
    args = parser.parse_args(argv)
    if not (args.old / "hermes_state" / "__init__.py").exists():
        parser.error(f"{args.old} has no hermes_state package")
    path = args.db or corpus_path(parse_size(args.size)[0], args.seed, args.schema)
    if not path.exists():
        parser.error(f"{path} does not exist (build it with python -m bench --size {args.size})")
    if args.typed:
        print(f"{path.name}: {args.runs} rounds a side, typed key by key, old and new alternating (p50 / p95 ms)")
        lines = compare_typed(args.old, path, args.runs, args.typed)
    else:
        print(f"{path.name}: {args.runs} calls a side, old and new alternating (p50 / p95 ms)")
        lines = compare(args.old, path, args.runs, args.search)
    for line in lines:
        print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
