"""A store whose rows hold values of the wrong type (SQLite does not enforce column types: a
store edited by hand or written by another tool) still opens whole: every conversation listed,
its transcript, lineage and search hits shown -- an odd value is mended where it is read, never
the reason a list stays empty."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hermes_state import SessionDB, listing
from hermes_state.visibility import INTERNAL_SOURCES
from hermes_state.listing import ListQuery
from hermes_tui.screens.lineage import LineageScreen
from hermes_tui.screens.transcript import TranscriptScreen

from .conftest import SIZE, make_app, settle

ODD = "20260921_140000_r1"  # its title a number; messages: text not UTF-8, a blob, a timestamp text
TEXT_START = "20260921_163000_cr"  # started_at 'soon'
TEXT_COUNT = "20260921_090000_s1"  # message_count 'many'


def make_odd(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE sessions SET title = 42 WHERE id = ?", (ODD,))
        conn.execute("UPDATE sessions SET started_at = 'soon' WHERE id = ?", (TEXT_START,))
        conn.execute("UPDATE sessions SET message_count = 'many' WHERE id = ?", (TEXT_COUNT,))
        ids = [r[0] for r in conn.execute(
            "SELECT id FROM messages WHERE session_id = ? AND active = 1 ORDER BY id", (ODD,))]
        conn.execute("UPDATE messages SET content = content || X'FF' WHERE id = ?", (ids[0],))  # not UTF-8
        conn.execute("UPDATE messages SET content = X'00FF41' WHERE id = ?", (ids[1],))
        conn.execute("UPDATE messages SET timestamp = 'later' WHERE id = ?", (ids[2],))
    conn.close()


async def test_a_store_with_odd_values_lists_and_opens_every_conversation(upstream_copy) -> None:
    path = upstream_copy(30)
    SessionDB(path).close()  # as the app opens it
    make_odd(path)
    reader = SessionDB(path, read_only=True)
    try:
        expected = [r["id"] for r in reader.list_sessions_rich(
            limit=100, exclude_sources=list(INTERNAL_SOURCES), order_by_last_active=True)]
        summaries, count = listing.page(reader.store, ListQuery.from_options(exclude_sources=list(INTERNAL_SOURCES), by_activity=True), 0, 100)
    finally:
        reader.close()
    assert {ODD, TEXT_START, TEXT_COUNT} <= set(expected)
    assert [s.id for s in summaries] == expected and count == len(expected)
    typed = {s.id: s for s in summaries}
    assert typed[ODD].title == "42" and typed[TEXT_START].started_at == 0.0 and typed[TEXT_COUNT].message_count == 0
    assert typed[ODD].preview.endswith("\ufffd")

    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.session_list
        assert [lst.row(i).id for i in range(lst.total)] == expected
        assert not [n.message for n in app._notifications if "Error" in n.message]

        lst.cursor = expected.index(ODD)
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TranscriptScreen) and screen.session_id == ODD
        texts = [line.plain for index in range(len(screen.view.entries)) for line in screen.view.block_lines(index)]
        assert any("␀\ufffdA" in text for text in texts), "the blob shown as text, its NUL made visible"
        assert any(text.endswith("(turn 0)\ufffd") for text in texts), "the invalid byte shown as U+FFFD"
        assert any("?" in text and "#" in text for text in texts), "the text timestamp shown as unknown"
        await pilot.press("escape")
        await settle(pilot)

        await pilot.press("l")
        await settle(pilot)
        assert isinstance(app.screen, LineageScreen)
        await pilot.press("escape")
        await settle(pilot)

        await pilot.press("slash", *"kubernetes")
        await settle(pilot)
        targets = {row.target[0] for row in app.screen.results._rows if row.target}
        assert ODD in targets, "the hit whose timestamp is text is listed"
        assert not [n.message for n in app._notifications if "Error" in n.message]
