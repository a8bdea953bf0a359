"""An older file opened read-only is read through TEMP views in its v11 shape (UC-8), and a
view has no rowid: the title match, which keeps titles by rowid, found nothing there and
failed with a TypeError at every key of the browser's search ("'NoneType' object cannot be
interpreted as an integer")."""

from __future__ import annotations

import sqlite3
import time

import pytest

from hermes_state import SessionDB, listing
from hermes_state.listing.title_index import TitleIndex
from hermes_state.listing import ListQuery


def titled(path, text: str) -> list[str]:
    """Titles holding ``text`` (ASCII case folded), newest session first, from the file."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [row[0] for row in conn.execute(
            "SELECT title FROM sessions WHERE title LIKE ? ORDER BY started_at DESC", [f"%{text}%"]
        )]
    finally:
        conn.close()


@pytest.mark.parametrize("version", [5, 9, 10])
def test_titles_are_matched_in_an_older_file_read_through_views(upstream_copy, version):
    path = upstream_copy(version)
    db = SessionDB(path, read_only=True)
    try:
        assert "sessions" in db.compat_views
        for text in ("travel", "plans #", "release", "checklist"):
            expected = titled(path, text)
            assert expected, text
            index = TitleIndex()
            with_index = listing.match_sessions(db.store, text, index=index)
            without = listing.match_sessions(db.store, text)
            assert [s.title for s in with_index] == [s.title for s in without] == expected, text
    finally:
        db.close()


def test_a_session_titled_after_the_build_is_found_in_an_older_file(upstream_copy):
    path = upstream_copy(9)
    db = SessionDB(path, read_only=True)
    try:
        index = TitleIndex()
        assert [s.title for s in listing.match_sessions(db.store, "travel", index=index)] == ["travel plans #2", "travel plans"]
        # Another process writes the old file as it is (an old gateway still running).
        writer = sqlite3.connect(path)
        writer.execute(
            "INSERT INTO sessions (id, source, started_at, title) VALUES ('later', 'cli', ?, 'travel again')",
            [time.time()],
        )
        writer.commit()
        writer.close()
        assert [s.title for s in listing.match_sessions(db.store, "travel", index=index)] == [
            "travel again", "travel plans #2", "travel plans"
        ]
    finally:
        db.close()


def test_the_browser_search_shows_title_matches_of_an_older_file(upstream_copy):
    from hermes_tui.data import BrowserData

    data = BrowserData(upstream_copy(9))
    try:
        data.warm_titles()
        for text in ("tra", "travel", "plans"):
            view = data.search(text, ListQuery())
            assert [s.title for s in view.title_matches] == ["travel plans #2", "travel plans"], text
    finally:
        data.close()


@pytest.mark.parametrize("version", [2, 9])
def test_a_reader_sees_the_new_shape_once_another_connection_migrates_the_file(upstream_copy, version):
    """A writer (the browser's own, a gateway) brings the older file to the current schema
    while a reader shows it through views of its old shape: those views would hide what the
    file holds now (a title set since read as NULL, an archived session still listed). The
    reader makes them again at its next read, for the shape the file has then."""
    path = upstream_copy(version)
    reader = SessionDB(path, read_only=True)
    try:
        assert "sessions" in reader.compat_views
        assert reader.get_session("20260102_100000_b2b2b2c3")["title"] is None
        titles_before = listing.match_sessions(reader.store, "trip", index=TitleIndex())
        assert titles_before == []
        writer = SessionDB(path)
        try:
            writer.set_session_title("20260102_100000_b2b2b2c3", "Trip notes")
            writer.set_session_archived("20260102_120000_e5e5e5e5", True)
        finally:
            writer.close()
        assert reader.get_session("20260102_100000_b2b2b2c3")["title"] == "Trip notes"
        assert reader.compat_views == []
        listed = {s.id: s for s in reader.list_summaries(ListQuery())}
        assert listed["20260102_100000_b2b2b2c3"].title == "Trip notes"
        assert "20260102_120000_e5e5e5e5" not in listed  # archived: out of the list (BR-11)
        assert [s.title for s in listing.match_sessions(reader.store, "trip", index=TitleIndex())] == ["Trip notes"]
        found = reader.search("itinerary")
        assert found.error is None and found.hits
    finally:
        reader.close()
