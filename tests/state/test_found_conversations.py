"""The conversations a search found, as the list knows them (``hermes_state.search.found``):
the one step the browser's pane and ``hermes-sessions search`` share, on real stores."""

from __future__ import annotations

import pytest

from hermes_state import ListQuery, SessionDB
from hermes_state.listing.narrow import Narrow
from hermes_state.search.found import found_conversations
from hermes_state.timewindow import windowed
from hermes_state.unread import set_read

C1, C2, C3 = "20260921_120000_c1", "20260921_121000_c2", "20260921_122000_c3"
K1, A1, R1 = "20260921_150000_k1", "20260921_160000_a1", "20260921_140000_r1"


def _found(db: SessionDB, text: str, query: ListQuery = ListQuery.human()):
    result = db.search(text, query, limit=100)
    return result, found_conversations(db.store, result, query)


def test_a_compressed_conversation_is_named_by_its_tip_and_resumed_at_its_tip(upstream_copy):
    db = SessionDB(upstream_copy(30), read_only=True)
    try:
        _result, found = _found(db, "COMPACTEDWORD")
        [conversation] = found.conversations
        assert conversation.root_id == C1
        assert conversation.tip_id == C3  # (the id `list` shows and `hermes --resume` takes)
        assert conversation.label == "release prep #3" and conversation.titled
        assert conversation.status == "complete"
        assert conversation.last_active is not None
        assert [hit.session_id for hit in conversation.hits] == [C2]
    finally:
        db.close()


def test_an_archived_conversation_is_found_and_marked(upstream_copy):
    db = SessionDB(upstream_copy(30), read_only=True)
    try:
        _result, found = _found(db, "ARCHIVEDWORD")
        assert [(c.root_id, c.archived) for c in found.conversations] == [(A1, True)]
    finally:
        db.close()


def test_the_time_window_drops_conversations_and_counts_them(upstream_copy):
    db = SessionDB(upstream_copy(30), read_only=True)
    try:
        everything, found = _found(db, "the")
        assert found.dropped == 0 and len(found.conversations) >= 3
        last = max(c.last_active for c in found.conversations)
        window = ListQuery.human().with_(narrow=Narrow(since=last))
        _result, narrowed = _found(db, "the", window)
        assert [c.root_id for c in narrowed.conversations] == [
            c.root_id for c in found.conversations if c.last_active >= last]
        assert narrowed.dropped == len(found.conversations) - len(narrowed.conversations) > 0
    finally:
        db.close()


def test_unread_only_keeps_the_unread_conversations_by_the_lists_rule(upstream_copy):
    path = upstream_copy(30)
    writer = SessionDB(path)
    try:
        set_read(writer.store, K1, False)  # (upstream's "mark as unread")
        set_read(writer.store, R1, True, now=2_000_000_000.0)  # (read after its last activity)
    finally:
        writer.close()
    db = SessionDB(path, read_only=True)
    try:
        _result, found = _found(db, "the")
        marks = {c.root_id: c.unread for c in found.conversations}
        assert marks[K1] is True and marks[R1] is False
        _result, unread = _found(db, "the", ListQuery.human().with_(unread_only=True))
        assert [c.root_id for c in unread.conversations] == [c for c, u in marks.items() if u]
        assert unread.dropped == len(marks) - len(unread.conversations) > 0
    finally:
        db.close()


@pytest.mark.parametrize("typed, words, kept", [
    ("caddy udp", "caddy udp", (None, None)),
    ("caddy after:2026-10-01 udp", "caddy udp", ("since", None)),
    ('"after:2026-10-01" caddy', '"after:2026-10-01" caddy', (None, None)),
])
def test_time_terms_are_taken_out_of_the_words_and_narrow_the_window(typed, words, kept):
    read = windowed(typed, Narrow(), now=1_800_000_000.0)
    assert read.text == words and read.problem is None
    assert (read.narrow.since is not None) == (kept[0] == "since")
    assert read.narrow.until is None


def test_a_time_term_that_cannot_be_read_is_left_out_and_said():
    read = windowed("caddy before:nonsense", Narrow(since=5.0))
    assert read.text == "caddy"
    assert read.narrow == Narrow(since=5.0)
    assert read.problem and "nonsense" in read.problem


def test_the_querys_window_narrows_the_lists_and_never_widens_it():
    narrow = Narrow(since=1_700_000_000.0, until=1_800_000_000.0)
    read = windowed("x after:2020-01-01 before:2030-01-01", narrow, now=1_750_000_000.0)
    assert read.narrow.since == narrow.since and read.narrow.until == narrow.until


def test_an_emptied_answer_names_the_conversation_filters_that_are_on():
    from hermes_state.listing.narrow import NO_NARROW
    from hermes_state.search.found import dropped_note

    plain = ListQuery()
    assert plain.conversation_filters() == []
    windowed = plain.with_(narrow=NO_NARROW.with_(since=1.0))
    assert windowed.conversation_filters() == ["the time window"]
    many = windowed.with_(unread_only=True, statuses=("error",), min_messages=3)
    assert many.conversation_filters() == ["the time window", "unread only", "the status filter",
                                           "the list's other filters"]
    # (a title filter is one of the list's other fields)
    assert plain.with_(narrow=NO_NARROW.with_(title="x")).conversation_filters() == ["the list's other filters"]
    assert dropped_note(1, ["the time window"]) == "1 conversation matches, left out by the time window"
    assert (dropped_note(1200, ["the time window", "unread only", "the status filter"])
            == "1,200 conversations match, left out by the time window, unread only and the status filter")
    assert dropped_note(2, []) == "2 conversations match, left out by the filters"


def test_the_conversations_are_the_hits_grouped_by_their_roots_whoever_knows_the_roots(upstream_copy):
    """Grouped by the caller's roots when they name every hit's session (the browser's memo),
    else by group_hits_by_conversation's own look-up: either way the conversations, hits and
    best hits group_hits_by_conversation makes from the same roots."""
    from hermes_state.conversation import conversation_roots
    from hermes_state.retrieval import group_hits_by_conversation

    db = SessionDB(upstream_copy(30), read_only=True)
    try:
        result = db.search("the", ListQuery.human(), limit=100)
        roots = conversation_roots(db.store, {hit.session_id for hit in result.hits})
        known = found_conversations(db.store, result, ListQuery.human(), roots_of=lambda ids: dict(roots))
        grouped = group_hits_by_conversation(db.store, result.hits, roots)
        assert len(grouped) >= 3 and any(len(c.hits) > 1 for c in grouped)
        assert [(c.root_id, c.hits, c.source) for c in known.conversations] == [
            (c.root_id, c.hits, c.best_hit.source) for c in grouped]
        partly = found_conversations(db.store, result, ListQuery.human(), roots_of=lambda ids: {})
        looked_up = group_hits_by_conversation(db.store, result.hits, {})
        assert [(c.root_id, c.hits, c.source) for c in partly.conversations] == [
            (c.root_id, c.hits, c.best_hit.source) for c in looked_up]
    finally:
        db.close()
