"""Resume recap screen (RC-1 … RC-9, LI-8, BR-7)."""

from __future__ import annotations

import io
from datetime import datetime, timedelta
from pathlib import Path

from rich.console import Console

from hermes_state import SessionDB
from hermes_state.gateway import SessionEntry, SessionSource, build_session_key, save_sessions_index
from hermes_state.recap import RecapConfig
from hermes_tui.config import AppConfig
from hermes_tui.screens.browser import BrowserScreen
from hermes_tui.screens.lineage import LineageScreen
from hermes_tui.screens.recap import RecapScreen
from hermes_tui.screens.transcript import TranscriptScreen
from hermes_tui.widgets.recap_view import RecapView, SessionHeader
from hermes_tui.widgets.session_list import SessionList

from .conftest import SIZE, make_app, settle
from .dataset import HOUR, NOW

DOCKER = "20261118_074000_a1b2c3"
TRAVEL_ROOT = "20261117_090000_d4e5f6a7"
TRAVEL_TIP = "20261117_100000_e5f6a7b8"
LONG = "20261118_050000_long01"


def rendered(widget, width: int = 116) -> str:
    """What a Static shows, as plain text at ``width`` columns."""
    console = Console(width=width, file=io.StringIO(), color_system=None, legacy_windows=False)
    console.print(widget.content)
    return console.file.getvalue()


def _call(name: str, call_id: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def long_conversation() -> list[tuple]:
    """15 exchanges (30 recap entries → 10 skipped) exercising every RC-3/RC-4 rule."""
    out: list[tuple] = []
    for i in range(1, 16):
        out.append(("user", f"Question {i}: how do I tune the cache?"))
        out.append(("assistant", f"Answer {i}: set the size."))
    # Exchange 11: a user message over 300 characters (RC-3 truncation).
    out[20] = ("user", "Question 11: " + "very long prompt " * 30)
    # Exchange 12: an answer over 3 lines (RC-4: first 3 lines and " ...").
    out[23] = ("assistant", "Answer 12 line one\nline two\nline three\nline four\nline five")
    # Exchange 13: tool calls (RC-4 summary) with a tool result in between (RC-2: skipped).
    out[25] = ("assistant", "Answer 13: checking.",
               [_call("terminal", "c1"), _call("web_search", "c2"), _call("terminal", "c3")])
    out.insert(26, ("tool", "cache stats: 98% hit rate", None, "terminal", "c1"))
    # Exchange 14: reasoning in the content is stripped (RC-5).
    out[28] = ("assistant", "<think>the user wants numbers</think>Answer 14: 512 MB is enough.")
    # The last reply is shown in full, every line (RC-7).
    out[-1] = ("assistant", "Final answer:\n1. raise the size to 512 MB\n2. set ttl to 600 s\n"
                            "3. enable compression\n4. restart the service\n5. watch the hit rate")
    return out


def add_long_session(path: Path) -> None:
    db = SessionDB(path)
    try:
        db.create_session(LONG, "cli", model="gpt-5")
        started = NOW - 3 * HOUR
        for index, message in enumerate(long_conversation()):
            role, content = message[0], message[1]
            mid = db.append_message(
                LONG, role, content,
                tool_calls=message[2] if len(message) > 2 else None,
                tool_name=message[3] if len(message) > 3 else None,
                tool_call_id=message[4] if len(message) > 4 else None,
            )
            db._execute_write(lambda c, mid=mid, stamp=started + 60 * (index + 1): c.execute(
                "UPDATE messages SET timestamp = ? WHERE id = ?", (stamp, mid)))
        db.set_session_title(LONG, "cache tuning")
        db._execute_write(lambda c: c.execute(
            "UPDATE sessions SET started_at = ?, input_tokens = 52000, output_tokens = 7100 WHERE id = ?",
            (started, LONG)))
    finally:
        db.close()


async def open_recap(pilot, session_id: str) -> RecapScreen:
    pilot.app.push_screen(pilot.app.ctx.screens.recap(session_id))
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, RecapScreen)
    return screen


async def test_br3_enter_on_list_opens_recap_with_header(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RecapScreen) and screen.session_id == DOCKER
        header = rendered(screen.query_one(SessionHeader))
        for expected in ("Docker deploy pipeline", DOCKER, "cli", "claude-sonnet-4",
                         "2026-11-18 07:40 (20m ago)", "2026-11-18 07:44 (16m ago)",
                         "4  (1 tool call)", "1,200 in / 340 out", "#1 of 1", "live"):
            assert expected in header, expected
        card = rendered(screen.query_one(RecapView))
        assert "Previous Conversation" in card
        assert "● You: Help me fix the docker-compose deploy" in card
        assert "◆ Hermes: Let me look at the compose file first. [1 tool call: read_file]" in card
        assert "services:" not in card  # the tool result is skipped (RC-2)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, BrowserScreen)


async def test_header_fields_one_pair_a_line_when_two_pairs_would_fold(fixed_db: Path) -> None:
    """At 80 columns the two pairs of columns folded a model id and the root id mid-word;
    then the fields go one to a line, in the same order."""
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        header_widget = (await open_recap(pilot, TRAVEL_TIP)).query_one(SessionHeader)
        model = header_widget.data.summary.model
        wide = rendered(header_widget).splitlines()
        assert any(line.startswith("id ") and " source " in line for line in wide)  # side by side
        narrow = rendered(header_widget, width=60).splitlines()
        labels = [line.split()[0] for line in narrow[1:] if line.strip()]
        assert labels == ["id", "source", "started", "model", "active", "status", "messages", "tokens", "lineage"]
        assert any(line.split()[1:] == [model] for line in narrow if line.startswith("model"))
        assert any(line.rstrip().endswith(f"(root {TRAVEL_ROOT})") for line in narrow)


async def test_rc1_lineage_position_of_compression_segments(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tip = await open_recap(pilot, TRAVEL_TIP)
        header = rendered(tip.query_one(SessionHeader))
        assert "#2 of 2" in header and f"root {TRAVEL_ROOT}" in header
        # RC-1: the tip's own conversation (what the resumed agent has), not the root's.
        card = rendered(tip.query_one(RecapView))
        assert "Nara" in card and "Kyoto" not in card
        await pilot.press("escape")
        await settle(pilot)
        root = await open_recap(pilot, TRAVEL_ROOT)
        header = rendered(root.query_one(SessionHeader))
        assert "#1 of 2" in header
        assert f"continues after compression in {TRAVEL_TIP}" in " ".join(header.split())


async def test_rc6_rc7_window_truncation_and_last_reply_in_full(fixed_db: Path) -> None:
    add_long_session(fixed_db)
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_recap(pilot, LONG)
        view = screen.query_one(RecapView)
        assert view.recap is not None and view.recap.skipped == 10
        assert len(view.recap.entries) == 20
        lines = rendered(view, width=400).splitlines()  # wide enough that nothing wraps
        body = [line[2:].rstrip().removesuffix("│").rstrip() for line in lines[1:-1]]  # inside the borders
        assert body[0] == "  ... 10 earlier messages ..." and body[1] == ""
        assert body[2] == "  ● You: Question 6: how do I tune the cache?"
        text = "\n".join(body)
        assert "Question 5:" not in text  # cut by the window
        long_user = next(line for line in body if "Question 11:" in line)
        assert long_user.endswith("...") and len(long_user) == len("  ● You: ") + 300 + 3
        assert ("  ◆ Hermes: Answer 12 line one\n            line two\n            line three ..."
                in text)
        assert "line four" not in text
        assert "  ◆ Hermes: Answer 13: checking. [3 tool calls: terminal, web_search]" in text
        assert "98% hit rate" not in text
        assert "  ◆ Hermes: Answer 14: 512 MB is enough." in text and "<think>" not in text
        assert text.endswith(
            "  ◆ Hermes: Final answer:\n            1. raise the size to 512 MB\n"
            "            2. set ttl to 600 s\n            3. enable compression\n"
            "            4. restart the service\n            5. watch the hit rate"
        )


async def test_rc9_minimal_mode_shows_the_last_exchange_alone(fixed_db: Path) -> None:
    """Upstream's minimal resume prints no recap; a browser screen with no conversation at all
    left nothing to go on before Enter: minimal is the last exchange."""
    add_long_session(fixed_db)
    config = AppConfig(animations="none", recap=RecapConfig(mode="minimal"))
    app = make_app(fixed_db, config=config)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_recap(pilot, LONG)
        view = screen.query_one(RecapView)
        assert view.display is True and view.recap is not None
        assert [e.kind for e in view.recap.entries] == ["user", "assistant_last"]
        card = rendered(view)
        assert "Question 15" in card and "Final answer" in card and "Question 14" not in card
        await pilot.press("enter")
        await settle(pilot)
    assert app.return_value == LONG


async def test_recap_calls_an_ended_tip_the_last_segment_not_the_live_tip(fixed_db: Path) -> None:
    db = SessionDB(fixed_db)
    db.end_session(TRAVEL_TIP, "user_exit")
    db.close()
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        root = await open_recap(pilot, TRAVEL_ROOT)
        header = " ".join(rendered(root.query_one(SessionHeader)).split())
        assert f"continues after compression in {TRAVEL_TIP} (its last segment, ended)" in header
        assert "live tip" not in header


async def test_rc9_no_history_no_panel(fixed_db: Path) -> None:
    db = SessionDB(fixed_db)
    db.create_session("20261118_075900_empty1", "cli")
    db.close()
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_recap(pilot, "20261118_075900_empty1")
        view = screen.query_one(RecapView)
        assert view.recap is None
        card = rendered(view)
        assert "Previous Conversation" not in card and "nothing to recap" in card


async def test_li8_empty_compression_head_shows_and_resumes_its_child(fixed_db: Path) -> None:
    head, child = "20261118_070000_head01", "20261118_070500_kid001"
    db = SessionDB(fixed_db)
    db.create_session(head, "cli")
    db.end_session(head, "compression")
    db.create_session(child, "cli", parent_session_id=head)
    db.append_message(child, "user", "the transcript lives in the child")
    db.close()
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_recap(pilot, head)
        assert screen.data.target_id == child
        header = " ".join(rendered(screen.query_one(SessionHeader)).split())
        assert f"{head} has no messages; showing {child}" in header
        assert "the transcript lives in the child" in rendered(screen.query_one(RecapView))
        await pilot.press("enter")
        await settle(pilot)
    assert app.return_value == child


async def test_br7_enter_on_recap_resumes_and_returns_the_id(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        await pilot.press("j", "j")
        await settle(pilot)
        chosen = lst.current.id
        await pilot.press("enter")  # list → recap
        await settle(pilot)
        assert isinstance(app.screen, RecapScreen)
        await pilot.press("enter")  # recap → resume
        await settle(pilot)
    assert app.return_value == chosen == "20261118_030000_c3d4e5"


async def test_enter_on_a_recap_still_loading_resumes_once_it_is_loaded(fixed_db: Path) -> None:
    """Enter, Enter typed at once: the second came while the recap was still loading and was
    dropped ("Still loading…"), leaving the person on the recap (and a script driving a
    terminal waiting for ever). It now resumes once the recap is loaded."""
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        await pilot.press("j", "j")
        await settle(pilot)
        chosen = lst.current.id
        recap = app.ctx.screens.recap(chosen)
        app.push_screen(recap)
        assert recap.data is None
        recap.action_resume()  # (a key typed before its load came back)
        await settle(pilot)
    assert app.return_value == chosen == "20261118_030000_c3d4e5"


async def test_recap_t_opens_transcript_and_l_lineage(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_recap(pilot, TRAVEL_TIP)
        await pilot.press("t")
        await settle(pilot)
        assert isinstance(app.screen, TranscriptScreen) and app.screen.session_id == TRAVEL_TIP
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen
        await pilot.press("l")
        await settle(pilot)
        assert isinstance(app.screen, LineageScreen) and app.screen.session_id == TRAVEL_TIP


async def test_rc8_message_text_is_data_not_markup(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_recap(pilot, "20261113_080000_c9d0e1")
        card = rendered(screen.query_one(RecapView))
        assert "[bold]not markup[/bold] and [@click=app.quit]click[/] stay text" in card
        assert app.is_running


HOSTILE = "20261118_075000_ctl001"
HOSTILE_TEXT = "\x1b]0;PWNED\x07 title and \x1b[31mred\x1b[0m nul:\x00after DEL:\x7f CR:a\rb"


async def test_recap_shows_stored_controls_as_the_symbols_every_other_view_shows(fixed_db: Path) -> None:
    """A control character in a message reads the same in the recap as in the transcript,
    the list and the detail pane (``␛ ␇ ␀ ␡``, hermes_state.inert_text), not in caret notation
    (``^[``, ``^G``), which reads like text someone typed."""
    from hermes_tui.textsafe import inert_block

    db = SessionDB(fixed_db)
    try:
        db.create_session(HOSTILE, "cli", model="gpt-5")
        db.append_message(HOSTILE, "user", HOSTILE_TEXT)
        db.append_message(HOSTILE, "assistant", "Noted: " + HOSTILE_TEXT)
    finally:
        db.close()
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_recap(pilot, HOSTILE)
        card = rendered(screen.query_one(RecapView), width=200)
        shown = "␛]0;PWNED␇ title and ␛[31mred␛[0m nul:␀after DEL:␡ CR:a b"
        assert shown == inert_block(HOSTILE_TEXT)  # the one table, as the transcript draws it
        assert f"● You: {shown}" in card
        assert f"◆ Hermes: Noted: {shown}" in card
        for caret in ("^[", "^G", "^@", "^?", "^M"):
            assert caret not in card, caret
        for char in "\x1b\x07\x00\x7f\r":
            assert char not in card


async def test_recap_header_shows_gateway_lane(fixed_db: Path) -> None:
    lane_session = "20261118_060000_b2c3d4e5"
    source = SessionSource(platform="telegram", chat_id="12345", chat_type="dm", user_name="Alice", user_id="777")
    now = datetime.fromtimestamp(NOW)
    entry = SessionEntry(
        session_key=build_session_key(source), session_id=lane_session,
        created_at=now - timedelta(hours=2), updated_at=now - timedelta(hours=1), origin=source,
        display_name="Alice", platform="telegram", chat_type="dm", total_tokens=1500,
    )
    save_sessions_index(fixed_db.parent / "sessions", {entry.session_key: entry})
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_recap(pilot, lane_session)
        header = rendered(screen.query_one(SessionHeader))
        assert "gateway lane" in header and "agent:main:telegram:dm:12345" in header
        assert "DM with Alice" in header


async def test_recap_of_missing_session_explains_and_does_not_resume(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_recap(pilot, "no_such_session")
        assert "no longer exists" in rendered(screen.query_one(SessionHeader))
        await pilot.press("enter")
        await settle(pilot)
        assert app.is_running and app.screen is screen


def test_snapshot_recap_truncation_and_earlier_messages(fixed_db: Path, snap_compare) -> None:
    add_long_session(fixed_db)

    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.push_screen(pilot.app.ctx.screens.recap(LONG))
        await settle(pilot)

    assert snap_compare(make_app(fixed_db), terminal_size=(120, 44), run_before=run_before)
