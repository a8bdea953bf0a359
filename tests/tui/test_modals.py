"""Snapshots of the rename, confirm-delete and export modals, and the `y` copy action."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input

from hermes_tui.config import AppConfig

from .conftest import SIZE, make_app, settle
from .dataset import build_fixed_db
from .test_delete_undo import family_db, notifications


def test_snapshot_rename_with_duplicate_title_error(snap_compare, tmp_path: Path) -> None:
    path = build_fixed_db(tmp_path / "state.db")

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("j", "j", "r")
        await settle(pilot)
        pilot.app.screen.query_one("#rename-input", Input).value = "Docker deploy pipeline"
        await pilot.press("enter")
        await settle(pilot)

    assert snap_compare(make_app(path), terminal_size=SIZE, run_before=run_before)


def test_snapshot_delete_confirm_with_children_and_live_warning(snap_compare, tmp_path: Path) -> None:
    path = family_db(tmp_path)

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)

    assert snap_compare(make_app(path), terminal_size=SIZE, run_before=run_before)


def test_snapshot_export_modal(snap_compare, tmp_path: Path) -> None:
    path = build_fixed_db(tmp_path / "state.db")
    # A fixed export folder (it need not exist to draw the modal) keeps the snapshot portable.
    config = AppConfig(animations="none", search_debounce_s=0.0, export_dir="/exports")

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("j", "j", "j", "e")  # travel plans #2: a two-session lineage
        await settle(pilot)

    assert snap_compare(make_app(path, config=config), terminal_size=SIZE, run_before=run_before)


async def test_copy_id_puts_session_id_on_clipboard(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("j", "y")
        await settle(pilot)
        assert app.clipboard == "20261118_060000_b2c3d4e5"
        assert "Copied session id 20261118_060000_b2c3d4e5" in notifications(app)
