"""ListQuery.narrow (hermes_state.listing.narrow): the conversations' own fields narrow the
list, its count, its ranking and the workspace counts alike, on generated stores and on
upstream's own v16/v30 files."""

from __future__ import annotations

import pytest

from hermes_state import SessionDB, listing
from hermes_state.listing import ListQuery
from hermes_state.listing.narrow import Narrow, missing_columns

DAY = 86400.0
NOW = 1_790_000_000.0


def raw(db: SessionDB, sql: str, *params) -> None:
    db._execute_write(lambda conn: conn.execute(sql, params))


@pytest.fixture
def store(tmp_path, make_session):
    """Conversations with known fields and times (NOW - n days):

    * ``old``: started 40 days ago, last message 39 days ago, ended user_exit, 2 messages;
    * ``chain``: a compression root 20 days ago continued (``chain2``) with a message 1 day ago;
    * ``fresh``: started 2 days ago, model gpt-5, branch feat/x, cwd /w/app/sub, 3 tool calls,
      1200 tokens, cost 0.75;
    * ``cheap``: started 10 days ago, model claude-sonnet, cost estimated 0.01.

    A v30 store (the one schema with every column a filter reads), made from upstream's DDL.
    """
    from hermes_workload.schema_v30 import create_v30_store

    db = SessionDB(create_v30_store(tmp_path / "state.db"))
    make_session(db, "old", started_at=NOW - 40 * DAY, ended_at=NOW - 39 * DAY, title="old taxes",
                 model="claude-opus", messages=[("user", "a"), ("assistant", "b")])
    raw(db, "UPDATE messages SET timestamp = ? WHERE session_id = 'old'", NOW - 39 * DAY)
    make_session(db, "chain", started_at=NOW - 20 * DAY, ended_at=NOW - 19 * DAY, end_reason="compression",
                 title="travel plans", model="claude-sonnet", messages=[("user", "go"), ("assistant", "ok")])
    raw(db, "UPDATE messages SET timestamp = ? WHERE session_id = 'chain'", NOW - 19.5 * DAY)
    make_session(db, "chain2", started_at=NOW - 19 * DAY, parent_session_id="chain", title="travel plans #2",
                 model="claude-sonnet", messages=[("user", "more")])
    raw(db, "UPDATE messages SET timestamp = ? WHERE session_id = 'chain2'", NOW - 1 * DAY)
    make_session(db, "fresh", started_at=NOW - 2 * DAY, title="Fresh start", model="openai/gpt-5",
                 messages=[("user", "x"), ("assistant", "y"), ("user", "z")])
    raw(db, "UPDATE sessions SET tool_call_count = 3, input_tokens = 1000, output_tokens = 200, "
            "estimated_cost_usd = 0.9, actual_cost_usd = 0.75, billing_provider = 'OpenRouter', "
            "cwd = '/w/app/sub', git_branch = 'feat/x' WHERE id = 'fresh'")
    make_session(db, "cheap", started_at=NOW - 10 * DAY, ended_at=NOW - 10 * DAY + 60, model="claude-sonnet",
                 messages=[("user", "hi")])
    raw(db, "UPDATE sessions SET estimated_cost_usd = 0.01, cwd = '/w/application' WHERE id = 'cheap'")
    yield db
    db.close()


def ids(db: SessionDB, narrow: Narrow, **fields) -> list[str]:
    """What the list shows (its ids, at the listed row), checked against its count and its
    ranking in both orders: one filter, one answer."""
    query = ListQuery(narrow=narrow, **fields)
    rows = [r.get("_lineage_root_id", r["id"]) for r in db.lister.rows(query, 100)]
    assert db.lister.count_listed(query) == len(rows)
    by_activity = query.with_(order="activity")
    assert sorted(r.get("_lineage_root_id", r["id"]) for r in db.lister.rows(by_activity, 100)) == sorted(rows)
    if not query.min_messages:  # (the ranking leaves min_messages out, as it always has)
        assert sorted(db.lister.rank_listed(by_activity)) == sorted(rows)
    return sorted(rows)


def test_nothing_narrowed_lists_every_conversation(store):
    assert ids(store, Narrow()) == ["chain", "cheap", "fresh", "old"]


def test_since_finds_a_conversation_by_its_last_activity_along_the_compression_chain(store):
    # The chain's root started 20 days ago, its continuation spoke yesterday: active this week.
    assert ids(store, Narrow(since=NOW - 7 * DAY)) == ["chain", "fresh"]
    assert ids(store, Narrow(since=NOW - 15 * DAY)) == ["chain", "cheap", "fresh"]


def test_until_leaves_out_a_conversation_still_going_on(store):
    # Last active before 5 days ago: not the chain, whose last message was yesterday.
    assert ids(store, Narrow(until=NOW - 5 * DAY)) == ["cheap", "old"]
    assert ids(store, Narrow(since=NOW - 15 * DAY, until=NOW - 5 * DAY)) == ["cheap"]


def test_text_filters_match_substrings_case_insensitively(store):
    assert ids(store, Narrow(title="TRAVEL")) == ["chain"]
    assert ids(store, Narrow(model="sonnet")) == ["chain", "cheap"]
    assert ids(store, Narrow(branch="feat")) == ["fresh"]
    assert ids(store, Narrow(provider="openrouter")) == ["fresh"]
    assert ids(store, Narrow(end_reason="user_exit")) == ["cheap", "old"]
    assert ids(store, Narrow(title="100%")) == []  # (a LIKE wildcard is a character)


def test_cwd_is_the_directory_or_one_under_it_never_a_sibling_with_the_same_prefix(store):
    assert ids(store, Narrow(cwd="/w/app")) == ["fresh"]
    assert ids(store, Narrow(cwd="/w/app/")) == ["fresh"]
    assert ids(store, Narrow(cwd="/w")) == ["cheap", "fresh"]
    assert ids(store, Narrow(cwd="/w/application")) == ["cheap"]


def test_counters_tokens_and_cost_are_inclusive_bounds(store):
    assert ids(store, Narrow(min_tool_calls=3)) == ["fresh"]
    assert ids(store, Narrow(max_tool_calls=0)) == ["chain", "cheap", "old"]
    assert ids(store, Narrow(min_tokens=1200, max_tokens=1200)) == ["fresh"]
    # The actual cost where known (0.75), else the estimate (0.01), else nothing (0).
    assert ids(store, Narrow(min_cost=0.75)) == ["fresh"]
    assert ids(store, Narrow(min_cost=0.76)) == []
    assert ids(store, Narrow(min_cost=0.005, max_cost=0.5)) == ["cheap"]
    assert ids(store, Narrow(max_messages=2)) == ["chain", "cheap", "old"]


def test_filters_combine_with_source_view_and_min_messages(store):
    assert ids(store, Narrow(model="sonnet"), min_messages=2) == ["chain"]
    assert ids(store, Narrow(model="sonnet"), source="telegram") == []
    store.set_session_archived("cheap", True)
    assert ids(store, Narrow(model="sonnet")) == ["chain"]
    assert ids(store, Narrow(model="sonnet"), view="archived") == ["cheap"]


def test_workspace_counts_obey_the_narrowing(store):
    counts = {w.workspace: w.count for w in listing.workspace_counts(store.store, ListQuery(narrow=Narrow(since=NOW - 15 * DAY)))}
    assert counts == {"/w/app/sub": 1, "/w/application": 1, "": 1}


def test_equal_narrowings_are_one_cache_key_and_different_ones_are_not():
    a = ListQuery(narrow=Narrow(title="x", since=1))
    assert a == ListQuery(narrow=Narrow(title="x", since=1.0)) and hash(a) == hash(ListQuery(narrow=Narrow(title="x", since=1.0)))
    assert a != ListQuery(narrow=Narrow(title="x", since=2))
    assert ListQuery(narrow=Narrow(title="")) == ListQuery()
    assert not Narrow() and Narrow(min_cost=0)


def test_a_filter_on_a_column_an_old_store_lacks_is_named_and_matches_nothing(upstream_copy):
    path = upstream_copy(16)
    db = SessionDB(path, read_only=True)
    try:
        assert missing_columns(Narrow(branch="feat", model="x"), db.capabilities.has_session_column) == [
            ("branch", "git_branch")]
        assert db.lister.rows(ListQuery.human(narrow=Narrow(branch="main")), 100) == []
        assert [r["id"][-6:] for r in db.lister.rows(ListQuery.human(narrow=Narrow(cwd="/home/u")), 100)]
    finally:
        db.close()
    old = SessionDB(upstream_copy(2), read_only=True)
    try:
        assert {name for name, _ in missing_columns(Narrow(title="t", min_cost=1, provider="p"),
                                                    old.capabilities.has_session_column)} == {"title", "min_cost", "provider"}
    finally:
        old.close()


def test_v30_chain_is_found_at_its_tip_by_its_last_activity(upstream_copy):
    db = SessionDB(upstream_copy(30), read_only=True)
    try:
        since = 1790012000.0  # c3 started then; c1 and c2 ended before
        rows = db.lister.rows(ListQuery.human(narrow=Narrow(since=since)), 100)
        assert "20260921_122000_c3" in [r["id"] for r in rows]
        rows = db.lister.rows(ListQuery.human(narrow=Narrow(until=since - 1)), 100)
        assert not {"20260921_120000_c1", "20260921_122000_c3"} & {r["id"] for r in rows}
    finally:
        db.close()


def test_first_pages_by_activity_in_a_window_agree_with_the_full_ranking(tmp_path, monkeypatch):
    """The first pages by last activity in a window that looks back from now (the newest-first
    walk where it can answer, BR-10) are the general query's, in both layouts. (At 1M messages
    the walk serves them: checked with bench/time_filter.py's store; a store this small is
    walked through and the general query answers.)"""
    import hermes_state.listing.activity as activity_module
    from hermes_workload.corpus import generate_corpus

    for schema in (16, 30):
        path = tmp_path / f"c{schema}" / "state.db"
        path.parent.mkdir()
        generate_corpus(path, messages=8000, seed=5, now=1767225600.0, schema=schema)
        db = SessionDB(path, read_only=True)
        try:
            newest = db.store.fetchone("SELECT MAX(timestamp) FROM messages")[0]
            for days in (2, 10):
                query = ListQuery.human(narrow=Narrow(since=newest - days * DAY), order="activity")
                fast = [(r["id"], r["last_active"]) for r in db.lister.rows(query, 20, 0)]
                with monkeypatch.context() as m:
                    m.setattr(activity_module, "ACTIVITY_WALK_ROWS", 0)
                    general = [(r["id"], r["last_active"]) for r in db.lister.rows(query, 20, 0)]
                assert fast and fast == general, (schema, days)
                assert all(last >= newest - days * DAY for _id, last in fast)
        finally:
            db.close()
