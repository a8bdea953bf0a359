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


async def test_every_screen_counts_minutes_as_its_stamp_reads(fixed_db: Path) -> None:
    """A message at 07:38:50 seen at 07:40:10: the stamp says 07:38 and the clock 07:40, so
    every pane says "2m ago" (the exact 80 s made the list say "1m ago" beside a stamp two
    minutes back: a minute apart between screens)."""
    from hermes_state import SessionDB
    from hermes_tui.widgets.recap_view import SessionHeader
    from .test_recap_screen import open_recap, rendered

    now = NOW + 10  # NOW is on the minute
    sid = "20261123_073850_minute"
    db = SessionDB(fixed_db)
    try:
        db.create_session(sid, "cli")
        mid = db.append_message(sid, "user", "what time is it")
        db._execute_write(lambda c: c.execute("UPDATE messages SET timestamp = ? WHERE id = ?", (NOW - 70, mid)))
        db._execute_write(lambda c: c.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (NOW - 70, sid)))
    finally:
        db.close()
    app = make_app(fixed_db, clock=lambda: now)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        assert lst.current.id == sid
        shown = screen_text(app)
        row = next(line for line in shown.splitlines() if "what time is it" in line)
        assert "2m ago" in row and "1m ago" not in shown
        assert "(2m ago)" in shown  # the detail pane's stamp and its relative form
        recap = await open_recap(pilot, sid)
        header = rendered(recap.query_one(SessionHeader))
        assert "(2m ago)" in header and "1m ago" not in header
