"""``hermes_state.sql_ids``: ids asked for in ``IN (...)`` lists a statement's worth at a time."""

from __future__ import annotations

import sqlite3

import pytest

from hermes_state.sql_ids import SQL_IDS_PER_STATEMENT, chunked, in_chunks


def test_the_chunk_size_stays_under_sqlites_oldest_parameter_limit():
    # SQLite before 3.32 binds at most 999 parameters; room is left for a few more.
    assert 0 < SQL_IDS_PER_STATEMENT < 999


@pytest.mark.parametrize("count", [1, 499, 500, 501, 1000, 1234])
def test_chunks_cover_every_item_once_in_order(count):
    items = [f"id-{n}" for n in range(count)]
    chunks = list(chunked(items))
    assert [item for chunk in chunks for item in chunk] == items
    assert all(0 < len(chunk) <= SQL_IDS_PER_STATEMENT for chunk in chunks)
    assert len(chunks) == -(-count // SQL_IDS_PER_STATEMENT)


def test_a_size_given_sets_the_longest_chunk():
    assert list(chunked(range(7), 3)) == [[0, 1, 2], [3, 4, 5], [6]]


def test_any_iterable_is_chunked_as_a_list_of_its_items():
    assert list(chunked((n for n in range(5)), 2)) == [[0, 1], [2, 3], [4]]


def test_a_stream_is_read_a_chunk_at_a_time():
    """A streamed listing (every session of a store) is never held whole: the first chunk
    comes after its own items are read, not after all of them."""
    read: list[int] = []

    def stream():
        for n in range(10):
            read.append(n)
            yield n

    chunks = chunked(stream(), 3)
    assert next(chunks) == [0, 1, 2]
    assert read == [0, 1, 2]
    assert list(chunks) == [[3, 4, 5], [6, 7, 8], [9]]


def test_the_placeholder_count_matches_each_chunk():
    for chunk, marks in in_chunks(list(range(1234))):
        assert marks == ",".join("?" * len(chunk))
        assert marks.count("?") == len(chunk)


def test_a_mark_per_item_makes_a_values_list_of_pairs():
    pairs = [("a", "b"), ("c", "d"), ("e", "f")]
    assert list(in_chunks(pairs, 2, mark="(?, ?)")) == [
        ([("a", "b"), ("c", "d")], "(?, ?),(?, ?)"),
        ([("e", "f")], "(?, ?)"),
    ]


def test_an_empty_input_yields_nothing():
    assert list(chunked([])) == []
    assert list(in_chunks([])) == []
    assert list(in_chunks(iter(()))) == []


def test_a_size_below_one_is_refused():
    with pytest.raises(ValueError):
        list(chunked([1, 2], 0))


def test_a_query_over_more_ids_than_one_chunk_returns_every_row(tmp_path):
    conn = sqlite3.connect(tmp_path / "ids.db")
    try:
        conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, n INTEGER)")
        conn.executemany("INSERT INTO sessions VALUES (?, ?)", ((f"s{n:05d}", n) for n in range(3000)))
        conn.commit()
        wanted = [f"s{n:05d}" for n in range(0, 4000, 2)]  # 2,000 ids, 500 of them not stored
        found: dict[str, int] = {}
        statements = 0
        for chunk, marks in in_chunks(wanted):
            statements += 1
            # A parameter beside the ids, as many call sites bind.
            found.update(conn.execute(f"SELECT id, n FROM sessions WHERE id IN ({marks}) AND n >= ?", [*chunk, 0]))
        assert statements == 2000 // SQL_IDS_PER_STATEMENT
        assert found == {f"s{n:05d}": n for n in range(0, 3000, 2)}
    finally:
        conn.close()
