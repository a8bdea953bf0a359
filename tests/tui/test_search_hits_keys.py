"""The list's moving keys move the cursor in the search hits too (README: `g`/`G`,
`PgUp`/`PgDn`, Home/End): the highlighted hit goes where the key says, the view follows
it, the detail pane shows its conversation, and reaching the last hit read loads the next
page as moving down with `j` does (BR-20)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_tui.widgets.detail import DetailPane
from hermes_tui.widgets.search import SearchResults

from .conftest import SIZE, make_app, settle
from .test_live_reader import WORD, build_many, wait_until


def hit_rows(results: SearchResults) -> list[int]:
    return [i for i, row in enumerate(results._rows) if row.target]


def assert_followed(app, results: SearchResults) -> None:
    """The cursor is on a hit in view, and the detail pane shows that hit's session."""
    top, height = results.scroll_offset.y, results.scrollable_content_region.height
    assert results.cursor in hit_rows(results)
    assert top <= results.cursor < top + height, "the highlighted hit is in view"
    detail = app.screen.query_one(DetailPane).summary
    assert detail is not None and detail.id == results.target_of_highlighted()[0]


async def into_hits(pilot) -> SearchResults:
    """`/kumquat`, Tab into the hits and `j` to the second: 120 sessions hit, a page of 40 read."""
    await pilot.press("slash", *WORD)
    results = pilot.app.screen.query_one(SearchResults)
    await wait_until(pilot, lambda: results.view is not None and results.view.query == WORD)
    await settle(pilot)
    await pilot.press("tab", "j")
    await settle(pilot)
    assert pilot.app.focused is results
    assert results.view.hit_count == 40 and results.view.more
    assert results.cursor == hit_rows(results)[1]
    return results


@pytest.mark.parametrize("key", ["G", "end"])
async def test_last_key_moves_to_the_last_hit_read_and_loads_the_next_page(tmp_path: Path, key: str) -> None:
    app = make_app(build_many(tmp_path / "state.db", sessions=120))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        results = await into_hits(pilot)
        last = hit_rows(results)[-1]
        target = results._rows[last].target
        await pilot.press(key)
        await wait_until(pilot, lambda: results.view.hit_count > 40)
        await settle(pilot)
        # On the last hit of the first page, the next page appended below it.
        assert results.cursor == last and results.target_of_highlighted() == target
        assert hit_rows(results)[-1] > last
        assert_followed(app, results)
        await pilot.press("j")  # and on from there, into the page just read
        await settle(pilot)
        assert results.cursor == next(i for i in hit_rows(results) if i > last)


@pytest.mark.parametrize("key", ["g", "home"])
async def test_first_key_moves_to_the_first_hit_with_the_pane_scrolled_to_its_top(tmp_path: Path, key: str) -> None:
    app = make_app(build_many(tmp_path / "state.db", sessions=120))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        results = await into_hits(pilot)
        for _ in range(30):
            await pilot.press("j")
        await settle(pilot)
        assert results.scroll_offset.y > 0
        await pilot.press(key)
        await settle(pilot)
        assert results.cursor == hit_rows(results)[0]
        assert results.scroll_offset.y == 0, "the header above the first hit is in view"
        assert_followed(app, results)


async def test_page_keys_move_the_cursor_a_page_and_the_view_with_it(tmp_path: Path) -> None:
    app = make_app(build_many(tmp_path / "state.db", sessions=120))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        results = await into_hits(pilot)
        height = results.scrollable_content_region.height
        start = results.cursor
        await pilot.press("pagedown")
        await settle(pilot)
        down = results.cursor
        assert down - start >= height - 1, "a page down, onto a hit"
        assert results.scroll_offset.y > 0
        assert_followed(app, results)
        await pilot.press("pageup")
        await settle(pilot)
        assert results.cursor < down and down - results.cursor >= height - 2
        assert_followed(app, results)


async def test_page_down_at_the_last_hit_read_loads_the_next_page(tmp_path: Path) -> None:
    app = make_app(build_many(tmp_path / "state.db", sessions=120))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        results = await into_hits(pilot)
        for _ in range(4):  # (a page is ~25 rows; the first page of hits, 81)
            await pilot.press("pagedown")
            await settle(pilot)
        await wait_until(pilot, lambda: results.view.hit_count > 40)
        await settle(pilot)
        assert_followed(app, results)
