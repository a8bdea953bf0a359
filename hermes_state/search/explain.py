"""Why a search found nothing, and what would find something (SR-19).

An empty answer is asked again, cheaply, the ways a person could change it: without the
filters (source, workspace, hidden sessions, roles), without its excluded words; and each
word is looked up alone. The first reason that holds is said in one line. Only an empty first
page pays for this (a handful of index look-ups, each bounded).
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Sequence

from ..query import QueryItem
from .engine import search as message_search
from .options import SearchOptions
from .sql import FTS_TABLE, TRIGRAM_TABLE, trigram_vocab

if TYPE_CHECKING:  # pragma: no cover
    from ..listing.query import ListQuery
    from ..store import Store


def _quoted(words: Sequence[str]) -> str:
    return ", ".join(f"“{w}”" for w in words)


def _present(conn: sqlite3.Connection, table: str, match: str) -> bool:
    try:
        return conn.execute(f"SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT 1", (match,)).fetchone() is not None
    except sqlite3.OperationalError:
        return True  # (cannot tell: say nothing about it)


def _absent_words(store: "Store", conn: sqlite3.Connection, groups, cjk: bool) -> list[str]:
    """Positive words of the query that no message holds at all (by the index alone)."""
    absent: list[str] = []
    trigram = store.capabilities.fts_loads(TRIGRAM_TABLE)
    for group in groups:
        for item, _negs in group:
            if cjk:
                if not trigram:
                    continue
                if len(item.text) < 3:
                    # (every occurrence starts a trigram: see hermes_state.search.upstream)
                    vocab = trigram_vocab(conn)
                    folded = item.text.lower()
                    row = conn.execute(f"SELECT 1 FROM {vocab} WHERE term >= ? AND term < ? LIMIT 1",
                                       (folded, folded + "\U0010ffff")).fetchone()
                    if row is None and item.text not in absent:
                        absent.append(item.text)
                    continue
                match, table = '"' + item.text.replace('"', '""') + '"', TRIGRAM_TABLE
            else:
                match, table = item.render(), FTS_TABLE
            if not _present(conn, table, match) and item.text not in absent:
                absent.append(item.text)
    return absent


def _without_excluded(groups) -> str:
    """The query again, its ``NOT`` words left out."""
    return " OR ".join(" ".join(_render(item) for item, _negs in group) for group in groups)


def _render(item: QueryItem) -> str:
    if item.kind == "word":
        return item.render()
    return '"' + item.text.replace('"', " ") + '"' + ("*" if item.prefix else "")


def explain_empty(
    store: "Store",
    conn: sqlite3.Connection,
    query: str,
    groups,
    cjk: bool,
    spread: Any,
    scope: "ListQuery",
    options: SearchOptions,
) -> str | None:
    """One line: why ``query`` found nothing under ``scope`` and ``options`` and what would
    find something; None when no reason is known (a word that matches nothing is the most
    common one)."""
    if not groups:
        return None
    rules = store.rules
    first = replace(options, limit=1, offset=0, sort="auto")
    # (a source chosen, or upstream's several; excluded sources apply when none is chosen)
    sourced = scope.source is not None or options.sources is not None
    excluding = scope.source is None and bool(scope.exclude_sources)

    def count(text: str, where: "ListQuery" = scope, asked: SearchOptions = first) -> int:
        found = message_search(store, text, where, asked)
        return found.total_estimate if found.hits else 0

    absent = list(getattr(spread, "absent", []) or []) or _absent_words(store, conn, groups, cjk)
    if absent:
        what = "word" if len(absent) == 1 else "words"
        return f"no message holds the {what} {_quoted(absent)}: try another spelling, or fewer words"
    has_not = any(negs for group in groups for _item, negs in group)
    if has_not:
        rest = _without_excluded(groups)
        if rest.strip() and count(rest) > 0:
            excluded = [neg.text for group in groups for _item, negs in group for neg in negs]
            return (f"NOT {_quoted(excluded)} removed every match: the other words alone find "
                    "messages")
    filtered = (sourced or excluding or scope.workspace is not None
                or (not scope.include_hidden and rules.hidden) or bool(options.roles))
    if filtered:
        everything = count(query, scope.with_(source=None, exclude_sources=(), workspace=None, include_hidden=True),
                           replace(first, sources=None, roles=None))
        if everything > 0:
            hidden_by = []
            if sourced or excluding:
                n = count(query, scope.with_(source=None, exclude_sources=()), replace(first, sources=None))
                if n:
                    hidden_by.append(f"the source filter hides ~{n:,}")
            if scope.workspace is not None:
                n = count(query, scope.with_(workspace=None))
                if n:
                    hidden_by.append(f"the workspace filter hides ~{n:,}")
            if not scope.include_hidden and rules.hidden:
                n = count(query, scope.with_(include_hidden=True))
                if n:
                    hidden_by.append(f"~{n:,} are in hidden sessions (H shows them)")
            if options.roles:
                n = count(query, scope, replace(first, roles=None))
                if n:
                    hidden_by.append(f"the role filter hides ~{n:,}")
            detail = "; ".join(hidden_by) or f"~{everything:,} match with no filter"
            return f"the filters hide every match: {detail}"
    if getattr(spread, "excluded", 0):
        n = spread.excluded
        held = "1 conversation holds" if n == 1 else f"{n:,} conversations hold"
        return f"{held} every word across messages but also an excluded word"
    if any(len(group) >= 2 for group in groups):
        return ("no single message holds every word, and no conversation holds them all: "
                "try fewer words, or OR between them")
    return None
