"""Schema initialisation and migrations (SPEC §3, MG-1 … MG-7).

Column additions are declarative (``reconcile_columns`` compares ``SCHEMA_SQL`` with the live
tables and adds what is missing, whatever the stored version says). Only data migrations are
version-gated, and each is idempotent.
"""

from __future__ import annotations

import logging
import sqlite3

from .schema import (
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


def migrate(conn) -> int | None:
    """Version bookkeeping and data migrations (MG-5). Returns the version found (None: new)."""
    row = conn.execute("SELECT version FROM schema_version LIMIT 1").fetchone()
    if row is None:
        conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        return None
    version = int(row[0])
    if version < 11:
        # v10's trigram backfill (content only) is subsumed by the v11 rebuild, which
        # recreates both tables and indexes content + tool name + tool-call JSON.
        rebuild_fts(conn)
        conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
    elif version > SCHEMA_VERSION:
        log.warning(
            "state.db has schema version %d, newer than this library's %d; "
            "continuing without changing it",
            version,
            SCHEMA_VERSION,
        )
    return version


def ensure_title_index(conn) -> bool:
    """ST-2: the unique partial title index; False (with a warning) if duplicates block it."""
    try:
        conn.execute(TITLE_INDEX_SQL)
        return True
    except sqlite3.IntegrityError as exc:
        log.warning("cannot create unique title index (duplicate titles exist): %s", exc)
        return False


def ensure_fts(conn) -> None:
    """MG-1 step 5: probe each FTS table; create it (with triggers) if the probe fails."""
    for table in FTS_TABLES:
        try:
            conn.execute(f"SELECT * FROM {table} LIMIT 0").fetchall()
        except sqlite3.OperationalError:
            create_fts(conn, table)


def initialize(conn) -> int | None:
    """Run MG-1 steps 1-5 on ``conn`` (the caller owns the transaction)."""
    for stmt in split_statements(SCHEMA_SQL):
        conn.execute(stmt)
    reconcile_columns(conn)
    found = migrate(conn)
    ensure_title_index(conn)
    ensure_fts(conn)
    return found


__all__ = [
    "PLAIN_TABLES",
    "create_compat_views",
    "parse_schema_columns",
    "reconcile_columns",
    "initialize",
    "rebuild_fts",
]
