"""SessionDB.search takes the list's filters as one ListQuery (``scope``), beside the search's
own knobs; its keyword form says the same thing and answers the same."""

from __future__ import annotations

import pytest

from hermes_state import SessionDB
from hermes_state.listing.query import ListQuery, View
from hermes_state.search import SearchOptions, forget_answers, search


@pytest.fixture
def db(tmp_path):
    store = SessionDB(tmp_path / "state.db")
    for sid, source, text in [
        ("c1", "cli", "docker compose on the staging cluster"),
        ("t1", "telegram", "docker compose for the telegram bot"),
        ("s1", "signal", "docker compose again, from signal"),
        ("x1", "tool", "docker compose run by an internal tool"),
    ]:
        store.create_session(sid, source)
        store.append_message(sid, "user", text)
        store.append_message(sid, "assistant", f"{text}: done")
    yield store
    store.close()


def answer(result):
    return [(hit.session_id, hit.id) for hit in result.hits]


@pytest.mark.parametrize("keywords,scope", [
    (dict(), ListQuery()),
    (dict(source_filter=["telegram"]), ListQuery(source="telegram")),
    (dict(exclude_sources=["tool", "signal"]), ListQuery(exclude_sources=("tool", "signal"))),
    (dict(include_hidden=True), ListQuery(include_hidden=True)),
])
def test_a_listquery_finds_what_the_same_keywords_find(db, keywords, scope):
    by_keywords = db.search("docker", **keywords)
    forget_answers(db.store)
    by_scope = db.search("docker", scope)
    assert answer(by_scope) == answer(by_keywords)
    assert by_scope.hits


def test_the_scope_chooses_messages_by_source_and_excluded_sources(db):
    assert {hit.source for hit in db.search("compose", ListQuery(source="signal")).hits} == {"signal"}
    kept = db.search("compose", ListQuery.human()).hits  # the browser's list: internal runs left out
    assert {hit.source for hit in kept} == {"cli", "telegram", "signal"}


def test_a_chosen_source_wins_over_the_excluded_ones_as_in_the_list(db):
    scope = ListQuery(source="tool", exclude_sources=("tool",))
    assert {hit.source for hit in db.search("compose", scope).hits} == {"tool"}


def test_search_finds_in_archived_conversations_whatever_the_view(db):
    assert db.set_session_archived("c1", True)
    sources = {hit.source for hit in db.search("staging", ListQuery(view=View.ACTIVE)).hits}
    assert sources == {"cli"}


def test_the_role_filter_is_a_knob_of_the_search_beside_the_scope(db):
    found = db.search("compose", ListQuery(source="cli"), role_filter=["assistant"])
    assert [hit.role for hit in found.hits] == ["assistant"]


def test_filters_given_both_ways_are_refused(db):
    with pytest.raises(TypeError, match="not both"):
        db.search("docker", ListQuery(), exclude_sources=["tool"])


def test_the_search_works_on_a_store_without_the_facade(db):
    """The package's entry takes a Store: what the facade answers, the store answers."""
    through_facade = db.search("docker", ListQuery(source="cli"), limit=5)
    forget_answers(db.store)
    through_store = search(db.store, "docker", ListQuery(source="cli"), SearchOptions(limit=5))
    assert answer(through_store) == answer(through_facade) and through_store.hits
