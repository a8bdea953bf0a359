"""Four writer processes + the browser acting from its keys, 10 s: nothing lost.

The long run (60 s) is ``python -m bench.reliability``. The writers are real processes of
the gateway simulator writing as fast as the lock allows, each logging every write after
the commit returned. The browser is the real app under Pilot with live refresh and real
worker threads; during the run it renames (``r`` + modal), deletes (``d`` + ``y``) and
exports (``e`` + modal, every scope, JSONL and Markdown) and undoes a delete (``u``) --
renames and deletes only on sessions the test created beforehand, so the writers' own logs
stay the whole truth about their sessions. Afterwards (:func:`bench.reliability.run_contention` lists every finding):

* every logged message is in the store exactly once, with its session, role and content,
  and nothing unlogged appeared in a writer's session (``verify_simulation``);
* counters equal the rows, each FTS table has exactly the messages' rows and text, both FTS
  ``integrity-check``\\ s and ``PRAGMA integrity_check`` pass;
* no writer saw an error;
* each rename either landed (modal closed, "Renamed …", the title stored) or was reported in
  the modal with nothing stored -- never both; each confirmed delete removed exactly that
  session, an undone delete is back with every column of its row and messages, and the
  other pre-created sessions are unchanged;
* no warning or error notification appeared;
* every export file parses and agrees with the store;
* the browser's list ends up showing what the store holds, without a restart.
"""

from __future__ import annotations

from pathlib import Path

from bench.reliability import run_contention


async def test_contention_four_writers_and_ui_actions_lose_nothing(tmp_path: Path) -> None:
    result = await run_contention(tmp_path / "home", writers=4, seconds=10.0, seed=7, renames=3, victims=3)

    assert result.problems == []
    assert result.writer_errors == 0
    # It was a real contended run: every writer wrote, and writers waited for each other.
    assert result.messages_written > 300
    assert result.messages_in_store >= result.messages_written
    assert sum(1 for wait in result.lock_waits if wait >= 5.0) > 0
    # The UI did each kind of action during the run: renames that landed and one refused
    # (another session's title, TI-2), deletes, an undo that brought a session back exactly,
    # exports.
    for kind in ("rename", "delete", "undo", "export"):
        assert result.count(kind, ok=True) >= 1, f"no {kind} succeeded: {result.ui_actions}"
    assert result.count("rename", ok=False) >= 1
