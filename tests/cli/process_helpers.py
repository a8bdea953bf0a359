"""Shared by the tests of CLI-18 … CLI-20: ``hermes-sessions`` as a real process, and the
checks that a write left a store's shape as it was (version, ``sqlite_master``, integrity,
full-text index integrity)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def hermes(home: Path, *args: str, stdin: str | None = "", timeout: float = 120,
           extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["HERMES_HOME"] = str(home)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("HERMES_SESSIONS_DEBUG", None)
    env.update(extra_env or {})
    return subprocess.run(
        [sys.executable, "-m", "hermes_tui.cli", "sessions", *args],
        input=stdin, capture_output=True, text=True, cwd=REPO, env=env, timeout=timeout,
    )


def beside(root: Path) -> dict[str, str]:
    """The environment that puts the trash, the cache and the config beside a Hermes root
    (the same for every run of a test, none in the person's own directories)."""
    return {"HERMES_SESSIONS_DATA_DIR": str(root.parent / "data"),
            "HERMES_SESSIONS_CACHE_DIR": str(root.parent / "cache"),
            "HERMES_SESSIONS_CONFIG_DIR": str(root.parent / "config")}


def shape(path: Path) -> tuple:
    """What a write in place must not change: the schema version and every schema object."""
    conn = sqlite3.connect(path)
    try:
        version = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0]
        master = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").fetchall()
        return version, master
    finally:
        conn.close()


def assert_store_sound(path: Path) -> None:
    """``PRAGMA integrity_check`` is ok and every FTS5 index agrees with its content."""
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        fts = [name for (name, sql) in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql LIKE '%VIRTUAL TABLE%fts5%'")]
        assert fts, "the store has no full-text index to check"
        for name in fts:
            try:
                conn.execute(f"INSERT INTO {name}({name}) VALUES ('integrity-check')")
            except sqlite3.OperationalError as exc:
                if "no such tokenizer" in str(exc):
                    continue  # an extension tokenizer this process cannot load (UC-7)
                raise
    finally:
        conn.close()
