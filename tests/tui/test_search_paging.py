"""BR-20: the search pane pages past the first screenful and says when an answer is empty."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_tui.widgets.detail import DetailPane
from hermes_tui.widgets.search import SearchResults

from .conftest import SIZE, make_app, settle
from .test_live_reader import WORD, build_many, wait_until


def pane_text(results: SearchResults) -> str:
    return "\n".join(row.text.plain for row in results._rows)


async def test_br20_scrolling_past_the_last_hit_loads_the_next_page(tmp_path: Path) -> None:
    db = build_many(tmp_path / "state.db", sessions=120)
    app = make_app(db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", *WORD)
        await settle(pilot)
        results = app.screen.query_one(SearchResults)
        first = results.view.hit_count
        assert first == 40 and results.view.more
        assert "more hits load as you move down" in pane_text(results)
        subtitle = str(app.screen.query_one("#main").border_subtitle)
        assert "40 hits" in subtitle
        targets_before = [row.target for row in results._rows if row.target]
        for _ in range(first + 5):
            results.action_cursor_down()
            await pilot.pause()
        await settle(pilot)
        await wait_until(pilot, lambda: results.view.hit_count > first)
        # The first page is kept as it was, the next one follows it; the count in the title grows.
        targets_after = [row.target for row in results._rows if row.target]
        assert targets_after[: len(targets_before)] == targets_before
        assert len(set(targets_after)) == len(targets_after)
        assert f"{results.view.hit_count} hits" in str(app.screen.query_one("#main").border_subtitle)


async def test_br20_an_empty_answer_says_so_in_the_pane_and_clears_the_detail(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.screen.query_one(DetailPane).summary is not None
        await pilot.press("/", *"zqxjkvbw")
        await settle(pilot)
        results = app.screen.query_one(SearchResults)
        assert "No message, title or id matches “zqxjkvbw”" in pane_text(results)
        assert app.screen.query_one(DetailPane).summary is None


async def test_br20_an_empty_answer_to_a_short_last_word_says_why_on_its_own_line(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("/", *"zq")
        await settle(pilot)
        results = app.screen.query_one(SearchResults)
        lines = [row.text.plain for row in results._rows]
        assert lines[0].strip() == "No message, title or id matches “zq”"
        # The reason has a line of its own, whole at 80 columns.
        assert lines[1].strip() == "“zq” counts as a whole word until it has 3 letters: keep typing"
        assert len(lines[1]) < results.size.width


async def test_a_word_being_typed_after_another_never_empties_the_pane(tmp_path: Path) -> None:
    """`kumquat h`, `kumquat ha`: no message has the word `h` or `ha`, and the pane keeps the
    hits of `kumquat` (saying so above them) until `har` makes the word a prefix."""
    path = build_many(tmp_path / "state.db", sessions=6)
    db = SessionDB(path)
    try:
        titled = db.search_sessions(limit=1)[0]["id"]
        db.set_session_title(titled, f"{WORD} half-way review")
    finally:
        db.close()
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", *WORD)
        await settle(pilot)
        results = app.screen.query_one(SearchResults)
        assert results.view.hit_count == 6
        for typed in (("space", "h"), ("a",), ("r",), ("v",)):
            await pilot.press(*typed)
            await settle(pilot)
            assert results.view.hit_count == 6, typed
            assert "No message" not in pane_text(results), typed
        assert "is a whole word" not in pane_text(results)  # `harv` is a prefix: its own answer
        await pilot.press("backspace", "backspace")
        await settle(pilot)
        assert results.view.hit_count == 6
        # The title match is the whole query's (`ha` a prefix of `half-way`); what the message
        # hits are is said on a line of its own just above them (not in the subtitle, which a
        # narrow pane cuts), and the cursor is on the first title match.
        lines = [row.text.plain.strip() for row in results._rows]
        assert lines[0] == "▌ Sessions by title or id" and lines[1].startswith(f"{WORD} half-way review")
        assert lines[2] == f"Showing matches for “{WORD}”: “ha” is a whole word until it has 3 letters"
        assert results._rows[2].target is None and results._rows[3].target is None  # (a conversation)
        assert results._rows[4].target is not None and results.cursor == 1
        assert "is a whole word" not in str(app.screen.query_one("#main").border_subtitle)


@pytest.mark.parametrize("query", ["***", '""', '"  " ()'])
async def test_br20_a_query_with_nothing_searchable_gives_the_reason(fixed_db: Path, query: str) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", *query)
        await settle(pilot)
        text = pane_text(app.screen.query_one(SearchResults))
        assert f"No message, title or id matches “{query}”" in text and "nothing searchable" in text


async def test_br20_br16_a_commit_keeps_the_pages_already_loaded(tmp_path: Path) -> None:
    from .test_live_reader import start_writer

    db = build_many(tmp_path / "state.db", sessions=120)
    app = make_app(db, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", *WORD)
        await settle(pilot)
        results = app.screen.query_one(SearchResults)
        for _ in range(45):
            results.action_cursor_down()
            await pilot.pause()
        await wait_until(pilot, lambda: results.view.hit_count > 40)
        await settle(pilot)
        target = results.target_of_highlighted()
        shown = results.view.hit_count
        writer = start_writer(db, "sessions", "fig", 2, 0.1)  # commits that do not match
        writer.wait(timeout=30)
        await pilot.pause(1.0)
        await settle(pilot)
        assert results.view.hit_count >= shown  # the second page was not dropped
        assert results.target_of_highlighted() == target
