"""SPEC §16 (UC-1, UC-2, UC-8, UC-9): stores written by current upstream.

Every test works on a private copy of a fixture (``upstream_copy``) or on a file built here;
the shared originals are never opened writable.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
from pathlib import Path

import pytest

from hermes_state import SCHEMA_VERSION, DatabaseError, ReadOnlyError, SessionDB
from hermes_state.capabilities import Capabilities, classify_version, detect
from hermes_state.listing import ListQuery

OLD_VERSIONS = [2, 5, 7, 9, 10, 11]
V16 = "20260528_"


def master(path: Path) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
        ).fetchall()
    finally:
        conn.close()


def version_of(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT version FROM schema_version").fetchone()[0]
    finally:
        conn.close()


def file_state(path: Path) -> tuple[str, int, int]:
    """Digest and mtime of the database file, and how many bytes of changes its -wal holds.

    A WAL reader may create an empty ``-wal`` and the ``-shm`` index beside the file (that is
    how SQLite readers coordinate); neither holds a change.
    """
    wal = Path(str(path) + "-wal")
    return (
        hashlib.sha256(path.read_bytes()).hexdigest(),
        path.stat().st_mtime_ns,
        wal.stat().st_size if wal.exists() else 0,
    )


# ---------------------------------------------------------------- UC-1 capabilities


def test_uc1_fresh_store_capabilities(db: SessionDB):
    caps = db.capabilities
    assert isinstance(caps, Capabilities)
    assert caps.schema_version == SCHEMA_VERSION == 16 and caps.version_class == "current"
    assert caps.has_archived and caps.has_active and caps.has_cwd and caps.has_rewind_count
    assert caps.has_compression_locks and caps.has_platform_message_id
    # Columns v16 does not have.
    for missing in ("pinned", "hidden", "last_activity_at", "title_source", "git_branch",
                    "git_repo_root", "system_prompt_hash", "session_key"):
        assert not caps.has_session_column(missing), missing
    assert not caps.has_display_kind and not caps.has_compacted and not caps.has_system_prompts
    assert caps.fts_layout == "inline" and caps.has_trigram and not caps.has_cjk_table
    assert caps.fts["messages_fts"].columns == ("content",)
    assert caps.fts["messages_fts_trigram"].tokenizer == "trigram"
    assert caps.fts_storage_version is None and not caps.fts_stale and not caps.fts_rebuild_in_progress


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (16, None),  # inline: the index keeps what its triggers wrote
        (30, "CASE WHEN m.role = 'tool' THEN substr(COALESCE(m.content, ''), 1, 8192) ELSE m.content END"),
        ("30_upgraded", None),
    ],
)
def test_uc1_what_the_word_index_holds_is_known_from_its_ddl(upstream_copy, version, expected):
    """The search reads the word index's text through the message row it joins when the DDL
    says what that text is: upstream's ``messages_fts_src`` view (a tool result's first
    8,192 characters), or ``content='messages'``; an inline index's own copy from its shadow
    table."""
    path = upstream_copy(version)
    conn = sqlite3.connect(path)
    try:
        caps = detect(conn)
        assert caps.fts["messages_fts"].text_sql == expected
        stored = caps.fts["messages_fts"].stored_text_sql
        assert (stored is None) == (not caps.fts["messages_fts"].inline)
        if stored:
            # An inline index's own copy, read from its shadow table: what FTS5 reads.
            rows, differing = conn.execute(
                f"SELECT count(*), sum(({stored}) IS NOT messages_fts.content) FROM messages_fts"
            ).fetchone()
            assert rows > 0 and differing == 0
        if expected:
            # The same text as the index reads through its view, row for row.
            mismatches = conn.execute(
                f"SELECT count(*) FROM messages m JOIN messages_fts_src v ON v.id = m.id "
                f"WHERE ({expected}) IS NOT v.content"
            ).fetchone()[0]
            assert mismatches == 0
            # A view written otherwise is not guessed at.
            conn.execute("DROP VIEW messages_fts_src")
            conn.execute("CREATE VIEW messages_fts_src AS SELECT id, lower(content) AS content, "
                         "tool_name, tool_calls FROM messages")
            assert detect(conn).fts["messages_fts"].text_sql is None
    finally:
        conn.close()
    other = sqlite3.connect(":memory:")
    other.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, content TEXT)")
    other.execute("CREATE VIRTUAL TABLE messages_fts USING fts5(content, content='messages', content_rowid='id')")
    assert detect(other).fts["messages_fts"].text_sql == "m.content"
    other.close()


@pytest.mark.parametrize(("version", "table"), [(30, "messages_fts_trigram"), ("30_cjkext", "messages_fts_cjk")])
def test_uc1_a_view_listing_message_columns_gives_the_message_text(upstream_copy, version, table):
    """v30's trigram index reads ``messages_fts_trigram_src`` (message columns, joined with
    ``sessions`` and filtered): its text is the message's own, row for row, and read so the
    search does not go through the view once per row."""
    path = upstream_copy(version)
    conn = sqlite3.connect(path)
    try:
        fts = detect(conn).fts[table]
        assert fts.text_sql == "m.content" and fts.stored_text_sql is None
        rows, mismatches = conn.execute(
            f"SELECT count(*), sum(m.content IS NOT v.content) FROM {fts.content} v JOIN messages m ON m.id = v.id"
        ).fetchone()
        assert rows > 0 and mismatches == 0
        if not fts.loads:
            return  # (the cjk table's tokenizer lives in an extension: known from the DDL only)
        indexed = conn.execute(
            f"SELECT count(*), sum(m.content IS NOT {table}.content) FROM {table} "
            f"JOIN messages m ON m.id = {table}.rowid"
        ).fetchone()
        assert indexed[0] > 0 and indexed[1] == 0
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("view", "expected"),
    [
        ("SELECT id, role, content, tool_name FROM messages WHERE role <> 'tool'", "m.content"),
        ("SELECT m.id, m.content FROM messages AS m JOIN sessions AS s ON s.id = m.session_id", "m.content"),
        ("SELECT id, content FROM messages AS m JOIN sessions AS s ON s.id = m.session_id", None),
        ("SELECT m.id, s.content FROM messages AS m JOIN sessions AS s ON s.id = m.session_id", None),
        ("SELECT m.id, m.role FROM messages AS m", None),
        ("SELECT m.content, m.role FROM messages AS m", None),
        ("SELECT id, content FROM messages_archive", None),
        ("SELECT id, lower(content) AS content FROM messages", None),
    ],
)
def test_uc1_a_view_written_otherwise_is_not_guessed_at(view, expected):
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, content TEXT)")
        conn.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, role TEXT, "
                     "content TEXT, tool_name TEXT)")
        conn.execute("CREATE TABLE messages_archive (id INTEGER PRIMARY KEY, content TEXT)")
        conn.execute(f"CREATE VIEW src AS {view}")
        conn.execute("CREATE VIRTUAL TABLE idx USING fts5(content, content='src', content_rowid='id', "
                     "tokenize='trigram')")
        assert detect(conn).fts["idx"].text_sql == expected
    finally:
        conn.close()


def test_uc1_capabilities_cached_and_redetected_on_schema_change(db: SessionDB):
    first = db.capabilities
    assert db.capabilities is first  # cached: same object while the schema is unchanged
    db.create_session("s", "cli")
    assert db.capabilities is first  # data changes do not re-detect
    db._conn.execute("ALTER TABLE sessions ADD COLUMN pinned INTEGER DEFAULT 0")
    second = db.capabilities
    assert second is not first and second.has_pinned and not first.has_pinned


def test_uc1_capabilities_see_a_change_by_another_connection(db_path: Path):
    db = SessionDB(db_path)
    try:
        assert not db.capabilities.has_session_column("title_source")
        other = sqlite3.connect(db_path)
        other.execute("ALTER TABLE sessions ADD COLUMN title_source TEXT")
        other.commit()
        other.close()
        assert db.capabilities.has_title_source
    finally:
        db.close()


def test_uc1_capabilities_checked_once_per_read_snapshot(db_path: Path):
    """Inside one read transaction the schema cannot change: a list checks the schema cookie
    once, not once per helper (there were ~15 checks per page); the next list checks again and
    sees another connection's change."""
    from hermes_state import listing

    db = SessionDB(db_path)
    try:
        db.create_session("s1", "cli")
        checks: list[str] = []
        db._conn.set_trace_callback(lambda sql: checks.append(sql) if sql.startswith("PRAGMA main.schema_version") else None)
        listing.page(db.store, ListQuery.from_options(by_activity=True), 0, 50)
        assert len(checks) == 1
        checks.clear()
        db.list_sessions_rich(limit=10)
        assert len(checks) == 1
        other = sqlite3.connect(db_path)
        other.execute("ALTER TABLE sessions ADD COLUMN title_source TEXT")
        other.commit()
        other.close()
        rows, count = listing.page(db.store, ListQuery(), 0, 50)
        assert db.capabilities.has_title_source and count == 1 and rows[0].id == "s1"
        db._conn.set_trace_callback(None)
        # Outside a snapshot every look checks.
        checks.clear()
        db._conn.set_trace_callback(lambda sql: checks.append(sql) if sql.startswith("PRAGMA main.schema_version") else None)
        db.capabilities
        db.capabilities
        assert len(checks) == 2
    finally:
        db._conn.set_trace_callback(None)
        db.close()


def test_uc1_a_search_checks_the_schema_once_and_the_next_sees_a_change(db_path: Path):
    """A search decides from the capabilities once (its filters, which index text to read):
    it looks the schema cookie up once, not at each helper (there were 9 looks: a third of a
    search that finds nothing); the next search looks again and answers on the new schema."""
    db = SessionDB(db_path)
    try:
        db.create_session("s1", "cli")
        db.append_message("s1", "user", "docker compose up")
        checks: list[str] = []
        db._conn.set_trace_callback(lambda sql: checks.append(sql) if sql.startswith("PRAGMA main.schema_version") else None)
        for query in ("zxqvbnm", "docker", "dock", "compose NOT kube", "数据库"):
            checks.clear()
            assert db.search(query, prefix_last=True).error is None
            assert len(checks) == 1, query
            checks.clear()
            db.search_messages(query)  # (the upstream-compatible call too: it looked 3 times)
            assert len(checks) == 1, query
        assert db.search("数据库").path == "trigram"
        other = sqlite3.connect(db_path)
        other.execute("DROP TABLE messages_fts_trigram")
        other.commit()
        other.close()
        # The next search sees the index gone and reads the messages instead (the look,
        # then the detection that reads the new schema's cookie).
        checks.clear()
        answer = db.search("数据库")
        assert answer.error is None and answer.path == "like" and len(checks) == 2
    finally:
        db._conn.set_trace_callback(None)
        db.close()


def test_uc1_v30_external_layout_and_columns_by_name(upstream_copy):
    db = SessionDB(upstream_copy(30), read_only=True)
    try:
        caps = db.capabilities
        assert caps.schema_version == 30 and caps.version_class == "in_place"
        assert caps.fts_layout == "external"
        assert caps.fts["messages_fts"].content == "messages_fts_src"
        assert caps.fts["messages_fts"].columns == ("content", "tool_name", "tool_calls")
        assert caps.fts_storage_version == 3
        for column in ("pinned", "hidden", "last_activity_at", "title_source", "cwd", "git_branch",
                       "git_repo_root", "system_prompt_hash", "session_key", "archived"):
            assert caps.has_session_column(column), column
        assert caps.has_display_kind and caps.has_compacted and caps.has_active
        assert caps.has_system_prompts and caps.has_turn_leases
    finally:
        db.close()


@pytest.fixture
def fixture_copy(shared_fixtures_dir: Path, tmp_path: Path):
    """``fixture_copy(name) -> Path``: a private copy of ``fixtures/<name>``."""

    def copy(name: str) -> Path:
        source = shared_fixtures_dir / name
        if not source.exists():
            pytest.skip(f"{source} not available")
        target = tmp_path / name
        target.write_bytes(source.read_bytes())
        return target

    return copy


def test_uc1_v30_upgraded_keeps_inline_fts_and_says_so(fixture_copy):
    db = SessionDB(fixture_copy("upstream_v30_upgraded.db"), read_only=True)
    try:
        caps = db.capabilities
        assert caps.fts_layout == "inline" and caps.fts_optimize_available
        assert caps.has_pinned and caps.schema_version == 30
        # Upgraded stores carry columns in another order than fresh ones: found by name.
        order = [r[1] for r in db._conn.execute("PRAGMA table_info(sessions)")]
        assert order.index("archived") < order.index("title_source")  # fresh v30: the reverse
    finally:
        db.close()


def test_uc1_cjk_table_whose_tokenizer_does_not_load(fixture_copy):
    db = SessionDB(fixture_copy("upstream_v30_cjkext.db"), read_only=True)
    try:
        caps = db.capabilities
        assert caps.has_cjk_table and not caps.cjk_tokenizer_loads
        assert caps.fts["messages_fts_cjk"].tokenizer == "cjk_unicode61"
        assert caps.unloadable_fts == ("messages_fts_cjk",)
    finally:
        db.close()


def test_uc1_read_only_old_store_reports_what_the_file_has(upstream_copy):
    """The TEMP views of a read-only open show v16 columns; capabilities do not pretend."""
    db = SessionDB(upstream_copy(9), read_only=True)
    try:
        assert "archived" in db.get_session(db.list_sessions_rich()[0]["id"])  # through the view
        caps = db.capabilities
        assert not caps.has_archived and not caps.has_active and caps.schema_version == 9
        assert caps.fts_layout == "external" and not caps.has_trigram  # v9: content=messages
    finally:
        db.close()


@pytest.mark.parametrize(
    ("version", "expected"),
    [(None, "new"), (1, "migrate"), (11, "migrate"), (15, "migrate"), (16, "current"),
     (17, "in_place"), (30, "in_place"), (31, "unknown"), (999, "unknown")],
)
def test_uc1_version_classes(version, expected):
    assert classify_version(version) == expected


def test_uc1_detect_works_on_a_plain_connection(upstream_copy):
    conn = sqlite3.connect(upstream_copy(16))
    try:
        caps = detect(conn)
        assert caps.schema_version == 16 and caps.has_archived
    finally:
        conn.close()


# ---------------------------------------------------------------- UC-2 drop-in at v16


def test_uc2_fresh_store_sqlite_master_equals_upstream_v16(db_path: Path, upstream_copy):
    SessionDB(db_path).close()
    assert master(db_path) == master(upstream_copy(16))
    assert version_of(db_path) == 16


@pytest.mark.parametrize("version", OLD_VERSIONS)
def test_uc2_old_fixture_migrates_to_16_with_upstream_answers(upstream_copy, version: int):
    path = upstream_copy(version)
    db = SessionDB(path)
    try:
        assert db.opened_version == version
        assert db.message_count() == 21
        assert len(db.search_messages("terminal")) == 6
        assert len(db.search_messages("桂林")) == 1
        assert len(db.search_messages("東京の天気")) == 1
        titles = [row["title"] for row in db.list_sessions_rich()]
        expected = [None] * 4 if version == 2 else [None, "travel plans #2", None, "release checklist"]
        assert titles == expected
        assert db.session_count() == 5
        assert db.capabilities.has_active and db.capabilities.version_class == "current"
        assert all(m["active"] == 1 for s in db.list_sessions_rich() for m in db.get_messages(s["id"]))
    finally:
        db.close()
    assert version_of(path) == 16
    fresh = path.parent / "fresh.db"
    SessionDB(fresh).close()
    # Same tables, indexes and triggers as a fresh v16 store; FTS DDL identical.
    assert {(t, n) for t, n, _, _ in master(path)} == {(t, n) for t, n, _, _ in master(fresh)}
    conn = sqlite3.connect(path)
    try:
        for table in ("messages_fts", "messages_fts_trigram"):
            conn.execute(f"INSERT INTO {table}({table}) VALUES('integrity-check')")
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def test_uc2_v16_fixture_answers(upstream_copy):
    db = SessionDB(upstream_copy(16))
    try:
        assert db.opened_version == 16
        assert [r["id"][len(V16):] for r in db.list_sessions_rich(archived_only=True)] == [
            "152000_ff0003", "140000_ff0001"]
        assert db.session_count() == 13
        assert db.session_count(include_archived=True) == 16
        assert db.session_count(archived_only=True) == 3
        assert db.search_messages("REWOUNDWORD") == []
        assert db.search_messages("vault") == []
        # The rewound rows are still there, only inactive.
        gg = V16 + "160000_gg0001"
        assert len(db.get_messages(gg)) == 5 and len(db.get_messages(gg, include_inactive=True)) == 7
        words = " ".join(m["content"] or "" for m in db.get_messages(gg))
        assert "REWOUNDWORD" not in words
        assert "REWOUNDWORD" not in json.dumps(db.get_messages_as_conversation(gg))
        # Delegate runs are never listed on their own.
        listed = {r["id"] for r in db.list_sessions_rich(limit=100)}
        assert not listed & {V16 + "090500_dd0001", V16 + "091000_dd0002"}
    finally:
        db.close()


def test_uc2_v16_fixture_restore_rewound_and_rewind_again(upstream_copy):
    db = SessionDB(upstream_copy(16))
    gg = V16 + "160000_gg0001"
    try:
        inactive = [m for m in db.get_messages(gg, include_inactive=True) if not m["active"]]
        first = min(m["id"] for m in inactive)
        assert db.restore_rewound(gg, first) == 2
        assert len(db.search_messages("REWOUNDWORD")) == 2  # the question and the answer
        result = db.rewind_to_message(gg, first)
        assert result["rewound_count"] == 2 and result["target_message"]["id"] == first
        assert db.search_messages("REWOUNDWORD") == []
        with pytest.raises(ValueError):
            db.rewind_to_message(gg, max(m["id"] for m in inactive))  # not a user message
    finally:
        db.close()


def test_uc2_archiving_acts_on_the_whole_compression_lineage(upstream_copy):
    db = SessionDB(upstream_copy(16))
    try:
        root, tip = V16 + "150000_ff0002", V16 + "152000_ff0003"
        assert db.set_session_archived(tip, False) is True
        assert db.get_session(root)["archived"] == 0 and db.get_session(tip)["archived"] == 0
        assert db.set_session_archived(root, True) is True
        assert db.get_session(tip)["archived"] == 1
        assert db.set_session_archived("no such session", True) is False
    finally:
        db.close()


def test_uc2_delete_cascades_delegate_children_and_orphans_others(upstream_copy):
    db = SessionDB(upstream_copy(16))
    try:
        assert db.delete_session(V16 + "090000_aa0001") is True
        assert db.get_session(V16 + "090500_dd0001") is None
        assert db.get_session(V16 + "091000_dd0002") is None  # delegate of the delegate
        assert db.delete_session(V16 + "112000_bb0002") is True
        # The branch and the compression continuation survive, orphaned.
        for child in (V16 + "120000_cc0001", V16 + "114000_bb0003"):
            assert db.get_session(child)["parent_session_id"] is None
    finally:
        db.close()


def test_uc2_compression_lock_round_trip(db: SessionDB):
    db.create_session("s", "cli")
    assert db.try_acquire_compression_lock("s", "me") is True
    assert db.try_acquire_compression_lock("s", "other") is False
    assert db.get_compression_lock_holder("s") == "me"
    db.release_compression_lock("s", "other")  # not the holder: nothing happens
    assert db.get_compression_lock_holder("s") == "me"
    db.release_compression_lock("s", "me")
    assert db.get_compression_lock_holder("s") is None
    assert db.try_acquire_compression_lock("s", "x", ttl_seconds=-1) is True  # already expired
    assert db.try_acquire_compression_lock("s", "y") is True  # reclaimed


def test_uc2_our_v16_store_opens_in_upstream_shape(db_path: Path, upstream_copy):
    """What we write at v16 reads back through plain SQL exactly as upstream v16 lays it out."""
    db = SessionDB(db_path)
    try:
        db.create_session("s", "cli", cwd="/work")
        mid = db.append_message("s", "user", content="hello", platform_message_id="p1", observed=True)
        db.append_message("s", "assistant", content="hi", finish_reason="stop")
        db.rewind_to_message("s", mid)
        db.set_session_archived("s", True)
    finally:
        db.close()
    conn = sqlite3.connect(db_path)
    try:
        row = conn.execute("SELECT cwd, archived, rewind_count FROM sessions").fetchone()
        assert row == ("/work", 1, 1)
        assert conn.execute("SELECT platform_message_id, observed, active FROM messages ORDER BY id").fetchall() == [
            ("p1", 1, 0), (None, 0, 0)]
    finally:
        conn.close()


# ---------------------------------------------------------------- UC-8 read-only never migrates


@pytest.mark.parametrize("version", [2, 9, 11, 16, 30])
def test_uc8_read_only_open_changes_nothing(upstream_copy, version: int):
    path = upstream_copy(version)
    before = file_state(path)
    schema_before = master(path)
    db = SessionDB(path, read_only=True)
    try:
        assert db.opened_version == version
        db.list_sessions_rich()
        db.session_count()
        db.search_messages("terminal")
        db.capabilities
        with pytest.raises(ReadOnlyError):
            db.create_session("x", "cli")
    finally:
        db.close()
    assert file_state(path) == before
    assert master(path) == schema_before
    assert version_of(path) == version


def test_uc8_read_only_v9_bytes_and_mtime_unchanged(upstream_copy):
    path = upstream_copy(9)
    data, mtime = path.read_bytes(), path.stat().st_mtime_ns
    for _ in range(2):
        db = SessionDB(path, read_only=True)
        try:
            assert db.message_count() == 21
            assert len(db.list_sessions_rich()) == 4
        finally:
            db.close()
    assert path.read_bytes() == data and path.stat().st_mtime_ns == mtime
    assert version_of(path) == 9


# ---------------------------------------------------------------- UC-9 unknown versions


def build_v31(path: Path) -> None:
    """A v16 store moved to version 31 with columns and a table nobody here knows."""
    SessionDB(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE schema_version SET version = 31")
    conn.execute("ALTER TABLE sessions ADD COLUMN galaxy TEXT DEFAULT 'andromeda'")
    conn.execute("ALTER TABLE messages ADD COLUMN qubits INTEGER")
    conn.execute("CREATE TABLE wormholes (x)")
    conn.execute("INSERT INTO sessions (id, source, started_at, title) VALUES ('s', 'cli', 1, 'far')")
    conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s', 'user', 'hello future', 2)")
    conn.commit()
    conn.close()


def test_uc9_v31_opens_read_only_with_one_warning_and_refuses_writes(tmp_path: Path, caplog):
    path = tmp_path / "state.db"
    build_v31(path)
    before = file_state(path)
    with caplog.at_level(logging.WARNING, logger="hermes_state"):
        dbs = [SessionDB(path) for _ in range(3)] + [SessionDB(path, read_only=True)]
        try:
            for db in dbs:
                assert db.read_only and db.opened_version == 31
                assert db.capabilities.version_class == "unknown"
                assert db.capabilities.has_session_column("galaxy")
                assert [r["title"] for r in db.list_sessions_rich()] == ["far"]
                assert db.get_session("s")["galaxy"] == "andromeda"
                assert db.session_count() == 1 and db.message_count() == 1
                for write in (
                    lambda: db.create_session("x", "cli"),
                    lambda: db.set_session_title("s", "renamed"),
                    lambda: db.delete_session("s"),
                    lambda: db.set_session_archived("s", True),
                    lambda: db.append_message("s", "user", content="no"),
                ):
                    with pytest.raises(ReadOnlyError) as info:
                        write()
                    text = str(info.value)
                    assert "\n" not in text and "31" in text and "read" in text
        finally:
            for db in dbs:
                db.close()
    warned = [r for r in caplog.records if r.levelno >= logging.WARNING and "31" in r.getMessage()]
    assert len(warned) == 1  # one per process, not one per open
    assert file_state(path) == before
    assert version_of(path) == 31


def test_uc9_v31_warning_is_listed_on_each_open_for_the_ui(tmp_path: Path):
    path = tmp_path / "state.db"
    build_v31(path)
    db = SessionDB(path)
    try:
        assert db.warnings == ["database schema version 31 is newer than 30; opened read-only"]
    finally:
        db.close()


def test_uc9_bad_version_row_is_a_clear_error_not_a_traceback(tmp_path: Path):
    path = tmp_path / "state.db"
    path.write_bytes(b"this is not a database at all, just some bytes" * 100)
    with pytest.raises(DatabaseError) as info:
        SessionDB(path, read_only=True)
    assert "\n" not in str(info.value)


def test_uc9_v30_is_known_and_opened_writable_in_place(upstream_copy):
    path = upstream_copy(30)
    schema_before = master(path)
    db = SessionDB(path)
    try:
        assert not db.read_only and db.warnings == []
        assert db.capabilities.version_class == "in_place"
        assert db.set_session_archived("20260921_090000_s1", True) is True
        assert db.get_session("20260921_090000_s1")["archived"] == 1
    finally:
        db.close()
    assert master(path) == schema_before and version_of(path) == 30


def test_uc9_env_independent(monkeypatch, tmp_path: Path):
    """The default path honours HERMES_HOME at construction (CO-6), for a v31 store too."""
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    build_v31(tmp_path / "state.db")
    db = SessionDB()
    try:
        assert db.read_only and os.path.samefile(db.db_path, tmp_path / "state.db")
    finally:
        db.close()
