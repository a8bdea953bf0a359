"""Search latency per query class, against its target, through both search APIs.

Each class is measured twice: on ``SessionDB.search`` (the structured UI search; the targets
below apply to it) and on ``SessionDB.search_messages`` (the upstream-compatible list
API, which must never be slower than upstream v0.12: its target is upstream's figure).
Every query asks for the first page (``limit=20``), as the UI does.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from hermes_workload.corpus import ABSENT_CJK_TERMS, NO_MATCH_WORDS

from .registry import Case, Context, Missing, register

LIMIT = 20

#: class id → (title, target p95 ms on SessionDB.search, upstream v0.12 p95 ms, queries).
#: Targets are the product's; upstream's p95 was measured on upstream v0.12 at 1M messages /
#: 50k sessions on 2 cores, the figure ``search_messages`` must never be slower than.
QUERY_CLASSES: dict[str, tuple[str, float, float, tuple[str, ...]]] = {
    "selective_word": (
        "selective word (~5%)", 15.0, 95.0, ("docker", "deploy", "python", "git"),
    ),
    "common_word": (
        "very common word (the ~80%)", 50.0, 999.0, ("the", "is", "for"),
    ),
    "multi_word": (
        "multi-word / phrase / prefix / NOT", 15.0, 125.0,
        ("docker compose", '"docker compose"', "deploy staging", "python NOT docker",
         "redis OR postgres", "nginx conf*"),
    ),
    "prefix_typing": (
        "prefix while typing", 15.0, 125.0, ("dock*", "kube*", "depl*", "pyth*", "postg*"),
    ),
    # Phrases of words each in a few percent of messages: FTS5 intersects their position
    # lists whether or not the phrase occurs (50-55 ms p50 at 5M on a held-out store).
    "common_phrase": (
        "phrase of common words", 15.0, 125.0,
        ('"staging cluster"', '"docker deployment"', '"auth module"', '"docker image"', '"the cluster"',
         '"config file"'),
    ),
    # Words a person remembers from different messages of one conversation: topical words that
    # cluster by conversation but seldom share a message. Target: SPREAD_TARGETS.
    "spread_words": (
        "words spread over a conversation", 30.0, 125.0,
        ("docker kubernetes postgres", "kubectl terraform webhook", "nginx pytest redis",
         "staging cluster rollout", "python webhook budget"),
    ),
    "no_match": ("no match", 1.0, 0.1, NO_MATCH_WORDS),
    "cjk_trigram": (
        "≥3 CJK characters (trigram)", 12.0, 18.0, ("数据库", "内存泄漏", "サーバー", "데이터베이스"),
    ),
    "cjk_short_frequent": (
        "1–2 CJK characters, frequent", 30.0, 375.0, ("服务", "部署", "配置", "서버"),
    ),
    "cjk_short_absent": (
        "1–2 CJK characters, absent", 100.0, 321.0, ABSENT_CJK_TERMS,
    ),
}


def _search_messages_cases(queries: tuple[str, ...]):
    def make(ctx: Context) -> list[Case]:
        try:
            import hermes_state.search  # noqa: F401
        except ImportError as exc:
            raise Missing(f"hermes_state.search not importable ({exc})") from exc
        db = ctx.db
        return [
            Case(q, (lambda q=q: db.search_messages(q, limit=LIMIT)), lambda r: {"hits": len(r)})
            for q in queries
        ]

    return make


def _describe_search_result(result: Any) -> dict[str, Any]:
    return {
        "hits": len(result.hits),
        "path": getattr(result, "path", None),
        "ranking": getattr(result, "ranking", None),
        "total_estimate": getattr(result, "total_estimate", None),
        "reported_ms": getattr(result, "elapsed_ms", None),
    }


def _searched(db, query: str, **kwargs):
    """``db.search`` with nothing kept from the previous run: a connection keeps its last
    window scan, ranking and probes for the next key typed (``forget_answers``), which would
    answer a repeated query from memory. Prefix expansions stay cached, as while typing."""
    from hermes_state.search import forget_answers

    forget_answers(db.store)
    kwargs.setdefault("sort", "auto")  # (what a keystroke asks: the targets are the keystroke's)
    return db.search(query, **kwargs)


def _search_cases(queries: tuple[str, ...]):
    def make(ctx: Context) -> list[Case]:
        db = ctx.db
        if not callable(getattr(db, "search", None)):
            raise Missing("SessionDB.search is not implemented yet")

        def describe(result: Any) -> dict[str, Any]:
            found = _describe_search_result(result)
            found.update(ranking_overlap(db, result))
            return found

        return [
            Case(q, (lambda q=q: _searched(db, q, limit=LIMIT)), describe)
            for q in queries
        ]

    return make


# --------------------------------------------------------------------------- ranking quality
#
# ``search`` ranks common terms by bm25 over the newest WINDOW matches only (or newest first
# for near-universal words), which is what keeps it fast. The price is measured here: how many
# of its top 20 hits exact bm25 over the whole index would also rank in its top 20.


def _reference_match(db: Any, result: Any) -> tuple[str, str] | None:
    """(FTS table, MATCH text) whose exact bm25 order is the reference for ``result``."""
    from hermes_state.search import FTS_TABLE, TRIGRAM_TABLE

    path = getattr(result, "path", "") or ""
    query = getattr(result, "effective_query", "") or ""
    if not path or not query:
        return None
    if path == "like":
        # A frequent 1–2 character CJK term served by the LIKE scan, newest first: exact bm25
        # would rank its trigram expansion (every trigram that starts with the term).
        return _like_reference(db, result.query)
    return (TRIGRAM_TABLE if path.endswith("trigram") else FTS_TABLE), query


def _like_reference(db: Any, query: str) -> tuple[str, str] | None:
    from hermes_state.query import cjk_tokens
    from hermes_state.search import TRIGRAM_TABLE, trigram_vocab

    tokens = [t for t in cjk_tokens(query) if t.upper() not in ("AND", "OR", "NOT")]
    if len(tokens) != 1 or len(tokens[0]) >= 3:
        return None  # the bench's short-CJK queries are single terms
    term = tokens[0].lower()

    def expand(conn) -> list[str]:
        vocab = trigram_vocab(conn)
        return [r[0] for r in conn.execute(
            f"SELECT term FROM {vocab} WHERE term >= ? AND term < ?", (term, term + "\U0010ffff"))]

    found = db._read(expand)
    if not found:
        return None
    return TRIGRAM_TABLE, " OR ".join('"' + t.replace('"', '""') + '"' for t in found)


def exact_top(db: Any, table: str, match: str, limit: int = LIMIT) -> tuple[list[tuple[int, float]], float]:
    """``(rowid, rank)`` of the exact bm25 top ``limit`` (FTS5 ``ORDER BY rank`` over every
    match, the same findability rule as ``search``) and how long SQLite took for it (ms)."""
    import time

    findable = db.rules.findable("m")
    sql = (f"SELECT {table}.rowid, {table}.rank FROM {table} JOIN messages m ON m.id = {table}.rowid "
           f"WHERE {table} MATCH ? AND {findable} ORDER BY rank LIMIT ?")

    def run(conn) -> list[tuple[int, float]]:
        return [(int(r[0]), float(r[1])) for r in conn.execute(sql, (match, limit))]

    t0 = time.perf_counter()
    rows = db._read(run)
    return rows, (time.perf_counter() - t0) * 1000


def _ranks_of(db: Any, table: str, match: str, rowids: list[int]) -> dict[int, float]:
    """Exact bm25 (FTS5 ``rank``) of the given rows of a MATCH (scores are global: the
    rowid filter does not change them)."""
    marks = ",".join("?" for _ in rowids)
    sql = f"SELECT rowid, rank FROM {table} WHERE {table} MATCH ? AND rowid IN ({marks})"
    return db._read(lambda conn: {int(r[0]): float(r[1]) for r in conn.execute(sql, [match, *rowids])})


def ranking_overlap(db: Any, result: Any) -> dict[str, Any]:
    """``overlap``: share of the exact bm25 top 20 that the top 20 of ``result`` holds (None
    when there is nothing to compare: no hits, or no index to rank with).

    Ties count: synthetic messages are short and often score exactly alike, so a hit whose
    exact score equals the 20th best is as good as any hit in the exact top 20.
    """
    got = [hit.id for hit in getattr(result, "hits", [])][:LIMIT]
    reference = _reference_match(db, result)
    if reference is None or not got:
        return {"overlap": None}
    try:
        exact, exact_ms = exact_top(db, *reference)
        if not exact:
            return {"overlap": None}
        cutoff = exact[-1][1] if len(exact) >= LIMIT else float("inf")
        ranks = _ranks_of(db, reference[0], reference[1], got)
    except sqlite3.Error as exc:
        return {"overlap": None, "overlap_error": str(exc)}
    good = sum(1 for rowid in got if rowid in ranks and ranks[rowid] <= cutoff + 1e-9)
    return {"overlap": round(min(good, len(exact)) / len(exact), 3), "exact_bm25_ms": round(exact_ms, 1)}


# --------------------------------------------------------------------------- upstream reference
#
# Upstream v0.12's search_messages SQL (SR-3, SR-9 … SR-14), run directly on the reader's
# connection for the harness's fixed queries, so the table can show what upstream costs on this
# machine and corpus. It is not a product path: no sanitiser beyond what these queries need.

_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x3000, 0x303F),
               (0x3040, 0x309F), (0x30A0, 0x30FF), (0xAC00, 0xD7AF))


def _cjk_count(text: str) -> int:
    return sum(1 for ch in text if any(lo <= ord(ch) <= hi for lo, hi in _CJK_RANGES))


_SELECT = (
    "SELECT m.id, m.session_id, m.role, {snippet} AS snippet, m.content, m.timestamp, "
    "m.tool_name, s.source, s.model, s.started_at AS session_started "
)


def _upstream_query(conn, query: str, limit: int = LIMIT) -> tuple[str, list[dict]]:
    """``(path, results)`` of upstream's search_messages for ``query``."""
    raw = query.strip('"').strip()
    tokens = raw.split()
    if _cjk_count(query) == 0:
        sql = (_SELECT.format(snippet="snippet(messages_fts, 0, '>>>', '<<<', '...', 40)")
               + "FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
               "JOIN sessions s ON s.id = m.session_id WHERE messages_fts MATCH ? "
               "ORDER BY rank LIMIT ? OFFSET 0")
        rows = conn.execute(sql, (query, limit)).fetchall()
        path = "fts5"
    elif all(_cjk_count(t) >= 3 for t in tokens if t.upper() not in ("AND", "OR", "NOT") and _cjk_count(t)):
        match = " ".join(t if t.upper() in ("AND", "OR", "NOT") else '"' + t.replace('"', '""') + '"' for t in tokens)
        sql = (_SELECT.format(snippet="snippet(messages_fts_trigram, 0, '>>>', '<<<', '...', 40)")
               + "FROM messages_fts_trigram JOIN messages m ON m.id = messages_fts_trigram.rowid "
               "JOIN sessions s ON s.id = m.session_id WHERE messages_fts_trigram MATCH ? "
               "ORDER BY rank LIMIT ? OFFSET 0")
        rows = conn.execute(sql, (match, limit)).fetchall()
        path = "trigram"
    else:
        terms = [t for t in tokens if t.upper() not in ("AND", "OR", "NOT")] or [raw]
        clauses, params = [], []
        for term in terms:
            like = "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            clauses.append("(m.content LIKE ? ESCAPE '\\' OR m.tool_name LIKE ? ESCAPE '\\' "
                           "OR m.tool_calls LIKE ? ESCAPE '\\')")
            params += [like, like, like]
        sql = (_SELECT.format(snippet="substr(m.content, max(1, instr(m.content, ?) - 40), 120)")
               + "FROM messages m JOIN sessions s ON s.id = m.session_id WHERE "
               + " OR ".join(clauses) + " ORDER BY m.timestamp DESC LIMIT ? OFFSET 0")
        rows = conn.execute(sql, [terms[0], *params, limit]).fetchall()
        path = "like"
    results = []
    for row in rows:
        item = dict(row)
        item.pop("content", None)
        context = []
        prev = conn.execute(
            "SELECT role, content FROM messages WHERE session_id = ? AND (timestamp < ? OR "
            "(timestamp = ? AND id < ?)) ORDER BY timestamp DESC, id DESC LIMIT 1",
            (row["session_id"], row["timestamp"], row["timestamp"], row["id"]),
        ).fetchone()
        nxt = conn.execute(
            "SELECT role, content FROM messages WHERE session_id = ? AND (timestamp > ? OR "
            "(timestamp = ? AND id > ?)) ORDER BY timestamp, id LIMIT 1",
            (row["session_id"], row["timestamp"], row["timestamp"], row["id"]),
        ).fetchone()
        for neighbour in (prev, row, nxt):
            if neighbour is not None:
                context.append({"role": neighbour["role"], "content": (neighbour["content"] or "")[:200]})
        item["context"] = context
        results.append(item)
    return path, results


def _upstream_cases(queries: tuple[str, ...]):
    def make(ctx: Context) -> list[Case]:
        db = ctx.db

        def run(q: str) -> tuple[str, list[dict]]:
            return db._read(lambda conn: _upstream_query(conn, q))

        return [
            Case(q, (lambda q=q: run(q)), lambda r: {"hits": len(r[1]), "path": r[0], "ranking": None})
            for q in queries
        ]

    return make


#: Classes upstream's own figures never measured: they borrow the figure of a class named here.
UPSTREAM_FIGURE_OF = {"common_phrase": "'s multi-word", "spread_words": "'s multi-word"}

#: Targets that grow with the store (from this many messages, p95 ms), by class: spread words
#: ≤ 30 ms at 1M and ≤ 60 ms at 5M (the product's targets for them); other classes hold one target at every size.
SCALED_TARGETS: dict[str, tuple[tuple[int, float], ...]] = {
    "spread_words": ((0, 30.0), (2_500_000, 60.0)),
}

for _klass, (_title, _target, _upstream, _queries) in QUERY_CLASSES.items():
    _scaled = SCALED_TARGETS.get(_klass, ())
    register(
        f"search.{_klass}",
        klass=_klass,
        title=_title,
        api="SessionDB.search",
        target_ms=_target,
        target_note="≤ 30 ms (1M), ≤ 60 ms (5M)" if _klass == "spread_words" else None,
        scaled_targets=_scaled,
    )(_search_cases(_queries))
    register(
        f"search_messages.{_klass}",
        klass=_klass,
        title=_title,
        api="SessionDB.search_messages",
        target_ms=_upstream,
        target_note=f"≤ {_upstream:g} ms (upstream{UPSTREAM_FIGURE_OF.get(_klass, '')})",
    )(_search_messages_cases(_queries))
    register(
        f"upstream_sql.{_klass}",
        klass=_klass,
        title=_title,
        api="upstream v0.12 SQL (reference)",
        target_ms=None,
        target_note=f"(upstream v0.12{UPSTREAM_FIGURE_OF.get(_klass, '')}: {_upstream:g} ms @1M)",
    )(_upstream_cases(_queries))


# --------------------------------------------------------------------------- paging (BR-20)
#
# The search pane loads the next page of hits when the reader scrolls past the last one
# (BR-20): ``SessionDB.search(query, limit=20, offset=20)``, then ``offset=40``. A later
# page is held to the first page's target of the query's class.

#: Offsets of the pages timed: pages 2 and 3.
PAGE_OFFSETS = (LIMIT, 2 * LIMIT)

#: class id whose first-page target applies → the query paged.
PAGED_QUERIES: dict[str, str] = {
    "selective_word": "docker",
    "common_word": "the",
    "cjk_trigram": "数据库",
    "cjk_short_frequent": "服务",
}


def _search_page_cases(query: str):
    def make(ctx: Context) -> list[Case]:
        db = ctx.db
        if not callable(getattr(db, "search", None)):
            raise Missing("SessionDB.search is not implemented yet")
        return [
            Case(f"{query} @{offset}", (lambda offset=offset: _searched(db, query, limit=LIMIT, offset=offset)),
                 _describe_search_result)
            for offset in PAGE_OFFSETS
        ]

    return make


for _klass, _query in PAGED_QUERIES.items():
    _title, _target, _upstream, _queries = QUERY_CLASSES[_klass]
    register(
        f"search_paging.{_klass}",
        klass="search_paging",
        title="pages 2 and 3 of search results (BR-20)",
        api=f"SessionDB.search offset 20, 40: {_title}",
        target_ms=_target,
    )(_search_page_cases(_query))
