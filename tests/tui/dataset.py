"""A small, fixed database for UI tests: every row, text and timestamp is known.

Built through the real ``SessionDB`` API (so triggers and counters are real), then the
timestamps are pinned with raw UPDATEs so relative times are stable against ``NOW``.
"""

from __future__ import annotations

from pathlib import Path

from hermes_state import SessionDB

#: The injected clock of UI tests: 2026-11-18 08:00 UTC (a Wednesday).
NOW = 1794988800.0
HOUR = 3600.0
DAY = 86400.0


def _call(name: str, args: str, call_id: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


#: (id, source, title, minutes-ago-started, end_reason or None, parent, messages)
SESSIONS = [
    (
        "20261118_074000_a1b2c3", "cli", "Docker deploy pipeline", 20, None, None,
        [
            ("user", "Help me fix the docker-compose deploy for the api service"),
            ("assistant", "Let me look at the compose file first.", [_call("read_file", '{"path": "docker-compose.yml"}', "c1")]),
            ("tool", "services:\n  api:\n    image: api:latest", None, "read_file", "c1"),
            ("assistant", "The api image tag is pinned to latest; pin it to a digest and redeploy with docker compose up -d."),
        ],
    ),
    (
        "20261118_060000_b2c3d4e5", "telegram", None, 120, None, None,
        [
            ("user", "今天桂林的天气怎么样?我想去漓江"),
            ("assistant", "桂林今天多云,适合游览漓江。"),
        ],
    ),
    (
        "20261118_030000_c3d4e5", "cli", "release checklist", 300, "user_exit", None,
        [
            ("user", "Draft the release checklist for v2.3"),
            ("assistant", "1. Freeze main\n2. Run the full test suite\n3. Tag v2.3.0"),
        ],
    ),
    (
        "20261117_090000_d4e5f6a7", "discord", "travel plans", 60 * 23, "compression", None,
        [
            ("user", "Plan a week in Kyoto in April"),
            ("assistant", "Day 1: Fushimi Inari early, then Gion in the evening."),
        ],
    ),
    (
        "20261117_100000_e5f6a7b8", "discord", "travel plans #2", 60 * 22, None, "20261117_090000_d4e5f6a7",
        [
            ("user", "Continue: add day trips to Nara"),
            ("assistant", "Day 4: Nara park and Todai-ji, back by 17:00."),
        ],
    ),
    (
        "20261116_120000_f6a7b8", "slack", None, 60 * 44, "session_reset", None,
        [
            ("user", "东京の天気を教えて"),
            ("assistant", "東京は晴れです。"),
        ],
    ),
    (
        "20261115_080000_a7b8c9", "cli", "Rust borrow checker notes", 60 * 72, "user_exit", None,
        [
            ("user", "Why does the borrow checker reject this closure?"),
            ("assistant", "Because the closure captures `self` mutably while `items` is borrowed."),
        ],
    ),
    (
        "20261114_080000_b8c9d0", "tool", "third-party tool run", 60 * 96, "user_exit", None,
        [("user", "tool session docker audit")],
    ),
    (
        "20261113_080000_c9d0e1", "whatsapp", None, 60 * 120, "user_exit", None,
        [("user", "[bold]not markup[/bold] and [@click=app.quit]click[/] stay text")],
    ),
]


def build_fixed_db(path: Path) -> Path:
    """Create the fixed database at ``path`` (which must not exist)."""
    db = SessionDB(path)
    try:
        for sid, source, title, minutes, end_reason, parent, messages in SESSIONS:
            started = NOW - minutes * 60
            db.create_session(sid, source, model="claude-sonnet-4", parent_session_id=parent)
            for index, message in enumerate(messages):
                role, content = message[0], message[1]
                tool_calls = message[2] if len(message) > 2 and role == "assistant" else None
                tool_name = message[3] if len(message) > 3 else None
                tool_call_id = message[4] if len(message) > 4 else None
                mid = db.append_message(
                    sid, role, content, tool_calls=tool_calls, tool_name=tool_name,
                    tool_call_id=tool_call_id,
                )
                stamp = started + 60 * (index + 1)
                db._execute_write(
                    lambda c, mid=mid, stamp=stamp: c.execute(
                        "UPDATE messages SET timestamp = ? WHERE id = ?", (stamp, mid)
                    )
                )
            if title:
                db.set_session_title(sid, title)
            ended = started + 60 * (len(messages) + 1) if end_reason else None
            db._execute_write(
                lambda c, sid=sid, started=started, ended=ended, end_reason=end_reason: c.execute(
                    "UPDATE sessions SET started_at = ?, ended_at = ?, end_reason = ?, "
                    "input_tokens = 1200, output_tokens = 340 WHERE id = ?",
                    (started, ended, end_reason, sid),
                )
            )
    finally:
        db.close()
    return path


#: The compression chain of the fixed database ("travel plans" → "travel plans #2"), and the
#: third segment :func:`add_third_travel_segment` puts after it.
TRAVEL_ROOT = "20261117_090000_d4e5f6a7"
TRAVEL_SECOND = "20261117_100000_e5f6a7b8"
TRAVEL_THIRD = "20261117_110000_f7a8b9c0"


def add_third_travel_segment(path: Path) -> None:
    """Continue the travel chain with a third segment ("travel plans #3", the tip now): its
    second segment is then neither the root nor the tip, a row of the list of its own for no
    one. Last active within the chain's day, so the chain stays below the list's top."""
    db = SessionDB(path)
    try:
        db.create_session(TRAVEL_THIRD, "discord", model="claude-sonnet-4", parent_session_id=TRAVEL_SECOND)
        db.append_message(TRAVEL_THIRD, "user", "Continue: a day in Osaka")
        db.set_session_title(TRAVEL_THIRD, "travel plans #3")
        db._execute_write(lambda c: (
            c.execute("UPDATE sessions SET end_reason = 'compression', ended_at = started_at + 180 WHERE id = ?",
                      (TRAVEL_SECOND,)),
            c.execute("UPDATE sessions SET started_at = (SELECT ended_at + 60 FROM sessions WHERE id = ?) "
                      "WHERE id = ?", (TRAVEL_SECOND, TRAVEL_THIRD)),
            c.execute("UPDATE messages SET timestamp = (SELECT started_at + 60 FROM sessions WHERE id = ?) "
                      "WHERE session_id = ?", (TRAVEL_THIRD, TRAVEL_THIRD)),
        ))
    finally:
        db.close()
