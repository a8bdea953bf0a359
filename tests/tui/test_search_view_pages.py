"""A next page of search hits joined to the answer shown (``SearchView.merged``): the groups
shown keep every mark they had."""

from __future__ import annotations

from hermes_state.models import SearchHit
from hermes_tui.view_models import HitGroup, SearchView


def _hit(rowid: int, session: str) -> SearchHit:
    return SearchHit(id=rowid, session_id=session, role="user", timestamp=float(rowid))


def test_a_next_page_keeps_each_shown_groups_marks_and_joins_its_hits():
    first = SearchView(query="caddy udp", groups=[
        HitGroup("root-a", "caddy", "cli", [_hit(1, "root-a")], archived=True, hidden=False, unread=True,
                 across=3),
    ], hit_count=1)
    page = SearchView(query="caddy udp", offset=1, groups=[
        HitGroup("root-a", "caddy", "cli", [_hit(2, "root-a")]),
        HitGroup("root-b", "udp", "telegram", [_hit(3, "root-b")]),
    ], hit_count=2)
    merged = first.merged(page)
    a, b = merged.groups
    assert (a.archived, a.unread, a.across) == (True, True, 3)
    assert [hit.id for hit in a.hits] == [1, 2] and [hit.id for hit in b.hits] == [3]
    assert [hit.id for hit in first.groups[0].hits] == [1]  # (the answer shown is not changed)
