"""The browser's own faults (issue 14): the file moves under it, the disk fills, a worker fails.

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


async def test_item1_replaced_file_is_reopened_and_edits_go_to_it(fixed_db: Path) -> None:
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


async def test_item1_deleted_file_keeps_the_view_refuses_writes_and_is_never_created(fixed_db: Path) -> None:
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


async def test_item1_writer_refuses_a_file_deleted_since_the_last_tick(fixed_db: Path) -> None:
    """Between two watcher ticks: the check before the write itself catches it."""
    app = make_app(fixed_db)  # no watcher at all
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        modal = await open_rename(pilot)
        sh(f"rm '{fixed_db}'")
        await submit(pilot, modal, "never written")
        assert not fixed_db.exists()
        assert "was deleted" in " ".join(notifications(app)) + str(modal.query("#rename-error").first().content)
