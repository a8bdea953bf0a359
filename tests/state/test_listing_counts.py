"""The source picker's numbers are the list's: for every filter, the conversations counted
for a source are what the list counts with that source chosen, and the total is the list's
own total -- on generated corpora in both layouts and on upstream's v16 and v30 stores."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_state import SessionDB, listing
from hermes_state.listing import ListQuery, Narrow
from hermes_state.listing.counts import conversations_by_source
from hermes_state.visibility import INTERNAL_SOURCES

from corpus_helpers import corpora_in_both_layouts

QUERIES = (
    ListQuery.from_options(exclude_sources=list(INTERNAL_SOURCES)),
    ListQuery.from_options(),
    ListQuery.from_options(source="telegram"),
    ListQuery.from_options(view="archived"),
    ListQuery.from_options(view="all", include_hidden=True, include_delegates=True),
    ListQuery.from_options(exclude_sources=list(INTERNAL_SOURCES), min_message_count=12),
    ListQuery.from_options(exclude_sources=list(INTERNAL_SOURCES)).with_(narrow=Narrow(min_tool_calls=1)),
)


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> dict[int, Path]:
    return corpora_in_both_layouts(tmp_path_factory, "counts", messages=4000, seed=11)


def assert_counts_are_the_lists(db: SessionDB, query: ListQuery) -> None:
    counts = conversations_by_source(db.lister, query)
    assert counts.total == listing.count_listed(db.store, query)
    for source, n in counts.by_source.items():
        assert n == listing.count_listed(db.store, query.with_(source=source or None, exclude_sources=())), source
    # Every source the list could show under these filters has its group (none is lost).
    assert sum(counts.by_source.values()) == listing.count_listed(db.store, query.with_(source=None, exclude_sources=()))


@pytest.mark.parametrize("schema", [16, 30])
@pytest.mark.parametrize("query", QUERIES, ids=lambda q: repr(q)[:60])
def test_conversations_per_source_are_what_the_list_counts_with_that_source(corpora, schema, query):
    db = SessionDB(corpora[schema], read_only=True)
    try:
        assert_counts_are_the_lists(db, query)
    finally:
        db.close()


@pytest.mark.parametrize("version", [16, 30])
def test_on_upstreams_stores_the_counts_leave_out_what_the_list_leaves_out(upstream_copy, version):
    """Delegate runs, compression children and internal runs are sessions, not conversations
    the list shows: they are not in the picker's numbers either."""
    db = SessionDB(upstream_copy(version), read_only=True)
    try:
        for query in QUERIES[:5]:
            assert_counts_are_the_lists(db, query)
        sessions = db.source_counts()
        counted = conversations_by_source(db.lister, QUERIES[0])
        assert sum(counted.by_source.values()) <= sum(sessions.values())
    finally:
        db.close()
