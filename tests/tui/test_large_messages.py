"""Very large messages and very long queries.

A 50 MB message made the transcript's find climb to 1.8 GB and ignore Esc for 20 s: every
display line of the message was built as a styled Text, on the event loop. 105,000 characters
typed into the search field (keys, no bracketed paste) took 2.3 GB. Here: a message of many
thousand lines is drawn a line at a time (never all its lines at once), its find runs in a
worker that Esc stops, and a query field keeps at most MAX_QUERY_CHARS characters and says so.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_tui.screens.transcript import TranscriptScreen
from hermes_tui.widgets.bounded_input import LIMIT_MESSAGE, MAX_QUERY_CHARS
from hermes_tui.widgets.search import SearchInput
from hermes_tui.widgets.transcript_lines import LAZY_LINES
from hermes_tui.widgets.transcript_view import TranscriptView

from .conftest import SIZE, make_app, settle

LINES = 20_000
NEEDLE_LINE = 15_000
SID = "big-session"


@pytest.fixture(scope="module")
def big_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("big") / "state.db"
    db = SessionDB(path)
    db.create_session(SID, "cli")
    db.append_message(SID, "user", "summarise this log please")
    lines = [f"line {i} kernel socket timeout retry disk" for i in range(LINES)]
    lines[NEEDLE_LINE] += " needleword"
    db.append_message(SID, "assistant", "\n".join(lines))
    db.append_message(SID, "user", "thanks")
    db.close()
    return path


def screen_text(view: TranscriptView) -> str:
    return "\n".join("".join(segment.text for segment in view.render_line(y)) for y in range(view.size.height))


async def open_transcript(pilot) -> TranscriptScreen:
    pilot.app.push_screen(pilot.app.ctx.screens.transcript(SID))
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, TranscriptScreen) and screen.loaded
    return screen


async def test_find_in_a_message_of_thousands_of_lines_goes_to_its_match_drawing_only_lines_on_screen(
    big_db: Path, monkeypatch,
) -> None:
    built_whole: list[int] = []
    real = TranscriptView.block_lines

    def block_lines(view, index):
        built_whole.append(index)
        return real(view, index)

    monkeypatch.setattr(TranscriptView, "block_lines", block_lines)
    app = make_app(big_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_transcript(pilot)
        view = screen.view
        assert view.is_large(1) and view.block_range(1)[1] > LAZY_LINES
        screen.find("needleword")
        await settle(pilot)
        assert view.cursor == 1
        assert "needleword" in screen_text(view)
        assert f"line {NEEDLE_LINE} " in screen_text(view)
        assert 1 not in built_whole  # the large message was never built whole
        # Moving on through it draws its lines as they come on screen.
        top = view.scroll_offset.y
        await pilot.press("pagedown")
        await pilot.pause()
        assert view.scroll_offset.y > top
        assert f"line {NEEDLE_LINE + 30} " in screen_text(view)
        assert 1 not in built_whole


async def test_esc_while_a_find_runs_stops_it_and_stays_in_the_transcript(big_db: Path, monkeypatch) -> None:
    import hermes_tui.screens.transcript as transcript_module

    real = transcript_module.match_flags
    searching, release = threading.Event(), threading.Event()

    def held(entry, pattern, cancelled=lambda: False):
        # The real search, once the test lets it go on: Esc is pressed while it is under way.
        searching.set()
        release.wait(30)
        return real(entry, pattern, cancelled)

    monkeypatch.setattr(transcript_module, "match_flags", held)
    app = make_app(big_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_transcript(pilot)
        try:
            screen.find("needleword")
            await pilot.pause()
            assert searching.wait(10)
            assert screen.finding
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen is screen  # Esc stopped the search; it did not leave
            assert not screen.finding
            assert "Search stopped." in [n.message for n in app._notifications]
        finally:
            release.set()
        await settle(pilot)
        assert app.screen is screen
        assert screen.view.match_indices == []  # the stopped search's answer was dropped
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is not screen


async def test_a_query_longer_than_the_limit_is_cut_there_and_said_once(big_db: Path) -> None:
    app = make_app(big_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        field = app.screen.query_one(SearchInput)
        field.focus()
        await pilot.pause()
        # As a terminal without bracketed paste sends a long paste: one key a character.
        await pilot.press(*("a" * 40))
        field.insert_text_at_cursor("b" * (MAX_QUERY_CHARS * 3))
        await pilot.press(*("c" * 30))
        await settle(pilot)
        assert len(field.value) == MAX_QUERY_CHARS
        assert field.value == "a" * 40 + "b" * (MAX_QUERY_CHARS - 40)
        told = [n.message for n in app._notifications if n.message == LIMIT_MESSAGE]
        assert len(told) == 1
