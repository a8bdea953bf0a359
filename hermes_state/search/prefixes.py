"""The query's phrases as the word index sees them, and ``word*`` prefixes expanded from the
index's vocabulary into ``("word1" OR "word2" ...)``, which FTS5 iterates lazily."""

from __future__ import annotations

from ..folding import fold
from ..query import WORD_RE, ParsedQuery, QueryItem
from .context import Ctx, probe
from .ranking import Phrase
from .weights import words_meant
from .sql import FTS_TABLE, positive_query_terms, quote, words_starting
from .tuning import TUNING


def unicode61_phrases(parsed: ParsedQuery, expansions: dict[int, str] | None = None) -> list[Phrase]:
    """The query's phrases for IDF and term frequencies. A ``word*`` expanded from the
    vocabulary is probed as its expansion (an OR of terms, iterated lazily), never as
    ``word*``, which FTS5 answers by merging every doclist of the prefix first (60-70 ms for
    ``fail*`` at 5M messages)."""
    phrases = []
    expansions = expansions or {}
    for group in parsed.groups():
        for pos, negs in group:
            for item, negated in [(pos, False), *((n, True) for n in negs)]:
                tokens = WORD_RE.findall(fold(item.text))  # (folded first: see TfMatcher)
                phrases.append(Phrase(expansions.get(id(item), item.render()), tokens, item.prefix, negated))
    return phrases


_NO_ENTRY = object()


def prefix_terms(ctx: Ctx, folded: str) -> list[str] | None:
    """Vocabulary terms that start with ``folded`` (:func:`~.sql.words_starting`); None when
    there are more than ``MAX_PREFIX_TERMS``. The frequency of the expansion is probed later
    like any phrase's. A longer prefix of one already expanded on this connection is that
    list filtered."""
    cache = ctx.prefix_cache
    if cache is not None:
        found = cache.terms.get(folded, _NO_ENTRY)
        if found is not _NO_ENTRY:
            return found  # type: ignore[return-value]
        for cut in range(len(folded) - 1, 0, -1):
            wider = cache.terms.get(folded[:cut], _NO_ENTRY)
            if isinstance(wider, list):
                narrowed = [term for term in wider if term.startswith(folded)]
                cache.terms[folded] = narrowed
                return narrowed
    result = words_starting(ctx.conn, folded, TUNING.MAX_PREFIX_TERMS)
    if cache is not None:
        cache.terms[folded] = result
    return result


def expand_prefixes(ctx: Ctx, parsed: ParsedQuery, words_only: bool = False) -> tuple[str, dict[int, str]]:
    """Rewrite ``word*`` items as ``(word1 OR word2 …)`` from the vocabulary; returns the
    query and each expanded item's MATCH text (by ``id(item)``).

    Without a prefix index FTS5 merges every doclist of a prefix up front, on *each*
    execution (~3–8 ms at 1M messages); an OR of the same terms is iterated lazily, so the
    probes and scans that follow stay cheap (the terms come from :func:`prefix_terms`).
    Prefixes with more than ``MAX_PREFIX_TERMS`` terms, or non-ASCII ones, are left to FTS5's
    own prefix query (expanding a non-ASCII one here would look its folded form up,
    :mod:`hermes_state.folding`; not done: not measured). ``words_only``: a prefix's terms
    that read as ids or hashes (``cadd7398…`` for ``cadd``, :data:`~hermes_state.search.ranking.ID_LIKE_RE`)
    are left out, unless nothing else starts so.
    """
    rendered: list[str] = []
    expansions: dict[int, str] = {}
    previous: QueryItem | None = None
    for item in parsed.items:
        # FTS5 accepts implicit AND between phrases only, not before a parenthesis.
        if previous is not None and previous.kind != "op" and item.kind != "op":
            rendered.append("AND")
        previous = item
        text = item.render()
        if item.kind == "word" and item.prefix and item.text.isascii() and WORD_RE.fullmatch(item.text):
            terms = prefix_terms(ctx, item.text.lower())
            if terms and words_only:
                terms = words_meant(item.text, terms)
            if terms:
                text = expansions[id(item)] = "(" + " OR ".join(quote(term) for term in terms) + ")"
        rendered.append(text)
    if not expansions:
        return parsed.render(), expansions
    return " ".join(rendered), expansions


def words_all_indexed(ctx: Ctx, parsed: ParsedQuery) -> bool:
    """Whether every word of the query's positive items is a word of the word index (a typed
    prefix: some word starts so) -- by the index alone, newest first, one entry each.

    Then a query FTS5 answers with nothing has nothing for the substring retry to find but
    the rare phrase glued at its ends to other letters (``restaging clusters``): that retry
    is for words the word index never saw as words (``youer`` in ``修改youer服务端``), and
    over common words it costs more than anything else a search does (``"staging cluster"``
    on the trigram index: 55-110 ms at 1M, every trigram of it common). A query of one word
    is not asked (False): FTS5 found nothing for it, so it is no word of the index but in
    what the filters leave out, and the retry is what it always was (a statement less for
    the commonest empty answer, a word typed wrong)."""
    terms = positive_query_terms(parsed)
    if sum(len(WORD_RE.findall(item.text)) for item, _negs in terms) < 2:
        return False
    for item, _negs in terms:
        words = WORD_RE.findall(item.text)
        if not words:
            return False
        for index, word in enumerate(words):
            if item.prefix and index == len(words) - 1 and word.isascii():
                if prefix_terms(ctx, word.lower()) == []:
                    return False
                continue
            if probe(ctx, FTS_TABLE, quote(word) + ("*" if item.prefix and index == len(words) - 1 else ""), 0)[0] == 0:
                return False
    return True
