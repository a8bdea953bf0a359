"""The recency index kept between runs (hermes_state.listing.recency): a reader with a cache file starts
from what the last one knew and reads only what was written since -- and the first pages by
last activity are still exactly the general query's, whatever happened in between. Any doubt
about the file (another store at the path, its newest message gone, a damaged or foreign
cache) means building the index again, never a wrong page."""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import stat
import time
from pathlib import Path

import pytest

import hermes_state.listing.activity as activity_module
from hermes_state import SessionDB
from hermes_state.listing import recency
from hermes_state.visibility import INTERNAL_SOURCES
from hermes_state.listing import ListQuery

from listing_helpers import _add, _add_messages, _general

#: The statement that builds the index (one seek per session); absent when the cache served.
BUILD = "WHERE newest IS NOT NULL ORDER BY newest DESC"


def _reader(path: Path, cache: Path) -> SessionDB:
    db = SessionDB(path, read_only=True)
    db.recency_cache = cache
    return db


def _first_pages(db: SessionDB, monkeypatch) -> list[str]:
    """Lists a few pages (asserting each is the general query's); the statements run."""
    statements: list[str] = []
    db._conn.set_trace_callback(statements.append)
    try:
        for options in ({}, {"exclude_sources": list(INTERNAL_SOURCES)}, {"include_archived": True}):
            for offset, limit in ((0, 3), (2, 4), (0, 10)):
                rows = db.list_sessions_rich(order_by_last_active=True, offset=offset, limit=limit, **options)
                db._conn.set_trace_callback(None)
                assert rows == _general(db, monkeypatch, offset=offset, limit=limit, **options), options
                db._conn.set_trace_callback(statements.append)
    finally:
        db._conn.set_trace_callback(None)
    return statements


def _built(statements: list[str]) -> bool:
    return any(BUILD in s for s in statements)


@pytest.fixture
def store(db_path: Path) -> SessionDB:
    writer = SessionDB(db_path)
    base = 1767000000.0
    for n in range(12):
        _add(writer, f"s{n:02d}", base + 1000 * n, [base + 1000 * n + 10 + i for i in range(3)])
    yield writer
    writer.close()


def test_the_next_reader_starts_from_the_cache_and_reads_only_what_is_new(store, db_path, tmp_path, monkeypatch):
    cache = recency.cache_file(db_path, tmp_path / "cache")
    first = _reader(db_path, cache)
    assert _built(_first_pages(first, monkeypatch))
    assert cache.exists(), "a build is kept at once, not only at close"
    first.close()
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    assert stat.S_IMODE(cache.parent.stat().st_mode) == 0o700

    _add_messages(store, "s03", [1767100000.0])  # an old conversation comes back
    second = _reader(db_path, cache)
    try:
        statements: list[str] = []
        second._conn.set_trace_callback(statements.append)
        quick = second.list_summaries(ListQuery.from_options(order_by_last_active=True), limit=3, provisional=True)
        second._conn.set_trace_callback(None)
        assert not _built(statements), "the cache served the first page"
        assert any("WHERE id > " in s for s in statements), "only the messages written since"
        assert _ids(quick)[0] == "s03"
        assert not quick.exact, "a cache is a guess until the store confirms it"
        # An exact page is the store's word: the index is built, and the pages are right.
        assert _built(_first_pages(second, monkeypatch))
    finally:
        second.close()


def test_what_a_reader_learnt_is_kept_when_it_closes(store, db_path, tmp_path, monkeypatch):
    cache = recency.cache_file(db_path, tmp_path / "cache")
    first = _reader(db_path, cache)
    _first_pages(first, monkeypatch)
    saved = json.loads(cache.read_text())
    _add_messages(store, "s01", [1767200000.0])
    _first_pages(first, monkeypatch)
    first.close()
    kept = json.loads(cache.read_text())
    assert kept["top"][0] > saved["top"][0] and kept["ids"][0] == "s01"


def test_changes_between_runs_never_give_a_wrong_page(db_path, tmp_path, monkeypatch):
    """Random writes by other processes between runs of a reader that keeps its cache: messages
    added (to old and new conversations), rewound, sessions archived, pinned, deleted, created
    empty. Every run's pages are the general query's."""
    rng = random.Random(11)
    cache = recency.cache_file(db_path, tmp_path / "cache")
    writer = SessionDB(db_path)
    clock = [1767000000.0]

    def tick() -> float:
        clock[0] += rng.uniform(1, 50)
        return clock[0]

    sessions: list[str] = []
    served = 0
    try:
        for run in range(25):
            for step in range(rng.randint(1, 6)):
                action = rng.random()
                if action < 0.3 or len(sessions) < 5:
                    sid = f"r{run:02d}s{step}"
                    _add(writer, sid, tick(), [tick() for _ in range(rng.randint(0, 4))],
                         source=rng.choice(["cli", "telegram", "tool"]))
                    sessions.append(sid)
                elif action < 0.55:
                    _add_messages(writer, rng.choice(sessions), [tick() for _ in range(rng.randint(1, 3))])
                elif action < 0.65:
                    sid = rng.choice(sessions)
                    users = [r[0] for r in writer._fetchall(
                        "SELECT id FROM messages WHERE session_id = ? AND active = 1", (sid,))]
                    if users:
                        writer.rewind_to_message(sid, rng.choice(users))
                elif action < 0.75:
                    writer.set_session_archived(rng.choice(sessions), rng.random() < 0.7)
                elif action < 0.85:
                    writer.set_session_pinned(rng.choice(sessions), rng.random() < 0.6)
                else:
                    writer.delete_session(sessions.pop(rng.randrange(len(sessions))))
            reader = _reader(db_path, cache)
            reader.extra_pins = writer.extra_pins  # a v16 store's pins: the settings file
            try:
                statements: list[str] = []
                reader._conn.set_trace_callback(statements.append)
                reader.list_summaries(ListQuery.from_options(order_by_last_active=True), limit=5, provisional=True)
                reader._conn.set_trace_callback(None)
                served += not _built(statements)
                _first_pages(reader, monkeypatch)  # exact pages: the store's word, every run
            finally:
                reader.close()
        assert served >= 15, "most runs' first pages started from the cache"
    finally:
        writer.close()


def test_the_cache_of_another_file_at_the_same_path_is_not_used(store, db_path, tmp_path, monkeypatch):
    """A restore or a sync tool puts another file at the path: a new inode, a build."""
    cache = recency.cache_file(db_path, tmp_path / "cache")
    first = _reader(db_path, cache)
    _first_pages(first, monkeypatch)
    first.close()
    store.close()
    other = tmp_path / "other.db"
    shutil.copy(db_path, other)
    writer = SessionDB(other)
    _add(writer, "newer", 1768000000.0, [1768000001.0])  # only in the other file
    writer.close()
    os.replace(other, db_path)
    for suffix in ("-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    second = _reader(db_path, cache)
    try:
        statements = _first_pages(second, monkeypatch)
        assert _built(statements)
        assert second.list_sessions_rich(order_by_last_active=True, limit=1)[0]["id"] == "newer"
    finally:
        second.close()


def test_a_cache_whose_newest_message_is_gone_is_built_again(store, db_path, tmp_path, monkeypatch):
    cache = recency.cache_file(db_path, tmp_path / "cache")
    first = _reader(db_path, cache)
    _first_pages(first, monkeypatch)
    first.close()
    top = json.loads(cache.read_text())["top"]
    store.delete_session(top[1])  # the newest message's conversation goes
    second = _reader(db_path, cache)
    try:
        assert _built(_first_pages(second, monkeypatch))
    finally:
        second.close()


@pytest.mark.parametrize("damage", [
    "garbage", "empty", "format", "keep", "lengths", "types", "nan", "unsorted-bound", "path",
])
def test_a_damaged_or_foreign_cache_is_ignored(store, db_path, tmp_path, monkeypatch, damage):
    cache = recency.cache_file(db_path, tmp_path / "cache")
    first = _reader(db_path, cache)
    _first_pages(first, monkeypatch)
    first.close()
    data = json.loads(cache.read_text())
    if damage == "garbage":
        cache.write_bytes(b"\x00\xff not json")
    elif damage == "empty":
        cache.write_text("")
    else:
        if damage == "format":
            data["format"] = 999
        elif damage == "keep":
            data["keep"] = 5
        elif damage == "lengths":
            data["ids"].append("extra")
        elif damage == "types":
            data["newest"][0] = "yesterday"
        elif damage == "nan":
            data["newest"][0] = float("nan")
        elif damage == "unsorted-bound":
            data["bound"] = data["newest"][0] + 1  # a kept session below the bound of the rest
        elif damage == "path":
            data["file"][0] = "/elsewhere/state.db"
        cache.write_text(json.dumps(data))
    second = _reader(db_path, cache)
    try:
        assert _built(_first_pages(second, monkeypatch))
    finally:
        second.close()


def test_an_unwritable_cache_costs_only_the_build(store, db_path, tmp_path, monkeypatch):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory should be")
    reader = _reader(db_path, recency.cache_file(db_path, blocked))
    try:
        assert _built(_first_pages(reader, monkeypatch))
    finally:
        reader.close()
    assert blocked.read_text().startswith("a file")


def test_cache_files_of_stores_not_browsed_for_a_month_are_swept(store, db_path, tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    directory.mkdir()
    old = directory / "recency-0123456789abcdef01234567.json"
    old.write_text("{}")
    month_ago = time.time() - 31 * 86400
    os.utime(old, (month_ago, month_ago))
    recent = directory / "recency-fedcba9876543210fedcba98.json"
    recent.write_text("{}")
    reader = _reader(db_path, recency.cache_file(db_path, directory))
    try:
        _first_pages(reader, monkeypatch)
    finally:
        reader.close()
    assert not old.exists() and recent.exists()
    assert recency.cache_file(db_path, directory).exists()


def test_the_cache_keeps_what_the_walk_keeps(store, db_path, tmp_path, monkeypatch):
    """With fewer kept sessions than the store has, the bound of the rest survives the trip."""
    monkeypatch.setattr(activity_module._RecencyWalk, "KEEP", 5)
    cache = recency.cache_file(db_path, tmp_path / "cache")
    first = _reader(db_path, cache)
    _first_pages(first, monkeypatch)
    order, bound = list(first.lister.recency.order), first.lister.recency.bound
    first.close()
    second = _reader(db_path, cache)
    try:
        second._read(second.lister.recency.refresh)
        assert second.lister.recency.order == order and second.lister.recency.bound == bound
        _first_pages(second, monkeypatch)
    finally:
        second.close()


# ---------------------------------------------------------------------------- provisional pins


def test_a_small_stores_first_page_has_every_pin_from_the_start(tmp_path, monkeypatch):
    """Up to EXACT_PINS_ROWS sessions the scan for pins costs milliseconds: the first page
    is exact, with no cache, and the list never moves under the cursor when the census comes
    (at 80x24 the first frame showed 2 pinned rows, then 6)."""
    from hermes_workload.corpus import generate_corpus

    path = tmp_path / "small" / "state.db"
    path.parent.mkdir()
    generate_corpus(path, messages=3000, seed=3, now=1767225600.0, schema=30)
    writer = SessionDB(path)
    quiet = [r[0] for r in writer._fetchall(
        "SELECT id FROM sessions WHERE pinned = 0 AND parent_session_id IS NULL AND archived = 0"
        " AND hidden = 0 AND source = 'cli' ORDER BY started_at LIMIT 4")]
    for sid in quiet:  # old, quiet conversations: no walk of the newest messages meets them
        writer.set_session_pinned(sid, True)
    pins = {r[0] for r in writer._fetchall("SELECT id FROM sessions WHERE pinned != 0")}
    writer.close()
    reader = _reader(path, recency.cache_file(path, tmp_path / "no-cache-yet"))
    try:
        first = reader.list_summaries(ListQuery.from_options(order_by_last_active=True), limit=20, provisional=True)
        # (the order below the pins may still rest on a guess of the recency index: the pins
        # on top are exact)
        top = [row.id for row in first[: len(pins)]]
        assert set(top) == pins and set(quiet) <= set(top)
        exact = reader.list_summaries(ListQuery.from_options(order_by_last_active=True), limit=20)
        assert _ids(exact)[: len(pins)] == top
    finally:
        reader.close()

#
# Pinned sessions come first in every order (BR-12); on a v30 store finding them reads every
# session row (no index on the column). A first page asked for ``provisional`` may start from
# the pins the cache kept, and says so (``exact``); asked again without it, it is exact.


@pytest.fixture
def v30_store(tmp_path: Path, monkeypatch):
    from hermes_state.listing.engine import Lister
    from hermes_workload.corpus import generate_corpus

    # A large store's path: a store this small would have its pins scanned exactly.
    monkeypatch.setattr(Lister, "EXACT_PINS_ROWS", 0)

    path = tmp_path / "v30" / "state.db"
    path.parent.mkdir()
    generate_corpus(path, messages=3000, seed=3, now=1767225600.0, schema=30)
    return path


def _ids(rows) -> list[str]:
    return [row.id for row in rows]


def test_a_provisional_first_page_takes_the_cached_pins_and_says_so(v30_store, tmp_path, monkeypatch):
    cache = recency.cache_file(v30_store, tmp_path / "cache")
    first = _reader(v30_store, cache)
    exact = first.list_summaries(ListQuery.from_options(order_by_last_active=True), limit=20)
    assert exact.exact
    first.close()
    assert json.loads(cache.read_text())["pins"], "the corpus has pins, kept with the index"

    # Another process pins an old, quiet conversation between the runs.
    writer = SessionDB(v30_store)
    old = writer._fetchone(
        "SELECT id FROM sessions WHERE pinned = 0 AND parent_session_id IS NULL AND archived = 0"
        " AND hidden = 0 AND source = 'cli' ORDER BY started_at LIMIT 1")[0]
    writer.set_session_pinned(old, True)
    writer.close()

    second = _reader(v30_store, cache)
    try:
        statements: list[str] = []
        second._conn.set_trace_callback(statements.append)
        quick = second.list_summaries(ListQuery.from_options(order_by_last_active=True), limit=20, provisional=True)
        second._conn.set_trace_callback(None)
        assert not quick.exact
        assert not any("pinned = 1" in s for s in statements), "no scan of every session"
        assert old not in _ids(quick), "the cache did not know that pin"
        right = second.list_summaries(ListQuery.from_options(order_by_last_active=True), limit=20)
        assert right.exact and old in _ids(right)
        assert _ids(right) == [r["id"] for r in _general(second, monkeypatch, limit=20)]
        # Once the pins are known exactly, a provisional ask is exact too.
        again = second.list_summaries(ListQuery.from_options(order_by_last_active=True), limit=20, provisional=True)
        assert again.exact and _ids(again) == _ids(right)
    finally:
        second.close()
    assert old in json.loads(cache.read_text())["pins"], "the exact pins are kept for the next run"


def test_a_provisional_page_from_the_cache_says_so_until_a_build_confirms_it(tmp_path, monkeypatch):
    """The cache only speeds up what the store confirms: its page is marked provisional (even
    on a v16 store, whose pins are not in the store), and the census's build confirms it."""
    from hermes_workload.corpus import generate_corpus

    path = tmp_path / "v16.db"
    generate_corpus(path, messages=1500, seed=4, now=1767225600.0, schema=16)
    cache = recency.cache_file(path, tmp_path / "cache")
    _reader(path, cache).close()
    first = _reader(path, cache)
    first.list_summaries(ListQuery.from_options(order_by_last_active=True), limit=10)
    first.close()
    db = _reader(path, cache)
    try:
        rows = db.list_summaries(ListQuery.from_options(order_by_last_active=True), limit=10, provisional=True)
        assert not rows.exact and db.recency_guessed
        assert _ids(rows) == [r["id"] for r in _general(db, monkeypatch, limit=10)]
        db.adopt_recency(db.build_recency())  # what the browser's census does
        again = db.list_summaries(ListQuery.from_options(order_by_last_active=True), limit=10, provisional=True)
        assert again.exact and _ids(again) == _ids(rows)
    finally:
        db.close()


def test_a_cache_that_leaves_out_a_recent_session_never_hides_it(store, db_path, tmp_path, monkeypatch):
    """A cache file that omits a session written recently (damaged, or made by a bug) once hid
    it from every page -- another row listed twice -- and was written back on exit."""
    cache = recency.cache_file(db_path, tmp_path / "cache")
    first = _reader(db_path, cache)
    _first_pages(first, monkeypatch)
    first.close()
    data = json.loads(cache.read_text())
    newest_id = data["ids"][0]
    keep = [i for i, sid in enumerate(data["ids"]) if sid != newest_id]
    data["ids"] = [data["ids"][i] for i in keep]
    data["newest"] = [data["newest"][i] for i in keep]
    cache.write_text(json.dumps(data))

    reader = _reader(db_path, cache)
    try:
        _first_pages(reader, monkeypatch)  # every exact page is the general query's
        everything = reader.list_sessions_rich(order_by_last_active=True, limit=50)
        ids = [r["id"] for r in everything]
        assert ids[0] == newest_id and len(ids) == len(set(ids))
    finally:
        reader.close()
    assert json.loads(cache.read_text())["ids"][0] == newest_id, "the truth is kept, not the lie"


# ---------------------------------------------------------------------------- a first run's guess
#
# With no cache (a first run, a cache of another file) a provisional page rests on a guess of
# the order -- the sessions of the newest messages written -- while the index is built on
# another connection and adopted.


def _imported_out_of_order(path: Path) -> None:
    """An import wrote the most recently active conversation first (its messages have the
    lowest ids; it started long ago), then twelve quiet ones."""
    db = SessionDB(path)
    base = 1767000000.0
    _add(db, "busy", base - 100000, [base + 100000, base + 100001])
    for n in range(12):
        _add(db, f"quiet{n:02d}", base + 1000 * n, [base + 1000 * n + 10 + i for i in range(2)])
    db.close()


def test_a_first_provisional_page_rests_on_a_guess_until_a_built_index_is_adopted(tmp_path, monkeypatch):
    path = tmp_path / "imported.db"
    _imported_out_of_order(path)
    monkeypatch.setattr(recency.RecencyWalk, "GUESS_ROWS", 10)  # the five sessions written last
    cache = recency.cache_file(path, tmp_path / "cache")
    reader = _reader(path, cache)
    helper = SessionDB(path, read_only=True)
    try:
        statements: list[str] = []
        reader._conn.set_trace_callback(statements.append)
        guessed = reader.list_summaries(ListQuery.from_options(order_by_last_active=True), limit=5, provisional=True)
        reader._conn.set_trace_callback(None)
        assert not guessed.exact and reader.recency_guessed
        assert not _built(statements), "no seek per session on the first page"
        assert not cache.exists(), "a guess is never kept"
        expected = [r["id"] for r in _general(reader, monkeypatch, limit=5)]
        assert expected[0] == "busy" and "busy" not in _ids(guessed), "the guess met only the last written"
        reader.adopt_recency(helper.build_recency())
        assert not reader.recency_guessed and cache.exists()
        adopted = reader.list_summaries(ListQuery.from_options(order_by_last_active=True), limit=5, provisional=True)
        assert adopted.exact and _ids(adopted) == expected
    finally:
        helper.close()
        reader.close()


def test_a_page_asked_for_exactly_replaces_a_guess_with_a_build(tmp_path, monkeypatch):
    path = tmp_path / "imported.db"
    _imported_out_of_order(path)
    monkeypatch.setattr(recency.RecencyWalk, "GUESS_ROWS", 10)
    reader = _reader(path, recency.cache_file(path, tmp_path / "cache"))
    try:
        reader.list_summaries(ListQuery.from_options(order_by_last_active=True), limit=5, provisional=True)
        assert reader.recency_guessed
        rows = reader.list_sessions_rich(order_by_last_active=True, limit=5)
        assert not reader.recency_guessed
        assert rows == _general(reader, monkeypatch, limit=5)
    finally:
        reader.close()


def test_the_guess_is_each_session_s_newest_valid_time_among_the_last_messages_written(tmp_path, monkeypatch):
    """The guess asks SQLite for each session's newest time among the newest ``GUESS_ROWS``
    messages (a row per session, not the messages themselves); it is what reading those
    messages one by one gives: times that are not numbers or fall after 2100 ignored, a
    session whose every time is so left out, ties by id, and the newest message's id kept."""
    path = tmp_path / "odd.db"
    db = SessionDB(path)
    base = 1767000000.0
    _add(db, "old", base - 5000, [base - 4000, base - 3999])  # beyond the guessed rows
    _add(db, "a", base, [base + 10, base + 30, base + 20])
    _add(db, "b", base, [base + 30])  # ties with "a"
    _add(db, "c", base, [base + 40, base + 50])
    _add(db, "d", base, [base + 60])
    db._execute_write(lambda c: (
        # c's newest time is text, d's only time lies after 2100, a message of "a" is a blob
        c.execute("UPDATE messages SET timestamp = '2027-01-01' WHERE session_id = 'c' AND timestamp = ?", (base + 50,)),
        c.execute("UPDATE messages SET timestamp = ? WHERE session_id = 'd'", (4_200_000_000.0,)),
        c.execute("UPDATE messages SET timestamp = x'00' WHERE session_id = 'a' AND timestamp = ?", (base + 20,)),
    ))
    db.close()
    monkeypatch.setattr(recency.RecencyWalk, "GUESS_ROWS", 7)  # the messages of a, b, c and d
    conn = sqlite3.connect(path)
    try:
        walk = recency.RecencyWalk()
        walk.guess(conn)
        last = conn.execute(
            "SELECT id, session_id, timestamp FROM messages ORDER BY id DESC LIMIT ?", (7,)).fetchall()
        newest: dict = {}
        for _id, sid, ts in last:
            if isinstance(ts, (int, float)) and ts < recency.EPOCH_2100:
                newest[sid] = max(newest.get(sid, float("-inf")), float(ts))
        assert walk.order == sorted((-ts, sid) for sid, ts in newest.items())
        assert walk.order == [(-(base + 40), "c"), (-(base + 30), "a"), (-(base + 30), "b")]
        assert walk.newest == {"c": base + 40, "a": base + 30, "b": base + 30}
        assert walk.top == tuple(last[0]) and walk.guessed and walk.bound == float("-inf")
    finally:
        conn.close()
