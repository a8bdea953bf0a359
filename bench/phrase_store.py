"""A copy of a cached corpus where phrases of common words occur, as in a real history.

The generated corpus has the words of ``"staging cluster"``, ``"docker deployment"`` and
``"auth module"`` apart (or not at all), so the phrase-of-common-words class times phrases
that match nothing there. A real store (the held-out 5M store they were timed on) has each word in
~3-5 % of messages and each phrase in a few hundred, spread over the whole history: the case
where ranking the phrase by FTS5 walks the words' doclists again. This makes such a store
from the cached corpus, deterministically:

    python -m bench.phrase_store --size 1m                 # -> bench/.corpus/<corpus>-phrases.db
    python -m bench --db bench/.corpus/corpus-1m-seed0-v3-phrases.db --classes search.common_phrase

Every word of :data:`WORDS` is appended to ~3.5 % of the messages, every phrase of
:data:`PHRASES` to :data:`PHRASE_MESSAGES` of them, chosen at random (seed 44) over all
rowids, through plain ``UPDATE``s (upstream's triggers keep the indexes), and the word index
is merged (``optimize``). The cached corpus is only read; the copy is built under a temporary
name and renamed when complete.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sqlite3
import sys
from pathlib import Path

from .run import corpus_path, parse_size

WORDS = ("deployment", "auth", "module")
PHRASES = ("staging cluster", "docker deployment", "auth module")
#: Share of messages each word of :data:`WORDS` is added to.
WORD_SHARE = 0.035
#: Messages each phrase of :data:`PHRASES` is added to.
PHRASE_MESSAGES = 600


def plant(path: Path, seed: int = 44) -> None:
    """Add the words and phrases to the store at ``path`` (in place)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        rnd = random.Random(seed)
        top = int(conn.execute("SELECT COALESCE(max(id), 0) FROM messages").fetchone()[0])
        if top == 0:
            raise ValueError(f"{path} holds no messages")

        def append(ids: list[int], text: str) -> None:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("UPDATE messages SET content = COALESCE(content, '') || ? WHERE id = ?",
                             [(text, mid) for mid in ids])
            conn.execute("COMMIT")

        for word in WORDS:
            append(rnd.sample(range(1, top + 1), int(top * WORD_SHARE)), f" the {word} looked fine.")
        for phrase in PHRASES:
            append(rnd.sample(range(1, top + 1), min(top, PHRASE_MESSAGES)), f" Then the {phrase} was checked.")
        # The updates leave the word index in many more segments than the corpus's own
        # inserts did (every updated message deleted and written again): merged into one, as
        # FTS5's merges would leave it, so that a walk costs what it does in a store.
        conn.execute("INSERT INTO messages_fts(messages_fts) VALUES ('optimize')")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def copy(source: Path, target: Path) -> None:
    """A consistent copy of ``source`` at ``target`` (whatever its WAL holds); it is only read."""
    for stale in (target, Path(f"{target}-wal"), Path(f"{target}-shm")):
        stale.unlink(missing_ok=True)
    reader = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    try:
        writer = sqlite3.connect(target)
        try:
            reader.backup(writer)
        finally:
            writer.close()
    finally:
        reader.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.phrase_store", description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="1m", help="cached corpus size: 10k, 100k, 1m, ... (default 1m)")
    parser.add_argument("--seed", type=int, default=0, help="corpus seed (default 0)")
    parser.add_argument("--schema", type=int, choices=(16, 30), default=16, help="corpus layout (default 16)")
    parser.add_argument("--out", type=Path, help="where the copy goes (default beside the corpus, -phrases.db)")
    args = parser.parse_args(argv)
    try:
        label, _messages = parse_size(args.size)
    except argparse.ArgumentTypeError as exc:
        print(f"bench.phrase_store: {exc}", file=sys.stderr)
        return 2
    source = corpus_path(label, args.seed, args.schema)
    if not source.exists():
        print(f"bench.phrase_store: no cached corpus at {source} (python -m bench --size {args.size} builds it)",
              file=sys.stderr)
        return 1
    out = args.out or source.with_name(source.stem + "-phrases.db")
    if out.exists():
        print(out)
        return 0
    building = out.with_name(out.name + ".building")
    try:
        copy(source, building)
        plant(building)
    except (sqlite3.Error, OSError, ValueError) as exc:
        print(f"bench.phrase_store: {exc}", file=sys.stderr)
        return 1
    shutil.move(str(building), str(out))
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
