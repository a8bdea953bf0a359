"""A conversation with many hits shows its best few in the search pane, then one row for the
rest: a common word's 84 hits of one conversation filled the pane, and the next conversation
(maybe the one looked for) was 84 rows down. The row stands for the next hit: Enter opens the
conversation there, and the transcript steps through every match."""

from __future__ import annotations

from pathlib import Path

from hermes_state import SessionDB
from hermes_tui.screens.transcript import TranscriptScreen
from hermes_tui.widgets.search import SearchResults

from .conftest import SIZE, make_app, settle
from .dataset import HOUR, NOW
from .test_live_reader import wait_until
from .test_transcript import add_messages


def build(path: Path, *, hits: int = 20, others: int = 3) -> None:
    """One conversation of ``hits`` messages holding "quince", then ``others`` older ones of one."""
    SessionDB(path).close()
    add_messages(path, "20261118_080000_chatty", [
        dict(role="user" if n % 2 == 0 else "assistant", content=f"the quince jam batch {n} set well")
        for n in range(hits)
    ], title="Quince jam all season", started=NOW - 2 * HOUR)
    for n in range(others):
        add_messages(path, f"20261118_07000{n}_brief{n}", [
            dict(role="user", content=f"a quince from the market, number {n}"),
            dict(role="assistant", content="noted"),
        ], title=f"Market {n}", started=NOW - (3 + n) * HOUR)


def hit_rows(results: SearchResults) -> list[int]:
    return [i for i, row in enumerate(results._rows) if row.target]


async def test_a_conversation_of_many_hits_shows_three_and_a_row_for_the_rest(tmp_path: Path) -> None:
    build(tmp_path / "state.db")
    app = make_app(tmp_path / "state.db")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"quince")
        results = app.screen.query_one(SearchResults)
        await wait_until(pilot, lambda: results.view is not None and results.view.query == "quince")
        await settle(pilot)
        chatty = next(g for g in results.view.groups if g.root_id == "20261118_080000_chatty")
        assert len(chatty.hits) == 20
        lines = [row.text.plain for row in results._rows]
        header = next(i for i, line in enumerate(lines) if line.startswith(" ▌ ") and "Quince jam all season" in line)
        assert "20 hits" in lines[header]
        shown = [row.target for row in results._rows[header + 1:header + 4]]
        assert shown == [(hit.session_id, hit.id) for hit in chatty.hits[:3]]
        fold = results._rows[header + 4]
        assert "17 more hits in this conversation" in fold.text.plain
        assert fold.target == (chatty.hits[3].session_id, chatty.hits[3].id)
        # Every other conversation is in view with its hit, not 17 rows further down.
        height = results.scrollable_content_region.height
        for n in range(3):
            at = next(i for i, line in enumerate(lines) if line.startswith(" ▌ ") and f"Market {n}" in line)
            assert at < height, lines
        # j steps onto the row for the rest, then on to the next conversation.
        await pilot.press("tab")
        await settle(pilot)
        while results.cursor < header + 4:
            await pilot.press("j")
            await settle(pilot)
        assert results.cursor == header + 4
        assert results.target_of_highlighted() == fold.target
        await pilot.press("j")
        await settle(pilot)
        assert results.cursor == next(i for i in hit_rows(results) if i > header + 4)
        assert results.target_of_highlighted()[0] != "20261118_080000_chatty"
        # Enter on the row opens the conversation at its next hit.
        await pilot.press("k")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TranscriptScreen)
        assert screen.session_id == "20261118_080000_chatty"
        assert screen.message_id == chatty.hits[3].id
        assert screen.view.current.id == chatty.hits[3].id


async def test_a_conversation_of_four_hits_shows_them_all(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    SessionDB(path).close()
    add_messages(path, "20261118_080000_four", [
        dict(role="user", content=f"quince number {n}") for n in range(4)
    ], title="Four quinces", started=NOW - HOUR)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"quince")
        results = app.screen.query_one(SearchResults)
        await wait_until(pilot, lambda: results.view is not None and results.view.query == "quince")
        await settle(pilot)
        assert len([i for i in hit_rows(results) if results._rows[i].target[1] is not None]) == 4
        assert not any("more hit" in row.text.plain for row in results._rows)


async def test_a_page_that_is_one_conversation_is_followed_by_the_next_until_the_pane_is_full(tmp_path: Path) -> None:
    """A page is 40 hits; when they are one conversation's, folded into five rows, the pane
    reads the next pages by itself (a moment after the answer stands) until it is full."""
    path = tmp_path / "state.db"
    build(path, hits=60, others=6)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"quince")
        results = app.screen.query_one(SearchResults)
        await wait_until(pilot, lambda: results.view is not None and results.view.query == "quince")
        await wait_until(pilot, lambda: not results.view.more)
        await settle(pilot)
        lines = [row.text.plain for row in results._rows]
        assert "57 more hits in this conversation" in "\n".join(lines)
        for n in range(6):
            assert any(line.startswith(" ▌ ") and f"Market {n}" in line for line in lines), lines
