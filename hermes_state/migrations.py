"""Schema initialisation and migrations (SPEC §3, MG-1 … MG-7).

Column additions are declarative (``reconcile_columns`` compares ``SCHEMA_SQL`` with the live
tables and adds what is missing, whatever the stored version says). Only data migrations are
version-gated, and each is idempotent.
"""

from __future__ import annotations

import logging
import sqlite3

from .schema import (
    DEFERRED_INDEX_SQL,
    FTS_DDL,
    FTS_TABLES,
    FTS_TEXT_EXPR,
    PLAIN_TABLES,
    SCHEMA_SQL,
    SCHEMA_VERSION,
    TITLE_INDEX_SQL,
    TRIGGER_NAMES,
    split_statements,
)

log = logging.getLogger(__name__)


def parse_schema_columns(schema_sql: str) -> dict[str, dict[str, str]]:
    """Declared columns of every table in ``schema_sql`` (MG-3).

    The DDL is executed in a private in-memory database and read back with
    ``PRAGMA table_info`` -- no regex parsing of SQL. Each column maps to the type clause an
    ``ALTER TABLE … ADD COLUMN`` needs: declared type, ``NOT NULL`` (unless primary key) and
    ``DEFAULT``.
    """
    mem = sqlite3.connect(":memory:")
    try:
        mem.executescript(schema_sql)
        tables = [
            row[0]
            for row in mem.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid"
            )
        ]
        result: dict[str, dict[str, str]] = {}
        for table in tables:
            columns: dict[str, str] = {}
            for _cid, name, ctype, notnull, default, pk in mem.execute(
                f'PRAGMA table_info("{table}")'
            ):
                clause = ctype or ""
                if notnull and not pk:
                    clause += " NOT NULL"
                if default is not None:
                    clause += f" DEFAULT {default}"
                columns[name] = clause.strip()
            result[table] = columns
        return result
    finally:
        mem.close()


_DECLARED_COLUMNS = parse_schema_columns(SCHEMA_SQL)


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def reconcile_columns(cursor, declared: dict[str, dict[str, str]] | None = None) -> list[str]:
    """Add every declared column missing from the live tables (MG-4); never drop or alter.

    Returns the ``table.column`` names added. A failing ALTER (a concurrent opener added it
    first, or a NOT NULL column without default) is logged at debug level and skipped.
    """
    declared = declared if declared is not None else _DECLARED_COLUMNS
    added: list[str] = []
    for table, columns in declared.items():
        live = {row[1] for row in cursor.execute(f"PRAGMA table_info({_quote_ident(table)})")}
        if not live:
            continue
        for column, clause in columns.items():
            if column in live:
                continue
            sql = f"ALTER TABLE {_quote_ident(table)} ADD COLUMN {_quote_ident(column)} {clause}"
            try:
                cursor.execute(sql)
                added.append(f"{table}.{column}")
            except sqlite3.OperationalError as exc:
                log.debug("reconcile: %s failed: %s", sql, exc)
    return added


def _declared_defaults(schema_sql: str) -> dict[str, dict[str, str | None]]:
    """``{table: {column: default SQL text or None}}`` of ``schema_sql``, in table order."""
    mem = sqlite3.connect(":memory:")
    try:
        mem.executescript(schema_sql)
        return {
            table: {row[1]: row[4] for row in mem.execute(f"PRAGMA table_info({_quote_ident(table)})")}
            for table in PLAIN_TABLES
        }
    finally:
        mem.close()


def create_compat_views(conn) -> list[str]:
    """Read-only opens of an older file: show every table of ``SCHEMA_SQL`` in its v11 shape.

    A read-only store may not migrate (CO-9), yet every read method expects the v11 columns
    (``title`` appeared in v3, reasoning columns in v6 ...). For each declared table that lacks
    columns, or is missing entirely, a ``TEMP VIEW`` of the same name is created. SQLite resolves
    unqualified names in ``temp`` before ``main``, so every query sees the declared columns in
    table order (a missing one reads as its declared default, else NULL), followed by any
    unknown extra columns. Nothing is written to the database file. Returns the view names.
    """
    created: list[str] = []
    for table, columns in _declared_defaults(SCHEMA_SQL).items():
        live = [row[1] for row in conn.execute(f"PRAGMA main.table_info({_quote_ident(table)})")]
        if live and all(column in live for column in columns):
            continue
        select = [
            _quote_ident(column) if column in live
            else f"{default if default is not None else 'NULL'} AS {_quote_ident(column)}"
            for column, default in columns.items()
        ]
        select += [_quote_ident(column) for column in live if column not in columns]
        source = f"FROM main.{_quote_ident(table)}" if live else "WHERE 0"
        conn.execute(
            f"CREATE TEMP VIEW IF NOT EXISTS {_quote_ident(table)} AS "
            f"SELECT {', '.join(select)} {source}"
        )
        created.append(table)
    return created


def table_exists(conn, name: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return row is not None


def create_fts(conn, table: str) -> None:
    """Create one FTS table and its three triggers (ST-4, ST-5)."""
    for stmt in FTS_DDL[table]:
        conn.execute(stmt)


def backfill_fts(conn, table: str) -> None:
    """Index every message into ``table`` with the combined text of ST-4."""
    expr = FTS_TEXT_EXPR.format(p="")
    conn.execute(f"INSERT INTO {table}(rowid, content) SELECT id, {expr} FROM messages")


def rebuild_fts(conn) -> None:
    """The v11 migration: drop old triggers and FTS tables, recreate inline, backfill all."""
    for trigger in TRIGGER_NAMES:
        conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    for table in FTS_TABLES:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    for table in FTS_TABLES:
        create_fts(conn, table)
        backfill_fts(conn, table)


def read_version(conn) -> int | None:
    """The stored schema version, or None (no ``schema_version`` table, or no row)."""
    try:
        row = conn.execute("SELECT version FROM schema_version LIMIT 1").fetchone()
    except sqlite3.OperationalError:
        return None
    return int(row[0]) if row is not None and row[0] is not None else None


#: ``model_config`` as a JSON object to read markers from (NULL reads as ``{}``).
_CONFIG = "COALESCE({a}model_config, '{{}}')"


def _marker(alias: str, key: str) -> str:
    return f"json_extract({_CONFIG.format(a=alias)}, '$.{key}')"


def _config_is_object(alias: str) -> str:
    config = _CONFIG.format(a=alias)
    return f"(json_valid({config}) AND json_type({config}) = 'object')"


def tag_delegate_children(conn) -> int:
    """The v16 data migration: mark delegate sub-agent runs with ``_delegate_from``.

    Upstream v16 marks, in ``model_config``, every child session that is neither a branch
    (``_branched_from`` marker, or a parent that ended ``branched`` before the child started)
    nor a compression continuation (a parent that ended ``compression`` before the child
    started) with ``_delegate_from = <parent id>``; and every parentless session that looks
    like a sub-agent run orphaned by an old parent delete (no title, no branch marker, at
    most 25 messages, at least one tool result, no children) with ``'__orphaned__'``.
    Improvement (deliberate): a session that ended the way only a conversation with a
    person ends (``user_exit``, ``session_reset``, ``compression``, ``branched``) is never
    taken for an orphaned sub-agent run -- upstream's guess would hide, for instance, every
    untitled CLI session of a pre-v3 store that called a tool.
    Idempotent: rows already carrying a marker are left alone. Rows whose ``model_config``
    is not a JSON object are skipped rather than failing the whole open.
    """
    child = (
        f"UPDATE sessions SET model_config = json_set({_CONFIG.format(a='')}, "
        "'$._delegate_from', parent_session_id) "
        "WHERE parent_session_id IS NOT NULL "
        f"AND {_config_is_object('')} "
        f"AND {_marker('', '_delegate_from')} IS NULL "
        f"AND {_marker('', '_branched_from')} IS NULL "
        "AND NOT EXISTS (SELECT 1 FROM sessions p WHERE p.id = sessions.parent_session_id "
        "AND p.end_reason IN ('branched', 'compression') "
        "AND sessions.started_at >= p.ended_at)"
    )
    orphan = (
        f"UPDATE sessions SET model_config = json_set({_CONFIG.format(a='')}, "
        "'$._delegate_from', '__orphaned__') "
        "WHERE parent_session_id IS NULL "
        f"AND {_config_is_object('')} "
        f"AND {_marker('', '_delegate_from')} IS NULL "
        f"AND {_marker('', '_branched_from')} IS NULL "
        "AND title IS NULL AND message_count <= 25 "
        "AND COALESCE(end_reason, '') NOT IN ('user_exit', 'session_reset', 'compression', 'branched') "
        "AND EXISTS (SELECT 1 FROM messages m WHERE m.session_id = sessions.id "
        "AND m.role = 'tool') "
        "AND NOT EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = sessions.id)"
    )
    changed = 0
    for sql in (child, orphan):
        try:
            changed += conn.execute(sql).rowcount
        except sqlite3.OperationalError as exc:  # e.g. SQLite built without JSON1
            log.warning("v16 delegate-marker backfill skipped: %s", exc)
    return changed


def migrate(conn, fts5: bool = True) -> int | None:
    """Version bookkeeping and data migrations (MG-5, UC-2). Returns the version found.

    None: the store is new (version 16 is written, no data migration runs). Below 16, in
    order: the v11 FTS rebuild (below 11), the v12 ``active`` backfill (below 12) and the
    v16 delegate-marker backfill (below 16); then the version becomes 16 -- unless the FTS
    rebuild could not run because this SQLite lacks FTS5, in which case the version stays so
    that an FTS5-capable open still rebuilds (as upstream does). Callers never pass a store
    above 16 here (it is written in place, UC-5).
    """
    row = conn.execute("SELECT version FROM schema_version LIMIT 1").fetchone()
    if row is None:
        conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        return None
    version = int(row[0])
    complete = True
    if version < 11:
        # v10's trigram backfill (content only) is subsumed by the v11 rebuild, which
        # recreates both tables and indexes content + tool name + tool-call JSON.
        if fts5:
            rebuild_fts(conn)
        else:
            complete = False
    if version < 12:
        # v12: rewind soft-delete flag; reconcile added the column with DEFAULT 1, this
        # covers rows a concurrent opener may have left NULL.
        conn.execute("UPDATE messages SET active = 1 WHERE active IS NULL")
    if version < 16:
        tag_delegate_children(conn)
    if version < SCHEMA_VERSION and complete:
        conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
    return version


def ensure_title_index(conn) -> bool:
    """ST-2: the unique partial title index; False (with a warning) if duplicates block it."""
    try:
        conn.execute(TITLE_INDEX_SQL)
        return True
    except sqlite3.IntegrityError as exc:
        log.warning("cannot create unique title index (duplicate titles exist): %s", exc)
        return False


def fts_trigger_count(conn) -> int:
    marks = ",".join("?" for _ in TRIGGER_NAMES)
    row = conn.execute(
        f"SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger' AND name IN ({marks})",
        TRIGGER_NAMES,
    ).fetchone()
    return int(row[0])


def drop_fts_triggers(conn) -> None:
    """Without FTS5 the triggers cannot fire: drop them so message writes keep working."""
    for trigger in TRIGGER_NAMES:
        conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")


def ensure_fts(conn) -> None:
    """MG-1 step 5: probe each FTS table; create it (with triggers) if the probe fails.

    The triggers are (re)created even when the table exists: an open by an SQLite without
    FTS5 drops them (as upstream does), so messages written meanwhile are missing from the
    index. When a trigger of existing tables had to be restored, both indexes are rebuilt
    from ``messages``; tables created here start empty (MG-5).
    """
    existed = True
    for table in FTS_TABLES:
        try:
            conn.execute(f"SELECT * FROM {table} LIMIT 0").fetchall()
        except sqlite3.OperationalError:
            existed = False
    # Tables that exist but lost triggers were missing writes; new tables start empty (MG-5).
    repair = existed and fts_trigger_count(conn) < len(TRIGGER_NAMES)
    for table in FTS_TABLES:
        create_fts(conn, table)
    if repair:
        for table in FTS_TABLES:
            conn.execute(f"DELETE FROM {table}")
            backfill_fts(conn, table)


def initialize(conn, fts5: bool = True) -> int | None:
    """Run MG-1 steps 1-5 on ``conn`` (the caller owns the transaction); return the version
    found (None: a new store).

    A store above 16 (17-30; above 30 never gets here) is written in place: no DDL at all,
    no column reconcile, no version change (CO-2, UC-5). ``fts5=False`` (this SQLite lacks
    FTS5) drops the FTS triggers and creates no FTS table, as upstream does.
    """
    found = read_version(conn)
    if found is not None and found > SCHEMA_VERSION:
        return found
    for stmt in split_statements(SCHEMA_SQL):
        conn.execute(stmt)
    reconcile_columns(conn)
    for stmt in DEFERRED_INDEX_SQL:
        try:
            conn.execute(stmt)
        except sqlite3.OperationalError as exc:  # the column could not be added
            log.debug("deferred index skipped: %s", exc)
    if not fts5:
        drop_fts_triggers(conn)
    found = migrate(conn, fts5)
    ensure_title_index(conn)
    if fts5:
        ensure_fts(conn)
    return found


__all__ = [
    "PLAIN_TABLES",
    "create_compat_views",
    "declared_columns",
    "parse_schema_columns",
    "reconcile_columns",
    "initialize",
    "read_version",
    "rebuild_fts",
    "tag_delegate_children",
]


def declared_columns(table: str) -> frozenset[str]:
    """The columns ``SCHEMA_SQL`` declares for ``table`` (empty for an undeclared table)."""
    return frozenset(_DECLARED_COLUMNS.get(table, {}))
