"""A keymap in config.yaml is checked by the key presses it means: ``?`` and
``question_mark`` are one key, the search field's own keys are checked too, an entry with
no key is said, and the lineage tree's keys can be rebound."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.config import load_config
from hermes_tui.screens.help import HelpScreen

from .conftest import SIZE, make_app, settle
from .test_delete_undo import plain


def app_from_config_file(tmp_path: Path, fixed_db: Path, monkeypatch, keymap_lines: str):
    """The browser as ``hermes sessions browse`` makes it from a real config.yaml holding
    ``keymap_lines`` under ``keymap:``: the file's problems first, then the app's own."""
    folder = tmp_path / "cfg"
    folder.mkdir(exist_ok=True)
    (folder / "config.yaml").write_text(
        "animations: none\nsearch_debounce_s: 0\nkeymap:\n" + keymap_lines, encoding="utf-8"
    )
    monkeypatch.setenv("HERMES_SESSIONS_CONFIG_DIR", str(folder))
    config, problems = load_config()
    return make_app(fixed_db, config=config, config_problems=problems), str(folder / "config.yaml")


def conflicts(app) -> list[str]:
    return [p for p in app.ctx.config_problems if "is given to both" in p]


def listed(help_screen: HelpScreen) -> dict[str, str]:
    """binding id -> the keys its help row shows (a row naming two ids gives both its keys)."""
    return {binding_id.strip(): keys for _t, rows in help_screen.sections()
            for keys, _what, ids in rows for binding_id in ids.split(",") if binding_id.strip()}


# -------------------------------------------------------------------- one key, two spellings

async def test_a_character_and_its_name_are_one_key_in_a_conflict(tmp_path, fixed_db, monkeypatch) -> None:
    app, path = app_from_config_file(tmp_path, fixed_db, monkeypatch, '  help: "question_mark"\n  quit: "?"\n')
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        [conflict] = conflicts(app)
        assert conflict.startswith(f"{path}: keymap: ? is given to both Help (help) and Quit (quit)")
        assert "Help (help) wins, Quit has no key there" in conflict
        # The winner named is the one that runs: ? opens the help, the browser stays.
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen) and app.is_running
        rows = listed(app.screen)
        assert rows["quit"] == "(no key)" and rows["help"] == "?"


async def test_a_slash_written_as_a_character_takes_the_search_key_by_its_name(tmp_path, fixed_db, monkeypatch) -> None:
    app, _path = app_from_config_file(tmp_path, fixed_db, monkeypatch, '  copy_id: "/"\n')
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        [conflict] = conflicts(app)
        assert "/ is given to both" in conflict and "(search)" in conflict and "(copy_id)" in conflict


# -------------------------------------------------------------------- the search field's keys

async def test_a_search_field_key_taken_by_another_of_its_keys_is_reported_and_the_winner_runs(
        tmp_path, fixed_db, monkeypatch) -> None:
    app, path = app_from_config_file(tmp_path, fixed_db, monkeypatch, '  show_new_matches: "ctrl+o"\n')
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        # Ctrl+O is the ranking's key in the field (search_ranking) and in the hits (results_ranking).
        field, results = conflicts(app)
        assert field.startswith(f"{path}: keymap: Ctrl+O is given to both")
        assert "(search_ranking) on the search field" in field
        assert "New matches (show_new_matches) wins, Relevance / newest has no key there" in field
        assert "(results_ranking) on the search results" in results
        await pilot.press("slash", "d", "o", "c")
        await settle(pilot)
        order = app.screen.search.order
        await pilot.press("ctrl+o")
        await settle(pilot)
        assert app.screen.search.order == order  # Ctrl+O no longer toggles the ranking
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        [search] = [rows for title, rows in app.screen.sections() if title.startswith("Search")]
        # (one row names both ranking ids: the field's and the hits')
        keys = {binding_id: keys for keys, _w, ids in search for binding_id in ids.split(", ")}
        assert keys["search_ranking"] == keys["results_ranking"] == "(no key)"


async def test_a_text_fields_own_editing_key_taken_by_the_keymap_is_named(tmp_path, fixed_db, monkeypatch) -> None:
    app, _path = app_from_config_file(tmp_path, fixed_db, monkeypatch, '  search_ranking: "ctrl+a"\n')
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        [conflict] = conflicts(app)
        assert "Ctrl+A is given to both Go to start (built-in key, no id)" in conflict
        assert "Relevance / newest (search_ranking) wins, Go to start has no key there" in conflict


async def test_a_search_field_key_that_types_a_character_is_reported_and_types_it(
        tmp_path, fixed_db, monkeypatch) -> None:
    app, path = app_from_config_file(tmp_path, fixed_db, monkeypatch, '  search_ranking: "d"\n')
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        [typed] = [p for p in app.ctx.config_problems if "search_ranking" in p]
        assert typed.startswith(f"{path}: keymap: d is typed into the search field")
        # The list's own d (Delete) is typed there too, by design: no conflict to report.
        assert conflicts(app) == []
        assert "Relevance / newest (search_ranking) has no key there" in typed
        await pilot.press("slash")
        await settle(pilot)
        order = app.screen.search.order
        await pilot.press("d")
        await settle(pilot)
        assert app.screen.search_input.value == "d" and app.screen.search.order == order



# -------------------------------------------------------------------- an entry with no key

async def test_a_keymap_entry_with_no_key_is_said_and_the_binding_keeps_its_own(tmp_path, fixed_db, monkeypatch) -> None:
    from hermes_tui.modals.rename import RenameModal

    app, path = app_from_config_file(tmp_path, fixed_db, monkeypatch, "  rename: null\n  copy_id:\n")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        said = app.ctx.config_problems
        assert f"{path}: keymap: rename: no key given (ignored; it keeps r); a binding cannot be left without a key." in said
        assert f"{path}: keymap: copy_id: no key given (ignored; it keeps y); a binding cannot be left without a key." in said
        assert len(said) == 2
        await pilot.press("question_mark")
        await settle(pilot)
        shown = " ".join(plain(app.screen.render_help()).split())
        assert "rename: no key given" in shown
        rows = listed(app.screen)
        assert rows["rename"] == "r" and rows["copy_id"] == "y"
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, RenameModal)


async def test_an_unknown_id_with_no_key_is_still_named_as_unknown(tmp_path, fixed_db, monkeypatch) -> None:
    app, path = app_from_config_file(tmp_path, fixed_db, monkeypatch, "  no_such_id: null\n")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.ctx.config_problems == [
            f"{path}: keymap: unknown binding id 'no_such_id' (ignored); the help screen (?) lists the ids."
        ]


# -------------------------------------------------------------------- the lineage tree's keys

async def test_the_lineage_trees_own_keys_have_ids_to_rebind_and_are_in_the_help(tmp_path, monkeypatch) -> None:
    from hermes_tui.widgets.lineage_tree import LineageTree

    from .test_lineage import B, C, build_family_db, open_lineage

    family = build_family_db(tmp_path / "state.db")
    app, _path = app_from_config_file(tmp_path, family, monkeypatch, '  lineage_parent: "p"\n')
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.ctx.config_problems == []  # a known id, a key of its own
        screen = await open_lineage(pilot, C)
        tree = screen.query_one(LineageTree)
        assert tree.highlighted.id == C
        await pilot.press("p")
        await settle(pilot)
        assert tree.highlighted.id == B
        await pilot.press("question_mark")
        await settle(pilot)
        [lineage] = [rows for title, rows in app.screen.sections() if title == "Lineage"]
        keys = {binding_id: keys for keys, _w, binding_id in lineage}
        assert keys["lineage_parent"] == "p"
        assert keys["lineage_toggle"] == "Space" and keys["lineage_next_sibling"] == "Shift+↓"
        # (Shift+→ goes to the parent's next sibling, as Textual's Tree does: said so)
        assert [what for _k, what, bid in lineage if bid == "lineage_parent_next_sibling"] == [
            "To the parent's next sibling"]
