"""What a store has, read from its live schema (SPEC UC-1).

Upstream adds columns on every open without bumping ``schema_version``, and an upgraded store
carries its columns in a different order than a fresh one. So readers and writers ask a
:class:`Capabilities` -- built from ``PRAGMA table_info``, the FTS tables' DDL in
``sqlite_master`` and ``state_meta`` keys -- what a store has, never ``schema_version`` alone
and never a column position.

Use::

    caps = db.capabilities            # cached per SessionDB, re-detected on a schema change
    if caps.has_archived: ...
    if caps.has_session_column("title_source"): ...
    if caps.fts_layout == "external": ...   # v23+ external-content FTS over messages_fts_src
    caps.version_class                # "new" | "migrate" | "current" | "in_place" | "unknown"

Detection reads the ``main`` schema only, so the TEMP compatibility views of a read-only
open (see :func:`hermes_state.migrations.create_compat_views`) never hide what the file lacks.
The ``state_meta`` flags (``fts_stale`` ...) are as of detection; a schema change re-detects,
and :meth:`hermes_state.SessionDB.refresh_capabilities` forces it.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field

from .schema import MAX_KNOWN_VERSION, SCHEMA_VERSION

#: ``state_meta`` keys that describe the FTS layer (UC-4).
FTS_META_KEYS = (
    "fts_storage_version",
    "fts_optimize_available",
    "fts_stale",
    "fts_cjk_stale",
    "fts_rebuild_high_water",
    "fts_rebuild_progress",
)

_OPTION_RE = r"\b{name}\s*=\s*(?:'((?:[^']|'')*)'|\"((?:[^\"]|\"\")*)\"|([A-Za-z0-9_]+))"


def classify_version(version: int | None) -> str:
    """How a store of ``version`` is opened for writing (CO-2, UC-2, UC-5, UC-9).

    ``"new"``: no version row (a new store); ``"migrate"``: 1-15, brought to 16;
    ``"current"``: 16; ``"in_place"``: 17-30, written without any change of shape or version;
    ``"unknown"``: above 30, read-only.
    """
    if version is None:
        return "new"
    if version < SCHEMA_VERSION:
        return "migrate"
    if version == SCHEMA_VERSION:
        return "current"
    if version <= MAX_KNOWN_VERSION:
        return "in_place"
    return "unknown"


@dataclass(frozen=True)
class FtsTable:
    """One FTS5 table as its DDL declares it."""

    name: str
    columns: tuple[str, ...]
    #: ``content=`` table or view (``messages_fts_src`` …), None for an inline table.
    content: str | None
    tokenizer: str | None
    #: The tokenizer loads in this process (the table can be queried).
    loads: bool
    #: SQL over a ``messages`` row ``m`` giving exactly the text of the first column, when
    #: the DDL says what it is (``content='messages'``, upstream's ``messages_fts_src`` view,
    #: or a view listing ``messages`` columns such as ``messages_fts_trigram_src``); None
    #: otherwise (an inline table holds its own copy, whatever its triggers wrote: only the
    #: table itself can say).
    text_sql: str | None = None
    #: SQL giving the first column's text in a scan of the table (its rowid as
    #: ``<name>.rowid``) from an inline table's own copy, read as a plain row of its
    #: ``<name>_content`` shadow table (column ``c0``): what FTS5 reads for ``<name>.content``,
    #: without its per-row statement (~2 us a row). None when there is no such copy.
    stored_text_sql: str | None = None

    @property
    def inline(self) -> bool:
        return self.content is None


@dataclass(frozen=True)
class Capabilities:
    """What one store has. Frozen; build it with :func:`detect`."""

    schema_version: int | None
    #: ``PRAGMA schema_version`` (the schema cookie) when detected.
    schema_cookie: int
    tables: frozenset[str]
    session_columns: frozenset[str]
    message_columns: frozenset[str]
    fts: dict[str, FtsTable] = field(default_factory=dict, compare=False, hash=False)
    meta: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    # ----------------------------------------------------------------- columns and tables

    def has_session_column(self, name: str) -> bool:
        return name in self.session_columns

    def has_message_column(self, name: str) -> bool:
        return name in self.message_columns

    def has_table(self, name: str) -> bool:
        return name in self.tables

    @property
    def has_archived(self) -> bool:
        return "archived" in self.session_columns

    @property
    def archive_problem(self) -> str | None:
        """Why this store cannot archive (no ``sessions.archived`` column), or None (UC-5)."""
        if self.has_archived:
            return None
        return (
            f"this store (schema {self.schema_version}) has no archived column; archiving needs "
            "a store written by Hermes v16 or later"
        )

    @property
    def has_pinned(self) -> bool:
        return "pinned" in self.session_columns

    @property
    def has_hidden(self) -> bool:
        return "hidden" in self.session_columns

    @property
    def has_last_activity_at(self) -> bool:
        return "last_activity_at" in self.session_columns

    @property
    def has_title_source(self) -> bool:
        return "title_source" in self.session_columns

    @property
    def has_cwd(self) -> bool:
        return "cwd" in self.session_columns

    @property
    def has_git_branch(self) -> bool:
        return "git_branch" in self.session_columns

    @property
    def has_git_repo_root(self) -> bool:
        return "git_repo_root" in self.session_columns

    @property
    def has_system_prompt_hash(self) -> bool:
        return "system_prompt_hash" in self.session_columns

    @property
    def has_session_key(self) -> bool:
        return "session_key" in self.session_columns

    @property
    def has_rewind_count(self) -> bool:
        return "rewind_count" in self.session_columns

    @property
    def has_active(self) -> bool:
        return "active" in self.message_columns

    @property
    def has_display_kind(self) -> bool:
        return "display_kind" in self.message_columns

    @property
    def has_compacted(self) -> bool:
        return "compacted" in self.message_columns

    @property
    def has_platform_message_id(self) -> bool:
        return "platform_message_id" in self.message_columns

    @property
    def has_observed(self) -> bool:
        return "observed" in self.message_columns

    @property
    def has_system_prompts(self) -> bool:
        return "system_prompts" in self.tables

    @property
    def has_compression_locks(self) -> bool:
        return "compression_locks" in self.tables

    @property
    def has_turn_leases(self) -> bool:
        return "session_turn_leases" in self.tables

    @property
    def has_telegram_topics(self) -> bool:
        return "telegram_dm_topic_bindings" in self.tables

    # ----------------------------------------------------------------- FTS (UC-4, UC-7)

    @property
    def fts_layout(self) -> str:
        """``"inline"`` (v11-v22 and upgraded stores), ``"external"`` (born at v23+, or the
        pre-v11 external-content layout over ``messages``) or ``"none"``."""
        table = self.fts.get("messages_fts")
        if table is None:
            return "none"
        return "inline" if table.inline else "external"

    @property
    def has_trigram(self) -> bool:
        return "messages_fts_trigram" in self.fts

    @property
    def has_cjk_table(self) -> bool:
        return "messages_fts_cjk" in self.fts

    def fts_loads(self, name: str) -> bool:
        """The FTS table ``name`` exists and can be queried here (its tokenizer loads)."""
        table = self.fts.get(name)
        return bool(table and table.loads)

    @property
    def cjk_tokenizer_loads(self) -> bool:
        """The ``messages_fts_cjk`` table exists and its tokenizer loads here (UC-7)."""
        return self.fts_loads("messages_fts_cjk")

    @property
    def unloadable_fts(self) -> tuple[str, ...]:
        """FTS tables this process cannot query (a tokenizer from an extension)."""
        return tuple(name for name, table in self.fts.items() if not table.loads)

    @property
    def fts_storage_version(self) -> int | None:
        return _int_or_none(self.meta.get("fts_storage_version"))

    @property
    def fts_optimize_available(self) -> bool:
        return self.meta.get("fts_optimize_available") == "1"

    @property
    def fts_stale(self) -> bool:
        return _truthy(self.meta.get("fts_stale"))

    @property
    def fts_cjk_stale(self) -> bool:
        return _truthy(self.meta.get("fts_cjk_stale"))

    @property
    def fts_rebuild_high_water(self) -> int | None:
        return _int_or_none(self.meta.get("fts_rebuild_high_water"))

    @property
    def fts_rebuild_in_progress(self) -> bool:
        return (
            self.meta.get("fts_rebuild_high_water") is not None
            or self.meta.get("fts_rebuild_progress") is not None
        )

    # ----------------------------------------------------------------- version

    @property
    def version_class(self) -> str:
        """See :func:`classify_version`."""
        return classify_version(self.schema_version)

    @property
    def writable_version(self) -> bool:
        """This project may write a store of this version (CO-2); above 30 it may not."""
        return self.version_class != "unknown"


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip() not in ("", "0", "false", "False")


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _ddl_option(sql: str, name: str) -> str | None:
    match = re.search(_OPTION_RE.format(name=name), sql, re.IGNORECASE)
    if not match:
        return None
    single, double, bare = match.groups()
    if single is not None:
        return single.replace("''", "'")
    if double is not None:
        return double.replace('""', '"')
    return bare


def _columns(conn: sqlite3.Connection, table: str) -> tuple[str, ...]:
    quoted = '"' + table.replace('"', '""') + '"'
    return tuple(row[1] for row in conn.execute(f"PRAGMA main.table_info({quoted})"))


#: The first column of an external-content view over ``messages``, as upstream's DDL writes it
#: (whitespace collapsed) -> the same over a ``messages`` row ``m``.
_KNOWN_TEXT_COLUMNS = {
    "content": "m.content",
    # v23+: a tool result is indexed by its first 8,192 characters.
    "CASE WHEN role = 'tool' THEN substr(COALESCE(content, ''), 1, 8192) ELSE content END":
        "CASE WHEN m.role = 'tool' THEN substr(COALESCE(m.content, ''), 1, 8192) ELSE m.content END",
}
_VIEW_RE = re.compile(
    r"CREATE VIEW \S+ AS SELECT id, (?P<text>.+?) AS content, [\w, ]+ FROM messages", re.IGNORECASE
)
_COLUMN_LIST_VIEW_RE = re.compile(
    r"CREATE VIEW \S+ AS SELECT (?P<columns>(?:\w+\.)?\w+(?:, (?:\w+\.)?\w+)*) FROM messages"
    r"(?: AS (?P<alias>\w+))?(?P<rest> (?:JOIN|WHERE|INNER|LEFT|CROSS)\b.*)?",
    re.IGNORECASE,
)


def _text_sql(content: str | None, views: dict[str, str]) -> str | None:
    """:attr:`FtsTable.text_sql` for a table whose ``content=`` is ``content``."""
    if content is None:
        return None
    if content == "messages":
        return "m.content"
    view = views.get(content)
    if view is None:
        return None
    view = " ".join(view.split())
    found = _VIEW_RE.fullmatch(view)
    if found:
        return _KNOWN_TEXT_COLUMNS.get(found.group("text"))
    # A plain list of ``messages`` columns, maybe joined and filtered (v30's
    # ``messages_fts_trigram_src``: ``SELECT m.id, m.role, m.content, m.tool_name FROM
    # messages AS m JOIN sessions AS s … WHERE …``): the rows it keeps hold the message's own
    # text. (A row it no longer keeps makes FTS5 fail with "database disk image is
    # malformed" when asked for its text; read through the message, it is simply its text.)
    found = _COLUMN_LIST_VIEW_RE.fullmatch(view)
    if not found:
        return None
    alias = found.group("alias") or "messages"
    joined = bool(found.group("rest")) and " join " in found.group("rest").lower()
    names = set()
    for column in found.group("columns").split(", "):
        table, _, name = column.rpartition(".")
        if table.lower() not in ((alias.lower(),) if joined else ("", alias.lower())):
            return None  # (another table's column, or one SQLite would have to resolve)
        names.add(name.lower())
    return "m.content" if "id" in names and "content" in names else None


def _stored_text_sql(conn: sqlite3.Connection, name: str, content: str | None, tables: frozenset[str]) -> str | None:
    """:attr:`FtsTable.stored_text_sql` of the FTS5 table ``name``."""
    shadow = f"{name}_content"
    if content is not None or shadow not in tables or not re.fullmatch(r"\w+", name):
        return None
    try:
        if "c0" not in _columns(conn, shadow):
            return None
    except sqlite3.Error:
        return None
    return f"(SELECT c0 FROM {shadow} WHERE id = {name}.rowid)"


def _fts_table(
    conn: sqlite3.Connection, name: str, sql: str, views: dict[str, str] | None = None,
    tables: frozenset[str] = frozenset(),
) -> FtsTable:
    quoted = '"' + name.replace('"', '""') + '"'
    try:
        conn.execute(f"SELECT * FROM main.{quoted} LIMIT 0").fetchall()
        loads = True
    except sqlite3.Error:
        loads = False
    columns: tuple[str, ...] = ()
    if loads:
        try:
            columns = _columns(conn, name)
        except sqlite3.Error:
            columns = ()
    content = _ddl_option(sql, "content") or None
    return FtsTable(
        name=name,
        columns=columns,
        content=content,
        tokenizer=_ddl_option(sql, "tokenize"),
        loads=loads,
        text_sql=_text_sql(content, views or {}),
        stored_text_sql=_stored_text_sql(conn, name, content, tables) if loads else None,
    )


def schema_cookie(conn: sqlite3.Connection) -> int:
    """``PRAGMA main.schema_version``: changes whenever any connection changes the schema."""
    return int(conn.execute("PRAGMA main.schema_version").fetchone()[0])


def detect(conn: sqlite3.Connection) -> Capabilities:
    """Read a store's capabilities from ``conn`` (the ``main`` schema only)."""
    cookie = schema_cookie(conn)
    rows = conn.execute("SELECT type, name, sql FROM main.sqlite_master").fetchall()
    tables = frozenset(row[1] for row in rows if row[0] == "table")
    views = {name: sql for kind, name, sql in rows if kind == "view" and sql}
    fts: dict[str, FtsTable] = {}
    for kind, name, sql in rows:
        if kind == "table" and sql and re.match(
            r"\s*CREATE\s+VIRTUAL\s+TABLE\b.*\bUSING\s+fts5\b", sql, re.IGNORECASE | re.DOTALL
        ):
            fts[name] = _fts_table(conn, name, sql, views, tables)
    session_columns = frozenset(_columns(conn, "sessions")) if "sessions" in tables else frozenset()
    message_columns = frozenset(_columns(conn, "messages")) if "messages" in tables else frozenset()
    version: int | None = None
    if "schema_version" in tables:
        row = conn.execute("SELECT version FROM main.schema_version LIMIT 1").fetchone()
        version = int(row[0]) if row is not None and row[0] is not None else None
    meta: dict[str, str] = {}
    if "state_meta" in tables:
        marks = ",".join("?" for _ in FTS_META_KEYS)
        meta = {
            str(key): str(value)
            for key, value in conn.execute(
                f"SELECT key, value FROM main.state_meta WHERE key IN ({marks})", FTS_META_KEYS
            )
            if value is not None
        }
    return Capabilities(
        schema_version=version,
        schema_cookie=cookie,
        tables=tables,
        session_columns=session_columns,
        message_columns=message_columns,
        fts=fts,
        meta=meta,
    )


__all__ = ["Capabilities", "FtsTable", "FTS_META_KEYS", "classify_version", "detect", "schema_cookie"]
