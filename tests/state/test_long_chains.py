"""Long compression chains in the storage library: the live tip, the
search's marks and names, and a connection closed while a long read runs on it."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from bench.long_chain import EVERY_SEGMENT_WORD, build_chain, segment_id
from hermes_state import SessionDB
from hermes_state.conversation import conversation_roots
from hermes_state.listing import conversation_labels
from hermes_state.listing.marks import conversation_marks
from hermes_state.tips import conversation_tips

SEGMENTS = 5_000


@pytest.fixture(scope="module")
def chain_path(tmp_path_factory) -> Path:
    return build_chain(tmp_path_factory.mktemp("chain") / "state.db", SEGMENTS).path


def test_a_chain_of_thousands_of_segments_resumes_at_its_live_tip(chain_path: Path) -> None:
    db = SessionDB(chain_path, read_only=True)
    try:
        assert db.get_compression_tip(segment_id(0)) == segment_id(SEGMENTS - 1)
        assert db.get_compression_tip(segment_id(2_500)) == segment_id(SEGMENTS - 1)
        assert db.get_compression_tip(segment_id(SEGMENTS - 1)) == segment_id(SEGMENTS - 1)
        assert db.get_compression_tip("no-such-session") == "no-such-session"
    finally:
        db.close()


def test_a_search_names_and_marks_a_long_chain_by_its_live_tip(chain_path: Path) -> None:
    db = SessionDB(chain_path, read_only=True)
    try:
        hits = db.search(EVERY_SEGMENT_WORD)
        roots = conversation_roots(db.store, [hit.session_id for hit in hits.hits])
        assert set(roots.values()) == {segment_id(0)}
        assert conversation_tips(db.store, [segment_id(0)]) == {segment_id(0): segment_id(SEGMENTS - 1)}
        label = conversation_labels(db.store, [segment_id(0)])[segment_id(0)]
        assert label.text == f"monster gateway chat #{SEGMENTS}"  # the tip's title
        marks = conversation_marks(db.store, [segment_id(0)])[segment_id(0)]
        assert marks.lifecycle is not None
    finally:
        db.close()


def test_a_tip_kept_for_a_search_is_walked_again_after_a_commit(chain_path: Path, tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    source = sqlite3.connect(chain_path)
    target = sqlite3.connect(path)
    source.backup(target)
    source.close()
    target.close()
    reader = SessionDB(path, read_only=True)
    writer = SessionDB(path)
    try:
        tip = segment_id(SEGMENTS - 1)
        assert conversation_tips(reader.store, [segment_id(0)]) == {segment_id(0): tip}
        # The gateway compresses once more: the tip ends, a new segment continues it.
        writer.end_session(tip, "compression")
        ended = writer.get_session(tip)["ended_at"]
        writer.create_session("chain-next", "telegram", parent_session_id=tip)
        writer._execute_write(lambda c: c.execute(
            "UPDATE sessions SET started_at = ? WHERE id = 'chain-next'", (ended + 1,)))
        assert conversation_tips(reader.store, [segment_id(0)]) == {segment_id(0): "chain-next"}
    finally:
        writer.close()
        reader.close()


def test_a_connection_closes_promptly_while_another_thread_reads_through_it(chain_path: Path) -> None:
    db = SessionDB(chain_path, read_only=True)
    outcome: list[BaseException | str] = []
    reading = threading.Event()

    def endless(conn: sqlite3.Connection) -> None:
        # A read of many statements that never ends on its own (as a walk of a very long
        # chain goes on, statement after statement).
        reading.set()
        while True:
            conn.execute("SELECT COUNT(*) FROM messages m JOIN sessions s ON s.id = m.session_id").fetchone()

    def run() -> None:
        try:
            db.store.read(endless)
        except BaseException as exc:  # noqa: BLE001 - what the reader saw is the outcome
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    assert reading.wait(30)
    assert db.store.close_promptly(wait_s=30) is True
    thread.join(30)
    assert not thread.is_alive()
    assert outcome and isinstance(outcome[0], sqlite3.OperationalError) and "interrupt" in str(outcome[0])
    assert db.store.closed

