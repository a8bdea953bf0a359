"""A NUL in a message no longer cuts the list preview or a search snippet short.

SQLite's substr() and FTS5's highlight() both treat text as a C string; the preview now shows
the NUL as ``␀`` and goes on, the snippet carries the whole text (the browser shows its NUL
as ``␀``, as every control)."""

from __future__ import annotations

import pytest

from hermes_state import SessionDB


@pytest.fixture(params=[16, 30], ids=["v16", "v30"])
def store(request, tmp_path):
    path = tmp_path / "state.db"
    if request.param == 30:
        from hermes_workload.schema_v30 import create_v30_store

        create_v30_store(path)
    db = SessionDB(path)
    yield db
    db.close()


def preview_of(db: SessionDB, session_id: str) -> str:
    return next(row["preview"] for row in db.list_sessions_rich(limit=50) if row["id"] == session_id)


def test_the_preview_shows_a_nul_and_what_follows_it(store):
    store.create_session("s-nul", "cli")
    store.append_message("s-nul", "user", "before\x00after the nul, and \\u0000 as text stays text")
    store.create_session("s-late", "cli")
    store.append_message("s-late", "user", "x" * 70 + "\x00 past the preview")
    store.create_session("s-cjk", "cli")
    store.append_message("s-cjk", "user", "桂林" * 40 + "\x00")
    assert preview_of(store, "s-nul") == "before\u2400after the nul, and \\u0000 as text stays text"
    assert preview_of(store, "s-late") == "x" * 60 + "..."  # a NUL past the window changes nothing
    assert preview_of(store, "s-cjk") == "桂林" * 30 + "..."


def test_a_preview_of_text_stored_as_a_blob_is_text(store):
    """Nothing enforces a column's type: another tool may store a message as a blob."""
    store.create_session("s-blob", "cli")
    store.append_message("s-blob", "user", "placeholder")
    store._execute_write(lambda c: c.execute(
        "UPDATE messages SET content = ? WHERE session_id = 's-blob'", (b"bytes \x00 and more",)))
    assert preview_of(store, "s-blob") == "bytes \u2400 and more"
    store._execute_write(lambda c: c.execute(
        "UPDATE messages SET content = ? WHERE session_id = 's-blob'", (b"plain bytes",)))
    assert preview_of(store, "s-blob") == "plain bytes"


@pytest.mark.parametrize("query, marked", [
    ("zebra", ["zebra"]),
    ("zeb*", ["zebra"]),
    ('"marker zebra"', ["marker zebra"]),
    ("after", ["after"]),
])
def test_a_snippet_keeps_the_text_after_a_nul(store, query, marked):
    store.create_session("s1", "cli")
    store.append_message("s1", "user", "before\x00after the nul marker zebra words")
    result = store.search(query)
    assert result.error is None and result.hits, result
    [hit] = result.hits
    assert hit.snippet.startswith("before\x00after the nul marker zebra words"), repr(hit.snippet)
    assert [hit.snippet[a:b] for a, b in hit.spans] == marked
