"""Every binding id a keymap accepts is listed in the help with its keys, so a person can
find the id to rebind: two ids of one action (the search field's and the hits' Ctrl+O)
are both named."""

from __future__ import annotations

from hermes_tui.keys import known_ids
from hermes_tui.screens.help import HelpScreen

from .conftest import SIZE, settle
from .test_keymap_keys import app_from_config_file, listed


async def test_the_help_lists_every_id_the_keymap_accepts(tmp_path, fixed_db, monkeypatch) -> None:
    app, _path = app_from_config_file(tmp_path, fixed_db, monkeypatch, '  copy_id: "c"\n')
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        rows = listed(app.screen)
        assert sorted(known_ids() - set(rows)) == []
        assert rows["results_ranking"] == "Ctrl+O" and rows["search_ranking"] == "Ctrl+O"


async def test_the_hits_ranking_key_rebound_is_shown_by_its_own_id(tmp_path, fixed_db, monkeypatch) -> None:
    app, _path = app_from_config_file(tmp_path, fixed_db, monkeypatch, '  results_ranking: "f6"\n')
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.ctx.config_problems == []
        await pilot.press("question_mark")
        await settle(pilot)
        [search] = [rows for title, rows in app.screen.sections() if title.startswith("Search")]
        [row] = [row for row in search if "results_ranking" in row[2]]
        assert row[0] == "Ctrl+O / F6" and row[2] == "search_ranking, results_ranking"


async def test_the_command_palettes_row_shows_the_key_the_keymap_gives_it(tmp_path, fixed_db, monkeypatch) -> None:
    app, _path = app_from_config_file(tmp_path, fixed_db, monkeypatch, '  command_palette: "f2"\n')
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.ctx.config_problems == []
        await pilot.press("question_mark")
        await settle(pilot)
        assert listed(app.screen)["command_palette"] == "F2"
