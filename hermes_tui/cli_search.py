"""``hermes sessions search QUERY...``: the browser's search on the command line (SR-17..SR-19).

The words are joined by spaces and read as the browser's search field reads them: words,
``"a phrase"``, ``OR``, ``NOT word``, ``word*`` (a prefix), and ``after:`` / ``before:`` time
terms (:func:`hermes_state.timewindow.windowed`). The answer is the library's: the
message-level search by conversation (:func:`hermes_state.search.search`) and the
conversations it found, named, marked and kept by the list's filters as the browser shows
them (:func:`hermes_state.search.found.found_conversations`); nothing of that is done here.
This module only pages, merges profiles and prints.

Output: one block per conversation on stdout (its id -- the one ``list`` shows and
``hermes --resume`` takes --, title, source, last activity, hit count, then up to three hit
lines). On a terminal the matched words are emphasised (Rich ``Text`` built from data); piped,
a snippet keeps upstream's ``>>>match<<<`` markers so ``grep`` finds them. Every stored text
is made inert before it is printed. The summary line (how many, how ranked) and every note go
to stderr. ``--json`` is one document (:mod:`hermes_tui.cli_json`; README, "JSON output").

An empty answer is success (CLI-2): nothing on stdout (with ``--json`` a document with no
conversation), and on stderr the one line saying why (the library's explanation, SR-19, or
how many conversations the filters left out).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterator

from hermes_state import ListQuery
from hermes_state.inert_text import inert_cells, inert_line
from hermes_state.models import ranks_again_when_paused

from . import cli_filters, cli_profiles
from .cli_filters import FilterError
from .textsafe import fit_cells
from .wording import counted

#: Hits asked for per page of the search: the browser's page (its ``SEARCH_PAGE``), so the
#: conversations come in the order the browser's pane shows them (a page's conversations
#: are ranked within the page; later pages append).
PAGE_HITS = 40
#: Pages read at most for one store (each a search): an answer of thousands of hits in a
#: handful of conversations would otherwise be read whole before its tenth one.
MAX_PAGES = 50
#: Hit lines printed under each conversation.
HIT_LINES = 3
#: The cells a title takes on a conversation's first line.
TITLE_CELLS = 100
#: How the matched words look on a terminal.
MATCH_STYLE = "bold underline"
ORDERS = ("relevance", "newest")


def add_search(sub, run, limit_type, statuses_type) -> None:
    parser = sub.add_parser(
        "search", help="full-text search: the conversations whose messages hold the words (as the browser's search)")
    parser.add_argument(
        "query", metavar="QUERY", nargs="+",
        help='words (joined by spaces): word, "a phrase", OR, NOT word, word* (a prefix), '
             "after:WHEN, before:WHEN")
    parser.add_argument("--limit", type=limit_type, default=20, help="how many conversations (default 20)")
    parser.add_argument("--order", choices=ORDERS, default="relevance",
                        help="relevance (default: the browser's ranking) or newest (newest match first)")
    parser.add_argument("--hidden", action="store_true",
                        help="also search hidden sessions, internal runs and delegate runs (as H in the browser)")
    parser.add_argument("--json", action="store_true", help="one JSON document (see README, JSON output)")
    parser.add_argument("--unread", action="store_true",
                        help="only conversations with activity since last read (v30 stores)")
    parser.add_argument("--status", type=statuses_type, metavar="STATUS[,STATUS]",
                        help="only conversations that ended so: done, interrupted, error, empty")
    cli_filters.add_filter_options(parser)
    parser.set_defaults(run=run)


# ---------------------------------------------------------------------------- one store's answer


@dataclass
class Answer:
    """What one store answered: its conversations (in its order, up to the limit), and the
    figures of its search."""

    conversations: list = field(default_factory=list)
    path: str = ""
    ranking: str = ""
    order: str = ""
    note: str | None = None
    error: str | None = None
    #: Conversations the list's conversation filters left out (for an empty answer's reason).
    dropped: set = field(default_factory=set)
    #: The list's query the answer was read under (which filters, for that reason).
    query: ListQuery | None = None
    #: The store has more conversations than were read.
    more: bool = False


def answer_of(db: Any, text: str, query: ListQuery, limit: int, order: str, now: float) -> Answer:
    """Up to ``limit`` conversations of ``text`` in ``db``, read a page of hits at a time;
    the hits of a conversation met again on a later page join it (its hit count is the hits
    read)."""
    from hermes_state.search.found import found_conversations

    answer = Answer(query=query)
    by_root: dict[str, Any] = {}
    offset = 0
    sort = "auto"
    for _page in range(MAX_PAGES):
        result = db.search(text, query, limit=PAGE_HITS, offset=offset, order=order, now=now, sort=sort)
        if offset == 0 and sort == "auto" and ranks_again_when_paused(result.ranking) and order == "relevance":
            # Ranked for a keystroke (over the newest matches, or by message): a command is
            # read as the browser's pane is once typing pauses -- every match ranked by
            # conversation. (Words too common to rank stay newest first, as in the pane.)
            sort = "rank"
            result = db.search(text, query, limit=PAGE_HITS, offset=offset, order=order, now=now, sort=sort)
        if offset == 0:
            answer.path, answer.ranking, answer.order = result.path, result.ranking, result.order
            answer.note, answer.error = result.note, result.error
        found = found_conversations(db.store, result, query)
        answer.dropped.update(found.dropped_roots)
        for conversation in found.conversations:
            known = by_root.get(conversation.root_id)
            if known is None:
                by_root[conversation.root_id] = conversation
            else:
                known.hits.extend(conversation.hits)
        if not result.hits or not result.has_more or len(by_root) > limit:
            break
        offset += len(result.hits)
    answer.more = len(by_root) > limit or (result.has_more and bool(result.hits))
    answer.conversations = list(by_root.values())[:limit]
    answer.dropped -= set(by_root)  # (left out on one page, kept on another: it was found)
    return answer


# ---------------------------------------------------------------------------- the command


def run_search(args: argparse.Namespace, kit: Any) -> int:
    """The command (``kit``: the command line's ``open_store``, profile opener, source
    warnings and per-store filters, handed by :mod:`hermes_tui.cli`)."""
    from hermes_state.timewindow import windowed

    raw = " ".join(args.query)
    if not raw.strip():
        raise FilterError("Error: nothing to search for: give one or more words.", code=2)
    now = time.time()
    base = ListQuery().with_(narrow=cli_filters.narrow_from_args(args, now))
    read = windowed(raw, base.narrow, now)
    if not read.text.strip():
        if read.problem:  # (only a term that cannot be read: that is what to fix)
            raise FilterError(f"Error: {inert_line(read.problem)}", code=2)
        raise FilterError("Error: nothing to search for but a time window: give one or more words.", code=2)
    if read.problem:
        # (as the browser's field: the term is left out, and said)
        print(f"Note: {inert_line(read.problem)}; searched without it.", file=sys.stderr)
    if cli_profiles.across(args):
        return _across(args, kit, read, now)
    with kit.open_store("read") as db:
        kit.warn_unknown_source(db, args.source)
        query = _with_own(cli_filters.query_from_args(db, args, now=now), args)
        query = query.with_(narrow=_merged_window(query.narrow, read.narrow))
        cli_filters.note_unread(db, args.unread)
        answer = answer_of(db, read.text, query, args.limit, args.order, now)
        return _print(args, raw, [(None, answer)], [(None, c) for c in answer.conversations], now)


def _with_own(query: ListQuery, args: argparse.Namespace) -> ListQuery:
    """The list's query with this command's own filters: unread only, statuses, hidden."""
    query = query.with_(unread_only=bool(args.unread), statuses=tuple(sorted(args.status or ())))
    if args.hidden:
        # As H in the browser: hidden sessions, internal runs and delegate runs too.
        query = query.with_(include_hidden=True, include_delegates=True, exclude_sources=())
    return query


def _merged_window(narrow, windowed_narrow):
    """The options' narrow (read on the store) with the query's time terms' window."""
    return narrow.with_(since=windowed_narrow.since, until=windowed_narrow.until)


def _across(args: argparse.Namespace, kit: Any, read, now: float) -> int:
    """Every profile's store searched, the conversations ranked together by their best hit
    (:func:`hermes_state.across_profiles.best_head`, as the browser ranks them across
    profiles), each naming its profile; a store that cannot be read is named once on stderr
    and left out."""
    from hermes_state.across_profiles import merge_ranked

    with cli_profiles.open_across(kit.open_profile_store, cli_profiles.warn) as (opened, _left):
        kit.warn_unknown_source_across([item.store for item in opened], args.source)
        queries = kit.queries_across(args, opened, ListQuery(), now)
        answers: list[tuple[str, Answer]] = []
        for item, query in queries:
            query = _with_own(query, args)
            query = query.with_(narrow=_merged_window(query.narrow, read.narrow))
            cli_filters.note_unread(item.store, args.unread, item.profile.name)
            answers.append((item.profile.name, answer_of(item.store, read.text, query, args.limit, args.order, now)))
        merged = merge_ranked([(name, answer.conversations) for name, answer in answers],
                              key_of=lambda c: c.hits[0] if c.hits else None, limit=args.limit)
        return _print(args, " ".join(args.query), answers, merged, now, across=True)


# ---------------------------------------------------------------------------- output


def _print(args: argparse.Namespace, raw: str, answers: list, shown: list, now: float, *,
           across: bool = False) -> int:
    ranking = _joined(a.ranking for _n, a in answers)
    path = _joined(a.path for _n, a in answers)
    order = next((a.order for _n, a in answers if a.order), args.order)
    errors = [(name, a.error) for name, a in answers if a.error]
    if errors and not shown:
        name, error = errors[0]
        where = f"profile '{inert_line(name)}': " if name is not None else ""
        raise FilterError(f"Error: {where}the search failed: {inert_line(error)}", code=1)
    if args.json:
        _write_json(raw, ranking, path, order, shown, across)
    elif shown:
        _write_text(shown, now, across)
    # A store that found nothing explains its own empty answer ("no message holds the word
    # ..."): beside another profile's hits that would be false, so across profiles a note is
    # said only of stores that found something, unless none did (as the browser does).
    found = [a for _n, a in answers if a.conversations]
    notes = list(dict.fromkeys(a.note for a in (found or [a for _n, a in answers]) if a.note))
    if not shown:
        print(_why_empty(answers, notes), file=sys.stderr)
        return 0
    more = any(a.more for _n, a in answers) or sum(len(a.conversations) for _n, a in answers) > len(shown)
    ranked = ("newest match first" if order == "newest"
              else "ranked by relevance" + (f" ({ranking})" if ranking else ""))
    profiles = f" across {len(answers)} profiles" if across else ""
    tail = f"; more with --limit {args.limit * 2}" if more else ""
    hits = sum(len(c.hits) for _n, c in shown)
    print(f"{counted(len(shown), 'conversation')} ({counted(hits, 'hit')}){profiles}, {ranked}{tail}",
          file=sys.stderr)
    for note in notes:
        print(f"Note: {inert_line(note)}", file=sys.stderr)
    return 0


def _why_empty(answers: list, notes: list[str]) -> str:
    """One line: why nothing was found -- the filters, when messages matched and the list's
    filters left their conversations out; else the library's reason (SR-19)."""
    from hermes_state.search.found import dropped_note

    dropped = sum(len(a.dropped) for _n, a in answers)
    if dropped:
        query = next((a.query for _n, a in answers if a.dropped and a.query is not None), ListQuery())
        return f"No conversation found: {dropped_note(dropped, query.conversation_filters())}."
    if notes:
        return f"No conversation found: {inert_line(notes[0])}"
    return "No conversation found."


def _joined(values) -> str:
    return "+".join(dict.fromkeys(v for v in values if v))


def _when(ts: Any) -> str:
    """A local date and minute (a script sorts and greps them), ``?`` for no valid time."""
    try:
        return datetime.fromtimestamp(float(ts)).strftime("%Y-%m-%d %H:%M")
    except (TypeError, ValueError, OverflowError, OSError):
        return "?"


def _marks(c: Any) -> list[str]:
    from hermes_state.lifecycle import COMPLETE

    marks = []
    if c.unread:
        marks.append("unread")
    if c.status:
        # (a status by its own name, the word `--status` takes: the list's compact tags,
        # "intr", "err", read as cut off in a line of prose; "complete" is said "done")
        marks.append("done" if c.status == COMPLETE else c.status)
    if c.archived:
        marks.append("archived")
    if c.hidden:
        marks.append("hidden")
    if c.across:
        marks.append(f"found across {c.across} messages")
    return marks


def _write_text(shown: list, now: float, across: bool) -> None:
    """The blocks, through Rich on a terminal (matches emphasised), plain when piped."""
    from hermes_state.timefmt import stamp_and_relative

    tty = sys.stdout.isatty()
    console = None
    if tty:
        from rich.console import Console

        console = Console(highlight=False, soft_wrap=True, emoji=False)
    first = True
    for profile, c in shown:
        lines: list[Any] = [] if first else [""]
        first = False
        title = fit_cells(inert_cells(c.label), TITLE_CELLS)
        lines.append(f"{inert_line(c.tip_id)}  {title}")
        meta = [f"profile {inert_line(profile)}"] if across else []
        meta += [inert_line(c.source or "?"), f"last active {stamp_and_relative(c.last_active, now)}",
                 counted(len(c.hits), "hit"), *_marks(c)]
        lines.append("  " + " · ".join(meta))
        for hit in c.hits[:HIT_LINES]:
            head = f"  {inert_line(hit.role or '?'):<9} {_when(hit.timestamp)}  "
            lines.append(_hit_line(head, hit, tty))
        if len(c.hits) > HIT_LINES:
            lines.append(f"  … {counted(len(c.hits) - HIT_LINES, 'more hit')}")
        if console is not None:
            for line in lines:
                console.print(line if not isinstance(line, str) else _plain(line))
        else:
            sys.stdout.write("\n".join(lines) + "\n")


def _plain(line: str):
    from rich.text import Text

    return Text(line)


def _hit_line(head: str, hit: Any, tty: bool) -> Any:
    """A hit's line: on a terminal a Rich ``Text`` of the snippet with its spans emphasised
    (the inert text keeps one code point for one, so the spans stay where they were);
    piped, the snippet with upstream's ``>>>``/``<<<`` markers."""
    if not tty:
        return (head + inert_line(hit.raw_snippet or hit.snippet)).rstrip()
    from rich.text import Text

    from .ellipsis import shown_snippet

    # (upstream's "..." cut marks shown as the browser shows them, "…", the spans moved along)
    snippet, spans = shown_snippet(hit.snippet, [tuple(span) for span in hit.spans])
    line = Text(head)
    start = len(line)
    line.append(inert_line(snippet))
    for a, b in spans:
        if 0 <= a < b <= len(snippet):
            line.stylize(MATCH_STYLE, start + a, start + b)
    return line


def _write_json(raw: str, ranking: str, path: str, order: str, shown: list, across: bool) -> None:
    from .cli_json import write_document

    def items() -> Iterator[dict]:
        for profile, c in shown:
            item = {
                "id": c.tip_id,
                "root_id": c.root_id,
                "title": c.label if c.titled else None,
                "label": c.label,
                "source": c.source,
                "archived": c.archived,
                "hidden": c.hidden,
                "unread": c.unread,
                "status": c.status,
                "last_active": c.last_active,
                "hit_count": len(c.hits),
                "across": c.across,
                "hits": [{
                    "session_id": hit.session_id,
                    "message_id": hit.id,
                    "role": hit.role,
                    "timestamp": hit.timestamp,
                    "snippet": hit.snippet,
                    "spans": [list(span) for span in hit.spans],
                    "score": hit.score,
                } for hit in c.hits],
            }
            if across:
                item["profile"] = profile
            yield item

    write_document("search", "conversations", items(), query=raw, ranking=ranking, path=path, order=order)
