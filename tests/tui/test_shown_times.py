"""Relative times move on while the browser stays open on a store nobody writes: the list's
rows and the detail pane are drawn again every ``TIME_TICK_S`` ("just now" becomes "5m ago")."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.widgets.detail import DetailPane
from hermes_tui.widgets.session_list import SessionList

from .conftest import SIZE, make_app, settle
from .dataset import NOW


def screen_text(app) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def test_shown_times_move_on_without_a_commit(fixed_db: Path, monkeypatch) -> None:
    monkeypatch.setattr(SessionList, "TIME_TICK_S", 0.1)
    monkeypatch.setattr(DetailPane, "TIME_TICK_S", 0.1)
    clock = {"now": NOW}
    app = make_app(fixed_db, clock=lambda: clock["now"])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        first = lst.row(0)
        before = screen_text(app)
        assert "16m ago" in before  # the newest conversation's last activity
        clock["now"] = NOW + 45 * 60
        await pilot.pause(0.4)
        after = screen_text(app)
        assert "16m ago" not in after and "1h ago" in after
        assert lst.row(0) == first, "nothing was read again: only drawn"
