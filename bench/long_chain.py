"""A store holding one very long compression chain: a gateway chat that compressed N times.

``python -m bench.long_chain PATH --segments 200000 [--beside CORPUS]`` writes PATH (a fresh
file): the chain's segments ``chain-000000`` … (each ended ``compression`` a second before
the next started, its parent the one before; the last one live), two messages each; with
``--beside`` the chain is added to a copy of that store instead (a normal corpus with one
monster chat in it). Used by the ``long_chain`` bench classes (``bench/chain_suite.py``) and
by the tests of long chains (at a few thousand segments).

The rows go in with plain ``executemany`` on one connection (the store made by
:class:`~hermes_state.SessionDB`, so the schema, FTS tables and triggers are upstream's):
the insert path of a real gateway (one ``append_message`` a message) would take an hour for
200,000 segments and adds nothing to what is measured here, which is reading the chain.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from hermes_state import SessionDB

#: The chain's first segment starts here (2025-12-01 00:00 UTC): before the bench corpus's
#: anchor, so a chain beside it is neither the newest nor the oldest conversation... except
#: that its live tip is the newest activity (it is a chat still going on).
CHAIN_START = 1764547200.0
#: Seconds between segment starts; each segment's messages sit inside its span.
STEP = 10.0
#: A word only the chain's messages carry (every 1,000th segment's user message), so a search
#: for it finds hits spread along the whole chain.
CHAIN_WORD = "zanzibarquokka"
#: The word every segment's reply carries: a search hitting every segment of the chain.
EVERY_SEGMENT_WORD = "compressedturn"
PREFIX = "chain-"


def segment_id(index: int) -> str:
    return f"{PREFIX}{index:06d}"


@dataclass(frozen=True)
class Chain:
    path: Path
    segments: int
    root: str
    tip: str


def build_chain(path: Path, segments: int, *, beside: Path | None = None, source: str = "telegram",
                title: str = "monster gateway chat", tip_at: float | None = None) -> Chain:
    """Write a store at ``path`` holding a ``segments``-long compression chain (see the module
    docstring); ``beside`` copies that store first. ``tip_at``: when the live tip starts
    (default: the chain starts at :data:`CHAIN_START`). ``path`` must not exist."""
    if segments < 1:
        raise ValueError("a chain has at least one segment")
    path = Path(path)
    if path.exists():
        raise FileExistsError(path)
    if beside is not None:
        src = sqlite3.connect(f"file:{beside}?mode=ro", uri=True)
        dst = sqlite3.connect(path)
        src.backup(dst)
        src.close()
        dst.close()
    SessionDB(path).close()  # upstream's schema (or the copy's own, checked)
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=OFF")
        sessions = []
        messages = []
        first = CHAIN_START if tip_at is None else tip_at - (segments - 1) * STEP
        for i in range(segments):
            start = first + i * STEP
            last = i == segments - 1
            sid = segment_id(i)
            sessions.append((
                sid, source, None if i == 0 else segment_id(i - 1), start,
                None if last else start + STEP - 1, None if last else "compression", 2,
                title if i == 0 else f"{title} #{i + 1}",
            ))
            word = f" {CHAIN_WORD}" if i % 1000 == 0 else ""
            messages.append((sid, "user", f"turn {i} of the long chat{word}", start + 1))
            messages.append((sid, "assistant", f"reply {i} {EVERY_SEGMENT_WORD}", start + 2))
        with conn:
            conn.executemany(
                "INSERT INTO sessions (id, source, parent_session_id, started_at, ended_at, end_reason, "
                "message_count, title) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", sessions)
            conn.executemany(
                "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)", messages)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return Chain(path, segments, segment_id(0), segment_id(segments - 1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.long_chain", description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--segments", type=int, default=200_000)
    parser.add_argument("--beside", type=Path, help="a store to copy first (the chain is added to it)")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    try:
        chain = build_chain(args.path, args.segments, beside=args.beside)
    except (OSError, ValueError, sqlite3.Error) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    print(f"{chain.path}: {chain.segments:,} segments, root {chain.root}, tip {chain.tip} "
          f"({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["CHAIN_WORD", "EVERY_SEGMENT_WORD", "Chain", "build_chain", "segment_id"]
