"""Keys: footer/help/palette coverage, remapping from the config file (issue 4 item 5, BR-3)."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.config import AppConfig, load_config
from hermes_tui.screens.help import HelpScreen

from .conftest import SIZE, make_app, settle

BROWSER_ACTIONS = {
    "Search", "Lineage", "Transcript", "Rename", "Delete", "Undo", "Export",
    "Copy id", "Source", "Lanes", "Details", "Help", "Quit", "Open",
}


async def test_br3_every_browser_action_is_in_the_command_palette(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        names = {command.title for command in app.get_system_commands(app.screen)}
        assert BROWSER_ACTIONS <= names, BROWSER_ACTIONS - names


async def test_br3_palette_command_runs_its_action(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        browser = app.screen
        command = next(c for c in app.get_system_commands(app.screen) if c.title == "Source")
        command.callback()
        await settle(pilot)
        await pilot.press("down", "enter")  # the picker the command opened
        await settle(pilot)
        assert browser.source_filter == "cli"


async def test_br3_help_lists_keys_and_binding_ids(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        rows = [row for _title, section in app.screen.sections() for row in section]
        ids = {binding_id for _keys, _what, binding_id in rows}
        descriptions = {what for _keys, what, _id in rows}
        assert {"lineage", "rename", "delete", "undo", "export", "copy_id", "cycle_source", "quit"} <= ids
        assert "Command palette (every action)" in descriptions
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, HelpScreen)


async def test_br3_keys_are_remappable_from_config(fixed_db: Path) -> None:
    config = AppConfig(animations="none", search_debounce_s=0.0, keymap={"cycle_source": "f5", "quit": "x"})
    app = make_app(fixed_db, config=config)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")  # no longer bound
        await settle(pilot)
        assert app.screen.source_filter is None
        await pilot.press("f5")  # opens the source picker
        await settle(pilot)
        await pilot.press("down", "enter")
        await settle(pilot)
        assert app.screen.source_filter == "cli"
        await pilot.press("q")
        await settle(pilot)
        assert app.is_running
        await pilot.press("x")
        await settle(pilot)
    assert app.return_value is None


def test_config_file_is_read_and_bad_values_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text('resume_command: "hermes --resume {id}"\nkeymap:\n  quit: "ctrl+q"\npage_size: 5\n')
    config, problems = load_config(path)
    assert config.resume_command == "hermes --resume {id}"
    assert config.keymap == {"quit": "ctrl+q"}
    assert config.page_size == AppConfig().page_size  # 5 is below the minimum: ignored
    assert len(problems) == 1 and "page_size" in problems[0]


def test_config_missing_or_broken_file_gives_defaults(tmp_path: Path) -> None:
    assert load_config(tmp_path / "absent.yaml") == (AppConfig(), [])
    broken = tmp_path / "broken.yaml"
    broken.write_text("keymap: [unclosed\n")
    config, problems = load_config(broken)
    assert config == AppConfig() and "not valid YAML" in problems[0]
    listing = tmp_path / "list.yaml"
    listing.write_text("- a\n- b\n")
    config, problems = load_config(listing)
    assert config == AppConfig() and "mapping" in problems[0]
