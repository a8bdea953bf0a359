"""What a list shows: :class:`ListQuery`, the one value every list filter travels in.

From the browser's filter state down to the SQL, a list (its pages, its count, its ranking
for deep pages, the workspace and source counts beside it, an export of "everything
matching") is asked for with one frozen, hashable :class:`ListQuery`. It is also the only
cache key of what was computed for a list: a filter added here is part of every key at once,
so no cache can answer for another list.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Iterable

from ..visibility import INTERNAL_SOURCES
from .narrow import NO_NARROW, Narrow


class View(str, enum.Enum):
    """Which conversations by their archived flag (BR-11), in the browser's cycling order."""

    ACTIVE = "active"
    ARCHIVED = "archived"
    ALL = "all"

    def next(self) -> "View":
        members = list(View)
        return members[(members.index(self) + 1) % len(members)]


class Order(str, enum.Enum):
    """How the list is ordered (pinned conversations first in both, BR-12)."""

    #: Newest start first (upstream's order).
    STARTED = "started"
    #: Newest last activity first (BR-10): a message, or a session's own activity stamp.
    ACTIVITY = "activity"


@dataclass(frozen=True)
class ListQuery:
    """A list of conversations (or, with ``include_children``, of sessions) by its filters
    and order. Frozen and hashable: equal queries are the same list."""

    #: Only this source (None: every source but ``exclude_sources``).
    source: str | None = None
    #: Sources left out when no ``source`` is chosen (by default internal runs, UC-3).
    exclude_sources: tuple[str, ...] = ()
    view: View = View.ACTIVE
    #: Also sessions marked hidden (BR-15).
    include_hidden: bool = False
    #: Also delegate runs, listed on their own (BR-15).
    include_delegates: bool = False
    #: Every session, not only what is listed on its own (upstream's ``include_children``).
    include_children: bool = False
    #: Only sessions with at least this many messages (upstream's ``min_message_count``).
    min_messages: int = 0
    #: One workspace (BR-13; :data:`~hermes_state.visibility.NO_WORKSPACE`: those without).
    workspace: str | None = None
    order: Order = Order.STARTED
    #: Only conversations with activity after their read watermark (``last_read_at``; none
    #: on a store without the column): see :mod:`hermes_state.unread`.
    unread_only: bool = False
    #: Only conversations of these lifecycle statuses (:data:`hermes_state.lifecycle.STATUSES`;
    #: empty: every one), kept sorted so equal filters are equal keys.
    statuses: tuple[str, ...] = ()
    #: The conversations' own fields: time window, title, model, cost, ... (see
    #: :mod:`~hermes_state.listing.narrow`).
    narrow: Narrow = NO_NARROW

    def __post_init__(self) -> None:
        # Normalise what callers hand in, so equal lists are equal keys. (Only what needs it:
        # a query is made for every page a reader asks for.)
        if type(self.exclude_sources) is not tuple:
            object.__setattr__(self, "exclude_sources", tuple(self.exclude_sources or ()))
        if type(self.view) is not View:
            object.__setattr__(self, "view", View(self.view))
        if type(self.order) is not Order:
            object.__setattr__(self, "order", Order(self.order))
        if type(self.min_messages) is not int or self.min_messages < 0:
            object.__setattr__(self, "min_messages", max(0, int(self.min_messages or 0)))
        if self.statuses:
            object.__setattr__(self, "statuses", tuple(sorted(set(self.statuses))))

    def __hash__(self) -> int:
        # Kept once computed: a query is the key of every cache of its list, looked up several
        # times a page. (Frozen: its fields never change.)
        found = self.__dict__.get("_hash")
        if found is None:
            found = hash((self.source, self.exclude_sources, self.view, self.include_hidden,
                          self.include_delegates, self.include_children, self.min_messages,
                          self.workspace, self.order, self.unread_only, self.statuses, self.narrow))
            object.__setattr__(self, "_hash", found)
        return found

    def conversation_filters(self) -> list[str]:
        """This query's filters that choose conversations, as a person names them, those on:
        a search applies them to the conversations it found, after their messages matched
        (:func:`hermes_state.search.found.found_conversations`), so its count of matching
        messages counts those they leave out too."""
        names: list[str] = []
        if self.narrow.windowed:
            names.append("the time window")
        if self.unread_only:
            names.append("unread only")
        if self.statuses:
            names.append("the status filter")
        if self.min_messages or self.narrow.with_(since=None, until=None):
            names.append("the list's other filters")
        return names

    # ------------------------------------------------------------------ made from

    @classmethod
    def human(
        cls,
        source: str | None = None,
        *,
        show_internal: bool = False,
        **fields: object,
    ) -> "ListQuery":
        """The browser's list: internal runs left out unless a source is chosen or they are
        asked for (UC-3)."""
        excluded: Iterable[str] = () if (source or show_internal) else INTERNAL_SOURCES
        return cls(source=source, exclude_sources=tuple(excluded), **fields)  # type: ignore[arg-type]

    @classmethod
    def from_options(
        cls,
        source: str | None = None,
        exclude_sources: Iterable[str] | None = None,
        *,
        include_children: bool = False,
        min_message_count: int = 0,
        include_archived: bool = False,
        archived_only: bool = False,
        include_hidden: bool = False,
        include_delegates: bool = False,
        workspace: str | None = None,
        order_by_last_active: bool = False,
        view: "View | str | None" = None,
        by_activity: bool | None = None,
        unread_only: bool = False,
        statuses: Iterable[str] = (),
    ) -> "ListQuery":
        """The query of upstream's keyword options (``list_sessions_rich``,
        ``session_count``) and of the browser's names (``view``, ``by_activity``): the one
        place they are read."""
        if view is None:
            view = View.ARCHIVED if archived_only else View.ALL if include_archived else View.ACTIVE
        activity = order_by_last_active if by_activity is None else by_activity
        return cls(
            source=source or None,
            exclude_sources=tuple(exclude_sources or ()),
            view=View(view),
            include_hidden=bool(include_hidden),
            include_delegates=bool(include_delegates),
            include_children=bool(include_children),
            min_messages=int(min_message_count or 0),
            workspace=workspace,
            order=Order.ACTIVITY if activity else Order.STARTED,
            unread_only=bool(unread_only),
            statuses=tuple(statuses or ()),
        )

    def with_(self, **changes: object) -> "ListQuery":
        """This list with some fields changed."""
        return replace(self, **changes)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ read as

    @property
    def by_activity(self) -> bool:
        return self.order is Order.ACTIVITY

    @property
    def include_archived(self) -> bool:
        return self.view is View.ALL

    @property
    def archived_only(self) -> bool:
        return self.view is View.ARCHIVED

    @cached_property
    def unordered(self) -> "ListQuery":
        """The filters alone (the order set to its default): the key of what does not
        depend on the order -- the WHERE clause, the count."""
        return self if self.order is Order.STARTED else replace(self, order=Order.STARTED)
