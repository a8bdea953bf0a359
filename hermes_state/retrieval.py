"""Cross-session retrieval (SPEC §15, XR-1 … XR-9) and grouping of hits by conversation.

"What did we do about X before?" is answered with conversations, not lines: message hits are
grouped under their lineage root (compression continuations, branches and delegates belong to
the conversation they came from), the current conversation is left out, and each kept
conversation is condensed — by a pluggable ``summarize`` callable if one is given, else as a
raw preview. Nothing here reaches the network: the default summariser is ``None``.

Public API:

* :func:`lineage_roots` — roots of many sessions in one recursive query (XR-2, loop-safe).
* :func:`group_hits_by_conversation` — :class:`SearchHit` list → :class:`ConversationHit` list,
  for the browser's grouped results.
* :func:`search_conversations` — XR-1 … XR-8 (search mode).
* :func:`recent_conversations` — XR-9 (recent mode); :func:`recall` picks the mode.
* Building blocks: :func:`format_transcript` (XR-5), :func:`truncate_around_matches` (XR-6),
  :func:`raw_preview` (XR-7), :func:`format_when` (XR-8), :func:`clamp_limit` (XR-4).

Every function takes a :class:`~hermes_state.store.Store` or an object holding one (a
``SessionDB``: :data:`~hermes_state.store.StoreLike`).
"""

from __future__ import annotations

import bisect
import logging
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, Callable, Iterable, Optional, Sequence

from .lineage import ancestors, descendants
from .listing.engine import lister_of
from .listing.query import ListQuery
from .messages_read import get_messages_as_conversation
from .models import (
    ConversationHit,
    RecallResult,
    RecalledConversation,
    RecentConversation,
    SearchHit,
)
from .sessions import get_session
from .sql_ids import in_chunks
from .store import Store, StoreLike, store_of

log = logging.getLogger(__name__)

#: ``summarize(transcript, query, session_meta) -> str | None`` (XR-7).
Summarizer = Callable[[str, str, dict], Optional[str]]

MAX_CHARS = 100_000
CANDIDATE_LIMIT = 50
NO_MATCHES = "No matching sessions found."
RAW_PREVIEW_HEADER = "[Raw preview — summarization unavailable]\n"
EARLIER_CUT = "...[earlier conversation truncated]...\n\n"
LATER_CUT = "\n\n...[later conversation truncated]..."
_MAX_DEPTH = 100

_ROOTS_SQL = """
WITH RECURSIVE up(start, id, parent, depth, seen) AS (
  SELECT s.id, s.id, s.parent_session_id, 0, char(31) || s.id || char(31)
  FROM sessions s WHERE s.id IN ({marks})
  UNION ALL
  SELECT up.start, p.id, p.parent_session_id, up.depth + 1, up.seen || p.id || char(31)
  FROM up JOIN sessions p ON p.id = up.parent
  WHERE up.depth < {max_depth} AND instr(up.seen, char(31) || p.id || char(31)) = 0
)
SELECT start, id, depth FROM up
"""


# ---------------------------------------------------------------------------- lineage (XR-2)


def lineage_roots(store: StoreLike, session_ids: Iterable[str]) -> dict[str, str]:
    """``{session_id: root_id}`` for every given id, one recursive query per 500 ids.

    XR-2: follow ``parent_session_id`` upward until a session has no parent or its parent
    row is missing; stop on a repeated id (loop guard) and use the last id reached. An id with
    no session row is its own root.
    """
    wanted = list(dict.fromkeys(sid for sid in session_ids if sid is not None))
    roots: dict[str, str] = {sid: sid for sid in wanted}
    best_depth: dict[str, int] = {}

    def run(conn) -> None:
        for chunk, marks in in_chunks(wanted):
            sql = _ROOTS_SQL.format(marks=marks, max_depth=_MAX_DEPTH)
            for origin, node, depth in conn.execute(sql, chunk):
                if depth >= best_depth.get(origin, -1):
                    best_depth[origin] = depth
                    roots[origin] = node

    if wanted:
        store_of(store).read(run)
    return roots


def current_lineage(store: StoreLike, session_id: str) -> set[str]:
    """XR-3: the current session's ancestors (LI-10) ∪ descendants (LI-11)."""
    return store_of(store).read(lambda conn: set(ancestors(conn, session_id)) | set(descendants(conn, session_id)))


# ---------------------------------------------------------------------------- grouping


def group_hits_by_conversation(
    store: StoreLike, hits: Sequence[SearchHit], roots: dict[str, str] | None = None
) -> list[ConversationHit]:
    """Group search hits by lineage root, keeping the hits' order.

    Groups come in the order of their best (first) hit, so a ranked hit list stays ranked
    (and a next page of hits only appends); each group carries its hit count, best hit,
    hits and distinct sessions. The roots of all hit sessions are found with one query
    (:func:`lineage_roots`) unless ``roots`` already maps every hit's session.
    """
    if roots is None or any(hit.session_id not in roots for hit in hits):
        roots = lineage_roots(store, (hit.session_id for hit in hits))
    groups: dict[str, dict[str, Any]] = {}
    for hit in hits:
        root = roots.get(hit.session_id, hit.session_id)
        group = groups.setdefault(root, {"hits": [], "sessions": []})
        group["hits"].append(hit)
        if hit.session_id not in group["sessions"]:
            group["sessions"].append(hit.session_id)
    return [
        ConversationHit(
            root_id=root,
            hit_count=len(group["hits"]),
            best_hit=group["hits"][0],
            hits=group["hits"],
            session_ids=group["sessions"],
        )
        for root, group in groups.items()
    ]


# ---------------------------------------------------------------------------- formatting


def clamp_limit(value: Any, default: int = 3) -> int:
    """XR-4: N defaults to 3, is clamped to 1–5; non-integer input gives 3."""
    if isinstance(value, bool) or not isinstance(value, int):
        return default
    return max(1, min(5, value))


def _call_names(tool_calls: Any) -> list[str]:
    if isinstance(tool_calls, dict):
        tool_calls = [tool_calls]
    names = []
    for call in tool_calls if isinstance(tool_calls, list) else []:
        name = None
        if isinstance(call, dict):
            name = call.get("name")
            function = call.get("function")
            if not name and isinstance(function, dict):
                name = function.get("name")
        names.append(str(name) if name else "?")
    return names


def format_transcript(messages: Sequence[dict]) -> str:
    """XR-5: a conversation as ``[ROLE]: content`` blocks separated by a blank line."""
    blocks: list[str] = []
    for msg in messages:
        role = msg.get("role") or "unknown"
        content = msg.get("content")
        content = content if isinstance(content, str) else ("" if content is None else str(content))
        if role == "tool":
            if len(content) > 500:
                content = content[:250] + "\n...[truncated]...\n" + content[-250:]
            blocks.append(f"[TOOL:{msg.get('tool_name') or 'unknown'}]: {content}")
        elif role == "assistant" and msg.get("tool_calls"):
            blocks.append(f"[ASSISTANT]: [Called: {', '.join(_call_names(msg.get('tool_calls')))}]")
            if content:
                blocks.append(f"[ASSISTANT]: {content}")
        else:
            blocks.append(f"[{str(role).upper()}]: {content}")
    return "\n\n".join(blocks)


def _occurrences(text: str, needle: str) -> list[int]:
    positions = []
    if not needle:
        return positions
    start = text.find(needle)
    while start >= 0:
        positions.append(start)
        start = text.find(needle, start + 1)
    return positions


def truncate_around_matches(text: str, query: str, max_chars: int = MAX_CHARS) -> str:
    """XR-6: keep the ``max_chars`` window of ``text`` densest in matches of ``query``."""
    if len(text) <= max_chars:
        return text
    lower = text.lower()
    needle = (query or "").lower().strip()
    positions = _occurrences(lower, needle)
    terms = needle.split()
    if not positions and len(terms) > 1:
        rarest = min(terms, key=lambda term: lower.count(term))
        others = [term for term in terms if term != rarest]
        for p in _occurrences(lower, rarest):
            around = lower[max(0, p - 200) : p + len(rarest) + 200]
            if all(term in around for term in others):
                positions.append(p)
    if not positions:
        for term in terms:
            positions.extend(_occurrences(lower, term))
    if not positions:
        return text[:max_chars] + LATER_CUT
    positions.sort()
    best_start, best_count = 0, -1
    for p in positions:
        start = max(0, p - max_chars // 4)
        if start + max_chars > len(text):
            start = max(0, len(text) - max_chars)
        count = bisect.bisect_left(positions, start + max_chars) - bisect.bisect_left(positions, start)
        if count > best_count:
            best_start, best_count = start, count
    end = best_start + max_chars
    window = text[best_start:end]
    if best_start > 0:
        window = EARLIER_CUT + window
    if end < len(text):
        window = window + LATER_CUT
    return window


def raw_preview(transcript: str) -> str:
    """XR-7: what a conversation shows without a summary."""
    return RAW_PREVIEW_HEADER + transcript[:500] + "\n…[truncated]"


def format_when(started_at: Any) -> str:
    """XR-8: ``March 05, 2025 at 09:15 AM`` in local time, ``unknown`` when missing."""
    if started_at is None:
        return "unknown"
    try:
        return datetime.fromtimestamp(float(started_at)).strftime("%B %d, %Y at %I:%M %p")
    except (TypeError, ValueError, OverflowError, OSError):
        return "unknown"


# ---------------------------------------------------------------------------- search mode


def search_conversations(
    store: StoreLike,
    query: str,
    *,
    current_session_id: str | None = None,
    limit: Any = 3,
    role_filter: Sequence[str] | None = None,
    summarize: Summarizer | None = None,
    max_concurrency: int = 3,
    max_chars: int = MAX_CHARS,
) -> RecallResult:
    """XR-1 … XR-8: past conversations matching ``query``, condensed.

    ``sessions_searched`` counts the distinct conversations (lineage roots) among the
    candidate hits after the current lineage was excluded. ``summarize`` runs on at most
    ``max_concurrency`` (1–5) threads; without it, or when it returns nothing or raises, the
    conversation carries the raw preview of XR-7.
    """
    store = store_of(store)
    n = clamp_limit(limit)
    hits = _candidates(store, query, role_filter)
    roots = lineage_roots(store, (hit["session_id"] for hit in hits))
    if current_session_id:
        excluded = current_lineage(store, current_session_id)
        current_root = lineage_roots(store, [current_session_id])[current_session_id]
        hits = [
            hit
            for hit in hits
            if hit["session_id"] not in excluded and roots.get(hit["session_id"]) != current_root
        ]
    groups: dict[str, dict[str, int]] = {}
    for position, hit in enumerate(hits):
        root = roots.get(hit["session_id"], hit["session_id"])
        group = groups.setdefault(root, {"count": 0, "first": position})
        group["count"] += 1
    if not groups:
        return RecallResult(query=query or "", message=NO_MATCHES)
    ordered = sorted(groups.items(), key=lambda item: (-item[1]["count"], item[1]["first"]))[:n]

    prepared: list[tuple[str, int, dict, str]] = []
    for root, group in ordered:
        messages = get_messages_as_conversation(store, root)
        if not messages:
            continue
        meta = get_session(store, root) or {"id": root}
        transcript = truncate_around_matches(format_transcript(messages), query or "", max_chars)
        prepared.append((root, group["count"], meta, transcript))

    summaries = _summarize_all(prepared, query or "", summarize, max_concurrency)
    results = []
    for (root, count, meta, transcript), summary in zip(prepared, summaries):
        results.append(
            RecalledConversation(
                session_id=root,
                when=format_when(meta.get("started_at")),
                source=meta.get("source"),
                model=meta.get("model"),
                title=meta.get("title"),
                summary=summary if summary else raw_preview(transcript),
                hit_count=count,
                raw_preview=not summary,
            )
        )
    if not results:
        return RecallResult(query=query or "", sessions_searched=len(groups), message=NO_MATCHES)
    return RecallResult(
        query=query or "", results=results, count=len(results), sessions_searched=len(groups)
    )


def _candidates(store: Store, query: str, role_filter: Sequence[str] | None) -> list[dict]:
    """XR-1: the message hits a recall groups -- upstream's ``search_messages`` (tool
    sessions left out, at most :data:`CANDIDATE_LIMIT`); none without FTS5, as upstream."""
    if not store.fts_enabled:
        return []
    from .search import search_messages

    return store.one_schema(lambda: search_messages(
        store, query, role_filter=list(role_filter) if role_filter else None,
        exclude_sources=["tool"], limit=CANDIDATE_LIMIT,
    ))


def _summarize_all(
    prepared: list[tuple[str, int, dict, str]],
    query: str,
    summarize: Summarizer | None,
    max_concurrency: int,
) -> list[str | None]:
    if summarize is None or not prepared:
        return [None] * len(prepared)

    def one(item: tuple[str, int, dict, str]) -> str | None:
        _root, _count, meta, transcript = item
        try:
            text = summarize(transcript, query, dict(meta))
        except Exception as exc:  # a summariser failure degrades to the raw preview
            log.warning("summariser failed for %s: %s", meta.get("id"), exc)
            return None
        return text if isinstance(text, str) and text.strip() else None

    try:
        workers = max(1, min(5, int(max_concurrency)))
    except (TypeError, ValueError):
        workers = 3
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="recall-summary") as pool:
        return list(pool.map(one, prepared))


# ---------------------------------------------------------------------------- recent mode


def recent_conversations(
    store: StoreLike, *, limit: Any = 3, current_session_id: str | None = None
) -> list[RecentConversation]:
    """XR-9: the latest conversations, without the current one; no summariser involved."""
    store = store_of(store)
    n = clamp_limit(limit)
    skip: set[str] = set()
    if current_session_id:
        skip = {current_session_id, lineage_roots(store, [current_session_id])[current_session_id]}
    # Upstream's list (``list_sessions_rich(limit=n + 5, exclude_sources=["tool"])``).
    rows = lister_of(store).rows(ListQuery.from_options(None, ["tool"]), n + 5)
    out: list[RecentConversation] = []
    for row in rows:
        if row["id"] in skip or row.get("_lineage_root_id") in skip or row.get("parent_session_id"):
            continue
        out.append(
            RecentConversation(
                session_id=row["id"],
                title=row.get("title"),
                source=row.get("source"),
                started_at=row.get("started_at"),
                last_active=row.get("last_active"),
                message_count=row.get("message_count") or 0,
                preview=row.get("preview") or "",
            )
        )
        if len(out) == n:
            break
    return out


def recall(
    store: StoreLike,
    query: str | None,
    *,
    current_session_id: str | None = None,
    limit: Any = 3,
    role_filter: Sequence[str] | None = None,
    summarize: Summarizer | None = None,
    max_concurrency: int = 3,
) -> RecallResult | list[RecentConversation]:
    """Search mode for a non-empty query (XR-1 … XR-8), recent mode otherwise (XR-9)."""
    if not query or not str(query).strip():
        return recent_conversations(store, limit=limit, current_session_id=current_session_id)
    return search_conversations(
        store,
        query,
        current_session_id=current_session_id,
        limit=limit,
        role_filter=role_filter,
        summarize=summarize,
        max_concurrency=max_concurrency,
    )
