"""The rankings the engine chooses between for one FTS query (see "Design" in
:mod:`hermes_state.search`): exact bm25 by FTS5 when its work is affordable, bm25 over the
newest window of matches, or newest first when every word is common."""

from __future__ import annotations

from ..models import WINDOW_RANKING
from ..query import find_spans, split_marked
from .by_conversation import conversation_ranked
from .context import Ctx, Outcome, Row, iter_rows, older_newest_first, probe, scan_sql
from .narrowing import scan_window
from .ranking import Phrase, idf, window_scores
from .tuning import TUNING


def fts_engine(
    ctx: Ctx,
    table: str,
    match: str,
    phrases: list[Phrase],
    path: str,
    substring_terms: list[str] | None = None,
    shape: tuple[tuple[str, bool], ...] | None = None,
    exact_under: int = 0,
) -> Outcome:
    """Rank ``match`` on ``table`` per the design in the module docstring.

    With ``substring_terms`` (trigram table) rows carry their plain text and spans are the
    terms' occurrences; otherwise ``highlight()`` marks the tokens FTS5 matched, or, with
    ``ctx.light``, the newest-first scans read the text plain and :class:`Light` marks it.
    """
    plain = substring_terms is not None
    sort = ctx.sort

    def to_ranked(rowid: int, text: str, score: float | None) -> Row:
        """A row of a statement that highlighted it (or, ``plain``, of the trigram table)."""
        if plain:
            return Row(int(rowid), text or "", find_spans(text or "", substring_terms), score)
        body, spans = split_marked(text or "")
        return Row(int(rowid), body, spans, score, highlighted=True)

    light = ctx.light if not plain else None
    #: A row of a newest-first scan (:func:`scan_sql`: plain text with ``ctx.light``).
    to_row = light.row if light is not None else to_ranked

    if sort != "auto":
        total, exact = probe(ctx, table, match, TUNING.PROBE_ROWS)
        if total == 0:
            return Outcome([], "", 0, True, False, path)
        if sort == "conversation":
            return conversation_ranked(ctx, table, match, path, plain, to_ranked, to_row, total)
        if sort == "rank":
            return exact_bm25(ctx, table, match, path, total, exact, to_ranked, plain)
        return newest_first(ctx, table, match, path, total, exact, to_row, plain, [])

    if (not plain and len(phrases) == 1 and len(phrases[0].tokens) == 1
            and not phrases[0].prefix and not phrases[0].negated):
        # One whole word (a first key, a 1-2 letter word): its matches are counted by a rowid
        # scan of its doclist (~0.3 ms for 1,500 rows) before any text is highlighted. When
        # FTS5 can rank them all, the window scan would be thrown away (`d` at 1M v30: 401
        # rows highlighted, 3-4 ms, then the exact ranking anyway). Not for several words:
        # the probe of an AND of common words (`the s`) reads far more than it returns.
        outcome = exact_if_affordable(ctx, table, match, phrases, path, to_ranked)
        if outcome is not None:
            return outcome
    # A phrase of several words: FTS5 finds its matches by walking its words' doclists, so a
    # phrase of common words costs its words' frequency, not its own (below).
    several = not plain and any(len(p.tokens) > 1 and not p.negated for p in phrases)
    floor = walk_floor(ctx, table, phrases) if several else None
    # auto: one scan of the newest ctx.window + 1 matches serves as probe, as the candidates of
    # the window ranking and as the page of a newest-first answer.
    rows = scan_window(ctx, table, match, shape, plain, floor)
    if floor is not None and not rows and not ctx.budget.exhausted:
        # No match within the bounded walk: the older ones are read (the walk goes on down,
        # as an unbounded scan's would -- it is not read twice). A bound of the query's, not
        # of the page's: every page of an answer ranks alike.
        rows += older_matches(ctx, table, match, floor, ctx.window + 1 - len(rows))
        floor = None
    if not rows:
        if ctx.budget.exhausted:
            ctx.notes.append("search stopped at its time budget before finding a match")
            return Outcome([], "", 0, False, False, path)
        return Outcome([], "", 0, True, False, path)
    n_rows = ctx.row_count(table)
    # (a scan the floor stopped read every match above it, not every match -- unless the
    # time budget stopped it first)
    bounded = floor is not None and len(rows) <= ctx.window and not ctx.budget.exhausted
    complete = len(rows) <= ctx.window and not ctx.budget.exhausted and not bounded
    if complete:
        total, exact = len(rows), True
    else:
        oldest_read = floor if bounded and floor is not None else int(rows[-1][0])
        span = max(1, ctx.max_rowid() - oldest_read + 1)
        total, exact = max(len(rows), min(n_rows, int(round(len(rows) / span * n_rows)))), False
    work = bm25_work(ctx, table, phrases, total)
    # A phrase of several words: FTS5 would walk its words' doclists twice more to rank what
    # the scan found. When its matches are few enough, the scan reads them all (the older
    # part of one walk) and they are ranked here, every one of them -- unless that walk is
    # the one the floor bounded.
    if (several and floor is None and not complete and total <= TUNING.PHRASE_RANKED_ROWS
            and not ctx.budget.exhausted):
        rows = rows + older_matches(ctx, table, match, int(rows[-1][0]), TUNING.PHRASE_RANKED_ROWS + 1 - len(rows))
        if len(rows) <= TUNING.PHRASE_RANKED_ROWS and not ctx.budget.exhausted:
            complete, total, exact = True, len(rows), True
            if len(phrases) == 1:
                phrases[0].df = total
    if several and complete:
        return window_ranked(ctx, table, match, phrases, path, total, exact, to_row, plain, rows, complete)
    # (``exact_under``: few matches of trigram expansions, whose bm25 credits a rare
    # continuation of a short word as the window's counts cannot, at a bounded cost)
    # (not when the walk was bounded: FTS5's ranking walks the words' doclists whole, twice)
    if floor is None and (work <= exact_bound(ctx)
                        or (complete and total <= exact_under and work <= 20 * TUNING.EXACT_BM25_MAX_ROWS)):
        return exact_bm25(ctx, table, match, path, total, exact, to_ranked, plain)
    positive = [p for p in phrases if not p.negated]
    if not complete and positive and all(p.df > TUNING.COMMON_SHARE * n_rows for p in positive):
        return newest_first(ctx, table, match, path, total, exact, to_row, plain, rows)
    # A phrase too rare for the bounded walk to fill a page (`"config file"` at 5M: 2 of its
    # 21 matches lie within it, the rest behind a walk of ~50 ms): the page ends with the
    # matches above the floor and says more may follow; the next page reads the older ones
    # (the browser asks for it at once, and ranks every match once typing pauses).
    short_page = bounded and len(rows) < TUNING.PHRASE_BOUNDED_MIN_ROWS
    return window_ranked(ctx, table, match, phrases, path, total, exact, to_row, plain, rows, complete,
                         short_page=short_page)


def bm25_work(ctx: Ctx, table: str, phrases: list[Phrase], total: int) -> int:
    """What exact bm25 would read for a query of ``total`` matches: those, and every
    phrase's matches for its frequency (each phrase's ``df`` is set: a lone positive phrase's
    is ``total``, the others are probed) -- and, for a phrase of several words, the walk
    FTS5 makes over its words' doclists to find where they stand together (:func:`phrase_walk`)."""
    if len(phrases) == 1 and not phrases[0].negated:
        phrases[0].df = total
    else:
        for phrase in phrases:
            phrase.df = probe(ctx, table, phrase.match, TUNING.PHRASE_PROBE_ROWS)[0]
    return total + sum(p.df for p in phrases) + phrase_walk(ctx, table, phrases)


def walk_floor(ctx: Ctx, table: str, phrases: list[Phrase]) -> int | None:
    """The lowest rowid a keystroke's scan of a phrase of several words reads down to, or
    None when the whole walk of its words' doclists fits ``TUNING.PHRASE_WALK_ENTRIES``.

    To find a phrase FTS5 walks the doclist of each of its words: ``"auth module"`` matches
    600 messages of 5M, but its words stand in 3.5 % and 8 % of them, and reading its newest
    400 matches walked 14.5 ms of their doclists, all 600 20 ms. Bounded, the scan reads the
    newest matches within that many doclist entries (the words spread evenly over the
    rowids: entries per rowid is their frequency), they are ranked as the window is, and
    the older follow newest first -- with fewer than a page above the floor, on the next
    page (:attr:`~hermes_state.models.SearchResult.short_page`); once typing pauses every
    match is ranked (:mod:`~hermes_state.search.by_conversation`)."""
    entries = walk_entries(ctx, table, phrases)
    if entries <= TUNING.PHRASE_WALK_ENTRIES:
        return None
    top = ctx.max_rowid()
    per_rowid = entries / max(1, top)
    return max(1, top - int(TUNING.PHRASE_WALK_ENTRIES / per_rowid) + 1)


def phrase_walk(ctx: Ctx, table: str, phrases: list[Phrase]) -> int:
    """The walk over the doclists of the words of the query's phrases of several words, in
    rows of bm25 work (:data:`~hermes_state.search.tuning.Tuning.WALK_ENTRIES_PER_ROW`).

    A phrase's matches say nothing of its cost: to find them FTS5 reads the doclist of each
    of its words whole (``"config file"`` matches 9 messages of 1M, but its words stand in
    14 % and 23 % of them: 13 ms a walk). Exact bm25 walks them twice -- to match, and again
    to count the phrase for its IDF -- so a phrase of common words is ranked from the rows
    its one scan read, never by a second statement. Each word's doclist is probed (newest
    first, bounded) like a phrase."""
    return walk_entries(ctx, table, phrases) // TUNING.WALK_ENTRIES_PER_ROW


def walk_entries(ctx: Ctx, table: str, phrases: list[Phrase]) -> int:
    """The doclist entries of the words of the query's phrases of several words (each word
    probed, newest first and bounded, like a phrase): what FTS5 walks to find them."""
    entries = 0
    for phrase in phrases:
        if len(phrase.tokens) < 2:
            continue
        for index, token in enumerate(phrase.tokens):
            if phrase.prefix and index == len(phrase.tokens) - 1:
                continue  # (a prefix's doclists are its words': left out, an underestimate)
            entries += probe(ctx, table, '"' + token.replace('"', '""') + '"', TUNING.PHRASE_PROBE_ROWS)[0]
    return entries


def older_matches(ctx: Ctx, table: str, match: str, below: int, cap: int) -> list[tuple[int, str]]:
    """Up to ``cap`` matches under the filters older than rowid ``below``, newest first, as the
    window scan reads them (rowid, text)."""
    sql = scan_sql(table, ctx, "rowid", extra=f" AND {table}.rowid < ?")
    return [(int(r[0]), r[1]) for r in iter_rows(ctx, sql, [match, below, *ctx.params], cap, True)]


def exact_bound(ctx: Ctx) -> int:
    """The most work (:func:`bm25_work`) a keystroke's exact bm25 may take: ``EXACT_BM25_MAX_ROWS``,
    or its share for a search that ranks a share of the window (several profiles' stores each
    rank theirs, ``SearchOptions.window``): three stores each ranking a first key's 1,500
    matches exactly cost three times one store's keystroke, the tail of typing across profiles."""
    return TUNING.EXACT_BM25_MAX_ROWS * min(ctx.window, TUNING.WINDOW) // max(1, TUNING.WINDOW)


def exact_if_affordable(ctx, table, match, phrases, path, to_row) -> Outcome | None:
    """The exact bm25 answer of a one-word query (highlighted, not plain) when a rowid probe
    shows its work within :func:`exact_bound` -- the choice :func:`fts_engine` makes after
    the window scan, made from an exact count of the unfiltered matches; None when it is
    not, or not known to be (the probe counts up to half the bound: one word's work is twice
    its matches)."""
    bound = exact_bound(ctx)
    total, exact = probe(ctx, table, match, bound // 2)
    if total == 0:
        return Outcome([], "", 0, True, False, path)
    if not exact or bm25_work(ctx, table, phrases, total) > bound:
        return None
    # (Filters narrow the count: then it is an upper bound, not the answer's.)
    return exact_bm25(ctx, table, match, path, total, not ctx.filtered, to_row, False)


def exact_bm25(ctx, table, match, path, total, exact, to_row, plain) -> Outcome:
    sql = scan_sql(table, ctx, "rank", plain=plain) + " LIMIT ? OFFSET ?"
    rows = ctx.conn.execute(sql, [match, *ctx.params, ctx.limit + 1, ctx.offset]).fetchall()
    out = [to_row(r[0], r[1], -float(r[2])) for r in rows[: ctx.limit]]
    more = len(rows) > ctx.limit
    if not more and (out or ctx.offset == 0):
        return Outcome(out, "bm25", ctx.offset + len(out), True, False, path)
    return Outcome(out, "bm25", total, exact, more, path)


def newest_first(ctx, table, match, path, total, exact, to_row, plain, scanned) -> Outcome:
    """Newest first; ``scanned`` holds rows already read newest-first (maybe enough)."""
    if len(scanned) >= ctx.want:
        got = scanned
    else:
        sql = scan_sql(table, ctx, "rowid", plain=plain)
        got = list(iter_rows(ctx, sql, [match, *ctx.params], ctx.want, ctx.filtered))
    page = got[ctx.offset : ctx.offset + ctx.limit]
    out = [to_row(r[0], r[1], None) for r in page]
    more = len(got) > ctx.offset + ctx.limit
    if ctx.budget.exhausted and len(got) < ctx.want:
        ctx.notes.append("search stopped at its time budget; older matches were not scanned")
    if ctx.filtered and not more and not ctx.budget.exhausted:
        total, exact = len(got), True
    return Outcome(out, "newest", total, exact and not (ctx.filtered and more), more, path)


def window_ranked(ctx, table, match, phrases, path, total, exact, to_row, plain, rows, complete,
                  short_page: bool = False) -> Outcome:
    """bm25 (Python, probed IDF) over the newest ``WINDOW`` matches, older ones following
    newest first; or, ``complete``, over every match. ``short_page``: a page that starts
    among the ranked rows ends with them (reading the older matches is the walk the
    keystroke's bound left out); it has more, maybe -- the next page reads them."""
    if not complete:
        rows = rows[:ctx.window]
    n_rows = ctx.row_count(table)
    idfs = [idf(p.df, n_rows) for p in phrases]
    # Only tf and document length are needed here; the page's snippets are built later.
    # Typing the rest of a word often leaves the window as it was (``kubern*`` …
    # ``kubernetes*``): the same rows, the same IDFs, the same ranking, kept on the connection.
    cache = ctx.prefix_cache
    key = (tuple(rows), tuple(idfs), plain, ctx.light is not None)
    kept = cache.window if cache is not None else None
    if kept is not None and kept[0] == key:
        scored = kept[1]
    else:
        scored = window_scores(rows, phrases, idfs, plain, ctx.light)
        if cache is not None:
            cache.window = (key, scored)
    start, stop = ctx.offset, ctx.offset + ctx.limit
    page = [to_row(rowid, text, score) for score, rowid, text in scored[start:stop]]
    if complete:
        return Outcome(page, "bm25", total, exact, len(scored) > stop, path)
    if ctx.budget.exhausted:
        ctx.notes.append(f"ranked the newest {len(rows)} matches (time budget)")
        return Outcome(page, WINDOW_RANKING, total, False, len(scored) > stop, path)
    # Past the window, older matches follow newest first: a stable order for paging.
    more = len(scored) > stop
    if short_page and start < len(scored):
        return Outcome(page, WINDOW_RANKING, total, exact, True, path, short_page=len(page) < ctx.limit)
    if rows and (len(page) < ctx.limit or not more):
        # (a page that ends where the window does: whether older matches follow is one row away)
        skip = max(0, ctx.offset - len(scored))
        older, more = older_newest_first(ctx, table, match, plain, to_row, min(int(r[0]) for r in rows),
                                         skip, ctx.limit - len(page), True)
        page += older
        if short_page and not more and not ctx.budget.exhausted:
            # (the bounded walk's rows, all of them, and the older ones read to their end: the
            # total is known now, not the estimate the first page made from the walk)
            total, exact = len(scored) + skip + len(older), True
    return Outcome(page, WINDOW_RANKING, total, exact, more, path)
