"""Rename from the browser (`r`): TI-1 sanitising, TI-2 uniqueness, errors inside the modal."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from textual.widgets import Input, Static

from hermes_state import SessionDB
from hermes_tui.modals.rename import RenameModal
from hermes_tui.widgets.session_list import SessionList

from .conftest import SIZE, make_app, settle
from .test_delete_undo import hold_write_lock, notifications, plain, release, small_retry_budget, whole_export

DOCKER = "20261118_074000_a1b2c3"
RELEASE = "20261118_030000_c3d4e5"
TELEGRAM = "20261118_060000_b2c3d4e5"


def title_of(path: Path, sid: str) -> str | None:
    db = SessionDB(path, read_only=True)
    try:
        return db.get_session_title(sid)
    finally:
        db.close()


async def open_rename(pilot, moves: int = 2) -> RenameModal:
    """Highlight the row ``moves`` down (default: release checklist) and press r."""
    await settle(pilot)
    if moves:
        await pilot.press(*["j"] * moves)
        await settle(pilot)
    await pilot.press("r")
    await settle(pilot)
    modal = pilot.app.screen
    assert isinstance(modal, RenameModal)
    return modal


async def submit(pilot, modal: RenameModal, text: str, *, typed: bool = False) -> None:
    """Replace the title (typed key by key, or set), then press Enter."""
    field = modal.query_one("#rename-input", Input)
    if typed:
        field.value = ""
        await pilot.press(*text)
    else:
        field.value = text
    await pilot.press("enter")
    await settle(pilot)


def error_text(modal: RenameModal) -> str:
    widget = modal.query_one("#rename-error", Static)
    return plain(widget.content).strip() if widget.display else ""


async def test_ti2_rename_success_keeps_cursor_on_session(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_rename(pilot)
        field = modal.query_one("#rename-input", Input)
        assert field.value == "release checklist"  # prefilled with the current title
        assert app.focused is field
        await submit(pilot, modal, "Release checklist v2.3", typed=True)
        assert not isinstance(app.screen, RenameModal)
        assert f"Renamed {RELEASE} to “Release checklist v2.3”. Press u to undo." in notifications(app)
        lst = app.screen.query_one(SessionList)
        assert lst.current.id == RELEASE and lst.cursor == 2
        assert lst.current.title == "Release checklist v2.3"
    assert title_of(fixed_db, RELEASE) == "Release checklist v2.3"


async def test_ti1_title_is_sanitised_before_storing(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_rename(pilot)
        modal.query_one("#rename-input", Input).value = "  ship\u200b it \u202e\t now  "
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, RenameModal)
    assert title_of(fixed_db, RELEASE) == "ship it now"


async def test_ti2_duplicate_title_shown_in_modal_and_nothing_changes(fixed_db: Path) -> None:
    before = whole_export(fixed_db)
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_rename(pilot)
        await submit(pilot, modal, "Docker deploy pipeline")
        assert app.screen is modal  # still open
        assert error_text(modal) == f"Title 'Docker deploy pipeline' is already in use by session {DOCKER}"
        assert modal.query_one("#rename-input", Input).value == "Docker deploy pipeline"
        assert not modal.saving
        # TI-3: uniqueness is case-sensitive, so a different case is accepted.
        await submit(pilot, modal, "docker deploy pipeline")
        assert not isinstance(app.screen, RenameModal)
    after = whole_export(fixed_db)
    assert title_of(fixed_db, RELEASE) == "docker deploy pipeline"
    assert {k: v for k, v in after.items() if k != RELEASE} == {k: v for k, v in before.items() if k != RELEASE}


async def test_ti1_too_long_title_shown_in_modal_and_nothing_changes(fixed_db: Path) -> None:
    before = whole_export(fixed_db)
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_rename(pilot)
        field = modal.query_one("#rename-input", Input)
        field.value = "x" * 101
        await settle(pilot)
        assert "Title too long (101 chars, max 100)" in plain(modal.query_one("#rename-hint", Static).content)
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is modal
        assert error_text(modal) == "Title too long (101 chars, max 100) — nothing was changed."
        assert whole_export(fixed_db) == before
        # Exactly 100 after cleaning is accepted (TI-1 step 6).
        field.value = " " + "x" * 100 + " "
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, RenameModal)
    assert title_of(fixed_db, RELEASE) == "x" * 100


async def test_ti2_empty_title_clears_it(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_rename(pilot)
        modal.query_one("#rename-input", Input).value = "  \u200b "
        await settle(pilot)
        assert "An empty title clears it." in plain(modal.query_one("#rename-hint", Static).content)
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, RenameModal)
        assert f"Title cleared for {RELEASE}. Press u to undo." in notifications(app)
        lst = app.screen.query_one(SessionList)
        assert lst.current.id == RELEASE and lst.current.title is None
    assert title_of(fixed_db, RELEASE) is None


async def test_rename_untitled_session_starts_empty(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_rename(pilot, moves=1)  # the telegram session has no title
        assert modal.query_one("#rename-input", Input).value == ""
        await submit(pilot, modal, "桂林 trip", typed=True)
    assert title_of(fixed_db, TELEGRAM) == "桂林 trip"


async def test_rename_escape_cancels_without_change(fixed_db: Path) -> None:
    before = whole_export(fixed_db)
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_rename(pilot)
        modal.query_one("#rename-input", Input).value = "something else"
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, RenameModal)
    assert whole_export(fixed_db) == before


async def test_rename_read_only_database_explains_and_changes_nothing(fixed_db: Path) -> None:
    conn = sqlite3.connect(fixed_db)
    conn.execute("UPDATE schema_version SET version = 31")  # above 30 (UC-9)
    conn.commit()
    conn.close()
    before = whole_export(fixed_db)
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        assert not isinstance(app.screen, RenameModal)
        assert any(
            m.startswith("Cannot rename: schema version 31 is newer than this program's")
            and m.endswith("Nothing was changed.")
            for m in notifications(app)
        )
    assert whole_export(fixed_db) == before


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores file modes")
async def test_rename_read_only_file_explains(fixed_db: Path) -> None:
    fixed_db.chmod(0o444)
    try:
        app = make_app(fixed_db)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("r")
            await settle(pilot)
            assert not isinstance(app.screen, RenameModal)
            assert any(m.startswith("Cannot rename:") and "read-only" in m for m in notifications(app))
    finally:
        fixed_db.chmod(0o644)


async def test_rename_locked_database_reported_in_modal_and_nothing_changes(fixed_db: Path) -> None:
    """Another process holds the write lock longer than the retry budget."""
    before = whole_export(fixed_db)
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_rename(pilot)
        small_retry_budget(app.ctx.store.writer())
        proc = hold_write_lock(fixed_db)
        try:
            await submit(pilot, modal, "while locked")
            assert app.screen is modal
            error = error_text(modal)
            assert error.startswith("The database is locked")
            assert "Nothing was changed." in error
            assert not any(m.startswith("Renamed") for m in notifications(app))
        finally:
            release(proc)
        assert whole_export(fixed_db) == before
        # Once the other process lets go, the same modal saves.
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, RenameModal)
    assert title_of(fixed_db, RELEASE) == "while locked"
