"""bm25 as the window ranking computes it in Python (k1 = 1.2, b = 0.75, IDF from probed
document frequencies): the query's phrases, their counts in a row, and the scores of a
window of rows (see "Design" in :mod:`hermes_state.search`)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from ..folding import fold
from ..query import MARK_CLOSE, MARK_OPEN, MARKED_RE, WORD_RE, token_count

if TYPE_CHECKING:  # pragma: no cover
    from .light import Light

_BM25_K1 = 1.2
_BM25_B = 0.75


@dataclass
class Phrase:
    """A phrase of the query, for IDF and term frequencies."""

    match: str  # MATCH text of this phrase alone
    tokens: list[str]
    prefix: bool
    negated: bool
    df: int = 0


def idf(df: int, total: int) -> float:
    value = math.log((total - df + 0.5) / (df + 0.5))
    return value if value > 0 else 1e-6


def marked_count(text: str) -> int:
    """How many spans ``highlight()`` marked in ``text`` (what ``MARKED_RE`` finds): the
    number of opening markers when there are as many closing ones -- always, unless the
    content itself carries marker characters (then the regex counts; content holding both
    kinds out of order may be off by one, a ranking weight, never a hit). 400 rows a
    keystroke: ~10x faster than ``findall``."""
    opened = text.count(MARK_OPEN)
    if opened == text.count(MARK_CLOSE):
        return opened
    return len(MARKED_RE.findall(text))


class TfMatcher:
    """Which phrases a highlighted token counts for, decided once per query (not per row):
    a token counts for a phrase when it equals the phrase's first token, or, for a one-word
    prefix phrase, when it starts with it. Negated and empty phrases count nothing."""

    __slots__ = ("size", "exact", "prefixes", "_seen")

    def __init__(self, phrases: list[Phrase]) -> None:
        self.size = len(phrases)
        self.exact: dict[str, list[int]] = {}
        self.prefixes: list[tuple[str, int]] = []
        #: The phrases each marked piece counts for, by the piece's text: the same few tokens
        #: are marked in row after row of a window (400 rows a keystroke).
        self._seen: dict[str, tuple[int, ...]] = {}
        for index, phrase in enumerate(phrases):
            if not phrase.tokens or phrase.negated:
                continue
            head = phrase.tokens[0]
            if phrase.prefix and len(phrase.tokens) == 1:
                self.prefixes.append((head, index))
            else:
                self.exact.setdefault(head, []).append(index)

    def counts(self, spans_text: list[str]) -> list[float]:
        counts = [0.0] * self.size
        seen = self._seen
        for piece in spans_text:
            indices = seen.get(piece)
            if indices is None:
                indices = seen[piece] = self._indices(piece)
            for index in indices:
                counts[index] += 1
        return counts

    def _indices(self, piece: str) -> tuple[int, ...]:
        """The phrase of each count one marked piece adds (an index once per count)."""
        out: list[int] = []
        exact, prefixes = self.exact, self.prefixes
        # (folded before it is split: a decomposed accent, ``e\u0301cran`` as macOS pastes
        # it, is one word to the index -- ``ecran`` -- but splits Python's ``\w`` in two)
        for folded in WORD_RE.findall(fold(piece)):
            out.extend(exact.get(folded, ()))
            for head, index in prefixes:
                if folded.startswith(head):
                    out.append(index)
        return tuple(out)


#: :func:`token_count` of the texts a connection's windows hold (the same objects key after
#: key: their hash is kept, a look-up costs less than counting again).
_tokens = functools.lru_cache(maxsize=8192)(token_count)
#: Best first, ties newest first (rowids are unique: the order is total).
_SCORE_ROWID = itemgetter(0, 1)


def window_scores(rows, phrases, idfs, plain, light: "Light | None" = None) -> list[tuple[float, int, Any]]:
    """``(score, rowid, text)`` of the window's rows, best first (ties: newest first): each
    phrase's count in each row -- a substring's occurrences in the lower-cased text
    (``plain``), a word's matches in the text read plain (``light``), or the pieces
    ``highlight()`` marked -- and the row's length, ranked by :func:`bm25_ranked`."""
    if plain:
        lowered = [(text or "").lower() for _rowid, text in rows]
        columns = [
            [float(lower.count(p.tokens[0])) for lower in lowered] if p.tokens and not p.negated
            else [0.0] * len(rows)
            for p in phrases
        ]
        dls = [float(len(lower)) for lower in lowered]
        return bm25_ranked(rows, columns, dls, idfs)
    dls = [float(_tokens(text or "")) for _rowid, text in rows]
    if light is not None:
        columns = light.counts_of(rows)
    elif len(phrases) == 1 and not phrases[0].negated and len(phrases[0].tokens) <= 1:
        columns = [[float(marked_count(text or "")) for _rowid, text in rows]]
    else:
        matcher = TfMatcher(phrases)
        per_row = [matcher.counts(MARKED_RE.findall(text or "")) for _rowid, text in rows]
        columns = [list(column) for column in zip(*per_row)]
    return bm25_ranked(rows, columns, dls, idfs)


def bm25_ranked(rows, columns, dls, idfs) -> list[tuple[float, int, Any]]:
    """``(score, rowid, text)`` of ``rows``, best first (ties: newest first): bm25 of each row
    from ``columns`` (per phrase, its count in each row), ``dls`` (each row's length) and
    ``idfs``, the phrases' terms summed in phrase order -- a phrase at a time over the rows
    (a call or a list per row cost ~1 ms over a 400-row window)."""
    k1, b, k1p1 = _BM25_K1, _BM25_B, _BM25_K1 + 1
    avgdl = sum(dls) / len(dls) if dls else 1.0
    norms = [k1 * (1 - b + b * (dl / avgdl if avgdl > 0 else 1.0)) for dl in dls]
    sums: list[float] = [0] * len(rows)
    for column, idf in zip(columns, idfs):
        sums = [score + idf * tf * k1p1 / (tf + norm) if tf > 0 else score
                for score, tf, norm in zip(sums, column, norms)]
    scored = [(score, int(rowid), text or "") for score, (rowid, text) in zip(sums, rows)]
    scored.sort(key=_SCORE_ROWID, reverse=True)
    return scored
