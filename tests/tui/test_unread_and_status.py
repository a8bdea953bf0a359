"""Unread and lifecycle status in the browser, on copies of upstream's v30 and v16 stores:
the marker and the glyphs drawn, ``m`` / ``M``, opening a transcript or a recap marks read
(unless the config says not to), the unread-only and status filters change the list and its
count -- and on v16 nothing is written and the browser says unread is not tracked."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from hermes_state import SessionDB
from hermes_state.unread import set_read
from hermes_tui.config import AppConfig
from hermes_tui.render.reading import UNREAD_GLYPH

from .conftest import SIZE, make_app, settle

C1, C2, C3 = "20260921_120000_c1", "20260921_121000_c2", "20260921_122000_c3"
S1, K1, R1 = "20260921_090000_s1", "20260921_150000_k1", "20260921_140000_r1"


def watermarks(path: Path) -> dict[str, float | None]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return dict(conn.execute("SELECT id, last_read_at FROM sessions"))


def integrity(path: Path) -> str:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]


def mark_unread(path: Path, *session_ids: str) -> None:
    db = SessionDB(path)
    try:
        for sid in session_ids:
            set_read(db.store, sid, False)
    finally:
        db.close()


def row_text(app, session_id: str) -> str:
    lst = app.screen.session_list
    index = lst.index_of(session_id)
    assert index is not None, session_id
    return lst.render_row(lst.row(index), 100).plain


def move_to(app, session_id: str) -> None:
    lst = app.screen.session_list
    lst.move_to(lst.index_of(session_id))


def notes(app) -> list[str]:
    return [n.message for n in app._notifications]


async def test_unread_marker_and_status_glyphs_are_drawn_and_m_and_shift_m_mark(upstream_copy):
    path = upstream_copy(30)
    mark_unread(path, S1)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert UNREAD_GLYPH in row_text(app, S1)
        assert UNREAD_GLYPH not in row_text(app, R1)
        assert row_text(app, K1).startswith(" ○…") or row_text(app, K1).startswith(" ●…")  # k1 ends on a tool row
        assert row_text(app, R1)[2] == " "  # done: blank
        move_to(app, S1)
        await pilot.press("m")
        await settle(pilot)
        assert watermarks(path)[S1] > 0
        assert UNREAD_GLYPH not in row_text(app, S1)
        assert "Marked read." in notes(app)
        move_to(app, C3)
        await pilot.press("M")
        await settle(pilot)
        marks = watermarks(path)
        assert (marks[C1], marks[C2], marks[C3]) == (0.0, 0.0, 0.0)
        assert UNREAD_GLYPH in row_text(app, C3)
    assert integrity(path) == "ok"


async def test_opening_a_transcript_or_recap_marks_it_read(upstream_copy):
    path = upstream_copy(30)
    mark_unread(path, S1, K1)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        move_to(app, S1)
        await pilot.press("t")
        await settle(pilot)
        assert watermarks(path)[S1] > 0
        await pilot.press("escape")
        await settle(pilot)
        assert UNREAD_GLYPH not in row_text(app, S1)
        move_to(app, K1)
        await pilot.press("enter")  # the recap
        await settle(pilot)
        assert watermarks(path)[K1] > 0


async def test_with_mark_read_on_open_off_opening_leaves_it_unread(upstream_copy):
    path = upstream_copy(30)
    mark_unread(path, S1)
    config = AppConfig(animations="none", search_debounce_s=0.0, mark_read_on_open=False)
    app = make_app(path, config=config)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        move_to(app, S1)
        await pilot.press("t")
        await settle(pilot)
        await pilot.press("escape")
        await pilot.press("enter")
        await settle(pilot)
    assert watermarks(path)[S1] == 0.0


async def test_unread_only_and_status_filters_change_the_list_and_its_count(upstream_copy):
    path = upstream_copy(30)
    mark_unread(path, S1, K1)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.session_list
        everything = lst.total
        await pilot.press("U")
        await settle(pilot)
        assert lst.total == 2
        assert {lst.row(i).id for i in range(lst.total)} == {S1, K1}
        assert "unread only" in " · ".join(app.screen._filter_parts())
        await pilot.press("U", "S")  # unread off; status: done
        await settle(pilot)
        done = lst.total
        assert 0 < done < everything and all(lst.row(i).lifecycle == "complete" for i in range(done))
        await pilot.press("S")  # interrupted
        await settle(pilot)
        assert {lst.row(i).lifecycle for i in range(lst.total)} == {"interrupted"}
        assert lst.total + done == everything
        await pilot.press("S", "S", "S")  # error, empty, then every status again
        await settle(pilot)
        assert lst.total == everything


async def test_on_a_store_without_the_column_nothing_is_written_and_the_browser_says_so(upstream_copy):
    path = upstream_copy(16)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await settle(pilot)
        assert "Nothing was changed: unread is not tracked in this store (schema v16)." in notes(app)
        await pilot.press("t")
        await settle(pilot)
        await pilot.press("escape", "U")
        await settle(pilot)
        assert app.screen.session_list.total == 0
        assert "Unread is not tracked in this store (schema v16): nothing is unread here." in notes(app)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert integrity(path) == "ok"


# ---------------------------------------------------------------------------- the picture


def _reading_store(path: Path, make_session) -> Path:
    """The v30 fixture with a conversation of each state: s1 marked unread, the c-chain read
    before its last message (unread), the others read since, one that failed, one empty."""
    db = SessionDB(path)
    try:
        make_session(db, "20260921_170000_e1", started_at=1_790_030_000.0, title="deploy the docs site",
                     messages=[("user", "deploy the docs site"),
                               {"role": "assistant", "content": "provider error", "finish_reason": "error"}])
        make_session(db, "20260921_171000_z1", started_at=1_790_030_600.0, title="scratch")
        for sid in (R1, K1, "20260921_130000_b1", "20260921_110000_g2", "20260921_100000_g1",
                    "20260921_163000_cr", "20260921_170000_e1", "20260921_171000_z1"):
            set_read(db.store, sid, True, now=1_790_040_000.0)
        set_read(db.store, C3, True, now=1_790_012_050.0)  # before c3's last message
        set_read(db.store, S1, False)
    finally:
        db.close()
    return path


def test_snapshot_list_with_unread_markers_and_status_glyphs_80x24(upstream_copy, make_session, snap_compare):
    path = _reading_store(upstream_copy(30), make_session)

    async def run_before(pilot) -> None:
        await settle(pilot)

    assert snap_compare(make_app(path), terminal_size=(80, 24), run_before=run_before)


# ---------------------------------------------------------------------------- search, help


def _results_text(app) -> str:
    return "\n".join(row.text.plain for row in app.screen.results._rows)


async def test_search_groups_carry_the_unread_marker_and_obey_the_filters(upstream_copy):
    path = upstream_copy(30)
    mark_unread(path, S1)  # "auth refactor": docker deployment failed …
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"docker")
        await settle(pilot)
        view = app.screen.results.view
        unread = {g.root_id for g in view.groups if g.unread}
        assert unread == {S1} and len(view.groups) > 1
        assert f"{UNREAD_GLYPH} auth refactor" in _results_text(app)
        app.screen.action_toggle_unread()  # U (the search field has the keys)
        await settle(pilot)
        assert [g.root_id for g in app.screen.results.view.groups] == [S1]
        everything = {g.root_id for g in view.groups}
        app.screen.action_toggle_unread()
        app.screen.action_cycle_status()  # done only: every conversation that mentions docker
        await settle(pilot)
        assert {g.root_id for g in app.screen.results.view.groups} == everything
        app.screen.action_cycle_status()  # interrupted only: none of them
        await settle(pilot)
        assert app.screen.results.view.groups == []


async def test_help_has_a_legend_of_every_mark_a_row_shows(upstream_copy):
    app = make_app(upstream_copy(30))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        from rich.console import Console

        console = Console(width=120, record=True)
        console.print(app.screen.render_help())
        text = console.export_text()
    for words in ("Marks in the session list", "live session", "ended session", "interrupted:", "error:",
                  "empty:", f"{UNREAD_GLYPH}", "unread: activity since it was last read", "m", "Mark read",
                  "Mark unread", "Unread only", "Status: all / done / interrupted / error / empty"):
        assert words in text, words


async def test_a_transcript_opened_from_the_lineage_tree_is_marked_read_and_the_list_follows(upstream_copy):
    path = upstream_copy(30)
    mark_unread(path, C1)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        move_to(app, C3)
        await pilot.press("l")
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        assert watermarks(path)[C1] > 0
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert UNREAD_GLYPH not in row_text(app, C3)


async def test_a_wide_footer_shows_the_mark_read_and_unread_keys(upstream_copy):
    from .test_daily_use import footer_keys

    app = make_app(upstream_copy(30))
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot)
        keys = footer_keys(app)
    assert "Mark read" in keys and "Mark unread" in keys, keys


async def test_the_pane_title_and_the_empty_list_name_the_reading_filters(upstream_copy):
    app = make_app(upstream_copy(30))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("S", "S", "S")  # error: none on this store
        await settle(pilot)
        screen = app.screen
        assert screen.session_list.total == 0
        assert "error" in str(screen.switcher.border_title)
        assert screen.session_list.empty_text.startswith("No conversation matches the filters:")
        assert "status error" in screen.session_list.empty_text
        await pilot.press("U")
        await settle(pilot)
        assert "unread" in str(screen.switcher.border_title)
