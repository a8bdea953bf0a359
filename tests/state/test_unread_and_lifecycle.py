"""Unread (upstream's ``last_read_at`` watermark) and lifecycle status on real stores.

Stamps go only to ``last_read_at`` of the conversation's sessions -- every other value of
every row, the schema and its version stay as they were; a store without the column is not
touched at all. The list's unread-only and status filters, its count and the rows' own marks
answer by one rule.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from hermes_state import ListQuery, SessionDB
from hermes_state import lifecycle
from hermes_state.listing import workspace_counts
from hermes_state.listing.marks import conversation_marks
from hermes_state.unread import UnreadNotTracked, not_tracked, set_read, set_read_many

C1, C2, C3 = "20260921_120000_c1", "20260921_121000_c2", "20260921_122000_c3"
B1, S1, D1, K1 = "20260921_130000_b1", "20260921_090000_s1", "20260921_090500_d1", "20260921_150000_k1"


def _ro(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def _rows(path: Path) -> dict[str, dict]:
    with _ro(path) as conn:
        conn.row_factory = sqlite3.Row
        return {row["id"]: dict(row) for row in conn.execute("SELECT * FROM sessions")}


def _shape(path: Path) -> tuple:
    with _ro(path) as conn:
        master = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name").fetchall()
        version = conn.execute("SELECT version FROM schema_version").fetchall()
        messages = conn.execute("SELECT * FROM messages ORDER BY id").fetchall()
        return master, version, messages


def _integrity(path: Path) -> str:
    with _ro(path) as conn:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]


def _human(**fields) -> ListQuery:
    return ListQuery.human(**fields)


def test_marking_read_writes_only_last_read_at_of_the_conversations_sessions(upstream_copy):
    path = upstream_copy(30)
    before_rows, before_shape = _rows(path), _shape(path)
    db = SessionDB(path)
    try:
        stamped = set_read(db.store, C2, True, now=1_790_011_500.0)  # a middle segment
    finally:
        db.close()
    assert sorted(stamped) == [C1, C2, C3]  # the compression chain; not the branch b1
    after_rows = _rows(path)
    assert after_rows.keys() == before_rows.keys()
    for sid, before in before_rows.items():
        after = after_rows[sid]
        for column, value in before.items():
            if column == "last_read_at" and sid in stamped:
                assert after[column] == 1_790_011_500.0
            else:
                assert after[column] == value, (sid, column)
    assert _shape(path) == before_shape  # sqlite_master, schema_version and messages alike
    assert _integrity(path) == "ok"


def test_marking_unread_stamps_zero_and_covers_delegate_runs(upstream_copy):
    path = upstream_copy(30)
    db = SessionDB(path)
    try:
        assert sorted(set_read(db.store, S1, False)) == [S1, D1]
    finally:
        db.close()
    rows = _rows(path)
    assert rows[S1]["last_read_at"] == 0.0 and rows[D1]["last_read_at"] == 0.0
    assert rows[C1]["last_read_at"] is None
    assert _integrity(path) == "ok"


def test_a_conversation_is_unread_only_with_activity_after_its_watermark(upstream_copy):
    path = upstream_copy(30)
    db = SessionDB(path)
    try:
        listed = {r.id: r for r in db.list_summaries(_human(), 50)}
        assert not any(r.unread for r in listed.values())  # NULL everywhere: read
        set_read(db.store, C1, True, now=listed[C3].last_active - 1)  # before c3's last message
        set_read(db.store, S1, True, now=listed[S1].last_active + 1)  # after s1's
        set_read(db.store, K1, False)
        rows = {r.id: r for r in db.list_summaries(_human(), 50)}
        assert {sid for sid, r in rows.items() if r.unread} == {C3, K1}
        # The list shows the chain at its tip c3 and reads the root's watermark.
        assert rows[C3].lineage_root_id == C1 and rows[C3].last_read_at is not None
        only = _human(unread_only=True)
        assert {r.id for r in db.list_summaries(only, 50)} == {C3, K1}
        assert db.lister.count_listed(only) == 2
        # The workspace picker's counts obey it too.
        assert sum(w.count for w in workspace_counts(db.store, only)) == 2
        by_activity = only.with_(order="activity")
        assert {r.id for r in db.list_summaries(by_activity, 50)} == {C3, K1}
        marks = conversation_marks(db.store, [C1, S1, K1])
        assert (marks[C1].unread, marks[S1].unread, marks[K1].unread) == (True, False, True)
        # Reading it again clears it; upstream's dict helper agrees.
        set_read(db.store, C3, True)
        assert not any(r.unread for r in db.list_summaries(_human(), 50) if r.id == C3)
        assert db.session_unread({"last_read_at": 5.0, "last_active": 6.0})
        assert not db.session_unread({"last_read_at": None, "last_active": 6.0})
    finally:
        db.close()


def test_a_store_without_the_column_is_never_written_and_says_unread_is_not_tracked(upstream_copy):
    path = upstream_copy(16)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    db = SessionDB(path, read_only=True)
    try:
        assert not_tracked(db.store) == "unread is not tracked in this store (schema v16)"
        assert db.lister.count_listed(_human(unread_only=True)) == 0
        assert not any(r.unread for r in db.list_summaries(_human(), 50))
    finally:
        db.close()
    db = SessionDB(path)
    try:
        with pytest.raises(UnreadNotTracked, match=r"not tracked in this store \(schema v16\)"):
            set_read_many(db.store, ["20260528_100000_aa0001"], True)
        with pytest.raises(UnreadNotTracked):
            db.set_session_read("20260528_100000_aa0001", False)
    finally:
        db.close()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    assert _integrity(path) == "ok"


def _lifecycle_store(db: SessionDB, make_session) -> None:
    make_session(db, "complete", messages=[("user", "hi"), {"role": "assistant", "content": "done", "finish_reason": "stop"}])
    make_session(db, "user-tail", messages=[("user", "unanswered")], started_at=1_000_100.0)
    make_session(db, "pending-call", started_at=1_000_200.0, messages=[
        ("user", "run it"), {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "terminal"}}]}])
    make_session(db, "round-trip", started_at=1_000_300.0, messages=[
        ("user", "run it"), {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "terminal"}}]},
        {"role": "tool", "content": "ok", "tool_call_id": "c1"}, ("assistant", "it ran")])
    make_session(db, "tool-tail", started_at=1_000_400.0, messages=[
        ("user", "run it"), {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "terminal"}}]},
        {"role": "tool", "content": "ok", "tool_call_id": "c1"}])
    make_session(db, "error", started_at=1_000_500.0, messages=[
        ("user", "hi"), {"role": "assistant", "content": "boom", "finish_reason": "agent_error"}])
    make_session(db, "empty", started_at=1_000_600.0)


EXPECTED = {
    "complete": "complete", "user-tail": "interrupted", "pending-call": "interrupted",
    "round-trip": "complete", "tool-tail": "interrupted", "error": "error", "empty": "empty",
}


def test_each_status_is_derived_from_the_last_message_as_upstream_derives_it(db, make_session):
    _lifecycle_store(db, make_session)
    assert db.session_lifecycle_statuses(list(EXPECTED) + ["no-such-session"]) == {
        **EXPECTED, "no-such-session": "empty"}
    assert db.session_lifecycle_statuses([]) == {}
    rows = {r.id: r.lifecycle for r in db.list_summaries(_human(), 50)}
    assert rows == EXPECTED


@pytest.mark.parametrize("wanted", [("complete",), ("interrupted",), ("error",), ("empty",), ("error", "empty")])
def test_the_status_filter_lists_and_counts_what_the_rows_show(db, make_session, wanted):
    _lifecycle_store(db, make_session)
    query = _human(statuses=wanted)
    listed = db.list_summaries(query, 50)
    assert {r.id for r in listed} == {sid for sid, status in EXPECTED.items() if status in wanted}
    assert all(r.lifecycle in wanted for r in listed)
    assert db.lister.count_listed(query) == len(listed)
    assert {r.id for r in db.list_summaries(query.with_(order="activity"), 50)} == {r.id for r in listed}


def test_a_chains_status_is_its_tips(upstream_copy):
    path = upstream_copy(30)
    db = SessionDB(path, read_only=True)
    try:
        by_id = {r.id: r.lifecycle for r in db.list_summaries(_human(), 50)}
        assert by_id[C3] == lifecycle.COMPLETE and by_id[K1] == lifecycle.INTERRUPTED  # k1 ends on a tool row
        interrupted = {r.id for r in db.list_summaries(_human(statuses=("interrupted",)), 50)}
        assert K1 in interrupted and C3 not in interrupted
    finally:
        db.close()


def test_status_names_people_type_are_read_as_upstreams():
    assert lifecycle.parse_statuses("done, intr,ERR,empty") == ("complete", "interrupted", "error", "empty")
    with pytest.raises(ValueError, match="unknown status 'finished'"):
        lifecycle.parse_statuses("done,finished")
    assert ListQuery(statuses=("error", "complete")) == ListQuery(statuses=("complete", "error"))
    assert hash(ListQuery(unread_only=True)) != hash(ListQuery())


def test_a_chain_of_any_length_is_read_and_classified_at_its_live_tip(upstream_copy, make_session):
    """150 compressions (past any old walk's 100 steps): the status and the unread state the
    list shows, filters on and counts by are the live tip's."""
    db = SessionDB(upstream_copy(30))
    try:
        _long_chain(db, make_session)
    finally:
        db.close()


def _long_chain(db: SessionDB, make_session) -> None:
    start, parent = 2_000_000_000.0, None
    for n in range(150):
        sid = f"seg{n:03d}"
        last = n == 149
        make_session(db, sid, started_at=start, parent_session_id=parent,
                     **({} if last else {"ended_at": start + 60, "end_reason": "compression"}),
                     messages=[("user", f"turn {n}")] if last else [("user", f"turn {n}"), ("assistant", "ok")])
        parent, start = sid, start + 60
    rows = [r for r in db.list_summaries(_human(), 50) if r.id.startswith("seg")]
    assert [(r.id, r.lineage_root_id, r.lifecycle) for r in rows] == [("seg149", "seg000", "interrupted")]
    interrupted = {r.id for r in db.list_summaries(_human(statuses=("interrupted",)), 50)}
    assert "seg149" in interrupted
    assert "seg149" not in {r.id for r in db.list_summaries(_human(statuses=("complete",)), 50)}
    set_read(db.store, "seg010", True, now=start - 60.5)  # before the tip's last message
    assert [r.id for r in db.list_summaries(_human(unread_only=True), 50)] == ["seg149"]
    assert conversation_marks(db.store, ["seg000"])["seg000"].unread


def test_a_page_of_given_sessions_obeys_the_reading_filters(upstream_copy):
    """The browser's live-lanes view lists given sessions: unread only and a status narrow it."""
    from hermes_state.listing import page_of_ids

    db = SessionDB(upstream_copy(30))
    try:
        set_read(db.store, S1, False)
        given = {S1, K1, "20260921_140000_r1"}
        rows, total = page_of_ids(db.store, given, 0, 10, ListQuery(unread_only=True))
        assert ([r.id for r in rows], total) == ([S1], 1)
        rows, total = page_of_ids(db.store, given, 0, 10, ListQuery(statuses=("interrupted",)))
        assert ([r.id for r in rows], total) == ([K1], 1)
        assert page_of_ids(db.store, given, 0, 10)[1] == 3
    finally:
        db.close()


def test_upstreams_rich_rows_say_unread_where_the_store_keeps_the_watermark(upstream_copy):
    path = upstream_copy(30)
    db = SessionDB(path)
    try:
        set_read(db.store, S1, False)
        rows = {row["id"]: row for row in db.list_sessions_rich(limit=50)}
        assert rows[S1]["unread"] is True and rows[C3]["unread"] is False
    finally:
        db.close()
    db = SessionDB(upstream_copy(16), read_only=True)
    try:
        assert all("unread" not in row for row in db.list_sessions_rich(limit=50))
    finally:
        db.close()


def test_a_conversations_marks_are_kept_until_a_commit_and_read_again_after_it(upstream_copy):
    """Search as you type marks the same conversations key after key: their marks are kept
    while nothing commits (asked again, only the store's change mark is read), and another
    connection's commit -- a read stamp, a new message -- is read by the next ask."""
    path = upstream_copy(30)
    reader = SessionDB(path, read_only=True)
    writer = SessionDB(path)
    try:
        set_read(writer.store, K1, True)
        first = conversation_marks(reader.store, [C1, S1, K1, "no-such-session"])
        assert set(first) == {C1, S1, K1} and not first[K1].unread
        assert first[K1].lifecycle == lifecycle.INTERRUPTED
        statements: list[str] = []
        reader.store.read(lambda conn: conn.set_trace_callback(statements.append))
        assert conversation_marks(reader.store, [K1, C1, S1, "no-such-session"]) == first
        assert statements == ["PRAGMA data_version"]
        set_read(writer.store, K1, False)
        assert conversation_marks(reader.store, [K1])[K1].unread
        writer.append_message(K1, "assistant", "here is the answer")
        assert conversation_marks(reader.store, [K1])[K1].lifecycle == lifecycle.COMPLETE
    finally:
        writer.close()
        reader.close()
