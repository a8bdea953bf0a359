"""The app's own keys are in the keymap's check on every screen: Ctrl+Q (Textual's quit, a
priority binding that runs before any screen's) given to another binding is reported,
naming that Ctrl+Q quits and which binding has no key, and Ctrl+Q still quits."""

from __future__ import annotations

from hermes_tui.modals.time_picker import TimePicker
from hermes_tui.screens.help import HelpScreen

from .conftest import SIZE, settle
from .test_keymap_help_ids import listed
from .test_keymap_keys import app_from_config_file


def about_ctrl_q(app) -> list[str]:
    return [p for p in app.ctx.config_problems if "Ctrl+Q" in p]


async def test_ctrl_q_given_to_a_list_key_is_reported_and_still_quits(tmp_path, fixed_db, monkeypatch) -> None:
    app, path = app_from_config_file(tmp_path, fixed_db, monkeypatch, '  copy_id: "ctrl+q"\n')
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        [said] = about_ctrl_q(app)
        assert said.startswith(f"{path}: keymap: Ctrl+Q quits the browser on every screen")
        assert "so Copy id (copy_id) has no key on the session list screen" in said
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen) and listed(app.screen)["copy_id"] == "(no key)"
        await pilot.press("escape")
        await settle(pilot)
        # The problem names the winner: Ctrl+Q quits, without choosing (no id copied).
        await pilot.press("ctrl+q")
        await settle(pilot)
        assert not app.is_running and app.return_value is None


async def test_ctrl_q_given_to_a_dialogs_key_is_reported_there_and_still_quits(tmp_path, fixed_db, monkeypatch) -> None:
    app, _path = app_from_config_file(tmp_path, fixed_db, monkeypatch, '  time_cancel: "escape,ctrl+q"\n')
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        [said] = about_ctrl_q(app)
        assert "Ctrl+Q quits the browser on every screen" in said
        assert "so Cancel (time_cancel) has no key on the time picker" in said
        await pilot.press("T")
        await settle(pilot)
        assert isinstance(app.screen, TimePicker)
        await pilot.press("ctrl+q")
        await settle(pilot)
        assert not app.is_running


async def test_ctrl_q_kept_for_quitting_as_the_readme_writes_it_is_no_problem(tmp_path, fixed_db, monkeypatch) -> None:
    app, _path = app_from_config_file(tmp_path, fixed_db, monkeypatch, '  quit: "q,ctrl+q"\n')
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.ctx.config_problems == []


async def test_ctrl_q_given_to_the_recaps_back_key_is_reported(tmp_path, fixed_db, monkeypatch) -> None:
    app, _path = app_from_config_file(tmp_path, fixed_db, monkeypatch, '  back: "ctrl+q"\n')
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        said = about_ctrl_q(app)
        assert said and all("quits the browser" in s and "Back (back) has no key" in s for s in said)
