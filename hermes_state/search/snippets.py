"""From ranked rows to the hits of an answer: the text ``highlight()`` cut at a NUL given
back whole, snippets of matches outside the text (a v30 store's tool columns), and the hits
with their session's fields (:func:`make_hits`)."""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from ..query import make_snippet
from .context import Ctx, Row, indexed_texts_sql
from .ranking import Phrase

def text_after_nul(ctx: Ctx, table: str, rows: list[Row]) -> None:
    """The page's rows marked by ``highlight()`` whose text holds a NUL, given their whole text.

    ``highlight()`` copies the text between two marks as a C string: a NUL there ends the
    copy, and the rest of that stretch was lost (``before\\x00after zebra`` came back as
    ``before`` + ``zebra``: the snippet showed neither the NUL nor what followed it).
    Otherwise its text, marks removed, is the indexed text exactly; so the page's texts are
    measured in bytes (one statement; a length, not a scan, however long the text) and a
    text ``highlight()`` gave back shorter is read again whole. The strings it marked are
    found in that text where they stand as whole words (FTS5 marks whole tokens: the same
    string at word boundaries is the same match).
    """
    todo = {row.rowid: row for row in rows if row.highlighted}
    if not todo:
        return
    for row in todo.values():
        row.highlighted = False

    def texts(rowids: list[int], what: str) -> list[tuple[int, Any]]:
        inner = indexed_texts_sql(table, ctx, ",".join("?" for _ in rowids))
        return ctx.conn.execute(f"SELECT i, {what} FROM ({inner})", rowids).fetchall()

    try:
        sizes = texts(list(todo), "length(CAST(t AS BLOB))")
        cut = [int(rowid) for rowid, size in sizes if int(rowid) in todo and isinstance(size, int)
               and len(todo[int(rowid)].plain.encode("utf-8", "surrogatepass")) != size]
        read = texts(cut, "t") if cut else []
    except sqlite3.OperationalError:
        raise
    except sqlite3.DatabaseError:
        # (an external table whose content= view no longer keeps a row: FTS5 calls that
        # corrupt) the snippets stay as highlight() made them.
        return
    for rowid, whole in read:
        row = todo[int(rowid)]
        if not isinstance(whole, str) or "\x00" not in whole:
            continue  # (shorter for another reason: text that is not UTF-8, marker characters)
        pieces = sorted({row.plain[a:b] for a, b in row.spans if b > a}, key=len, reverse=True)
        row.plain = whole
        if not pieces:
            row.spans = []
            continue
        words = re.compile("(?<![^\\W_])(?:" + "|".join(map(re.escape, pieces)) + ")(?![^\\W_])")
        row.spans = [match.span() for match in words.finditer(whole)]


def snippets_from_other_columns(
    ctx: Ctx, table: str, phrases: list[Phrase], rows: list[Row]
) -> None:
    """Rows of the page that matched outside their text -- a v30 store also indexes each
    message's tool name and tool calls -- take their snippet from what matched: the tool calls'
    text, or the tool's name before the text (such a hit showed no snippet and nothing
    highlighted: ``d`` at 1M v30 matched 40 tool calls). The query's words are found in those
    columns here, as unicode61 splits words (``highlight()`` over them cost 2-4 ms a page)."""
    bare = [row for row in rows if not row.spans]
    if not bare:
        return
    fts = ctx.caps.fts.get(table) if ctx.caps is not None else None
    wanted = [name for name in ("tool_name", "tool_calls") if fts is not None and name in fts.columns]
    words = words_pattern(phrases)
    if not wanted or words is None:
        return
    found = {
        int(r[0]): r[1:]
        for r in ctx.conn.execute(
            f"SELECT id, {', '.join(wanted)} FROM messages WHERE id IN ({','.join('?' for _ in bare)})",
            [row.rowid for row in bare],
        )
    }
    for row in bare:
        for name, value in zip(wanted, found.get(row.rowid, ())):
            text = value if isinstance(value, str) else ("" if value is None else str(value))
            spans = [(m.start(), m.end()) for m in words.finditer(text)]
            if not spans:
                continue
            if name == "tool_name":
                row.plain = f"{text}: {row.plain}" if row.plain else text
            else:
                row.plain = text
            row.spans = spans
            break


def words_pattern(phrases: list[Phrase]) -> "re.Pattern[str] | None":
    """The words of the query's positive phrases as whole words (a prefix: the word's start),
    case-insensitive; None when there are none."""
    parts = []
    for phrase in phrases:
        if phrase.negated:
            continue
        for index, token in enumerate(phrase.tokens):
            tail = r"[^\W_]*" if phrase.prefix and index == len(phrase.tokens) - 1 else r"(?![^\W_])"
            parts.append(r"(?<![^\W_])" + re.escape(token) + tail)
    if not parts:
        return None
    return re.compile("|".join(sorted(set(parts), key=len, reverse=True)), re.IGNORECASE)


def make_hits(ctx: Ctx, rows: list[Row], path: str) -> list:
    from ..models import SearchHit, list_from_store

    if not rows:
        return []
    # While nothing is committed a hit is what its row makes it: a key that leaves most of
    # the page as it was (typing the rest of a word) reuses the last answer's hits.
    cache = ctx.prefix_cache
    before = cache.hits if cache is not None else {}
    made: dict[tuple, Any] = {}
    keys = [(row.rowid, row.plain, tuple(row.spans), row.score, path) for row in rows]
    missing = [row.rowid for row, key in zip(rows, keys) if key not in before]
    meta = {}
    if missing:
        marks = ",".join("?" for _ in missing)
        meta = {
            int(r[0]): r
            for r in ctx.conn.execute(
                "SELECT m.id, m.session_id, m.role, m.timestamp, m.tool_name, s.source, s.model, "
                "s.started_at, s.title FROM messages m LEFT JOIN sessions s ON s.id = m.session_id "
                f"WHERE m.id IN ({marks})",
                missing,
            )
        }
    # The page's new hits are validated together, then put in place in the rows' order.
    slots: list[Any] = []
    new: list[tuple[int, tuple]] = []
    fields: list[dict] = []
    for row, key in zip(rows, keys):
        hit = before.get(key)
        if hit is not None:
            slots.append(hit)
            made[key] = hit
            continue
        info = meta.get(row.rowid)
        if info is None:  # deleted between the scan and now
            continue
        snippet, spans, raw = make_snippet(row.plain, row.spans)
        new.append((len(slots), key))
        slots.append(None)
        fields.append(dict(
            id=row.rowid,
            session_id=info[1],
            role=info[2],
            timestamp=info[3] if info[3] is not None else 0.0,
            tool_name=info[4],
            source=info[5] or "",
            model=info[6],
            session_started=info[7],
            session_title=info[8],
            snippet=snippet,
            spans=spans,
            raw_snippet=raw,
            score=row.score,
            path=path,
        ))
    if fields:
        for (at, key), hit in zip(new, list_from_store(SearchHit, fields)):
            slots[at] = made[key] = hit
    if cache is not None:
        cache.hits = made
    return slots
