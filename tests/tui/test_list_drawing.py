"""The session list draws a row again only when something it shows changed.

Each live refresh (a gateway commits several times a second) and each step of a scroll
redraws every line of the list; drawn from scratch a line cost ~0.3 ms (11 ms for 41 lines
of the main thread). Rows are kept as drawn, by all their drawing depends on: these tests
check that every such change is drawn, and that an unchanged row is not drawn again."""

from __future__ import annotations

from pathlib import Path

from textual.geometry import Region

from hermes_tui.config import AppConfig
from hermes_tui.widgets.session_list import SessionList

from .conftest import SIZE, make_app, settle
from .dataset import NOW


def drawn(lst: SessionList) -> list[str]:
    return [strip.text for strip in lst.render_lines(Region(0, 0, lst.size.width, lst.size.height))]


def styles(lst: SessionList) -> list:
    return [
        [segment.style for segment in strip]
        for strip in lst.render_lines(Region(0, 0, lst.size.width, lst.size.height))
    ]


async def test_an_unchanged_row_is_not_drawn_again(fixed_db: Path, monkeypatch) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        first, first_styles = drawn(lst), styles(lst)
        calls: list[str] = []
        original = SessionList.render_row

        def counting(self, row, *args, **kwargs):
            calls.append(row.id)
            return original(self, row, *args, **kwargs)

        monkeypatch.setattr(SessionList, "render_row", counting)
        lst._styles_cache.clear()  # as a refresh does: every line asked for again
        assert drawn(lst) == first
        assert calls == []
        # Moving the cursor draws the two rows it leaves and reaches, no other.
        await pilot.press("down")
        await settle(pilot)
        assert set(calls) == {lst.row(0).id, lst.row(1).id}
        after = styles(lst)
        assert after[2:] == first_styles[2:] and after[:2] != first_styles[:2]


async def test_what_a_row_shows_is_drawn_when_it_changes(fixed_db: Path) -> None:
    clock = {"now": NOW}
    app = make_app(fixed_db, clock=lambda: clock["now"])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        before = drawn(lst)
        # The time shown moves on with the clock.
        clock["now"] = NOW + 3 * 86400
        lst._styles_cache.clear()
        later = drawn(lst)
        assert later != before
        # The theme's colours are drawn when it changes: as an app started in that theme
        # draws them.
        app.theme = "textual-light"
        await settle(pilot)
        switched = styles(lst)
        fresh = make_app(fixed_db, clock=lambda: clock["now"], config=AppConfig(
            animations="none", search_debounce_s=0.0, theme="textual-light"))
        async with fresh.run_test(size=SIZE) as other:
            await settle(other)
            assert fresh.theme == "textual-light"
            assert styles(fresh.screen.query_one(SessionList)) == switched
        # A mark shows on its row.
        await pilot.press("space")
        await settle(pilot)
        marked = drawn(lst)
        assert marked[0].startswith("✓") and not later[0].startswith("✓")
        # The order's time column (start instead of last activity) is drawn too.
        await pilot.press("o")
        await settle(pilot)
        assert drawn(lst) != marked
