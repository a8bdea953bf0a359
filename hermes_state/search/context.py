"""What one structured search works with: its context (:class:`Ctx`: connection, filters,
page, budget, what is kept on the connection), the probes that count matches by the index
alone, and the newest-first scans of an FTS table (:func:`scan_sql`, :func:`iter_rows`)."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .sql import TRIGRAM_TABLE, where_clause
from .tuning import TUNING

if TYPE_CHECKING:  # pragma: no cover
    from ..capabilities import Capabilities
    from .by_conversation import ByConversation
    from .light import Light
    from .memo import PrefixCache

class Budget:
    def __init__(self, ms: float) -> None:
        self.deadline = time.perf_counter() + max(1.0, float(ms)) / 1000.0
        self.exhausted = False

    def over(self) -> bool:
        if time.perf_counter() > self.deadline:
            self.exhausted = True
        return self.exhausted


@dataclass
class Ctx:
    conn: sqlite3.Connection
    filters: list[str]
    params: list[Any]
    limit: int
    offset: int
    sort: str
    budget: Budget
    notes: list[str] = field(default_factory=list)
    _row_counts: dict[str, int] = field(default_factory=dict)
    _max_rowid: int | None = None
    prefix_cache: "PrefixCache | None" = None
    #: :func:`others_empty_sql` of the word index (for narrowing), when known.
    others_empty: str | None = None
    #: Per FTS table: its columns after the text, when ``messages`` has them (for narrowing).
    fts_columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: Newest-first scans of the word index read its text plain and mark it here (see
    #: :class:`Light`); None: ``highlight()`` marks it.
    light: "Light | None" = None
    #: What the store has: which FTS tables, and where a plain scan reads their text.
    caps: "Capabilities | None" = None
    #: :attr:`trigram`, once known.
    _trigram: bool | None = None
    #: With ``sort="conversation"``: what ranking every match by conversation needs.
    by_conversation: "ByConversation | None" = None
    #: The newest matches a window ranking ranks (``SearchOptions.window``).
    window: int = field(default_factory=lambda: TUNING.WINDOW)

    @property
    def filtered(self) -> bool:
        return bool(self.filters)

    @property
    def trigram(self) -> bool:
        """The trigram table exists, can be read and holds something: not in a store from
        before schema 10 opened without migrating it (UC-8), nor one whose table was dropped
        and created again empty by a writable open (MG-1 step 5 does not fill it), whose
        substrings LIKE finds instead."""
        if self._trigram is None:
            self._trigram = self.caps is not None and self.caps.fts_loads(TRIGRAM_TABLE)
            gap = index_gap(self, TRIGRAM_TABLE) if self._trigram else None
            if gap is not None:
                self._trigram = False
                self.notes.append(f"the substring index {gap}: substrings were sought by a scan of the messages")
        return self._trigram

    @property
    def want(self) -> int:
        """Rows needed to fill the page and know whether there is more."""
        return self.offset + self.limit + 1

    def max_rowid(self) -> int:
        if self._max_rowid is None:
            row = self.conn.execute("SELECT max(id) FROM messages").fetchone()
            self._max_rowid = int(row[0] or 0)
        return self._max_rowid

    def row_count(self, table: str) -> int:
        if table not in self._row_counts:
            self._row_counts[table] = fts_row_count(self.conn, table) or max(1, self.max_rowid())
        return self._row_counts[table]


def index_gap(ctx: Ctx, table: str) -> str | None:
    """:func:`read_index_gap`, read once while nothing is committed."""
    cache = ctx.prefix_cache
    if cache is None:
        return read_index_gap(ctx.conn, ctx.caps, table)
    if table not in cache.gaps:
        cache.gaps[table] = read_index_gap(ctx.conn, ctx.caps, table)
    return cache.gaps[table]


def read_index_gap(conn: sqlite3.Connection, caps: "Capabilities | None", table: str) -> str | None:
    """Why the FTS index ``table`` cannot answer for the messages, as far as two cheap reads
    tell; None when it can.

    ``is empty``: its ``_idx`` shadow table lists no segment while ``messages`` has text (on
    the inline and the external-content layout alike; the table itself would read the
    content). ``lacks the older messages``: in a store of schema 16 or below -- the only ones
    whose dropped table a writable open creates again (MG-1 step 5), and whose triggers index
    every message -- its first indexed row comes after the first message: created again, then
    fed by its triggers from then on."""
    try:
        if conn.execute(f'SELECT 1 FROM "{table}_idx" LIMIT 1').fetchone() is None:
            text = conn.execute("SELECT 1 FROM messages WHERE content IS NOT NULL AND content != '' LIMIT 1")
            return "is empty" if text.fetchone() is not None else None
        if caps is not None and caps.version_class in ("migrate", "current") and caps.fts[table].inline:
            first_indexed = conn.execute(f'SELECT min(id) FROM "{table}_docsize"').fetchone()[0]
            first = conn.execute("SELECT min(id) FROM messages").fetchone()[0]
            if first is not None and first_indexed is not None and first < first_indexed:
                return "lacks the older messages"
    except (sqlite3.Error, KeyError):
        return None
    return None


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """SQLite's big-endian varint (FTS5 uses it in its structure records)."""
    value = 0
    for i in range(9):
        if pos + i >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos + i]
        if i == 8:
            return (value << 8) | byte, pos + 9
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, pos + i + 1
    raise ValueError("bad varint")  # pragma: no cover


def fts_row_count(conn: sqlite3.Connection, table: str) -> int | None:
    """Rows in an FTS5 table from its averages record (``%_data`` id 1), without a scan."""
    try:
        row = conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
        if row is None or not row[0]:
            return None
        count, _ = read_varint(bytes(row[0]), 0)
        return count if count > 0 else None
    except (sqlite3.Error, ValueError, TypeError):
        return None


def probe(ctx: Ctx, table: str, match: str, k: int) -> tuple[int, bool]:
    """``(estimate, exact)`` of the rows ``match`` selects (filters not applied); the same
    probe is answered from the connection's cache while nothing is committed (a query typed
    word by word probes its first words again at every key)."""
    cache = ctx.prefix_cache
    memo_key = (table, match, k)
    if cache is not None and memo_key in cache.probes:
        return cache.probes[memo_key]
    # Counted in SQLite: one row back, not k (fetching 1,500 rowids into Python cost more
    # than finding them: 0.7 ms against 0.2 at 5M).
    count, oldest = ctx.conn.execute(
        f"SELECT count(*), min(rowid) FROM (SELECT rowid FROM {table} WHERE {table} MATCH ? "
        "ORDER BY rowid DESC LIMIT ?)",
        (match, k + 1),
    ).fetchone()
    if count <= k:
        answer = count, True
    else:
        span = max(1, ctx.max_rowid() - int(oldest) + 1)
        total = ctx.row_count(table)
        answer = max(count, min(total, int(round(count / span * total)))), False
    if cache is not None:
        cache.probes[memo_key] = answer
    return answer


@dataclass
class Row:
    rowid: int
    plain: str
    spans: list[tuple[int, int]]
    score: float | None = None
    #: False: ``spans`` are not known yet -- only FTS5 can mark this text
    #: (:func:`mark_inexact`).
    marked: bool = True
    #: ``plain`` and ``spans`` come from ``highlight()``, which loses text after a NUL
    #: (:func:`text_after_nul`).
    highlighted: bool = False


@dataclass
class Outcome:
    rows: list[Row]
    ranking: str
    total: int
    exact: bool
    has_more: bool
    path: str
    #: Fewer rows than the page asked for, and more may follow: see
    #: :attr:`~hermes_state.models.SearchResult.short_page`.
    short_page: bool = False


def scan_sql(
    table: str, ctx: Ctx, order: str, extra: str = "", plain: bool = False, flag: str | None = None
) -> str:
    """Rowid + highlighted (or, with ``plain``, raw) text of ``table`` matches, joined to the
    filter tables only when filters are set; ``flag``: a third column (see
    :func:`others_empty_sql`). Newest first with ``ctx.light``: the text as the index holds
    it, unmarked (:class:`Light`)."""
    if plain or (ctx.light is not None and order == "rowid"):
        text = plain_text_sql(table, ctx)
    else:
        text = f"highlight({table}, 0, char(2), char(3))"
    select = f"SELECT {table}.rowid, {text}"
    if flag:
        select += f", {flag}"
    if order == "rank":
        select += f", {table}.rank"
    order_sql = "rank" if order == "rank" else f"{table}.rowid DESC"
    return f"{select}{source_sql(table, ctx)} WHERE {table} MATCH ?{extra}{where_clause(ctx.filters)} ORDER BY {order_sql}"


def source_sql(table: str, ctx: Ctx) -> str:
    """The FROM clause of a scan of ``table``: joined to the filter tables (``m`` the message,
    ``s`` its session) only when filters are set."""
    if ctx.filtered:
        return f" FROM {table} JOIN messages m ON m.id = {table}.rowid JOIN sessions s ON s.id = m.session_id"
    return f" FROM {table}"


def older_newest_first(ctx: Ctx, table: str, match: str, plain: bool, to_row, below: int, skip: int, need: int,
                       check_budget: bool) -> tuple[list[Row], bool]:
    """The ``need`` rows after ``skip`` of the matches older than rowid ``below``, newest
    first (what follows a ranked part of an answer: a stable order for paging), made by
    ``to_row`` unscored; and whether there are more."""
    sql = scan_sql(table, ctx, "rowid", extra=f" AND {table}.rowid < ?", plain=plain)
    older = list(iter_rows(ctx, sql, [match, below, *ctx.params], skip + need + 1, check_budget))
    return [to_row(r[0], r[1], None) for r in older[skip:skip + need]], len(older) > skip + need


def plain_text_sql(table: str, ctx: Ctx) -> str:
    """The text of ``table``'s first column, unmarked, in a scan of it (the trigram table's,
    and the word index's read by :class:`Light`): through the joined ``messages`` row when
    the DDL says what it is (:attr:`FtsTable.text_sql`), else from an inline table's own copy
    (it keeps what its triggers wrote, which only it knows: :attr:`FtsTable.stored_text_sql`),
    else the column itself.

    For an external-content table FTS5 reads the column by a statement per row on its
    ``content=`` table: on v30's trigram view (a join with ``sessions`` and a JSON test per
    row) that was most of a window scan (401 rows, 6.2 ms at 1M messages)."""
    fts = ctx.caps.fts.get(table) if ctx.caps is not None else None
    if fts is not None:
        if ctx.filtered and fts.text_sql:
            return fts.text_sql
        if fts.stored_text_sql:
            return fts.stored_text_sql
    return f"{table}.content"


def indexed_texts_sql(table: str, ctx: Ctx, marks: str) -> str:
    """A statement of ``(i, t)``: each message among the rowids bound to ``marks`` (``?,?,…``)
    and the text ``table`` indexed for it, read the cheapest way the store says exactly:
    through its ``messages`` row when the DDL says what the text is
    (:attr:`FtsTable.text_sql`), else from an inline table's own copy read as a plain table
    (half the time of the same rows through FTS5), else through the FTS5 table (for an
    external-content one, a statement per row on its ``content=`` view)."""
    fts = ctx.caps.fts.get(table) if ctx.caps is not None else None
    if fts is not None and fts.text_sql:
        return f"SELECT m.id AS i, {fts.text_sql} AS t FROM messages m WHERE m.id IN ({marks})"
    if fts is not None and fts.stored_text_sql:
        return f"SELECT id AS i, c0 AS t FROM {table}_content WHERE id IN ({marks})"
    return f"SELECT {table}.rowid AS i, {table}.content AS t FROM {table} WHERE {table}.rowid IN ({marks})"


def iter_rows(ctx: Ctx, sql: str, params: list[Any], cap: int, check_budget: bool):
    """Up to ``cap`` rows of ``sql``, stopping early when the budget runs out."""
    cursor = ctx.conn.execute(sql, params)
    got = 0
    while got < cap:
        batch = cursor.fetchmany(min(64, cap - got))
        if not batch:
            return
        for row in batch:
            yield row
        got += len(batch)
        if check_budget and ctx.budget.over():
            return
