"""``u`` takes back a rename or a cleared title like a delete, and the
delete dialogs name both ways back: ``u`` and the trash."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input

from hermes_state import SessionDB
from hermes_tui.widgets.session_list import SessionList

from .conftest import SIZE, make_app, settle
from .test_delete_undo import delete_modal_of_parent, family_db, modal_text, notifications, PARENT
from .test_rename import RELEASE, open_rename, submit, title_of


async def test_u_puts_back_the_title_a_rename_replaced(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_rename(pilot)
        await submit(pilot, modal, "a title typed by mistake")
        assert title_of(fixed_db, RELEASE) == "a title typed by mistake"
        await pilot.press("u")
        await settle(pilot)
        assert title_of(fixed_db, RELEASE) == "release checklist"
        assert f"Undone: {RELEASE} is “release checklist” again." in notifications(app)
        assert app.screen.query_one(SessionList).current.title == "release checklist"
        await pilot.press("u")  # the rename was the only change: nothing is left
        await settle(pilot)
        assert notifications(app)[-1] == "Nothing to undo."
    assert title_of(fixed_db, RELEASE) == "release checklist"


async def test_u_brings_back_a_cleared_title(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_rename(pilot)
        modal.query_one("#rename-input", Input).value = ""
        await pilot.press("enter")
        await settle(pilot)
        assert title_of(fixed_db, RELEASE) is None
        assert f"Title cleared for {RELEASE}. Press u to undo." in notifications(app)
        await pilot.press("u")
        await settle(pilot)
        assert "Nothing to undo." not in notifications(app)
    assert title_of(fixed_db, RELEASE) == "release checklist"


async def test_undoing_a_rename_never_overwrites_a_later_rename_by_someone_else(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_rename(pilot)
        await submit(pilot, modal, "mine")
        other = SessionDB(fixed_db)  # another process renames it meanwhile
        try:
            other.set_session_title(RELEASE, "theirs")
        finally:
            other.close()
        await pilot.press("u")
        await settle(pilot)
        said = notifications(app)[-1]
        assert said.startswith("Undo failed:") and "“theirs”" in said and said.endswith("Nothing was changed.")
    assert title_of(fixed_db, RELEASE) == "theirs"


async def test_delete_dialog_names_undo_and_the_seven_day_trash(tmp_path: Path) -> None:
    app = make_app(family_db(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        modal = await delete_modal_of_parent(app, pilot)
        text = " ".join(modal_text(modal).split())
        assert "Press u afterwards to undo (while the browser stays open)." in text
        assert f"kept in the trash for 7 days: hermes sessions restore {PARENT}" in text
