"""Search results hold still while another process writes (BR-16).

A real second process commits new matching messages to the same WAL store while the browser
(watching it, as a user's does) shows the results: the explanation above the hits, the first
group header and the highlighted hit keep their screen rows and what they show; the new
matches are announced and shown when the reader takes them. Also: ↓ from the search field
moves into the hits, and Esc after acting on a hit leaves the list on its conversation.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from hermes_tui.screens.browser_window import row_key
from hermes_tui.screens.transcript import TranscriptScreen
from hermes_tui.widgets.search import SearchInput, SearchResults
from hermes_tui.widgets.session_list import SessionList

from .conftest import make_app, settle
from .test_live_reader import WORD, build_many, start_writer, wait_until

SIZE = (100, 30)
#: `zz` is a whole word until it has three letters and no message holds it: the hits are
#: those of the word before it, and a line above them says so (the explanation).
QUERY = f"{WORD} zz"


def visible(results: SearchResults) -> list[tuple]:
    """What each row on screen shows: its key (a hit's ids and snippet, a header's name and
    count) or, for a line without one, its text."""
    top, height = results.scroll_offset.y, results.scrollable_content_region.height
    return [row.key or row.text.plain for row in results._rows[top:top + height]]


def first_header(results: SearchResults) -> tuple[int, tuple]:
    """The screen row and the key of the first conversation's header."""
    index = next(i for i, row in enumerate(results._rows) if row.key and row.key[0] == "group")
    return index - results.scroll_offset.y, results._rows[index].key


def pane_title(app) -> str:
    """The search pane's title as shown (the widget gives it back as markup)."""
    return Text.from_markup(str(app.screen.switcher.border_title)).plain


def shown_sessions(results: SearchResults) -> set[str]:
    return {row.target[0] for row in results._rows if row.target}


async def search(pilot, query: str) -> SearchResults:
    await pilot.press("slash", *query)
    results = pilot.app.screen.query_one(SearchResults)
    await wait_until(pilot, lambda: results.view is not None and results.view.query == query)
    await settle(pilot)
    return results


async def test_new_matches_are_announced_while_header_explanation_and_hit_hold_still(tmp_path: Path) -> None:
    db = build_many(tmp_path / "state.db", sessions=12)
    app = make_app(db, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        results = await search(pilot, QUERY)
        explanation = results._rows[0].text.plain
        assert "Showing matches for" in explanation and results._rows[0].target is None
        await pilot.press("down", "down", "down")  # into the hits, then two hits down
        await settle(pilot)
        target, row = results.target_of_highlighted(), results.cursor - results.scroll_offset.y
        header_row, header = first_header(results)
        screen_before, offset = visible(results), results.scroll_offset.y
        title_before = pane_title(app)

        writer = start_writer(db, "sessions", WORD, 5, 0.1)
        seen: set[tuple] = set()
        while writer.poll() is None:
            await pilot.pause(0.05)
            seen.add((results.target_of_highlighted(), results.cursor - results.scroll_offset.y,
                      first_header(results), results._rows[0].text.plain))
        assert writer.returncode == 0, writer.stderr.read().decode()
        await wait_until(pilot, lambda: results.waiting == 5)
        await settle(pilot)

        # Not once did the explanation, the first header or the highlighted hit move or change.
        assert seen <= {(target, row, (header_row, header), explanation)}
        assert results.target_of_highlighted() == target
        assert results.cursor - results.scroll_offset.y == row
        assert first_header(results) == (header_row, header)
        assert results.scroll_offset.y == offset and visible(results) == screen_before
        assert not any(sid.startswith("20261118_0900") for sid in shown_sessions(results))
        # The announcement: in the pane's title, before what it searches.
        title = pane_title(app)
        assert title.startswith(" 5 new matches — press Ctrl+N to show ") and title.endswith(title_before)

        await pilot.press("ctrl+n")
        await settle(pilot)
        new = {f"20261118_0900{i:02d}_new{i:02d}" for i in range(5)}
        assert new <= shown_sessions(results)
        assert results.waiting == 0 and pane_title(app) == title_before
        # The cursor is on the first of them (newest first: the top hit).
        assert results.target_of_highlighted()[0] in new
        assert results._rows[0].text.plain == explanation


async def test_a_commit_that_brings_no_new_match_announces_nothing(tmp_path: Path) -> None:
    db = build_many(tmp_path / "state.db", sessions=12)
    app = make_app(db, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        results = await search(pilot, WORD)
        before = visible(results)
        searched: list[bool] = []
        real_finished = app.screen.search.finished

        def finished(event) -> None:
            searched.append(event.keep)
            real_finished(event)

        app.screen.search.finished = finished
        writer = start_writer(db, "sessions", "persimmon", 3, 0.05)
        writer.wait(timeout=30)
        assert writer.returncode == 0, writer.stderr.read().decode()
        await wait_until(pilot, lambda: True in searched)  # (the query was asked again)
        await settle(pilot)
        assert results.waiting == 0 and visible(results) == before
        assert "new match" not in pane_title(app)


async def test_down_from_the_search_field_focuses_the_first_hit(tmp_path: Path) -> None:
    db = build_many(tmp_path / "state.db", sessions=12)
    app = make_app(db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        results = await search(pilot, WORD)
        first = next(i for i, row in enumerate(results._rows) if row.target)
        assert app.focused is app.screen.query_one(SearchInput)
        await pilot.press("down")
        await settle(pilot)
        assert app.focused is results and results.cursor == first
        await pilot.press("down")  # and from there, ↓ moves through the hits
        await settle(pilot)
        assert results.cursor > first and results._rows[results.cursor].target
        # Tab from the field lands where ↓ does.
        app.screen.search_input.focus()
        await settle(pilot)
        await pilot.press("tab")
        await settle(pilot)
        assert app.focused is results


def test_the_help_says_down_moves_into_the_hits() -> None:
    from hermes_tui.keys import bindings_of, sections

    search_keys = dict(sections())["Search (after /)"]
    described = {b.id: b.description for b in bindings_of(search_keys)}
    assert described["next_hit"] == "Into the hits (as Tab)"
    assert described["show_new_matches"] == "New matches"


async def test_escape_after_opening_a_hit_leaves_the_list_on_its_conversation(tmp_path: Path) -> None:
    # 150 conversations (more than a page of the list: 100); the one found is among the oldest.
    db = build_many(tmp_path / "state.db", sessions=150)
    from hermes_state import SessionDB

    store = SessionDB(db)
    try:
        sid = "20261117_000500_many05"
        store.append_message(sid, "assistant", "the persimmon orchard plan")
        # Written back then, so that it stays among the oldest by last activity.
        store._execute_write(lambda c: c.execute(
            "UPDATE messages SET timestamp = (SELECT started_at FROM sessions WHERE id = ?) WHERE session_id = ?",
            (sid, sid)))
    finally:
        store.close()
    app = make_app(db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        assert lst.cursor == 0
        results = await search(pilot, "persimmon")
        await pilot.press("down", "enter")  # into the hits; open the transcript at the hit
        await wait_until(pilot, lambda: isinstance(app.screen, TranscriptScreen))
        await settle(pilot)
        await pilot.press("escape")  # back to the results
        await wait_until(pilot, lambda: app.screen.query(SearchResults))
        await settle(pilot)
        assert app.focused is results
        await pilot.press("escape")  # back to the list
        await wait_until(pilot, lambda: lst.current is not None and row_key(lst.current) == "20261117_000500_many05")
        await settle(pilot)
        assert app.focused is lst and row_key(lst.current) == "20261117_000500_many05"
        assert lst.cursor > 100  # (beyond the first page: read around it)
        top, height = lst.scroll_offset.y, lst.scrollable_content_region.height
        assert top <= lst.cursor < top + height, "the cursor is in view"


async def test_escape_after_pinning_a_hit_leaves_the_list_on_its_conversation(tmp_path: Path) -> None:
    db = build_many(tmp_path / "state.db", sessions=30)
    app = make_app(db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        results = await search(pilot, "batch 7")
        await pilot.press("down")
        await settle(pilot)
        chosen = results.conversation_of_highlighted()
        assert chosen == "20261117_000700_many07"
        await pilot.press("p")  # pin it, from the hits
        await settle(pilot)
        await pilot.press("escape")
        await wait_until(pilot, lambda: lst.current is not None and row_key(lst.current) == chosen)
        assert lst.current.pinned


async def test_escape_without_acting_on_a_hit_leaves_the_list_where_it_was(tmp_path: Path) -> None:
    db = build_many(tmp_path / "state.db", sessions=30)
    app = make_app(db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        await pilot.press("j", "j")
        await settle(pilot)
        where = row_key(lst.current)
        await search(pilot, "batch 7")
        await pilot.press("down", "escape")
        await settle(pilot)
        assert row_key(lst.current) == where


def test_snapshot_new_matches_announced_at_80x24(snap_compare, tmp_path: Path) -> None:
    """Three new matches wait above the hits shown: the pane's title says so, and how to
    show them (the footer too); the rows are those of before the commits."""
    db = build_many(tmp_path / "state.db", sessions=12)

    async def run_before(pilot) -> None:
        await settle(pilot)
        results = await search(pilot, QUERY)
        await pilot.press("down")
        writer = start_writer(db, "sessions", WORD, 3, 0.0)
        writer.wait(timeout=30)
        assert writer.returncode == 0, writer.stderr.read().decode()
        await wait_until(pilot, lambda: results.waiting == 3)
        await settle(pilot)

    app = make_app(db, watch=True)
    real_search = app.ctx.store.search

    def search_in_fixed_time(*args, **kwargs):
        view = real_search(*args, **kwargs)
        view.elapsed_ms = 0.8  # (the one figure of the pane that the machine decides)
        return view

    app.ctx.store.search = search_in_fixed_time
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


async def test_the_next_page_of_a_held_answer_repeats_no_hit_and_misses_none(tmp_path: Path) -> None:
    """New matches moved the store's pages under the answer held on screen: the page read at
    its end starts with hits it shows. None is shown twice, none is left out."""
    db = build_many(tmp_path / "state.db", sessions=60)
    app = make_app(db, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        results = await search(pilot, WORD)
        assert results.view.more and results.view.hit_count == 40
        writer = start_writer(db, "sessions", WORD, 5, 0.0)
        writer.wait(timeout=30)
        assert writer.returncode == 0, writer.stderr.read().decode()
        await wait_until(pilot, lambda: results.waiting == 5)
        await settle(pilot)
        results.focus()
        for _ in range(45):  # to the last hit: the next page loads
            await pilot.press("down")
        await wait_until(pilot, lambda: not results.loading_more and results.view.hit_count == 60)
        await settle(pilot)
        targets = [row.target for row in results._rows if row.target]
        assert len(targets) == len(set(targets)) == 60
        assert {t[0] for t in targets} == {f"20261117_{i:04d}00_many{i:02d}" for i in range(60)}
        assert results.waiting == 5, "the new matches still wait"
        assert results.view.skipped == 5, "the page started with five hits shown already"


async def test_a_remapped_key_is_the_one_the_announcement_names_and_the_one_that_shows(tmp_path: Path) -> None:
    from hermes_tui.config import AppConfig

    db = build_many(tmp_path / "state.db", sessions=12)
    config = AppConfig(animations="none", search_debounce_s=0.0, keymap={"show_new_matches": "f6"})
    app = make_app(db, watch=True, config=config)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        results = await search(pilot, WORD)
        writer = start_writer(db, "sessions", WORD, 1, 0.0)
        writer.wait(timeout=30)
        assert writer.returncode == 0, writer.stderr.read().decode()
        await wait_until(pilot, lambda: results.waiting == 1)
        assert pane_title(app).startswith(" 1 new match — press F6 to show ")
        await pilot.press("ctrl+n")  # no longer the key
        await settle(pilot)
        assert results.waiting == 1
        await pilot.press("f6")
        await wait_until(pilot, lambda: results.waiting == 0)
        assert "20261118_090000_new00" in shown_sessions(results)


async def test_escape_after_opening_a_title_match_leaves_the_list_on_its_conversation(tmp_path: Path) -> None:
    from hermes_state import SessionDB
    from hermes_tui.screens.recap import RecapScreen

    db = build_many(tmp_path / "state.db", sessions=150)
    store = SessionDB(db)
    try:
        store.set_session_title("20261117_000300_many03", "Quince orchard")
    finally:
        store.close()
    app = make_app(db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        results = await search(pilot, "quince")
        assert results.target_of_highlighted() == ("20261117_000300_many03", None)  # a title match
        await pilot.press("enter")  # its recap
        await wait_until(pilot, lambda: isinstance(app.screen, RecapScreen))
        await settle(pilot)
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen.query(SearchResults))
        await settle(pilot)
        await pilot.press("escape")
        await wait_until(pilot, lambda: lst.current is not None and row_key(lst.current) == "20261117_000300_many03")
        assert lst.cursor > 100


async def test_escape_after_opening_a_middle_segments_title_match_leaves_the_list_on_its_chain(fixed_db: Path) -> None:
    """A title match of a compression chain's segment that is neither its root nor its tip
    (the list shows the chain as one row, the tip's): Esc after acting on it puts the list on
    the chain's row, not back where it was."""
    from hermes_tui.screens.transcript import TranscriptScreen

    from .dataset import TRAVEL_ROOT as root, TRAVEL_SECOND as middle, TRAVEL_THIRD as tip, add_third_travel_segment

    add_third_travel_segment(fixed_db)
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        await pilot.press("g")
        await settle(pilot)
        assert row_key(lst.current) != root and lst.current.id != middle
        results = await search(pilot, "travel plans")
        await pilot.press("tab")
        await settle(pilot)
        titles = [summary.id for summary in results.view.title_matches]
        assert {root, middle, tip} <= set(titles)
        for _ in titles:  # `j` down the title rows to the middle segment's
            if results.target_of_highlighted() == (middle, None):
                break
            await pilot.press("j")
        await settle(pilot)
        assert results.target_of_highlighted() == (middle, None)
        await pilot.press("t")  # its transcript, from the hits
        await wait_until(pilot, lambda: isinstance(app.screen, TranscriptScreen))
        assert app.screen.session_id == middle
        await settle(pilot)
        await pilot.press("q")
        await wait_until(pilot, lambda: app.screen.query(SearchResults))
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert app.focused is lst
        assert lst.current is not None and row_key(lst.current) == root
        assert lst.current.id == tip  # (the chain's row, shown at its tip)
