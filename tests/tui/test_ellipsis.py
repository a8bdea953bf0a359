"""Upstream's "..." cut marks show as the UI's one "…"."""

from __future__ import annotations

from pathlib import Path

from hermes_state import SessionDB
from hermes_tui.ellipsis import shown_preview, shown_snippet
from hermes_tui.widgets.detail import DetailPane
from hermes_tui.widgets.search import snippet_text
from hermes_tui.widgets.session_list import SessionList

from .conftest import SIZE, make_app, settle
from .test_delete_undo import plain


def test_a_cut_preview_ends_in_one_ellipsis_and_a_whole_one_is_left_alone() -> None:
    cut = "x" * 59 + "." + "..."  # upstream's 60 characters, then its mark
    assert shown_preview(cut) == "x" * 59 + ".…"
    assert shown_preview("wait...") == "wait..."  # the person's own dots


def test_a_snippets_end_marks_become_ellipses_and_its_matches_stay_on_their_words() -> None:
    text, spans = shown_snippet("...the cache hit rate...", [(7, 12)])
    assert text == "…the cache hit rate…"
    assert text[spans[0][0]:spans[0][1]] == "cache"
    line = snippet_text("...the cache hit rate...", [(7, 12)], "bold")
    assert line.plain == "…the cache hit rate…"
    assert line.plain[line.spans[0].start:line.spans[0].end] == "cache"


async def test_the_list_and_the_detail_pane_show_no_dotted_cut(fixed_db: Path) -> None:
    sid = "20261118_075959_dots01"
    db = SessionDB(fixed_db)
    try:
        db.create_session(sid, "cli")
        db.append_message(sid, "user", "Please check the release notes for the new version by today. Then ship")
    finally:
        db.close()
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        assert lst.current.id == sid and lst.current.preview.endswith("....")  # upstream's data
        row = lst.render_row(lst.current, 200).plain
        assert "today.…" in row and "...." not in row
        pane = plain(app.screen.query_one(DetailPane).build())
        assert "today.…" in pane and "...." not in pane
