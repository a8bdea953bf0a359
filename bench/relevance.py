"""Does search find the conversation a person remembers? The relevance bench.

    python -m bench.relevance --size 1m              # the cached 1M corpus, needles planted in a copy
    python -m bench.relevance --size 1m --schema 30
    python -m bench.relevance --size 5m --json /tmp/rel-5m.json
    python -m bench.relevance --size 1m --needles b  # a held-out set (bench/needles_b.py, _c, _d)
    python -m bench --size 1m --classes relevance    # the same, as a row of the speed harness

Every needle of :mod:`bench.needles` (or, with ``--needles b``, ``c`` or ``d``, of the held-out
:mod:`bench.needles_b`, :mod:`bench.needles_c` or :mod:`bench.needles_d`; hand-written conversations:
one session, a compression chain or a gateway chat) is planted at its age (1-360 days before the
store's newest message) into a copy of a generated corpus, cached beside it and keyed by the
needle set's digest, so the shared corpus is never written. For each of a needle's four queries
(:data:`KINDS`) the bench finds the rank at which the needle's conversation appears among the
conversations shown:

* ``browser`` -- the browser's own search: :meth:`hermes_tui.data.BrowserData.search` with the
  browser's defaults (internal sources left out, hidden sessions too, the last word a prefix),
  its hits grouped by conversation as the pane groups them, further pages asked for as the pane
  asks while the reader scrolls (``SearchView.merged``), ranked in the order the pane shows
  conversations: those of the "Sessions by title or id" rows first (up to 8, first page only),
  then those of the hit groups not listed already (:func:`pane_conversations`). The JSON keeps
  beside it the rank among the hit groups alone (``hits_rank``, the tables' "browser, hit
  groups only" column): what this bench counted before 2026-11-29, which left the title rows
  out -- a needle shown at the top by its title could count 7th, and unrelated conversations
  titled with a common word of the query, shown above every hit, did not count;
* ``bm25`` -- exact message-level bm25 over every match: FTS5 ``ORDER BY rank`` on the same
  index the browser's search would use (unicode61 for plain words, the last a prefix; trigram
  for a query with CJK, a 1-2 character CJK word as the OR of the trigrams it starts), the same
  filters, grouped by conversation (:func:`hermes_state.conversation.conversation_roots`) at
  each conversation's first hit;
* ``newest`` -- the same matches newest first.

A rank past ``--max-rank`` conversations counts as not found. The tables give success@1/5/10
(share of queries whose conversation is within the first 1, 5, 10 conversations) and MRR
(mean of 1/rank, 0 when not found) per kind, per age bucket and per language.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sqlite3
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from hermes_state import SessionDB
from hermes_state.conversation import conversation_roots
from hermes_state.inert_text import inert_line
from hermes_state.listing import ListQuery
from hermes_state.listing.pages import hidden_sources
from hermes_state.models import ranks_again_when_paused
from hermes_state.query import PREFIX_MIN_CHARS
from hermes_state.search import FTS_TABLE, TRIGRAM_TABLE, filter_sql, trigram_vocab, where_clause

from .needle_model import AGE_BUCKETS, KIND_TITLES, KINDS, GATEWAY_SOURCES, Needle, age_bucket, is_cjk, set_digest

#: The methods compared, in the order of the tables.
METHODS = ("browser", "bm25", "newest")
#: The columns of the tables: the methods, and beside the browser's rank (the pane's order,
#: title matches first) its rank among the hit groups alone, as the bench counted before
#: 2026-11-29 -- to compare, not a method of its own.
COLUMNS = ("browser", "browser_hits", "bm25", "newest")
METHOD_TITLES = {"browser": "browser search", "browser_hits": "browser, hit groups only",
                 "bm25": "exact bm25 (messages)", "newest": "newest first"}
#: Conversations looked through before a needle counts as not found.
MAX_RANK = 100
#: The needle sets ``--needles`` chooses from: ``a`` the first set; ``b``, ``c`` and ``d`` held
#: out, written apart from the ranking (``b`` in a person's everyday words, ``c`` in the generated
#: corpus's own vocabulary, so its common words compete, ``d`` half of each at the full size of
#: 40). Each plants into its own copy: the copy is named by the set's digest.
NEEDLE_SETS = ("a", "b", "c", "d")
#: The ks of success@k.
KS = (1, 5, 10)
_MODEL = "anthropic/claude-sonnet-4"


# ------------------------------------------------------------------------------ planting


@dataclass(frozen=True)
class Planted:
    key: str
    sessions: tuple[str, ...]  # the needle's sessions, root first

    @property
    def root(self) -> str:
        return self.sessions[0]


def _session_id(n: Needle, part: int, start: float) -> str:
    stamp = datetime.fromtimestamp(start, tz=timezone.utc).strftime("%Y%m%d_%H%M%S")
    width = 6 if n.source in ("cli", "tui") else 8
    return f"{stamp}_{hashlib.sha1(f'{n.key}:{part}'.encode()).hexdigest()[:width]}"


def plan_sessions(n: Needle, now: float) -> list[dict[str, Any]]:
    """The sessions of a needle with their times: ``[{id, title, start, end, messages:
    [(Msg, timestamp)], parent, end_reason}]``. Deterministic in ``(needle, now)``."""
    seed = int(hashlib.sha1(n.key.encode()).hexdigest()[:8], 16)
    start = now - n.age_days * 86400 + (seed % 36000) - 18000  # within ±5 h of the age
    step = 35 + seed % 50  # seconds between messages
    parts = [list(n.messages)] if n.split is None else [list(n.messages[:n.split]), list(n.messages[n.split:])]
    sessions: list[dict[str, Any]] = []
    t = start
    for i, msgs in enumerate(parts):
        sid = _session_id(n, i, t)
        timed = []
        for m in msgs:
            t += step
            timed.append((m, t))
        last = len(parts) - 1
        sessions.append({
            "id": sid,
            "title": n.title if i == 0 or not n.title else f"{n.title} #{i + 1}",
            "start": timed[0][1] - 5,
            "end": t + 20,
            "messages": timed,
            "parent": sessions[-1]["id"] if sessions else None,
            "end_reason": "compression" if i < last else "user_exit",
        })
        t += 30  # the continuation starts right after the compression
    return sessions


def plant(path: Path, needles: Iterable[Needle], now: float) -> dict[str, Planted]:
    """Write ``needles`` into the store at ``path`` through :class:`SessionDB`'s own writes
    (the FTS triggers index them as in production); times are set afterwards, as a session's
    start and end are the clock's in those calls."""
    db = SessionDB(path)
    planted: dict[str, Planted] = {}
    try:
        last_activity = db.capabilities.has_last_activity_at
        for n in needles:
            sessions = plan_sessions(n, now)
            for s in sessions:
                user = f"user-{n.source}-{n.key}" if n.source in GATEWAY_SOURCES else None
                db.create_session(s["id"], n.source, model=_MODEL, user_id=user, parent_session_id=s["parent"])
                for m, ts in s["messages"]:
                    db.append_message(s["id"], m.role, m.content, tool_name=m.tool_name,
                                      tool_calls=list(m.tool_calls) if m.tool_calls else None,
                                      tool_call_id=m.tool_call_id, timestamp=ts)
                db.end_session(s["id"], s["end_reason"])
                if s["title"]:  # an untitled needle stays untitled, continuation too
                    db.set_session_title(s["id"], s["title"])

                def times(conn: sqlite3.Connection, s=s) -> None:
                    conn.execute("UPDATE sessions SET started_at = ?, ended_at = ? WHERE id = ?",
                                 (s["start"], s["end"], s["id"]))
                    if last_activity:
                        conn.execute("UPDATE sessions SET last_activity_at = ? WHERE id = ?",
                                     (s["messages"][-1][1], s["id"]))

                db.store.write(times)
            planted[n.key] = Planted(n.key, tuple(s["id"] for s in sessions))
        db.store.checkpoint("TRUNCATE")
    finally:
        db.close()
    return planted


def planted_ids(needles: Iterable[Needle], now: float) -> dict[str, Planted]:
    """What :func:`plant` writes, without writing: the ids are a function of the needle."""
    return {n.key: Planted(n.key, tuple(s["id"] for s in plan_sessions(n, now))) for n in needles}


def store_now(base: Path) -> float:
    """The instant needles' ages count back from: the store's newest message (a generated
    corpus ends just before its ``now``; a real store at its last activity)."""
    conn = sqlite3.connect(f"file:{base}?mode=ro", uri=True)
    try:
        newest = conn.execute("SELECT MAX(timestamp) FROM messages").fetchone()[0]
    finally:
        conn.close()
    return float(newest) if newest is not None else time.time()


def planted_copy(base: Path, needles: list[Needle], now: float, *, quiet: bool = False) -> Path:
    """A copy of the corpus at ``base`` with ``needles`` planted, cached beside it as
    ``<base>-needles-<digest>-<now>.db`` (built under a temporary name and renamed when
    complete; ``base`` is only read)."""
    target = base.with_name(f"{base.stem}-needles-{set_digest(needles)}-{int(now)}.db")
    if target.exists():
        return target
    building = target.with_name(target.name + ".building")
    for p in (building, Path(f"{building}-wal"), Path(f"{building}-shm")):
        if p.exists():
            p.unlink()
    if not quiet:
        print(f"Planting {len(needles)} needles into a copy of {base.name} ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    src = sqlite3.connect(f"file:{base}?mode=ro", uri=True)
    dst = sqlite3.connect(building)
    try:
        src.backup(dst)  # a consistent copy, whatever the source's WAL holds
        dst.execute("PRAGMA journal_mode=WAL")
    finally:
        dst.close()
        src.close()
    plant(building, needles, now)
    os.replace(building, target)
    for suffix in ("-wal", "-shm"):
        leftover = Path(f"{building}{suffix}")
        if leftover.exists():
            leftover.unlink()
    if not quiet:
        print(f"  planted in {time.perf_counter() - t0:.0f} s: {target}", file=sys.stderr, flush=True)
    return target


# ------------------------------------------------------------------------------ ranks


def _rank_in(order: Iterable[str], root: str, max_rank: int) -> int | None:
    for i, conversation in enumerate(order, 1):
        if i > max_rank:
            return None
        if conversation == root:
            return i
    return None


def pane_conversations(view: Any) -> list[tuple[str, str, Any]]:
    """The conversations the search pane shows for ``view``, top to bottom, each once:
    ``(root, row, shown)`` with ``row`` ``"title"`` (a row of "Sessions by title or id",
    ``shown`` its session summary) or ``"hits"`` (``shown`` its hit group). The pane
    (``SearchResults._build_rows``) lists the title/id matches above the hits; a title match
    names its conversation as the pane's Esc does (``title_roots``: a segment of a compression
    chain is the chain's conversation), and a conversation already listed by its title is not
    counted again where its hits follow."""
    seen: set[str] = set()
    order: list[tuple[str, str, Any]] = []
    for summary in view.title_matches:
        root = view.title_roots.get(summary.id) or summary.lineage_root_id or summary.id
        if root not in seen:
            seen.add(root)
            order.append((root, "title", summary))
    for group in view.groups:
        if group.root_id not in seen:
            seen.add(group.root_id)
            order.append((group.root_id, "hits", group))
    return order


def _above(view: Any, row: str, shown: Any) -> dict[str, Any]:
    """One conversation the reader saw above the needle, as the JSON and the misses list it."""
    if row == "hits":
        return {"row": "hits", "label": shown.label, "source": shown.source, "hits": shown.count,
                "across": shown.across}
    # A title row: its hits, if its conversation has any on the pages read, are shown further
    # down (counted here, so "a title match with 40 hits" and "a title only" can be told apart).
    root = view.title_roots.get(shown.id) or shown.lineage_root_id or shown.id
    hits = next((g.count for g in view.groups if g.root_id == root), 0)
    return {"row": "title", "label": shown.label, "source": shown.source, "id": shown.id, "hits": hits,
            "across": 0}


def browser_rank(store: Any, query: str, root: str, max_rank: int = MAX_RANK,
                 exact_after_pause: bool = True) -> dict[str, Any]:
    """The rank of ``root`` among the conversations the browser's search pane shows for
    ``query`` once the person stops typing, paging as the pane pages; with the first page's
    time and how it was served. An answer the keystroke ranked over its window of newest
    matches is ranked again over every match after a pause (``exact_after_s`` in the
    config): that is the answer read, unless ``exact_after_pause`` is off.

    ``rank`` is the pane's order (:func:`pane_conversations`): the conversations of the title/id
    matches first (up to 8, of the first page only, as the pane asks for them), then those of
    the hit groups not listed already. ``hits_rank`` is the rank among the hit groups alone
    (the bench's rank before 2026-11-29), kept to compare: a needle found by its title is
    shown at the top whatever its hits' rank, and unrelated conversations whose titles hold a
    common word of the query are shown above every hit."""
    from hermes_tui.screens.browser_search import SEARCH_PAGE

    exclude = hidden_sources(None)
    store.forget_search_answers()  # typed as if for the first time
    t0 = time.perf_counter()
    view = store.search(query, ListQuery.from_options(exclude_sources=exclude), limit=SEARCH_PAGE)
    first_ms = (time.perf_counter() - t0) * 1000
    info = {"ms": round(first_ms, 2), "path": view.path, "ranking": view.ranking}
    sort = "auto"
    if ranks_again_when_paused(view.ranking) and exact_after_pause:
        # The person stopped typing to look: the pane ranks the query again over every match
        # (SearchAsYouType._rank_exactly), and that answer is the one read -- its title
        # matches too (search_hold.ranked_anew takes the ranked answer's).
        sort = "rank"
        t0 = time.perf_counter()
        view = store.search(query, ListQuery.from_options(exclude_sources=exclude), limit=SEARCH_PAGE, sort=sort)
        info["exact_ms"] = round((time.perf_counter() - t0) * 1000, 2)
        info["ranking"] = f"{info['ranking']}, then {view.ranking}"
    more = view.more and view.hit_count >= SEARCH_PAGE
    # Paged until the needle is among the hit groups (for hits_rank) or max_rank groups are
    # read. That is enough for the pane's rank too: a conversation not listed by its title is
    # never higher in the pane than among the groups (the title rows only push it down).
    while more and len(view.groups) < max_rank and all(g.root_id != root for g in view.groups):
        page = store.search(query, ListQuery.from_options(exclude_sources=exclude), limit=SEARCH_PAGE,
                            offset=view.next_offset, sort=sort)
        if page.hit_count == 0:
            break
        # (merged keeps the first page's title matches: later pages ask for none, as the pane's)
        view = view.merged(page)
        more = page.more
    pane = pane_conversations(view)
    info["rank"] = _rank_in((conversation for conversation, _, _ in pane), root, max_rank)
    info["hits_rank"] = _rank_in((g.root_id for g in view.groups), root, max_rank)
    # The needle among "Sessions by title or id" (by its conversation: a chain's continuation
    # titled "… #2" counts), and how many conversations those rows put above every hit.
    info["title_match"] = any(conversation == root for conversation, row, _ in pane if row == "title")
    info["title_rows"] = sum(1 for _, row, _ in pane if row == "title")
    info["shown"] = len(pane)
    info["hits_shown"] = len(view.groups)
    if info["rank"] != 1:
        # What the reader saw instead, first, in the pane's order: the conversations above the
        # needle (up to 3), title rows marked as such.
        before = pane[:min(3, (info["rank"] or 4) - 1)]
        info["above"] = [_above(view, row, shown) for _, row, shown in before]
    return info


def reference_match(conn: sqlite3.Connection, query: str) -> tuple[str, str] | None:
    """``(table, MATCH)`` of the message-level reference for ``query`` (None: a word that no
    index can match). Plain words go to the unicode61 index, the last a prefix as the browser
    types it; a query with CJK goes to the trigram index, a 1-2 character CJK word as the OR
    of the trigrams it starts (the indexed text always goes on after it, see
    :mod:`hermes_state.search`)."""
    words = query.split()
    if not any(is_cjk(w) for w in words):
        parts = ['"' + w.replace('"', '""') + '"' for w in words]
        if len(words[-1]) >= PREFIX_MIN_CHARS:
            parts[-1] += "*"
        return FTS_TABLE, " AND ".join(parts)
    parts = []
    for w in words:
        if len(w) >= 3:
            parts.append('"' + w.replace('"', '""') + '"')
            continue
        vocab = trigram_vocab(conn)
        grams = [r[0] for r in conn.execute(
            f"SELECT term FROM {vocab} WHERE term >= ? AND term < ?", (w.lower(), w.lower() + "\U0010ffff"))]
        if not grams:
            return None
        parts.append("(" + " OR ".join('"' + g.replace('"', '""') + '"' for g in grams) + ")")
    return TRIGRAM_TABLE, " AND ".join(parts)


def reference_ranks(db: SessionDB, query: str, root: str, max_rank: int = MAX_RANK) -> dict[str, Any]:
    """Ranks of ``root`` by exact message-level bm25 and newest first, over every match of
    ``query`` the browser's search could show (same findability, hidden and source rules)."""
    rules = db.store.rules
    clauses, params = filter_sql(None, hidden_sources(None), None, findable=rules.findable("m"),
                                 shown=rules.not_hidden("s"))

    def run(conn: sqlite3.Connection) -> dict[str, Any]:
        ref = reference_match(conn, query)
        if ref is None:
            return {"bm25": None, "newest": None, "matches": 0, "bm25_ms": 0.0}
        table, match = ref
        out: dict[str, Any] = {}
        for method, order in (("bm25", f"{table}.rank"), ("newest", "m.timestamp DESC, m.id DESC")):
            sql = (f"SELECT m.session_id FROM {table} JOIN messages m ON m.id = {table}.rowid "
                   f"JOIN sessions s ON s.id = m.session_id WHERE {table} MATCH ?{where_clause(clauses)} "
                   f"ORDER BY {order}")
            t0 = time.perf_counter()
            sessions = [r[0] for r in conn.execute(sql, [match, *params])]
            out[f"{method}_ms"] = round((time.perf_counter() - t0) * 1000, 1)
            out["matches"] = len(sessions)
            out[method] = _rank_in(_conversations(db, sessions, max_rank), root, max_rank)
        return out

    return db.store.read(run)


def _conversations(db: SessionDB, sessions: list[str], max_rank: int, chunk: int = 2000) -> Iterable[str]:
    """The conversations of ``sessions`` (in order) at their first occurrence, mapped lazily:
    a rank past ``max_rank`` needs no more roots."""
    seen: set[str] = set()
    roots: dict[str, str] = {}
    for start in range(0, len(sessions), chunk):
        part = sessions[start:start + chunk]
        missing = [s for s in dict.fromkeys(part) if s not in roots]
        if missing:
            roots.update(conversation_roots(db.store, missing))
        for sid in part:
            conversation = roots.get(sid, sid)
            if conversation not in seen:
                seen.add(conversation)
                yield conversation
                if len(seen) > max_rank:
                    return


# ------------------------------------------------------------------------------ the run


@dataclass
class Outcome:
    key: str
    lang: str
    kind: str
    age_days: int
    shape: str
    query: str
    ranks: dict[str, int | None]
    browser: dict[str, Any] = field(default_factory=dict)
    reference: dict[str, Any] = field(default_factory=dict)


def measure(store: Any, db: SessionDB, needles: list[Needle], planted: dict[str, Planted], *,
            kinds: Iterable[str] = KINDS, max_rank: int = MAX_RANK, progress: bool = False) -> list[Outcome]:
    """Every query of every needle, by every method."""
    kinds = list(kinds)
    roots = conversation_roots(db.store, [sid for p in planted.values() for sid in p.sessions])
    outcomes: list[Outcome] = []
    for i, n in enumerate(needles, 1):
        p = planted[n.key]
        if any(roots.get(sid) != p.root for sid in p.sessions):
            raise RuntimeError(f"needle {n.key}: its sessions {p.sessions} are not one conversation "
                               f"({ {sid: roots.get(sid) for sid in p.sessions} })")
        if progress:
            print(f"  [{i}/{len(needles)}] {n.key}", file=sys.stderr, flush=True)
        for kind in kinds:
            query = n.queries[kind]
            browser = browser_rank(store, query, p.root, max_rank)
            reference = reference_ranks(db, query, p.root, max_rank)
            ranks = {"browser": browser["rank"], "browser_hits": browser["hits_rank"],
                     "bm25": reference["bm25"], "newest": reference["newest"]}
            outcomes.append(Outcome(n.key, n.lang, kind, n.age_days, n.shape, query, ranks, browser, reference))
    return outcomes


def scores(ranks: list[int | None]) -> dict[str, float]:
    """success@k for each k of :data:`KS` and MRR over ``ranks`` (None: not found)."""
    count = len(ranks) or 1
    out = {f"s@{k}": sum(1 for r in ranks if r is not None and r <= k) / count for k in KS}
    out["mrr"] = sum(1 / r for r in ranks if r is not None) / count
    return out


def _lang_group(lang: str) -> str:
    return "English" if lang == "en" else "CJK"


#: The groupings of the tables: title → function of an outcome giving its row label.
GROUPINGS: dict[str, Any] = {
    "kind": lambda o: o.kind,
    "kind × language": lambda o: f"{o.kind} · {_lang_group(o.lang)}",
    "age": lambda o: age_bucket(o.age_days),
    "language": lambda o: o.lang,
    "shape": lambda o: o.shape,
}


def summarize(outcomes: list[Outcome]) -> dict[str, dict[str, dict[str, Any]]]:
    """``{grouping: {row: {"n": count, method: scores}}}``, plus an ``all`` row."""
    orders = {
        "kind": list(KINDS),
        "kind × language": [f"{k} · {g}" for k in KINDS for g in ("English", "CJK")],
        "age": [label for _, label in AGE_BUCKETS],
        "language": ["en", "zh", "ja", "ko"],
        "shape": ["single", "gateway", "compression"],
    }
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for title, label_of in GROUPINGS.items():
        rows: dict[str, list[Outcome]] = {}
        for o in outcomes:
            rows.setdefault(label_of(o), []).append(o)
        table: dict[str, dict[str, Any]] = {}
        for label in orders[title] + sorted(set(rows) - set(orders[title])):
            if label in rows:
                table[label] = {"n": len(rows[label]),
                                **{m: scores([o.ranks[m] for o in rows[label]]) for m in COLUMNS}}
        table["all"] = {"n": len(outcomes), **{m: scores([o.ranks[m] for o in outcomes]) for m in COLUMNS}}
        out[title] = table
    return out


def _cell(s: dict[str, float]) -> str:
    return " / ".join(f"{s[f's@{k}']:.2f}" for k in KS) + f" · {s['mrr']:.2f}"


def format_tables(summary: dict[str, dict[str, dict[str, Any]]]) -> str:
    lines = []
    for title, table in summary.items():
        lines.append(f"By {title} (s@1 / s@5 / s@10 · MRR):")
        lines.append("")
        lines.append(f"| {title} | n | " + " | ".join(METHOD_TITLES[m] for m in COLUMNS) + " |")
        lines.append("|---|---:|" + "---|" * len(COLUMNS))
        for label, row in table.items():
            name = KIND_TITLES.get(label, label) if title == "kind" else label
            lines.append(f"| {name} | {row['n']} | " + " | ".join(_cell(row[m]) for m in COLUMNS) + " |")
        lines.append("")
    return "\n".join(lines)


def format_misses(outcomes: list[Outcome], method: str = "browser", limit: int = 40) -> str:
    """The queries ``method`` ranks worst (not found, or past 10), with the other methods'
    ranks beside them: where to look first."""
    bad = [o for o in outcomes if o.ranks[method] is None or o.ranks[method] > 10]
    # Misses every method shares (the spread kind before conversation-level search) last.
    bad.sort(key=lambda o: all(o.ranks[m] is None for m in METHODS))
    if not bad:
        return f"{METHOD_TITLES[method]}: every query within the first 10 conversations."
    lines = [f"{METHOD_TITLES[method]} past rank 10 or not found ({len(bad)} queries; "
             "ranks: browser / bm25 / newest, - = not found within the cap; in brackets the "
             "browser's rank among its hit groups alone):"]
    for o in bad[:limit]:
        r = " / ".join("-" if o.ranks[m] is None else str(o.ranks[m]) for m in METHODS)
        hits = o.ranks.get("browser_hits")
        r += f" [{'-' if hits is None else hits}]"
        served = f"{o.browser.get('path')}/{o.browser.get('ranking')}" if o.browser.get("path") else "no answer"
        lines.append(f"  {o.kind:7} {o.lang} {o.age_days:>3} d  {o.query!r:40}  {r}  ({served})")
        for g in o.browser.get("above", []) if method == "browser" else []:
            # Titles are stored text: made inert before they reach a terminal.
            across = f", across {g['across']} messages" if g.get("across") else ""
            row = "by title or id, " if g.get("row") == "title" else ""
            lines.append(f"      above it: {inert_line(g['label'])!r} ({row}{g['source']}, {g['hits']} hits{across})")
    if len(bad) > limit:
        lines.append(f"  … {len(bad) - limit} more")
    return "\n".join(lines)


def latency_by_kind(outcomes: list[Outcome]) -> dict[str, list[float]]:
    """The browser search's first-page milliseconds, per kind."""
    out: dict[str, list[float]] = {k: [] for k in KINDS}
    for o in outcomes:
        if "ms" in o.browser:
            out[o.kind].append(o.browser["ms"])
    return {k: v for k, v in out.items() if v}


def run(base: Path, *, now: float, needles: list[Needle] | None = None, kinds: Iterable[str] = KINDS,
        max_rank: int = MAX_RANK, quiet: bool = False) -> tuple[Path, list[Outcome]]:
    """Plant (or reuse) and measure: ``(planted store, outcomes)``."""
    from hermes_tui.data import BrowserData

    from .needles import NEEDLES

    needles = NEEDLES if needles is None else needles
    path = planted_copy(base, needles, now, quiet=quiet)
    planted = planted_ids(needles, now)
    store = BrowserData(path)
    db = SessionDB(path, read_only=True)
    try:
        outcomes = measure(store, db, needles, planted, kinds=kinds, max_rank=max_rank, progress=not quiet)
    finally:
        db.close()
        store.close()
    return path, outcomes


def needle_set(name: str) -> list[Needle]:
    """The needles of set ``name`` (:data:`NEEDLE_SETS`), imported only when asked for."""
    if name == "b":
        from .needles_b import NEEDLES_B

        return NEEDLES_B
    if name == "c":
        from .needles_c import NEEDLES_C

        return NEEDLES_C
    if name == "d":
        from .needles_d import NEEDLES_D

        return NEEDLES_D
    from .needles import NEEDLES

    return NEEDLES


def report(base: Path, path: Path, outcomes: list[Outcome], *, command: str) -> dict[str, Any]:
    from .run import _git_state, _loadavg

    return {
        "command": command,
        "now": store_now(base),
        "base": str(base),
        "planted": str(path),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "git": _git_state(),
        "loadavg": _loadavg(),
        "max_rank": MAX_RANK,
        "summary": summarize(outcomes),
        "outcomes": [asdict(o) for o in outcomes],
    }


def main(argv: list[str] | None = None) -> int:
    from .run import RESULTS_DIR, corpus_path, ensure_corpus, parse_size

    parser = argparse.ArgumentParser(prog="python -m bench.relevance", description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="1m", help="corpus size: 10k, 100k, 1m, 5m or a number (default 1m)")
    parser.add_argument("--seed", type=int, default=0, help="corpus seed (default 0)")
    parser.add_argument("--schema", type=int, choices=(16, 30), default=16, help="corpus layout (default 16)")
    parser.add_argument("--db", type=Path, help="plant into a copy of this store instead of the cached corpus")
    parser.add_argument("--needles", choices=NEEDLE_SETS, default="a",
                        help="needle set: a, the first (bench/needles.py); b, c or d, held out "
                             "(bench/needles_b.py, bench/needles_c.py, bench/needles_d.py) (default a)")
    parser.add_argument("--kinds", help=f"comma-separated kinds to measure (default all: {','.join(KINDS)})")
    parser.add_argument("--max-rank", type=int, default=MAX_RANK,
                        help=f"conversations looked through before a needle counts as not found (default {MAX_RANK})")
    parser.add_argument("--json", type=Path, help="where the JSON goes (default bench/results/relevance-<size>.json)")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = parser.parse_args(argv)
    try:
        label, messages = parse_size(args.size)
    except argparse.ArgumentTypeError as exc:
        parser.error(str(exc))
    kinds = [k.strip() for k in (args.kinds or ",".join(KINDS)).split(",") if k.strip()]
    unknown = set(kinds) - set(KINDS)
    if unknown:
        parser.error(f"unknown kind: {', '.join(sorted(unknown))}")
    if args.max_rank < 10:
        parser.error("--max-rank must be at least 10")
    base = args.db if args.db is not None else corpus_path(label, args.seed, args.schema)
    try:
        if args.db is None:
            ensure_corpus(base, messages, args.seed, quiet=args.quiet, schema=args.schema)
        elif not base.exists():
            print(f"Error: no store at {base}", file=sys.stderr)
            return 2
        path, outcomes = run(base, now=store_now(base), needles=needle_set(args.needles), kinds=kinds,
                             max_rank=args.max_rank, quiet=args.quiet)
    except (OSError, sqlite3.Error) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    command = "python -m bench.relevance " + " ".join(sys.argv[1:] if argv is None else argv)
    data = report(base, path, outcomes, command=command)
    layout = "" if args.schema == 16 else f"-schema{args.schema}"
    which = "" if args.needles == "a" else f"-needles-{args.needles}"
    out = args.json if args.json is not None else RESULTS_DIR / f"relevance-{label}{layout}{which}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2, ensure_ascii=False))
    print(f"Relevance: {len(outcomes)} queries, {base.name} + needles; {command}\n")
    print(format_tables(data["summary"]))
    print(format_misses(outcomes))
    lat = latency_by_kind(outcomes)
    if lat:
        from .run import percentile

        print("\nbrowser search, first page, ms p50 / p95 (one call per query, not warmed): " + ", ".join(
            f"{k} {percentile(v, 0.5):.1f} / {percentile(v, 0.95):.1f}" for k, v in lat.items()))
    print(f"\nJSON: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
