"""Hostile content is rendered inert and legible, and kept exact in exports.

Message text, titles, session ids, sources, models, end reasons and tool calls hold
Rich/Textual markup (``[bold]``, ``[/]``, ``[@click=app.quit]``), ANSI and OSC sequences
(OSC 52 clipboard writes included), C1 controls, bidi overrides, zero-width characters and
NUL (see :mod:`hostile`). In the list, the detail pane, search results, recap, transcript,
lineage tree and the rename/delete/export modals:

* nothing reaches the terminal that could drive it — checked on what Textual would send for
  a full repaint (:func:`helpers_env.assert_inert_screen`: no ESC/C0/C1/bidi code point in
  any segment, no hyperlink or ``app.quit`` click action, no OSC/DCS sequence in the output);
* clicking on the text and pressing keys never runs an action named by content (the app is
  still running afterwards);
* the exports (JSONL and Markdown, from the CLI and the app) keep every byte of content.

Snapshots (list, search results, recap, transcript) show the content legible, as data.
A 1 MB message and a 10,000-message session open within a few seconds.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

try:
    from .helpers_env import NOW, SIZE, assert_inert_screen, make_app, settle, terminal_output
    from .hostile import FORBIDDEN_IN_OUTPUT, HOSTILE_TEXTS, HOSTILE_TITLES, OSC52, hostile_contents
except ImportError:  # collected as a rootdir-relative module
    from helpers_env import NOW, SIZE, assert_inert_screen, make_app, settle, terminal_output
    from hostile import FORBIDDEN_IN_OUTPUT, HOSTILE_TEXTS, HOSTILE_TITLES, OSC52, hostile_contents

from hermes_state import SessionDB
from hermes_tui.screens.browser import BrowserScreen
from hermes_tui.widgets.session_list import SessionList

MINUTE = 60.0

S_MARKUP = "20261118_075000_mark01"
S_BIDI = "20261118_074000_bidi01"
S_ESCAPES = "20261118_073000_esc001"
S_C1 = "20261118_072000_c1c1c1"
S_EVIL = "evil\x1b]52;c;QUJD\x07\u202eid[@click=app.quit]"
S_CHILD = "20261118_070000_child1"

HOSTILE_TOOL_CALL = {
    "id": "call_\x1b[31m1",
    "type": "function",
    "function": {
        "name": "run\x1b[31m[@click=app.quit]x\u202e",
        "arguments": json.dumps({"cmd": "printf '\x1b]52;c;QUJD\x07' [bold]x[/]", "rtl": "\u202eabc"}),
    },
}

#: (id, source, title, minutes ago, end_reason, parent, model, messages)
SESSIONS = [
    (S_MARKUP, "cli", HOSTILE_TITLES[0], 10, None, None, "[bold]model[/] \x1b[31mred",
     [HOSTILE_TEXTS[k] for k in sorted(HOSTILE_TEXTS)] + [
         {"role": "assistant", "content": "calling a tool [@click=app.quit]", "tool_calls": [HOSTILE_TOOL_CALL]},
         {"role": "tool", "content": HOSTILE_TEXTS["osc52_clipboard"], "tool_call_id": "call_\x1b[31m1",
          "tool_name": "run\u202e"},
         {"role": "assistant", "content": "last reply: " + HOSTILE_TEXTS["markup_click"] + " "
          + HOSTILE_TEXTS["bidi_override"] + " " + OSC52},
     ]),
    (S_BIDI, "telegram", HOSTILE_TITLES[1], 20, "user_exit", None, "gpt",
     [HOSTILE_TEXTS["bidi_override"], HOSTILE_TEXTS["zero_width"], HOSTILE_TEXTS["rtl_text"],
      HOSTILE_TEXTS["combining"] + " " + HOSTILE_TEXTS["emoji_zwj"]]),
    (S_ESCAPES, "discord", HOSTILE_TITLES[2], 30, "user_exit", None, None,
     [HOSTILE_TEXTS[k] for k in ("ansi_sgr", "ansi_cursor", "osc_title", "osc_hyperlink", "dcs_sixel",
                                  "osc52_st", "carriage_return", "nul_and_friends")]),
    (S_C1, "cli", HOSTILE_TITLES[3], 40, "user_exit", None, None,
     [HOSTILE_TEXTS["c1_controls"], HOSTILE_TEXTS["tabs_newlines"], HOSTILE_TEXTS["markup_escape"]]),
    (S_EVIL, "tele\x1b[31mgram", None, 50, "user\x1b[2J\u202eexit", None, "m\x9b31m",
     ["\u202eevil id session " + OSC52, "[/] ok [@click=app.quit]quit[/]"]),
    (S_CHILD, "cli", HOSTILE_TITLES[4], 45, None, S_EVIL, None,
     hostile_contents(3, 6)),
]


def build_hostile_db(path: Path) -> Path:
    """The database of :data:`SESSIONS`, through the real write API, times pinned to NOW."""
    db = SessionDB(path)
    try:
        for sid, source, title, minutes, end_reason, parent, model, messages in SESSIONS:
            started = NOW - minutes * MINUTE
            db.create_session(sid, source, model=model, parent_session_id=parent)
            rows = []
            for index, message in enumerate(messages):
                row = dict(message) if isinstance(message, dict) else {
                    "role": "user" if index % 2 == 0 else "assistant", "content": message}
                rows.append(row)
            db.replace_messages(sid, rows)
            db._execute_write(lambda c, sid=sid, started=started: c.execute(
                "UPDATE messages SET timestamp = ? + (id - (SELECT MIN(id) FROM messages WHERE session_id = ?)) * 5 "
                "WHERE session_id = ?", (started + 5, sid, sid)))
            if title:
                db.set_session_title(sid, title)
            ended = started + 4 * MINUTE if end_reason else None
            db._execute_write(lambda c, sid=sid, started=started, ended=ended, end_reason=end_reason: c.execute(
                "UPDATE sessions SET started_at = ?, ended_at = ?, end_reason = ?, input_tokens = 900, "
                "output_tokens = 300 WHERE id = ?", (started, ended, end_reason, sid)))
    finally:
        db.close()
    return path


@pytest.fixture
def hostile_db(tmp_path: Path) -> Path:
    return build_hostile_db(tmp_path / "state.db")


def stored_contents(path: Path) -> dict[str, list[str | None]]:
    db = SessionDB(path, read_only=True)
    try:
        return {sid: [m["content"] for m in db.get_messages(sid)] for sid, *_ in SESSIONS}
    finally:
        db.close()


async def select(pilot, session_id: str) -> None:
    """Put the list cursor on ``session_id``."""
    lst = pilot.app.screen.query_one(SessionList)
    index = lst.index_of(session_id)
    assert index is not None, session_id
    lst.move_to(index)
    await settle(pilot)


def inert(app, session_id: str, where: str) -> None:
    try:
        assert_inert_screen(app)
    except AssertionError as exc:
        raise AssertionError(f"{where} of {session_id!r} ({type(app.screen).__name__}): {exc}") from None


async def back_to_browser(pilot) -> None:
    for _ in range(4):
        if isinstance(pilot.app.screen, BrowserScreen):
            return
        await pilot.press("escape")
        await settle(pilot)
    assert isinstance(pilot.app.screen, BrowserScreen)


# ---------------------------------------------------------------------------- nothing drives the terminal


async def test_hostile_every_screen_renders_inert(hostile_db: Path) -> None:
    from hermes_tui.modals.delete import ConfirmDeleteModal
    from hermes_tui.modals.export import ExportModal
    from hermes_tui.modals.rename import RenameModal
    from hermes_tui.screens.lineage import LineageScreen
    from hermes_tui.screens.recap import RecapScreen
    from hermes_tui.screens.transcript import TranscriptScreen

    app = make_app(hostile_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        assert lst.total == len(SESSIONS) - 1  # the child is shown under its parent's lineage
        for sid, *_ in SESSIONS:
            if sid == S_CHILD:
                continue
            await select(pilot, sid)
            inert(app, sid, "list")  # list + detail pane
            for key, screen_type in (("enter", RecapScreen), ("l", LineageScreen), ("r", RenameModal),
                                     ("d", ConfirmDeleteModal), ("e", ExportModal)):
                await pilot.press(key)
                await settle(pilot)
                await pilot.pause(0.05)
                assert isinstance(app.screen, screen_type), (sid, key, app.screen)
                inert(app, sid, key)
                if key == "enter":  # recap → transcript, all expanded
                    await pilot.press("t")
                    await settle(pilot)
                    assert isinstance(app.screen, TranscriptScreen)
                    inert(app, sid, "transcript")
                    await pilot.press("a")
                    await settle(pilot)
                    for page in range(3):
                        inert(app, sid, f"transcript, expanded, page {page}")
                        await pilot.press("pagedown")
                        await settle(pilot)
                await back_to_browser(pilot)
        for query in ("click", "evil", "gnp", "red", "52"):
            await pilot.press("slash")
            app.screen.query_one("#search").value = query
            await settle(pilot)
            await pilot.pause(0.05)
            await settle(pilot)
            inert(app, query, "search results")
            await pilot.press("escape")
            await settle(pilot)
        assert app.is_running and app.return_code is None


async def test_hostile_click_markup_in_content_does_nothing(hostile_db: Path) -> None:
    """Click every cell of every line showing ``@click`` text, on each screen; press Enter
    and the letters of ``app.quit`` too. The app is still running, nothing was renamed."""
    app = make_app(hostile_db)

    async def click_all_click_text() -> int:
        """Click each ``[@click=…]…[/]`` shown on screen: its start, its link text, its end."""
        clicks = 0
        lines = terminal_output(app, plain=True).split("\n")
        for y, line in enumerate(lines):
            start = line.find("[@click")
            while start != -1 and clicks < 24:
                close = line.find("]", start)
                end = line.find("[/]", start)
                end = len(line) if end == -1 else end + 3
                for x in sorted({start, start + 2, close + 1, end - 1}):
                    if 0 <= x < SIZE[0] - 1:
                        await pilot.click(offset=(x, y))
                        clicks += 1
                        if not isinstance(app.screen, screen_before):
                            await back_to(screen_before)
                start = line.find("[@click", end)
        return clicks

    async def back_to(screen_type) -> None:
        for _ in range(4):
            if isinstance(app.screen, screen_type):
                return
            await pilot.press("escape")
            await settle(pilot)

    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        total = 0
        screen_before = BrowserScreen
        await select(pilot, S_EVIL)
        total += await click_all_click_text()
        assert app.is_running and app.return_code is None
        await select(pilot, S_MARKUP)
        app.push_screen(app.ctx.screens.recap(S_MARKUP))
        await settle(pilot)
        from hermes_tui.screens.recap import RecapScreen
        from hermes_tui.screens.transcript import TranscriptScreen

        screen_before = RecapScreen
        total += await click_all_click_text()
        assert app.is_running and app.return_code is None
        await back_to(BrowserScreen)
        app.push_screen(app.ctx.screens.transcript(S_MARKUP))
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        screen_before = TranscriptScreen
        for _ in range(2):
            total += await click_all_click_text()
            await pilot.press("pagedown")
            await settle(pilot)
        assert total >= 20, total
        assert app.is_running and app.return_code is None
        await back_to(BrowserScreen)
        await pilot.press("slash", *"app.quit", "down", "enter")
        await settle(pilot)
        assert app.is_running and app.return_code is None
    db = SessionDB(hostile_db, read_only=True)
    try:
        assert {db.get_session_title(sid) for sid, *_ in SESSIONS} == {
            SessionDB.sanitize_title(t) for *_x, t, _m, _e, _p, _mo, _msgs in
            [(s[0], s[2], s[3], s[4], s[5], s[6], s[7]) for s in SESSIONS]}
    finally:
        db.close()


def test_hostile_recap_text_has_no_control_or_bidi_code_point() -> None:
    """The recap renderer itself (hermes_tui.render.recap) makes every dangerous code point inert."""
    from hermes_state.recap import RecapConfig, build_recap
    from hermes_tui.render.recap import render_recap_text

    names = sorted(HOSTILE_TEXTS)
    seen = ""
    for start in range(0, len(names), 4):  # every text once in the recap window
        window = names[start:start + 4]
        conversation = [{"role": "user" if i % 2 == 0 else "assistant", "content": HOSTILE_TEXTS[name]}
                        for i, name in enumerate(window)]
        text = render_recap_text(build_recap(conversation, RecapConfig()), width=100).plain
        for char in FORBIDDEN_IN_OUTPUT:
            assert char not in text, (window, repr(char))
        seen += text
    assert "[@click=app.quit]" in seen and "[bold]" in seen  # legible, as data
    assert "evil\ufffdgnp.exe" in seen and "\u241b]52;c;" in seen  # ␛, as on every screen


# ---------------------------------------------------------------------------- exports keep every byte


def _jsonl_sessions(path: Path) -> dict[str, dict]:
    # Split on "\n" only: str.splitlines() would also split at U+0085/U+2028 inside strings.
    lines = path.read_text(encoding="utf-8").split("\n")
    return {obj["id"]: obj for obj in map(json.loads, filter(None, lines))}


def test_hostile_cli_exports_keep_content_byte_exact(hostile_db: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    from hermes_tui.cli import main

    monkeypatch.setenv("HERMES_HOME", str(hostile_db.parent))
    out_jsonl, out_md = tmp_path / "all.jsonl", tmp_path / "all.md"
    assert main(["sessions", "export", str(out_jsonl)]) == 0
    assert main(["sessions", "export", str(out_md), "--format", "md"]) == 0
    capsys.readouterr()
    expected = stored_contents(hostile_db)
    exported = _jsonl_sessions(out_jsonl)
    assert set(exported) == set(expected)
    for sid, contents in expected.items():
        assert [m["content"] for m in exported[sid]["messages"]] == contents
    assert exported[S_EVIL]["source"] == "tele\x1b[31mgram"
    assert exported[S_EVIL]["end_reason"] == "user\x1b[2J\u202eexit"
    assert exported[S_MARKUP]["messages"][-3]["tool_calls"] == [HOSTILE_TOOL_CALL]
    markdown = out_md.read_bytes().decode("utf-8")  # (read_text would turn \r into \n)
    for contents in expected.values():
        for content in contents:
            assert content in markdown, repr(content[:60])
    # JSONL escapes control characters: the file itself cannot drive a terminal when shown.
    assert "\x1b" not in out_jsonl.read_text(encoding="utf-8").replace("\\u001b", "")


async def test_hostile_app_export_keeps_content_byte_exact(hostile_db: Path, tmp_path: Path) -> None:
    from hermes_tui.config import AppConfig
    from hermes_tui.modals.export import ExportModal

    target = tmp_path / "exports" / "hostile.jsonl"
    target.parent.mkdir()
    config = AppConfig(animations="none", search_debounce_s=0.0, export_dir=str(target.parent))
    app = make_app(hostile_db, config=config)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, S_MARKUP)
        await pilot.press("e")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, ExportModal)
        modal.query_one("#export-path").value = str(target)
        await pilot.press("ctrl+s")
        for _ in range(300):
            if not isinstance(app.screen, ExportModal):
                break
            await pilot.pause(0.02)
        await settle(pilot)
        assert app.is_running
    exported = _jsonl_sessions(target)
    assert list(exported) == [S_MARKUP]
    assert [m["content"] for m in exported[S_MARKUP]["messages"]] == stored_contents(hostile_db)[S_MARKUP]
    assert exported[S_MARKUP]["title"] == SessionDB.sanitize_title(HOSTILE_TITLES[0])


# ---------------------------------------------------------------------------- snapshots


def test_snapshot_hostile_list(hostile_db: Path, snap_compare) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await select(pilot, S_EVIL)

    assert snap_compare(make_app(hostile_db), terminal_size=SIZE, run_before=run_before)


def test_snapshot_hostile_search_results(hostile_db: Path, snap_compare) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("slash")
        pilot.app.screen.query_one("#search").value = "click"
        await settle(pilot)
        await pilot.pause(0.05)
        await settle(pilot)

    app = make_app(hostile_db)
    real_search = app.ctx.store.search

    def search(*args, **kwargs):  # the one non-deterministic figure: latency
        view = real_search(*args, **kwargs)
        view.elapsed_ms = 0.8
        return view

    app.ctx.store.search = search
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_hostile_recap(hostile_db: Path, snap_compare) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.push_screen(pilot.app.ctx.screens.recap(S_MARKUP))
        await settle(pilot)

    assert snap_compare(make_app(hostile_db), terminal_size=(120, 40), run_before=run_before)


def test_snapshot_hostile_transcript(hostile_db: Path, snap_compare) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.push_screen(pilot.app.ctx.screens.transcript(S_MARKUP))
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)

    assert snap_compare(make_app(hostile_db), terminal_size=(120, 40), run_before=run_before)


# ---------------------------------------------------------------------------- size does not collapse

BIG = "20261118_060000_big001"
MANY = "20261118_050000_many01"


@pytest.fixture
def big_db(tmp_path: Path) -> Path:
    """A 1 MB single-line hostile message, a 1 MB multi-line reply, and 10,000 messages."""
    path = tmp_path / "state.db"
    db = SessionDB(path)
    try:
        unit = "".join(HOSTILE_TEXTS[k] for k in sorted(HOSTILE_TEXTS)).replace("\n", " ")
        one_line = (unit * (1_048_576 // len(unit) + 1))[:1_048_576]
        lines = "\n".join((unit[:200] + f" line {i}") for i in range(5000))
        db.create_session(BIG, "cli")
        db.replace_messages(BIG, [{"role": "user", "content": one_line},
                                  {"role": "assistant", "content": lines[:1_048_576]}])
        db.create_session(MANY, "cli")
        contents = hostile_contents(11, 10_000)
        db.replace_messages(MANY, [{"role": "user" if i % 2 == 0 else "assistant",
                                    "content": f"#{i} {c}"} for i, c in enumerate(contents)])
        for sid, minutes in ((BIG, 60), (MANY, 120)):
            started = NOW - minutes * MINUTE
            db._execute_write(lambda c, sid=sid, started=started: (
                c.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (started, sid)),
                c.execute("UPDATE messages SET timestamp = ? + id * 0.001 WHERE session_id = ?", (started, sid))))
    finally:
        db.close()
    return path


async def _open_and_time(pilot, opener, screen_type) -> float:
    app = pilot.app
    start = time.perf_counter()
    opener()
    await settle(pilot, timeout=30)
    took = time.perf_counter() - start
    assert isinstance(app.screen, screen_type)
    return took


@pytest.mark.parametrize("session_id", [BIG, MANY])
async def test_hostile_huge_sessions_open_and_show_every_entry(big_db: Path, session_id: str) -> None:
    """A 5 MB message and a 10,000-message session open in the recap and the transcript,
    expand, scroll to the end and are searched, inert throughout. How long each step took is
    printed (``pytest -s``), not bounded: a bound fails on a loaded machine while nothing is
    wrong (a size that collapses shows as a run that never settles)."""
    from hermes_tui.screens.recap import RecapScreen
    from hermes_tui.screens.transcript import TranscriptScreen
    from hermes_tui.widgets.transcript_view import TranscriptView

    app = make_app(big_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert_inert_screen(app)
        took_recap = await _open_and_time(pilot, lambda: app.push_screen(app.ctx.screens.recap(session_id)), RecapScreen)
        assert_inert_screen(app)
        await pilot.press("escape")
        await settle(pilot)
        took_transcript = await _open_and_time(pilot, lambda: app.push_screen(app.ctx.screens.transcript(session_id)), TranscriptScreen)
        assert_inert_screen(app)
        view = app.screen.query_one(TranscriptView)
        start = time.perf_counter()
        await pilot.press("a")  # expand everything
        await settle(pilot)
        await pilot.press("end")
        await settle(pilot)
        took_expand = time.perf_counter() - start
        assert_inert_screen(app)
        assert view.entries is not None
        assert len(view.entries) == (2 if session_id == BIG else 10_000)
        await pilot.press("escape")
        await settle(pilot)
        start = time.perf_counter()
        await pilot.press("slash")
        app.screen.query_one("#search").value = "line 4999" if session_id == BIG else "#9999"
        await settle(pilot)
        await pilot.pause(0.05)
        await settle(pilot)
        took_search = time.perf_counter() - start
        assert_inert_screen(app)
    timings = {"recap": took_recap, "transcript": took_transcript, "expand+end": took_expand, "search": took_search}
    print(f"{session_id}: " + ", ".join(f"{k} {v:.2f} s" for k, v in timings.items()), file=sys.stderr)
