"""The browser in daily use: small terminals, footer keys, help, keymap problems, transcript
search, and small things (Ctrl+C, labels, the export dialog's keys, screenshots, previews)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets._footer import FooterKey

from hermes_tui.screens.browser import BrowserScreen
from hermes_tui.widgets.detail import DetailPane

from .conftest import SIZE, make_app, settle


def footer_keys(app) -> list[str]:
    """The key descriptions a person can read in the footer (shown and inside the screen)."""
    width = app.size.width
    return [
        key.description for key in app.screen.query(FooterKey)
        if key.display and key.region.width and key.region.right <= width
    ]


# ----------------------------------------------------------------------------- small terminals


async def test_at_80_columns_the_detail_folds_and_titles_keep_room(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        detail = app.screen.query_one(DetailPane)
        assert not detail.display
        row = app.screen.session_list.render_line(0).text
        assert "Docker deploy pipeline" in row  # the whole title, not ~12 characters
        await pilot.press("i")
        await settle(pilot)
        assert detail.display and detail.region.width > 0
        await pilot.press("i")
        await settle(pilot)
        assert not detail.display


async def test_footer_shows_the_essential_keys_at_80_columns(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        keys = footer_keys(app)
        for essential in ("Open", "Search", "Delete", "Details", "Help", "Quit"):
            assert essential in keys, keys


async def test_wide_terminal_shows_the_detail_and_every_key(fixed_db: Path) -> None:
    """At 160 columns: the detail pane, and t, y, u, L in the footer too."""
    app = make_app(fixed_db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        assert app.screen.query_one(DetailPane).display
        keys = footer_keys(app)
        for key in ("Transcript", "Copy id", "Undo", "Lanes", "Lineage", "Rename", "Export", "Source",
                    "Help", "Quit"):
            assert key in keys, keys
        assert "Details" not in keys  # the pane is there already
        await pilot.resize_terminal(90, 30)
        await settle(pilot)
        assert not app.screen.query_one(DetailPane).display
        assert "Quit" in footer_keys(app)


def test_snapshot_80x24_light_detail_folded(fixed_db: Path, snap_compare) -> None:
    async def run_before(pilot) -> None:
        pilot.app.theme = "textual-light"
        await settle(pilot)

    assert snap_compare(make_app(fixed_db), terminal_size=(80, 24), run_before=run_before)


# ----------------------------------------------------------------------------- help


async def test_help_groups_by_screen_with_keys_as_typed(fixed_db: Path, tmp_path, monkeypatch) -> None:
    from hermes_tui.screens.help import HelpScreen

    monkeypatch.setenv("HERMES_SESSIONS_CONFIG_DIR", str(tmp_path / "cfg"))
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        sections = dict(help_screen.sections())
        titles = [title for title, _rows in help_screen.sections()]
        assert titles[0] == "Session list"  # the screen it was opened from comes first
        assert {"Recap", "Transcript", "Lineage", "Search (after /)"} <= set(titles)
        every = [row for rows in sections.values() for row in rows]
        shown = " ".join(keys for keys, _what, _id in every)
        for internal in ("slash", "question_mark", "escape", "pagedown", "enter"):
            assert internal not in shown.split(), internal
        assert ("/", "Search", "search") in sections["Session list"]
        assert ("?", "Help", "help") in sections["Session list"]
        assert ("Enter", "Resume", "resume") in sections["Recap"]
        assert any(keys == "↑ / K" or keys == "↑ / k" for keys, _w, _i in sections["Session list"])
        # Textual's own scrolling bindings are not listed
        assert not any(what.lower().startswith("scroll") for _k, what, _i in every)
        text = "\n".join(str(line) for line in app.screen.query_one("#help-table").render_lines(
            app.screen.query_one("#help-table").region)) if False else ""
        rendered = help_screen.render_help()
        from rich.console import Console

        console = Console(width=100, record=True)
        console.print(rendered)
        plain = console.export_text()
        assert str(tmp_path / "cfg" / "config.yaml") in plain.replace("\n", "")


def test_snapshot_help_screen(fixed_db: Path, snap_compare, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HERMES_SESSIONS_CONFIG_DIR", "/home/you/.config/hermes-sessions")

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)

    assert snap_compare(make_app(fixed_db), terminal_size=(100, 40), run_before=run_before)


# ----------------------------------------------------------------------------- keymap problems


async def test_keymap_conflict_and_unknown_id_are_reported_once(fixed_db: Path, tmp_path, monkeypatch) -> None:
    from hermes_tui.config import AppConfig

    monkeypatch.setenv("HERMES_SESSIONS_CONFIG_DIR", str(tmp_path / "cfg"))
    path = str(tmp_path / "cfg" / "config.yaml")
    config = AppConfig(animations="none", search_debounce_s=0.0, keymap={"copy_id": "d", "no_such_id": "x"})
    app = make_app(fixed_db, config=config)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        messages = [n.message for n in app._notifications]
        conflicts = [m for m in messages if "is given to both" in m]
        unknown = [m for m in messages if "unknown binding id" in m]
        assert len(conflicts) == 1 and len(unknown) == 1, messages
        assert conflicts[0].startswith(path + ": keymap: d is given to both")
        assert "(copy_id)" in conflicts[0] and "(delete)" in conflicts[0]
        assert unknown[0] == f"{path}: keymap: unknown binding id 'no_such_id' (ignored); the help screen (?) lists the ids."


async def test_a_clean_keymap_reports_nothing(fixed_db: Path) -> None:
    from hermes_tui.config import AppConfig

    config = AppConfig(animations="none", search_debounce_s=0.0, keymap={"copy_id": "c", "quit": "q,ctrl+q"})
    app = make_app(fixed_db, config=config)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not [n.message for n in app._notifications if "keymap" in n.message]


# ------------------------------------------------------------------------ transcript search (BR-19)


async def test_br19_slash_searches_inside_the_transcript_and_n_moves(fixed_db: Path) -> None:
    from hermes_tui.screens.transcript import TranscriptScreen

    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("t")  # the Docker session: 4 messages, "compose" in 3 of them
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TranscriptScreen)
        await pilot.press("n")
        await settle(pilot)
        assert any("press / to search" in n.message for n in app._notifications)
        await pilot.press("slash", *"compose", "enter")
        await settle(pilot)
        view = screen.view
        assert screen.search_query == "compose"
        assert len(view.match_indices) >= 2
        assert view.cursor == view.match_indices[0]
        first = view.cursor
        await pilot.press("n")
        await settle(pilot)
        assert view.cursor == view.match_indices[1] != first
        await pilot.press("N")
        await settle(pilot)
        assert view.cursor == first
        # every occurrence is highlighted
        match = view._style("match")
        highlighted = [line.plain[s.start:s.end] for i in view.match_indices for line in view.block_lines(i)
                       for s in line.spans if s.style == match]
        assert highlighted and all(h.lower() == "compose" for h in highlighted)
        await pilot.press("slash", "ctrl+u", *"zebra", "enter")
        await settle(pilot)
        assert view.match_indices == []
        assert any("No message matches “zebra”" in n.message for n in app._notifications)
        await pilot.press("n")
        await settle(pilot)
        assert sum("No message matches “zebra”" in n.message for n in app._notifications) == 2


async def test_br19_transcript_opened_from_a_title_match_highlights_the_query(fixed_db: Path) -> None:
    from hermes_tui.screens.recap import RecapScreen
    from hermes_tui.screens.transcript import TranscriptScreen

    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"release checklist")
        await settle(pilot)
        results = app.screen.results
        title_rows = [i for i, row in enumerate(results._rows) if row.target and row.target[1] is None]
        assert title_rows, "a title match"
        results.cursor = title_rows[0]
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, RecapScreen)
        await pilot.press("t")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TranscriptScreen) and screen.search_query == "release checklist"
        assert screen.view.match_indices  # "release checklist" is in the first message


def test_br19_snapshot_transcript_search(fixed_db: Path, snap_compare) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        await pilot.press("slash", *"compose", "enter")
        await settle(pilot)

    assert snap_compare(make_app(fixed_db), terminal_size=(100, 30), run_before=run_before)


# ----------------------------------------------------------------------------- small things


async def test_ctrl_c_cancels_like_q(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+c")
        await settle(pilot)
    assert app.return_value is None and not app.is_running
    assert not any("ctrl+q" in n.message for n in app._notifications)


async def test_a_warning_leads_the_status_line_so_a_narrow_terminal_keeps_it(fixed_db: Path) -> None:
    """At 80 columns the counts and filters already fill the status line: a warning (a lock
    wait, a read-only store) comes first, and the parts after it give way whole (shortened,
    then left out from the end), never cut mid-word."""
    from hermes_tui.widgets.status import StatusLine

    app = make_app(fixed_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        status = app.screen.query_one(StatusLine)
        status.set_warning("waiting for a lock held by another process")
        await pilot.pause()
        drawn = "".join(segment.text for segment in status.render_line(0)).strip()
        assert drawn.startswith("⚠ waiting for a lock held by another process · ")
        assert " · 7 conversations" in drawn and not drawn.endswith("…")
        assert len(drawn) <= 78


async def test_words_legend_and_labels(fixed_db: Path) -> None:
    from hermes_tui.widgets.status import StatusLine

    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        status = str(app.screen.query_one(StatusLine).render())
        assert "● live" in status and "○ ended" in status  # a legend for the row marks
        assert "internal runs hidden" in status and "all but tool" not in status
        detail = app.screen.query_one(DetailPane)
        from rich.console import Console

        console = Console(width=60, record=True)
        console.print(detail.build())
        assert "(1 tool call)" in console.export_text()  # not "(1 tool calls)"


async def test_shown_reasoning_is_labelled(tmp_path: Path) -> None:
    from hermes_state import SessionDB
    from hermes_tui.config import AppConfig

    from .dataset import build_fixed_db

    path = build_fixed_db(tmp_path / "state.db")
    db = SessionDB(path)
    db.create_session("20261118_075000_abcdef", "cli")
    db.append_message("20261118_075000_abcdef", "user", "why?")
    db.append_message("20261118_075000_abcdef", "assistant", "Because.", reasoning="Think first.")
    db.close()
    app = make_app(path, config=AppConfig(animations="none", search_debounce_s=0.0, show_reasoning=True))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        pilot.app.push_screen(pilot.app.ctx.screens.transcript("20261118_075000_abcdef"))
        await settle(pilot)
        lines = [line.plain.strip() for line in app.screen.view.block_lines(1)]
        assert lines[1:3] == ["Reasoning:", "Think first."]


async def test_export_dialog_names_the_keys_that_export(fixed_db: Path) -> None:
    from hermes_tui.modals.export import ExportModal

    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, ExportModal)
        subtitle = app.screen.query_one("#export-box").border_subtitle
        assert "Ctrl+S exports" in subtitle and "Enter exports" not in subtitle


def test_readme_says_resume_command_is_not_run_through_a_shell() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert "not run through a shell" in readme


async def test_screenshot_falls_back_like_export_and_says_where(fixed_db, tmp_path, monkeypatch):
    from hermes_tui.config import AppConfig

    missing = tmp_path / "no-such-dir"
    monkeypatch.setenv("HOME", str(tmp_path))
    app = make_app(fixed_db, config=AppConfig(animations="none", export_dir=str(missing)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.action_screenshot()
        await settle(pilot)
        saved = [n.message for n in app._notifications if n.message.startswith("Screenshot saved to ")]
        assert saved, [n.message for n in app._notifications]
        path = Path(saved[0].removeprefix("Screenshot saved to "))
        assert path.parent == tmp_path and path.suffix == ".svg" and path.read_text().startswith("<svg")
        assert not missing.exists()


async def test_palette_screenshot_saves_where_exports_go_and_says_where(fixed_db, tmp_path, monkeypatch):
    """The command palette's Screenshot is ours: Textual's saved to ~/Downloads and, where that
    folder is missing, said only "Failed to save screenshot"."""
    from hermes_tui.config import AppConfig

    out = tmp_path / "exports"
    out.mkdir()
    monkeypatch.setenv("HOME", str(tmp_path))  # (no ~/Downloads here)
    app = make_app(fixed_db, config=AppConfig(animations="none", export_dir=str(out)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await settle(pilot)
        await pilot.press(*"screenshot")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause(0.3)
        await settle(pilot)
        said = [n.message for n in app._notifications]
        saved = [m for m in said if m.startswith("Screenshot saved to ")]
        assert saved and not any("Failed" in m for m in said), said
        path = Path(saved[0].removeprefix("Screenshot saved to "))
        assert path.parent == out and path.read_text().startswith("<svg")


def test_compression_continuation_previews_its_first_real_user_message(tmp_path):
    """The summary a continuation starts with is not its preview (UC-3)."""
    from hermes_state import SessionDB

    db = SessionDB(tmp_path / "state.db")
    try:
        db.create_session("root", "cli")
        db.end_session("root", "compression")
        db.create_session("tip", "cli", parent_session_id="root")
        db.append_message("tip", "user", "[Context compacted] Earlier in this conversation: we planned a trip")
        db.append_message("tip", "user", "now book the hotel")
        assert db.get_summary("tip").preview == "now book the hotel"
    finally:
        db.close()


async def test_status_line_keeps_every_filter_whole_at_80_and_120_columns(fixed_db: Path) -> None:
    """The status line was cut mid-phrase at 80 ("by last …") and at 120 (the file's path):
    its parts are shortened or left out whole, the filters last."""
    from hermes_tui.widgets.status import StatusLine

    for width, expected in (
        (80, "7 conversations · all sources · active · by last activity"),
        (120, "7 conversations · all sources (internal runs hidden) · active · by last activity"
              " · ● live ○ ended ★ pinned"),
    ):
        app = make_app(fixed_db)
        async with app.run_test(size=(width, 30)) as pilot:
            await settle(pilot)
            status = app.screen.query_one(StatusLine)
            drawn = "".join(segment.text for segment in status.render_line(0)).strip()
            assert drawn.startswith(expected), (width, drawn)
            assert "…" not in drawn
