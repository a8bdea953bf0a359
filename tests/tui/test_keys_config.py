"""Keys: footer/help/palette coverage, remapping from the config file (BR-3)."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.config import AppConfig, load_config
from hermes_tui.screens.help import HelpScreen

from .conftest import SIZE, make_app, settle

BROWSER_ACTIONS = {
    "Search", "Lineage", "Transcript", "Rename", "Delete", "Undo", "Export",
    "Copy id", "Source", "Lanes", "Details", "Help", "Quit", "Open",
    # Archive, view filter, pin, order, hidden rows, workspaces, marks (BR-11 … BR-15).
    "Archive / unarchive", "View: active / archived / all", "Pin / unpin",
    "Order: last activity / start", "Show hidden, internal and delegate runs", "Workspace",
    "Mark", "Clear marks",
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


async def test_archive_pin_filter_and_mark_keys_are_remappable(upstream_copy) -> None:
    """a, v, p, o, H, w and space move to other keys; the old keys then do nothing."""
    from hermes_tui.modals.workspace_picker import WorkspacePicker

    path = upstream_copy(30)
    keymap = {
        "archive": "f2", "cycle_view": "f3", "pin": "f4", "toggle_order": "f6",
        "toggle_hidden": "f7", "pick_workspace": "f8", "toggle_mark": "f9",
    }
    config = AppConfig(animations="none", search_debounce_s=0.0, keymap=keymap)
    app = make_app(path, config=config)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        lst = screen.session_list
        await pilot.press("v", "o", "H", "space", "w")
        await settle(pilot)
        assert (screen.view, screen.by_activity, screen.show_hidden) == ("active", True, False)
        assert not lst.marked and app.screen is screen

        await pilot.press("f3", "f6", "f7")
        await settle(pilot)
        assert (screen.view, screen.by_activity, screen.show_hidden) == ("archived", False, True)
        await pilot.press("f3", "f3", "f6", "f7")
        await settle(pilot)
        assert (screen.view, screen.by_activity, screen.show_hidden) == ("active", True, False)

        first = lst.current
        was = first.pinned
        await pilot.press("f4")  # pin or unpin
        await settle(pilot)
        now = screen.ctx.store.summary(first.id).pinned
        assert now == (not was)
        await pilot.press("p")  # no longer bound
        await settle(pilot)
        assert screen.ctx.store.summary(first.id).pinned == now

        total = lst.total
        lst.move_to(0)
        await pilot.press("a")  # no longer bound
        await settle(pilot)
        assert lst.total == total
        await pilot.press("f2")
        await settle(pilot)
        assert lst.total == total - 1

        await pilot.press("f9")
        await settle(pilot)
        assert len(lst.marked) == 1
        await pilot.press("f8")
        await settle(pilot)
        assert isinstance(app.screen, WorkspacePicker)
