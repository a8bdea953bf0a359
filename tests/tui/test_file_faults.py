"""The browser's own faults: the file moves under it, the disk fills, a worker fails.

Real files and real second processes: the database is replaced with a real ``mv``/``cp`` and
deleted with a real ``rm`` while the app runs under Pilot.
"""

from __future__ import annotations

import sqlite3
import subprocess
import time
from pathlib import Path

from hermes_state import SessionDB
from hermes_tui.widgets.session_list import SessionList

from .conftest import SIZE, make_app, settle
from .test_delete_undo import notifications
from .test_rename import RELEASE, open_rename, submit, title_of


async def wait_until(pilot, condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not condition():
        await pilot.pause(0.05)
    assert condition()


def sh(command: str) -> None:
    subprocess.run(["sh", "-c", command], check=True, timeout=30)


async def test_replaced_file_is_reopened_and_edits_go_to_it(fixed_db: Path) -> None:
    app = make_app(fixed_db, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        await pilot.press("j", "j")
        await settle(pilot)
        assert lst.current.id == RELEASE
        # A restore / a sync tool: the file at the path is now another file.
        sh(f"mv '{fixed_db}' '{fixed_db}.bak' && cp '{fixed_db}.bak' '{fixed_db}'")
        await wait_until(pilot, lambda: any("was replaced" in n for n in notifications(app)))
        await settle(pilot)
        assert sum("was replaced" in n for n in notifications(app)) == 1  # said once
        # Another process writes the new file: the browser sees it (it reads the new file).
        other = SessionDB(fixed_db)
        other.set_session_title(RELEASE, "written after the restore")
        other.close()
        await wait_until(pilot, lambda: lst.current is not None and lst.current.title == "written after the restore")
        assert lst.current.id == RELEASE  # the view was kept
        # A rename in the browser goes to the file at the path, not to the moved-away one.
        modal = await open_rename(pilot, moves=0)
        await submit(pilot, modal, "renamed in the browser")
        assert title_of(fixed_db, RELEASE) == "renamed in the browser"
        # The moved-away file (read as a plain file: its -wal/-shm names now belong to the
        # new file) still has the old title.
        old = sqlite3.connect(f"file:{fixed_db}.bak?immutable=1", uri=True)
        try:
            assert old.execute("SELECT title FROM sessions WHERE id = ?", (RELEASE,)).fetchone()[0] == "release checklist"
        finally:
            old.close()


async def test_deleted_file_keeps_the_view_refuses_writes_and_is_never_created(fixed_db: Path) -> None:
    app = make_app(fixed_db, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        shown = lst.total
        sh(f"rm '{fixed_db}'")
        await wait_until(pilot, lambda: any("was deleted" in n for n in notifications(app)))
        await settle(pilot)
        assert lst.total == shown and lst.current is not None  # what was read stays
        await pilot.press("j", "j", "r")
        await settle(pilot)
        said = [n for n in notifications(app) if n.startswith("Cannot rename")]
        assert said and "was deleted" in said[-1] and said[-1].endswith("Nothing was changed.")
        await pilot.press("d")
        await settle(pilot)
        assert not fixed_db.exists()  # nothing created a new, empty database
        assert sum("was deleted" in n and "showing what was read" in n for n in notifications(app)) == 1


async def test_writer_refuses_a_file_deleted_since_the_last_tick(fixed_db: Path) -> None:
    """Between two watcher ticks: the check before the write itself catches it."""
    app = make_app(fixed_db)  # no watcher at all
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        modal = await open_rename(pilot)
        sh(f"rm '{fixed_db}'")
        await submit(pilot, modal, "never written")
        assert not fixed_db.exists()
        assert "was deleted" in " ".join(notifications(app)) + str(modal.query("#rename-error").first().content)


# ---------------------------------------------------------------------------- undo and the trash

import os  # noqa: E402
import sys  # noqa: E402

from bench.reliability import DiskFull  # noqa: E402
from hermes_state.trash import default_trash_dir, list_trash  # noqa: E402

from .dataset import build_fixed_db  # noqa: E402
from .test_delete_undo import whole_export  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def fill(directory: Path) -> Path:
    """Fill the file system of ``directory`` to the last byte."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    return filler


async def test_failed_undo_keeps_its_snapshot_until_the_restore_commits(tmp_path: Path) -> None:
    with DiskFull(tmp_path / "disk", size="16m") as disk:
        if not disk.available:
            import pytest

            pytest.skip(f"cannot mount a small tmpfs here ({disk.reason})")
        db_path = build_fixed_db(disk.path / "state.db")
        before = whole_export(db_path)
        app = make_app(db_path, trash_dir=tmp_path / "trash")
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("j", "j", "d")
            await settle(pilot)
            await pilot.press("y")  # confirm
            await settle(pilot)
            assert any(n.startswith("Deleted") for n in notifications(app))
            filler = fill(disk.path)
            await pilot.press("u")
            await settle(pilot)
            failed = [n for n in notifications(app) if n.startswith("Undo failed")]
            assert failed and "Press u to try again" in failed[-1]
            assert len(app.ctx.undo) == 1  # the snapshot was kept
            filler.unlink()
            await pilot.press("u")
            await settle(pilot)
            assert any(n.startswith("Restored") for n in notifications(app))
        assert whole_export(db_path) == before
        assert list_trash(tmp_path / "trash") == []  # restored: no longer in the trash


_DELETE_THEN_DIE = """
import os, sys, time
sys.path.insert(0, {repo!r})
from pathlib import Path
from hermes_tui.data import BrowserData
store = BrowserData(Path({db!r}), trash_dir=Path({trash!r}))
outcome = store.delete({sid!r}, sessions_dir=None)
print("DELETED" if outcome.ok else "FAILED " + str(outcome.error), flush=True)
time.sleep(60)   # the browser is killed here, before anyone presses u
"""


def test_restore_after_the_browser_was_killed_between_delete_and_undo(fixed_db: Path, tmp_path: Path) -> None:
    from .test_rename import RELEASE

    before = whole_export(fixed_db)
    trash = default_trash_dir()
    script = _DELETE_THEN_DIE.format(repo=str(REPO), db=str(fixed_db), trash=str(trash), sid=RELEASE)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout.readline().decode().strip() == "DELETED"
        proc.kill()
    finally:
        proc.wait(timeout=30)
    assert RELEASE not in whole_export(fixed_db)
    entries = list_trash(trash)
    assert [e.session_id for e in entries] == [RELEASE]
    assert oct(entries[0].path.stat().st_mode & 0o777) == "0o600"
    assert oct(trash.stat().st_mode & 0o777) == "0o700"
    env = dict(os.environ, HERMES_HOME=str(fixed_db.parent), PYTHONPATH=str(REPO))
    listed = subprocess.run([sys.executable, "-m", "hermes_tui.cli", "sessions", "trash"],
                            capture_output=True, text=True, env=env, timeout=60)
    assert listed.returncode == 0 and RELEASE in listed.stdout and "release checklist" in listed.stdout
    restored = subprocess.run([sys.executable, "-m", "hermes_tui.cli", "sessions", "restore", RELEASE[:15]],
                              capture_output=True, text=True, env=env, timeout=60)
    assert restored.returncode == 0, restored.stderr
    assert "Restored 'release checklist' with 2 messages" in restored.stdout
    assert whole_export(fixed_db) == before
    assert list_trash(trash) == []
    again = subprocess.run([sys.executable, "-m", "hermes_tui.cli", "sessions", "restore", RELEASE],
                           capture_output=True, text=True, env=env, timeout=60)
    assert again.returncode == 1 and "No session" in again.stdout + again.stderr
    assert "Traceback" not in again.stdout + again.stderr


def test_trash_forgets_entries_after_seven_days_and_refuses_empty_ids(fixed_db: Path, tmp_path: Path) -> None:
    from hermes_state.trash import delete_with_snapshot

    trash = tmp_path / "trash"
    writer = SessionDB(fixed_db)
    try:
        outcome = delete_with_snapshot(lambda: writer, "20261118_030000_c3d4e5", sessions_dir=None,
                                       trash=trash, now=lambda: 1_000_000.0)
    finally:
        writer.close()
    assert outcome.ok
    assert len(list_trash(trash, now=1_000_000.0 + 6 * 86400)) == 1
    assert list_trash(trash, now=1_000_000.0 + 8 * 86400) == []
    assert list(trash.iterdir()) == []  # forgotten for good
    env = dict(os.environ, HERMES_HOME=str(fixed_db.parent), PYTHONPATH=str(REPO))
    empty = subprocess.run([sys.executable, "-m", "hermes_tui.cli", "sessions", "restore", ""],
                           capture_output=True, text=True, env=env, timeout=60)
    assert empty.returncode == 1 and "empty id" in empty.stdout + empty.stderr



# ---------------------------------------------------------------------------- conditional rename


async def test_rename_is_conditional_on_the_title_the_user_saw(fixed_db: Path) -> None:
    from hermes_tui.modals.rename import RenameModal

    from .test_rename import error_text

    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_rename(pilot)  # sees "release checklist"
        # Another browser (a real second process) renames it first.
        script = (f"import sys; sys.path.insert(0, {str(REPO)!r}); from hermes_state import SessionDB; "
                  f"db = SessionDB({str(fixed_db)!r}); db.set_session_title({RELEASE!r}, 'BETA'); db.close()")
        subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
        await submit(pilot, modal, "ALPHA")
        assert isinstance(app.screen, RenameModal)  # asked, not overwritten
        assert "it is now “BETA”" in error_text(modal) and "Press Enter again" in error_text(modal)
        assert title_of(fixed_db, RELEASE) == "BETA"
        assert not any(n.startswith("Renamed") for n in notifications(app))
        await pilot.press("enter")  # the person confirms: replace BETA
        await settle(pilot)
        assert not isinstance(app.screen, RenameModal)
        assert title_of(fixed_db, RELEASE) == "ALPHA"
        assert any("Renamed" in n and "ALPHA" in n for n in notifications(app))


# ---------------------------------------------------------------------------- one error path


def break_messages_table(db_path: Path) -> None:
    """Another process damages the store under the app: every message read fails now."""
    script = (f"import sqlite3; c = sqlite3.connect({str(db_path)!r}); "
              "c.execute('ALTER TABLE messages RENAME TO messages_gone'); c.commit(); c.close()")
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)


def errors(app) -> list[str]:
    return [n.message for n in app._notifications if n.severity == "error"]


async def _fails_with_a_notice(pilot, app) -> None:
    await wait_until(pilot, lambda: bool(errors(app)))
    (first, *_rest) = errors(app)
    assert "messages" in first and "\n" not in first and "Traceback" not in first
    assert app.is_running


async def test_browser_search_worker_failure_is_a_notice(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        break_messages_table(fixed_db)
        await pilot.press("/", *"docker")
        await _fails_with_a_notice(pilot, app)


async def _screen_worker_fails(fixed_db: Path, open_screen) -> None:
    from hermes_tui.context import StoreChange

    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await app.push_screen(open_screen(app))
        await settle(pilot)
        assert not errors(app)
        break_messages_table(fixed_db)
        app.ctx.signals.store_changed.publish(StoreChange(database=True))  # the screen reloads
        await _fails_with_a_notice(pilot, app)


async def test_transcript_worker_failure_is_a_notice(fixed_db: Path) -> None:
    await _screen_worker_fails(fixed_db, lambda app: app.ctx.screens.transcript(RELEASE))


async def test_recap_worker_failure_is_a_notice(fixed_db: Path) -> None:
    await _screen_worker_fails(fixed_db, lambda app: app.ctx.screens.recap(RELEASE))


async def test_lineage_worker_failure_is_a_notice(fixed_db: Path) -> None:
    await _screen_worker_fails(fixed_db, lambda app: app.ctx.screens.lineage(RELEASE))


async def test_a_huge_paste_is_cut_shown_and_one_line(fixed_db: Path) -> None:
    from textual import events

    from hermes_tui.widgets.search import SearchInput

    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/")
        field = app.screen.query_one(SearchInput)
        field.post_message(events.Paste("docker compose\nup -d\n" + "x" * 60_000))
        await settle(pilot)
        assert field.value.startswith("docker compose up -d x")  # newlines became spaces
        await wait_until(pilot, lambda: "query cut" in str(app.screen.query_one("#main").border_subtitle))
        assert not errors(app)
