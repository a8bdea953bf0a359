"""Keys typed in one burst act in the order they were typed, in every text field.

A terminal delivers what was typed since its last read at once -- a fast typist, a held-down
Backspace, or any keys typed while the app is busy (a search running). Textual hands the
letters to the focused field at once, but a field's editing keys (Backspace, Ctrl+U, Ctrl+W,
…) are bindings, checked only once the key has bubbled up the DOM through every parent's
queue: the letters typed after them were inserted first. "dockr", Backspace, "er" became
"docke" (the Backspace took the last letter), "ab", Ctrl+U, "xyz" became "".
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual import events
from textual.widgets import Input

from hermes_tui.widgets.search import SearchInput

from .conftest import SIZE, make_app, settle

KEYS = {"backspace": "\x7f", "ctrl+u": "\x15", "ctrl+w": "\x17", "left": None, "home": None, "delete": None,
        "escape": "\x1b", "down": None, "up": None, "enter": "\r", "slash": "/", "space": " "}


def burst(app, keys: list[str]) -> None:
    """Post ``keys`` as one terminal read delivers them: all queued before any is handled."""
    for key in keys:
        character = KEYS[key] if key in KEYS else key
        app.post_message(events.Key(key, character))


async def typed_in_one_burst(db: Path, opener: str, kind: type[Input], keys: list[str]) -> str:
    """The value of the field ``opener`` focuses once ``keys`` arrive in one burst."""
    app = make_app(db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(opener)
        await settle(pilot)
        field = app.screen.query_one(kind)
        assert field.has_focus
        burst(app, keys)
        await settle(pilot)
        return field.value


@pytest.mark.parametrize("keys, expected", [
    ([*"dockr", "backspace", *"er"], "docker"),
    ([*"ab", "ctrl+u", *"xyz"], "xyz"),
    ([*"old", "space", *"word", "ctrl+w", *"new"], "old new"),
    ([*"ac", "left", "b"], "abc"),
    ([*"xbc", "home", "delete", "a"], "abc"),
])
async def test_search_field_keys_in_one_burst_act_in_order(fixed_db: Path, keys, expected) -> None:
    assert await typed_in_one_burst(fixed_db, "/", SearchInput, keys) == expected


async def test_rename_field_keys_in_one_burst_act_in_order(fixed_db: Path) -> None:
    # (the field opens with the title in it: Ctrl+U empties it first)
    assert await typed_in_one_burst(fixed_db, "r", Input, ["ctrl+u", *"plam", "backspace", "n"]) == "plan"


# ---------------------------------------------------------------------------------------------
# Keys that move the focus: the keys after them go where the focus went.
#
# Textual hands every key of a burst to the widget focused when the burst arrives, and a
# binding runs only once its key has bubbled up to the app. "/docker" typed in one burst on
# the list: "/" was still on its way up when "d", "o", ... reached the list, and each ran the
# list's binding -- "d" opened the delete dialog, "e" the export dialog, "o" changed the order.


async def test_slash_then_a_word_in_one_burst_searches_for_the_word(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        before = (screen.session_list.cursor, screen.by_activity)
        burst(app, ["slash", *"docker"])
        await settle(pilot)
        assert app.screen is screen, f"a dialog opened: {app.screen!r}"
        field = screen.query_one(SearchInput)
        assert field.has_focus
        assert field.value == "docker"
        assert (screen.session_list.cursor, screen.by_activity) == before


async def test_list_keys_then_slash_then_a_word_act_in_order(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        burst(app, ["down", "down", "slash", *"deploy"])
        await settle(pilot)
        assert app.screen is screen
        assert screen.session_list.cursor == 2
        assert screen.query_one(SearchInput).value == "deploy"


async def test_slash_then_a_word_in_one_burst_finds_in_the_transcript(fixed_db: Path) -> None:
    from hermes_tui.screens.transcript import TranscriptScreen

    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TranscriptScreen)
        expanded = (set(screen.view.expanded), screen.view.show_reasoning)
        burst(app, ["slash", *"compose", "enter"])  # ("a" and "o" expand entries, "r" shows reasoning)
        await settle(pilot)
        assert app.screen is screen
        assert screen.search_query == "compose"
        assert (set(screen.view.expanded), screen.view.show_reasoning) == expanded


# ---------------------------------------------------------------------------------------------
# Keys that open a dialog or a screen: the keys typed behind them are for it.
#
# The rename dialog opens once the session's row is read (in a thread): "r" and a new title
# typed in one read ran the title's letters as the list's keys ("l" opened the lineage
# screen). A screen pushed at once composes before its field has the focus: keys reaching it
# meanwhile were lost.


async def test_rename_then_a_title_and_enter_in_one_burst_renames(fixed_db: Path) -> None:
    from hermes_state import SessionDB

    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        session_id = screen.session_list.current.id
        burst(app, ["r", "ctrl+u", *"plan", "enter"])
        await settle(pilot)
        assert app.screen is screen, f"left on {app.screen!r}"
    db = SessionDB(fixed_db)
    try:
        assert db.get_session(session_id)["title"] == "plan"
    finally:
        db.close()


async def test_keys_typed_behind_the_rename_are_the_lists_once_it_is_saved(fixed_db: Path) -> None:
    """After a rename the list selects the renamed conversation once read again -- unless the
    reader moved meanwhile: "r", a title, Enter and Down in one burst end one row down."""
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        burst(app, ["r", "ctrl+u", *"plan", "enter", "down"])
        await settle(pilot)
        assert app.screen is screen
        assert screen.session_list.row(0).title == "plan"
        assert screen.session_list.cursor == 1


async def test_delete_then_escape_in_one_burst_cancels_the_dialog(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        session_id = screen.session_list.current.id
        burst(app, ["d", "escape", "down"])
        await settle(pilot)
        assert app.screen is screen, f"left on {app.screen!r}"
        assert screen.session_list.index_of(session_id) == 0
        assert screen.session_list.cursor == 1  # (the key after the dialog's is the list's)


async def test_keys_behind_a_dialog_that_cannot_open_are_dropped(fixed_db: Path) -> None:
    from hermes_state import SessionDB

    app = make_app(fixed_db)  # (no watcher: the list still shows the deleted session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        session_id = screen.session_list.current.id
        db = SessionDB(fixed_db)
        try:
            db.delete_session(session_id)
        finally:
            db.close()
        burst(app, ["r", *"plan"])  # ("l" would open the lineage screen, "a" archive)
        await settle(pilot)
        assert app.screen is screen, f"left on {app.screen!r}"
        assert any("no longer exists" in str(n.message) for n in app._notifications)
        assert screen.session_list.current.archived is False
        burst(app, ["down"])  # (and the keys typed afterwards are the list's again)
        await settle(pilot)
        assert screen.session_list.cursor == 1


async def test_workspace_picker_then_a_name_in_one_burst_narrows_it(fixed_db: Path) -> None:
    from hermes_tui.modals.workspace_picker import WorkspacePicker

    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        burst(app, ["w", *"infra"])
        await settle(pilot)
        assert isinstance(app.screen, WorkspacePicker)
        assert app.screen.query_one(Input).value == "infra"


async def test_transcript_then_slash_and_a_word_in_one_burst_finds_it(fixed_db: Path) -> None:
    from hermes_tui.screens.transcript import TranscriptScreen

    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        burst(app, ["t", "slash", *"compose", "enter"])
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TranscriptScreen)
        assert screen.search_query == "compose"
