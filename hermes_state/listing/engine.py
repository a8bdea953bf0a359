"""The listing engine: the human list of one store, page by page, in its orders.

A :class:`Lister` belongs to one :class:`~hermes_state.store.Store` and keeps what makes the
next page cheap on that connection: the filters' SQL, the pinned sessions, counts, the
recency index (which sessions hold the newest messages) and the per-source sizes that choose
how a list by start is walked. ``SessionDB`` hands its list methods to it; every reader of a
store asks :func:`lister_of` for the same one.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from ..capabilities import Capabilities
from ..visibility import Rules, count_shown_messages
# The module itself, not its names: tests lower its walk limits by patching it.
import hermes_state.listing.activity as activity
from .activity import MetConversations, activity_candidates, chain_list_sql
from .marks import mark_filters, with_lifecycle
from .narrow import narrow_clauses
from .query import ListQuery
from .recency import RecencyWalk as _RecencyWalk
from .sql import (
    BY_START,
    BY_START_VIEW,
    SORTED_ROW_COST,
    SOURCE_WALK_CERTAIN,
    SUMMARY_COLUMNS,
    WALK_ROW_COST,
    Listed,
    finish_listing,
    list_filters,
    listed_chunks,
    pinned_and_rest,
    rich_row,
    rows_of,
    summary_column,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..models import SessionSummary
    from ..store import Store


#: Summaries :meth:`Lister.get_summaries` keeps while nothing commits (a title match's rows:
#: eight a key).
SUMMARIES_KEPT = 2_000


def lister_of(store: "Store") -> "Lister":
    """The list engine of ``store``: one per store, made at the first ask and kept on the
    store (:meth:`~hermes_state.store.Store.attached`). Every caller of a store -- the
    facade, the list's pages, an export, a recall -- reads its list through this one, with
    the caches of the store's connection (pins, counts, the recency index)."""
    return store.attached(Lister, Lister)


class Lister:
    """The human list of one store (see the module docstring)."""

    def __init__(self, store: "Store") -> None:
        self.store = store
        #: ``(rules, {filters: (where, params)})``: see :meth:`filters`.
        self._filters_kept: tuple[Rules, dict] | None = None
        self._extra_pins: frozenset[str] | None = None
        #: A provisional page rested on "no pins" (none known yet): see :meth:`assume_pins`.
        self._rested_on_no_pins = False
        self._pins_cache: tuple[int, frozenset[str]] | None = None
        self._count_cache: dict[tuple, tuple[int, int]] = {}
        #: Per source: (data_version, its sessions counted up to SOURCE_WALK_CERTAIN, the
        #: store's largest rowid), for :meth:`walk_start_for`.
        self._source_sizes: dict[str, tuple[int, int, int]] = {}
        #: The sessions of the newest messages, kept between lists by last activity (BR-10).
        self.recency = _RecencyWalk(store.path)
        self._summary_cols: tuple[Capabilities, str] | None = None
        # The recency index is kept for the next run when the store closes.
        store.on_close.append(lambda: self.recency.save())

    @property
    def extra_pins(self) -> frozenset[str]:
        """Pins kept in our settings file, for a store without ``sessions.pinned``."""
        if self._extra_pins is not None:
            return self._extra_pins
        if self.store.has_session_column("pinned"):
            return frozenset()
        from .pins import pinned_in_file

        # Read again whenever the file changed (a stat per look): a pin made by another
        # process shows at the next list, not only after this process pins something.
        return pinned_in_file(self.store.path)

    @extra_pins.setter
    def extra_pins(self, value: frozenset[str]) -> None:
        """Pins for this reader only, in place of the settings file (tests, benches)."""
        self._extra_pins = frozenset(value)

    def forget_pins(self) -> None:
        """Our own commit changed the pins: the next look reads them again (our commits do
        not move this connection's ``data_version``)."""
        self._pins_cache = None

    def pinned_ids(self) -> frozenset[str]:
        """Ids of the pinned sessions, exactly (on a v30 store: a scan of every session row,
        kept until another connection commits)."""
        return self.pinned_ids_known()

    @property
    def recency_guessed(self) -> bool:
        """This reader's recency index is only a guess (see :meth:`RecencyWalk.guess`): its
        provisional pages may rank otherwise than the store says."""
        return self.recency.guessed

    def build_recency(self) -> _RecencyWalk:
        """A recency index built on this connection (one seek per session), for
        :meth:`adopt_recency` by another: the build need not hold that one's lock."""
        walk = _RecencyWalk(self.store.path)
        self.store.read(walk.build)
        return walk

    def adopt_recency(self, walk: _RecencyWalk) -> bool:
        """Use ``walk`` (built by another connection to the same file) as this reader's
        recency index; it is kept in this reader's cache file. True when it ranks otherwise
        than what this reader rested on (its provisional pages may need reading again)."""
        with self.store.lock:
            changed = walk.order != self.recency.order or walk.bound != self.recency.bound
            walk.cache = self.recency.cache
            if walk.pins is None:
                walk.pins = self.recency.pins
            self.recency = walk
            walk.save()
            return changed

    def assume_pins(self, pins: frozenset[str]) -> frozenset[str] | None:
        """The pinned sessions as another connection found them exactly: what a provisional
        page (see :meth:`list_sessions_rich`) rests on from now on. Returns what it rested on
        before (None: nothing yet)."""
        previous, self.recency.pins = self.recency.pins, frozenset(pins)
        if previous is None and self._rested_on_no_pins:
            previous = frozenset()  # a provisional page was shown with no pin known
        self._rested_on_no_pins = False
        return previous

    def pinned_first(self, alias: str = "s") -> str:
        """ORDER BY term: pinned conversations first (the column, else the settings file)."""
        rank = self.pinned_rank(alias)
        return f"{rank} DESC, " if rank is not None else ""

    def pinned_rank(self, alias: str = "s") -> str | None:
        """What :meth:`pinned_first` orders by (higher first); None when nothing is pinned."""
        if self.store.has_session_column("pinned"):
            return self.store.rules.pinned_rank(alias)
        pins = self.extra_pins
        if not pins:
            return None
        quoted = ",".join("'" + p.replace("'", "''") + "'" for p in sorted(pins))
        return f"({alias}.id IN ({quoted}))"

    @property
    def recency_cache(self) -> Path | None:
        """A file that keeps this reader's recency index (which sessions hold the newest
        messages, BR-10) between runs, or None (the default: kept in memory only). Set it
        before the first list by last activity; see :mod:`hermes_state.recency`."""
        return self.recency.cache

    @recency_cache.setter
    def recency_cache(self, path: Path | None) -> None:
        self.recency.cache = Path(path) if path is not None else None

    def filters(self, query: ListQuery, *, walk_source: bool = False) -> tuple[str, list[Any]]:
        """WHERE clause (alias ``s``) of ``query``'s rows, shared by listing and counting
        (built once per query and schema: a page asks for it twice, a browser on every page);
        ``walk_source`` as :func:`list_filters`. The order plays no part."""
        rules = self.store.rules
        key = (query.unordered, walk_source)
        kept = self._filters_kept
        if kept is None or kept[0] is not rules:
            kept = self._filters_kept = (rules, {})
        found = kept[1].get(key)
        if found is not None:
            return found[0], list(found[1])
        where, params = self._build_filters(rules, query, walk_source)
        if len(kept[1]) >= 64:
            kept[1].clear()
        kept[1][key] = (where, tuple(params))
        return where, params

    def _build_filters(self, rules: Rules, q: ListQuery, walk_source: bool = False) -> tuple[str, list[Any]]:
        where, params = list_filters(rules, q, walk_source)
        # The row's own flags first: SQLite tests a scanned row's terms in this order, and the
        # lineage test (subqueries, JSON) rejected what a flag would have (the archived view
        # by last activity: 170 -> 130 ms a page at 250k sessions). (No parameters: the
        # order of the placeholders is unchanged.)
        flags: list[str] = []
        if self.store.has_session_column("archived"):
            if q.archived_only:
                flags.append("s.archived = 1")
            elif not q.include_archived:
                flags.append("s.archived = 0")
        elif q.archived_only:
            flags.append("0")
        if not q.include_hidden and self.store.has_session_column("hidden"):
            flags.append("COALESCE(s.hidden, 0) = 0")  # UC-3: hidden unless asked for
        clauses = flags + ([where[len("WHERE "):]] if where else [])
        if q.min_messages > 0:
            clauses.append("s.message_count >= ?")
            params.append(q.min_messages)
        narrow, narrow_params = rules.workspace_clause(q.workspace)
        if narrow is not None:  # BR-13: one workspace
            clauses.append(narrow)
            params.extend(narrow_params)
        marked, marked_params = mark_filters(self.store, q)  # unread only, lifecycle statuses
        clauses += marked
        params += marked_params
        if q.narrow:  # time window, title, model, cost, ... (listing/narrow.py)
            more, more_params = narrow_clauses(q.narrow, rules, self.store.has_session_column)
            clauses.extend(more)
            params.extend(more_params)
        return ("WHERE " + " AND ".join(clauses)) if clauses else "", params

    def rows(
        self,
        query: ListQuery,
        limit: int = 20,
        offset: int = 0,
        *,
        id_query: str | None = None,
        project: bool = True,
        columns: str | None = None,
        provisional: bool = False,
    ) -> list[dict]:
        """A page of ``query``'s list as upstream's dict rows, with ``preview`` and
        ``last_active`` (LI-2 … LI-5).

        Unless ``query.include_children``, only what is listed on its own (roots, branches,
        reset children, orphans; delegate runs only with ``include_delegates``); ``project``
        then replaces a compression root by its live tip (``_lineage_root_id`` names the
        root). ``id_query`` keeps rows whose id, or an id along their chain, contains it
        (case-insensitive). ``columns`` reads only these columns of each row (alias ``s``).

        ``provisional`` (a first page that must be quick, BR-10): the pinned sessions may be
        taken from the recency cache instead of reading every session row to find them; the
        list returned (a :class:`Listed`) then says ``exact = False``, and the caller asks
        again without it once the page is shown.
        """
        # One read snapshot: the filters, the walk and the rows see one state, and the
        # schema is checked once for all of them (see ``capabilities``).
        return self.store.read_snapshot(
            lambda: self._rows(query, limit, offset, id_query, project, columns, provisional)
        )

    def _rows(
        self, q: ListQuery, limit: int, offset: int, id_query: str | None, project: bool,
        columns: str | None, provisional: bool,
    ) -> list[dict]:
        columns = columns or "s.*"
        include_children, include_delegates = q.include_children, q.include_delegates
        order_by_last_active = q.by_activity
        project_compression_tips = project
        where, params = self.filters(q)
        needle = (id_query or "").strip().lower()
        if (
            order_by_last_active and not needle and not include_children
            and 0 <= offset and offset + limit <= activity.ACTIVITY_WALK_ROWS
        ):
            # The first pages by last activity without computing it for every session
            # (BR-10): only the conversations that can be on the page are ranked.
            rows = self._activity_first_pages(
                where, params, limit, offset, project_compression_tips, include_delegates, columns,
                provisional,
            )
            if rows is not None:
                return rows
        if order_by_last_active or needle:
            return self._chain_page(
                where, params, needle, order_by_last_active, limit, offset,
                project_compression_tips and not include_children, include_delegates, columns,
            )
        else:
            if q.source and self.walk_start_for(q.source, offset + limit):
                where, params = self.filters(q, walk_source=True)
            select = self._by_start_select(columns)
            pins = sorted(self.pinned_ids_known())
            if pins:
                # Pinned first without giving up the start-time index: the few pinned rows
                # are read apart, the rest walk the index (sorting every session by a
                # "pinned" flag took 400 ms at 50k sessions).
                return self._pinned_then_rest(select, where, params, pins, limit, offset,
                                              project_compression_tips and not include_children,
                                              include_delegates, columns)
            sql = f"{select} {where} ORDER BY {self.by_start()}"
        sql += " LIMIT ? OFFSET ?"
        params += [int(limit), int(offset)]

        rules = self.store.rules
        file_pins = self.extra_pins

        def do(conn: sqlite3.Connection) -> list[dict]:
            rows = [rich_row(row) for row in conn.execute(sql, params).fetchall()]
            return finish_listing(conn, rows, rules, file_pins,
                                   project_compression_tips and not include_children, include_delegates,
                                   columns)

        return self.store.read(do)

    def _chain_page(
        self, where: str, params: list[Any], needle: str, by_activity: bool, limit: int, offset: int,
        project: bool, include_delegates: bool, columns: str,
    ) -> list[dict]:
        """A page ranked along each conversation's compression chain (by its last activity, or
        found by an id along the chain), in two statements: the page's ids ranked, then their
        rows and previews. One statement computed every listed session's preview and columns
        before sorting them: a page deep in the list by last activity took 7.8-8.4 s at 5M
        messages (v30), 4.4-4.6 s ranking ids alone."""
        rules = self.store.rules
        ranked_sql, ranked_params = chain_list_sql(
            where, params, needle, by_activity, rules, self.pinned_first(), "s.id", previews=False,
        )
        ranked_sql += " LIMIT ? OFFSET ?"
        ranked_params += [int(limit), int(offset)]
        file_pins = self.extra_pins

        def do(conn: sqlite3.Connection) -> list[dict]:
            cursor = conn.cursor()
            cursor.row_factory = None
            ranked = [sid for sid, _chain_last in cursor.execute(ranked_sql, ranked_params).fetchall()]
            return rows_of(conn, ranked, rules, file_pins, project, include_delegates, columns)

        return self.store.read(do)

    def rank_listed(self, query: ListQuery) -> list[str]:
        """The ids of every conversation :meth:`list_summaries` lists for ``query``, in its
        order (compression roots: each is shown at its tip): the whole ranking its pages are
        slices of, for a reader that pages deep into the list. By last activity, one scan of
        every listed session and its newest message (seconds at 250k sessions); by start,
        one walk of the start index (~1 s there), where each page deep in the list walked it
        up to its offset instead."""
        where, params = self.filters(query.with_(include_children=False))
        by_activity = query.by_activity
        if not by_activity:
            return self.store.read_snapshot(lambda: self._rank_by_start(where, params))
        sql, params = chain_list_sql(
            where, params, "", True, self.store.rules, self.pinned_first(), "s.id", previews=False,
        )

        def do(conn: sqlite3.Connection) -> list[str]:
            cursor = conn.cursor()
            cursor.row_factory = None
            return [sid for sid, _chain_last in cursor.execute(sql, params)]

        return self.store.read_snapshot(lambda: self.store.read(do))

    def _rank_by_start(self, where: str, params: list[Any]) -> list[str]:
        """:meth:`rank_listed` by start: the pinned conversations, then the rest, each in
        :data:`BY_START` order -- as :meth:`_pinned_then_rest` reads a page."""
        pins = sorted(self.pinned_ids_known())
        select = "SELECT s.id FROM sessions s"
        statements = pinned_and_rest(select, where, params, pins)
        order = self.by_start()

        def do(conn: sqlite3.Connection) -> list[str]:
            cursor = conn.cursor()
            cursor.row_factory = None
            ids: list[str] = []
            for sql, args in statements:
                ids += [row[0] for row in cursor.execute(f"{sql} ORDER BY {order}", args)]
            return ids

        return self.store.read(do)

    def summaries_of(self, conversation_ids: list[str], *, include_delegates: bool = False) -> list["SessionSummary"]:
        """The rows :meth:`list_summaries` shows for these conversations (ids from
        :meth:`rank_listed`), in this order; an id no longer in the store is left out."""
        from ..models import SessionSummary

        rules, file_pins, columns = self.store.rules, self.extra_pins, self.summary_columns()
        ids = list(conversation_ids)

        rewinds = self.store.has_message_column("active")

        def do(conn: sqlite3.Connection) -> list[dict]:
            rows = rows_of(conn, ids, rules, file_pins, True, include_delegates, columns)
            return with_lifecycle(self.store, count_shown_messages(conn, rules, rows, rewinds))

        return SessionSummary.from_listing(self.store.read_snapshot(lambda: self.store.read(do)))

    def _activity_first_pages(
        self, where: str, params: list[Any], limit: int, offset: int, project: bool,
        include_delegates: bool, columns: str = "s.*", provisional: bool = False,
    ) -> "Listed | None":
        """A page near the top of the list by last activity (BR-10), or None when the fast
        path cannot vouch for it (then the general query answers).

        One read transaction, so the walk, the ranking and the rows see the same state: the
        conversations that can be on the page are found from the newest messages
        (:func:`activity_candidates`) and read with what ranks them, ranked by their chains'
        last activity, and only the page's previews are read (:func:`activity_page`)."""
        rules = self.store.rules
        pinned_rank = self.pinned_rank()
        file_pins = self.extra_pins

        def do(conn: sqlite3.Connection, pins: frozenset[str]) -> list[dict] | None:
            walk = self.recency
            wanted = offset + limit
            for _attempt in range(4):
                met = MetConversations(columns, where, params, rules, pinned_rank, previews=offset == 0)
                try:
                    floor = activity_candidates(conn, walk, met, wanted, pins, provisional)
                except BaseException:
                    walk.reset()  # never keep a walk cut short by an error or an interrupt
                    raise
                if floor is None:
                    return None
                paged = activity.activity_page(conn, met, floor, pins, limit, offset, rules)
                if isinstance(paged, int):
                    # Conversations met in the walk that rank below its floor (their newest
                    # messages rewound): walk on for as many more.
                    wanted += paged
                    continue
                if paged is None:
                    return None
                rows, tips = paged
                return finish_listing(conn, rows, rules, file_pins, project, include_delegates, columns, tips)
            return None

        def snapshot() -> Listed | None:
            pins, exact = self.pinned_ids_known(provisional=provisional), True
            if pins is None:
                # The pins the recency cache kept (read with it), or none known yet (a first
                # run): no scan of every row -- ~0.1 s at 250k sessions, ~0.75 s from a cold
                # page cache -- before the first page. The caller reads the page again.
                self.store.read(lambda conn: self.recency.refresh(conn, guess_ok=True))
                pins, exact = self.recency.pins or frozenset(), False
                if self.recency.pins is None:
                    self._rested_on_no_pins = True  # what assume_pins reports it rested on
            rows = self.store.read(lambda conn: do(conn, pins))
            return None if rows is None else Listed(rows, exact=exact and not self.recency.guessed)

        return self.store.read_snapshot(snapshot)

    #: Up to this many session rows a scan for the pins costs ~10 ms (20,000 rows with 2 kB
    #: system prompts: ~40 ms on a loaded 2-core machine, too much for a first frame): a first
    #: page rests on the exact pins rather than a guess the census then corrects (at 80x24
    #: the first frame showed 2 pinned rows, then 6, moving the list under the cursor).
    EXACT_PINS_ROWS = 5_000

    def _small_enough_to_scan(self) -> bool:
        # max(rowid) is one step down the table's b-tree: it bounds the row count unread.
        row = self.store.fetchall("SELECT max(rowid) FROM sessions")
        return bool(row) and (row[0][0] or 0) <= self.EXACT_PINS_ROWS

    def pinned_ids_known(self, provisional: bool = False) -> frozenset[str] | None:
        """Ids of pinned sessions: the v30 column (read once per change of the store, as the
        column has no index: a scan of every session row), else our settings file.
        ``provisional``: None rather than scanning (the caller may use the recency cache's)."""
        if not self.store.has_session_column("pinned"):
            return self.extra_pins
        version = self.store.data_version()
        cached = self._pins_cache
        if cached is not None and cached[0] == version:
            return cached[1]
        if provisional and not self._small_enough_to_scan():
            return None
        pins = frozenset(r[0] for r in self.store.fetchall("SELECT id FROM sessions WHERE pinned != 0"))
        self._pins_cache = (version, pins)
        self.recency.pins = pins  # kept with the recency index for the next run
        return pins

    def _pinned_then_rest(
        self, select: str, where: str, params: list[Any], pins: list[str], limit: int, offset: int,
        project: bool, include_delegates: bool, columns: str = "s.*",
    ) -> list[dict]:
        """A page of the start-ordered list with the pinned rows first (see list_sessions_rich)."""
        (pinned_sql, pinned_args), (rest_sql, rest_args) = pinned_and_rest(select, where, params, pins)
        rules = self.store.rules
        file_pins = self.extra_pins
        order = self.by_start()

        def do(conn: sqlite3.Connection) -> list[dict]:
            pinned = conn.execute(f"{pinned_sql} ORDER BY {order}", pinned_args).fetchall()
            page = pinned[offset: offset + limit]
            room = limit - len(page)
            if room > 0:
                page += conn.execute(
                    f"{rest_sql} ORDER BY {order} LIMIT ? OFFSET ?",
                    [*rest_args, room, max(0, offset - len(pinned))],
                ).fetchall()
            rows = [rich_row(row) for row in page]
            return finish_listing(conn, rows, rules, file_pins, project, include_delegates, columns)

        return self.store.read(do)

    def iter_rows(
        self, query: ListQuery, limit: int = 20, *, chunk: int = 500, brief: bool = False,
    ) -> Iterator[dict]:
        """The rows ``rows(query, limit)`` returns by start -- newest-started first, pinned
        first, compression roots at their tips -- one at a time, ``chunk`` rows read at once
        instead of the whole list (``hermes sessions list --limit 1000000`` held every row of
        a 197k-session store at once: 0.9 GB). ``brief``: only the columns
        :meth:`list_summaries` reads (~20 of a v30 row's ~60), not all of them.

        One read snapshot from the first row to the last (no row listed twice or missed
        while other processes commit), held with the lock until the iterator is exhausted
        or closed: read it to the end or close it."""
        with self.store.snapshot():
            conn = self.store.connection
            if self.store.compat_views:
                self.store.capabilities
            where, params = self.filters(
                query, walk_source=bool(query.source) and self.walk_start_for(query.source, int(limit)),
            )
            columns = self.summary_columns() if brief else "s.*"
            rules, file_pins = self.store.rules, self.extra_pins
            select = self._by_start_select(columns)
            pins = sorted(self.pinned_ids_known())
            # As list_sessions_rich: the pinned rows, then the rest by the start index.
            statements = pinned_and_rest(select, where, params, pins)
            order = self.by_start()
            left = int(limit)
            for sql, args in statements:
                if left <= 0:
                    break
                for rows in listed_chunks(
                    conn, f"{sql} ORDER BY {order} LIMIT ?", [*args, left], chunk,
                    lambda rows: finish_listing(conn, rows, rules, file_pins, True, False, columns),
                ):
                    left -= len(rows)
                    yield from rows

    def walk_start_for(self, source: str, rows: int) -> bool:
        """Should the list by start, filtered to ``source``, walk the start index and test
        each session's source (a page of a common source: ~0.3 ms at 250k sessions) rather
        than read the source's sessions through a source index and sort them all, their
        previews and last activity computed for each first (cli, 40 % of them: 0.5 s a page)?
        Yes unless the source is so rare that the walk would read most of the index to find
        ``rows`` of it (a source of ten sessions: ~100 ms walked, 0.1 ms sorted). Decided from
        a count of the source's sessions capped at :data:`SOURCE_WALK_CERTAIN` (one index
        range, kept until another commit) against the store's size."""
        if "sessions" in self.store.compat_views:
            return False  # (a view has no start index of its own to walk)
        version = self.store.data_version()
        kept = self._source_sizes.get(source)
        if kept is None or kept[0] != version:
            conn = self.store.connection
            found = int(conn.execute(
                "SELECT COUNT(*) FROM (SELECT 1 FROM sessions WHERE source = ? LIMIT ?)",
                (source, SOURCE_WALK_CERTAIN),
            ).fetchone()[0])
            total = int(conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM sessions").fetchone()[0])
            if len(self._source_sizes) > 64:
                self._source_sizes.clear()
            kept = self._source_sizes[source] = (version, found, total)
        _version, found, total = kept
        if found >= SOURCE_WALK_CERTAIN:
            return True
        walked = min(total, rows * total / max(found, 1))
        return walked * WALK_ROW_COST < found * SORTED_ROW_COST

    def by_start(self) -> str:
        """The ORDER BY of the list by start (:data:`BY_START`, or through a view
        :data:`BY_START_VIEW`)."""
        return BY_START_VIEW if "sessions" in self.store.compat_views else BY_START

    def _by_start_select(self, columns: str) -> str:
        """The listing's SELECT (alias ``s``): ``columns``, the preview's raw text and the
        last activity."""
        rules = self.store.rules
        return (
            f"SELECT {columns}, {rules.preview_sql()} AS _preview_raw, "
            f"{rules.last_active_sql()} AS last_active FROM sessions s"
        )

    def list_summaries(
        self, query: ListQuery, limit: int = 50, offset: int = 0, *, provisional: bool = False,
    ) -> "Listed":
        """Typed rows of :meth:`rows` (compression chains shown at their tip, counts as the
        transcript shows them); ``provisional`` as there (the answer's ``exact`` says
        whether it was)."""
        from ..models import SessionSummary

        def read() -> Listed:
            rows = self.rows(
                query.with_(include_children=False), limit, offset,
                columns=self.summary_columns(), provisional=provisional,
            )
            exact = getattr(rows, "exact", True)
            rows = with_lifecycle(self.store, self.count_shown_messages(rows))
            return Listed(SessionSummary.from_listing(rows), exact=exact)

        return self.store.read_snapshot(read)

    def summary_columns(self) -> str:
        """The columns a :class:`~hermes_state.models.SessionSummary` is made of, as far as
        this store has them (a v30 row has ~60: converting them all was a third of a page)."""
        caps = self.store.capabilities
        cached = self._summary_cols
        if cached is None or cached[0] is not caps:
            names = [name for name in SUMMARY_COLUMNS if name == "id" or self.store.has_session_column(name)]
            cached = self._summary_cols = (caps, ", ".join(summary_column(name) for name in names))
        return cached[1]

    def count_listed(self, query: ListQuery) -> int:
        """How many rows :meth:`rows` would list for ``query`` in total (for paging).

        On a read-only store (a viewer) the answer is kept until another process commits
        (``PRAGMA data_version``): a browser asks on every page load, and counting every
        session took ~30 ms at 50k sessions."""
        where, params = self.filters(query)
        key = (where, tuple(params))
        version = self.store.data_version() if self.store.read_only else None
        cached = self._count_cache.get(key)
        if version is not None and cached is not None and cached[0] == version:
            return cached[1]
        count = int(self.store.fetchone(f"SELECT COUNT(*) FROM sessions s {where}", params)[0])
        if version is not None:
            if len(self._count_cache) > 64:
                self._count_cache.clear()
            self._count_cache[key] = (version, count)
        return count

    def get_summary(self, session_id: str):
        """A :class:`~hermes_state.models.SessionSummary` of one session (no projection)."""
        found = self.get_summaries([session_id])
        return found[0] if found else None

    def get_summaries(self, session_ids: "Iterable[str]") -> list:
        """:meth:`get_summary` of each id, in the order given, in one statement (a title
        match shows eight); ids without a session are left out."""
        ids = list(dict.fromkeys(session_ids))
        if not ids:
            return []
        # Kept until the store changes: search as you type matches mostly the same titles key
        # after key (four statements for eight rows, at every key on every store). A pin kept
        # in our settings file (no ``sessions.pinned``) is no commit: a row it no longer
        # agrees with is read again.
        pins = None if self.store.has_session_column("pinned") else self.extra_pins
        kept = self.store.until_changed("summaries", limit=SUMMARIES_KEPT)
        wanted = [sid for sid in ids if sid not in kept or (
            pins is not None and (known := kept[sid]) is not None and known.pinned != (sid in pins))]
        if wanted:
            read = {summary.id: summary for summary in self._read_summaries(wanted, pins)}
            kept.update({sid: read.get(sid) for sid in wanted})
        return [summary for sid in ids if (summary := kept.get(sid)) is not None]

    def _read_summaries(self, ids: list[str], pins: frozenset[str] | None) -> list:
        """:meth:`get_summaries` of ``ids`` (distinct) read from the store (``pins``: those of
        the settings file, when the store has no column for them)."""
        from ..models import SessionSummary

        rows = self.store.fetchall(
            f"SELECT s.*, {self.store.rules.preview_sql()} AS _preview_raw, {self.store.rules.last_active_sql()} AS last_active "
            f"FROM sessions s WHERE s.id IN ({','.join('?' for _ in ids)})",
            ids,
        )
        found = {}
        for row in rows:
            data = rich_row(row)
            if "pinned" not in data:
                if pins is None:
                    pins = self.extra_pins
                data["pinned"] = int(data["id"] in pins)
            found[data["id"]] = data
        with_lifecycle(self.store, self.count_shown_messages(list(found.values())))
        return SessionSummary.from_rows([found[sid] for sid in ids if sid in found])

    def count_shown_messages(self, rows: list[dict]) -> list[dict]:
        """Rows with ``message_count`` less their rewound messages (see
        :func:`~hermes_state.visibility.count_shown_messages`)."""
        if not rows or not self.store.has_message_column("active"):
            return rows
        rules = self.store.rules
        return self.store.read(lambda conn: count_shown_messages(conn, rules, rows, True))
