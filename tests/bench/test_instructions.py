"""bench.instructions counts what it says it counts: its workloads, run without valgrind.

Counting runs under valgrind (a minute a figure); what is tested here is what each figure is
of: the call as the bench makes it, the same statements replayed through a plain cursor, and
the page's rows read alone -- the same rows the call returns.
"""

from __future__ import annotations

import shutil

import pytest

from hermes_state import SessionDB, listing
from hermes_state.visibility import INTERNAL_SOURCES
from hermes_workload.corpus import generate_corpus

from bench import instructions


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("ir") / "state.db"
    generate_corpus(path, messages=6000, seed=3, now=1767225600.0, schema=30)
    return path


@pytest.mark.parametrize("which", instructions.CALLS)
def test_the_parts_counted_are_the_call_its_statements_and_its_rows(store, which):
    db = SessionDB(store, read_only=True)
    try:
        expected = instructions._calls(db)[which]()
        rows = expected[0] if which == "listing.page" else expected
        assert len(rows) == 50
        assert instructions._workload(db, which, "call")() == expected
        replay = instructions._workload(db, which, "statements")
        changes = db._conn.total_changes
        replay()  # every statement the call ran, in one read transaction
        assert not db._conn.in_transaction and db._conn.total_changes == changes
        alone = instructions._workload(db, which, "rows")()
        assert len(alone) == 50
        # Each row of its own session (not a chain shown at its tip) is read alike -- but for
        # what the list works out after reading its rows (how each conversation ended, whether
        # it is unread, the prompt a v30 row points at by hash): not part of the row floor.
        if which == "listing.page":
            own = {r.id: r.model_copy(update={"lifecycle": None}) for r in rows if r.lineage_root_id is None}
            assert own and {r.id: r for r in alone if r.id in own} == own
        else:
            derived = ("system_prompt", "unread")
            own = {r["id"]: {k: v for k, v in r.items() if k not in derived}
                   for r in rows if "_lineage_root_id" not in r}
            assert own and {r["id"]: {k: v for k, v in r.items() if k not in derived}
                            for r in alone if r["id"] in own} == own
    finally:
        db.close()


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_a_count_is_of_the_calls_under_valgrind(store):
    """``count`` runs the workload under callgrind and gives the instructions of one call: at
    least the work of reading a page's rows. How close two counts come to each other depends on
    the machine and its valgrind (the interpreter's hash seed is fixed, addresses are not), so
    that is for the bench to report (``python -m bench.instructions``), not for a test to
    demand."""
    assert instructions.count(store, "listing.page", "rows", calls=2) > 100_000
