"""A gateway's commits do not compete with the keys being typed.

Each commit re-read the list hidden behind the search pane and asked the search again,
interrupting the search of the key just typed. Now the hidden list is read when it is shown
again, and the search is asked again only once no key has searched for a moment -- a key's
own search shows the commits made before it; what the search asked again finds new waits,
announced, for the reader to take it. Real writer processes commit while the
browser watches the store."""

from __future__ import annotations

import time
from contextlib import asynccontextmanager
from pathlib import Path

from hermes_tui.widgets.search import SearchResults
from hermes_tui.widgets.session_list import SessionList

from .conftest import SIZE, make_app, settle
from .test_live_reader import WORD, build_many, start_writer, wait_until


def hit_ids(results: SearchResults) -> set[str]:
    view = results.view
    return {group.root_id for group in view.groups} if view is not None else set()


@asynccontextmanager
async def watching(db: Path):
    """The browser watching ``db`` (12 conversations), settled."""
    app = make_app(db, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        lst = screen.query_one(SessionList)
        await wait_until(pilot, lambda: lst.total == 12)
        await settle(pilot)
        yield app, pilot, screen, lst


async def test_the_hidden_list_is_read_when_shown_and_the_search_follows_commits(tmp_path: Path) -> None:
    db = build_many(tmp_path / "state.db", sessions=12)
    async with watching(db) as (app, pilot, screen, lst):
        windows: list[int] = []
        real_load_window = screen.list_window.load

        def load_window(*args, **kwargs):
            windows.append(len(windows))
            return real_load_window(*args, **kwargs)

        screen.list_window.load = load_window
        # Commits seen while the list is shown are read then (the last of the writer's may be
        # seen only after the search already shows it: the search reads its own snapshot).
        seen_while_shown: list[bool] = []
        real_store_changed = screen.store_changed

        def store_changed(change):
            seen_while_shown.append(screen.switcher.current == "sessions")
            return real_store_changed(change)

        screen.store_changed = store_changed
        await pilot.press("slash", *WORD)
        results = screen.results
        await wait_until(pilot, lambda: results.view is not None and len(hit_ids(results)) == 12)

        writer = start_writer(db, "sessions", WORD, 3, 0.05)
        writer.wait(timeout=30)
        assert writer.returncode == 0, writer.stderr.read().decode()
        # The search sees the new conversations (asked again once typing has paused): they
        # are announced, and shown when taken...
        await wait_until(pilot, lambda: results.waiting == 3)
        assert len(hit_ids(results)) == 12
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: len(hit_ids(results)) == 15)
        # ...while the list behind it was not read at each commit.
        assert windows == []

        await pilot.press("escape")
        await wait_until(pilot, lambda: screen.switcher.current == "sessions")
        await wait_until(pilot, lambda: lst.total == 15 and lst.row(0) is not None
                         and lst.row(0).id.startswith("20261118_0900"))
        assert seen_while_shown.count(False) >= 1, "the writer's commits were seen while hidden"
        assert len(windows) == 1 + seen_while_shown.count(True), "read once when shown (and at each commit seen since)"


async def test_a_commit_while_typing_is_shown_by_the_next_key_not_by_another_search(tmp_path: Path) -> None:
    db = build_many(tmp_path / "state.db", sessions=12)
    async with watching(db) as (app, pilot, screen, lst):
        searches: list[tuple[str, bool]] = []
        real_start = screen.search.start

        def start_search(query: str, *, keep: bool = False) -> None:
            searches.append((query, keep))
            real_start(query, keep=keep)

        screen.search.start = start_search
        await pilot.press("slash", *"harv")
        results = screen.results
        await wait_until(pilot, lambda: results.view is not None and len(hit_ids(results)) == 12)

        refreshes: list[float] = []
        real_refresh = screen.refresh_data

        def refresh_data(**kwargs) -> None:
            refreshes.append(time.monotonic())
            real_refresh(**kwargs)

        screen.refresh_data = refresh_data
        writer = start_writer(db, "sessions", "harvest", 2, 0.0)
        # Keys typed one every 0.1 s while the commits land and are seen (as long as a loaded
        # machine needs to start the writer and let its commits be seen).
        give_up = time.monotonic() + 30
        while time.monotonic() < give_up:
            for key in ("e", "s", "t", "backspace", "backspace", "backspace"):
                await pilot.press(key)
                await pilot.pause(0.1)
            if writer.poll() is not None and refreshes:
                break
        await pilot.press("e", "s", "t")
        typing_ended = time.monotonic()
        writer.wait(timeout=30)
        assert writer.returncode == 0, writer.stderr.read().decode()
        assert refreshes and refreshes[0] < typing_ended, "the commits were seen while typing"
        await wait_until(pilot, lambda: results.view is not None and results.view.query == "harvest"
                         and len(hit_ids(results)) == 14)
        await pilot.pause(0.8)  # (a quiet moment: a search asked again would have started)
        assert [keep for _query, keep in searches if keep] == [], searches
        assert not screen.search.stale
