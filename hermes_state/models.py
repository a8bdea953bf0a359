"""Typed read models for the UI (beside the upstream-compatible dict API).

The dict API returns rows exactly as upstream does; these pydantic models are what the browser
reads. They carry data only -- no rendering -- and are cheap to build from a row.
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Any, Callable, Iterable, Optional, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

from .lenient_text import BLOB_TYPES, lenient_text
from .unread import is_unread

M = TypeVar("M", bound=BaseModel)


def from_store(cls: type[M], data: dict) -> M:
    """``cls`` validated from values read from the store, tolerating values of the wrong type.

    SQLite does not enforce a column's type: a store written by hand or by another tool may
    hold text where a number belongs or a blob where text does. Such a value must not hide the
    row it is in (nor the list the row is in): each field that refuses its value gets it made
    into the field's type (:func:`_coerced`) -- text from anything, a number from text that
    reads as one, else the field's default."""
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        return cls.model_validate(_mended(cls, data, exc))


#: One list validator per model, made at its first use (made at import, they cost start-up
#: time the first page does not need).
_LIST_VALIDATORS: dict[type, TypeAdapter] = {}


def list_from_store(cls: type[M], fields: list[dict], mendable: "Callable[[dict], dict] | None" = None) -> list[M]:
    """``fields`` validated as one list of ``cls`` (a page of rows in half the time of one
    validation each); when a row needs mending, every row made by :func:`from_store` from
    ``mendable(row)`` (the row itself without it)."""
    validator = _LIST_VALIDATORS.get(cls)
    if validator is None:
        validator = _LIST_VALIDATORS[cls] = TypeAdapter(list[cls])  # type: ignore[valid-type]
    try:
        return validator.validate_python(fields)
    except ValidationError:
        return [from_store(cls, mendable(one) if mendable else one) for one in fields]


def _mended(cls: type[BaseModel], data: dict, exc: ValidationError) -> dict:
    fixed = dict(data)
    for error in exc.errors():
        name = error["loc"][0] if error["loc"] else None
        field = cls.model_fields.get(name) if isinstance(name, str) else None
        if field is None:
            raise exc
        fixed[name] = _coerced(field, fixed.get(name))
    return fixed


def _coerced(field: FieldInfo, value: Any) -> Any:
    """``value`` as ``field`` can take it: see :func:`from_store`."""
    kinds = get_args(field.annotation) or (field.annotation,)
    if isinstance(value, BLOB_TYPES):
        value = lenient_text(value) if str in kinds else bytes(value)
    if str in kinds:
        return str(value)
    if bool in kinds:
        return bool(value)
    for kind in (float, int):
        if kind in kinds:
            try:
                number = float(value)
                if number != number or number in (float("inf"), float("-inf")):
                    raise ValueError(value)
                return int(number) if kind is int else number
            except (TypeError, ValueError, OverflowError):
                if field.is_required():
                    return kind(0)
                break
    return field.get_default(call_default_factory=True)


class EdgeKind(str, Enum):
    """How a child session relates to its parent (LI-1)."""

    COMPRESSION = "compression"
    BRANCH = "branch"
    DELEGATE = "delegate"
    RESET = "reset"
    OTHER = "other"


EDGE_LABELS = {
    EdgeKind.COMPRESSION: "continued after compression",
    EdgeKind.BRANCH: "branch",
    EdgeKind.DELEGATE: "delegate (subagent)",
    EdgeKind.RESET: "new lane after a reset",
    EdgeKind.OTHER: "child",
}


class SessionSummary(BaseModel):
    """One row of the session list: a conversation as upstream lists it.

    For a compression chain the row describes the live tip (``id``, title, counters, preview,
    ``last_active``) while ``started_at``, ``source`` and token totals stay the root's;
    ``lineage_root_id`` then names the root (LI-5).
    """

    model_config = ConfigDict(frozen=True)

    id: str
    source: str
    title: Optional[str] = None
    preview: str = ""
    started_at: float
    ended_at: Optional[float] = None
    end_reason: Optional[str] = None
    last_active: Optional[float] = None
    message_count: int = 0
    tool_call_count: int = 0
    model: Optional[str] = None
    user_id: Optional[str] = None
    parent_session_id: Optional[str] = None
    lineage_root_id: Optional[str] = None
    input_tokens: int = 0
    output_tokens: int = 0
    estimated_cost_usd: Optional[float] = None
    #: UC-3 flags (False on stores without the columns).
    archived: bool = False
    pinned: bool = False
    hidden: bool = False
    #: A delegate (sub-agent) run, listed only when asked for (BR-15).
    delegate: bool = False
    #: ``title_source`` (UC-3): ``derived``/``llm``/``branch``/``branch_fallback`` mark a title
    #: nobody chose; ``user`` or None a chosen one.
    title_source: Optional[str] = None
    #: The workspace (UC-3, BR-13), when known.
    cwd: Optional[str] = None
    git_branch: Optional[str] = None
    git_repo_root: Optional[str] = None
    #: v30: the platform the session started on (``source`` is where it is routed now).
    created_source: Optional[str] = None

    @property
    def shown_source(self) -> str:
        """``source``, or ``created→current`` where the session moved platforms (v30)."""
        return shown_source(self.source, self.created_source)
    #: Upstream's read watermark (``last_read_at``, v30; None where never read or not kept):
    #: the conversation's root's, as upstream's list reads it (see :mod:`hermes_state.unread`).
    last_read_at: Optional[float] = None
    #: How the conversation's tip ended (:mod:`hermes_state.lifecycle`: ``complete``,
    #: ``interrupted``, ``error``, ``empty``); None where not read.
    lifecycle: Optional[str] = None
    #: The Hermes profile the row is of, set only while rows of several profiles are shown
    #: together (PF-5): a store on its own never sets it.
    profile: Optional[str] = None

    @classmethod
    def from_row(cls, row: dict) -> "SessionSummary":
        """The summary of a listing row; a value of the wrong type is mended (:func:`from_store`)."""
        return from_store(cls, _summary_fields(row))

    @classmethod
    def from_rows(cls, rows: "Iterable[dict]") -> "list[SessionSummary]":
        """:meth:`from_row` of each row, validated as one list (a page of 50 in a third of
        the time of 50 separate validations; row by row only when one needs mending)."""
        return list_from_store(SessionSummary, [_summary_fields(row) for row in rows])

    @classmethod
    def from_listing(cls, rows: "list[dict]") -> "list[SessionSummary]":
        """:meth:`from_rows` of rows read with the store's summary columns
        (``SessionDB._summary_columns``), which already read NULL as the field's default and
        the flags as 0 or 1: the rows are validated as they are (the lineage root and the
        delegate mark under their field names), without a dict of fields made for each in
        Python (a tenth of a page of 50). A row that needs mending is mended as
        :meth:`from_row` mends it. The rows are changed in place."""
        for row in rows:
            if "_lineage_root_id" in row:
                row["lineage_root_id"] = row["_lineage_root_id"]
            if "_delegate" in row:
                row["delegate"] = row["_delegate"]
        return list_from_store(SessionSummary, rows, _summary_fields)

    @property
    def title_is_automatic(self) -> bool:
        return self.title_source in ("derived", "llm", "branch", "branch_fallback")

    @property
    def label(self) -> str:
        """What a list shows first: the title, else the preview, else the id (BR-1)."""
        return self.title or self.preview or self.id

    @property
    def is_live(self) -> bool:
        return self.ended_at is None

    @property
    def unread(self) -> bool:
        """Activity after the read watermark (upstream's rule; a NULL watermark is read)."""
        return is_unread(self.last_read_at, self.last_active, self.started_at)

    @property
    def status(self) -> str:
        """``live``, or ``ended`` with its reason (``ended: compression``)."""
        if self.ended_at is None:
            return "live"
        return f"ended: {self.end_reason}" if self.end_reason else "ended"


def _summary_fields(row: dict) -> dict:
    """A :class:`SessionSummary`'s fields from a listing row (None where the store holds NULL
    becomes the field's default)."""
    get = row.get
    return {
        "id": row["id"],
        "source": get("source") or "",
        "title": get("title"),
        "preview": get("preview") or "",
        "started_at": get("started_at") or 0.0,
        "ended_at": get("ended_at"),
        "end_reason": get("end_reason"),
        "last_active": get("last_active"),
        "message_count": get("message_count") or 0,
        "tool_call_count": get("tool_call_count") or 0,
        "model": get("model"),
        "user_id": get("user_id"),
        "parent_session_id": get("parent_session_id"),
        "lineage_root_id": get("_lineage_root_id"),
        "input_tokens": get("input_tokens") or 0,
        "output_tokens": get("output_tokens") or 0,
        "estimated_cost_usd": get("estimated_cost_usd"),
        "archived": bool(get("archived")),
        "pinned": bool(get("pinned")),
        "hidden": bool(get("hidden")),
        "delegate": bool(get("_delegate")),
        "title_source": get("title_source"),
        "cwd": get("cwd"),
        "git_branch": get("git_branch"),
        "git_repo_root": get("git_repo_root"),
        "created_source": get("created_source"),
        "last_read_at": get("last_read_at"),
        "lifecycle": get("lifecycle"),
    }


def shown_source(source: str | None, created_source: str | None) -> str:
    """A session's source as lists show it: ``created→current`` when a v30 session started on
    another platform than the one it is routed to now (``created_source`` differs), else the
    source alone."""
    source = source or ""
    if created_source and created_source != source:
        return f"{created_source}\u2192{source}"
    return source


class Message(BaseModel):
    """One stored message with ``tool_calls`` decoded (other JSON columns stay strings)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    id: int
    session_id: str
    role: str
    content: Optional[str] = None
    tool_call_id: Optional[str] = None
    tool_calls: Any = None
    tool_name: Optional[str] = None
    timestamp: float
    token_count: Optional[int] = None
    finish_reason: Optional[str] = None
    reasoning: Optional[str] = None
    reasoning_content: Optional[str] = None
    reasoning_details: Optional[str] = None
    codex_reasoning_items: Optional[str] = None
    codex_message_items: Optional[str] = None
    #: UC-3: compaction history (v30: ``compacted = 1``), shown in a transcript as such.
    compacted: bool = False
    #: UC-3: ``'hidden'`` marks scaffolding (never a preview, a hit or a recap line).
    display_kind: Optional[str] = None

    @property
    def tool_call_list(self) -> list[dict]:
        """The tool calls as a list of dicts, whatever shape was stored (one call, JSON text)."""
        calls = self.tool_calls
        if not calls:
            return []
        if isinstance(calls, str):
            try:
                calls = json.loads(calls)
            except ValueError:
                return []
        if isinstance(calls, dict):
            calls = [calls]
        return [call for call in calls if isinstance(call, dict)] if isinstance(calls, list) else []

    @property
    def tool_call_names(self) -> list[str]:
        """Names of the called tools, in order (``unknown`` for a call without one)."""
        return [tool_call_name(call) for call in self.tool_call_list]


def tool_call_name(call: dict) -> str:
    """A call's function name (OpenAI shape), else its top-level ``name``, else ``unknown``."""
    fn = call.get("function")
    name = (fn.get("name") if isinstance(fn, dict) else None) or call.get("name")
    return name if isinstance(name, str) and name else "unknown"


class LineageNode(BaseModel):
    """A session in a lineage tree (LI-13), with the kind of edge from its parent."""

    model_config = ConfigDict(defer_build=True)

    id: str
    title: Optional[str] = None
    source: str = ""
    parent_session_id: Optional[str] = None
    started_at: Optional[float] = None
    ended_at: Optional[float] = None
    end_reason: Optional[str] = None
    message_count: int = 0
    last_active: Optional[float] = None
    #: Kind of the edge from the parent; None for the root.
    edge: Optional[EdgeKind] = None
    #: The live end of a compression chain (where a resume continues).
    is_live_tip: bool = False
    #: The session the tree was opened from.
    is_current: bool = False
    #: The parent id names a session that no longer exists.
    broken_parent: bool = False
    #: The parent chain loops back on itself (a damaged database).
    cycle: bool = False
    children: list["LineageNode"] = Field(default_factory=list)

    @property
    def edge_label(self) -> str:
        return EDGE_LABELS[self.edge] if self.edge is not None else "root"

    def walk(self):
        """Depth-first iteration over this node and its descendants (pre-order). With a stack,
        not recursion: a compression chain of 10,000 segments is a tree 10,000 deep, past
        Python's recursion limit."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def find(self, session_id: str) -> Optional["LineageNode"]:
        for node in self.walk():
            if node.id == session_id:
                return node
        return None


# ---------------------------------------------------------------------------------------------
# Search (SessionDB.search, hermes_state.search) and cross-session retrieval (XR-*).


class SearchHit(BaseModel):
    """One matching message of :meth:`SessionDB.search`, ready to draw.

    ``snippet`` is plain text (no markers; newlines and tabs shown as spaces) and ``spans``
    are ``(start, end)`` character offsets into it of the matched parts, so a UI styles
    ``snippet[start:end]`` without parsing anything. ``raw_snippet`` is the same text with
    upstream's ``>>>``/``<<<`` markers around each span.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    id: int
    session_id: str
    role: str
    timestamp: float
    tool_name: Optional[str] = None
    source: str = ""
    model: Optional[str] = None
    session_started: Optional[float] = None
    session_title: Optional[str] = None
    snippet: str = ""
    spans: list[tuple[int, int]] = Field(default_factory=list)
    raw_snippet: str = ""
    #: Relevance, higher is better (negated FTS5 rank, or the window bm25); None when the
    #: hit was ranked by recency only.
    score: Optional[float] = None
    #: The table that produced this hit: ``fts5``, ``trigram`` or ``like``.
    path: str = "fts5"
    #: The conversation the hit is part of (its root: the row the list shows it in), when
    #: the answer was made by conversation (:mod:`hermes_state.search.conversations`).
    conversation_id: Optional[str] = None
    #: 0 for a message holding every word; else how many messages of its conversation
    #: together hold them (a conversation found across messages, SR-17).
    across: int = 0


#: The ranking of an answer ranked by bm25 over the newest matches only (a keystroke's
#: window, for speed); asked again with ``sort="rank"`` it is ranked over every match.
WINDOW_RANKING = "bm25-recent-window"


#: The ranking of an answer ranked by conversation over every match
#: (:mod:`hermes_state.search.by_conversation`): what ``sort="rank"`` answers by conversation.
CONVERSATION_RANKING = "bm25-conversations"
#: ...of the newest ``CONVERSATION_RANKED_ROWS`` matches only, the older following newest
#: first (a word in more messages than that).
CONVERSATION_WINDOW_RANKING = "bm25-conversations-recent"


def ranks_again_when_paused(ranking: str | None) -> bool:
    """Whether an answer's ``ranking`` (one store's, or several joined by ``+``) is a
    keystroke's, to be asked again with ``sort="rank"`` (by conversation, the answer a
    script's ``SessionDB.search`` gets): some store ranked its newest matches only, ranked
    messages and grouped them (``bm25``), or gave its words' matches newest first. The one
    test of when to ask again (the browser once typing pauses, ``hermes-sessions search`` at
    once, the relevance bench)."""
    return any(part in (WINDOW_RANKING, "bm25", "newest") for part in (ranking or "").split("+"))


class SearchResult(BaseModel):
    """The answer of :meth:`SessionDB.search` (see :mod:`hermes_state.search`)."""

    model_config = ConfigDict(defer_build=True)

    query: str
    #: What actually ran: the FTS5 MATCH text, or a description of the LIKE terms.
    effective_query: str = ""
    #: ``fts5``, ``trigram``, ``like``, or a combination such as ``fts5+trigram``; empty
    #: when nothing was searched (blank query, nothing searchable).
    path: str = ""
    #: ``bm25`` (exact, every match ranked), ``bm25-recent-window`` (bm25 within the newest
    #: matches, older ones follow newest first), ``newest`` (by rowid, newest first),
    #: ``bm25-conversations`` (every match ranked by conversation), ``bm25-conversations-recent``
    #: (the newest ``CONVERSATION_RANKED_ROWS`` so, older ones follow newest first) or empty.
    ranking: str = ""
    sort: str = "auto"
    hits: list[SearchHit] = Field(default_factory=list)
    #: Estimated number of matching messages (exact when ``total_exact``); filters applied
    #: only when exact.
    total_estimate: int = 0
    total_exact: bool = False
    has_more: bool = False
    #: The page holds fewer hits than ``limit`` and yet ``has_more``: a keystroke's answer
    #: (``sort="auto"``) to a phrase of common words whose bounded walk found only these;
    #: the older matches come with the next page.
    short_page: bool = False
    limit: int = 20
    offset: int = 0
    elapsed_ms: float = 0.0
    #: A failure to run the query (never raised); hits are then empty.
    error: Optional[str] = None
    #: Something a user should know: nothing searchable, a scan stopped at its time budget…
    note: Optional[str] = None
    #: With ``prefix_last``: the words that answered when the last one, too short to be a
    #: prefix, matched nothing (``the`` for ``the se``; the note says so); else None.
    answered_query: Optional[str] = None
    #: How conversations were ordered (SR-18): ``relevance`` or ``newest``; empty for the
    #: message-level search alone.
    order: str = ""
    #: Conversations among the hits, and how many of them were found across messages.
    conversations: int = 0
    spread_conversations: int = 0


class ConversationHit(BaseModel):
    """Search hits of one conversation (lineage root), for grouped result lists."""

    model_config = ConfigDict(defer_build=True)

    root_id: str
    hit_count: int
    #: The first hit of the group in the order the hits were given (the best ranked one).
    best_hit: SearchHit
    hits: list[SearchHit] = Field(default_factory=list)
    #: Distinct sessions of the hits, in hit order.
    session_ids: list[str] = Field(default_factory=list)


class RecalledConversation(BaseModel):
    """XR-8: one past conversation found for a query."""

    model_config = ConfigDict(defer_build=True)

    session_id: str
    when: str = "unknown"
    source: Optional[str] = None
    model: Optional[str] = None
    title: Optional[str] = None
    summary: str = ""
    hit_count: int = 0
    #: True when ``summary`` is the raw preview of XR-7 (no summariser, or it failed).
    raw_preview: bool = True


class RecallResult(BaseModel):
    """XR-8: the answer of a conversation-level search."""

    model_config = ConfigDict(defer_build=True)

    query: str
    results: list[RecalledConversation] = Field(default_factory=list)
    count: int = 0
    sessions_searched: int = 0
    message: Optional[str] = None


class RecentConversation(BaseModel):
    """XR-9: one conversation of recent mode."""

    model_config = ConfigDict(defer_build=True)

    session_id: str
    title: Optional[str] = None
    source: Optional[str] = None
    started_at: Optional[float] = None
    last_active: Optional[float] = None
    message_count: int = 0
    preview: str = ""
