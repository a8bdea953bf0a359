"""A locked database (another REAL process holds the lock for 5 s).

Two kinds of lock are held by a second process (:class:`helpers_env.Locker`):

* an ordinary write lock (``BEGIN IMMEDIATE``): in WAL mode readers go on, writers wait. A
  rename or delete issued meanwhile waits and succeeds once the lock is gone, or — if the
  lock outlasts the write retry budget — reports clearly; never both a failure message and a
  change (the database is read afterwards to prove it);
* a lock that blocks readers too (``PRAGMA locking_mode=EXCLUSIVE`` plus a write): reads get
  ``SQLITE_BUSY``; the browser says it is waiting and recovers when the lock goes.

Throughout, the browser stays responsive: ``j`` is pressed and the time until the cursor has
moved is measured (bound: 100 ms), and the status line shows the wait.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest

try:
    from .helpers_env import SIZE, Locker, make_app, notifications, populate, settle, title_of
except ImportError:  # collected as a rootdir-relative module
    from helpers_env import SIZE, Locker, make_app, notifications, populate, settle, title_of

from hermes_state import SessionDB
from hermes_tui.modals.delete import ConfirmDeleteModal
from hermes_tui.modals.rename import RenameModal
from hermes_tui.widgets.search import SearchResults
from hermes_tui.widgets.session_list import SessionList
from hermes_tui.widgets.status import StatusLine

HOLD_S = 5.0
KEY_BOUND_S = 0.100


async def wait_until(pilot, predicate, timeout: float, step: float = 0.02) -> float:
    """Poll ``predicate`` (pausing the pilot) until true; return the seconds it took."""
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"condition not met within {timeout} s")
        await pilot.pause(step)
    return time.monotonic() - start


async def keystroke_latency(pilot, key: str = "j") -> float:
    """Press ``key`` on the session list; return the seconds until the cursor had moved.

    The time is taken when the list's action has run (``Pilot.press`` itself then waits
    ~100 ms for the app to go idle, which is the harness, not the app).
    """
    lst = pilot.app.screen.query_one(SessionList)
    before = lst.cursor
    moved_at: list[float] = []
    original = lst.action_cursor_down

    def timed() -> None:
        original()
        if lst.cursor != before:
            moved_at.append(time.perf_counter())

    lst.action_cursor_down = timed  # type: ignore[method-assign]
    try:
        start = time.perf_counter()
        await pilot.press(key)
        while not moved_at:
            if time.perf_counter() - start > 2.0:
                raise AssertionError(f"{key!r} was not handled within 2 s")
            await pilot.pause(0)
    finally:
        del lst.action_cursor_down
    return moved_at[0] - start


def browser_status(app) -> StatusLine:
    from hermes_tui.screens.browser import BrowserScreen

    screen = next(s for s in app.screen_stack if isinstance(s, BrowserScreen))
    return screen.query_one(StatusLine)


def errors(app) -> list[str]:
    return [m for sev, m in notifications(app) if sev == "error"]


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, list[str]]:
    path = tmp_path / "state.db"
    return path, populate(path, sessions=30)


# ---------------------------------------------------------------------------- write lock


async def test_locked_write_lock_rename_waits_then_succeeds(store) -> None:
    path, ids = store
    target = ids[0]
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        with Locker(path, "immediate", HOLD_S) as lock:
            await pilot.press("r")
            await wait_until(pilot, lambda: isinstance(app.screen, RenameModal), 3)
            await settle(pilot)
            modal = app.screen
            modal.query_one("#rename-input").value = "renamed while locked"
            await pilot.press("enter")
            # It waits, and says so: in the modal and on the browser's status line.
            await wait_until(pilot, lambda: modal.saving, 1)
            await wait_until(pilot, lambda: "lock" in (browser_status(app).warning or "").lower(), 3)
            assert "waiting" in str(modal.query_one("#rename-hint").render()).lower()
            # Reads are not blocked by a writer in WAL mode: the browser can still read, and the
            # read returns before the rename it would have queued behind has landed.
            summary = await asyncio.wait_for(asyncio.to_thread(app.ctx.store.summary, ids[3]), 10)
            assert summary is not None and summary.id == ids[3]
            assert title_of(path, target) is None, "a read queued behind the waiting writer"
            assert lock.held
            await wait_until(pilot, lambda: not isinstance(app.screen, RenameModal), HOLD_S + 15)
            assert not lock.held, "the rename finished while the lock was still held"
        await settle(pilot)
        assert errors(app) == []
        assert any("Renamed" in m for _s, m in notifications(app)), notifications(app)
        await wait_until(pilot, lambda: not browser_status(app).warning, 2)
    assert title_of(path, target) == "renamed while locked"


async def test_locked_write_lock_outlasting_the_budget_reports_and_changes_nothing(store, monkeypatch) -> None:
    path, ids = store
    target = ids[0]
    # A short retry budget (~2 s) so that a 5 s lock outlasts it.
    monkeypatch.setattr(SessionDB, "_WRITE_MAX_RETRIES", 2)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        with Locker(path, "immediate", HOLD_S) as lock:
            await pilot.press("r")
            await wait_until(pilot, lambda: isinstance(app.screen, RenameModal), 3)
            await settle(pilot)
            modal = app.screen
            modal.query_one("#rename-input").value = "must not appear"
            await pilot.press("enter")
            await wait_until(pilot, lambda: modal.saving, 1)
            await wait_until(pilot, lambda: not modal.saving, HOLD_S)
            assert lock.held
            assert isinstance(app.screen, RenameModal), "a failed rename closed the modal"
            error = modal.error or ""
            assert "locked" in error and "Nothing was changed" in error, error
            assert title_of(path, target) is None
            await pilot.press("escape")
            lock.wait()
        await settle(pilot)
        await pilot.pause(0.3)
        assert not any("Renamed" in m for _s, m in notifications(app))
    assert title_of(path, target) is None


async def test_locked_write_lock_delete_keeps_browser_responsive(store) -> None:
    path, ids = store
    target = ids[0]
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        with Locker(path, "immediate", HOLD_S) as lock:
            await pilot.press("d")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDeleteModal), 3)
            await pilot.press("y")
            await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmDeleteModal), 2)
            await wait_until(pilot, lambda: "lock" in (browser_status(app).warning or "").lower(), 3)
            # Keystrokes are handled at once while the delete waits for the lock.
            latencies = [await keystroke_latency(pilot, "j") for _ in range(3)]
            assert lst.cursor == 3
            assert max(latencies) < KEY_BOUND_S, latencies
            # So is a search: its reads do not queue behind the waiting writer.
            await pilot.press("slash", *"session 7")
            results = app.screen.query_one(SearchResults)
            took = await wait_until(pilot, lambda: results.option_count > 0, HOLD_S + 10)
            assert lock.held, f"search results only came after the lock was released ({took:.2f} s)"
            conn_db = SessionDB(path, read_only=True)
            try:
                assert conn_db.get_session(target) is not None  # not deleted yet
            finally:
                conn_db.close()
            assert title_of(path, target) is None
            await pilot.press("escape")
            await wait_until(pilot, lambda: any("Deleted" in m for _s, m in notifications(app)), HOLD_S + 15)
            assert not lock.held
        await settle(pilot)
        assert errors(app) == []
        await wait_until(pilot, lambda: not browser_status(app).warning, 2)
    conn_db = SessionDB(path, read_only=True)
    try:
        assert conn_db.get_session(target) is None
        assert conn_db.message_count(target) == 0
    finally:
        conn_db.close()


# ---------------------------------------------------------------------------- reader-blocking lock


async def test_locked_reader_blocking_lock_shows_waiting_and_recovers(store) -> None:
    """A running browser meets a lock that blocks its reads, and recovers.

    In WAL mode nothing can block the reads of a browser that is already running: every open
    connection holds a shared lock on the wal-index, so no other process can enter EXCLUSIVE
    locking mode until the browser exits (that case, at startup, is the next test). A store
    in rollback-journal mode (as an older tool or ``PRAGMA journal_mode=DELETE`` leaves it)
    is blocked for readers by a plain ``BEGIN EXCLUSIVE``: that is the lock used here.
    """
    path, ids = store
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode=DELETE").fetchone() == ("delete",)
    conn.close()
    app = make_app(path, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        assert lst.total == 30
        with Locker(path, "exclusive", HOLD_S) as lock:
            # Anything that reads now meets SQLITE_BUSY: a reload and a search.
            app.screen.refresh_data()
            await wait_until(pilot, lambda: "busy" in (browser_status(app).warning or "").lower(), 3)
            latencies = [await keystroke_latency(pilot, "j") for _ in range(3)]
            assert max(latencies) < KEY_BOUND_S, latencies
            assert lst.cursor == 3
            await pilot.press("slash", *"session 12")
            await pilot.pause(0.3)
            assert lock.held
            assert "busy" in (browser_status(app).warning or "").lower()
            await wait_until(pilot, lambda: not lock.held, HOLD_S + 5)
            lock.wait()
        # Recovery: the warning goes, the search answers, the list is intact.
        results = app.screen.query_one(SearchResults)
        await wait_until(pilot, lambda: results.option_count > 0, 5)
        await wait_until(pilot, lambda: not browser_status(app).warning, 5)
        await settle(pilot)
        assert errors(app) == []
        await pilot.press("escape")
        await settle(pilot)
        assert lst.total == 30 and lst.current is not None


async def test_locked_reader_blocking_lock_at_startup(store) -> None:
    """WAL store, another process in EXCLUSIVE locking mode: the browser's first reads get
    SQLITE_BUSY; it says it is waiting and loads once the lock is gone."""
    path, _ids = store
    with Locker(path, "exclusive_mode", 3.0) as lock:
        app = make_app(path)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: "busy" in (browser_status(app).warning or "").lower(), 3)
            assert lock.held
            lst = app.screen.query_one(SessionList)
            assert not lst.loaded
            await wait_until(pilot, lambda: lst.loaded and lst.total == 30, 3.0 + 10)
            await wait_until(pilot, lambda: not browser_status(app).warning, 3)
            assert errors(app) == []
