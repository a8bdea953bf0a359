"""UC-3/UC-4: what upstream shows, read from stores written by upstream v16 and v30 DDL.

Answers are those of ``../shared/fixtures/README.md``; each reader (list, preview, search,
recap, transcript, lineage, export, stats, typed API) is checked on the fixtures in place
(read-only opens change nothing, UC-8).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hermes_state import SessionDB, listing
from hermes_state.models import EdgeKind
from hermes_state.visibility import INTERNAL_SOURCES
from hermes_state.listing import ListQuery


@pytest.fixture
def open_fixture(shared_fixtures_dir: Path, tmp_path: Path):
    opened: list[SessionDB] = []

    def open_(name: str) -> SessionDB:
        source = shared_fixtures_dir / name
        if not source.exists():
            pytest.skip(f"{source} not available")
        target = tmp_path / name.replace(".db", "") / "state.db"
        target.parent.mkdir()
        shutil.copyfile(source, target)
        db = SessionDB(target, read_only=True)
        opened.append(db)
        return db

    yield open_
    for db in opened:
        db.close()


def ids(rows) -> list[str]:
    return [(r["id"] if isinstance(r, dict) else r.id).split("_")[-1] for r in rows]


def human_list(db: SessionDB):
    rows, total = listing.page(db.store, ListQuery.from_options(source=None, exclude_sources=list(INTERNAL_SOURCES)), 0, 100)
    assert total == len(rows)
    return rows


# ---------------------------------------------------------------------------- v16


def test_uc3_v16_listing_has_the_chain_tip_and_the_branch_once_each(open_fixture):
    db = open_fixture("upstream_v16.db")
    assert ids(db.list_sessions_rich(limit=100)) == [
        "hh0002", "hh0001", "gg0001", "ee0001", "cc0001", "bb0003", "aa0002", "aa0001"
    ]
    # The human list leaves out the internal tool run.
    assert ids(human_list(db)) == ["hh0001", "gg0001", "ee0001", "cc0001", "bb0003", "aa0002", "aa0001"]


def test_uc3_compression_tip_walk_follows_only_continuations(open_fixture):
    db = open_fixture("upstream_v16.db")
    assert db.get_compression_tip("20260528_110000_bb0001") == "20260528_114000_bb0003"
    assert db.get_compression_tip("20260528_112000_bb0002") == "20260528_114000_bb0003"


def test_uc3_v16_rewound_words_found_nowhere(open_fixture):
    db = open_fixture("upstream_v16.db")
    for word in ("REWOUNDWORD", "vault"):
        assert db.search_messages(word) == []
        assert db.search(word).hits == []
    text = " ".join(m["content"] or "" for s in db.list_sessions_rich(limit=100, include_archived=True)
                    for m in db.get_messages(s["id"]))
    assert "REWOUNDWORD" not in text


def test_uc3_v16_lineage_marks_delegates_and_the_branch(open_fixture):
    db = open_fixture("upstream_v16.db")
    root = db.lineage_tree("20260528_090000_aa0001")
    (dd1,) = root.children
    assert dd1.edge == EdgeKind.DELEGATE and dd1.children[0].edge == EdgeKind.DELEGATE
    chain = db.lineage_tree("20260528_110000_bb0001")
    bb2 = chain.children[0]
    kinds = {c.id.split("_")[-1]: c.edge for c in bb2.children}
    assert kinds == {"bb0003": EdgeKind.COMPRESSION, "cc0001": EdgeKind.BRANCH}


# ---------------------------------------------------------------------------- v30


def test_uc3_v30_human_list_pinned_first_and_nothing_hidden(open_fixture):
    db = open_fixture("upstream_v30.db")
    rows = human_list(db)
    assert ids(rows) == ["r1", "cr", "k1", "b1", "c3", "g2", "g1", "s1"]
    assert rows[0].pinned and not any(r.pinned for r in rows[1:])
    assert not {"d1", "a1", "h1", "kb", "c1", "c2"} & set(ids(rows))
    # The reset child is listed on its own; the chain is shown at its tip.
    assert next(r for r in rows if r.id.endswith("_c3")).lineage_root_id == "20260921_120000_c1"


def test_uc3_v30_archived_and_hidden_only_when_asked(open_fixture):
    db = open_fixture("upstream_v30.db")
    archived = db.list_sessions_rich(limit=100, archived_only=True)
    assert ids(archived) == ["a1"]
    everything = ids(db.list_sessions_rich(limit=100, include_archived=True, include_hidden=True))
    assert {"a1", "h1"} <= set(everything) and "d1" not in everything


def test_uc3_v30_preview_skips_scaffolding(open_fixture):
    db = open_fixture("upstream_v30.db")
    k1 = next(r for r in human_list(db) if r.id.endswith("_k1"))
    assert k1.preview == "what is on the agenda today"
    assert db.get_summary("20260921_150000_k1").preview == "what is on the agenda today"


@pytest.mark.parametrize("name", ["upstream_v30.db", "upstream_v30_upgraded.db"])
def test_uc4_v30_hits_on_both_fts_layouts(open_fixture, name):
    db = open_fixture(name)
    day = "20260921" if name == "upstream_v30.db" else "20260922"  # the upgraded file's own ids
    assert [h["session_id"] for h in db.search_messages("COMPACTEDWORD")] == [f"{day}_121000_c2"]
    assert [h.session_id for h in db.search("COMPACTEDWORD").hits] == [f"{day}_121000_c2"]
    for word in ("REWOUNDWORD", "vault", "HIDDENKINDWORD"):
        assert db.search_messages(word) == [], word
        assert db.search(word).hits == [], word
    assert len(db.search("docker").hits) >= 6
    assert db.search("桂林").hits  # the trigram table, on either layout


@pytest.mark.parametrize("name", ["upstream_v30.db", "upstream_v30_upgraded.db"])
def test_uc3_v30_hidden_session_found_only_when_asked_archived_found_and_marked(open_fixture, name):
    """UC-3 applies to search: a hidden session's messages and title are found only when
    asked for (BR-15's toggle); an archived one's are found, and its conversation says it is
    archived (marked wherever it still appears)."""
    db = open_fixture(name)
    day = "20260921" if name == "upstream_v30.db" else "20260922"
    hidden, archived = f"{day}_161000_h1", f"{day}_160000_a1"
    assert db.search_messages("HIDDENSESSIONWORD") == []
    assert db.search("HIDDENSESSIONWORD").hits == []
    assert db.search("HIDDENSESS", prefix_last=True).hits == []  # (a key being typed too)
    assert [h.session_id for h in db.search("HIDDENSESSIONWORD", include_hidden=True).hits] == [hidden]
    assert listing.match_sessions(db.store, "Bot Chat") == []
    assert ids(listing.match_sessions(db.store, "Bot Chat", ListQuery(include_hidden=True))) == ["h1"]
    assert ids(listing.match_sessions(db.store, day + "_161")) == []

    assert [h["session_id"] for h in db.search_messages("ARCHIVEDWORD")] == [archived]
    assert [h.session_id for h in db.search("ARCHIVEDWORD").hits] == [archived]
    labels = listing.conversation_labels(db.store, [archived, hidden, f"{day}_090000_s1"])
    title = "taxes 2025" if name == "upstream_v30.db" else "taxes 2025 (v30)"
    assert (labels[archived].text, labels[archived].archived, labels[archived].hidden) == (title, True, False)
    assert (labels[hidden].archived, labels[hidden].hidden) == (False, True)
    assert not (labels[f"{day}_090000_s1"].archived or labels[f"{day}_090000_s1"].hidden)


def test_uc3_hidden_rule_needs_the_column_v16_finds_as_before(open_fixture):
    db = open_fixture("upstream_v16.db")
    assert not db.rules.hidden
    assert db.search("docker").hits == db.search("docker", include_hidden=True).hits


def test_uc4_v30_tool_tail_past_the_indexed_prefix_is_not_found(open_fixture):
    db = open_fixture("upstream_v30.db")
    assert db.search_messages("TAILWORD") == []  # as upstream: only 8,192 characters indexed


def test_uc3_v30_transcript_hides_rewound_and_marks_compacted(open_fixture):
    db = open_fixture("upstream_v30.db")
    r1 = db.get_message_models("20260921_140000_r1")
    assert len(r1) == 4 and all("REWOUNDWORD" not in (m.content or "") for m in r1)
    c2 = db.get_message_models("20260921_121000_c2")
    compacted = [m for m in c2 if m.compacted]
    assert len(compacted) == 1 and "COMPACTEDWORD" in compacted[0].content
    assert len(db.get_messages("20260921_140000_r1", include_inactive=True)) == 6


def test_uc3_v30_recap_leaves_out_scaffolding_and_rewound(open_fixture):
    db = open_fixture("upstream_v30.db")
    k1 = db.get_messages_as_conversation("20260921_150000_k1", without_scaffolding=True)
    assert all("HIDDENKINDWORD" not in (m["content"] or "") for m in k1) and len(k1) == 3
    r1 = db.get_messages_as_conversation("20260921_140000_r1")
    assert all("REWOUNDWORD" not in (m["content"] or "") for m in r1)


def test_uc3_v30_system_prompt_from_its_own_table_and_workspace(open_fixture):
    db = open_fixture("upstream_v30.db")
    prompt = db.get_system_prompt("20260921_090000_s1")
    assert prompt and prompt == db._fetchone(
        "SELECT prompt FROM system_prompts WHERE hash = (SELECT system_prompt_hash FROM sessions "
        "WHERE id = '20260921_090000_s1')")[0]
    s1 = db.get_summary("20260921_090000_s1")
    assert (s1.cwd, s1.git_branch, s1.git_repo_root) == ("/home/u/webapp", "feat/auth", "/home/u/webapp")
    assert s1.title_source == "user" and not s1.title_is_automatic
    assert db.get_summary("20260921_120000_c1").title_is_automatic


def test_uc3_v30_last_activity_uses_last_activity_at(open_fixture):
    db = open_fixture("upstream_v30.db")
    assert db.get_summary("20260921_090000_s1").last_active == 1790009000.0


def test_uc3_v30_lineage_delegate_and_reset_edges(open_fixture):
    db = open_fixture("upstream_v30.db")
    (d1,) = db.lineage_tree("20260921_090000_s1").children
    assert d1.edge == EdgeKind.DELEGATE
    (g2,) = db.lineage_tree("20260921_100000_g1").children
    assert g2.edge == EdgeKind.RESET


def test_uc3_v30_export_and_stats_leave_out_rewound(open_fixture):
    db = open_fixture("upstream_v30.db")
    exported = db.export_session("20260921_140000_r1")
    assert len(exported["messages"]) == 4
    assert db.stats()["total_messages"] == 44 - 2  # two rewound rows of r1


def test_uc7_v30_cjk_extension_store_reads_without_its_tokenizer(open_fixture):
    db = open_fixture("upstream_v30_cjkext.db")
    assert ids(human_list(db))[0] == "r1"
    assert db.search("桂林").hits and db.search_messages("docker")


# ---------------------------------------------------------------------------- UC-5 writes in place


@pytest.fixture
def writable_fixture(shared_fixtures_dir: Path, tmp_path: Path):
    opened: list[SessionDB] = []

    def open_(name: str) -> SessionDB:
        source = shared_fixtures_dir / name
        if not source.exists():
            pytest.skip(f"{source} not available")
        target = tmp_path / ("w-" + name.replace(".db", "")) / "state.db"
        target.parent.mkdir()
        shutil.copyfile(source, target)
        db = SessionDB(target)
        opened.append(db)
        return db

    yield open_
    for db in opened:
        db.close()


def shape(db: SessionDB) -> tuple:
    """Everything UC-5 says a write must not change: version and the schema's objects."""
    return (
        db._fetchone("SELECT version FROM schema_version")[0],
        sorted(tuple(r) for r in db._fetchall("SELECT type, name, sql FROM sqlite_master")),
    )


def assert_intact(db: SessionDB) -> None:
    assert db._fetchone("PRAGMA integrity_check")[0] == "ok"
    for (table,) in db._fetchall(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%fts5%'"
    ):
        if table in db.capabilities.fts and not db.capabilities.fts[table].loads:
            continue
        db._execute_write(lambda c, t=table: c.execute(f"INSERT INTO {t}({t}) VALUES('integrity-check')"))


def everything(db: SessionDB) -> dict:
    tables = [r[0] for r in db._fetchall(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'messages_fts%' "
        "AND name NOT LIKE 'sqlite_%'")]
    return {t: sorted(map(tuple, db._fetchall(f"SELECT * FROM {t}")), key=repr) for t in tables}


@pytest.mark.parametrize("name", ["upstream_v16.db", "upstream_v30.db", "upstream_v30_upgraded.db"])
def test_uc5_rename_archive_pin_in_place(writable_fixture, name):
    from hermes_state.trash import delete_with_snapshot  # noqa: F401  (import check)

    db = writable_fixture(name)
    before = shape(db)
    session = db.list_sessions_rich(limit=1)[0]["id"]
    assert db.set_session_title(session, "chosen by a person")
    if db._has_session_column("title_source"):
        assert db._fetchone("SELECT title_source FROM sessions WHERE id = ?", (session,))[0] == "user"
    chain_tip = next(r for r in db.list_sessions_rich(limit=100) if r.get("_lineage_root_id"))
    assert db.set_session_archived(chain_tip["id"], True)
    archived = {r[0] for r in db._fetchall("SELECT id FROM sessions WHERE archived = 1")}
    assert {chain_tip["id"], chain_tip["_lineage_root_id"]} <= archived  # the whole lineage
    assert shape(db) == before
    assert_intact(db)


def test_uc5_delete_takes_delegates_dependents_and_prompts_and_undo_brings_all_back(writable_fixture):
    from hermes_state.trash import delete_with_snapshot, undo_delete

    db = writable_fixture("upstream_v30.db")
    s1, d1 = "20260921_090000_s1", "20260921_090500_d1"
    db._execute_write(lambda c: c.execute(
        "INSERT INTO session_model_usage (session_id, model, api_call_count) VALUES (?, 'm', 3)", (s1,)))
    before, shape_before = everything(db), shape(db)
    outcome = delete_with_snapshot(lambda: db, s1, sessions_dir=None)
    assert outcome.ok
    left = {r[0] for r in db._fetchall("SELECT id FROM sessions")}
    assert s1 not in left and d1 not in left  # the delegate run went with it
    assert db._fetchone("SELECT COUNT(*) FROM system_prompts")[0] == 0  # nobody uses it now
    assert db._fetchone("SELECT COUNT(*) FROM session_model_usage WHERE session_id = ?", (s1,))[0] == 0
    assert shape(db) == shape_before
    assert_intact(db)
    report = undo_delete(lambda: db, outcome.deleted)
    assert report.restored and report.companions_restored == [d1], report.summary()
    assert everything(db) == before
    assert_intact(db)


def test_uc5_delete_refused_while_an_agent_holds_the_session(writable_fixture):
    import time as _time

    from hermes_state.errors import DatabaseError

    db = writable_fixture("upstream_v30.db")
    r1 = "20260921_140000_r1"
    db._execute_write(lambda c: c.execute(
        "INSERT INTO session_turn_leases (conversation_id, holder, acquired_at, expires_at) VALUES (?, 'agent', ?, ?)",
        (r1, _time.time(), _time.time() + 600)))
    before = everything(db)
    with pytest.raises(DatabaseError, match="in use"):
        db.delete_session(r1)
    assert everything(db) == before
    assert db.prune_sessions(older_than_days=0) >= 0 and db.get_session(r1) is not None


def test_uc7_unloadable_tokenizer_writes_as_upstream_does(writable_fixture):
    db = writable_fixture("upstream_v30_cjkext.db")
    triggers = {r[0] for r in db._fetchall("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    assert {"messages_fts_cjk_insert", "messages_fts_cjk_delete"} <= triggers
    assert db.delete_session("20260921_163000_cr")  # failed with 'no such tokenizer' before
    triggers = {r[0] for r in db._fetchall("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    assert not any(t.startswith("messages_fts_cjk_") for t in triggers)
    assert db.get_meta("fts_cjk_stale") == "1"
    assert db._fetchone("SELECT version FROM schema_version")[0] == 30
    assert_intact(db)


def test_uc5_trash_file_keeps_every_row_exactly_and_restores_it(writable_fixture, tmp_path):
    from hermes_state.trash import delete_with_snapshot, list_trash, read_trash, undo_delete

    db = writable_fixture("upstream_v30.db")
    db._execute_write(lambda c: c.execute(
        "UPDATE messages SET display_identity = X'00FF10' WHERE session_id = '20260921_090000_s1'"))
    before = everything(db)
    outcome = delete_with_snapshot(lambda: db, "20260921_090000_s1", sessions_dir=None, trash=tmp_path / "trash")
    (entry,) = list_trash(tmp_path / "trash")
    kept = read_trash(entry.path)
    assert kept.message_rows == outcome.deleted.message_rows  # BLOBs included, byte for byte
    assert kept.companion_rows == outcome.deleted.companion_rows
    assert kept.other_rows == outcome.deleted.other_rows
    assert undo_delete(lambda: db, kept).restored
    assert everything(db) == before
    assert list_trash(tmp_path / "trash") == []


@pytest.mark.parametrize("key,value,said", [
    ("fts_stale", "1", "marked stale"),
    ("fts_rebuild_high_water", "20", "being rebuilt"),
    ("fts_rebuild_progress", "0.4", "being rebuilt"),
])
def test_uc4_stale_or_rebuilding_index_says_the_answer_may_be_partial(writable_fixture, key, value, said):
    db = writable_fixture("upstream_v30.db")
    assert db.search("docker").note is None or "incomplete" not in db.search("docker").note
    db.set_meta(key, value)  # as upstream marks it, from another process or this one
    result = db.search("docker")
    assert result.hits and said in (result.note or "") and "incomplete" in result.note
    assert db.search_messages("docker")  # the upstream API still answers


def test_uc4_cjk_index_marked_stale_is_said_too(writable_fixture):
    db = writable_fixture("upstream_v30_cjkext.db")
    db.delete_session("20260921_163000_cr")  # stands the CJK triggers down, marks it stale
    result = db.search("桂林")
    assert result.hits and "CJK index is marked stale" in (result.note or "")


def test_uc5_import_writes_active_explicitly(open_fixture, shared_fixtures_dir, tmp_path):
    import sqlite3

    from hermes_state.export import export_to_path, import_jsonl

    source = open_fixture("upstream_v30.db")
    out = tmp_path / "k1.jsonl"
    export_to_path(source, out, session_ids=["20260921_150000_k1"])
    # A store whose messages.active was added without a default (as some upgrades did).
    target_path = tmp_path / "nodefault" / "state.db"
    target_path.parent.mkdir()
    shutil.copyfile(shared_fixtures_dir / "upstream_v16.db", target_path)
    conn = sqlite3.connect(target_path)
    conn.executescript(
        "PRAGMA writable_schema=ON;"
        "UPDATE sqlite_master SET sql = replace(sql, 'active INTEGER NOT NULL DEFAULT 1', 'active INTEGER') "
        "WHERE name = 'messages';"
        "PRAGMA writable_schema=OFF;"
    )
    conn.close()
    target = SessionDB(target_path)
    try:
        report = import_jsonl(target, out)
        assert report.imported == ["20260921_150000_k1"]
        rows = target._fetchall("SELECT active FROM messages WHERE session_id = '20260921_150000_k1'")
        assert rows and all(r[0] == 1 for r in rows)
        assert target._fetchone("PRAGMA integrity_check")[0] == "ok"
    finally:
        target.close()


@pytest.mark.parametrize("name", ["upstream_v16.db", "upstream_v30.db", "upstream_v30_upgraded.db"])
def test_uc6_after_every_kind_of_write_the_store_is_as_upstream_expects(writable_fixture, name, tmp_path):
    """UC-6 on the store's own terms (its DDL and rules): after rename, archive, pin, delete,
    undo and import the version and every schema object are unchanged and SQLite's and each
    FTS table's integrity checks pass. (Running upstream v16's own code on such stores is done
    outside the repository -- upstream's code is not part of this project.)"""
    from hermes_state.export import export_to_path, import_jsonl
    from hermes_state.trash import delete_with_snapshot, undo_delete

    db = writable_fixture(name)
    before = shape(db)
    rows = db.list_sessions_rich(limit=100)
    first, second = rows[0]["id"], rows[-1]["id"]
    db.set_session_title(first, "renamed for UC-6")
    db.set_session_archived(second, True)
    db.set_session_archived(second, False)
    db.set_session_pinned(first, True)
    prompt = db.get_system_prompt(second)
    out = tmp_path / "one.jsonl"
    export_to_path(db, out, session_ids=[second])
    outcome = delete_with_snapshot(lambda: db, second, sessions_dir=None)
    assert outcome.ok and undo_delete(lambda: db, outcome.deleted).restored
    db.delete_session(second)
    assert import_jsonl(db, out).imported == [second]
    assert db.get_system_prompt(second) == prompt  # a v30 prompt kept by hash comes back there
    assert shape(db) == before
    assert_intact(db)
