"""What is part of a conversation (SPEC UC-3), as SQL every reader shares.

Stores of every upstream version are read by capability (UC-1): a :class:`Rules` is made from
what the store has and hands out the SQL fragments each reader uses, so a rule is written
once and means the same in the list, the preview, search, the recap, the transcript, the
lineage tree, export and stats.

* A message is **visible** unless it was rewound (``active = 0``); a compacted row
  (``compacted = 1``, v30) is compaction history: visible (and found) although not active.
* A visible message is **findable** and may be a preview or a recap line unless it is
  scaffolding (``display_kind = 'hidden'``).
* A session is **listed on its own** when it is a root, an orphan (its parent row is gone), a
  branch (``_branched_from``, or started after a parent that ended ``branched``) or a reset
  child (``_reset_from``, or the same non-empty ``session_key`` as a parent that ended with a
  reset reason); never when it is a delegate run (``_delegate_from`` or source ``subagent``).
* Last activity is the newest of ``last_activity_at`` (only when it lies in 2000–2100) and the
  newest visible message (LI-4; a stamp past 2100 -- milliseconds written as seconds -- is
  ignored); else the start.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, TypeVar

try:
    from .sql_ids import in_chunks
except ImportError:  # in an export worker, modules are imported by file name (sql_ids says why)
    from sql_ids import in_chunks  # type: ignore[no-redef]

if TYPE_CHECKING:  # pragma: no cover
    import sqlite3

    from .store import Store

#: Sources of internal runs, hidden from the human list unless asked for by name (UC-3).
INTERNAL_SOURCES: tuple[str, ...] = ("tool", "kanban", "oneshot")
#: End reasons after which a child with the same ``session_key`` is a reset child (UC-3).
RESET_REASONS: tuple[str, ...] = (
    "session_reset", "session_switch", "idle", "daily", "suspended", "resume_pending_expired",
)
#: ``title_source`` values of titles nobody chose (UC-3).
AUTOMATIC_TITLE_SOURCES: tuple[str, ...] = ("derived", "llm", "branch", "branch_fallback")
#: Plausible timestamps: 2000-01-01 … 2100-01-01 (UTC). Anything else is ignored for activity.
EPOCH_2000 = 946684800.0
EPOCH_2100 = 4102444800.0
#: Compaction summaries written into a continuation's first user message.
_SUMMARY_PREFIXES = ("[CONTEXT COMPACTION]", "[Context compacted]")


F = TypeVar("F", bound=Callable[..., str])


def _kept(method: F) -> F:
    """A :class:`Rules` SQL fragment built once per rules and arguments: rules never change,
    and a list reads the same fragments on every page (building them again was ~4 % of the
    first page's instructions)."""
    name = method.__name__

    @functools.wraps(method)
    def kept(self: "Rules", *args: Any, **kwargs: Any) -> str:
        key = (name, args, tuple(kwargs.items())) if kwargs else (name, args)
        try:
            return self._fragments[key]
        except KeyError:
            value = self._fragments[key] = method(self, *args, **kwargs)
            return value

    return kept  # type: ignore[return-value]


def marker_sql(alias: str, key: str) -> str:
    """A ``model_config`` marker of session alias ``alias`` (NULL when absent or not JSON)."""
    config = f"{alias}.model_config"
    return f"json_extract(CASE WHEN json_valid({config}) THEN {config} END, '$.{key}')"


def text_prefix_sql(head: str, width: int) -> str:
    """The first ``width`` characters of ``head`` -- the first ``4 * width`` bytes of a text
    as a blob, enough for ``width`` characters however wide -- as text, a NUL shown as ``␀``.

    SQLite's ``substr()`` of text stops at a NUL (it walks the text as a C string): a first
    message with a NUL in its first words previewed only what came before it. A head holding
    a NUL goes through JSON instead, which reads a value by its length: ``json_quote()``
    writes the NUL as ``\\u0000``; that escape becomes ``\\u2400`` (escaped backslashes are
    set aside first, as a control character ``json_quote()`` never leaves raw, so the text
    ``\\u0000`` itself is kept); ``json_extract()`` reads the text back. The query reads
    ``head`` once (a subquery column): naming a column twice reads a large value twice.
    """
    json_path = (
        "json_extract(replace(replace(replace(json_quote(CAST({h} AS TEXT)), '\\\\', char(1)), "
        "'\\u0000', '\\u2400'), char(1), '\\\\'), '$')"
    ).format(h=head)
    return (
        f"CASE WHEN instr({head}, X'00') THEN substr({json_path}, 1, {width}) "
        f"ELSE substr(CAST({head} AS TEXT), 1, {width}) END"
    )


def continuation_sql(p: str, c: str) -> str:
    """``c`` continues ``p`` after a compression: ``p`` ended ``compression``, ``c`` started
    at or after that, and ``c`` is not a branch, a reset child or a delegate run (UC-3: the
    tip walk follows only compression continuations)."""
    return (
        f"({p}.end_reason = 'compression' AND {c}.started_at >= {p}.ended_at"
        f" AND {marker_sql(c, '_branched_from')} IS NULL AND {marker_sql(c, '_reset_from')} IS NULL"
        f" AND {marker_sql(c, '_delegate_from')} IS NULL AND {c}.source != 'subagent')"
    )


def _quoted(values: tuple[str, ...]) -> str:
    return ",".join("'" + v.replace("'", "''") + "'" for v in values)


#: The workspace filter value that selects sessions with no known workspace (BR-13).
NO_WORKSPACE = ""


@dataclass(frozen=True)
class Rules:
    """The UC-3 rules for one store, by what its schema has."""

    compacted: bool = False
    display_kind: bool = False
    last_activity_at: bool = False
    archived: bool = False
    hidden: bool = False
    pinned: bool = False
    session_key: bool = False
    system_prompts: bool = False
    cwd: bool = False
    git_repo_root: bool = False
    #: The fragments built so far (see :func:`_kept`); not part of what the rules are.
    _fragments: dict = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)

    @classmethod
    def of(cls, store: "Store") -> "Rules":
        caps = store.capabilities
        return cls(
            compacted=store.has_message_column("compacted"),
            display_kind=store.has_message_column("display_kind"),
            last_activity_at=store.has_session_column("last_activity_at"),
            archived=store.has_session_column("archived"),
            hidden=store.has_session_column("hidden"),
            pinned=store.has_session_column("pinned"),
            session_key=store.has_session_column("session_key"),
            system_prompts=caps.has_table("system_prompts") and store.has_session_column("system_prompt_hash"),
            cwd=store.has_session_column("cwd"),
            git_repo_root=store.has_session_column("git_repo_root"),
        )

    # ------------------------------------------------------------------ messages

    @_kept
    def visible(self, m: str = "m") -> str:
        """Shown, counted and exported: not rewound (compacted history stays)."""
        if self.compacted:
            return f"({m}.active = 1 OR {m}.compacted = 1)"
        return f"{m}.active = 1"

    @_kept
    def findable(self, m: str = "m") -> str:
        """A search hit, a preview or a recap line: visible and not scaffolding."""
        if self.display_kind:
            return f"{self.visible(m)} AND ({m}.display_kind IS NULL OR {m}.display_kind != 'hidden')"
        return self.visible(m)

    @_kept
    def preview_sql(self, s: str = "s", width: int = 63) -> str:
        """The first ``width`` characters of the first findable user message that is not a
        bare compaction summary (LI-3, UC-3)."""
        summaries = " ".join(
            f"AND substr(m.content, 1, {len(p)}) != '{p}'" for p in _SUMMARY_PREFIXES
        )
        compacted = " AND m.compacted = 0" if self.compacted else ""
        head = f"substr(CAST(m.content AS BLOB), 1, {4 * width})"
        return (
            f"(SELECT {text_prefix_sql('head', width)} FROM (SELECT {head} AS head FROM messages m "
            f"WHERE m.session_id = {s}.id AND m.role = 'user' AND m.content IS NOT NULL AND "
            f"{self.findable()}{compacted} {summaries} ORDER BY m.timestamp, m.id LIMIT 1))"
        )

    @_kept
    def newest_message_sql(self, s: str = "s") -> str:
        return (
            f"(SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = {s}.id AND {self.visible()} "
            f"AND m.timestamp < {EPOCH_2100})"
        )

    @_kept
    def last_active_sql(self, s: str = "s") -> str:
        newest = self.newest_message_sql(s)
        if self.last_activity_at:
            stamp = (
                f"(CASE WHEN {s}.last_activity_at BETWEEN {EPOCH_2000} AND {EPOCH_2100} "
                f"THEN {s}.last_activity_at END)"
            )
            return f"COALESCE(NULLIF(MAX(COALESCE({stamp}, 0), COALESCE({newest}, 0)), 0), {s}.started_at)"
        return f"COALESCE({newest}, {s}.started_at)"

    @_kept
    def visible_count_sql(self, s: str = "s") -> str:
        return f"(SELECT COUNT(*) FROM messages m WHERE m.session_id = {s}.id AND {self.visible()})"

    # ------------------------------------------------------------------ sessions

    @_kept
    def delegate(self, s: str = "s") -> str:
        """A delegate (sub-agent) run: never listed on its own."""
        return f"({s}.source = 'subagent' OR {marker_sql(s, '_delegate_from')} IS NOT NULL)"

    @_kept
    def reset_child(self, s: str = "s") -> str:
        clauses = [f"{marker_sql(s, '_reset_from')} IS NOT NULL"]
        if self.session_key:
            clauses.append(
                f"(COALESCE({s}.session_key, '') != '' AND EXISTS (SELECT 1 FROM sessions rp "
                f"WHERE rp.id = {s}.parent_session_id AND rp.session_key = {s}.session_key "
                f"AND rp.end_reason IN ({_quoted(RESET_REASONS)})))"
            )
        return "(" + " OR ".join(clauses) + ")"

    @_kept
    def branch_child(self, s: str = "s") -> str:
        return (
            f"({marker_sql(s, '_branched_from')} IS NOT NULL OR EXISTS (SELECT 1 FROM sessions bp "
            f"WHERE bp.id = {s}.parent_session_id AND bp.end_reason = 'branched' "
            f"AND {s}.started_at >= bp.ended_at))"
        )

    @_kept
    def listed(self, s: str = "s") -> str:
        """Listed on its own (not folded into a parent): roots, orphans, branches, resets;
        never a delegate run."""
        return (
            f"(({s}.parent_session_id IS NULL"
            f" OR NOT EXISTS (SELECT 1 FROM sessions lp WHERE lp.id = {s}.parent_session_id)"
            f" OR {self.branch_child(s)} OR {self.reset_child(s)})"
            f" AND NOT {self.delegate(s)})"
        )

    @_kept
    def not_archived(self, s: str = "s") -> str:
        return f"COALESCE({s}.archived, 0) = 0" if self.archived else "1"

    @_kept
    def not_hidden(self, s: str = "s") -> str:
        return f"COALESCE({s}.hidden, 0) = 0" if self.hidden else "1"

    @_kept
    def pinned_first(self, s: str = "s") -> str:
        """An ORDER BY term putting pinned sessions first (nothing without the column)."""
        rank = self.pinned_rank(s)
        return f"{rank} DESC, " if rank is not None else ""

    @_kept
    def pinned_rank(self, s: str = "s") -> str | None:
        """What :meth:`pinned_first` orders by (higher first); None without the column. A
        flag, as ``archived`` and ``hidden`` are read: any value but 0 (or NULL) pins."""
        return f"(COALESCE({s}.pinned, 0) != 0)" if self.pinned else None

    @_kept
    def workspace_sql(self, s: str = "s") -> str | None:
        """A session's workspace (BR-13): its git repository when known, else its working
        directory; None on stores that record neither (before upstream v16)."""
        parts = []
        if self.git_repo_root:
            parts.append(f"NULLIF({s}.git_repo_root, '')")
        if self.cwd:
            parts.append(f"NULLIF({s}.cwd, '')")
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else f"COALESCE({', '.join(parts)})"

    def workspace_clause(self, workspace: str | None, s: str = "s") -> tuple[str | None, list[str]]:
        """The filter to one workspace: ``None`` none, ``NO_WORKSPACE`` sessions without one."""
        if workspace is None:
            return None, []
        expr = self.workspace_sql(s)
        if expr is None:
            return ("1" if workspace == NO_WORKSPACE else "0"), []
        if workspace == NO_WORKSPACE:
            return f"{expr} IS NULL", []
        return f"{expr} = ?", [workspace]

    @_kept
    def system_prompt_sql(self, s: str = "s") -> str:
        if self.system_prompts:
            # Upstream's order: the prompt kept by hash, else the column (hermes_state.prompts).
            return (
                f"COALESCE((SELECT sp.prompt FROM system_prompts sp "
                f"WHERE sp.hash = {s}.system_prompt_hash), {s}.system_prompt)"
            )
        return f"{s}.system_prompt"


def is_compaction_summary(text: str | None) -> bool:
    return bool(text) and any(text.startswith(p) for p in _SUMMARY_PREFIXES)


def rewound_counts(conn: "sqlite3.Connection", rules: Rules, session_ids: list[str]) -> dict[str, int]:
    """How many rewound messages (never shown, counted nor exported) each session holds, for
    a store with the ``active`` flag; sessions without any are left out. One statement per
    500 ids; the ``(session_id, active)`` index of every store with the flag finds only the
    rewound rows."""
    found: dict[str, int] = {}
    compacted = " AND COALESCE(m.compacted, 0) = 0" if rules.compacted else ""
    cursor = conn.cursor()
    cursor.row_factory = None
    for chunk, marks in in_chunks(session_ids):
        found.update(cursor.execute(
            f"SELECT m.session_id, COUNT(*) FROM messages m WHERE m.session_id IN ({marks})"
            f" AND m.active = 0{compacted} GROUP BY m.session_id",
            chunk,
        ).fetchall())
    return found


def count_shown_messages(conn: "sqlite3.Connection", rules: Rules, rows: list[dict], rewinds: bool) -> list[dict]:
    """Each row's ``message_count`` less its rewound messages, so every count a person reads
    (the list, the detail pane, lineage) is what the transcript shows. ``rewinds``: the
    store has the ``active`` flag at all."""
    if not rewinds or not rows:
        return rows
    rewound = rewound_counts(conn, rules, [row["id"] for row in rows])
    if rewound:
        for row in rows:
            gone = rewound.get(row["id"])
            if gone:
                row["message_count"] = max(0, int(row.get("message_count") or 0) - gone)
    return rows
