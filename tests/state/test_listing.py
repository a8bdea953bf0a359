"""The human list: its count (kept on a viewer until another process commits), the first
pages by last activity (BR-10) against the general query, typed rows."""

from __future__ import annotations

import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import hermes_state.listing.activity as activity_module
from hermes_state.listing.engine import Lister
from hermes_state import SessionDB, listing
from hermes_state.visibility import INTERNAL_SOURCES
from hermes_state.listing import ListQuery

from corpus_helpers import corpora_in_both_layouts
from listing_helpers import _add, _add_messages, _fast, _general, assert_same_pages


def test_count_is_kept_until_another_process_commits_and_then_read_again(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    writer = SessionDB(path)
    for i in range(3):
        writer.create_session(f"s{i}", "cli")
    viewer = SessionDB(path, read_only=True)
    try:
        assert listing.page(viewer.store, ListQuery(), 0, 10)[1] == 3
        statements: list[str] = []
        viewer._conn.set_trace_callback(statements.append)
        assert listing.page(viewer.store, ListQuery(), 0, 10)[1] == 3
        assert not any("COUNT(*) FROM sessions" in s for s in statements)  # answered from what it knew
        writer.create_session("s3", "cli")  # another connection commits
        assert listing.page(viewer.store, ListQuery(), 0, 10)[1] == 4
        assert any("COUNT(*) FROM sessions" in s for s in statements)
    finally:
        viewer._conn.set_trace_callback(None)
        viewer.close()
        writer.close()


# ---------------------------------------------------------------------------- BR-10 fast path
#
# The first pages by last activity come from a newest-first walk of the messages, not from
# ranking every session (hermes_state.db._activity_candidates / _activity_page). They must be
# the very rows of the general query -- same rows, same order, same fields.


def migrated_reader(upstream_copy, version: int) -> SessionDB:
    """A reader of a copy of upstream's v<version> store, migrated once as the app would."""
    path = upstream_copy(version)
    SessionDB(path).close()
    return SessionDB(path, read_only=True)


@pytest.mark.parametrize("version", [30, 16, 11])
def test_fast_pages_are_the_general_querys_rows_on_upstream_stores(upstream_copy, monkeypatch, version):
    db = migrated_reader(upstream_copy, version)
    try:
        served = []
        for options in ({}, {"exclude_sources": list(INTERNAL_SOURCES)}, {"include_archived": True},
                        {"include_hidden": True}, {"include_delegates": True},
                        {"project_compression_tips": False}):
            for offset, limit in ((0, 1), (0, 2), (1, 2), (2, 1), (0, 50)):
                served.append(assert_same_pages(db, monkeypatch, offset=offset, limit=limit, **options))
        assert any(served), "the walk served some of these pages"
    finally:
        db.close()


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> dict[int, Path]:
    """Generated corpora in both layouts (archived, hidden, pinned, rewound rows, chains)."""
    return corpora_in_both_layouts(tmp_path_factory, "corpus", messages=8000, seed=5)


def _reader_with_pins(path: Path, schema: int) -> SessionDB:
    """A reader of a generated corpus with three pinned sessions: the corpus pins v30 rows in
    their column; a v16 store's pins live in our settings file, set here."""
    db = SessionDB(path, read_only=True)
    if schema == 16:
        ids = [r[0] for r in db._fetchall("SELECT id FROM sessions ORDER BY started_at LIMIT 3")]
        db.extra_pins = frozenset(ids)
    return db


OPTIONS = (
    {"exclude_sources": list(INTERNAL_SOURCES)},
    {"exclude_sources": ["tool"]},
    {},
    {"include_archived": True, "exclude_sources": list(INTERNAL_SOURCES)},
    {"archived_only": True},
    {"include_hidden": True},
    {"include_delegates": True, "exclude_sources": list(INTERNAL_SOURCES)},
    {"source": "telegram"},
    {"project_compression_tips": False},
    {"min_message_count": 25},
)


@pytest.mark.parametrize("schema", [16, 30])
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(o) or "default")
def test_fast_pages_are_the_general_querys_rows_on_a_generated_corpus(corpora, monkeypatch, schema, options):
    db = _reader_with_pins(corpora[schema], schema)
    try:
        served = [
            assert_same_pages(db, monkeypatch, offset=offset, limit=limit, **options)
            for offset, limit in ((0, 50), (50, 50), (0, 1), (7, 13), (300, 25), (990, 10))
        ]
        if options in OPTIONS[:2]:
            # (990 is past the corpus's ~400 conversations: the general query answers.)
            assert all(served[:-1]), "the default list is served by the walk at every depth"
    finally:
        db.close()


def test_fast_pages_rank_odd_values_as_sqlite_orders_them(corpora, tmp_path, monkeypatch):
    """The fast path ranks in Python; a store written by hand may hold text or blobs where
    numbers belong (a start, a pinned flag). They rank as SQLite's ORDER BY ranks them in the
    general query: NULL, numbers, text, blobs (so a start of text or a blob, with no message
    left to date the conversation, heads the unpinned rows). Any pinned value but 0 pins, as
    any archived value but 0 archives: pinned rows rank among themselves by activity."""
    path = tmp_path / "odd.db"
    shutil.copyfile(corpora[30], path)
    writer = SessionDB(path)
    try:
        newest = [r[0] for r in writer._fetchall(
            "SELECT m.session_id FROM messages m JOIN sessions s ON s.id = m.session_id"
            " WHERE s.parent_session_id IS NULL AND s.source = 'cli' AND s.end_reason IS NOT 'compression'"
            " GROUP BY m.session_id ORDER BY MAX(m.id) DESC LIMIT 6")]
        assert len(newest) == 6
        writer._execute_write(lambda conn: conn.execute("UPDATE sessions SET pinned = 0"))
        for sid, value in zip(newest, (10, 9, "yes", b"\x01")):
            writer._execute_write(lambda conn, v=value, s=sid: conn.execute(
                "UPDATE sessions SET pinned = ? WHERE id = ?", (v, s)))
        for sid, value in zip(newest[4:], ("soon", b"\x00")):
            writer._execute_write(lambda conn, v=value, s=sid: (
                conn.execute("UPDATE sessions SET started_at = ?, last_activity_at = NULL WHERE id = ?", (v, s)),
                conn.execute("UPDATE messages SET active = 0 WHERE session_id = ?", (s,))))
    finally:
        writer.close()
    db = SessionDB(path, read_only=True)
    try:
        top = [r["id"] for r in _general(db, monkeypatch, limit=6, exclude_sources=list(INTERNAL_SOURCES))]
        assert top == [*newest[:4], newest[5], newest[4]]
        for offset, limit in ((0, 50), (0, 3), (2, 9), (40, 20)):
            rows, served = _fast(db, offset=offset, limit=limit, exclude_sources=list(INTERNAL_SOURCES))
            assert served
            assert rows == _general(db, monkeypatch, offset=offset, limit=limit,
                                    exclude_sources=list(INTERNAL_SOURCES))
    finally:
        db.close()


def test_python_order_of_values_is_sqlites(tmp_path):
    values = [None, 3, -2, 2.5, 1e300, -0.5, 0, "", "a", "B", "é", "中", "z", b"", b"\x00", b"\xff\x01", b"a"]
    conn = sqlite3.connect(tmp_path / "order.db")
    try:
        conn.execute("CREATE TABLE t (v)")
        conn.executemany("INSERT INTO t VALUES (?)", [(v,) for v in values])
        by_sqlite = [r[0] for r in conn.execute("SELECT v FROM t ORDER BY v DESC")]
    finally:
        conn.close()
    assert sorted(values, key=activity_module.sqlite_order, reverse=True) == by_sqlite


def test_the_corpus_has_what_the_fast_path_must_get_right(corpora):
    db = SessionDB(corpora[30], read_only=True)
    try:
        one = lambda sql: db._fetchone(sql)[0]  # noqa: E731
        assert one("SELECT COUNT(*) FROM sessions WHERE pinned = 1") > 0
        assert one("SELECT COUNT(*) FROM sessions WHERE archived = 1") > 0
        assert one("SELECT COUNT(*) FROM sessions WHERE hidden = 1") > 0
        assert one("SELECT COUNT(*) FROM messages WHERE active = 0") > 0
        assert one("SELECT COUNT(*) FROM sessions WHERE end_reason = 'compression'") > 0
    finally:
        db.close()


def test_a_conversation_whose_newest_messages_were_rewound_does_not_hide_older_ones(db_path, monkeypatch):
    """The walk meets ``rewound`` first (its messages are the newest) but every one of them is
    rewound, so its last activity is its start, the oldest of all: it ranks last. Counting it
    among the conversations found must not make the walk stop one short and leave the next
    most active conversation off the page."""
    db = SessionDB(db_path)
    try:
        base = 1767000000.0
        for n in range(10):  # s0 … s9, twenty messages each, s9 the most recently active
            _add(db, f"s{n}", base + 1000 * n, [base + 1000 * n + 10 + i for i in range(20)])
        gone = _add(db, "rewound", base - 5000, [base + 20000 + i for i in range(20)])
        db.rewind_to_message("rewound", gone[0])
        expected = [r["id"] for r in _general(db, monkeypatch, limit=11)]
        assert expected == [f"s{n}" for n in range(9, -1, -1)] + ["rewound"]
        for limit in range(1, 12):
            rows, served = _fast(db, limit=limit)
            assert [r["id"] for r in rows] == expected[:limit]
            # (11: the whole store, whose last row no walk can vouch for: the general query.)
            assert served or limit == 11, "the walk goes on past the rewound conversation"
        for offset, limit in ((3, 4), (6, 2), (9, 2)):
            assert_same_pages(db, monkeypatch, offset=offset, limit=limit)
    finally:
        db.close()


def test_a_selective_filter_gives_up_the_walk_for_the_general_query(corpora, monkeypatch):
    db = SessionDB(corpora[30], read_only=True)
    try:
        with monkeypatch.context() as m:
            m.setattr(activity_module, "ACTIVITY_WALK_SELECTIVE", 1)
            rows, served = _fast(db, limit=50, archived_only=True)
        assert not served, "archived conversations are too rare for the walk"
        assert rows == _general(db, monkeypatch, limit=50, archived_only=True)
    finally:
        db.close()


def test_in_a_large_store_the_walk_goes_on_for_a_share_of_its_sessions(corpora, monkeypatch):
    """A source or a workspace with a few percent of a large store's conversations: the
    general query scans every session for it (0.15-0.7 s at 250k sessions), a walk through a
    fortieth of the store finds the page in 14-94 ms. Shown here with the floor made tiny."""
    db = SessionDB(corpora[30], read_only=True)
    try:
        assert db._fetchall("SELECT MAX(rowid) FROM sessions")[0][0] > 256
        options = {"limit": 12, "workspace": "/home/maya/src/infra"}
        with monkeypatch.context() as m:
            m.setattr(activity_module, "ACTIVITY_WALK_SELECTIVE", 0)  # (a floor of 256 sessions)
            m.setattr(activity_module, "ACTIVITY_WALK_SHARE", 0)
            _rows, served = _fast(db, **options)
            assert not served, "too few of its conversations among the newest 256 sessions"
            m.setattr(activity_module, "ACTIVITY_WALK_SHARE", 1)  # the whole store's worth
            rows, served = _fast(db, **options)
            assert served
        assert rows == _general(db, monkeypatch, **options)
    finally:
        db.close()


def test_fast_pages_follow_random_writes(db_path, monkeypatch):
    """Sessions and messages added, rewound, archived, pinned and deleted in random order:
    after every change the first pages equal the general query's (one reader throughout)."""
    rng = random.Random(7)
    writer = SessionDB(db_path)
    reader = SessionDB(db_path, read_only=True)
    try:
        clock = [1767000000.0]

        def tick() -> float:
            clock[0] += rng.uniform(1, 50)
            return clock[0]

        sessions: list[str] = []
        for step in range(120):
            action = rng.random()
            if action < 0.3 or len(sessions) < 5:
                sid = f"s{step:03d}"
                _add(writer, sid, tick(), [tick() for _ in range(rng.randint(0, 4))],
                     source=rng.choice(["cli", "cli", "telegram", "tool"]))
                sessions.append(sid)
            elif action < 0.6:
                sid = rng.choice(sessions)
                ids = _add_messages(writer, sid, [tick() for _ in range(rng.randint(1, 3))])
                assert ids
            elif action < 0.7:
                sid = rng.choice(sessions)
                users = [r[0] for r in writer._fetchall(
                    "SELECT id FROM messages WHERE session_id = ? AND role = 'user' AND active = 1", (sid,))]
                if users:
                    writer.rewind_to_message(sid, rng.choice(users))
            elif action < 0.8:
                writer.set_session_archived(rng.choice(sessions), rng.random() < 0.7)
            elif action < 0.9:
                writer.set_session_pinned(rng.choice(sessions), rng.random() < 0.6)
                reader.extra_pins = writer.extra_pins  # a v16 store's pins: the settings file
            else:
                sid = sessions.pop(rng.randrange(len(sessions)))
                writer.delete_session(sid)
            for options in ({}, {"exclude_sources": list(INTERNAL_SOURCES)}, {"include_archived": True}):
                for offset, limit in ((0, 3), (2, 4), (0, 10)):
                    assert_same_pages(reader, monkeypatch, offset=offset, limit=limit, **options)
    finally:
        reader.close()
        writer.close()


# ---------------------------------------------------------------------------- the kept walk
#
# A reader keeps each session's newest message time (an upper bound of its activity) between
# lists (db._RecencyWalk) and reads only what was written since. Whatever happened in between,
# the page is the general query's.


def _many(db: SessionDB, n: int, base: float, per: int = 3) -> list[str]:
    ids = []
    for i in range(n):
        sid = f"c{i:03d}"
        _add(db, sid, base + 100 * i, [base + 100 * i + 1 + j for j in range(per)])
        ids.append(sid)
    return ids


def test_the_kept_walk_reads_only_new_messages(db_path, monkeypatch):
    writer = SessionDB(db_path)
    reader = SessionDB(db_path, read_only=True)
    try:
        _many(writer, 30, 1767000000.0)
        assert assert_same_pages(reader, monkeypatch, limit=5)
        _add_messages(writer, "c003", [1767100000.0])  # an old conversation comes back
        statements: list[str] = []
        reader._conn.set_trace_callback(statements.append)
        try:
            rows = reader.list_sessions_rich(order_by_last_active=True, limit=5)
        finally:
            reader._conn.set_trace_callback(None)
        assert rows[0]["id"] == "c003"
        walks = [s for s in statements if "FROM messages" in s and "ORDER BY id DESC" in s]
        assert walks and all("WHERE id > " in s for s in walks), "only the messages written since"
        assert rows == _general(reader, monkeypatch, limit=5)
    finally:
        reader.close()
        writer.close()


def test_the_kept_walk_survives_deletions_at_the_top_and_at_the_floor(db_path, monkeypatch):
    writer = SessionDB(db_path)
    reader = SessionDB(db_path, read_only=True)
    resets = []
    original = activity_module._RecencyWalk.reset

    def counting(self):
        resets.append(1)
        original(self)

    monkeypatch.setattr(activity_module._RecencyWalk, "reset", counting)
    try:
        ids = _many(writer, 40, 1767000000.0)
        assert assert_same_pages(reader, monkeypatch, limit=4)
        # The newest message's session goes: the walk starts over from the top.
        writer.delete_session(ids.pop())
        before = len(resets)
        assert assert_same_pages(reader, monkeypatch, limit=4)
        assert len(resets) > before
        # Delete, one by one, the conversation at the page's edge (its bound was the walk's
        # floor) and others around it: every page stays the general query's.
        for _ in range(12):
            order = [sid for _newest, sid in reader.lister.recency.order if sid in ids]
            victim = order[min(4, len(order) - 1)]
            writer.delete_session(victim)
            ids.remove(victim)
            for offset, limit in ((0, 4), (2, 3), (0, 9)):
                assert_same_pages(reader, monkeypatch, offset=offset, limit=limit)
    finally:
        reader.close()
        writer.close()


def test_the_kept_walk_starts_over_after_many_new_messages_or_an_empty_start(db_path, monkeypatch):
    writer = SessionDB(db_path)
    reader = SessionDB(db_path, read_only=True)
    try:
        assert reader.list_sessions_rich(order_by_last_active=True, limit=5) == []
        _many(writer, 12, 1767000000.0)  # the store was empty when the walk last looked
        assert assert_same_pages(reader, monkeypatch, limit=5)
        monkeypatch.setattr(activity_module._RecencyWalk, "MAX_NEW", 5)
        for i in range(3):
            _add_messages(writer, "c000", [1767200000.0 + 10 * i + j for j in range(4)])
        assert assert_same_pages(reader, monkeypatch, limit=5)
        _add_messages(writer, "c001", [1767300000.0 + j for j in range(9)])  # > MAX_NEW at once
        rows, served = _fast(reader, limit=5)
        assert served and rows[0]["id"] == "c001"
        assert rows == _general(reader, monkeypatch, limit=5)
    finally:
        reader.close()
        writer.close()


def test_in_lists_are_padded_to_a_few_lengths():
    assert [activity_module.padded_size(n) for n in (0, 1, 16, 17, 66, 256, 257, 600)] == [
        16, 16, 16, 32, 80, 256, 512, 1024]
    assert activity_module.padded_values(["a", "b"]) == ["a", "b"] + [None] * 14


# ---------------------------------------------------------------------------- typed rows
#
# list_summaries reads only the columns a SessionSummary is made of (db._SUMMARY_COLUMNS):
# its rows must be those made from list_sessions_rich's full rows, in every order and view.


def _typed_both_ways(db: SessionDB, **kw):
    from hermes_state.listing.marks import with_lifecycle
    from hermes_state.models import SessionSummary

    rich = db.list_sessions_rich(limit=kw.pop("limit", 50), offset=kw.pop("offset", 0), **kw)
    # Upstream's rows keep the column's count; the typed rows count what a transcript shows,
    # and carry each tip's lifecycle status (upstream's rows do not).
    rows = with_lifecycle(db.store, db.lister.count_shown_messages(list(rich)))
    return [SessionSummary.from_row(row) for row in rows]


@pytest.mark.parametrize("schema", [16, 30])
@pytest.mark.parametrize("by_activity", [True, False])
def test_summaries_are_the_rich_rows_typed(corpora, schema, by_activity):
    db = SessionDB(corpora[schema], read_only=True)
    try:
        if schema == 16:
            db.extra_pins = frozenset(r[0] for r in db._fetchall("SELECT id FROM sessions ORDER BY started_at LIMIT 3"))
        for options in ({"exclude_sources": list(INTERNAL_SOURCES)}, {"include_archived": True},
                        {"archived_only": True}, {"include_hidden": True, "include_delegates": True},
                        {"source": "cli"}):
            for offset, limit in ((0, 50), (40, 30), (990, 20)):
                typed = db.list_summaries(ListQuery.from_options(order_by_last_active=by_activity, **options), limit=limit, offset=offset)
                assert typed == _typed_both_ways(
                    db, limit=limit, offset=offset, order_by_last_active=by_activity, **options), options
                assert typed or offset > 0 or "archived_only" in options
    finally:
        db.close()


@pytest.mark.parametrize("by_activity", [True, False])
def test_summaries_read_nulls_and_odd_values_as_the_rich_rows_typed(corpora, tmp_path, by_activity):
    """list_summaries reads NULL as the field's default and a flag as 0 or 1 in SQL (no dict of
    fields per row in Python): the same summaries as the rich rows made typed, with NULL
    counters, pins written as 2 and as text, and counters held as text on the page -- the
    text mended in its own row only."""
    path = tmp_path / "state.db"
    shutil.copy(corpora[30], path)
    db = SessionDB(path)
    try:
        ids = [row.id for row in db.list_summaries(ListQuery.from_options(order_by_last_active=by_activity, exclude_sources=list(INTERNAL_SOURCES)), limit=30)
               if not row.pinned and row.lineage_root_id is None][:5]  # rows of their own session
        odd = [
            "UPDATE sessions SET message_count = NULL, input_tokens = NULL, tool_call_count = NULL WHERE id = ?",
            "UPDATE sessions SET pinned = 'yes', tool_call_count = 'many' WHERE id = ?",
            "UPDATE sessions SET pinned = 2 WHERE id = ?",
            "UPDATE sessions SET title = NULL, title_source = NULL WHERE id = ?",
            "UPDATE sessions SET output_tokens = 'seven' WHERE id = ?",
        ]
        with sqlite3.connect(path) as other:  # as another process writes them
            for sql, sid in zip(odd, ids):
                other.execute(sql, (sid,))
        other.close()
        for options in ({"exclude_sources": list(INTERNAL_SOURCES)}, {"include_hidden": True}):
            typed = db.list_summaries(ListQuery.from_options(order_by_last_active=by_activity, **options))
            assert typed == _typed_both_ways(db, order_by_last_active=by_activity, **options)
        by_id = {row.id: row for row in typed}
        pins = [row.pinned for row in typed]
        assert by_id[ids[1]].pinned and by_id[ids[2]].pinned and pins == sorted(pins, reverse=True)
        assert (by_id[ids[0]].message_count, by_id[ids[0]].input_tokens, by_id[ids[0]].tool_call_count) == (0, 0, 0)
        assert by_id[ids[1]].tool_call_count == 0 and by_id[ids[3]].title is None
        assert by_id[ids[4]].output_tokens == 0 and not by_id[ids[4]].pinned
    finally:
        db.close()


@pytest.mark.parametrize("version", [30, 16, 11])
def test_summaries_are_the_rich_rows_typed_on_upstream_stores(upstream_copy, version):
    path = upstream_copy(version)
    SessionDB(path).close()
    for read_only in (True, False):
        db = SessionDB(path, read_only=read_only)
        try:
            for by_activity in (True, False):
                for options in ({}, {"include_archived": True}, {"include_hidden": True}):
                    assert db.list_summaries(ListQuery.from_options(order_by_last_active=by_activity, **options)) == _typed_both_ways(
                        db, order_by_last_active=by_activity, **options)
        finally:
            db.close()


def _segment(db: SessionDB, sid: str, parent: str | None, started: float, ended: float | None,
             reason: str | None, stamps: list[float]) -> None:
    _add(db, sid, started, stamps)
    db._execute_write(lambda conn: conn.execute(
        "UPDATE sessions SET parent_session_id = ?, ended_at = ?, end_reason = ? WHERE id = ?",
        (parent, ended, reason, sid)))


def test_tips_of_straight_and_forked_chains(db_path, monkeypatch):
    """The ranking walks each compression chain and hands its tip to the projection when the
    chain goes straight; a fork (two continuations: the newest wins) is left to
    compression_tip. Either way the rows are the general query's."""
    from hermes_state.lineage import compression_tip

    db = SessionDB(db_path)
    try:
        t = 1767000000.0
        for n in range(12):  # plain conversations around the chains
            _add(db, f"p{n}", t + 50 * n, [t + 50 * n + 5])
        # straight: s0 -> s1 -> s2
        _segment(db, "s0", None, t + 10, t + 100, "compression", [t + 20])
        _segment(db, "s1", "s0", t + 100, t + 200, "compression", [t + 150])
        _segment(db, "s2", "s1", t + 200, None, None, [t + 900])
        # fork: f0 -> f1 and f0 -> f2 (f2 newer: the tip)
        _segment(db, "f0", None, t + 30, t + 100, "compression", [t + 40])
        _segment(db, "f1", "f0", t + 110, None, None, [t + 950])
        _segment(db, "f2", "f0", t + 120, None, None, [t + 940])
        expected_tips = {sid: compression_tip(db._conn, sid) for sid in ("s0", "f0")}
        assert expected_tips["s0"] == "s2" and expected_tips["f0"] == "f2"
        for offset, limit in ((0, 3), (0, 5), (2, 4), (0, 20)):
            for options in ({}, {"project_compression_tips": False}):
                assert_same_pages(db, monkeypatch, offset=offset, limit=limit, **options)
        rows, served = _fast(db, limit=5)
        assert served
        by_root = {r.get("_lineage_root_id", r["id"]): r["id"] for r in rows}
        assert by_root.get("s0", "s2") == "s2" and by_root.get("f0", "f2") == "f2"
    finally:
        db.close()


def test_straight_tip_reads_only_straight_chains():
    tip = activity_module.straight_tip
    assert tip('[[null,"a"],["a","b"],["b","c"]]') == "c"
    assert tip('[["b","c"],[null,"a"],["a","b"]]') == "c"
    assert tip('[[null,"a"]]') == "a"
    assert tip('[[null,"a"],["a","b"],["a","c"]]') is None  # a fork
    assert tip('[[null,"a"],["a","b"],["b","a"]]') is None  # a cycle
    assert tip('[["x","a"],["a","b"]]') is None  # no root
    assert tip("not json") is None


@pytest.mark.parametrize("schema", [16, 30])
def test_straight_tips_are_compression_tips(corpora, schema):
    """Every compression root of the corpus: the one-statement walk finds the tip
    lineage.compression_tip finds, or leaves the chain to it."""
    from hermes_state.lineage import compression_tip

    db = SessionDB(corpora[schema], read_only=True)
    try:
        roots = [r[0] for r in db._fetchall("SELECT id FROM sessions WHERE end_reason = 'compression'")]
        assert len(roots) > 5
        tips = db._read(lambda conn: activity_module.straight_tips(conn, roots))
        assert tips, "the corpus's chains go straight"
        for root, tip in tips.items():
            assert tip == db._read(lambda conn, r=root: compression_tip(conn, r))
    finally:
        db.close()


@pytest.mark.parametrize("schema", [16, 30])
def test_abandoned_rewinds_at_the_top_keep_the_fast_path(corpora, tmp_path, monkeypatch, schema):
    """The twenty most recently written conversations are rewound to their first message and
    left: they rank far below where the walk meets them. The walk goes on for as many more
    (no fall back to ranking every session) and the page is the general query's."""
    import shutil

    path = tmp_path / "state.db"
    shutil.copyfile(corpora[schema], path)
    writer = SessionDB(path)
    try:
        newest = [r[0] for r in writer._fetchall(
            "SELECT session_id FROM messages GROUP BY session_id ORDER BY MAX(id) DESC LIMIT 20")]
        for sid in newest:
            first = writer._fetchone(
                "SELECT id FROM messages WHERE session_id = ? AND role = 'user' ORDER BY id LIMIT 1", (sid,))
            writer.rewind_to_message(sid, first[0])
            # ... and make them old: nothing else keeps them near the top.
            stamp = ", last_activity_at = NULL" if schema == 30 else ""
            writer._execute_write(lambda conn, sid=sid: conn.execute(
                f"UPDATE sessions SET started_at = started_at - 90 * 86400{stamp} WHERE id = ?", (sid,)))
    finally:
        writer.close()
    shortfalls: list[int] = []
    page = activity_module.activity_page

    def watched(*args, **kwargs):
        result = page(*args, **kwargs)
        if isinstance(result, int):
            shortfalls.append(result)
        return result

    monkeypatch.setattr(activity_module, "activity_page", watched)
    db = SessionDB(path, read_only=True)
    try:
        for offset, limit in ((0, 50), (0, 5), (20, 30)):
            rows, served = _fast(db, offset=offset, limit=limit, exclude_sources=list(INTERNAL_SOURCES))
            assert served
            assert rows == _general(db, monkeypatch, offset=offset, limit=limit,
                                    exclude_sources=list(INTERNAL_SOURCES))
        assert shortfalls, "the walk met the rewound conversations and went on"
    finally:
        db.close()


def test_a_store_imported_session_by_session_is_ranked_by_time_not_by_id(db_path, monkeypatch):
    """Ids need not follow time: an importer writes each session's messages together, so a
    long conversation written first holds the newest message under the lowest ids. It still
    heads the list."""
    db = SessionDB(db_path)
    try:
        t = 1767000000.0
        _add(db, "long", t, [t + 10 * i for i in range(100)])  # ids 1-100, the last at t+990
        for n in range(150):  # ids 101-400: all older than the long one's end
            _add(db, f"short{n:03d}", t + 3 * n, [t + 3 * n + 1, t + 3 * n + 2])
        expected = [r["id"] for r in _general(db, monkeypatch, limit=5)]
        assert expected[0] == "long"
        for offset, limit in ((0, 1), (0, 5), (3, 7), (0, 20)):
            rows, served = _fast(db, offset=offset, limit=limit)
            assert served
            assert rows == _general(db, monkeypatch, offset=offset, limit=limit)
    finally:
        db.close()


def test_the_kept_bounds_follow_new_messages_and_the_kept_limit(db_path, monkeypatch):
    """Only ``KEEP`` sessions are kept; the others' bound rises as they are dropped. A session
    written to again comes back with its new message."""
    monkeypatch.setattr(activity_module._RecencyWalk, "KEEP", 10)
    writer = SessionDB(db_path)
    reader = SessionDB(db_path, read_only=True)
    try:
        _many(writer, 25, 1767000000.0)
        assert assert_same_pages(reader, monkeypatch, limit=4)
        walk = reader.lister.recency
        newest = sorted((r[0] for r in writer._fetchall(
            "SELECT MAX(timestamp) FROM messages GROUP BY session_id")), reverse=True)
        assert [-n for n, _sid in walk.order] == newest[:10] and walk.bound == newest[10]
        _add_messages(writer, "c000", [1767300000.0])  # the oldest conversation, written to again
        rows, served = _fast(reader, limit=4)
        assert served and rows[0]["id"] == "c000"
        assert rows == _general(reader, monkeypatch, limit=4)
        assert len(walk.order) == 10 and all(-n > walk.bound for n, _sid in walk.order)
        # Pages reaching past what is kept go to the general query, still right.
        for offset, limit in ((0, 9), (5, 10), (0, 30)):
            assert_same_pages(reader, monkeypatch, offset=offset, limit=limit)
    finally:
        reader.close()
        writer.close()


def test_summaries_from_rows_fill_defaults_and_mend_what_the_fields_refuse():
    """A page is validated as one list (SessionSummary.from_rows): the same models as one
    from_row per row, NULLs becoming defaults. SQLite does not enforce column types: a value
    no field accepts is mended in its own row (text from anything, a number from text that
    reads as one, else the field's default) and the other rows are left as they are."""
    from hermes_state.models import SessionSummary

    rows = [
        {"id": "a", "source": None, "started_at": None, "message_count": None, "archived": None,
         "pinned": 1, "_lineage_root_id": "root", "_delegate": 1, "preview": None, "extra": "ignored"},
        {"id": "b", "source": "cli", "started_at": 1.5, "message_count": 3, "hidden": 1, "last_active": 2.5},
    ]
    typed = SessionSummary.from_rows(rows)
    assert typed == [SessionSummary.from_row(row) for row in rows]
    first = typed[0]
    assert (first.source, first.started_at, first.message_count, first.preview) == ("", 0.0, 0, "")
    assert first.pinned and not first.archived and first.delegate and first.lineage_root_id == "root"
    assert typed[1].hidden and typed[1].last_active == 2.5
    assert SessionSummary.from_rows([]) == []
    bad = {"id": "c", "source": b"cl\xffi", "started_at": "yesterday", "title": 42, "message_count": "7",
           "input_tokens": "many", "estimated_cost_usd": "n/a", "last_active": " 3.25 ", "ended_at": b"x",
           "model": 4.5, "pinned": "yes"}
    mended = SessionSummary.from_row(bad)
    assert (mended.source, mended.started_at, mended.title, mended.message_count) == ("cl\ufffdi", 0.0, "42", 7)
    assert (mended.input_tokens, mended.estimated_cost_usd, mended.last_active, mended.ended_at) == (0, None, 3.25, None)
    assert mended.model == "4.5" and mended.pinned
    assert SessionSummary.from_rows([rows[1], bad]) == [typed[1], mended]


def test_messages_from_the_store_mend_what_the_fields_refuse():
    from hermes_state.models import Message, from_store

    message = from_store(Message, {"id": 7, "session_id": "s", "role": b"user", "content": b"\x00\xffA",
                                   "timestamp": "later", "token_count": "12", "compacted": "0"})
    assert (message.role, message.content, message.timestamp, message.token_count) == ("user", "\x00\ufffdA", 0.0, 12)
    assert from_store(Message, {"id": 1, "session_id": "s", "role": "user", "timestamp": 5}).timestamp == 5.0


def test_a_pages_hits_validated_together_are_each_hit_as_made_alone():
    """A search page's hits are validated as one list; a row that needs mending (a number
    stored as text, a title stored as a blob) makes every hit of that page as
    :func:`from_store` makes it alone."""
    from hermes_state.models import SearchHit, from_store, list_from_store

    clean = [{"id": n, "session_id": f"s{n}", "role": "user", "timestamp": 5 + n, "source": "cli", "model": None,
              "session_started": 4, "session_title": "t", "snippet": "a docker", "spans": [(2, 8)],
              "raw_snippet": "a >>>docker<<<", "score": 1.5, "path": "fts5"} for n in range(3)]
    assert list_from_store(SearchHit, clean) == [from_store(SearchHit, one) for one in clean]
    assert list_from_store(SearchHit, clean)[0].timestamp == 5.0
    mended = [dict(clean[0]), dict(clean[1], timestamp="later", session_title=b"\xffT"), dict(clean[2])]
    assert list_from_store(SearchHit, mended) == [from_store(SearchHit, one) for one in mended]
    assert (list_from_store(SearchHit, mended)[1].timestamp, list_from_store(SearchHit, mended)[1].session_title) == (0.0, "\ufffdT")
    assert list_from_store(SearchHit, []) == []


def test_get_summaries_is_get_summary_of_each_in_the_order_given(tmp_path):
    db = SessionDB(tmp_path / "state.db")
    try:
        for sid in ("a", "b", "c"):
            db.create_session(sid, "cli")
            db.append_message(sid, "user", f"first words of {sid}")
        db.set_session_title("b", "Bee")
        got = db.get_summaries(["c", "missing", "a", "b", "c"])
        assert [s.id for s in got] == ["c", "a", "b"]
        assert got == [db.get_summary(sid) for sid in ("c", "a", "b")]
        assert db.get_summaries([]) == []
    finally:
        db.close()


# ------------------------------------------------------------------- a reader paging deep
#
# Past the first conversations the general query ranks every listed conversation for each page
# (seconds at 250k sessions). A reader paging deep pages through one ranking instead
# (listing.rank + listing.summaries_of): its slices must be the general query's pages.

RANK_FILTERS = (
    {},
    {"exclude_sources": list(INTERNAL_SOURCES)},
    {"view": "archived"},
    {"view": "all", "include_hidden": True, "include_delegates": True},
    {"source": "telegram"},
    {"min_message_count": 3},  # (a deep page kept the short conversations the first pages hid)
)


@pytest.mark.parametrize("by_activity", [True, False], ids=["by-activity", "by-start"])
@pytest.mark.parametrize("schema", [16, 30])
@pytest.mark.parametrize("filters", RANK_FILTERS, ids=lambda f: ",".join(f) or "default")
def test_slices_of_the_ranking_are_the_pages(corpora, monkeypatch, schema, filters, by_activity):
    """By start too: a page deep in the list walks the start index up to its offset (0.4-0.8 s
    a page past 100,000 rows at 250k sessions), and the browser pages through one ranking by
    start instead."""
    db = _reader_with_pins(corpora[schema], schema)
    try:
        ranking = listing.rank(db.store, ListQuery.from_options(by_activity=by_activity, **filters))
        assert len(ranking) == listing.count_listed(db.store, ListQuery.from_options(**filters))
        assert len(set(ranking)) == len(ranking)
        if by_activity:
            monkeypatch.setattr(activity_module, "ACTIVITY_WALK_ROWS", 0)  # every page from the general query
            assert listing.ranked_deep(0, 1, by_activity=True)
        else:
            assert listing.ranked_deep(0, listing.BY_START_DEEP_ROWS + 1, by_activity=False)
            assert not listing.ranked_deep(0, listing.BY_START_DEEP_ROWS, by_activity=False)
        for offset, limit in ((0, 50), (50, 50), (7, 13), (max(0, len(ranking) - 20), 50), (len(ranking), 10)):
            rows, _total = listing.page(db.store, ListQuery.from_options(by_activity=by_activity, **filters), offset, limit, count=False)
            assert listing.summaries_of(
                db.store, ranking[offset:offset + limit], ListQuery.from_options(**filters),
            ) == rows, (offset, limit)
    finally:
        db.close()


def test_sessions_started_at_one_instant_keep_one_order_in_pages_and_ranking(tmp_path):
    """Many sessions with one start (an import, a clock without sub-seconds): the pages by
    start and the ranking order them alike -- pinned ones first, each part in the order the
    sessions were written (as the start index keeps them) -- whatever plan SQLite picks for
    each (a filter on the source reads the source index and sorts)."""
    db = SessionDB(tmp_path / "state.db")
    try:
        written = [f"s{(i * 7) % 30:02d}" for i in range(30)]  # (ids out of their written order)
        for i, sid in enumerate(written):
            db.create_session(sid, "telegram" if i % 3 else "cli")
            db.append_message(sid, "user", f"words of {sid}")
        db._execute_write(lambda conn: conn.execute("UPDATE sessions SET started_at = 1767000000.0"))
        db.set_session_pinned("s04", True)
        db.set_session_pinned("s17", True)
        for filters in ({}, {"source": "telegram"}, {"exclude_sources": ["cli"]}):
            ranking = listing.rank(db.store, ListQuery.from_options(by_activity=False, **filters))
            pages = [row.id for offset in range(0, 30, 7)
                     for row in listing.page(db.store, ListQuery.from_options(by_activity=False, **filters), offset, 7, count=False)[0]]
            assert pages == ranking, filters
            pinned = [sid for sid in written if sid in ("s04", "s17") and sid in ranking]
            assert ranking == pinned + [sid for sid in written if sid in ranking and sid not in pinned]
    finally:
        db.close()


def test_old_stores_rank_by_start_through_their_compatibility_views(shared_fixtures_dir):
    """An upstream file older than v11 is read through TEMP views (no rowid): its ranking by
    start is its pages."""
    checked = 0
    for path in sorted(shared_fixtures_dir.glob("upstream_v*.db")):
        db = SessionDB(path, read_only=True)
        try:
            ranking = listing.rank(db.store, ListQuery.from_options(by_activity=False))
            rows, total = listing.page(db.store, ListQuery.from_options(by_activity=False), 0, 1000)
            # (a compression root ranked is shown at its tip, by either)
            assert listing.summaries_of(db.store, ranking) == rows and total == len(ranking), path.name
            checked += bool(db.compat_views)
        finally:
            db.close()
    assert checked, "no fixture was read through compatibility views"


def test_the_ranking_leaves_out_a_conversation_deleted_since(tmp_path):
    db = SessionDB(tmp_path / "state.db")
    try:
        for i in range(5):
            _add(db, f"s{i}", 1_700_000_000 + i, [1_700_000_100 + i])
        ranking = listing.rank(db.store, ListQuery())
        assert ranking == ["s4", "s3", "s2", "s1", "s0"]
        db.delete_session("s2")
        assert [row.id for row in listing.summaries_of(db.store, ranking)] == ["s4", "s3", "s1", "s0"]
    finally:
        db.close()


# ---------------------------------------------------------------------------- streamed listing
#
# ``hermes sessions list --limit 1000000`` held every row of a 197k-session store at once
# (0.9 GB): SessionDB.iter_sessions_rich streams the same rows, a chunk at a time.

STREAM_FILTERS = (
    {},
    {"exclude_sources": list(INTERNAL_SOURCES)},
    {"source": "telegram"},
    {"archived_only": True},
)


@pytest.mark.parametrize("schema", [16, 30])
@pytest.mark.parametrize("filters", STREAM_FILTERS, ids=lambda f: ",".join(f) or "default")
def test_streamed_rows_are_list_sessions_richs_rows(corpora, schema, filters):
    db = _reader_with_pins(corpora[schema], schema)
    try:
        assert db.extra_pins or db.lister.pinned_ids_known(), "pinned rows come first in both"
        for limit in (0, 1, 7, 50, 10**6):
            rows = db.list_sessions_rich(limit=limit, **filters)
            for chunk in (1, 3, 500):
                assert list(db.iter_listed(ListQuery.from_options(**filters), limit=limit, chunk=chunk)) == rows, (limit, chunk)
            brief = db.list_sessions_rich(limit=limit, _columns=db.lister.summary_columns(), **filters)
            assert list(db.iter_listed(ListQuery.from_options(**filters), limit=limit, brief=True)) == brief, limit
        assert len(rows) > 50 or filters, "the corpus lists more than a chunk"
    finally:
        db.close()


@pytest.mark.parametrize("version", [30, 16, 11])
def test_streamed_rows_are_list_sessions_richs_rows_on_upstream_stores(upstream_copy, version):
    db = migrated_reader(upstream_copy, version)
    try:
        for filters in STREAM_FILTERS:
            rows = db.list_sessions_rich(limit=10**6, **filters)
            assert list(db.iter_listed(ListQuery.from_options(**filters), limit=10**6, chunk=2)) == rows, filters
    finally:
        db.close()


def _numbered(path: Path, n: int) -> SessionDB:
    """A store of ``n`` sessions ``s00``, ``s01``, … started and active in that order."""
    db = SessionDB(path)
    for i in range(n):
        _add(db, f"s{i:02d}", 1_700_000_000 + i, [1_700_000_100 + i])
    return db


def test_a_streamed_listing_is_one_snapshot_while_another_process_writes(tmp_path):
    path = tmp_path / "state.db"
    db = _numbered(path, 40)
    try:
        before = db.list_sessions_rich(limit=1000)
        rows = db.iter_listed(ListQuery(), limit=1000, chunk=5)
        streamed = [next(rows) for _ in range(7)]
        # Another process deletes a row not yet read and adds a newer session.
        script = (
            "import sys; from hermes_state import SessionDB\n"
            "db = SessionDB(sys.argv[1]); db.delete_session('s05'); db.create_session('new', 'cli'); db.close()\n"
        )
        subprocess.run([sys.executable, "-c", script, str(path)], check=True, timeout=60)
        streamed += list(rows)
        assert streamed == before
        after = [row["id"] for row in db.list_sessions_rich(limit=1000)]
        assert "s05" not in after and "new" in after  # (the snapshot ended with the stream)
    finally:
        db.close()


def test_a_streamed_listing_reads_text_that_is_not_utf8_leniently_once(tmp_path):
    db = _numbered(tmp_path / "state.db", 30)
    try:
        db._execute_write(lambda conn: conn.execute(
            "UPDATE sessions SET title = 'bad ' || X'FF' || ' title' WHERE id = 's03'"))
        rows = db.list_sessions_rich(limit=100)  # (read leniently as a whole)
        assert [row["title"] for row in rows if row["id"] == "s03"] == ["bad \ufffd title"]
        streamed = list(db.iter_listed(ListQuery(), limit=100, chunk=4))
        assert streamed == rows
        assert len({row["id"] for row in streamed}) == 30
    finally:
        db.close()


# ----------------------------------------------------------- the list by start, one source
#
# Filtered to a source, SQLite read the list by start through a source index and sorted every
# session of the source, its preview and last activity computed first: a page of cli (40 % of
# 250k sessions) took 0.5 s. A common source now walks the start index, testing each row's
# source; a rare one keeps the index and the sort.


def _by_start_pages(db: SessionDB, source: str, walk: bool | None, monkeypatch) -> tuple[list, list, list[str]]:
    """Pages by start of ``source`` (the walk forced on or off, or as decided), the CLI's
    streamed list of it, and the statements run."""
    statements: list[str] = []
    with monkeypatch.context() as m:
        if walk is not None:
            m.setattr(Lister, "walk_start_for", lambda self, source, rows: walk)
        db._conn.set_trace_callback(statements.append)
        try:
            pages = [
                [row["id"] for row in db.list_sessions_rich(source=source, limit=limit, offset=offset)]
                for offset, limit in ((0, 50), (0, 7), (7, 13), (40, 40), (300, 25))
            ]
            streamed = [row["id"] for row in db.iter_listed(ListQuery.from_options(source=source), limit=1000, chunk=9)]
        finally:
            db._conn.set_trace_callback(None)
    return pages, streamed, statements


def _listing_plan(db: SessionDB, statements: list[str]) -> str:
    main = [s for s in statements if "ORDER BY s.started_at DESC" in s and "LIMIT" in s and "source" in s]
    assert main, statements
    sql = max(main, key=len)
    params = [None] * sql.count("?")
    return " | ".join(str(tuple(r)[3]) for r in db._conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))


@pytest.mark.parametrize("schema", [16, 30])
def test_a_common_source_walks_the_start_index_a_rare_one_sorts_the_same_rows(corpora, monkeypatch, schema):
    db = _reader_with_pins(corpora[schema], schema)
    try:
        sources = dict(db._fetchall("SELECT source, COUNT(*) FROM sessions GROUP BY source ORDER BY 2 DESC"))
        common = next(iter(sources))
        rare = min(sources, key=sources.get)
        total = sum(sources.values())
        assert sources[common] * 4 > total and sources[rare] * 20 < total
        for source in (common, rare, "no-such-source"):
            walked, walked_streamed, _ = _by_start_pages(db, source, True, monkeypatch)
            sorted_, sorted_streamed, _ = _by_start_pages(db, source, False, monkeypatch)
            decided, decided_streamed, statements = _by_start_pages(db, source, None, monkeypatch)
            assert walked == sorted_ == decided, source
            assert walked_streamed == sorted_streamed == decided_streamed == [
                row["id"] for row in db.list_sessions_rich(source=source, limit=1000)
            ], source
            if source != "no-such-source":
                assert decided[0], source
            plan = _listing_plan(db, statements)
            if source == common:
                assert "idx_sessions_started" in plan and "TEMP B-TREE" not in plan, plan
            else:
                assert "idx_sessions_source" in plan, plan
    finally:
        db.close()


def test_a_page_asked_of_a_store_uses_the_list_engine_its_reader_keeps(tmp_path: Path):
    """listing.pages takes a Store: asked of a SessionDB's store it reads through that
    reader's own engine (the pins it was told, its caches), and asked of a bare Store it
    lists the same rows."""
    from hermes_state.listing.engine import lister_of
    from hermes_state.store import Store

    path = tmp_path / "state.db"
    writer = SessionDB(path)
    for i in range(5):
        writer.create_session(f"s{i}", "cli")
        writer.append_message(f"s{i}", "user", f"message {i}")
    writer.close()
    db = SessionDB(path, read_only=True)
    bare = Store(path, read_only=True)
    try:
        assert lister_of(db.store) is db.lister
        rows, total = listing.page(bare, ListQuery(), 0, 10)
        assert [r.id for r in listing.page(db.store, ListQuery(), 0, 10)[0]] == [r.id for r in rows]
        assert total == 5
        # Pins told to this reader alone (v30 pins live in a column; these in its engine).
        db.extra_pins = frozenset({"s0"})
        assert listing.page(db.store, ListQuery(), 0, 10)[0][0].id == "s0"
        assert listing.page(bare, ListQuery(), 0, 10)[0][0].id != "s0"
        assert lister_of(bare) is lister_of(bare), "a bare store keeps the engine made for it"
    finally:
        db.close()
        bare.close()


def test_summaries_are_kept_until_a_commit_and_follow_the_pins_file(upstream_copy) -> None:
    """A title match reads the same rows key after key: their summaries are kept while
    nothing commits (asked again, no row is read), another connection's commit is read by
    the next ask, and so is a pin kept in our settings file (a store without
    ``sessions.pinned``), which no commit announces."""
    path = upstream_copy(30)
    reader = SessionDB(path, read_only=True)
    writer = SessionDB(path)
    try:
        ids = [row.id for row in reader.list_summaries(ListQuery(), 3)]
        assert len(ids) == 3
        first = reader.get_summaries([*ids, "no-such-session"])
        assert [s.id for s in first] == ids
        statements: list[str] = []
        reader.store.read(lambda conn: conn.set_trace_callback(statements.append))
        assert reader.get_summaries(list(reversed(ids))) == list(reversed(first))
        assert not [sql for sql in statements if "FROM" in sql]
        reader.store.read(lambda conn: conn.set_trace_callback(None))
        assert writer.set_session_title(ids[0], "Renamed meanwhile")
        assert reader.get_summaries(ids)[0].title == "Renamed meanwhile"
        assert writer.set_session_pinned(ids[1], not first[1].pinned)
        assert reader.get_summaries(ids)[1].pinned != first[1].pinned
    finally:
        writer.close()
        reader.close()
    old = SessionDB(upstream_copy(16), read_only=True)
    try:
        assert not old.store.has_session_column("pinned")
        rows = old.list_summaries(ListQuery(), 2)
        assert [s.pinned for s in old.get_summaries([r.id for r in rows])] == [False, False]
        assert old.set_session_pinned(rows[1].id, True)  # (in the settings file: no commit)
        assert [s.pinned for s in old.get_summaries([r.id for r in rows])] == [False, True]
        assert old.set_session_pinned(rows[1].id, False)
        assert [s.pinned for s in old.get_summaries([r.id for r in rows])] == [False, False]
    finally:
        old.close()
