"""Search-as-you-type on a file written by an older upstream (schema 2 to 10), which the
browser reads without migrating it (UC-8): through TEMP views in the v11 shape (no rowids)
and, before schema 10, without a trigram table. Each key used to raise a TypeError in the
title match (a toast per key) and every CJK word failed with "no such table"."""

from __future__ import annotations

import hashlib

import pytest

from hermes_tui.widgets.search import SearchResults

from .conftest import SIZE, make_app, settle


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("version", [2, 9, 10])
async def test_typing_in_an_older_file_finds_words_substrings_and_titles(upstream_copy, version):
    path = upstream_copy(version)
    before = digest(path)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        results = app.screen.query_one(SearchResults)
        seen = {}
        for query in ("数据库", "travel", "release not"):
            await pilot.press("/", "ctrl+u", *query)
            await settle(pilot)
            view = results.view
            assert view.query == query
            seen[query] = view
        problems = [n.message for n in app._notifications if "rror" in n.message or "failed" in n.message]
        assert problems == []
        hits = [hit for group in seen["数据库"].groups for hit in group.hits]
        assert hits and all("数据库" in hit.snippet for hit in hits)
        assert seen["数据库"].path == ("trigram" if version >= 10 else "like")
        release = [hit for group in seen["release not"].groups for hit in group.hits]
        assert release and all("release note" in hit.snippet.lower() for hit in release)
        titles = [s.title for s in seen["travel"].title_matches]
        assert titles == ([] if version == 2 else ["travel plans #2", "travel plans"])
    assert digest(path) == before


async def test_a_title_set_in_the_browser_on_an_older_file_is_shown(upstream_copy):
    """Renaming writes through the browser's writer, which brings the file to the current
    schema; the list and the title match, reading through views of the old shape, showed
    the session untitled until the browser was started again."""
    from hermes_tui.widgets.session_list import SessionList
    from textual.widgets import Input

    path = upstream_copy(2)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        target = next(i for i in range(lst.total) if lst.row(i) and lst.row(i).id == "20260102_113000_d4d4d4")
        lst.move_to(target)
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        app.screen.query_one("#rename-input", Input).value = "Trip notes"
        await pilot.press("enter")
        await settle(pilot)
        assert lst.current.id == "20260102_113000_d4d4d4" and lst.current.title == "Trip notes"
        await pilot.press("/", *"trip")
        await settle(pilot)
        view = app.screen.query_one(SearchResults).view
        assert [s.title for s in view.title_matches] == ["Trip notes"]
