"""Listing sessions for people: pages of the human list, title/id matching, conversation names.

Every function takes a :class:`~hermes_state.store.Store` (read-only is enough) and, for what a
list's filters choose, one :class:`~hermes_state.listing.query.ListQuery`; it blocks and
returns typed rows. The store's list engine (:func:`~hermes_state.listing.engine.lister_of`)
keeps what makes the next page cheap on that connection. This is where the browser's list
queries live, so the UI never writes SQL.
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any, Iterable

from ..preview import compute_preview
from ..tips import conversation_tips
from ..models import SessionSummary
from .engine import lister_of
from .marks import mark_filters
from .query import ListQuery
# The module itself, not its names: tests lower its walk limits by patching it.
import hermes_state.listing.activity as activity
from ..query import escape_like
from ..visibility import INTERNAL_SOURCES, NO_WORKSPACE

if TYPE_CHECKING:
    from ..store import Store
    from .title_index import TitleIndex


#: SQLite binds only valid UTF-8: a lone surrogate (pasted, or decoded from bad bytes) would
#: raise UnicodeEncodeError, and no title or id can contain one anyway.
_SURROGATES_RE = re.compile("[\ud800-\udfff]")

#: A title substring is looked for among this many newest sessions first.
RECENT_TITLE_WINDOW = 2000
#: The title index's candidates read through SQL at most: a text that many titles hold but the
#: filters reject is left to SQLite's scan of every title.
MAX_TITLE_CANDIDATES = 4000


def hidden_sources(source: str | None, show_internal: bool = False) -> list[str] | None:
    """The sources to leave out for a list filtered to ``source`` (None: leave none out)."""
    if source or show_internal:
        return None
    return list(INTERNAL_SOURCES)


def _source_clause(query: ListQuery) -> tuple[str, list[Any]]:
    """The SQL of ``query``'s source filters (one source, else the sources left out)."""
    if query.source:
        return " AND s.source = ?", [query.source]
    excluded = list(query.exclude_sources)
    if excluded:
        return f" AND s.source NOT IN ({','.join('?' for _ in excluded)})", excluded
    return "", []


#: The browser's view filter over archived conversations (BR-11), in cycling order.
VIEWS: tuple[str, ...] = ("active", "archived", "all")


def view_options(view: str) -> dict[str, bool]:
    """``include_archived`` / ``archived_only`` of a view filter (``active``, ``archived``, ``all``)."""
    if view not in VIEWS:
        raise ValueError(f"unknown view {view!r}; one of {', '.join(VIEWS)}")
    return {"include_archived": view == "all", "archived_only": view == "archived"}


def page(
    store: "Store",
    query: ListQuery,
    offset: int,
    limit: int,
    *,
    count: bool = True,
    provisional: bool = False,
) -> tuple[list[SessionSummary], int | None]:
    """One page of ``query``'s list (compression chains at their tip) and the list's length
    (None with ``count=False``: counting a large store costs more than its first page).

    ``provisional``: a first page that must be quick may rest on what the recency cache knew
    of the pinned sessions; the rows (a :class:`~hermes_state.listing.sql.Listed`) then say
    ``exact = False`` and the page should be asked for again, exactly, once it is shown.
    Pinned conversations come first in every order (BR-12).
    """
    def read() -> tuple[list[SessionSummary], int | None]:
        rows = lister.list_summaries(query, limit, offset, provisional=provisional)
        if not count:
            return rows, None
        return rows, lister.count_listed(query)

    lister = lister_of(store)
    # One snapshot: the page and its count agree, even while other processes commit.
    return store.read_snapshot(read)


#: Past this many rows of the list by start, a page walks the start index over every row
#: before it (~50 ms a page 10,000 rows deep, 0.4-0.8 s past 100,000 at 250k sessions).
BY_START_DEEP_ROWS = 2_000


def ranked_deep(offset: int, limit: int, *, by_activity: bool) -> bool:
    """Does :func:`page` cost much more than a slice of :func:`rank` for this page? By last
    activity past the first conversations, which the newest messages find (it ranks every
    listed conversation: seconds at 250k sessions); by start past
    :data:`BY_START_DEEP_ROWS`. A reader paging deep should page through one :func:`rank`."""
    if by_activity:
        return offset + limit > activity.ACTIVITY_WALK_ROWS
    return offset + limit > BY_START_DEEP_ROWS


def rank(store: "Store", query: ListQuery) -> list[str]:
    """The ids of every conversation :func:`page` lists for ``query``, in its order:
    ``page(store, query, offset, limit)`` shows ``summaries_of(store, rank(store,
    query)[offset:offset + limit], query)`` while the store is unchanged."""
    return lister_of(store).rank_listed(query)


def summaries_of(store: "Store", conversation_ids: list[str], query: ListQuery | None = None) -> list[SessionSummary]:
    """The list's rows of these conversations (from :func:`rank` of ``query``: delegate runs
    are marked as such when it lists them), in this order."""
    include_delegates = query.include_delegates if query is not None else False
    return lister_of(store).summaries_of(conversation_ids, include_delegates=include_delegates)


def count_listed(store: "Store", query: ListQuery) -> int:
    """How many rows :func:`page` lists for ``query`` (a scan of ``sessions``)."""
    return lister_of(store).count_listed(query)


@dataclass(frozen=True)
class WorkspaceCount:
    """One workspace of the picker (BR-13): its path (:data:`NO_WORKSPACE` for conversations
    whose store row names none) and how many listed conversations it has."""

    workspace: str
    count: int


def workspace_counts(store: "Store", query: ListQuery) -> list[WorkspaceCount]:
    """Every workspace with the number of conversations the list would show in it under
    ``query``'s other filters, busiest first (one grouped scan of ``sessions``; none on
    stores before v16)."""
    expr = store.rules.workspace_sql()
    caps = store.capabilities
    if expr is None or not (caps.has_cwd or caps.has_git_repo_root):
        return []  # the store records no workspace (a read-only open shows NULL columns)
    where, params = lister_of(store).filters(query.with_(workspace=None, include_children=False, min_messages=0))
    rows = store.fetchall(
        f"SELECT {expr} AS w, COUNT(*) AS n FROM sessions s {where} GROUP BY w "
        "ORDER BY n DESC, w IS NULL, w",
        params,
    )
    return [WorkspaceCount(row[0] if row[0] is not None else NO_WORKSPACE, int(row[1])) for row in rows]


def workspace_session_ids(store: "Store", query: ListQuery) -> list[str]:
    """Every session in ``query``'s workspace (children included: an export takes whole
    lineages), newest first, under its source filters (BR-13; :data:`NO_WORKSPACE`: those
    without one). Its other filters play no part: an export of a workspace takes it all."""
    if query.workspace is None:
        raise ValueError("workspace_session_ids needs a query with a workspace")
    narrow, params = store.rules.workspace_clause(query.workspace)
    extra, extra_params = _source_clause(query)
    rows = store.fetchall(
        f"SELECT s.id FROM sessions s WHERE {narrow}{extra} ORDER BY s.started_at DESC",
        [*params, *extra_params],
    )
    return [row[0] for row in rows]


def page_of_ids(
    store: "Store",
    session_ids: Iterable[str],
    offset: int,
    limit: int,
    query: ListQuery = ListQuery(),
) -> tuple[list[SessionSummary], int]:
    """A page of just these sessions (e.g. those live in a gateway lane), by last activity,
    newest first, as the browser's title for them says (the lanes view was by start), under
    ``query``'s source, workspace, unread-only and status filters, as the list's. (Its view,
    hidden and order play no part: a live lane's session is shown whatever it is.)"""
    ids = sorted(set(session_ids))
    if not ids:
        return [], 0
    rules = store.rules
    extra, extra_params = _source_clause(query)
    narrow, narrow_params = rules.workspace_clause(query.workspace)
    if narrow is not None:
        extra += f" AND {narrow}"
        extra_params = extra_params + narrow_params
    marked, marked_params = mark_filters(store, query)
    extra += "".join(f" AND {clause}" for clause in marked)
    extra_params = extra_params + marked_params
    where = f"s.id IN ({','.join('?' for _ in ids)}){extra}"
    params: list[Any] = ids + extra_params

    def read(conn: sqlite3.Connection) -> tuple[list[str], int]:
        found = [
            row[0]
            for row in conn.execute(
                f"SELECT s.id FROM sessions s WHERE {where} "
                f"ORDER BY {rules.last_active_sql()} DESC, s.started_at DESC, s.id DESC LIMIT ? OFFSET ?",
                params + [int(limit), int(offset)],
            )
        ]
        total = conn.execute(f"SELECT COUNT(*) FROM sessions s WHERE {where}", params).fetchone()[0]
        return found, int(total)

    found, total = store.read(read)
    return lister_of(store).get_summaries(found), total


def match_sessions(
    store: "Store",
    text: str,
    query: ListQuery = ListQuery(),
    *,
    limit: int = 8,
    index: "TitleIndex | None" = None,
) -> list[SessionSummary]:
    """Sessions whose id starts with ``text`` or whose title contains it (BR-2 a), under
    ``query``'s source and workspace filters; hidden sessions (v30) only with its
    ``include_hidden`` (UC-3, BR-15). (Its other filters play no part here: the caller
    applies the unread-only and status filters to the rows, the time window by conversation.)

    An id prefix is a range on the primary key. A title substring: with ``index`` (a
    :class:`~hermes_state.title_index.TitleIndex` kept for this connection) the titles are
    walked in memory newest first and each batch of candidates read again through SQL until
    ``limit`` pass (the 2,000 newest sessions are read first when something was committed
    since the index was built: a title set since); without one, the newest sessions, then
    SQLite's scan of every title (26-50 ms at 250k sessions). Titles are matched from 3
    characters on, as prefixes are.
    """
    text = _SURROGATES_RE.sub("", text).strip()
    if not text:
        return []
    rules = store.rules
    filters, fparams = _source_clause(query)
    narrow, narrow_params = rules.workspace_clause(query.workspace)
    if narrow is not None:
        filters += f" AND {narrow}"
        fparams = fparams + narrow_params
    if not query.include_hidden and rules.hidden:
        filters += f" AND {rules.not_hidden('s')}"
    recent_columns = "id, title, source, started_at" + "".join(
        f", {column}" for column, present in (
            ("cwd", rules.cwd), ("git_repo_root", rules.git_repo_root), ("hidden", rules.hidden),
        )
        if present
    )

    def read(conn: sqlite3.Connection) -> list[str]:
        found: list[str] = []

        def add(rows: Iterable[Any]) -> int:
            n = 0
            for row in rows:
                n += 1
                if row[0] not in found and len(found) < limit:
                    found.append(row[0])
            return n

        add(conn.execute(
            f"SELECT s.id FROM sessions s WHERE s.id >= ? AND s.id < ?{filters} "
            "ORDER BY s.started_at DESC LIMIT ?",
            [text, text + "\U0010ffff", *fparams, limit],
        ))
        if len(text) >= 3 and len(found) < limit:
            like = f"%{escape_like(text)}%"
            exact = False
            if index is not None:
                index.refresh(conn)
                exact = index.exact
            # The newest sessions are read again unless the index has seen no commit since its
            # build: a title set after the index read its session is among them.
            if not exact:
                recent = add(conn.execute(
                    f"SELECT s.id FROM (SELECT {recent_columns} FROM sessions "
                    f"ORDER BY started_at DESC LIMIT {RECENT_TITLE_WINDOW}) s "
                    f"WHERE s.title LIKE ? ESCAPE '\\'{filters} ORDER BY s.started_at DESC LIMIT ?",
                    [like, *fparams, limit],
                ))
                if recent >= limit:
                    return found
            titled = None
            if index is not None:
                titled = _titled_through_index(conn, index, text, like, filters, fparams, limit)
            if titled is None:
                # (An older file read through its compat view has no rowids: by id.)
                key = "id" if "sessions" in store.compat_views else "rowid"
                add(conn.execute(
                    f"SELECT s.id FROM sessions s WHERE s.{key} IN (SELECT {key} FROM sessions "
                    f"WHERE title IS NOT NULL AND title LIKE ? ESCAPE '\\'){filters} "
                    "ORDER BY s.started_at DESC LIMIT ?",
                    [like, *fparams, limit],
                ))
            else:
                add((session_id,) for session_id in titled)
        return found

    return lister_of(store).get_summaries(store.read(read))


def _titled_through_index(
    conn: sqlite3.Connection, index: "TitleIndex", text: str, like: str, filters: str,
    fparams: list[Any], limit: int,
) -> list[str] | None:
    """The ids of the ``limit`` newest sessions whose title contains ``text`` (``like``) and
    that pass ``filters``, newest first, from the index's candidates read again through SQL
    (so a title changed or deleted since the index read it is never a wrong answer); None when
    the index cannot say (a text with a line break, or too many candidates rejected)."""
    fresh = index.fresh(text)
    walk = index.newest(text)
    if fresh is None or walk is None:
        return None

    def check(rowids: list[int]) -> list[tuple[Any, str]]:
        if not rowids:
            return []
        return [
            (row[1], row[0]) for row in conn.execute(
                f"SELECT s.id, s.started_at FROM {index.source} WHERE {index.rowid_sql} IN (SELECT value FROM json_each(?)) "
                f"AND s.title LIKE ? ESCAPE '\\'{filters}",
                [json.dumps(rowids), like, *fparams],
            )
        ]

    # Sessions titled since the build are all looked at (they need not be the newest); the
    # rest in the index's order, newest first, until ``limit`` of them pass: any later one
    # started before those.
    rows = check(fresh)
    passed = 0
    read = 0
    size = max(limit, 8)
    while passed < limit:
        batch = list(islice(walk, size))
        if not batch:
            break
        read += len(batch)
        if read > MAX_TITLE_CANDIDATES:
            return None
        got = check(batch)
        passed += len(got)
        rows += got
        size = min(size * 4, 1024)
    # Newest first as SQL orders them (a missing start time last).
    rows.sort(key=lambda row: (row[0] is not None, row[0] or 0), reverse=True)
    return [session_id for _started, session_id in rows[:limit]]


def refresh_title_index(store: "Store", index: "TitleIndex") -> None:
    """Bring ``index`` up to date with ``store`` (built on first use), under its lock."""
    store.read(index.refresh)


def title_index_version(store: "Store") -> tuple[int, int]:
    """``store``'s own count of its commits, for an index built on another connection
    and refreshed on this one (:meth:`~hermes_state.title_index.TitleIndex.answer_on`)."""
    from .title_index import store_version

    return store.read(store_version)


@dataclass(frozen=True)
class ConversationLabel:
    """What a search names a conversation by: its name, and whether it is archived or
    hidden (UC-3: marked wherever it still appears)."""

    text: str
    archived: bool = False
    hidden: bool = False
    #: ``text`` is a title (else a preview): a script is told the title, not a preview.
    titled: bool = False


def conversation_labels(store: "Store", root_ids: list[str]) -> dict[str, ConversationLabel]:
    """Each conversation's name: its live tip's title, else the root's title or preview; and
    the root's archived and hidden flags (archiving applies to the whole compression lineage).

    One query for all roots; only compressed roots need their tip looked up.
    """
    if not root_ids:
        return {}
    marks = ",".join("?" for _ in root_ids)
    rules = store.rules
    preview = rules.preview_sql()

    def read(conn: sqlite3.Connection) -> list[sqlite3.Row]:
        return conn.execute(
            f"SELECT s.id, s.title, s.end_reason, {preview} AS preview, "
            f"NOT ({rules.not_archived('s')}) AS archived, NOT ({rules.not_hidden('s')}) AS hidden "
            f"FROM sessions s WHERE s.id IN ({marks})",
            root_ids,
        ).fetchall()

    labels: dict[str, ConversationLabel] = {}
    rows = store.read(read)
    # The tips of the compressed roots, walked once and kept until the store changes (two
    # look-ups a segment from Python took 4.7 s a search on a chain of 200,000 segments).
    tips = conversation_tips(store, [row["id"] for row in rows if row["end_reason"] == "compression"])
    for row in rows:
        titled = bool(row["title"])
        label = row["title"] or compute_preview(row["preview"])
        tip = tips.get(row["id"], row["id"])
        if tip != row["id"]:
            title = store.read(lambda conn, tip=tip: conn.execute(
                "SELECT title FROM sessions WHERE id = ?", (tip,)).fetchone())
            if title and title[0]:
                label, titled = title[0], True
        labels[row["id"]] = ConversationLabel(label, bool(row["archived"]), bool(row["hidden"]), titled)
    return labels
