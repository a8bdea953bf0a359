"""Issue 13 "daily use": small terminals, footer keys, help, keymap problems, small things."""

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


# ----------------------------------------------------------------------------- item 5


async def test_item5_at_80_columns_the_detail_folds_and_titles_keep_room(fixed_db: Path) -> None:
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


async def test_item5_footer_shows_the_essential_keys_at_80_columns(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        keys = footer_keys(app)
        for essential in ("Open", "Search", "Delete", "Details", "Help", "Quit"):
            assert essential in keys, keys


async def test_item5_wide_terminal_shows_the_detail_and_every_key(fixed_db: Path) -> None:
    """At 160 columns: the detail pane, and t, y, u, L in the footer too (item 10)."""
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


def test_item5_snapshot_80x24_light(fixed_db: Path, snap_compare) -> None:
    async def run_before(pilot) -> None:
        pilot.app.theme = "textual-light"
        await settle(pilot)

    assert snap_compare(make_app(fixed_db), terminal_size=(80, 24), run_before=run_before)
