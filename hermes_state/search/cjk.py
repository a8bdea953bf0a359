"""The CJK paths of the structured search: substrings on the trigram index, 1-2 character
words expanded through its vocabulary, and the LIKE scan (newest first, bounded)."""

from __future__ import annotations

from ..query import OPERATORS, ParsedQuery, QueryItem, cjk_tokens, find_spans, trigram_match
from .context import Ctx, Outcome, Row, iter_rows
from .ranking import Phrase
from .sql import FTS_TABLE, TRIGRAM_TABLE, like_clause, quote, trigrams_starting, where_clause
from .strategies import fts_engine
from .tuning import TUNING


def expand_short(ctx: Ctx, term: str) -> list[str] | None:
    """Trigrams that start with a 1–2 character ``term``: [] when absent, None when too many."""
    return trigrams_starting(ctx.conn, term, TUNING.MAX_EXPANSION)


def cjk_search(ctx: Ctx, q: str) -> tuple[Outcome | None, str]:
    """Paths B/C for :func:`search`: trigram substrings, short tokens expanded or LIKE."""
    # (a substring is its own prefix: `golang*` typed last is the substring golang)
    tokens = [t.rstrip("*") or t for t in cjk_tokens(q)]
    items = [QueryItem("op", t) if t in OPERATORS else QueryItem("phrase", t) for t in tokens]
    groups = ParsedQuery(items=items, verbatim=False).groups()
    terms = [item.text for item in items if item.kind != "op"]
    if not terms:
        return None, ""
    if not ctx.trigram:
        return like_search(ctx, groups, terms), describe_like(groups)
    if any(len(term) < 3 for term in terms):
        # Frequent short tokens fill a page from the newest few thousand messages: try
        # that cheap LIKE pass first; rare and absent ones go to the trigram vocabulary.
        quick = like_search(ctx, groups, terms, floor=ctx.max_rowid() - TUNING.LIKE_FIRST_ROWS)
        if quick is not None:
            return quick, describe_like(groups)
    expansions: dict[str, list[str] | None] = {}
    for term in terms:
        if len(term) < 3 and term not in expansions:
            expansions[term] = expand_short(ctx, term)
    if any(value is None for value in expansions.values()):
        return like_search(ctx, groups, terms), describe_like(groups)

    def render(term: str) -> str | None:
        if term in expansions:
            found = expansions[term]
            if not found:
                return None
            return "(" + " OR ".join(quote(t) for t in found) + ")"
        return quote(term)

    rendered_groups = []
    for group in groups:
        parts = []
        dead = False
        for pos, negs in group:
            head = render(pos.text)
            if head is None:
                dead = True
                break
            neg_parts = [r for r in (render(n.text) for n in negs) if r is not None]
            parts.append("(" + " NOT ".join([head, *neg_parts]) + ")" if neg_parts else head)
        if not dead and parts:
            rendered_groups.append(" AND ".join(parts))
    if not rendered_groups:
        return Outcome([], "", 0, True, False, "trigram"), trigram_match(tokens)
    match = " OR ".join(
        f"({g})" if len(rendered_groups) > 1 else g for g in rendered_groups
    )
    positive_terms = [pos.text for group in groups for pos, _ in group]
    # Short words are ranked as others are (their phrase is their expansion): newest first
    # lost what bm25 ranks first in a few ms (`服务器 证书`).
    phrases = substring_phrases(groups, {term: render(term) for term in expansions})
    if expansions:
        return fts_engine(ctx, TRIGRAM_TABLE, match, phrases, "trigram", positive_terms, exact_under=1000), match
    return fts_engine(ctx, TRIGRAM_TABLE, match, phrases, "trigram", positive_terms), match


def substring_phrases(groups, matches: dict[str, str | None] | None = None) -> list[Phrase]:
    matches = matches or {}
    phrases = []
    for group in groups:
        for pos, negs in group:
            for item, negated in [(pos, False), *((n, True) for n in negs)]:
                match = matches.get(item.text) or quote(item.text)
                phrases.append(Phrase(match, [item.text.lower()], False, negated))
    return phrases


def describe_like(groups) -> str:
    out = []
    for group in groups:
        parts = []
        for pos, negs in group:
            parts.append(" NOT ".join([quote(pos.text), *(quote(n.text) for n in negs)]))
        out.append(" AND ".join(parts))
    return "LIKE " + " OR ".join(out)


def like_search(ctx: Ctx, groups, terms: list[str], floor: int | None = None) -> Outcome | None:
    """LIKE scan, newest first by rowid, boolean structure kept, stopping at the page.

    With ``floor`` only rows above that rowid are scanned, and None is returned unless
    they hold the whole page (the caller then looks further by other means).
    """
    group_sql, params = [], []
    for group in groups:
        parts = []
        for pos, negs in group:
            clause, values = like_clause(pos.text)
            parts.append(clause)
            params.extend(values)
            for neg in negs:
                # NOT over NULL columns would be NULL: compare against '' instead.
                clause, values = like_clause(neg.text, not_null=True)
                parts.append("NOT " + clause)
                params.extend(values)
        group_sql.append("(" + " AND ".join(parts) + ")")
    sql = (
        "SELECT m.id, COALESCE(m.content, '') || ' ' || COALESCE(m.tool_name, '') || ' ' || "
        "COALESCE(m.tool_calls, '') FROM messages m "
        + ("JOIN sessions s ON s.id = m.session_id " if ctx.filtered else "")
        + f"WHERE ({' OR '.join(group_sql)}){where_clause(ctx.filters)}"
        + (" AND m.id > ?" if floor is not None else "")
        + " ORDER BY m.id DESC"
    )
    args = [*params, *ctx.params] + ([floor] if floor is not None else [])
    got = list(iter_rows(ctx, sql, args, ctx.want, True))
    if floor is not None and len(got) < ctx.want:
        return None
    page = got[ctx.offset : ctx.offset + ctx.limit]
    positive = [pos.text for group in groups for pos, _ in group]
    rows = []
    for rowid, text in page:
        rows.append(Row(int(rowid), text or "", find_spans(text or "", positive)))
    more = len(got) > ctx.offset + ctx.limit
    if more:
        span = max(1, ctx.max_rowid() - int(got[-1][0]) + 1)
        total, exact = max(len(got), int(len(got) / span * ctx.row_count(FTS_TABLE))), False
    else:
        total, exact = len(got), not ctx.budget.exhausted
    if ctx.budget.exhausted and not more:
        ctx.notes.append("search stopped at its time budget; older messages were not scanned")
    return Outcome(rows, "newest", total, exact, more, "like")
