"""SPEC §7 (TI-1 … TI-7): session titles."""

from __future__ import annotations

import sqlite3

import pytest

from hermes_state import SessionDB

# ---------------------------------------------------------------- TI-1

TI1_TABLE = [
    ("  hello   world  ", "hello world"),
    ("a\tb\nc", "a b c"),
    ("a\x0bb", "ab"),
    ("a\x00b\x7fc", "abc"),
    ("foo\u200bbar", "foobar"),
    ("\u202eevil", "evil"),
    ("\ufeffBOM", "BOM"),
    ("a\u00a0b", "a b"),
    ("a\u3000b", "a b"),
    ("\x01\x02", None),
    ("   ", None),
    ("", None),
    (None, None),
    ("Café ☕ 日本", "Café ☕ 日本"),
    ("👨\u200d👩\u200d👧", "👨👩👧"),
    (" " + "x" * 100 + " ", "x" * 100),
]


@pytest.mark.parametrize("title,expected", TI1_TABLE)
def test_ti1_sanitize_title_spec_table(title, expected):
    assert SessionDB.sanitize_title(title) == expected


def test_ti1_too_long_raises_with_cleaned_length():
    with pytest.raises(ValueError) as info:
        SessionDB.sanitize_title("x" * 101)
    assert str(info.value) == "Title too long (101 chars, max 100)"
    # The check is after cleaning: 104 raw characters, 100 after.
    assert SessionDB.sanitize_title("x" * 50 + "\u200b\u200b" + "\x00\x01" + "x" * 50) == "x" * 100
    with pytest.raises(ValueError, match=r"Title too long \(102 chars, max 100\)"):
        SessionDB.sanitize_title("x" * 50 + "\t\n  \r" + "x" * 51)
    assert SessionDB.MAX_TITLE_LENGTH == 100


@pytest.mark.parametrize(
    "cp",
    list(range(0x00, 0x09)) + [0x0B, 0x0C] + list(range(0x0E, 0x20)) + [0x7F],
)
def test_ti1_every_listed_control_character_removed(cp):
    assert SessionDB.sanitize_title(f"a{chr(cp)}b") == "ab"


@pytest.mark.parametrize(
    "cp",
    list(range(0x200B, 0x2010)) + list(range(0x2028, 0x202F)) + list(range(0x2060, 0x206A))
    + [0xFEFF, 0xFFF9, 0xFFFA, 0xFFFB, 0xFFFC],
)
def test_ti1_every_listed_invisible_character_removed(cp):
    assert SessionDB.sanitize_title(f"a{chr(cp)}b") == "ab"


@pytest.mark.parametrize(
    "cp", [0x09, 0x0A, 0x0D, 0x20, 0xA0, 0x85, 0x1680] + list(range(0x2000, 0x200B)) + [0x202F, 0x205F, 0x3000]
)
def test_ti1_every_whitespace_becomes_one_space(cp):
    assert SessionDB.sanitize_title(f"a{chr(cp)}{chr(cp)}b") == "a b"


def test_ti1_keeps_punctuation_accents_and_symbols():
    title = "Ünïcödé — «quotes» & <tags> [bold] 100% #2 🚀"
    assert SessionDB.sanitize_title(title) == title


# ---------------------------------------------------------------- TI-2


def test_ti2_set_clear_and_reset_own_title(db: SessionDB):
    db.create_session("a", "cli")
    assert db.set_session_title("a", "  My   title ") is True
    assert db.get_session_title("a") == "My title"
    assert db.set_session_title("a", "My title") is True  # its own current title
    assert db.set_session_title("a", "   ") is True
    assert db.get_session_title("a") is None
    assert db.set_session_title("a", "") is True and db.get_session_title("a") is None
    assert db.set_session_title("missing", "whatever") is False


def test_ti2_duplicate_title_rejected_with_message(db: SessionDB):
    db.create_session("first", "cli")
    db.create_session("second", "telegram")
    db.set_session_title("first", "shared name")
    with pytest.raises(ValueError) as info:
        db.set_session_title("second", " shared\tname ")
    assert str(info.value) == "Title 'shared name' is already in use by session first"
    assert db.get_session_title("second") is None


def test_ti2_too_long_raises_before_any_write(db: SessionDB):
    db.create_session("a", "cli")
    db.set_session_title("a", "keep")
    statements: list[str] = []
    db._conn.set_trace_callback(statements.append)
    with pytest.raises(ValueError, match="too long"):
        db.set_session_title("a", "y" * 150)
    db._conn.set_trace_callback(None)
    assert statements == []
    assert db.get_session_title("a") == "keep"


def test_ti2_unique_index_race_converted_to_value_error(db: SessionDB):
    """Another writer taking the title between the pre-check and the UPDATE is simulated by a
    TEMP trigger (private to this connection, not stored in the file) that gives session ``b``
    the title just before ``a``'s UPDATE runs; the unique index then fires."""
    db.create_session("a", "cli")
    db.create_session("b", "cli")
    db._conn.execute(
        "CREATE TEMP TRIGGER race BEFORE UPDATE OF title ON main.sessions "
        "WHEN NEW.id = 'a' AND NEW.title IS NOT NULL "
        "BEGIN UPDATE sessions SET title = NEW.title WHERE id = 'b'; END"
    )
    with pytest.raises(ValueError) as info:
        db.set_session_title("a", "contested")
    assert not isinstance(info.value, sqlite3.IntegrityError)
    # The winner's row was rolled back with our transaction, so it cannot be named here;
    # the message must still read as a sentence (not "by session another session").
    assert str(info.value) == "Title 'contested' is already in use by another session"
    assert isinstance(info.value.__cause__, sqlite3.IntegrityError)
    db._conn.execute("DROP TRIGGER temp.race")
    assert db.get_session_title("a") is None and db.get_session_title("b") is None


# ---------------------------------------------------------------- TI-3


def test_ti3_uniqueness_global_and_case_sensitive(db: SessionDB):
    db.create_session("a", "cli")
    db.create_session("b", "telegram")
    db.create_session("c", "discord")
    db.create_session("d", "cli")
    db.set_session_title("a", "My Project")
    db.set_session_title("b", "my project")
    with pytest.raises(ValueError):
        db.set_session_title("c", "My Project")  # other source, same title
    assert db.get_session_title("c") is None and db.get_session_title("d") is None


def test_ti3_title_survives_end_and_appears_everywhere(db: SessionDB):
    db.create_session("a", "cli")
    db.append_message("a", "user", content="hi")
    db.set_session_title("a", "durable")
    db.end_session("a", "user_exit")
    assert db.get_session("a")["title"] == "durable"
    assert db.search_sessions()[0]["title"] == "durable"
    assert db.list_sessions_rich()[0]["title"] == "durable"
    assert db.export_session("a")["title"] == "durable"
    assert db.export_all()[0]["title"] == "durable"


# ---------------------------------------------------------------- TI-4


def test_ti4_get_title_and_by_title_exact(db: SessionDB):
    db.create_session("a", "cli")
    db.set_session_title("a", "exact name")
    assert db.get_session_title("a") == "exact name"
    assert db.get_session_title("missing") is None
    assert db.get_session_by_title("exact name")["id"] == "a"
    assert db.get_session_by_title("  exact   name ") is None  # no sanitising
    assert db.get_session_by_title("Exact Name") is None
    assert db.get_session_by_title("exact name #2") is None  # no lineage logic


# ---------------------------------------------------------------- TI-5


def titled(db, make_session, titles_in_start_order):
    ids = {}
    for i, title in enumerate(titles_in_start_order):
        sid = f"s{i}"
        make_session(db, sid, started_at=1000 + i, title=title)
        ids[title] = sid
    return ids


def test_ti5_single_exact(db: SessionDB, make_session):
    ids = titled(db, make_session, ["my project"])
    assert db.resolve_session_by_title("my project") == ids["my project"]


def test_ti5_newest_numbered_variant_wins(db: SessionDB, make_session):
    ids = titled(db, make_session, ["my project", "my project #2", "my project #3"])
    assert db.resolve_session_by_title("my project") == ids["my project #3"]
    assert db.resolve_session_by_title("my project #2") == ids["my project #2"]


def test_ti5_most_recently_started_not_highest_number(db: SessionDB, make_session):
    ids = titled(db, make_session, ["my project", "my project #3", "my project #2"])
    assert db.resolve_session_by_title("my project") == ids["my project #2"]


def test_ti5_wildcards_literal(db: SessionDB, make_session):
    ids = titled(db, make_session, ["100% done", "100X done #2", "a_b", "aXb #2"])
    assert db.resolve_session_by_title("100% done") == ids["100% done"]
    assert db.resolve_session_by_title("a_b") == ids["a_b"]


def test_ti5_none_and_quirks(db: SessionDB, make_session):
    assert db.resolve_session_by_title("anything") is None
    ids = titled(db, make_session, ["my project", "My Project #9", "my project #draft"])
    # Kept upstream quirks: ASCII case-insensitive LIKE, and "#%" needs no digits.
    assert db.resolve_session_by_title("my project") == ids["my project #draft"]
    assert db.resolve_session_by_title("only numbered") is None


def test_ti5_numbered_variant_without_exact(db: SessionDB, make_session):
    ids = titled(db, make_session, ["my project #2"])
    assert db.resolve_session_by_title("my project") == ids["my project #2"]


# ---------------------------------------------------------------- TI-6


@pytest.mark.parametrize(
    "existing,query,expected",
    [
        ([], "my project", "my project"),
        (["my project"], "my project", "my project #2"),
        (["my project", "my project #3"], "my project", "my project #4"),
        (["my project", "my project #3"], "my project #3", "my project #4"),
        (["my project #2"], "my project", "my project #3"),
        (["my project", "My Project #9"], "my project", "my project #10"),
        (["100% done"], "100% done", "100% done #2"),
        (["100X done #7"], "100% done", "100% done"),
        (["v #1 #2"], "v #1", "v #3"),
        (["plan", "plan #draft"], "plan", "plan #2"),
    ],
)
def test_ti6_next_title_in_lineage(db: SessionDB, make_session, existing, query, expected):
    titled(db, make_session, existing)
    assert db.get_next_title_in_lineage(query) == expected


def test_ti6_only_reads(db: SessionDB, make_session):
    titled(db, make_session, ["my project"])
    before = db.data_version(), db.search_sessions()
    assert db.get_next_title_in_lineage("my project") == "my project #2"
    assert db.get_next_title_in_lineage("my project") == "my project #2"  # nothing reserved
    assert (db.data_version(), db.search_sessions()) == before


# ---------------------------------------------------------------- TI-7


def test_ti7_compression_continuation_title_flow(db: SessionDB, make_session):
    make_session(db, "root", started_at=1000, ended_at=1100, end_reason="compression", title="trip")
    make_session(db, "tip", started_at=1100, parent_session_id="root")
    title = db.get_next_title_in_lineage(db.get_session_title("root"))
    assert title == "trip #2"
    db.set_session_title("tip", title)
    assert db.resolve_session_by_title("trip") == "tip"
    # A caller that loses a race asks again and retries once.
    make_session(db, "next", started_at=1200, parent_session_id="tip")
    make_session(db, "thief", started_at=1150)
    stale = db.get_next_title_in_lineage("trip #2")
    db.set_session_title("thief", stale)
    with pytest.raises(ValueError, match="already in use"):
        db.set_session_title("next", stale)
    retry = db.get_next_title_in_lineage("trip #2")
    assert retry == "trip #4"
    assert db.set_session_title("next", retry) is True
