"""One home for the human list: what is listed, in which order, page by page.

* :mod:`.pages` -- what readers call: a page of the list, its count, a ranking to page
  deep through, title and id matching, workspaces, conversation labels;
* :mod:`.query` and :mod:`.narrow` -- :class:`ListQuery`, every filter of a list in one value
  (:class:`Narrow`: the conversations' own fields, the time window among them);
* :mod:`.engine` -- :class:`Lister`, the list of one store and what it keeps between pages;
* :mod:`.sql` and :mod:`.activity` -- the statements, by start and by last activity;
* :mod:`.select` -- the conversations a filter chooses, whole, for commands by filter;
* :mod:`.pins` (pins of stores without a ``pinned`` column), :mod:`.recency` (which
  sessions hold the newest messages, kept between runs) and :mod:`.title_index` (every
  title, for matching as you type).
"""

from __future__ import annotations

from .narrow import NO_NARROW, Narrow
from .query import ListQuery, Order, View
from .pages import (
    BY_START_DEEP_ROWS,
    MAX_TITLE_CANDIDATES,
    RECENT_TITLE_WINDOW,
    VIEWS,
    ConversationLabel,
    WorkspaceCount,
    conversation_labels,
    count_listed,
    hidden_sources,
    match_sessions,
    page,
    page_of_ids,
    rank,
    ranked_deep,
    refresh_title_index,
    summaries_of,
    title_index_version,
    view_options,
    workspace_counts,
    workspace_session_ids,
)

__all__ = [
    "ListQuery", "Order", "View", "Narrow", "NO_NARROW",
    "BY_START_DEEP_ROWS", "MAX_TITLE_CANDIDATES", "RECENT_TITLE_WINDOW", "VIEWS", "ConversationLabel",
    "WorkspaceCount", "conversation_labels", "count_listed", "hidden_sources", "match_sessions", "page",
    "page_of_ids", "rank", "ranked_deep", "refresh_title_index", "summaries_of", "title_index_version",
    "view_options", "workspace_counts", "workspace_session_ids",
]
