"""Search result rows a person can read: a tool call's JSON shown as
``⚙ name(args)``, and a conversation's header keeping its source and hit count."""

from __future__ import annotations

import json
from pathlib import Path

from hermes_state import SessionDB
from hermes_tui.widgets.search import SearchResults

from .conftest import make_app, settle


def screen_text(app) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def test_a_tool_call_hit_reads_as_name_and_arguments_not_json(fixed_db: Path) -> None:
    sid = "20261118_075500_tools1"
    calls = [{"id": "call_9", "type": "function",
              "function": {"name": "terminal", "arguments": json.dumps({"command": "zypper refresh"})}}]
    db = SessionDB(fixed_db)
    try:
        db.create_session(sid, "cli")
        db.append_message(sid, "user", "refresh the repositories")
        db.append_message(sid, "assistant", "On it.", tool_calls=calls)
    finally:
        db.close()
    app = make_app(fixed_db)
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(pilot)
        await pilot.press("/", *"zypper")
        await settle(pilot)
        results = app.screen.query_one(SearchResults)
        assert any(hit.session_id == sid for group in results.view.groups for hit in group.hits)
        shown = screen_text(app)
        line = next(line for line in shown.splitlines() if "zypper" in line and "▊" not in line)
        assert '⚙ terminal({"command": "zypper refresh"})' in line
        assert '"arguments"' not in shown and '"type": "function"' not in shown


async def test_a_long_conversation_name_leaves_its_source_and_hit_count_in_view(fixed_db: Path) -> None:
    sid = "20261118_075600_long01"
    db = SessionDB(fixed_db)
    try:
        db.create_session(sid, "telegram")
        db.set_session_title(sid, "A very long conversation title about the quarterly inventory of every xylophone")
        db.append_message(sid, "user", "count the xylophone stock")
    finally:
        db.close()
    app = make_app(fixed_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("/", *"xylophone")
        await settle(pilot)
        shown = screen_text(app)
        header = next(line for line in shown.splitlines() if "▌ A very long" in line)
        assert "telegram · 1 hit" in header and "…" in header
