"""Gateway lanes in the browser (GW-13)."""

from __future__ import annotations

import os
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from hermes_state.gateway import SessionEntry, SessionSource, build_session_key, save_sessions_index
from hermes_tui.render.lanes import lane_text
from hermes_tui.widgets.detail import DetailPane
from hermes_tui.widgets.session_list import SessionList

from .conftest import SIZE, make_app, settle
from .dataset import NOW, build_fixed_db

LANE_SESSION = "20261118_060000_b2c3d4e5"


def write_lanes(home: Path, *, resume_pending: bool = True, session_id: str = LANE_SESSION) -> None:
    source = SessionSource(platform="telegram", chat_id="12345", chat_type="dm", user_name="Alice", user_id="777")
    now = datetime.fromtimestamp(NOW)
    entry = SessionEntry(
        session_key=build_session_key(source),
        session_id=session_id,
        created_at=now - timedelta(hours=2),
        updated_at=now - timedelta(hours=1),
        origin=source,
        display_name="Alice",
        platform="telegram",
        chat_type="dm",
        resume_pending=resume_pending,
        resume_reason="restart_timeout" if resume_pending else None,
        last_resume_marked_at=now - timedelta(minutes=30) if resume_pending else None,
        total_tokens=1500,
    )
    save_sessions_index(home / "sessions", {entry.session_key: entry})


@pytest.fixture
def lane_db(tmp_path: Path) -> Path:
    path = build_fixed_db(tmp_path / "state.db")
    write_lanes(tmp_path)
    return path


async def test_gw13_detail_pane_shows_lane_and_flags(lane_db: Path) -> None:
    app = make_app(lane_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("j")
        await settle(pilot)
        detail = app.screen.query_one(DetailPane)
        assert detail.summary.id == LANE_SESSION
        lane = detail.lane
        assert lane is not None
        assert lane.session_key == "agent:main:telegram:dm:12345"
        words = lane_text(lane)
        assert words.description == "DM with Alice"
        assert "resume pending" in words.flags_text and "restart_timeout" in words.flags_text
        # GW-11: a resume-pending lane keeps its session id on the next access, whatever
        # the policy says.
        assert words.next_reset_sentence == "keeps its session on next message (resume pending)"


async def test_gw13_lanes_only_filter(lane_db: Path) -> None:
    app = make_app(lane_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("L")
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        assert lst.total == 1 and lst.current.id == LANE_SESSION
        await pilot.press("L")
        await settle(pilot)
        assert lst.total == 7


async def test_gw13_lanes_update_live_when_sessions_json_changes(lane_db: Path) -> None:
    app = make_app(lane_db, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("j")
        await settle(pilot)
        detail = app.screen.query_one(DetailPane)
        assert "resume pending" in lane_text(detail.lane).flags_text
        write_lanes(lane_db.parent, resume_pending=False)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and "resume pending" in (
            lane_text(detail.lane).flags_text if detail.lane else "x"
        ):
            await pilot.pause(0.05)
        assert detail.lane is not None and "resume pending" not in lane_text(detail.lane).flags_text


def test_snapshot_detail_pane_gateway_lane_pending_resume(snap_compare, lane_db: Path) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("j")
        await settle(pilot)

    assert snap_compare(make_app(lane_db), terminal_size=SIZE, run_before=run_before)


async def test_lanes_view_is_in_the_order_its_title_names(tmp_path: Path) -> None:
    """The lanes view said "by last activity" and was by start."""
    from hermes_state import SessionDB

    path = build_fixed_db(tmp_path / "state.db")
    release = "20261118_030000_c3d4e5"  # started before LANE_SESSION, written to last
    entries = {}
    for chat, sid in (("12345", LANE_SESSION), ("67890", release)):
        source = SessionSource(platform="telegram", chat_id=chat, chat_type="dm", user_name=chat, user_id=chat)
        now = datetime.fromtimestamp(NOW)
        entries[build_session_key(source)] = SessionEntry(
            session_key=build_session_key(source), session_id=sid, created_at=now - timedelta(hours=2),
            updated_at=now - timedelta(hours=1), origin=source, display_name=chat, platform="telegram",
            chat_type="dm",
        )
    save_sessions_index(tmp_path / "sessions", entries)
    db = SessionDB(path)
    try:
        mid = db.append_message(release, "user", "one more thing")
        db._execute_write(lambda c: c.execute("UPDATE messages SET timestamp = ? WHERE id = ?", (NOW - 60, mid)))
    finally:
        db.close()
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("L")
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        assert [lst.row(i).id for i in range(lst.total)] == [release, LANE_SESSION]
        assert "by last activity" in str(app.screen.switcher.border_title)
        await pilot.press("o")  # by start elsewhere; the lanes view keeps its order and says so
        await settle(pilot)
        assert [lst.row(i).id for i in range(lst.total)] == [release, LANE_SESSION]
        assert "by last activity" in str(app.screen.switcher.border_title)
