"""A phrase of common words that the keystroke's bounded walk finds few of (`"config file"` at
5M messages: 2 of its 21 matches within the walk, the rest behind ~50 ms more): the pane shows
those at once and reads the older matches by itself, with no key pressed, so every match is
listed -- whether or not typing pauses long enough for the ranking by conversation."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_state.search.tuning import TUNING
from hermes_tui.config import AppConfig

from .conftest import make_app, settle
from .test_search_ranked_exactly import wait_for


def build(path: Path) -> list[int]:
    """Many messages holding "config" or "file", six of them "config file" (one in each of six
    conversations, oldest to newest); the ids of those six."""
    db = SessionDB(path)
    phrase_ids = []
    try:
        for n in range(60):
            sid = f"20261117_{n:06d}_chat"
            db.create_session(sid, "cli")
            for k in range(10):
                word = "config" if k % 2 else "file"
                db.append_message(sid, "user", f"note {n}.{k}: the {word} was checked by hand")
            if n % 10 == 3:
                phrase_ids.append(db.append_message(sid, "assistant", f"the config file of chat {n} was wrong"))
            db.end_session(sid, "user_exit")
    finally:
        db.close()
    return phrase_ids


async def typed_until_whole(pilot, query: str):
    """Type ``query`` into the search field and wait until the pane's answer has no more to
    read, no key pressed meanwhile: the results pane and the later pages it appended."""
    await settle(pilot)
    results = pilot.app.screen.results
    pages = []
    append = results.append
    results.append = lambda view: (pages.append(view), append(view))[1]
    await pilot.press("slash", *query)
    assert await wait_for(pilot, lambda: results.view is not None and results.view.query == query
                          and not results.view.more)
    await settle(pilot)
    return results, pages


@pytest.fixture
def bounded_walk(monkeypatch):
    """The 5M store's shape with this store's sizes: the walk a keystroke may make over the
    words' doclists ends above most of the phrase's matches."""
    monkeypatch.setattr(TUNING, "PHRASE_WALK_ENTRIES", 250)  # (the newest ~200 messages)


@pytest.mark.parametrize("pause", [0.0, 0.3])
async def test_a_phrase_the_bounded_walk_finds_few_of_is_listed_whole_without_a_key(tmp_path, bounded_walk, pause):
    path = tmp_path / "state.db"
    every = build(path)
    config = AppConfig(animations="none", search_debounce_s=0.0)
    config.search.exact_after_s = pause  # (0: typing never "pauses" -- the pane alone reads on)
    app = make_app(path, config=config)
    async with app.run_test(size=(100, 40)) as pilot:
        results, pages = await typed_until_whole(pilot, '"config file"')
        if not pause:
            # (typing never paused: the older matches came as a page the pane asked for)
            assert pages and pages[0].offset > 0 and pages[0].hit_count
        shown = {hit.id for group in results.view.groups for hit in group.hits}
        assert shown == set(every)
        lines = "\n".join(row.text.plain for row in results._rows)
        assert lines.count("config file of chat") == len(every)


def test_a_refresh_drops_a_gone_hit_of_a_short_page_and_keeps_the_older_hits_shown(tmp_path, bounded_walk):
    """After a commit the pane asks again and holds its rows still (BR-16): a shown hit the
    fresh answer lacks stays when that answer was cut at its limit -- it may merely rank past
    it. A short page is not such a cut above its oldest hit: it holds every match from there
    up, so a hit deleted there goes; the older hits shown (the next page's) stay."""
    from hermes_state.listing import ListQuery
    from hermes_tui.data import BrowserData
    from hermes_tui.search_hold import hold_still

    path = tmp_path / "state.db"
    every = build(path)
    door = BrowserData(path)
    try:
        first = door.search('"config file"', ListQuery(), limit=40)
        assert first.short_page and first.more and 0 < first.hit_count < len(every)
        shown = first.merged(door.search('"config file"', ListQuery(), limit=40, offset=first.next_offset))
        assert {hit.id for group in shown.groups for hit in group.hits} == set(every)
        gone = max(every)  # (the newest: above the bounded walk's floor)
        db = SessionDB(path)
        try:
            db._execute_write(lambda conn: conn.execute("DELETE FROM messages WHERE id = ?", (gone,)))
        finally:
            db.close()
        door.forget_search_answers()
        fresh = door.search('"config file"', ListQuery(), limit=shown.hit_count)
        held = hold_still(shown, fresh)
        kept = {hit.id for group in held.steady.groups for hit in group.hits}
        assert kept == set(every) - {gone}
    finally:
        door.close()


def build_profiles(root: Path) -> dict[str, set[tuple[str, int]]]:
    """A Hermes root whose default store has the bounded walk's shape (:func:`build`) beside a
    small profile holding the phrase in three conversations: each profile's phrase matches
    as the pane qualifies them, ``(profile:session, message id)``."""
    every = {"default": {("default:" + sid, mid) for sid, mid in _sessions_of(root / "state.db", build(root / "state.db"))}}
    other = root / "profiles" / "work" / "state.db"
    other.parent.mkdir(parents=True)
    db = SessionDB(other)
    try:
        found = set()
        for n in range(3):
            sid = f"20261118_{n:06d}_work"
            db.create_session(sid, "cli")
            db.append_message(sid, "user", f"work note {n}: the file and the config")
            found.add((f"work:{sid}", db.append_message(sid, "assistant", f"the config file of work {n} is fine")))
            db.end_session(sid, "user_exit")
    finally:
        db.close()
    every["work"] = found
    return every


def _sessions_of(path: Path, ids: list[int]) -> list[tuple[str, int]]:
    with sqlite3.connect(path) as conn:
        return [(conn.execute("SELECT session_id FROM messages WHERE id = ?", (mid,)).fetchone()[0], mid)
                for mid in ids]


def test_across_profiles_a_keystroke_does_not_walk_on_past_a_short_page(tmp_path, bounded_walk):
    """A keystroke over several profiles is spared the walk as one store's is: a store whose
    page the bounded walk ended is not read on within the keystroke (its next page is that
    walk); the merged page ends where its hits do, says more follows, and the pages after it
    bring every match of every profile once."""
    from hermes_state.listing import ListQuery
    from hermes_state.profiles import discover
    from hermes_tui.data_profiles import ProfilesData

    every = build_profiles(tmp_path)
    door = ProfilesData(discover({"HERMES_HOME": str(tmp_path)}).with_stores())
    asked: list[tuple[str, int]] = []
    for name, part in door.parts.items():
        search = part.search
        part.search = lambda *a, _s=search, _n=name, **k: (asked.append((_n, k.get("offset", 0))), _s(*a, **k))[1]
    try:
        view = door.search('"config file"', ListQuery(), limit=40, sort="auto", keystroke=True)
        assert asked == [("default", 0), ("work", 0)]
        assert view.more and 0 < view.hit_count < sum(map(len, every.values()))
        shown = view
        while shown.more:
            page = door.search('"config file"', ListQuery(), limit=40, offset=shown.next_offset, sort="auto")
            shown = shown.merged(page)
        hits = [(hit.session_id, hit.id) for group in shown.groups for hit in group.hits]
        assert sorted(hits) == sorted(every["default"] | every["work"])
        assert any(name == "default" and offset > 0 for name, offset in asked)  # (the later pages read on)
    finally:
        door.close()


def test_across_profiles_a_refresh_after_a_commit_drops_a_gone_hit_of_a_short_page(tmp_path, bounded_walk):
    """The refresh after a commit (offset 0, as many hits as are shown, not a keystroke)
    reads every store on: across stores no message id can say where a short page's matches
    end, so the refreshed answer must be whole for a deleted hit to go rather than look
    merely ranked past a cut (one store's short page says so by its oldest hit)."""
    from hermes_state.listing import ListQuery
    from hermes_state.profiles import discover
    from hermes_tui.data_profiles import ProfilesData
    from hermes_tui.search_hold import hold_still

    every = build_profiles(tmp_path)
    door = ProfilesData(discover({"HERMES_HOME": str(tmp_path)}).with_stores())
    try:
        shown = door.search('"config file"', ListQuery(), limit=40, sort="auto", keystroke=True)
        while shown.more:
            shown = shown.merged(door.search('"config file"', ListQuery(), limit=40, offset=shown.next_offset,
                                             sort="auto"))
        targets = {(hit.session_id, hit.id) for group in shown.groups for hit in group.hits}
        assert targets == every["default"] | every["work"]
        gone = max(every["default"], key=lambda target: target[1])  # (the newest: in the short page)
        with sqlite3.connect(tmp_path / "state.db") as conn:
            conn.execute("DELETE FROM messages WHERE id = ?", (gone[1],))
        door.forget_search_answers()
        fresh = door.search('"config file"', ListQuery(), limit=max(40, shown.hit_count), sort="auto")
        kept = {(hit.session_id, hit.id) for group in hold_still(shown, fresh).steady.groups for hit in group.hits}
        assert kept == targets - {gone}
    finally:
        door.close()


def test_across_profiles_a_keystroke_page_reads_on_when_the_short_page_is_all_filtered_out(tmp_path, bounded_walk):
    """A short page whose conversations the list's filters all leave out (at most 5
    messages: the default store's chats have 10 and more) has nothing to rank with: the
    keystroke reads on rather than answering with nothing, and the other profile's matches
    are shown."""
    from hermes_state.listing import ListQuery
    from hermes_state.listing.narrow import Narrow
    from hermes_state.profiles import discover
    from hermes_tui.data_profiles import ProfilesData

    every = build_profiles(tmp_path)
    door = ProfilesData(discover({"HERMES_HOME": str(tmp_path)}).with_stores())
    try:
        view = door.search('"config file"', ListQuery(narrow=Narrow(max_messages=5)), limit=40, sort="auto",
                           keystroke=True)
        assert {(hit.session_id, hit.id) for group in view.groups for hit in group.hits} == every["work"]
    finally:
        door.close()


async def test_across_profiles_the_pane_lists_every_match_without_a_key(tmp_path, bounded_walk):
    """In the browser over both profiles, typing never pausing: the keystroke's page ends
    short, and the pane reads on by itself until every profile's every match is listed."""
    from hermes_state.profiles import discover

    root = tmp_path / "hermes"
    root.mkdir()
    every = build_profiles(root)
    profiles = discover({"HERMES_HOME": str(root)}).with_stores()
    config = AppConfig(animations="none", search_debounce_s=0.0)
    config.search.exact_after_s = 0.0
    app = make_app(profiles[0].db_path, profiles=profiles, cache_dir=tmp_path / "cache", config=config,
                   trash_dir=tmp_path / "trash")
    async with app.run_test(size=(100, 40)) as pilot:
        results, pages = await typed_until_whole(pilot, '"config file"')
        # (the keystroke's page ended short: the rest came as pages the pane asked for)
        assert pages and pages[0].offset > 0 and pages[0].hit_count
        shown = {(hit.session_id, hit.id) for group in results.view.groups for hit in group.hits}
        assert shown == every["default"] | every["work"]
