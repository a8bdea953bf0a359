"""bench.phrase_store: a copy of a corpus where phrases of common words stand in hundreds of
messages, the cached corpus only read."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from bench import phrase_store
from hermes_workload.corpus import generate_corpus

ROOT = Path(__file__).resolve().parents[2]


def count(path: Path, query: str) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", (query,)).fetchone()[0]
    finally:
        conn.close()


def test_the_phrases_and_their_words_are_planted_into_a_copy(tmp_path):
    source = tmp_path / "corpus.db"
    generate_corpus(source, messages=3000, seed=3, now=1767225600.0)
    before = {phrase: count(source, f'"{phrase}"') for phrase in phrase_store.PHRASES}
    copy = tmp_path / "phrases.db"
    phrase_store.copy(source, copy)
    phrase_store.plant(copy)
    for phrase in phrase_store.PHRASES:
        assert count(copy, f'"{phrase}"') >= before[phrase] + phrase_store.PHRASE_MESSAGES - 5
        assert count(source, f'"{phrase}"') == before[phrase]  # (the corpus itself untouched)
    for word in phrase_store.WORDS:
        assert count(copy, word) >= 3000 * phrase_store.WORD_SHARE


def test_a_missing_corpus_is_one_line_on_stderr(tmp_path):
    done = subprocess.run([sys.executable, "-m", "bench.phrase_store", "--size", "7", "--seed", "12345"],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "no cached corpus" in done.stderr
