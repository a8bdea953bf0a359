"""The conversations a search found, as the list would show them: one home for the last step
of every search by conversation (the browser's pane, ``hermes-sessions search``).

:func:`hermes_state.search.conversations.search` answers with ranked message-level hits,
each tagged with its conversation. What a reader of the answer needs beside them is what the
list knows of each conversation: its name (:func:`~hermes_state.listing.conversation_labels`),
the id the list shows it under (its live tip: what ``hermes --resume`` takes), its archived
and hidden flags, its read state, lifecycle status and last activity
(:func:`~hermes_state.listing.marks.conversation_marks`), and whether the list's filters
that choose *conversations* keep it -- the unread-only and status filters, the list's
``narrow`` (time window, title, model, cost, …) and ``min_messages``, which a search does not
apply to messages (see :mod:`hermes_state.search.options`). :func:`found_conversations` does
that step, in rank order, and counts the conversations it dropped so an empty answer can say
why.

The search field's own ``after:`` / ``before:`` terms narrow the list's time window
(:func:`hermes_state.timewindow.windowed`, BR-21): the one reading of them for every caller.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, TypeVar

from ..conversation import conversation_roots
from ..listing.marks import conversation_marks, keeps
from ..listing.narrow import narrowed_ids
from ..listing.pages import ConversationLabel, conversation_labels
from ..retrieval import group_hits_by_conversation
from ..sql_ids import in_chunks

if TYPE_CHECKING:  # pragma: no cover
    from ..listing.query import ListQuery
    from ..models import SearchHit, SearchResult
    from ..store import Store

T = TypeVar("T")

#: How a caller reads the roots / names of conversations when it keeps its own memo of them
#: (the browser's door does, between keys): given ids, answers ``{id: root}`` / ``{root: label}``.
RootsOf = Callable[[set[str]], dict[str, str]]
LabelsOf = Callable[[list[str]], dict[str, ConversationLabel]]


@dataclass
class FoundConversation:
    """One conversation of a search's answer, as the list knows it."""

    #: The conversation (its lineage root: the row the list has for it).
    root_id: str
    #: The id the list shows it under and ``hermes --resume`` takes: the live tip of its
    #: compression chain (the root itself when it never compressed).
    tip_id: str
    #: Its name as the list shows it: the tip's title, else the root's title or preview.
    label: str
    #: Whether ``label`` is a title (else a preview, or the id when there is neither).
    titled: bool
    #: The source of the session its best hit is in.
    source: str
    archived: bool
    hidden: bool
    #: Activity since it was last read (upstream's watermark; never on stores without it).
    unread: bool
    #: How its last turn ended (:mod:`hermes_state.lifecycle`), None when not known.
    status: str | None
    #: Its last activity as the list shows it (the tip's), None when not known.
    last_active: float | None
    #: Its hits in rank order (the best first).
    hits: list["SearchHit"] = field(default_factory=list)
    #: Found across messages (SR-17): how many of its messages together hold the words; 0
    #: when one message holds them all.
    across: int = 0


@dataclass
class Found:
    """The conversations of one page of a search's answer, and how many it found that the
    list's conversation filters left out."""

    conversations: list[FoundConversation] = field(default_factory=list)
    #: Conversations (roots) among the hits that the time window (and the other ``narrow``
    #: filters, ``min_messages``) or the unread-only / status filters dropped.
    dropped_roots: list[str] = field(default_factory=list)

    @property
    def dropped(self) -> int:
        return len(self.dropped_roots)


def _direct(read: Callable[[], T]) -> T:
    return read()


def found_conversations(
    store: "Store",
    result: "SearchResult",
    query: "ListQuery",
    *,
    roots_of: RootsOf | None = None,
    labels_of: LabelsOf | None = None,
    retry: Callable[[Callable[[], T]], T] = _direct,  # type: ignore[assignment]
) -> Found:
    """The conversations of ``result`` (a :func:`hermes_state.search.search` answer under
    ``query``), in its order, each named and marked as the list marks it, kept only when
    the list's conversation filters of ``query`` keep it.

    ``roots_of`` / ``labels_of``: the caller's own memo of roots and names (default: read
    from ``store``, whose own memos hold until it changes); ``retry``: how a read is retried
    while another process holds the lock (default: once)."""
    hits = result.hits
    if not hits:
        return Found()
    sessions = {hit.session_id for hit in hits}
    roots = roots_of(sessions) if roots_of is not None else retry(lambda: conversation_roots(store, sessions))
    found_roots = list(dict.fromkeys(roots.get(hit.session_id, hit.session_id) for hit in hits))
    kept_roots = kept_by_conversation_filters(store, query, found_roots, retry)
    if kept_roots is not None:
        hits = [hit for hit in hits if roots.get(hit.session_id, hit.session_id) in kept_roots]
    if all(hit.session_id in roots for hit in hits):
        # Grouped here by the roots known, in the hits' order (as group_hits_by_conversation
        # groups them): its ConversationHit models validated each group's hits again at
        # every key, for the root and the hits only.
        by_root: dict[str, list[SearchHit]] = {}
        for hit in hits:
            by_root.setdefault(roots[hit.session_id], []).append(hit)
        grouped = list(by_root.items())
    else:
        grouped = [(c.root_id, c.hits) for c in group_hits_by_conversation(store, hits, roots)]
    ids = [root for root, _members in grouped]
    labels = labels_of(ids) if labels_of is not None else retry(lambda: conversation_labels(store, ids))
    # Unread and status of each conversation, by the list's own rule: marked, and kept only
    # if the list's unread-only and status filters would keep it.
    marked = retry(lambda: conversation_marks(store, ids))
    unnamed = ConversationLabel("")
    out: list[FoundConversation] = []
    for root, members in grouped:
        marks = marked.get(root)
        if not keeps(marks, query):
            continue
        name = labels.get(root, unnamed)
        out.append(FoundConversation(
            root_id=root,
            tip_id=(marks.tip if marks is not None and marks.tip else root),
            label=name.text or root,
            titled=name.titled,
            source=members[0].source or "",  # (its best hit's)
            archived=name.archived,
            hidden=name.hidden,
            unread=bool(marks is not None and marks.unread),
            status=marks.lifecycle if marks is not None else None,
            last_active=marks.last_active if marks is not None else None,
            hits=list(members),
            across=max((hit.across for hit in members), default=0),
        ))
    shown = {c.root_id for c in out}
    return Found(out, [root for root in found_roots if root not in shown])


def kept_by_conversation_filters(
    store: "Store", query: "ListQuery", roots: list[str], retry: Callable[[Callable[[], T]], T] = _direct,  # type: ignore[assignment]
) -> set[str] | None:
    """Those of ``roots`` (conversations, or the listed rows of a title match) the list's
    ``narrow`` and ``min_messages`` keep (each read as the list reads its row); None when
    ``query`` has neither (every one is kept)."""
    narrow, least = query.narrow, query.min_messages
    if not narrow and not least:
        return None

    def run(conn: sqlite3.Connection) -> set[str]:
        kept = narrowed_ids(conn, narrow, store.rules, store.has_session_column, roots) if narrow else set(roots)
        if least and kept:
            kept = _with_messages(conn, store, sorted(kept), least)
        return kept

    return retry(lambda: store.read(run))


def _with_messages(conn: sqlite3.Connection, store: "Store", ids: list[str], least: int) -> set[str]:
    """Those of ``ids`` whose row counts at least ``least`` messages (the list's
    ``min_messages``, on the same column)."""
    if not store.has_session_column("message_count"):
        return set()  # (the list's rule on such a store matches nothing either)
    kept: set[str] = set()
    for chunk, marks in in_chunks(ids):
        kept.update(row[0] for row in conn.execute(
            f"SELECT id FROM sessions WHERE id IN ({marks}) AND message_count >= ?", [*chunk, least]))
    return kept


def dropped_note(dropped: int, names: list[str] | tuple[str, ...]) -> str:
    """One line for an answer the conversation filters emptied: how many conversations
    matched and which filters (``names``, :meth:`ListQuery.conversation_filters`) left them out."""
    names = list(names) or ["the filters"]
    which = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    matched = "1 conversation matches" if dropped == 1 else f"{dropped:,} conversations match"
    return f"{matched}, left out by {which}"
