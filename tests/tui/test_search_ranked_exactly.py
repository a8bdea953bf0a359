"""SR-18: the keystroke ranks a common word's newest matches only (its window: the answer must
paint within a frame or two); once typing pauses, the pane ranks the query over every match,
so the conversation the words describe best is found even when it is older than the window --
unless the reader has moved into the hits meanwhile (what they hold stays where it is)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_state.models import CONVERSATION_RANKING
from hermes_state.search.tuning import TUNING
from hermes_tui.config import AppConfig
from hermes_tui.widgets.search import SearchInput

from .conftest import SIZE, make_app, settle
from .dataset import NOW

OLD = "20250301_090000_cache0"


def build(path: Path) -> Path:
    """Forty recent chats that mention the cache in passing, and one old one about it."""
    db = SessionDB(path)
    try:
        db.create_session(OLD, "cli")
        db.append_message(OLD, "user", "cache cache: the cache layer evicts the cache")
        db.end_session(OLD, "user_exit")
        for n in range(40):
            sid = f"20261117_{n:06d}_recent"
            db.create_session(sid, "cli")
            db.append_message(sid, "user", f"deploy step {n} of the release went fine, no words about any cache "
                                           "here beyond this passing mention in a long message about the rollout")
            for k in range(5):  # (the word stays in a minority of messages: it is ranked)
                db.append_message(sid, "assistant", f"rollout note {k}: the release moved along as planned")
            db.end_session(sid, "user_exit")
    finally:
        db.close()
    with sqlite3.connect(path) as conn:  # (times: the old chat months before the others)
        conn.execute("UPDATE sessions SET started_at = ?, ended_at = ? WHERE id = ?", (NOW - 200 * 86400, NOW - 200 * 86400, OLD))
        conn.execute("UPDATE messages SET timestamp = ? WHERE session_id = ?", (NOW - 200 * 86400, OLD))
        conn.execute("UPDATE sessions SET started_at = ?, ended_at = ? WHERE id != ?", (NOW - 3600, NOW - 3500, OLD))
        conn.execute("UPDATE messages SET timestamp = ? WHERE session_id != ?", (NOW - 3600, OLD))
    return path


@pytest.fixture
def small_window(monkeypatch):
    """What 1M messages do with the real sizes: more matches than exact bm25 is allowed to
    rank at a keystroke, the window holding only the newest."""
    monkeypatch.setattr(TUNING, "WINDOW", 10)
    monkeypatch.setattr(TUNING, "EXACT_BM25_MAX_ROWS", 20)


def config(pause: float) -> AppConfig:
    config = AppConfig(animations="none", search_debounce_s=0.0)
    config.search.exact_after_s = pause
    return config


async def typed(pilot, text: str = "cache"):
    """``text`` typed in the search field of a settled app; its results pane."""
    await settle(pilot)
    await pilot.press("slash", *text)
    await settle(pilot)
    return pilot.app.screen.results


async def wait_for(pilot, predicate, seconds: float = 5.0) -> bool:
    for _ in range(int(seconds / 0.05)):
        if predicate():
            return True
        await pilot.pause(0.05)
    return predicate()


async def test_a_pause_ranks_the_query_over_every_match_and_finds_the_older_conversation(tmp_path, small_window):
    app = make_app(build(tmp_path / "state.db"), config=config(0.3))
    async with app.run_test(size=SIZE) as pilot:
        results = await typed(pilot)
        first = results.view
        assert "window" in first.ranking and first.groups[0].root_id != OLD
        assert await wait_for(pilot, lambda: results.view is not first and results.view.ranking == CONVERSATION_RANKING)
        assert results.view.groups[0].root_id == OLD
        assert app.focused is app.screen.query_one(SearchInput)  # (the field keeps the keys)


async def test_a_gateway_writing_during_the_pause_does_not_stop_the_ranking_and_its_matches_wait(
        tmp_path, small_window):
    """A real second process commits new matching messages right after the keystroke's answer
    (a gateway writes every few seconds): the pause still ranks the query over every match --
    the older conversation comes first -- and the new matches are announced, not slipped in
    among the rows (BR-16)."""
    from .test_live_reader import start_writer

    db = build(tmp_path / "state.db")
    app = make_app(db, config=config(0.3), watch=True)
    async with app.run_test(size=SIZE) as pilot:
        results = await typed(pilot)
        assert "window" in results.view.ranking
        writer = start_writer(db, "sessions", "cache", 4, 0.1)
        while writer.poll() is None:
            await pilot.pause(0.05)
        assert writer.returncode == 0, writer.stderr.read().decode()
        assert await wait_for(pilot, lambda: results.view.ranking == CONVERSATION_RANKING and results.waiting == 4,
                              seconds=10.0)
        await settle(pilot)
        assert results.view.groups[0].root_id == OLD
        assert not any(g.root_id.startswith("20261118_0900") for g in results.view.groups), "announced, not shown"
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert {f"20261118_0900{i:02d}_new{i:02d}" for i in range(4)} <= {g.root_id for g in results.view.groups}


async def test_after_the_pause_a_reader_in_the_hits_is_told_of_new_matches(tmp_path, small_window):
    """The pause ranked the answer, the reader moved into its hits, then another process
    commits matches: the refresh (ranked as the pause ranked) holds the rows still and
    announces the new matches -- it is not taken for the pause's own answer and dropped."""
    from .test_live_reader import start_writer

    db = build(tmp_path / "state.db")
    app = make_app(db, config=config(0.2), watch=True)
    async with app.run_test(size=SIZE) as pilot:
        results = await typed(pilot)
        assert await wait_for(pilot, lambda: results.view.ranking == CONVERSATION_RANKING)
        await settle(pilot)
        await pilot.press("down", "down")  # into the hits, and on to the second
        await settle(pilot)
        target, shown = results.target_of_highlighted(), results.view
        writer = start_writer(db, "sessions", "cache", 4, 0.05)
        while writer.poll() is None:
            await pilot.pause(0.05)
        assert writer.returncode == 0, writer.stderr.read().decode()
        assert await wait_for(pilot, lambda: results.waiting == 4, seconds=10.0)
        assert results.target_of_highlighted() == target
        assert [g.root_id for g in results.view.groups] == [g.root_id for g in shown.groups]


async def test_a_reader_who_moved_into_the_hits_keeps_them_where_they_are(tmp_path, small_window):
    app = make_app(build(tmp_path / "state.db"), config=config(0.5))
    async with app.run_test(size=SIZE) as pilot:
        results = await typed(pilot)
        first = results.view
        assert "window" in first.ranking
        await pilot.press("down", "down")  # into the hits, and on to the second
        await pilot.pause(1.2)
        await settle(pilot)
        assert results.view is first


async def test_no_pause_pass_when_it_is_turned_off(tmp_path, small_window):
    app = make_app(build(tmp_path / "state.db"), config=config(0.0))
    async with app.run_test(size=SIZE) as pilot:
        first = (await typed(pilot)).view
        await pilot.pause(0.8)
        assert app.screen.results.view is first and "window" in first.ranking


def test_an_answer_is_asked_again_at_a_pause_unless_every_store_ranked_it_by_conversation() -> None:
    from hermes_state.models import ranks_again_when_paused

    for keystroke in ("bm25-recent-window", "bm25", "newest", "bm25-conversations+bm25-recent-window"):
        assert ranks_again_when_paused(keystroke), keystroke  # (across profiles: joined by +)
    for paused in ("bm25-conversations", "bm25-conversations-recent", "bm25-conversations+bm25-conversations",
                   "", None):
        assert not ranks_again_when_paused(paused), paused


async def test_an_answer_to_a_search_asked_again_since_is_dropped(tmp_path, small_window):
    """The pause's answer lands just after ctrl+o asked the query again newest first: it
    answers a search superseded since (of the same query), and neither shows nor marks the
    answer as ranked by conversation."""
    from hermes_state.listing import ListQuery
    from hermes_tui.messages import SearchFinished

    app = make_app(build(tmp_path / "state.db"), config=config(0.0))
    async with app.run_test(size=SIZE) as pilot:
        results = await typed(pilot)
        search = app.screen.search
        before = search._asked
        late = app.screen.ctx.store.search("cache", ListQuery(), limit=40, sort="rank")
        assert late.ranking == CONVERSATION_RANKING
        await pilot.press("ctrl+o")  # newest first: the query asked again
        await settle(pilot)
        assert results.view.order == "newest" and search._asked == before + 1
        app.screen.post_message(SearchFinished("cache", late, exact=True, asked=before))
        await settle(pilot)
        assert results.view.order == "newest" and results.view.ranking != CONVERSATION_RANKING
        assert search._exact_query is None
