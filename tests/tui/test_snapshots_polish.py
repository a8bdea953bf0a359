"""Snapshots of the screens whose text was cut or broken, at 80×24 and 160×45: nothing cut mid-word,
nothing scrolled out of a dialog, code as a block, tool calls as name(args), CJK filled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_state.recap import RecapConfig
from hermes_tui.config import AppConfig

from .conftest import make_app, settle
from .dataset import HOUR, NOW, build_fixed_db

SIZES = {"80x24": (80, 24), "160x45": (160, 45)}
TIP = "20261117_100000_e5f6a7b8"
EXTRA = "20261118_075800_polish"


@pytest.fixture
def polish_db(tmp_path: Path) -> Path:
    """The fixed data, plus one conversation with a long name, a deep cwd, fenced code, a
    tool call and a CJK answer."""
    path = build_fixed_db(tmp_path / "state.db")
    db = SessionDB(path)
    try:
        db.create_session(EXTRA, "telegram")
        db.set_session_title(EXTRA, "Quarterly xylophone inventory and the warehouse move")
        db._execute_write(lambda c: c.execute(
            "UPDATE sessions SET cwd = ? WHERE id = ?", ("/srv/work/projects/hermes-sessions/src/deep", EXTRA)))
        db.append_message(EXTRA, "user", "how many xylophone cases are left? 请检查一下仓库的库存")
        calls = [{"id": "call_1", "type": "function",
                  "function": {"name": "terminal", "arguments": json.dumps({"command": "grep xylophone stock.csv"})}}]
        db.append_message(EXTRA, "assistant", "Checking the xylophone stock.", tool_calls=calls)
        db.append_message(EXTRA, "tool", "xylophone,12", tool_name="terminal", tool_call_id="call_1")
        db.append_message(EXTRA, "assistant",
                          "好的 我现在就去检查一下仓库的库存然后告诉你结果，一共还有十二箱木琴，请稍等片刻。\n\n"
                          "```python\nrows = [r for r in stock if r.item == 'xylophone']\nprint(len(rows))\n```\n\n"
                          "That prints 12.")
        # Times from the frozen clock: the snapshots never depend on when they are taken.
        started = NOW - 2 * HOUR
        db._execute_write(lambda c: c.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (started, EXTRA)))
        db._execute_write(lambda c: c.execute(
            "UPDATE messages SET timestamp = ? + 60 * (id - (SELECT MIN(id) FROM messages WHERE session_id = ?))"
            " WHERE session_id = ?", (started, EXTRA, EXTRA)))
    finally:
        db.close()
    return path


def _app(path: Path, **config):
    app = make_app(path, config=AppConfig(animations="none", search_debounce_s=0.0, **config))
    real_search = app.ctx.store.search

    def search(*args, **kwargs):
        view = real_search(*args, **kwargs)
        view.elapsed_ms = 0.8  # (the one figure of the machine)
        return view

    app.ctx.store.search = search
    return app


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_list_status_line_and_title(snap_compare, polish_db: Path, size: str) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)

    assert snap_compare(_app(polish_db), terminal_size=SIZES[size], run_before=run_before)


def test_snapshot_80x24_detail_shown_title_fits_and_cwd_breaks_at_slashes(snap_compare, polish_db: Path) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("i")
        await settle(pilot)

    assert snap_compare(_app(polish_db), terminal_size=SIZES["80x24"], run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_lineage_rows_cut_with_an_ellipsis(snap_compare, polish_db: Path, size: str) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.push_screen(pilot.app.ctx.screens.lineage(TIP))
        await settle(pilot)

    assert snap_compare(_app(polish_db), terminal_size=SIZES[size], run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_export_dialog_whole(snap_compare, polish_db: Path, size: str) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)

    assert snap_compare(_app(polish_db), terminal_size=SIZES[size], run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_source_picker_rows_whole(snap_compare, polish_db: Path, size: str) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)

    assert snap_compare(_app(polish_db), terminal_size=SIZES[size], run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_search_tool_call_and_group_header(snap_compare, polish_db: Path, size: str) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("/", *"xylophone")
        await settle(pilot)

    assert snap_compare(_app(polish_db), terminal_size=SIZES[size], run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_transcript_code_block(snap_compare, polish_db: Path, size: str) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.push_screen(pilot.app.ctx.screens.transcript(EXTRA))
        await settle(pilot)
        await pilot.press("G")
        await settle(pilot)

    assert snap_compare(_app(polish_db), terminal_size=SIZES[size], run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_recap_cjk_fills_its_rows(snap_compare, polish_db: Path, size: str) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.push_screen(pilot.app.ctx.screens.recap(EXTRA))
        await settle(pilot)

    assert snap_compare(_app(polish_db), terminal_size=SIZES[size], run_before=run_before)


def test_snapshot_80x24_minimal_recap_is_the_last_exchange(snap_compare, polish_db: Path) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.push_screen(pilot.app.ctx.screens.recap(EXTRA))
        await settle(pilot)

    app = _app(polish_db, recap=RecapConfig(mode="minimal"))
    assert snap_compare(app, terminal_size=SIZES["80x24"], run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_help_with_a_keymap_problem(snap_compare, polish_db: Path, size: str, monkeypatch) -> None:
    monkeypatch.setenv("HERMES_SESSIONS_CONFIG_DIR", "/home/you/.config/hermes-sessions")

    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.clear_notifications()  # (the toast's; what stays is the help's and the status line's)
        await pilot.press("question_mark")
        await settle(pilot)

    assert snap_compare(_app(polish_db, keymap={"copy_id": "d"}), terminal_size=SIZES[size], run_before=run_before)
