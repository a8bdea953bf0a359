"""Which conversation a session is part of (hermes_state.conversation): the row the human list
shows it in. Checked on the v30 store upstream wrote (real kinds of links) and on stores made
here for the shapes upstream's fixture lacks (a loop of parent links, a missing parent)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_state.conversation import conversation_members, conversation_root, conversation_roots

P = "20260921_"


@pytest.fixture
def v30(shared_fixtures_dir: Path, tmp_path: Path):
    source = shared_fixtures_dir / "upstream_v30.db"
    if not source.exists():
        pytest.skip(f"{source} not available")
    target = tmp_path / "state.db"
    for suffix in ("", "-wal", "-shm"):
        if Path(str(source) + suffix).exists():
            shutil.copyfile(str(source) + suffix, str(target) + suffix)
    db = SessionDB(target, read_only=True)
    yield db
    db.close()


def test_each_session_belongs_to_the_conversation_the_list_shows_it_in(v30: SessionDB):
    ids = [P + s for s in ("090000_s1", "090500_d1", "100000_g1", "110000_g2", "120000_c1",
                           "121000_c2", "122000_c3", "130000_b1", "140000_r1")]
    roots = conversation_roots(v30.store, ids + ["no-such-session"])
    assert roots == {
        P + "090000_s1": P + "090000_s1",
        P + "090500_d1": P + "090000_s1",   # a delegate run: its parent's conversation
        P + "100000_g1": P + "100000_g1",
        P + "110000_g2": P + "110000_g2",   # a reset child: a conversation of its own
        P + "120000_c1": P + "120000_c1",
        P + "121000_c2": P + "120000_c1",   # a compression chain is one conversation
        P + "122000_c3": P + "120000_c1",
        P + "130000_b1": P + "130000_b1",   # a branch: its own, though its parent is c2
        P + "140000_r1": P + "140000_r1",
        "no-such-session": "no-such-session",
    }
    # The list names the same conversations: each listed row's lineage root is its root.
    listed = v30.list_sessions_rich(limit=50)
    for row in listed:
        assert conversation_root(v30.store, row["id"]) == row.get("_lineage_root_id", row["id"])


def test_a_conversations_members_are_its_chain_and_delegates_not_its_branches(v30: SessionDB):
    assert conversation_members(v30.store, P + "122000_c3") == [P + "120000_c1", P + "121000_c2", P + "122000_c3"]
    assert conversation_members(v30.store, P + "090500_d1") == [P + "090000_s1", P + "090500_d1"]
    assert conversation_members(v30.store, P + "100000_g1") == [P + "100000_g1"]
    assert conversation_members(v30.store, P + "110000_g2") == [P + "110000_g2"]


def test_a_loop_of_parent_links_ends_and_names_a_conversation(tmp_path: Path):
    db = SessionDB(tmp_path / "state.db")
    try:
        db.create_session("a", "cli")
        db.create_session("b", "cli", parent_session_id="a")
        db.end_session("a", "compression")
        db.end_session("b", "compression")
        # A foreign writer closed the loop: a's parent is b, b's parent is a.
        db._execute_write(lambda conn: conn.execute("UPDATE sessions SET parent_session_id = 'b' WHERE id = 'a'"))
        roots = conversation_roots(db.store, ["a", "b"])
        assert set(roots) == {"a", "b"} and set(roots.values()) <= {"a", "b"}
        assert sorted(conversation_members(db.store, "a")) == ["a", "b"]
    finally:
        db.close()


def test_a_child_whose_parent_row_is_gone_is_its_own_conversation(tmp_path: Path):
    db = SessionDB(tmp_path / "state.db")
    try:
        db.create_session("root", "cli")
        db.end_session("root", "compression")
        db.create_session("tip", "cli", parent_session_id="root")
        db.create_session(
            "helper", "subagent", parent_session_id="tip",
            model_config={"_delegate_from": "tip"},
        )
        assert conversation_roots(db.store, ["tip", "helper"]) == {"tip": "root", "helper": "root"}
        # Another writer (foreign keys off, as SQLite's default) deleted the root's row.
        other = sqlite3.connect(tmp_path / "state.db")
        other.execute("DELETE FROM sessions WHERE id = 'root'")
        other.commit()
        other.close()
        assert conversation_roots(db.store, ["tip", "helper"]) == {"tip": "tip", "helper": "tip"}
        assert json.loads(json.dumps(conversation_members(db.store, "helper"))) == ["tip", "helper"]
    finally:
        db.close()
