"""Typing narrows: each key typed at the end of a word asks for a subset of the last
query's matches (``dock*`` -> ``docke*``). While nothing is committed the connection keeps
its last window scan (:class:`ScanMemo`), and a narrower query takes the rows among it that
still match (:func:`scan_window`, :func:`narrow_scan`) -- the same rows as a fresh scan."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..query import WORD_RE, ParsedQuery
from .context import Ctx, iter_rows, scan_sql
from .light import term_regex
from .sql import FTS_TABLE
from .tuning import TUNING

if TYPE_CHECKING:  # pragma: no cover
    from ..capabilities import Capabilities

@dataclass(frozen=True)
class ScanMemo:
    """The newest-first scan of a search's window (:func:`scan_window`): what it was made
    for (table, filters, query shape) and its rows, ``(rowid, text)`` (plain: :class:`Light`)."""

    table: str
    filters: tuple[str, ...]
    params: tuple[Any, ...]
    shape: tuple[tuple[str, bool], ...]
    #: The most rows the scan read (``WINDOW + 1``).
    cap: int
    rows: tuple[tuple[int, str], ...]
    #: Per row: nothing in the index's other columns (True), something (False), unknown (None).
    others_empty: tuple[bool | None, ...]
    #: ``rows`` hold every match (the scan found no more), not only the newest ones.
    exhaustive: bool


def query_shape(parsed: ParsedQuery) -> tuple[tuple[str, bool], ...] | None:
    """The query as ``(word, prefix)`` pairs when it is only plain ASCII words ANDed together
    (what people type into the search field), else None: the shapes whose answers narrow one
    another (:func:`narrows`)."""
    shape = []
    for item in parsed.items:
        if item.kind != "word" or not item.text.isascii() or not WORD_RE.fullmatch(item.text):
            return None
        shape.append((item.text.lower(), item.prefix))
    return tuple(shape) or None


#: Tokenizers whose tokens :class:`Light` tells as they do (none declared: unicode61).
FOLDING_TOKENIZERS = ("unicode61",)


def narrowable(caps: "Capabilities", parsed: ParsedQuery) -> tuple[tuple[str, bool], ...] | None:
    """:func:`query_shape` when the word index's tokenizer splits text as :class:`Light`
    does (:func:`splits_as_light`), else None."""
    shape = query_shape(parsed)
    return shape if shape is not None and splits_as_light(caps) else None


def lightable(caps: "Capabilities", parsed: ParsedQuery) -> bool:
    """Whether :class:`Light` marks ``parsed`` as ``highlight()`` does: plain ASCII words and
    the operators ``AND``, ``OR``, ``NOT``, as one ``AND`` chain (its ``NOT`` words are in no
    matching row) or as single words ORed (FTS5 marks the words of the branches that match
    a row: of single words, those the row holds) -- not an ``OR`` of chains, whose words in
    a branch that does not match are not marked.

    Quoted phrases of plain ASCII words too, where no two marks can overlap (``highlight()``
    merges overlapping ones into one): no phrase whose start is also its end (``"a b a"``),
    no prefix beside a phrase of several words, and no word in two items."""
    words: list[list[str]] = []
    prefixed = False
    for item in parsed.items:
        if item.kind == "op":
            if item.text not in ("AND", "OR", "NOT"):
                return False
        elif not item.text.isascii():
            return False
        elif item.kind == "word" and WORD_RE.fullmatch(item.text):
            words.append([item.text.lower()])
            prefixed = prefixed or item.prefix
        elif item.kind == "phrase":
            tokens = [token.lower() for token in WORD_RE.findall(item.text)]
            if not tokens or (len(tokens) > 1 and (item.prefix or overlaps_itself(tokens))):
                return False
            words.append(tokens)
            prefixed = prefixed or item.prefix
        else:
            return False
    if any(len(tokens) > 1 for tokens in words):
        every = [token for tokens in words for token in tokens]
        if prefixed or len(set(every)) < len(every):
            return False
    groups = parsed.groups()
    if len(groups) > 1 and not all(len(group) == 1 and not group[0][1] for group in groups):
        return False
    return bool(parsed.terms) and splits_as_light(caps)


def overlaps_itself(tokens: list[str]) -> bool:
    """Whether two occurrences of the phrase ``tokens`` can overlap: some start of it is also
    its end (``a b a``)."""
    return any(tokens[:k] == tokens[-k:] for k in range(1, len(tokens)))


def splits_as_light(caps: "Capabilities") -> bool:
    """Whether the word index's tokenizer splits text as :class:`Light` does (unicode61 as
    declared by default; not ``porter``, whose tokens are stems, nor ``ascii``, for which
    every non-ASCII character is a token character)."""
    fts = caps.fts.get(FTS_TABLE)
    if fts is None:
        return False
    words = (fts.tokenizer or "").replace("'", " ").replace('"', " ").lower().split()
    # Options that change what a token is (tokenchars, separators, categories) are not told
    # as Light assumes; remove_diacritics only changes what non-ASCII letters fold to, and
    # a text with those is marked by FTS5 (marks_exactly).
    return not (words and (words[0] not in FOLDING_TOKENIZERS or any(
        word in ("tokenchars", "separators", "categories") for word in words[1:]
    )))


def narrows(old: tuple[tuple[str, bool], ...], new: tuple[tuple[str, bool], ...]) -> bool:
    """Whether every match of ``new`` is a match of ``old``: the same words but the last, which
    ``old`` had as a prefix and ``new`` lengthens (``dock*`` → ``docke*``, ``deploy*`` →
    ``deploy``), as each key typed at the end of a word does."""
    if len(old) != len(new) or old[:-1] != new[:-1] or old[-1] == new[-1]:
        return False
    (was, was_prefix), (now, _prefix) = old[-1], new[-1]
    return was_prefix and now.startswith(was)


def other_fts_columns(caps: "Capabilities", table: str) -> tuple[str, ...] | None:
    """The word index's columns after the text (v30 also indexes ``tool_name`` and
    ``tool_calls``; ``()`` for a text-only index), when ``messages`` has them all (they can be
    read there); else None."""
    fts = caps.fts.get(table)
    if fts is None:
        return None
    others = tuple(fts.columns[1:])
    if not all(name in caps.message_columns for name in others):
        return None
    return others


def others_empty_sql(others: tuple[str, ...] | None) -> str | None:
    """SQL true when a message has nothing in the index's ``others`` columns: its matches are
    all in the text, which ``highlight()`` marks. ``1`` for a text-only index; None when those
    columns cannot be read from ``messages m``."""
    if others is None:
        return None
    if not others:
        return "1"
    return "(" + " AND ".join(f"COALESCE(m.{name}, '') = ''" for name in others) + ")"


def scan_window(
    ctx: Ctx, table: str, match: str, shape: tuple[tuple[str, bool], ...] | None, plain: bool,
    floor: int | None = None,
) -> list[tuple[int, str]]:
    """The newest ``WINDOW + 1`` matches of ``match`` under the filters, newest first, with
    their text (highlighted, or plain with ``ctx.light``): the probe, the window ranking's
    candidates, the newest-first page.

    Search-as-you-type asks for ``dock*``, then ``docke*``, ``docker*``: each narrows the one
    before (:func:`narrows`). While nothing is committed, a narrower query's matches among the
    previous scan's rows are found there (:func:`narrow_scan`); only when the previous scan stopped
    short of the oldest match are older matches read (those missing and ``NARROW_SLACK`` more,
    kept for the next key). The same rows as a fresh scan, without reading 400 rows again.
    Only a query of plain words narrows, so the rows kept are always plain text.

    ``floor``: no match below this rowid is read (a phrase of common words: the walk of its
    words' doclists is bounded, :func:`~hermes_state.search.strategies.walk_floor`); such a
    scan is not kept.
    """
    def fresh(flag: str | None) -> tuple[list[tuple[int, str]], tuple[bool | None, ...], bool]:
        extra, bound = (f" AND {table}.rowid >= ?", [floor]) if floor is not None else ("", [])
        sql = scan_sql(table, ctx, "rowid", extra=extra, plain=plain, flag=flag)
        got = list(iter_rows(ctx, sql, [match, *bound, *ctx.params], ctx.window + 1, True))
        rows = [(int(r[0]), r[1]) for r in got]
        return rows, tuple(bool(r[2]) if flag else None for r in got), len(got) <= ctx.window

    cache = ctx.prefix_cache
    if cache is None or shape is None or plain or floor is not None:
        return fresh(None)[0]  # (nothing kept: no flag column to read for each row)
    flag = ctx.others_empty if ctx.filtered or ctx.others_empty == "1" else None
    filters, params = tuple(ctx.filters), tuple(ctx.params)
    memo = cache.scan
    answer = None
    if memo is not None and (memo.table, memo.filters, memo.params, memo.cap) == (table, filters, params, ctx.window + 1):
        if memo.shape == shape:
            answer = list(memo.rows), memo.others_empty, memo.exhaustive
        elif narrows(memo.shape, shape):
            answer = narrow_scan(ctx, table, match, shape, memo, flag)
    if answer is None:
        answer = fresh(flag)
    rows, others_empty, exhaustive = answer
    cache.scan = None if ctx.budget.exhausted else ScanMemo(
        table, filters, params, shape, ctx.window + 1, tuple(rows), tuple(others_empty), exhaustive
    )
    return rows[: ctx.window + 1]


#: An ASCII text's unicode61 tokens: every other ASCII character separates them.
ASCII_TOKEN_RE = re.compile(r"[A-Za-z0-9]+")


def match_other_columns(
    ctx: Ctx, table: str, term: tuple[str, bool], rowids: list[int]
) -> set[int] | None:
    """Which of ``rowids`` hold ``term`` (an ASCII ``(word, prefix)``) in the word index's
    columns after the text (v30: ``tool_name``, ``tool_calls``), read from ``messages``; None
    when a value is not ASCII (its tokens are unicode61's to tell) or the columns are not
    there. An ASCII text's tokens are its runs of letters and digits."""
    fts = ctx.fts_columns.get(table)
    if not fts:
        return None
    word, prefix = term
    # The columns of a message do not change while nothing is committed: each key typed
    # reads only the messages the last keys did not (kept on the connection's cache).
    cache = ctx.prefix_cache
    known = cache.others if cache is not None else {}
    missing = [rowid for rowid in rowids if (table, rowid) not in known]
    if missing:
        marks = ",".join("?" for _ in missing)
        for row in ctx.conn.execute(f"SELECT id, {', '.join(fts)} FROM messages WHERE id IN ({marks})", missing):
            values = [value for value in row[1:] if value is not None]
            # (A number or a blob is indexed as SQLite renders it; non-ASCII text as
            # unicode61 folds it: neither is told here.)
            if all(isinstance(value, str) and value.isascii() for value in values):
                tokens = {token for value in values for token in ASCII_TOKEN_RE.findall(value.lower())}
                known[(table, int(row[0]))] = tuple(sorted(tokens))
            else:
                known[(table, int(row[0]))] = None
    found: set[int] = set()
    for rowid in rowids:
        tokens = known.get((table, rowid), ())  # (a message deleted since: nothing to match)
        if tokens is None:
            return None
        # Sorted: the first token not below the word is the word, or the first to start
        # with it, if any is.
        at = bisect.bisect_left(tokens, word)
        if at < len(tokens) and (tokens[at].startswith(word) if prefix else tokens[at] == word):
            found.add(rowid)
    return found


def narrow_scan(
    ctx: Ctx, table: str, match: str, shape: tuple[tuple[str, bool], ...], memo: ScanMemo, flag: str | None
) -> tuple[list[tuple[int, str]], tuple[bool | None, ...], bool] | None:
    """:func:`scan_window` for a query that narrows the previous scan's (None: scan afresh).

    A previous row matches the narrower query when its text holds a token of the lengthened
    last word (its other words matched already); it does not when its text holds none and it
    has nothing in the index's other columns. Only when some row cannot be told so (a text
    :func:`marks_exactly` cannot vouch for, a tool column that is not ASCII text) does FTS5
    say, for all of them, in one index-only statement: its matches at or above the scan's
    oldest rowid."""
    previous, others_empty = memo.rows, memo.others_empty
    if not previous:
        return [], (), True  # the wider query matched nothing under these filters
    last = term_regex(*shape[-1])
    light = ctx.light
    if light is None:  # pragma: no cover - a query that narrows is always read plain
        return None
    kept: list[tuple[int, str, bool | None, bool | None]] = []
    undecided = False
    elsewhere: list[int] = []  # rows whose text has no such token: their other columns decide
    # The last word's count in each row, kept for the window ranking that follows (as
    # :meth:`Light.counts_of` keeps it); :meth:`Light.lowered` inlined: 400 rows a key.
    texts, counted, findall = light.texts, light.tf.setdefault(last.pattern, {}), last.findall
    for (rowid, text), empty in zip(previous, others_empty):
        text = text or ""
        known = texts.get(rowid)
        if known is None or known[2] is None or not (known[0] is text or known[0] == text):
            lowered, exact = light.lowered(rowid, text)
        else:
            lowered, exact = known[1], known[2]
        found = counted.get(rowid) if exact else None
        if exact and found is None:
            found = counted[rowid] = float(len(findall(lowered)))
        if not exact:
            verdict: bool | None = None  # (only unicode61 can tell its tokens)
            undecided = True
        elif found:
            verdict = True
        elif empty is True:
            verdict = False
        else:
            verdict = None
            elsewhere.append(rowid)
        kept.append((rowid, text, empty, verdict))
    if elsewhere and not undecided:
        found_elsewhere = match_other_columns(ctx, table, shape[-1], elsewhere)
        if found_elsewhere is None:
            undecided = True
        else:
            kept = [
                (rowid, text, empty, rowid in found_elsewhere if verdict is None else verdict)
                for rowid, text, empty, verdict in kept
            ]
    oldest = previous[-1][0]
    if undecided:
        found = {
            int(r[0])
            for r in ctx.conn.execute(
                f"SELECT rowid FROM {table} WHERE {table} MATCH ? AND rowid >= ?", (match, oldest)
            )
        }
        chosen = [(rowid, text, empty) for rowid, text, empty, _v in kept if rowid in found]
    else:
        chosen = [(rowid, text, empty) for rowid, text, empty, verdict in kept if verdict]
    rows = [(rowid, text) for rowid, text, _e in chosen]
    flags = [empty for _r, _t, empty in chosen]
    exhaustive = memo.exhaustive
    if not exhaustive and len(rows) <= ctx.window:
        # That scan stopped short of the oldest match: read older ones, as many as are missing
        # and TUNING.NARROW_SLACK more, so that the next key may drop as many without reading again.
        older_sql = scan_sql(table, ctx, "rowid", extra=f" AND {table}.rowid < ?", flag=flag)
        need = ctx.window + 1 - len(rows) + TUNING.NARROW_SLACK
        got = 0
        for r in iter_rows(ctx, older_sql, [match, oldest, *ctx.params], need, True):
            rows.append((int(r[0]), r[1]))
            flags.append(bool(r[2]) if flag else None)
            got += 1
        exhaustive = got < need
    return rows, tuple(flags), exhaustive
