"""Hermes session store: drop-in compatible with upstream Hermes Agent's ``hermes_state``.

Public surface (SPEC CO-3): :class:`SessionDB`, :data:`SCHEMA_SQL`, :data:`SCHEMA_VERSION` and
``DEFAULT_DB_PATH`` (computed when read, so ``HERMES_HOME`` set after import is honoured).
This package never imports the UI.
"""

from __future__ import annotations

# Upstream's suite patches ``hermes_state.sqlite3.connect``: the module must be reachable here.
import sqlite3  # noqa: F401

from .capabilities import Capabilities
from .db import DatabaseError, ReadOnlyError, SessionDB, open_store
from .paths import default_db_path, hermes_home
from .schema import MAX_KNOWN_VERSION, SCHEMA_SQL, SCHEMA_VERSION
from .listing.query import ListQuery
from .store import Store
from .timefmt import relative_time
from .walmode import (
    _set_last_init_error,
    _wal_fallback_warned_paths,
    apply_wal_with_fallback,
    format_session_db_unavailable,
    get_last_init_error,
)

__all__ = [
    "SessionDB",
    "Store",
    "ListQuery",
    "open_store",
    "SCHEMA_SQL",
    "SCHEMA_VERSION",
    "MAX_KNOWN_VERSION",
    "DEFAULT_DB_PATH",
    "Capabilities",
    "apply_wal_with_fallback",
    "format_session_db_unavailable",
    "get_last_init_error",
    "DatabaseError",
    "ReadOnlyError",
    "default_db_path",
    "hermes_home",
    "relative_time",
]


def __getattr__(name: str):
    if name == "DEFAULT_DB_PATH":
        return default_db_path()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
