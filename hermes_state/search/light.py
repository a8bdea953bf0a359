"""Marking plain text in Python as FTS5's ``highlight()`` would (:class:`Light`): for
queries of plain ASCII words, the newest matches are read unmarked and marked here, where
that is exact; FTS5 marks the rest (:func:`mark_inexact`)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..query import split_marked
from .context import Row
from .tuning import TUNING

if TYPE_CHECKING:  # pragma: no cover
    from .context import Ctx
    from .memo import PrefixCache
    from .ranking import Phrase

#: Letters of CJK scripts that unicode61 and ``WORD_RE`` both take as token characters and
#: neither folds (kana, the unified ideographs of Unicode 1.1 and extension A, Hangul
#: syllables): text of these and ASCII splits into the same tokens in both.
CJK_LETTERS = "\u3005-\u3007\u3041-\u3096\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff\u3400-\u4db5\u4e00-\u9fa5\uac00-\ud7a3"
#: A character around which ``WORD_RE`` and case-insensitive matching may tell tokens
#: otherwise than unicode61 (remove_diacritics 1, categories L* N* Co): the combining marks
#: unicode61 keeps inside a token (U+0300-U+0331, dropped when folded), private-use
#: characters (token characters there, separators here), and every letter or digit beyond
#: ASCII and :data:`CJK_LETTERS` (folded to ASCII by unicode61 -- ``é`` -- or matched by
#: Python's case-insensitive ASCII -- ``K`` the Kelvin sign, ``ſ`` --, or classed by another
#: Unicode version than SQLite's). Punctuation, symbols (emoji), spaces and other marks are
#: separators in both.
INEXACT_RE = re.compile(
    "[\u0300-\u036f\ue000-\uf8ff\U000f0000-\U0010ffff]"
    f"|(?![{CJK_LETTERS}])[^\\W_\\x00-\\x7f]"
)


def marks_exactly(text: str) -> bool:
    """Whether :class:`Light` marks ``text`` as ``highlight()`` would: no character of
    :data:`INEXACT_RE` in it (ASCII text, or ASCII and CJK, always)."""
    return text.isascii() or INEXACT_RE.search(text) is None


def term_regex(word: str, prefix: bool) -> "re.Pattern[str]":
    """One query word (folded ASCII) as unicode61 matches it, over a lower-cased text that
    :func:`marks_exactly`: whole tokens equal to it, or (``prefix``) whole tokens starting
    with it. A token character is a letter or a digit (``_`` separates, as in unicode61).
    The look-behind follows the word, so that the pattern starts with it and ``re`` seeks
    it as a literal: with the look-behind first a row took ~7 us a word, 5 ms a window."""
    word = re.escape(word)
    return re.compile(word + r"(?<![^\W_]" + word + r")" + (r"[^\W_]*" if prefix else r"(?![^\W_])"))


def phrase_regex(words: list[str]) -> "re.Pattern[str]":
    """A quoted phrase of words (folded ASCII) as unicode61 matches it, as :func:`term_regex`
    does a word: its words as whole tokens, one after another with only separators between
    them (``config. File``, ``config_file``); the match spans the whole phrase, as
    ``highlight()`` marks it."""
    first = re.escape(words[0])
    rest = "".join(r"[\W_]+" + re.escape(word) for word in words[1:])
    return re.compile(first + r"(?<![^\W_]" + first + r")" + rest + r"(?![^\W_])")


class Light:
    """A search of plain ASCII words -- ANDed (what people type, :func:`query_shape`), single
    words ORed, or one chain with ``NOT`` words (:func:`lightable`) -- reads the newest
    matches' text unmarked and marks it here.

    ``highlight()`` tokenizes every row it returns: over the 401 rows of a window scan that
    was 3-5 ms of a 5-9 ms statement at 5M messages, and the window ranking needs only each
    word's count in each row. For such a query unicode61's marks are the tokens that equal a
    word, or start with the word being typed: :func:`term_regex` finds exactly those in text
    that :func:`marks_exactly`. Any other row of a page is marked by FTS5
    (:func:`mark_inexact`); in the window ranking its counts are the regex's (a weight,
    never a hit); narrowing asks FTS5 about it (:func:`narrow_scan`).

    The text read is the index's own (:func:`plain_text_sql`).
    """

    __slots__ = ("terms", "words", "texts", "tf")

    def __init__(self, phrases: list[Phrase], cache: "PrefixCache | None" = None) -> None:
        #: Per message: its text, lower-cased, and whether :func:`marks_exactly`; and per
        #: ``(word's pattern, message)`` the word's count there -- kept on the connection while
        #: nothing is committed: a key that narrows the last answer counts only its last word
        #: in the rows it keeps (400 rows a key: 1.5-2 ms counted afresh).
        self.texts: dict[int, tuple[str, str, bool | None]] = cache.texts if cache is not None else {}
        self.tf: dict[str, dict[int, float]] = cache.tf if cache is not None else {}
        if len(self.texts) > TUNING.TEXTS_KEPT or len(self.tf) > 64:
            # Keep what the next key may narrow from (the last scan's rows), drop the rest.
            keep = {rowid for rowid, _text in cache.scan.rows} if cache is not None and cache.scan else set()
            for rowid in [rowid for rowid in self.texts if rowid not in keep]:
                del self.texts[rowid]
            self.tf.clear()
        #: Per phrase, its word as :func:`term_regex` (None: a negated or empty phrase, or
        #: one of several words, counts nothing).
        self.terms: list[re.Pattern[str] | None] = [
            None if p.negated or not p.tokens
            else term_regex(p.tokens[0], p.prefix) if len(p.tokens) == 1
            else phrase_regex(p.tokens)
            for p in phrases
        ]
        #: Every word of the query: the marks of a page's rows.
        self.words = list({term.pattern: term for term in self.terms if term is not None}.values())

    def lowered(self, rowid: int, text: str) -> tuple[str, bool]:
        """``text`` (message ``rowid``'s) lower-cased, and whether :func:`marks_exactly`."""
        known = self.texts.get(rowid)
        if known is None or not (known[0] is text or known[0] == text):
            known = (text, text.lower(), None)
        if known[2] is None:
            known = (text, known[1], len(known[1]) == len(text) and marks_exactly(text))
            self.texts[rowid] = known
        return known[1], bool(known[2])

    def counts_of(self, rows: list[tuple[int, str]]) -> list[list[float]]:
        """Each phrase's matches in each of ``rows`` (``(rowid, text)``): its term frequency,
        per phrase (a column of the rows' counts each)."""
        texts = self.texts
        lowered_rows = []
        for rowid, text in rows:
            text = text or ""
            known = texts.get(rowid)
            if known is None or not (known[0] is text or known[0] == text):
                # (An ASCII text always marks exactly; others are looked at when asked.)
                known = texts[rowid] = (text, text.lower(), True if text.isascii() else None)
            lowered_rows.append((rowid, known[1]))
        columns = []
        for term in self.terms:
            if term is None:
                columns.append([0.0] * len(rows))
                continue
            counted = self.tf.setdefault(term.pattern, {})
            findall, get = term.findall, counted.get
            column = []
            for rowid, lowered in lowered_rows:
                found = get(rowid)
                if found is None:
                    found = counted[rowid] = float(len(findall(lowered)))
                column.append(found)
            columns.append(column)
        return columns

    def row(self, rowid: int, text: str | None, score: float | None) -> Row:
        text = text or ""
        lowered, exact = self.lowered(int(rowid), text)
        if not exact or not self.words:
            return Row(int(rowid), text, [], score, marked=False)
        spans = sorted({found.span() for word in self.words for found in word.finditer(lowered)})
        return Row(int(rowid), text, spans, score)


def mark_inexact(ctx: "Ctx", table: str, match: str, rows: list[Row]) -> None:
    """Rows of a page that :class:`Light` could not mark, marked by ``highlight()``: one
    statement over the rowids they span (the same snapshot: the same text)."""
    todo = {row.rowid: row for row in rows if not row.marked}
    if not todo:
        return
    for rowid, text in ctx.conn.execute(
        f"SELECT rowid, highlight({table}, 0, char(2), char(3)) FROM {table} "
        f"WHERE {table} MATCH ? AND rowid BETWEEN ? AND ?",
        (match, min(todo), max(todo)),
    ):
        row = todo.get(int(rowid))
        if row is not None:
            row.plain, row.spans = split_marked(text or "")
            row.marked = row.highlighted = True
    for row in todo.values():
        row.marked = True  # (not found: nothing to mark)
