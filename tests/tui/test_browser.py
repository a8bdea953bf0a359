"""Pilot tests of the session browser (BR-1 … BR-8)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from hermes_state import SessionDB
from hermes_tui.widgets.session_list import SessionList
from hermes_tui.widgets.detail import DetailPane

from .conftest import SIZE, make_app, settle
from .dataset import NOW


def _ids(lst: SessionList) -> list[str]:
    return [lst.row(i).id for i in range(lst.total) if lst.row(i) is not None]


async def test_br1_rows_newest_first_tip_shown_once_tool_hidden(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        ids = _ids(lst)
        # Newest started first; the compression chain is one row, shown at its tip.
        assert ids[0] == "20261118_074000_a1b2c3"
        assert "20261117_100000_e5f6a7b8" in ids
        assert "20261117_090000_d4e5f6a7" not in ids
        # `tool` sessions are hidden without a source filter (CLI-4).
        assert "20261114_080000_b8c9d0" not in ids
        assert lst.total == 7
        tip = lst.row(ids.index("20261117_100000_e5f6a7b8"))
        assert tip.title == "travel plans #2" and tip.lineage_root_id == "20261117_090000_d4e5f6a7"


async def test_br1_detail_pane_follows_cursor(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        detail = app.screen.query_one(DetailPane)
        assert detail.summary.id == "20261118_074000_a1b2c3"
        await pilot.press("j")
        await settle(pilot)
        assert detail.summary.id == "20261118_060000_b2c3d4e5"
        await pilot.press("G")
        await settle(pilot)
        assert detail.summary.id == "20261113_080000_c9d0e1"
        await pilot.press("g")
        await settle(pilot)
        assert detail.summary.id == "20261118_074000_a1b2c3"


async def test_s_picks_the_source_from_a_list_busiest_first_internal_last(fixed_db: Path) -> None:
    from textual.widgets import OptionList

    from hermes_tui.modals.source_picker import SourcePicker

    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        await pilot.press("s")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, SourcePicker)
        ids = [option.id for option in picker.query_one(OptionList).options]
        # All first; cli has the most sessions; the internal tool runs come last.
        assert ids[0] == "" and ids[1] == "cli" and ids[-1] == "tool"
        await pilot.press("down", "enter")
        await settle(pilot)
        assert screen.source_filter == "cli"
        lst = screen.query_one(SessionList)
        assert lst.total and all(lst.row(i).source == "cli" for i in range(lst.total))
        await pilot.press("s")
        await settle(pilot)
        await pilot.press("escape")  # cancel keeps the filter
        await settle(pilot)
        assert screen.source_filter == "cli"
        await pilot.press("s")
        await settle(pilot)
        await pilot.press("home", "enter")  # all sources
        await settle(pilot)
        assert screen.source_filter is None


async def test_with_internal_runs_shown_all_sources_counts_them_as_the_list_does(fixed_db: Path) -> None:
    """With H the list shows internal runs too; the picker's "all sources" still counted only
    people's sources and said "internal runs hidden" beside a list that showed them."""
    from textual.widgets import OptionList

    from hermes_tui.modals.source_picker import SourcePicker

    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        lst = screen.query_one(SessionList)

        async def all_sources() -> str:
            await pilot.press("s")
            await settle(pilot)
            picker = app.screen
            assert isinstance(picker, SourcePicker)
            text = str(picker.query_one(OptionList).get_option_at_index(0).prompt)
            await pilot.press("escape")
            await settle(pilot)
            return text

        def count(text: str) -> int:
            return int(text.split("all sources")[1].split()[0].replace(",", ""))

        hidden = await all_sources()
        assert count(hidden) == lst.total and "internal runs hidden" in hidden
        await pilot.press("H")
        await settle(pilot)
        shown = await all_sources()
        assert count(shown) == lst.total and "hidden" not in shown
        assert count(shown) > count(hidden)


async def test_cli13_source_flag_shows_exactly_that_source(fixed_db: Path) -> None:
    app = make_app(fixed_db, source="tool")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert _ids(app.screen.query_one(SessionList)) == ["20261114_080000_b8c9d0"]


def _bulk_db(path: Path, sessions: int) -> None:
    db = SessionDB(path)

    def fill(conn):
        conn.executemany(
            "INSERT INTO sessions (id, source, started_at, title) VALUES (?, 'cli', ?, ?)",
            [(f"s{i:06d}", NOW - i * 60.0, f"bulk {i}") for i in range(sessions)],
        )

    db._execute_write(fill)
    db.close()


async def test_br1_paging_never_loads_every_session(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    _bulk_db(path, 5000)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        assert lst.total == 5000
        assert len(lst._rows) <= 3 * lst.page_size
        await pilot.press("G")
        await settle(pilot)
        assert lst.cursor == 4999
        assert lst.current is not None and lst.current.id == "s004999"
        assert len(lst._rows) <= 5 * lst.page_size
        for _ in range(3):
            await pilot.press("pageup")
        await settle(pilot)
        assert lst.current is not None
        assert lst.current.id == f"s{lst.cursor:06d}"


async def test_br5_too_small_terminal(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=(30, 8)) as pilot:
        await settle(pilot)
        assert app.screen.__class__.__name__ == "TooSmallScreen"
        await pilot.resize_terminal(100, 30)
        await settle(pilot)
        assert app.screen.__class__.__name__ == "BrowserScreen"


async def test_empty_database_shows_empty_state(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    SessionDB(path).close()
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        assert lst.loaded and lst.total == 0
        assert app.screen.query_one(DetailPane).summary is None


LIVE_WRITER = Path(__file__).with_name("live_writer.py")


def run_live_writer(db_path: Path, count: int, delay: float) -> None:
    """Run a real second process that writes ``count`` sessions and wait for it."""
    proc = subprocess.run(
        [sys.executable, str(LIVE_WRITER), str(db_path), str(count), str(delay)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr.decode()


async def test_br8_live_refresh_from_another_process_keeps_cursor(fixed_db: Path) -> None:
    app = make_app(fixed_db, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        await pilot.press("j", "j")
        await settle(pilot)
        chosen = lst.current.id
        assert chosen == "20261118_030000_c3d4e5"
        run_live_writer(fixed_db, 3, 0.05)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and lst.total < 10:
            await pilot.pause(0.05)
        await settle(pilot)
        assert lst.total == 10
        # New sessions start now, so they sort first; the cursor stayed on its session.
        assert lst.current.id == chosen
        assert lst.cursor == 5


async def test_the_search_fields_hint_names_the_search_key_as_the_keymap_has_it(fixed_db: Path) -> None:
    """With search moved to ctrl+f the field still said "/ search…", a key that did nothing."""
    from hermes_tui.config import AppConfig

    app = make_app(fixed_db, config=AppConfig(animations="none", keymap={"search": "ctrl+f"}))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.screen.search_input.placeholder.startswith("Ctrl+F search every message")
    plain = make_app(fixed_db)
    async with plain.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert plain.screen.search_input.placeholder.startswith("/ search every message")
