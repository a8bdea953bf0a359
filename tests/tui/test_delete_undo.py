"""Delete (confirm modal, EX-4, LI-14) and undo within the running app, on real databases."""

from __future__ import annotations

import io
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from textual.widgets import Static

from hermes_state import SessionDB
from hermes_state.export import session_to_jsonl
from hermes_state.trash import delete_with_snapshot, undo_delete
from hermes_tui.modals.delete import ConfirmDeleteModal
from hermes_tui.widgets.session_list import SessionList

from .conftest import SIZE, make_app, settle
from .dataset import NOW, build_fixed_db

PARENT = "20261118_075000_f0f0f0"
CHILD_A = "20261118_075200_d1d1d1"
CHILD_B = "20261118_075300_d2d2d2"
DOCKER = "20261118_074000_a1b2c3"
UNIQUE_WORD = "zanzibarquokka"


def add_family(path: Path) -> Path:
    """A live parent (written 1 minute before NOW) with two delegate children.

    The parent starts last, so it is the first row of the list. Its messages carry every
    optional column (reasoning, token counts, JSON columns) so the undo round trip is checked
    on all of them.
    """
    db = SessionDB(path)
    try:
        db.create_session(PARENT, "cli", model="claude-opus-4")
        m1 = db.append_message(PARENT, "user", f"Refactor the API gateway routing {UNIQUE_WORD}")
        m2 = db.append_message(
            PARENT,
            "assistant",
            "Splitting the router into per-service modules.",
            tool_calls=[{"id": "c9", "type": "function", "function": {"name": "grep", "arguments": "{\"q\": \"route\"}"}}],
            token_count=321,
            finish_reason="tool_calls",
            reasoning="Think about the routes first.",
            reasoning_details=[{"type": "summary", "text": "routes"}],
        )
        db.set_session_title(PARENT, "API gateway refactor")
        for child, title, started, text in (
            (CHILD_A, "subagent: read the routes", NOW - 8 * 60, "read every route file"),
            (CHILD_B, None, NOW - 7 * 60, "grep the handlers"),
        ):
            db.create_session(child, "cli", model="claude-haiku", parent_session_id=PARENT)
            mid = db.append_message(child, "user", text)
            db._execute_write(
                lambda c, mid=mid, started=started: c.execute(
                    "UPDATE messages SET timestamp = ? WHERE id = ?", (started + 30, mid)
                )
            )
            if title:
                db.set_session_title(child, title)
            db._execute_write(
                lambda c, child=child, started=started: c.execute(
                    "UPDATE sessions SET started_at = ?, ended_at = ?, end_reason = 'completed' "
                    "WHERE id = ?",
                    (started, started + 60, child),
                )
            )

        def pin(c: sqlite3.Connection) -> None:
            c.execute("UPDATE messages SET timestamp = ? WHERE id = ?", (NOW - 9 * 60, m1))
            c.execute("UPDATE messages SET timestamp = ? WHERE id = ?", (NOW - 60, m2))
            c.execute(
                "UPDATE sessions SET started_at = ?, input_tokens = 5000, output_tokens = 900, "
                "estimated_cost_usd = 0.125 WHERE id = ?",
                (NOW - 10 * 60, PARENT),
            )

        db._execute_write(pin)
    finally:
        db.close()
    return path


def family_db(tmp_path: Path) -> Path:
    return add_family(build_fixed_db(tmp_path / "state.db"))


def whole_export(path: Path) -> dict[str, str]:
    """Every session of the store as its EX-3 JSONL line (byte-for-byte comparable)."""
    db = SessionDB(path, read_only=True)
    try:
        ids = [r[0] for r in db._fetchall("SELECT id FROM sessions ORDER BY id")]
        return {sid: session_to_jsonl(db.export_session(sid)) for sid in ids}
    finally:
        db.close()


def fts_hits(path: Path, word: str) -> dict[str, list[int]]:
    conn = sqlite3.connect(path)
    try:
        return {
            table: sorted(r[0] for r in conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (word,)))
            for table in ("messages_fts", "messages_fts_trigram")
        }
    finally:
        conn.close()


def parent_of(path: Path, sid: str) -> str | None:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT parent_session_id FROM sessions WHERE id = ?", (sid,)).fetchone()[0]
    finally:
        conn.close()


def session_exists(path: Path, sid: str) -> bool:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone() is not None
    finally:
        conn.close()


def plain(renderable) -> str:
    console = Console(width=200, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.file.getvalue()


def modal_text(modal) -> str:
    """Everything the modal's static texts say, as plain text."""
    return "\n".join(plain(w.content) for w in modal.query(Static))


def notifications(app) -> list[str]:
    return [n.message for n in app._notifications]


# ---------------------------------------------------------------------------- the modal


async def delete_modal_of_parent(app, pilot) -> ConfirmDeleteModal:
    """``d`` on the first row (PARENT, the family's live parent): its confirmation."""
    await settle(pilot)
    assert app.screen.query_one(SessionList).current.id == PARENT
    await pilot.press("d")
    await settle(pilot)
    modal = app.screen
    assert isinstance(modal, ConfirmDeleteModal)
    return modal



async def test_br9_delete_modal_names_messages_children_and_live_warning(tmp_path: Path) -> None:
    path = family_db(tmp_path)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        modal = await delete_modal_of_parent(app, pilot)
        preview = modal.preview
        assert preview.session_id == PARENT
        assert preview.message_count == 2
        assert [c.id for c in preview.children] == [CHILD_A, CHILD_B]
        assert preview.live is True
        text = modal_text(modal)
        assert "API gateway refactor" in text
        assert "2 messages" in text
        assert "2 child sessions will be orphaned" in text
        assert CHILD_A in text and "subagent: read the routes" in text
        assert CHILD_B in text and "grep the handlers" in text  # untitled: its first message
        assert "looks live" in text and "1m ago" in text
        # Cancel keeps the focus, so a stray Enter cannot delete.
        assert app.focused.id == "delete-no"


RUNS = ("20261118_075100_e1e1e1", "20261118_075110_e2e2e2")


def add_delegate_runs(path: Path) -> tuple[str, str]:
    """Two sub-agent runs under PARENT: a run (2 messages), and a run of that run (1)."""
    db = SessionDB(path)
    try:
        for run, parent in zip(RUNS, (PARENT, RUNS[0])):
            db.create_session(run, "subagent", parent_session_id=parent,
                              model_config={"_delegate_from": parent})
            db.append_message(run, "user", f"delegated work of {run}")
        db.append_message(RUNS[0], "assistant", "done")
    finally:
        db.close()
    return RUNS


async def test_delete_modal_says_delegate_runs_go_with_it_and_only_other_children_stay(tmp_path: Path) -> None:
    """UC-5: a delete takes the session's delegate (sub-agent) runs with it. The modal listed
    them among the children that "will be orphaned (they stay, as roots; nothing cascades)",
    said "Deletes 20 messages" and the delete removed 31."""
    path = family_db(tmp_path)
    runs = add_delegate_runs(path)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        modal = await delete_modal_of_parent(app, pilot)
        assert [c.id for c in modal.preview.children] == [CHILD_A, CHILD_B]
        assert [c.id for c in modal.preview.delegates] == list(runs)
        text = modal_text(modal)
        assert "Deletes 2 messages, its 2 delegate runs (3 messages) and the session's transcript files." in text
        assert "2 child sessions will be orphaned" in text
        assert runs[0] not in text and runs[1] not in text
        await pilot.press("y")
        await settle(pilot)
        assert not any(session_exists(path, sid) for sid in (PARENT, *runs))
        assert session_exists(path, CHILD_A) and session_exists(path, CHILD_B)
        assert any("(5 messages, with 2 delegate runs; 2 child sessions orphaned)" in n for n in notifications(app))


async def test_deleting_marked_conversations_says_their_delegate_runs_went_too(tmp_path: Path) -> None:
    from hermes_tui.modals.confirm_batch import ConfirmBatchModal

    path = family_db(tmp_path)
    runs = add_delegate_runs(path)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.screen.query_one(SessionList).current.id == PARENT
        await pilot.press("space", "space", "d")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, ConfirmBatchModal)
        said = " ".join(modal_text(modal).split())
        assert "with any delegate (sub-agent) runs of theirs; their other child sessions stay, as roots." in said
        await pilot.press("y")
        await settle(pilot)
        assert not any(session_exists(path, sid) for sid in (PARENT, *runs))
        assert any("Deleted 2 conversations (" in n and ", with 2 delegate runs)." in n for n in notifications(app))


async def test_delete_modal_no_live_warning_for_ended_session(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("j", "j")  # release checklist: ended, no children
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, ConfirmDeleteModal)
        assert modal.preview.live is False and modal.preview.children == []
        text = modal_text(modal)
        assert "looks live" not in text
        assert "No child sessions." in text


async def test_delete_cancel_changes_nothing(tmp_path: Path) -> None:
    path = family_db(tmp_path)
    before = whole_export(path)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for cancel in ("n", "escape", "enter"):  # Enter presses the focused Cancel button
            await pilot.press("d")
            await settle(pilot)
            assert isinstance(app.screen, ConfirmDeleteModal)
            await pilot.press(cancel)
            await settle(pilot)
            assert not isinstance(app.screen, ConfirmDeleteModal)
    assert whole_export(path) == before


# ---------------------------------------------------------------------------- delete + undo


async def test_ex4_li14_delete_then_undo_round_trips_byte_for_byte(tmp_path: Path) -> None:
    path = family_db(tmp_path)
    sessions_dir = tmp_path / "sessions"
    sessions_dir.mkdir()
    transcript = sessions_dir / f"{PARENT}.jsonl"
    transcript.write_bytes(b'{"role": "user"}\n')
    transcript.chmod(0o640)
    dump = sessions_dir / f"request_dump_{PARENT}_001.json"
    dump.write_text("{}")
    other = sessions_dir / f"{DOCKER}.jsonl"
    other.write_text("untouched")
    before = whole_export(path)
    hits_before = fts_hits(path, UNIQUE_WORD)
    assert all(hits_before.values())

    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        # Deleted: the row, its messages (FTS via triggers) and its files; children orphaned.
        assert not session_exists(path, PARENT)
        assert parent_of(path, CHILD_A) is None and parent_of(path, CHILD_B) is None
        assert fts_hits(path, UNIQUE_WORD) == {"messages_fts": [], "messages_fts_trigram": []}
        assert not transcript.exists() and not dump.exists() and other.exists()
        assert any("Press u to undo" in m and "2 child sessions orphaned" in m for m in notifications(app))
        lst = app.screen.query_one(SessionList)
        assert PARENT not in [lst.row(i).id for i in range(lst.total)]

        await pilot.press("u")
        await settle(pilot)
        assert any(m.startswith("Restored “API gateway refactor” with 2 messages") for m in notifications(app))
        # The restored session is back in the list, under the cursor.
        assert lst.current is not None and lst.current.id == PARENT

    after = whole_export(path)
    assert after == before  # every session, every column, message ids and timestamps
    assert parent_of(path, CHILD_A) == PARENT and parent_of(path, CHILD_B) == PARENT
    assert fts_hits(path, UNIQUE_WORD) == hits_before
    assert transcript.read_bytes() == b'{"role": "user"}\n'
    assert transcript.stat().st_mode & 0o777 == 0o640
    assert dump.read_text() == "{}"


async def test_undo_with_nothing_deleted_says_so(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("u")
        await settle(pilot)
        assert "Nothing to undo." in notifications(app)


async def test_undo_is_a_stack_last_delete_first(fixed_db: Path) -> None:
    before = whole_export(fixed_db)
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        deleted = []
        for _ in range(2):
            deleted.append(app.screen.query_one(SessionList).current.id)
            await pilot.press("d")
            await settle(pilot)
            await pilot.press("y")
            await settle(pilot)
        assert not any(session_exists(fixed_db, sid) for sid in deleted)
        await pilot.press("u")
        await settle(pilot)
        assert session_exists(fixed_db, deleted[1]) and not session_exists(fixed_db, deleted[0])
        await pilot.press("u")
        await settle(pilot)
    assert whole_export(fixed_db) == before


async def test_undo_reports_title_taken_and_reused_message_id(tmp_path: Path) -> None:
    path = family_db(tmp_path)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        snapshot = app.ctx.undo.peek()
        reused_id = snapshot.message_rows[0][0]
        # Meanwhile another process takes the title and (explicitly) one message id.
        other = SessionDB(path)
        other.set_session_title(DOCKER, "API gateway refactor")
        other._execute_write(
            lambda c: c.execute(
                "INSERT INTO messages (id, session_id, role, content, timestamp) VALUES (?, ?, 'user', 'squatter', ?)",
                (reused_id, DOCKER, NOW),
            )
        )
        other.close()
        await pilot.press("u")
        await settle(pilot)
        message = next(m for m in notifications(app) if m.startswith("Restored"))
        assert "Could not restore" in message
        assert f"title 'API gateway refactor' is now used by session {DOCKER}" in message
        assert "1 message id was taken meanwhile and got new ids" in message

    db = SessionDB(path, read_only=True)
    try:
        restored = db.export_session(PARENT)
        assert restored["title"] is None
        assert len(restored["messages"]) == 2
        ids = [m["id"] for m in restored["messages"]]
        assert reused_id not in ids
        assert snapshot.message_rows[1][0] in ids  # the free id came back as it was
        assert [m["content"] for m in restored["messages"]][0].startswith("Refactor the API gateway")
        assert db.get_session(DOCKER)["title"] == "API gateway refactor"
    finally:
        db.close()
    assert parent_of(path, CHILD_A) == PARENT


async def test_delete_and_undo_explain_read_only_database(tmp_path: Path) -> None:
    path = family_db(tmp_path)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE schema_version SET version = 31")  # above 30 (UC-9)
    conn.commit()
    conn.close()
    before = whole_export(path)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.ctx.access.read_only_reason
        await pilot.press("d")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmDeleteModal)
        assert any(m.startswith("Cannot delete: schema version 31 is newer") for m in notifications(app))
    assert whole_export(path) == before


# ---------------------------------------------------------------------------- the functions


def test_undo_restores_orphan_parent_as_root_and_leaves_moved_children(tmp_path: Path) -> None:
    """Conflicts that appear after a delete are reported; the rest is restored."""
    path = family_db(tmp_path)
    writer = SessionDB(path)
    try:
        writer.create_session("grandparent", "cli")
        writer._execute_write(
            lambda c: c.execute("UPDATE sessions SET parent_session_id = 'grandparent' WHERE id = ?", (PARENT,))
        )
        outcome = delete_with_snapshot(lambda: writer, PARENT, sessions_dir=None)
        assert outcome.ok
        snapshot = outcome.deleted
        assert snapshot.child_ids == [CHILD_A, CHILD_B]
        # Meanwhile: the grandparent is deleted, one child is deleted, one re-parented.
        writer.delete_session("grandparent")
        writer.delete_session(CHILD_A)
        writer._execute_write(
            lambda c: c.execute("UPDATE sessions SET parent_session_id = ? WHERE id = ?", (DOCKER, CHILD_B))
        )
        report = undo_delete(lambda: writer, snapshot)
        assert report.restored and not report.exact
        assert report.parent_missing == "grandparent"
        assert report.children_missing == [CHILD_A]
        assert report.children_moved == [(CHILD_B, DOCKER)]
        assert writer.get_session(PARENT)["parent_session_id"] is None
        assert writer.get_session(CHILD_B)["parent_session_id"] == DOCKER
        assert len(writer.get_messages(PARENT)) == 2
        summary = report.summary()
        assert "its parent grandparent no longer exists" in summary
        assert f"child {CHILD_B} now belongs to {DOCKER}" in summary
    finally:
        writer.close()


def test_undo_refuses_when_the_id_exists_again(tmp_path: Path) -> None:
    path = family_db(tmp_path)
    writer = SessionDB(path)
    try:
        snapshot = delete_with_snapshot(lambda: writer, PARENT, sessions_dir=None).deleted
        writer.create_session(PARENT, "telegram")
        report = undo_delete(lambda: writer, snapshot)
        # Refused, nothing changed -- and the snapshot is still good for another try.
        assert not report.restored and report.retryable
        assert "exists again" in report.summary()
        assert writer.get_session(PARENT)["source"] == "telegram"
        assert writer.get_messages(PARENT) == []
        writer.delete_session(PARENT)  # the person removes the newcomer, then tries again
        assert undo_delete(lambda: writer, snapshot).restored
        assert len(writer.get_messages(PARENT)) == 2
    finally:
        writer.close()


HOLD_LOCK = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


def hold_write_lock(path: Path) -> subprocess.Popen:
    """A real second process holding the database's write lock until told to stop."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert proc.stdout.readline().strip() == "locked"
    return proc


def release(proc: subprocess.Popen) -> None:
    proc.stdin.write("\n")
    proc.stdin.flush()
    proc.wait(timeout=10)


def small_retry_budget(db: SessionDB) -> SessionDB:
    """The store's retry rules with a short budget, so a held lock outlasts it quickly."""
    db.store.write_max_retries = 2
    db._conn.execute("PRAGMA busy_timeout = 50")
    return db


def test_delete_and_undo_under_a_held_lock_change_nothing(tmp_path: Path) -> None:
    path = family_db(tmp_path)
    before = whole_export(path)
    writer = small_retry_budget(SessionDB(path))
    try:
        proc = hold_write_lock(path)
        try:
            outcome = delete_with_snapshot(lambda: writer, PARENT, sessions_dir=None)
        finally:
            release(proc)
        assert not outcome.ok and outcome.deleted is None
        assert "locked" in outcome.error and "Nothing was deleted." in outcome.error
        assert whole_export(path) == before

        snapshot = delete_with_snapshot(lambda: writer, PARENT, sessions_dir=None).deleted
        proc = hold_write_lock(path)
        try:
            report = undo_delete(lambda: writer, snapshot)
        finally:
            release(proc)
        assert not report.restored and report.retryable
        assert "Nothing was restored." in report.summary()
        assert not session_exists(path, PARENT)
        assert undo_delete(lambda: writer, snapshot).exact
    finally:
        writer.close()
    assert whole_export(path) == before


def test_snapshot_is_taken_in_the_deleting_transaction(tmp_path: Path) -> None:
    """Messages present at delete time are exactly the ones kept for undo (ids included)."""
    path = family_db(tmp_path)
    writer = SessionDB(path)
    try:
        ids = [m["id"] for m in writer.get_messages(PARENT)]
        snapshot = delete_with_snapshot(lambda: writer, PARENT, sessions_dir=None).deleted
        id_col = snapshot.message_columns.index("id")
        assert [row[id_col] for row in snapshot.message_rows] == ids
        assert snapshot.column("title") == "API gateway refactor"
        assert snapshot.column("estimated_cost_usd") == 0.125
        # JSON columns are kept as stored (strings), not decoded.
        details = snapshot.message_rows[1][snapshot.message_columns.index("reasoning_details")]
        assert json.loads(details) == [{"type": "summary", "text": "routes"}]
    finally:
        writer.close()
