"""The title index is rebuilt beside the searches, never in a keystroke's time.

An index that has seen commits is rebuilt once it is old (an older session renamed into a
match is then found); at 250k sessions a build reads for 0.3 s, which the title match of the
keystroke that noticed it -- and so that keystroke's answer -- used to wait for. The store
now answers from the stale index (the newest sessions read again, new ones added) and builds
the new one on a thread and connection of its own, then puts it in place.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from hermes_state import SessionDB, listing
from hermes_state.listing import ListQuery
from hermes_state.listing.title_index import TitleIndex
from hermes_tui.data import BrowserData


def test_a_stale_title_index_is_rebuilt_on_its_own_thread_and_swapped_in(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "state.db"
    writer = SessionDB(path)
    for n in range(12):
        writer.create_session(f"s{n:02d}", "cli")
        writer.set_session_title(f"s{n:02d}", f"topic {n}")
    # Only the newest session is read again after a change: the renamed old one can be found
    # through a rebuilt index only.
    monkeypatch.setattr(listing.pages, "RECENT_TITLE_WINDOW", 1)
    monkeypatch.setattr(TitleIndex, "MAX_AGE_S", 0.0)
    built_on: list[str] = []
    real_build = TitleIndex.build

    def recording_build(self, conn):
        built_on.append(threading.current_thread().name)
        return real_build(self, conn)

    monkeypatch.setattr(TitleIndex, "build", recording_build)
    store = BrowserData(path)
    try:
        # The first index too is built aside (SQL answers until it is in place).
        assert [s.id for s in store.match_sessions("topic 3", ListQuery())] == ["s03"]
        store.titles.build.result(timeout=10)
        assert built_on == ["hermes-titles-build_0"]
        first = store.titles.index
        assert first.built

        writer.set_session_title("s01", "kumquat season")
        found = [s.id for s in store.match_sessions("kumquat", ListQuery())]
        # Answered from the stale index, without waiting for a build (the rename is not in it)...
        assert found == [] and first.stale
        store.titles.build.result(timeout=10)
        # ...which was built on the builder's thread, and is in place now.
        assert built_on[1:] == ["hermes-titles-build_0"]
        assert store.titles.index is not first and not store.titles.index.stale
        assert [s.id for s in store.match_sessions("kumquat", ListQuery())] == ["s01"]
        # A second change: stale again, one build at a time, the answer still the SQL one.
        writer.set_session_title("s02", "kumquat jam")
        assert [s.id for s in store.match_sessions("kumquat", ListQuery())] == ["s01"]
        store.titles.build.result(timeout=10)
        assert [s.id for s in store.match_sessions("kumquat", ListQuery())] == ["s02", "s01"]
    finally:
        store.close()
        writer.close()


def test_an_index_without_an_owner_that_rebuilds_still_rebuilds_itself(tmp_path: Path) -> None:
    """listing.match_sessions with a plain TitleIndex (no owner to rebuild it) keeps the old
    behaviour: an old, changed index is rebuilt when refreshed."""
    path = tmp_path / "state.db"
    db = SessionDB(path)
    now = [0.0]
    index = TitleIndex(clock=lambda: now[0])
    try:
        db.create_session("a", "cli")
        db.set_session_title("a", "alpha")
        listing.refresh_title_index(db.store, index)
        db.set_session_title("a", "omega")
        now[0] += TitleIndex.MAX_AGE_S + 1
        listing.refresh_title_index(db.store, index)
        assert not index.stale and index.exact
        assert index.candidates("omega") == [db._fetchone("SELECT rowid FROM sessions WHERE id = 'a'")[0]]
    finally:
        db.close()


def test_a_search_typed_as_the_browser_opens_does_not_wait_for_the_first_index(tmp_path: Path, monkeypatch) -> None:
    """The first index reads every title (0.2 s at 250k sessions), started once the census
    has counted. A search typed before it is in place used to wait for it -- its answer,
    hits and all, took ~0.8 s at 5M messages against ~10 ms later. SQL answers the title
    match meanwhile, the same sessions."""
    path = tmp_path / "state.db"
    writer = SessionDB(path)
    for n in range(12):
        writer.create_session(f"s{n:02d}", "cli")
        writer.set_session_title(f"s{n:02d}", f"topic {n}")
        writer.append_message(f"s{n:02d}", "user", f"notes on topic number {n}")
    writer.close()
    with sqlite3.connect(path) as conn:  # (one start a second, in order)
        conn.execute("UPDATE sessions SET started_at = 1700000000 + CAST(substr(id, 2) AS INTEGER)")
    gate = threading.Event()
    real_build = TitleIndex.build

    def held_build(self, conn):
        gate.wait(10)
        return real_build(self, conn)

    monkeypatch.setattr(TitleIndex, "build", held_build)
    store = BrowserData(path)
    try:
        store.warm_titles()  # (the census's last step: the build starts, and is held)
        answered: list = []
        searching = threading.Thread(target=lambda: answered.append(store.search("topic 1", ListQuery())))
        searching.start()
        searching.join(5)
        assert answered, "the search waited for the title index"
        view = answered[0]
        assert [s.id for s in view.title_matches] == ["s11", "s10", "s01"]
        assert view.hit_count > 0
        assert not store.titles.index.built
        gate.set()
        store.titles.build.result(timeout=10)
        assert store.titles.index.built
        again = store.search("topic 1", ListQuery())
        assert [s.id for s in again.title_matches] == ["s11", "s10", "s01"]
    finally:
        gate.set()
        store.close()


def test_a_title_index_that_cannot_be_built_is_not_tried_at_every_key(tmp_path: Path, monkeypatch) -> None:
    """SQL answers the title match while no index is in place; a build that fails (the file
    unreadable for a moment, say) is tried again a while later, not at the next keystroke --
    each try reads every title (0.2 s at 250k sessions)."""
    import hermes_state.listing.title_keeper as keeper_module

    path = tmp_path / "state.db"
    writer = SessionDB(path)
    writer.create_session("s1", "cli")
    writer.set_session_title("s1", "kumquat notes")
    writer.close()
    tries: list[int] = []

    def failing_build(self, conn):
        tries.append(1)
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(TitleIndex, "build", failing_build)
    store = BrowserData(path)
    try:
        for _ in range(5):
            assert [s.id for s in store.match_sessions("kumquat", ListQuery())] == ["s1"]
            if store.titles.build is not None:
                store.titles.build.exception(timeout=10)
        assert len(tries) == 1
        monkeypatch.setattr(keeper_module, "TITLE_RETRY_S", 0.0)
        store.match_sessions("kumquat", ListQuery())
        store.titles.build.exception(timeout=10)
        assert len(tries) == 2
    finally:
        store.close()
