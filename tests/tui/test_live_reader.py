"""BR-16: live data never moves the reader.

Each test runs a real second process that commits while the browser is open (watching the
store as a user's browser does) and checks the reader's place: the highlighted item, its row
on the screen, and the scroll offset.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from hermes_state import SessionDB
from hermes_tui.screens.transcript import TranscriptScreen
from hermes_tui.widgets.detail import DetailPane
from hermes_tui.widgets.search import SearchResults
from hermes_tui.widgets.session_list import SessionList

from .conftest import SIZE, make_app, settle
from .dataset import NOW

WRITER = Path(__file__).with_name("commit_writer.py")
WORD = "kumquat"


def start_writer(db: Path, mode: str, arg: str, count: int, delay: float) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(WRITER), str(db), mode, arg, str(count), str(delay)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )


async def wait_until(pilot, condition, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not condition():
        await pilot.pause(0.05)
    assert condition()


def build_many(path: Path, sessions: int = 30, per_session: int = 1) -> Path:
    """``sessions`` cli sessions, each with messages naming WORD, one minute apart."""
    db = SessionDB(path)
    try:
        for i in range(sessions):
            sid = f"20261117_{i:04d}00_many{i:02d}"
            db.create_session(sid, "cli")
            for k in range(per_session):
                db.append_message(sid, "user", f"note {k} on the {WORD} harvest, batch {i}")
            stamp = NOW - 3600 - 60 * (sessions - i)
            db._execute_write(lambda c, sid=sid, stamp=stamp: (
                c.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (stamp, sid)),
                c.execute("UPDATE messages SET timestamp = ? WHERE session_id = ?", (stamp, sid)),
            ))
    finally:
        db.close()
    return path


def screen_row(widget) -> int:
    return widget.cursor - widget.scroll_offset.y


async def test_br16_search_cursor_on_sixth_result_stays_through_ten_commits(tmp_path: Path) -> None:
    db = build_many(tmp_path / "state.db")
    app = make_app(db, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", *WORD)
        await settle(pilot)
        results = app.screen.query_one(SearchResults)
        await wait_until(pilot, lambda: results.option_count > 10)
        for _ in range(5):
            results.action_cursor_down()
        await settle(pilot)
        target = results.target_of_highlighted()
        row = screen_row(results)
        selectable = [i for i, r in enumerate(results._rows) if r.target]
        assert results.cursor == selectable[5] and target is not None
        before = results.option_count
        offset = results.scroll_offset.y

        writer = start_writer(db, "sessions", WORD, 10, 0.15)
        seen_rows: set[int] = set()
        seen_targets: set = set()
        seen_offsets: set[int] = set()
        while writer.poll() is None:
            await pilot.pause(0.05)
            seen_rows.add(screen_row(results))
            seen_targets.add(results.target_of_highlighted())
            seen_offsets.add(results.scroll_offset.y)
        assert writer.returncode == 0, writer.stderr.read().decode()
        # Every one of the ten commits is seen: ten new hits wait, announced, none inserted.
        await wait_until(pilot, lambda: results.waiting == 10)
        await settle(pilot)
        assert results.option_count == before
        assert results.target_of_highlighted() == target
        assert screen_row(results) == row
        # Not once, while the commits came in, did the reader's place move.
        assert seen_targets == {target} and seen_rows == {row} and seen_offsets == {offset}
        # The detail pane shows the highlighted hit's session.
        assert app.screen.query_one(DetailPane).summary.id == target[0]
        # Taken, the ten are shown.
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: results.option_count >= before + 10 and results.waiting == 0)


async def test_br16_list_keeps_highlighted_row_on_its_screen_row(tmp_path: Path) -> None:
    db = build_many(tmp_path / "state.db", sessions=60)
    app = make_app(db, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        for _ in range(30):
            await pilot.press("j")
        await settle(pilot)
        chosen, row, offset = lst.current.id, screen_row(lst), lst.scroll_offset.y
        assert offset > 0  # scrolled: the page has moved under the cursor
        writer = start_writer(db, "sessions", "fig", 4, 0.1)
        writer.wait(timeout=30)
        await wait_until(pilot, lambda: lst.total == 64)
        await settle(pilot)
        assert lst.current.id == chosen
        assert screen_row(lst) == row
        assert lst.scroll_offset.y == offset + 4


async def test_br16_transcript_scroll_offset_stays_while_the_session_grows(tmp_path: Path) -> None:
    db = build_many(tmp_path / "state.db", sessions=1, per_session=80)
    sid = "20261117_000000_many00"
    app = make_app(db, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await app.push_screen(app.ctx.screens.transcript(sid))
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TranscriptScreen)
        view = screen.view
        for _ in range(20):
            await pilot.press("j")
        await settle(pilot)
        cursor_id, offset = view.current.id, view.scroll_offset.y
        assert offset > 0
        writer = start_writer(db, "append", sid, 10, 0.1)
        writer.wait(timeout=30)
        await wait_until(pilot, lambda: len(view.entries or []) == 90)
        await settle(pilot)
        assert view.current.id == cursor_id
        assert view.scroll_offset.y == offset


async def test_br16_detail_pane_shows_new_title_right_after_rename(fixed_db: Path) -> None:
    app = make_app(fixed_db, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        await pilot.press("j", "j")
        await settle(pilot)
        sid = lst.current.id
        await pilot.press("r")
        await settle(pilot)
        await pilot.press("ctrl+a", "ctrl+k", *"shipping checklist", "enter")
        await settle(pilot)
        await wait_until(pilot, lambda: app.screen.query_one(DetailPane).summary.title == "shipping checklist")
        # Without moving the cursor: same row, new title in the pane and in the list.
        assert lst.current.id == sid and lst.current.title == "shipping checklist"


async def test_a_commit_shows_while_the_census_is_still_counting(tmp_path: Path) -> None:
    """Counting the list and finding the pins read every session row (~0.3 s at
    250k sessions); a commit by another process is shown without waiting for them."""
    import threading

    db = build_many(tmp_path / "state.db", sessions=20)
    app = make_app(db, watch=True)
    holding, release = threading.Event(), threading.Event()
    real_census = app.ctx.store.census
    censuses: list[float] = []

    def slow_census(**kwargs):
        censuses.append(time.monotonic())
        if holding.is_set():
            assert release.wait(20)
        return real_census(**kwargs)

    app.ctx.store.census = slow_census
    async with app.run_test(size=SIZE) as pilot:
        lst = app.screen.query_one(SessionList)
        # Start-up takes one census, or two on a first run (the guessed order corrected):
        # from here on, every census is held until released.
        await wait_until(pilot, lambda: censuses and lst.row(0) is not None and lst.total == 20)
        await settle(pilot)
        await wait_until(pilot, lambda: not app.screen.list_window.census_running)
        before = len(censuses)
        holding.set()
        writer = start_writer(db, "sessions", "fig", 6, 0.1)
        writer.wait(timeout=30)
        assert writer.returncode == 0, writer.stderr.read().decode()
        # The six new conversations come to the top while the census after the first of
        # them is held: one census at a time, the next waits for it.
        await wait_until(pilot, lambda: all(
            lst.row(i) is not None and lst.row(i).id.startswith("20261118_0900") for i in range(6)))
        assert len(censuses) == before + 1, "one census running, none queued behind it per commit"
        release.set()
        await wait_until(pilot, lambda: lst.total == 26)
        await settle(pilot)
        assert len(censuses) <= before + 2, "the commits seen while it counted share one census"
