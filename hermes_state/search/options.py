"""What a search is asked: the list's filters (a :class:`~hermes_state.listing.query.ListQuery`,
the same value the list, its counts and its caches are asked with) and search's own knobs
(:class:`SearchOptions`), and the SQL clauses the two make on a message's row.

Of the list's filters a search obeys those that say *which messages* may be found: ``source``
(or, with no source, ``exclude_sources``), ``workspace`` and ``include_hidden``, on the
session each message belongs to, as the list does. The fields that say which *conversations*
a list shows by their own state -- ``view`` (archived), ``narrow`` (time window, title,
model, …), ``unread_only``, ``statuses``, ``include_delegates``, ``order`` -- are not
applied to messages: a search finds in archived conversations and in delegate runs too
(grouped under the conversation they belong to, their archived flag shown), and its caller
keeps the conversations the list would keep (the browser's door does, by the list's own
rule).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .sql import filter_sql
from .tuning import TUNING
from .weights import Weights

if TYPE_CHECKING:  # pragma: no cover
    from ..listing.query import ListQuery
    from ..visibility import Rules

#: The rankings of the message-level engine: ``auto`` (bm25 when affordable, else bm25 over
#: the newest matches, or newest first for near-universal words), ``rank`` (exact bm25 over
#: every match) or ``newest``; and ``conversation``, what the search by conversation asks
#: for ``rank``: every match ranked by conversation
#: (:mod:`~hermes_state.search.by_conversation`; past its bound, the newest matches so).
SORTS = ("auto", "rank", "newest", "conversation")
#: The two orders of an answer by conversation: ``relevance`` (the formula of
#: :class:`~hermes_state.search.weights.Weights`) or ``newest``.
ORDERS = ("relevance", "newest")


@dataclass(frozen=True)
class SearchOptions:
    """Search's own knobs, beside the list's filters. Frozen: an answer kept for a question
    is kept under what was asked."""

    limit: int = 20
    offset: int = 0
    #: See :data:`SORTS`.
    sort: str = "auto"
    #: Only messages of these roles (SR-4; None: every role).
    roles: tuple[str, ...] | None = None
    #: The last word, while it is being typed (no space after it yet), is a prefix: ``dock``
    #: finds ``docker``; ``dock `` is the word dock.
    prefix_last: bool = False
    #: Time budget of the scans filters can stretch (LIKE, filtered windows).
    budget_ms: float | None = None
    #: See :data:`ORDERS`.
    order: str = "relevance"
    weights: Weights | None = None
    #: The clock of the recency part of the ranking (None: now).
    now: float | None = None
    #: Upstream's ``source_filter`` of several sources (or of none: nothing is found), which
    #: a list's one ``source`` cannot say; None: the list's filters alone decide.
    sources: tuple[Any, ...] | None = None
    #: The newest matches a keystroke's answer (``sort="auto"``) ranks when it cannot rank
    #: them all (None: ``TUNING.WINDOW``): several stores searched as one each rank their
    #: share, so that the answer ranks as many as one store's would.
    window: int | None = None

    @property
    def budget(self) -> float:
        return TUNING.DEFAULT_BUDGET_MS if self.budget_ms is None else self.budget_ms


def message_filters(rules: "Rules", scope: "ListQuery", options: SearchOptions) -> tuple[list[str], list[Any]]:
    """The WHERE clauses (aliases ``m`` message, ``s`` its session) of the messages a search
    may find under ``scope`` and ``options``: never a rewound row or scaffolding (UC-3), a
    hidden session's only with ``include_hidden`` (BR-15), the sources, the workspace (BR-13)
    and the roles asked for."""
    if scope.source is not None:
        sources: Any = [scope.source]
    else:
        sources = options.sources
    excluded = scope.exclude_sources if scope.source is None and scope.exclude_sources else None
    shown = "1" if scope.include_hidden else rules.not_hidden("s")
    clauses, params = filter_sql(sources, excluded, options.roles, rules.findable("m"), shown)
    narrow, narrow_params = rules.workspace_clause(scope.workspace)
    if narrow is not None:
        clauses.append(narrow)
        params.extend(narrow_params)
    return clauses, params
