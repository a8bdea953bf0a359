"""A dialog whose text field has the focus (rename, export, the time and workspace pickers)
takes a key that types a character as text, as the search field does: a keymap giving one
of its bindings such a key is reported, and the key is typed. The pickers' ids are known
ids (they were named "unknown" while a keymap did rebind them)."""

from __future__ import annotations

import inspect
import re

from hermes_tui.modals.rename import RenameModal
from hermes_tui.modals.time_picker import TimePicker

from .conftest import SIZE, settle
from .test_keymap_keys import app_from_config_file, conflicts, listed


async def test_a_rename_dialog_key_that_types_a_character_is_reported_and_typed(tmp_path, fixed_db, monkeypatch) -> None:
    app, path = app_from_config_file(tmp_path, fixed_db, monkeypatch, '  rename_cancel: "x"\n')
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.ctx.config_problems == [
            f"{path}: keymap: x is typed into the rename dialog's title field, so Cancel (rename_cancel) "
            "has no key there — give it a key that types no character (ctrl+…, f1…, enter…)."
        ]
        await pilot.press("r")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, RenameModal)
        field = dialog.query_one("#rename-input")
        before = field.value
        await pilot.press("end", "x")
        await settle(pilot)
        # As the problem says: x is typed, the dialog stays.
        assert app.screen is dialog and field.value == before + "x"
        await pilot.press("question_mark")  # (typed too: no help over a dialog's field)
        await settle(pilot)
        assert app.screen is dialog


async def test_the_time_pickers_cancel_is_a_known_id_and_a_typed_key_for_it_is_reported(
        tmp_path, fixed_db, monkeypatch) -> None:
    app, path = app_from_config_file(tmp_path, fixed_db, monkeypatch, '  time_cancel: "q"\n')
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        [said] = app.ctx.config_problems
        assert "unknown binding id" not in said
        assert said.startswith(f"{path}: keymap: q is typed into the time picker's field, so Cancel (time_cancel)")
        await pilot.press("T")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, TimePicker)
        await pilot.press("q")
        await settle(pilot)
        assert app.screen is picker and picker.query_one("#time-custom").value == "q"


async def test_a_dialog_key_that_types_nothing_is_no_problem_and_runs(tmp_path, fixed_db, monkeypatch) -> None:
    app, _path = app_from_config_file(
        tmp_path, fixed_db, monkeypatch, '  time_cancel: "f4"\n  workspace_cancel: "f2"\n  rename_cancel: "f3"\n')
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.ctx.config_problems == []
        screen = app.screen
        await pilot.press("T")
        await settle(pilot)
        assert isinstance(app.screen, TimePicker)
        await pilot.press("f4")
        await settle(pilot)
        assert app.screen is screen
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, RenameModal)
        await pilot.press("f3")
        await settle(pilot)
        assert app.screen is screen
        await pilot.press("question_mark")
        await settle(pilot)
        rows = listed(app.screen)
        assert "rename_cancel" in rows


async def test_a_dialog_fields_own_editing_key_taken_by_the_keymap_is_named(tmp_path, fixed_db, monkeypatch) -> None:
    app, _path = app_from_config_file(tmp_path, fixed_db, monkeypatch, '  export_run: "ctrl+a"\n')
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        [conflict] = conflicts(app)
        assert "Ctrl+A is given to both Export (export_run) and Go to start (built-in key, no id)" in conflict
        assert "Go to start (built-in key, no id) wins, Export has no key there" in conflict


def test_every_dialog_with_a_text_field_is_checked_as_one() -> None:
    """A screen or dialog that yields a text field is either the browser (its search field),
    the transcript (its find field, open only while finding) or has its field named for the
    keymap check: a new dialog with a field cannot be left out unnoticed."""
    import hermes_tui.modals as modals
    import hermes_tui.screens as screens
    from hermes_tui.keys import dialog_text_fields
    from hermes_tui.screens.browser import BrowserScreen
    from hermes_tui.screens.transcript import TranscriptScreen
    from textual.screen import Screen
    import importlib
    import pkgutil

    with_fields = set()
    for package in (modals, screens):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            for _name, cls in inspect.getmembers(module, inspect.isclass):
                if cls.__module__ != module.__name__ or not issubclass(cls, Screen):
                    continue
                if re.search(r"\b(\w*Input|\w*Field)\(", inspect.getsource(cls)):
                    with_fields.add(cls)
    assert with_fields >= set(dialog_text_fields())
    assert with_fields - set(dialog_text_fields()) == {BrowserScreen, TranscriptScreen}


async def test_the_help_lists_each_dialogs_keys_by_their_ids(tmp_path, fixed_db, monkeypatch) -> None:
    """Each dialog's Cancel is a binding of its own, remapped on its own: the help lists each
    with its id and its keys (only Rename's was listed, the others' ids nowhere)."""
    app, _path = app_from_config_file(tmp_path, fixed_db, monkeypatch, '  export_cancel: "f2"\n')
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        [dialogs] = [rows for title, rows in app.screen.sections() if title.startswith("Rename")]
        assert dialogs == [
            ("Esc", "Rename: Cancel", "rename_cancel"),
            ("y", "Delete: Delete", "delete_confirm"),
            ("Esc / n", "Delete: Cancel", "delete_cancel"),
            ("F2", "Export: Cancel", "export_cancel"),
            ("Ctrl+S", "Export: Export", "export_run"),
            ("Esc", "Time picker: Cancel", "time_cancel"),
            ("Esc", "Workspace picker: Cancel", "workspace_cancel"),
        ]
