"""What the screens and widgets show: plain data made by the store door
(:mod:`hermes_tui.data`) in its threads and handed to the UI.

Kept apart from the door so that a widget that draws one of these needs nothing of the
store: no connection, no thread, no list policy.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from hermes_state.models import SearchHit, SessionSummary
    from hermes_state.recap import Recap

__all__ = ["Census", "HitGroup", "RecapData", "SearchView"]


class FileState(str, enum.Enum):
    """Is the database file at the path the one the browser's connections read?"""

    #: Nothing changed.
    SAME = "same"
    #: Another file is there now (a restore, a sync tool): every connection is reopened on it.
    REPLACED = "replaced"
    #: No file is there: what was read stays on screen, writes are refused.
    DELETED = "deleted"


@dataclass
class HitGroup:
    """Search hits of one conversation (lineage root)."""

    root_id: str
    label: str
    source: str
    hits: list[SearchHit] = field(default_factory=list)
    #: The conversation is archived, or hidden (shown only when asked for): marked as the
    #: list marks its rows (BR-11, BR-15).
    archived: bool = False
    hidden: bool = False
    #: Activity since it was last read (upstream's watermark): marked as the list marks it.
    unread: bool = False
    #: Found across messages (SR-17): how many of its messages together hold the words; 0
    #: when one message holds them all.
    across: int = 0

    @property
    def count(self) -> int:
        return len(self.hits)


@dataclass
class SearchView:
    """What the search pane shows for one query."""

    query: str
    groups: list[HitGroup] = field(default_factory=list)
    title_matches: list[SessionSummary] = field(default_factory=list)
    #: The conversation (its root, as the list keys its rows) of each title match, by session
    #: id, as the door works it out for the hits' groups (``conversation_roots``): a segment of
    #: a compression chain that is not its tip is the chain's row, not a row of its own.
    title_roots: dict[str, str] = field(default_factory=dict)
    path: str = ""
    ranking: str = ""
    #: How conversations were ordered: ``relevance`` or ``newest`` (SR-18).
    order: str = ""
    hit_count: int = 0
    total_estimate: int | None = None
    #: The list's conversation filters that were on, named
    #: (:meth:`hermes_state.ListQuery.conversation_filters`): they leave conversations out after
    #: their messages matched, so ``total_estimate`` counts theirs too, and the pane says so.
    filters_on: tuple[str, ...] = ()
    #: Conversations (their ids) whose messages matched that the list's conversation filters
    #: (time window, unread only, status, …) left out, on the pages read: an answer they
    #: emptied says so rather than "no message matches".
    filtered_out: frozenset[str] = frozenset()
    elapsed_ms: float = 0.0
    note: str | None = None
    #: The words that answered when the last, too short to be a prefix, matched nothing
    #: (``SearchResult.answered_query``): the pane says so above the hits.
    answered: str | None = None
    #: Superseded by a newer query and stopped (``Connection.interrupt``): drop it.
    interrupted: bool = False
    #: Where this page of hits starts, and whether another page may follow (BR-20).
    offset: int = 0
    more: bool = False
    #: ``more`` was worked out from what the stores have left to read (across profiles), or
    #: the store said its page is short on purpose (``SearchResult.short_page``), not from
    #: one store's estimate: a short page does not mean the end (see ``_run`` in
    #: :mod:`hermes_tui.screens.browser_search`).
    more_certain: bool = False
    #: One store's page that a keystroke's bounded walk ended (``SearchResult.short_page``):
    #: every match from its oldest hit up is in it, and older ones may follow.
    short_page: bool = False
    #: Hits of later pages left out for being shown already (a commit shifted the pages while
    #: the answer on screen held still): they count towards where the next page starts.
    skipped: int = 0
    #: The newest message id in the store when the answer was read (first pages only): a hit
    #: with a greater id is of a message written since (search_hold).
    newest_id: int | None = None
    #: ``time.perf_counter()`` when each phase of :meth:`BrowserData.search` ended (``start``,
    #: ``query``: the full-text search, ``grouped``: conversations and labels, ``done``: the
    #: title/id match joined), so the bench can split keystroke → painted into its phases.
    stamps: dict[str, float] = field(default_factory=dict)

    def merged(self, page: "SearchView") -> "SearchView":
        """This answer with the next page of the same query appended: hits of a conversation
        already shown join its group; new conversations follow (rank order: a next page only
        appends)."""
        # (copies by field name: given by position, ``across`` landed in ``unread`` and the
        # group lost its "found across messages" count and its unread mark on a next page)
        groups = {g.root_id: replace(g, hits=list(g.hits)) for g in self.groups}
        for group in page.groups:
            if group.root_id in groups:
                groups[group.root_id].hits.extend(group.hits)
            else:
                groups[group.root_id] = group
        return SearchView(
            query=self.query, groups=list(groups.values()), title_matches=self.title_matches,
            title_roots=self.title_roots,
            path=self.path, ranking=self.ranking, order=self.order, hit_count=self.hit_count + page.hit_count,
            total_estimate=page.total_estimate or self.total_estimate, elapsed_ms=page.elapsed_ms,
            filters_on=self.filters_on,
            filtered_out=self.filtered_out | page.filtered_out,
            note=self.note, answered=self.answered, offset=self.offset, more=page.more,
            more_certain=page.more_certain,
            # (a page held still leaves out hits shown already: search_hold.without_shown)
            skipped=self.skipped + page.skipped, newest_id=self.newest_id,
        )

    @property
    def next_offset(self) -> int:
        """Where the page after this answer's hits starts."""
        return self.offset + self.hit_count + self.skipped


@dataclass
class Census:
    """What a list's window does not say and is costly to know (each a scan of every session
    row): how long the list is, the sessions of each source, and whether the pins a
    provisional window rested on were right."""

    total: int | None
    #: Sessions of each source in the whole store (is anything there at all?).
    source_counts: dict[str, int]
    #: The reader's provisional pages may be wrong -- the pinned sessions differ from those it
    #: assumed, or its recency index was a guess and is now built: read the window again.
    revised: bool = False
    #: Seconds of the census spent ranking the list again for pages deep in it (not the
    #: census's own cost: the ranking is paced apart, see BrowserData._rank_again).
    ranking_s: float = 0.0
    #: A stale ranking waits its turn: take a census again in this many seconds (None: none waits).
    again_in: float | None = None
    #: Conversations the list shows under these filters with each source chosen (what the
    #: source picker says; the list's own total is a sum of them). None: not counted.
    listed_by_source: dict[str, int] | None = None


@dataclass
class RecapData:
    """Everything the recap screen shows, read in one worker pass."""

    requested_id: str
    #: The session the recap describes and Enter resumes (LI-8 applied to ``requested_id``).
    target_id: str
    summary: Optional[SessionSummary]
    recap: Optional[Recap] = None
    #: 1-based position of the target in its lineage chain, and the chain's length.
    position: int = 1
    chain_length: int = 1
    #: The tip of the target's compression chain, when it is another session, and whether
    #: that tip has ended (then it is the chain's last segment, not a live one).
    tip_id: Optional[str] = None
    tip_ended: bool = False
    #: Ids of the chain (root first), for the header.
    chain: list[str] = field(default_factory=list)
    lane: Any = None
