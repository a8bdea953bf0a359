"""Key names in config.yaml's keymap as Textual reports key presses: a character written by
its Unicode name (``solidus``, ``plus_sign``) is the key Textual names otherwise (``slash``,
``plus``), so the binding runs; and a key's other name (``ctrl+m`` is the byte of Enter,
``ctrl+i`` that of Tab) is compared as the key press a terminal reports for both."""

from __future__ import annotations

from hermes_tui.keys import checked_keymap, keymap_problems
from hermes_tui.screens.help import HelpScreen
from hermes_tui.widgets.search import SearchInput

from .conftest import SIZE, settle
from .test_keymap_keys import app_from_config_file, conflicts, listed


async def test_a_character_written_by_its_unicode_name_is_the_key_textual_reports(tmp_path, fixed_db, monkeypatch) -> None:
    app, _path = app_from_config_file(
        tmp_path, fixed_db, monkeypatch, '  search: "solidus"\n  help: "plus_sign"\n')
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.ctx.config_problems == []
        await pilot.press("plus")  # the key press Textual makes of +
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        rows = listed(app.screen)
        assert rows["search"] == "/" and rows["help"] == "+"
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("slash")
        await settle(pilot)
        assert isinstance(app.focused, SearchInput)


async def test_a_unicode_name_is_one_key_with_its_character_in_a_conflict(tmp_path, fixed_db, monkeypatch) -> None:
    app, path = app_from_config_file(tmp_path, fixed_db, monkeypatch, '  copy_id: "solidus"\n')
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        [conflict] = conflicts(app)
        assert conflict.startswith(f"{path}: keymap: / is given to both")
        assert "(search)" in conflict and "(copy_id)" in conflict


def test_unicode_names_with_modifiers_and_the_rest_as_written() -> None:
    kept, problems = checked_keymap(
        {"search": "SOLIDUS", "help": "ctrl+solidus,question_mark", "copy_id": "y,latin_small_letter_c",
         "quit": "q,ctrl+q", "rename": "notakey!!"}, "c.yaml")
    assert kept == {"search": "slash", "help": "ctrl+slash,question_mark", "copy_id": "y,c", "quit": "q,ctrl+q"}
    assert [p.split(":")[2].strip() for p in problems] == ["rename"]


async def test_ctrl_m_is_enter_in_a_conflict_and_the_problem_says_so(tmp_path, fixed_db, monkeypatch) -> None:
    app, path = app_from_config_file(tmp_path, fixed_db, monkeypatch, '  copy_id: "ctrl+m"\n')
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        said = conflicts(app)
        [on_the_list] = [p for p in said if "session list screen" in p]
        assert on_the_list == (
            f"{path}: keymap: Enter is given to both Copy id (copy_id) and Open (open) on the session "
            "list screen (Ctrl+M is Enter in a terminal); Open (open) wins, Copy id has no key there — change one."
        )
        # Enter, the key press a terminal sends for Ctrl+M too, still opens the recap.
        screen = app.screen
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is not screen
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        rows = listed(app.screen)
        assert rows["copy_id"] == "(no key)"


def test_ctrl_i_is_tab_in_a_conflict_and_tab_written_as_tab_wins() -> None:
    [said] = [p for p in keymap_problems({"pin": "ctrl+i"}, "c.yaml") if "session list" in p]
    assert "Tab is given to both" in said and "(Ctrl+I is Tab in a terminal)" in said
    assert "Pin / unpin has no key there" in said


def test_a_yaml_boolean_is_no_key_and_said_so(tmp_path) -> None:
    """``rename: false`` (YAML's boolean: a person's "off") became the key name "False"; it is
    said as an entry with no key, and the binding keeps its own."""
    from hermes_tui.config import load_config

    path = tmp_path / "config.yaml"
    path.write_text("keymap:\n  rename: false\n  copy_id: 0\n", encoding="utf-8")
    config, problems = load_config(path)
    assert config.keymap == {"rename": "", "copy_id": "0"}
    kept, said = checked_keymap(config.keymap, str(path))
    assert kept == {"copy_id": "0"}  # (the digit 0 is a key)
    assert said == [f"{path}: keymap: rename: no key given (ignored; it keeps r); a binding cannot be left "
                    "without a key."]


def test_a_problem_names_a_dialog_as_a_person_does() -> None:
    from hermes_tui.keys import keymap_problems

    [conflict] = [p for p in keymap_problems({"export_run": "escape"}, "c.yaml") if "given to both" in p]
    assert " on the export dialog" in conflict and "ExportModal" not in conflict and "screen" not in conflict
    [lost] = [p for p in keymap_problems({"time_cancel": "ctrl+q"}, "c.yaml") if "Ctrl+Q" in p]
    assert "has no key on the time picker —" in lost


def test_ctrl_c_has_an_id_a_conflict_can_name_and_the_keymap_can_move() -> None:
    """``copy_id: ctrl+c`` (Ctrl+C to copy) named "Cancel (cancel)" in its report, an id the
    keymap then called unknown: the app's Ctrl+C can be given another key like any binding."""
    from hermes_tui.keys import keymap_problems, known_ids

    assert "cancel" in known_ids()
    said = keymap_problems({"copy_id": "ctrl+c"}, "c.yaml")
    assert any("(cancel)" in p for p in said), said
    moved = keymap_problems({"copy_id": "ctrl+c", "cancel": "f9"}, "c.yaml")
    assert not any("(cancel)" in p or "unknown binding id" in p for p in moved), moved


def test_a_pair_of_bindings_meeting_on_several_screens_is_one_problem_naming_them_all() -> None:
    from hermes_tui.keys import keymap_problems

    [lost] = keymap_problems({"back": "ctrl+q"}, "c.yaml")
    assert "Back (back) has no key on the recap screen, the transcript screen and the lineage screen —" in lost
