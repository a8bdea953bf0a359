"""SPEC §10 (EX-1 … EX-7) and LI-14: export, delete, prune, statistics."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from hermes_state import SessionDB

DAY = 86400.0


def fts_rows(db: SessionDB) -> tuple[int, int]:
    return tuple(
        db._conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
        for t in ("messages_fts", "messages_fts_trigram")
    )


# ---------------------------------------------------------------- EX-1


def test_ex1_export_session(db: SessionDB, make_session):
    make_session(db, "s", started_at=100, title="t", messages=[
        ("user", "hi"), {"role": "assistant", "content": "x", "tool_calls": [{"id": "c"}]}])
    exported = db.export_session("s")
    messages = exported.pop("messages")
    assert exported == db.get_session("s")
    assert "last_active" not in exported
    assert messages == db.get_messages("s")
    assert messages[1]["tool_calls"] == [{"id": "c"}]
    assert db.export_session("missing") is None


# ---------------------------------------------------------------- EX-2


def test_ex2_export_all_mru_with_children_and_tool(db: SessionDB, make_session):
    make_session(db, "old", started_at=100, messages=[{"role": "user", "content": "a", "timestamp": 5000}])
    make_session(db, "kid", started_at=300, parent_session_id="old", source="tool")
    make_session(db, "new", started_at=400)
    everything = db.export_all()
    assert [e["id"] for e in everything] == ["old", "new", "kid"]
    assert all("last_active" in e and "messages" in e for e in everything)
    assert everything[0]["last_active"] == 5000 and everything[0]["messages"][0]["content"] == "a"
    assert [e["id"] for e in db.export_all(source="tool")] == ["kid"]
    assert list(db.iter_export_all()) == everything


# ---------------------------------------------------------------- EX-3


def test_ex3_jsonl_line_shape(db: SessionDB, make_session):
    make_session(db, "20250305_091523_a1b2c3", started_at=1741165523.12, title="refactoring auth",
                 messages=[("user", "Help me refactor the auth module — 日本"),
                           {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}],
                            "reasoning_details": [{"r": "é"}]}])
    obj = db.export_all()[0]
    line = json.dumps(obj, ensure_ascii=False) + "\n"
    assert "日本" in line  # not escaped at the JSONL level
    back = json.loads(line)
    keys = list(back)
    assert keys[-1] == "messages" and "last_active" in keys
    assert keys[: len(db.get_session(obj["id"]))] == list(db.get_session(obj["id"]))
    assert back["title"] == "refactoring auth"
    assert back["messages"][1]["tool_calls"] == [{"id": "c1"}]  # decoded
    assert back["messages"][1]["reasoning_details"] == '[{"r": "\\u00e9"}]'  # string as stored
    assert set(back["messages"][0]) >= {"id", "session_id", "role", "content", "tool_calls", "timestamp"}


# ---------------------------------------------------------------- EX-4


def test_ex4_delete_session_orphans_children_and_removes_messages(db: SessionDB, make_session):
    make_session(db, "p", started_at=100, messages=[("user", "parent words")])
    make_session(db, "c1", started_at=200, parent_session_id="p", messages=[("user", "child words")])
    make_session(db, "c2", started_at=210, parent_session_id="p")
    assert db.delete_session("p") is True
    assert db.get_session("p") is None
    assert db.get_session("c1")["parent_session_id"] is None
    assert db.get_session("c2")["parent_session_id"] is None
    assert db.message_count() == 1 and fts_rows(db) == (1, 1)
    assert db._conn.execute(
        "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'parent'").fetchone()[0] == 0
    assert db.delete_session("p") is False
    assert db.delete_session("never-existed") is False


def test_ex4_delete_removes_only_the_sessions_files(db: SessionDB, make_session, tmp_path: Path):
    sid = "20250305_091523_a[1]b*"
    make_session(db, sid, started_at=100)
    make_session(db, "other", started_at=100)
    d = tmp_path / "sessions"
    d.mkdir()
    mine = [f"{sid}.json", f"{sid}.jsonl", f"request_dump_{sid}_1.json", f"request_dump_{sid}_abc.json"]
    theirs = ["other.json", "other.jsonl", "request_dump_other_1.json", f"{sid}.txt",
              f"request_dump_{sid}.json", f"request_dump_{sid}_1.jsonl", "sessions.json",
              "20250305_091523_a1b_.json"]
    for name in mine + theirs:
        (d / name).write_text("x")
    (d / "nested").mkdir()
    assert db.delete_session(sid, sessions_dir=d) is True
    remaining = sorted(p.name for p in d.iterdir())
    assert remaining == sorted(theirs + ["nested"])


def test_ex4_file_removal_tolerates_missing_files_and_dir(db: SessionDB, make_session, tmp_path: Path):
    make_session(db, "s", started_at=1)
    assert db.delete_session("s", sessions_dir=tmp_path / "does-not-exist") is True
    make_session(db, "t", started_at=1)
    assert db.delete_session("t", sessions_dir=tmp_path) is True


def test_ex4_unknown_id_touches_no_files(db: SessionDB, tmp_path: Path):
    (tmp_path / "ghost.json").write_text("x")
    assert db.delete_session("ghost", sessions_dir=tmp_path) is False
    assert (tmp_path / "ghost.json").exists()


def test_ex4_without_sessions_dir_no_files_touched(db: SessionDB, make_session, tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.json").write_text("x")
    make_session(db, "s", started_at=1)
    db.delete_session("s")
    assert (tmp_path / "s.json").exists()


# ---------------------------------------------------------------- EX-5


def test_ex5_prune_semantics(db: SessionDB, make_session, tmp_path: Path):
    now = time.time()
    make_session(db, "old_ended", started_at=now - 100 * DAY, ended_at=now - 99 * DAY,
                 messages=[("user", "old words")])
    make_session(db, "old_live", started_at=now - 400 * DAY)  # live: never pruned
    make_session(db, "old_but_active", started_at=now - 95 * DAY, ended_at=now - 1,
                 messages=[{"role": "user", "content": "recent", "timestamp": now - 10}])
    make_session(db, "young_ended", started_at=now - 10 * DAY, ended_at=now - 9 * DAY)
    make_session(db, "old_tg", source="telegram", started_at=now - 200 * DAY, ended_at=now - 199 * DAY)
    d = tmp_path / "sessions"
    d.mkdir()
    for name in ("old_ended.jsonl", "request_dump_old_ended_3.json", "young_ended.jsonl", "old_tg.json"):
        (d / name).write_text("x")
    assert db.prune_sessions(older_than_days=90, source="cli", sessions_dir=d) == 2
    assert db.get_session("old_ended") is None
    assert db.get_session("old_but_active") is None  # age is from the start
    assert db.get_session("old_live") is not None
    assert db.get_session("young_ended") is not None
    assert db.get_session("old_tg") is not None  # other source
    assert sorted(p.name for p in d.iterdir()) == ["old_tg.json", "young_ended.jsonl"]
    assert db.message_count() == 0 and fts_rows(db) == (0, 0)
    assert db.prune_sessions(older_than_days=90) == 1  # now the telegram one
    assert db.prune_sessions(older_than_days=90) == 0
    assert db.prune_sessions(older_than_days=5) == 1
    assert [r["id"] for r in db.search_sessions()] == ["old_live"]


def test_ex5_what_a_dry_run_lists_is_what_prune_deletes(db: SessionDB, make_session):
    now = time.time()
    make_session(db, "old_ended", started_at=now - 100 * DAY, ended_at=now - 99 * DAY, title="Old one")
    make_session(db, "old_tg", source="telegram", started_at=now - 200 * DAY, ended_at=now - 199 * DAY)
    make_session(db, "old_live", started_at=now - 400 * DAY)
    make_session(db, "young_ended", started_at=now - 10 * DAY, ended_at=now - 9 * DAY)
    listed = db.prunable_sessions(older_than_days=90)
    assert sorted(listed) == [("old_ended", "cli", "Old one"), ("old_tg", "telegram", None)]
    assert [sid for sid, _source, _title in listed] == db.prunable_session_ids(older_than_days=90)
    assert db.prunable_sessions(older_than_days=90, source="telegram") == [("old_tg", "telegram", None)]
    assert db.prune_sessions(older_than_days=90) == 2
    assert db.prunable_sessions(older_than_days=90) == []


def test_ex5_multi_level_chain_middle_link(db: SessionDB, make_session):
    now = time.time()
    make_session(db, "root", started_at=now - 10 * DAY, ended_at=now - 10 * DAY + 5, end_reason="compression")
    make_session(db, "middle", started_at=now - 200 * DAY, ended_at=now - 9 * DAY,
                 end_reason="compression", parent_session_id="root")
    make_session(db, "tip", started_at=now - 9 * DAY, parent_session_id="middle", messages=[("user", "x")])
    assert db.prune_sessions(older_than_days=90) == 1
    assert db.get_session("middle") is None
    assert db.get_session("root")["parent_session_id"] is None
    assert db.get_session("tip")["parent_session_id"] is None  # orphaned, not cascaded
    assert db.message_count("tip") == 1


def test_ex5_prune_whole_old_chain(db: SessionDB, make_session):
    now = time.time()
    make_session(db, "a", started_at=now - 300 * DAY, ended_at=now - 299 * DAY, end_reason="compression")
    make_session(db, "b", started_at=now - 299 * DAY, ended_at=now - 298 * DAY, parent_session_id="a",
                 end_reason="compression")
    make_session(db, "c", started_at=now - 298 * DAY, ended_at=now - 297 * DAY, parent_session_id="b")
    assert db.prune_sessions() == 3
    assert db.session_count() == 0


def test_ex5_fractional_days(db: SessionDB, make_session):
    now = time.time()
    make_session(db, "s", started_at=now - 7200, ended_at=now - 7100)
    assert db.prune_sessions(older_than_days=0.1) == 0  # 2.4 h cutoff
    assert db.prune_sessions(older_than_days=0.05) == 1  # 1.2 h cutoff


# ---------------------------------------------------------------- EX-6


def test_ex6_clear_messages_is_ms7(db: SessionDB, make_session):
    make_session(db, "s", messages=[("user", "a"), ("assistant", "b")])
    db.clear_messages("s")
    row = db.get_session("s")
    assert (row["message_count"], row["tool_call_count"]) == (0, 0)
    assert db.get_messages("s") == [] and fts_rows(db) == (0, 0)


# ---------------------------------------------------------------- EX-7


def test_ex7_statistics_figures(db: SessionDB, db_path: Path, make_session):
    make_session(db, "a", source="cli", messages=[("user", "1"), ("user", "2")])
    make_session(db, "b", source="telegram", messages=[("user", "3")])
    make_session(db, "c", source="telegram")
    stats = db.stats()
    assert stats["total_sessions"] == 3 == db.session_count()
    assert stats["total_messages"] == 3 == db.message_count()
    assert stats["sources"] == {"cli": 1, "telegram": 2}
    assert db.session_count("telegram") == 2
    wal = Path(str(db_path) + "-wal")
    assert wal.exists() and wal.stat().st_size > 0
    assert stats["db_size_bytes"] == db_path.stat().st_size  # the main file only
