"""config.yaml's keymap problems stay in view until fixed and say which action won; the
help screen lists each key once, its ids in one column."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.config import AppConfig
from hermes_tui.modals.delete import ConfirmDeleteModal
from hermes_tui.modals.rename import RenameModal
from hermes_tui.screens.help import HelpScreen
from hermes_tui.widgets.session_list import SessionList
from hermes_tui.widgets.status import StatusLine

from .conftest import SIZE, make_app, settle
from .test_delete_undo import plain
from .test_keymap_keys import listed


def app_with(fixed_db: Path, keymap: dict[str, str]):
    return make_app(fixed_db, config=AppConfig(animations="none", search_debounce_s=0.0, keymap=keymap))


async def wait_out_toasts(pilot) -> None:
    """Let every toast expire, as a person who looked away would."""
    for note in list(pilot.app._notifications):
        pilot.app._unnotify(note)
    await settle(pilot)


async def test_a_remapped_key_taken_from_another_binding_is_named_with_the_winner_and_stays(fixed_db: Path) -> None:
    app = app_with(fixed_db, {"copy_id": "d", "nonsense_id": "x"})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await wait_out_toasts(pilot)
        status = plain(app.screen.query_one(StatusLine).render())
        assert "2 problems in config.yaml (? lists them)" in status
        # The winner the problem names is the one that runs: d copies the id, no delete dialog.
        [conflict] = [p for p in app.ctx.config_problems if "is given to both" in p]
        assert "Copy id (copy_id) wins, Delete has no key there" in conflict
        await pilot.press("d")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmDeleteModal)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        shown = " ".join(plain(app.screen.render_help()).split())
        assert "Problems in config.yaml" in shown
        assert "unknown binding id 'nonsense_id'" in shown and "Copy id (copy_id) wins" in shown


async def test_the_focused_lists_key_beats_the_screens_and_the_problem_says_so(fixed_db: Path) -> None:
    app = app_with(fixed_db, {"cursor_down": "d"})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        [conflict] = app.ctx.config_problems
        assert "Down (cursor_down) wins, Delete has no key there" in conflict
        lst = app.screen.query_one(SessionList)
        before = lst.cursor
        await pilot.press("d")
        await settle(pilot)
        assert lst.cursor == before + 1 and not isinstance(app.screen, ConfirmDeleteModal)


async def test_no_problem_no_notice(fixed_db: Path) -> None:
    app = app_with(fixed_db, {"copy_id": "c"})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.ctx.config_problems == []
        assert "config.yaml" not in plain(app.screen.query_one(StatusLine).render())


async def test_help_lists_open_hit_once_and_ids_in_one_column(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        help_screen = app.screen
        rows = [row for title, section in help_screen.sections() if title.startswith("Search") for row in section]
        assert [what for _k, what, _i in rows].count("Open hit") == 1
        lines = plain(help_screen.render_help()).splitlines()
        ends = {len(line.rstrip()) - len(line.rstrip().split(" ")[-1]) for line in lines
                if "," not in line and line.rstrip().endswith(("quit", "close_help", "results_back", "transcript", "open"))}
        assert len(ends) == 1, ends  # every id starts at the same column


async def test_palette_does_not_offer_copy_selected_text_on_the_key_that_quits(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        titles = [command.title for command in app.get_system_commands(app.screen)]
        assert "Copy selected text" not in titles
        assert "Quit" in titles
        await pilot.press("ctrl+c")  # and Ctrl+C still leaves (BR-17)
        await settle(pilot)
    assert app.return_value is None and not app.is_running


async def test_a_key_textual_cannot_produce_is_a_problem_and_the_default_key_stays(fixed_db: Path) -> None:
    app = app_with(fixed_db, {"rename": "notakey!!", "copy_id": "c,ctrl+nope"})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        said = "\n".join(app.ctx.config_problems)
        assert "'notakey!!'" in said and "rename" in said
        assert "'ctrl+nope'" in said and "copy_id" in said
        await pilot.press("question_mark")
        await settle(pilot)
        rows = listed(app.screen)
        assert rows["rename"] == "r"  # its default: the bad name replaced nothing
        assert rows["copy_id"] == "c"  # the good key of the two is kept
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, RenameModal)


async def test_help_lists_a_binding_that_lost_its_key_without_that_key(fixed_db: Path) -> None:
    app = app_with(fixed_db, {"transcript_next_match": "j"})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        [conflict] = app.ctx.config_problems
        assert "Next match has no key there" in conflict
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        [transcript] = [rows for title, rows in app.screen.sections() if title == "Transcript"]
        keys = {binding_id: keys for keys, _w, binding_id in transcript}
        assert keys["transcript_next_match"] == "(no key)"
        assert "j" in keys["transcript_next_message"].split(" / ")


def test_every_key_the_app_binds_by_default_counts_as_a_key_name() -> None:
    from hermes_tui.keys import bindings_of, is_key_name, sections

    keys = {k.strip() for _t, classes in sections() for b in bindings_of(classes) for k in b.key.split(",")}
    assert {k for k in keys if not is_key_name(k)} == set()
