"""The feature modules work on a bare Store: SessionDB is a facade over them, not something
they need (docs/architecture.md, "Layers"). What a module writes through a store, the facade
reads back; what the facade's export or trash does, a store alone does the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_state import SessionDB, Store
from hermes_state import deletion, maintenance, messages_read, messages_write, sessions, titles
from hermes_state.export import iter_export, render_chunks
from hermes_state.listing.engine import lister_of
from hermes_state.trash import delete_with_snapshot, undo_delete


@pytest.fixture
def store(db_path: Path):
    opened = Store(db_path)
    yield opened
    opened.close()


def test_a_session_written_through_the_modules_reads_back_through_the_facade(store: Store, db_path: Path):
    sessions.create_session(store, "s1", "cli", model="m")
    first = messages_write.append_message(store, "s1", "user", "hello there", timestamp=100.0)
    messages_write.append_message(store, "s1", "assistant", "hi", tool_calls=[{"id": 1}, {"id": 2}])
    assert titles.set_session_title(store, "s1", "  greeting  ") is True
    sessions.update_token_counts(store, "s1", input_tokens=5, output_tokens=7)
    sessions.end_session(store, "s1", "user_exit")

    db = SessionDB(db_path, read_only=True)
    try:
        row = db.get_session("s1")
        assert (row["title"], row["message_count"], row["tool_call_count"]) == ("greeting", 2, 2)
        assert (row["input_tokens"], row["output_tokens"], row["end_reason"]) == (5, 7, "user_exit")
        assert [m["content"] for m in db.get_messages("s1")] == ["hello there", "hi"]
        assert db.get_messages("s1")[0]["id"] == first
        assert db.resolve_session_by_title("greeting") == "s1"
    finally:
        db.close()


def test_the_facade_and_the_modules_answer_alike_on_one_store(db: SessionDB):
    db.create_session("root", "cli")
    db.append_message("root", "user", "question one")
    db.append_message("root", "assistant", "answer one")
    db.end_session("root", "compression")
    db.create_session("tip", "cli", parent_session_id="root")
    db.append_message("tip", "user", "question two")
    store = db.store
    assert messages_read.get_messages_as_conversation(store, "tip", include_ancestors=True) == (
        db.get_messages_as_conversation("tip", include_ancestors=True)
    )
    assert [m["content"] for m in db.get_messages_as_conversation("tip", include_ancestors=True)] == [
        "question one", "answer one", "question two",
    ]
    assert sessions.get_session(store, "tip") == db.get_session("tip")
    assert titles.next_title_in_lineage(store, "x") == db.get_next_title_in_lineage("x") == "x"


def test_a_bare_store_exports_what_the_facade_exports(db: SessionDB, db_path: Path):
    for i in range(3):
        db.create_session(f"s{i}", "cli" if i else "telegram")
        db.append_message(f"s{i}", "user", f"message {i}")
    through_facade = list(render_chunks(iter_export(db), "jsonl"))
    reader = Store(db_path, read_only=True)
    try:
        assert list(render_chunks(iter_export(reader), "jsonl")) == through_facade
        assert len(through_facade) == 3
    finally:
        reader.close()


def test_a_delete_and_its_undo_run_on_a_bare_store(store: Store):
    sessions.create_session(store, "gone", "cli")
    messages_write.append_message(store, "gone", "user", "keep me")
    outcome = delete_with_snapshot(lambda: store, "gone", sessions_dir=None)
    assert outcome.ok and sessions.get_session(store, "gone") is None
    report = undo_delete(lambda: store, outcome.deleted)
    assert report.restored, report.error
    assert [m["content"] for m in messages_read.get_messages(store, "gone")] == ["keep me"]


def test_every_reader_of_one_store_shares_its_list(db: SessionDB, db_path: Path):
    # The facade, an export and a recall over one connection use one Lister: its pins,
    # counts and recency index, and one close hook that keeps the recency index.
    hooks = len(db.store.on_close)
    assert lister_of(db.store) is db.lister
    assert lister_of(db.store) is lister_of(db.store)
    assert len(db.store.on_close) == hooks
    other = Store(db_path, read_only=True)
    try:
        assert lister_of(other) is not db.lister
    finally:
        other.close()


def test_the_empty_sweep_takes_only_ended_empty_sessions_and_a_delete_skips_unknown_ids(store: Store):
    sessions.create_session(store, "empty", "cli")
    sessions.end_session(store, "empty", "user_exit")
    sessions.create_session(store, "full", "cli")
    messages_write.append_message(store, "full", "user", "hi")
    sessions.end_session(store, "full", "user_exit")
    assert maintenance.count_empty_sessions(store) == 1
    assert maintenance.delete_empty_sessions(store) == 1
    assert sessions.get_session(store, "empty") is None
    assert sessions.get_session(store, "full") is not None
    assert deletion.delete_sessions(store, ["full", "never-was", 7]) == 1  # type: ignore[list-item]


def test_a_session_column_outside_the_settable_ones_is_refused(store: Store):
    sessions.create_session(store, "s", "cli")
    with pytest.raises(ValueError, match="not a settable session column"):
        sessions.update_column(store, "s", "title = 'x', model", "y")
    sessions.update_column(store, "s", "model", "gpt")
    assert sessions.get_session(store, "s")["model"] == "gpt"


def test_a_recall_on_a_bare_store_answers_as_on_the_facade(db: SessionDB, db_path: Path):
    from hermes_state.retrieval import recall

    for sid, words in (("a", "nginx reload failed"), ("b", "nginx config fixed"), ("c", "kafka lag")):
        db.create_session(sid, "cli")
        db.append_message(sid, "user", words)
    reader = Store(db_path, read_only=True)
    try:
        on_store, on_facade = recall(reader, "nginx"), recall(db, "nginx")
        assert [r.session_id for r in on_store.results] == [r.session_id for r in on_facade.results]
        assert sorted(r.session_id for r in on_store.results) == ["a", "b"]
        assert [r.session_id for r in recall(reader, "")] == [r.session_id for r in recall(db, "")]
    finally:
        reader.close()
