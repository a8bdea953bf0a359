"""What was cut or broken at 80×24: each screen's text whole, nothing
scrolled out of a dialog, no row wrapped under another."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.modals.export import ExportModal
from hermes_tui.modals.source_picker import SourcePicker

from .conftest import make_app, settle

SMALL = (80, 24)


def screen_text(app) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def test_source_picker_at_80x24_shows_its_heading_and_one_line_per_source(fixed_db: Path) -> None:
    from hermes_state import SessionDB

    db = SessionDB(fixed_db)  # as many sources as the demo has: more than the box's rows
    try:
        for n, source in enumerate(("whatsapp", "slack", "tui", "matrix", "signal", "api-server", "email",
                                    "sms", "webhook", "irc", "cron", "tool", "kanban", "subagent")):
            db.create_session(f"20261118_0100{n:02d}_src{n:03d}", source)
    finally:
        db.close()
    app = make_app(fixed_db)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        assert isinstance(app.screen, SourcePicker)
        box = app.screen.query_one("#source-box")
        assert box.scroll_offset.y == 0 and box.max_scroll_y == 0
        shown = screen_text(app)
        assert "Show conversations from" in shown
        line = next(line for line in shown.splitlines() if "all sources" in line)
        assert "internal runs hidden" in line  # on its own row, not wrapped under the names


async def test_export_dialog_at_80x24_shows_scope_and_its_first_choice(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, ExportModal)
        box = app.screen.query_one("#export-box")
        assert box.max_scroll_y == 0, "the dialog fits: nothing scrolled out of its top"
        shown = screen_text(app)
        assert "─ Export ─" in shown and "Scope" in shown and "This session" in shown
        assert any("Export" in line and "Cancel" in line for line in shown.splitlines())


async def test_lineage_tree_at_80_columns_cuts_a_row_with_an_ellipsis_never_a_bare_id(fixed_db: Path) -> None:
    from hermes_tui.screens.lineage import LineageScreen
    from hermes_tui.widgets.lineage_tree import LineageTree

    app = make_app(fixed_db)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        app.push_screen(app.ctx.screens.lineage("20261117_100000_e5f6a7b8"))
        await settle(pilot)
        assert isinstance(app.screen, LineageScreen)
        tree = app.screen.query_one(LineageTree)
        ids = [node.id for node in tree.family.walk()]
        rows = [line.strip("│ ") for line in screen_text(app).splitlines() if " msg" in line and "│" in line]
        assert len(rows) == len(ids)
        for row, sid in zip(rows, ids):
            assert row.endswith(sid) or row.endswith("…"), row
        assert any(row.endswith("…") for row in rows), "80 columns do cut these rows"
        assert tree.virtual_size.width <= tree.scrollable_content_region.width  # no sideways scroll


async def test_detail_pane_at_80_columns_breaks_a_path_after_a_slash_never_mid_name(fixed_db: Path) -> None:
    from hermes_state import SessionDB
    from hermes_tui.widgets.session_list import SessionList

    app = make_app(fixed_db)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        first = app.screen.query_one(SessionList).current.id
    db = SessionDB(fixed_db)
    try:
        db._execute_write(lambda c: c.execute(
            "UPDATE sessions SET cwd = ? WHERE id = ?", ("/srv/work/projects/hermes-sessions/src/deep", first)))
    finally:
        db.close()
    app = make_app(fixed_db)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("i")  # the detail pane, folded away at 80 columns
        await settle(pilot)
        import io

        from rich.console import Console

        from hermes_tui.widgets.detail import DetailPane

        pane = app.screen.query_one(DetailPane)
        width = pane.content_region.width
        assert width < 30  # the 80-column detail pane
        console = Console(width=width, file=io.StringIO(), color_system=None)
        console.print(pane.build())
        pane_lines = [line.strip() for line in console.file.getvalue().splitlines()]
        joined = "".join(line for line in pane_lines if "/" in line and " " not in line)
        assert "/srv/work/projects/hermes-sessions/src/deep" in joined
        path_lines = [line for line in pane_lines if "/" in line and " " not in line]
        assert len(path_lines) > 1, "at 80 columns the path takes more than one line"
        assert all(line.endswith("/") for line in path_lines[:-1]), path_lines
        assert first in pane_lines, "the id whole on a line of its own"


async def test_list_pane_title_fits_whole_at_80_columns_with_the_detail_pane_shown(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        main = app.screen.switcher
        assert str(main.border_title) == "Sessions · all (internal runs hidden) · active · by last activity"
        await pilot.press("i")  # the detail pane takes a third of the width
        await settle(pilot)
        title = str(main.border_title)
        assert len(title) <= main.size.width - 6 and "active" in title and "…" not in title
        top = next(line for line in screen_text(app).splitlines() if line.startswith("╭"))
        assert title in top
        await pilot.press("i")
        await settle(pilot)
        assert str(main.border_title).startswith("Sessions · all (internal runs hidden)")
