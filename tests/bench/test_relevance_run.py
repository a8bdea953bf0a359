"""The relevance bench end to end on a small generated corpus: the needles are planted into a
copy (the corpus itself is never written), each compression chain is one conversation, and
the ranks are those of the conversations as each method orders them. No timing is asserted."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from bench.needle_model import A, U, needle
from bench.needles import NEEDLES
from bench.relevance import (
    MAX_RANK,
    browser_rank,
    measure,
    planted_copy,
    planted_ids,
    scores,
    store_now,
    summarize,
)
from bench.run import BENCH_NOW
from hermes_state import SessionDB
from hermes_state.conversation import conversation_roots
from hermes_workload.corpus import generate_corpus

REPO = Path(__file__).resolve().parents[2]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("relevance") / "corpus.db"
    generate_corpus(path, messages=1500, seed=3, now=BENCH_NOW)
    return path


@pytest.fixture(scope="module")
def now(corpus: Path) -> float:
    return store_now(corpus)


@pytest.fixture(scope="module")
def planted(corpus: Path, now: float) -> Path:
    return planted_copy(corpus, NEEDLES, now, quiet=True)


def _open(path: Path):
    from hermes_tui.data import BrowserData

    return BrowserData(path), SessionDB(path, read_only=True)


def test_planting_writes_a_copy_and_leaves_the_corpus_as_it_was(corpus: Path, tmp_path: Path) -> None:
    before = _digest(corpus)
    with sqlite3.connect(corpus) as conn:
        sessions = conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
    copy = planted_copy(corpus, NEEDLES[:3], BENCH_NOW, quiet=True)
    try:
        assert copy != corpus and copy.parent == corpus.parent
        assert _digest(corpus) == before
        ids = planted_ids(NEEDLES[:3], BENCH_NOW)
        with sqlite3.connect(copy) as conn:
            assert conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == \
                sessions + sum(len(p.sessions) for p in ids.values())
        # A second call finds the cached copy instead of planting again.
        mtime = copy.stat().st_mtime_ns
        assert planted_copy(corpus, NEEDLES[:3], BENCH_NOW, quiet=True) == copy
        assert copy.stat().st_mtime_ns == mtime
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{copy}{suffix}").unlink(missing_ok=True)


def test_a_compression_needle_is_one_conversation_at_its_age(planted: Path, now: float) -> None:
    chains = [n for n in NEEDLES if n.split is not None]
    ids = planted_ids(chains, now)
    db = SessionDB(planted, read_only=True)
    try:
        for n in chains:
            parent, child = ids[n.key].sessions
            assert conversation_roots(db.store, [child]) == {child: parent}
            row = db.get_session(parent)
            assert row["end_reason"] == "compression"
            assert abs((now - row["started_at"]) / 86400 - n.age_days) < 0.25
            assert db.get_session(child)["parent_session_id"] == parent
            assert len(db.get_messages(parent)) + len(db.get_messages(child)) == len(n.messages)
    finally:
        db.close()


def test_an_untitled_needle_is_planted_without_a_title_and_so_is_its_continuation(corpus: Path) -> None:
    untitled = needle("untitled-chain", "en", "telegram", 12, "",
                      [U("the zeppelin is in the big hangar"), A("it leaves on tuesday"),
                       U("and comes back?"), A("on friday")],
                      {"prefix": "zeppel", "words": "zeppelin hangar", "vague": "big hangar",
                       "spread": "zeppelin friday"}, split_turn=2)
    copy = planted_copy(corpus, [untitled], BENCH_NOW, quiet=True)
    try:
        parent, child = planted_ids([untitled], BENCH_NOW)[untitled.key].sessions
        with sqlite3.connect(copy) as conn:
            titles = dict(conn.execute("SELECT id, title FROM sessions WHERE id IN (?, ?)", (parent, child)))
        assert titles == {parent: None, child: None}
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{copy}{suffix}").unlink(missing_ok=True)


def test_message_level_rankings_find_what_one_message_holds_and_never_a_spread_query(planted: Path, now: float) -> None:
    store, db = _open(planted)
    try:
        outcomes = measure(store, db, NEEDLES, planted_ids(NEEDLES, now))
    finally:
        db.close()
        store.close()
    assert len(outcomes) == 4 * len(NEEDLES)
    for o in outcomes:
        if o.kind == "spread":
            assert o.ranks["bm25"] is None and o.ranks["newest"] is None, o
        else:
            assert o.ranks["bm25"] is not None and o.ranks["newest"] is not None, o
        assert o.ranks["browser"] is None or 1 <= o.ranks["browser"] <= MAX_RANK
    summary = summarize(outcomes)
    assert summary["kind"]["spread"]["bm25"]["s@10"] == 0.0
    assert summary["kind"]["words"]["bm25"]["s@10"] > 0.9  # distinctive words in a small corpus
    assert summary["kind"]["all"]["n"] == len(outcomes)


def test_newest_first_ranks_the_newest_needle_first_and_counts_a_chain_once(corpus: Path) -> None:
    """Two conversations share a word nothing else has; the newer one is a compression chain
    whose two sessions both hold it. Newest first, the chain is rank 1 and the older needle
    rank 2 (not 3: a conversation counts once, at its first hit)."""
    banner = U("the quokkafest banner needs a new font") + A("I changed the quokkafest banner font")
    colour = U("and the colour") + A("done")
    newer = needle("newer", "en", "cli", 1, "Quokkafest newer", [banner, colour, banner],
                   {"prefix": "quokk", "words": "banner font", "vague": "banner font", "spread": "quokkafest colour"},
                   split_turn=2)
    older = needle("older", "en", "telegram", 200, "Quokkafest older", [banner, colour],
                   {"prefix": "quokk", "words": "banner font", "vague": "banner font", "spread": "quokkafest colour"})
    copy = planted_copy(corpus, [newer, older], BENCH_NOW, quiet=True)
    store, db = _open(copy)
    try:
        ids = planted_ids([newer, older], BENCH_NOW)
        outcomes = {o.key: o for o in measure(store, db, [newer, older], ids, kinds=["prefix"])}
    finally:
        db.close()
        store.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{copy}{suffix}").unlink(missing_ok=True)
    assert outcomes["newer"].ranks["newest"] == 1
    assert outcomes["older"].ranks["newest"] == 2
    assert {outcomes["newer"].ranks["bm25"], outcomes["older"].ranks["bm25"]} == {1, 2}
    assert {outcomes["newer"].ranks["browser"], outcomes["older"].ranks["browser"]} == {1, 2}


def test_the_browser_rank_is_the_panes_order_title_rows_first(corpus: Path) -> None:
    """The pane shows the conversations of its "Sessions by title or id" rows above the hit
    groups, and the browser's rank counts them so. ``zorblax``: the conversation titled with it
    names it once in a long message, and an untitled one is all about it -- among the hit groups
    the titled one is second, in the pane first (its title row), the untitled one second. ``quuxly``:
    a conversation whose title holds it and whose messages do not is shown above the one whose
    messages hold it, which the hit groups alone rank first."""
    filler = " ".join(["the rest of this message is about other things entirely"] * 12)
    titled = needle("pane-titled", "en", "cli", 30, "Zorblax rollout notes",
                    [U(f"one line on zorblax among much else: {filler}"), A(f"noted. {filler}")],
                    {"prefix": "zorbl", "words": "zorblax", "vague": "zorblax", "spread": "zorblax noted"})
    about = needle("pane-about", "en", "telegram", 20, "",
                   [U("zorblax zorblax: the zorblax is down"), A("restart the zorblax"),
                    U("the zorblax is back"), A("zorblax fixed")],
                   {"prefix": "zorbl", "words": "zorblax", "vague": "zorblax", "spread": "zorblax fixed"})
    title_only = needle("pane-title-only", "en", "cli", 40, "Quuxly planning",
                        [U("what should we plan for the spring"), A("a garden and a trip")],
                        {"prefix": "quux", "words": "garden", "vague": "spring", "spread": "garden trip"})
    hits_only = needle("pane-hits-only", "en", "slack", 10, "Weekend errands",
                       [U("buy quuxly at the shop"), A("added quuxly to the list")],
                       {"prefix": "quux", "words": "quuxly shop", "vague": "quuxly", "spread": "quuxly list"})
    needles = [titled, about, title_only, hits_only]
    copy = planted_copy(corpus, needles, BENCH_NOW, quiet=True)
    store, db = _open(copy)
    try:
        ids = planted_ids(needles, BENCH_NOW)
        got = {(key, query): browser_rank(store, query, ids[key].root)
               for key, query in (("pane-titled", "zorblax"), ("pane-about", "zorblax"),
                                  ("pane-hits-only", "quuxly"))}
    finally:
        db.close()
        store.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{copy}{suffix}").unlink(missing_ok=True)
    # (a) found by its title: first in the pane, second among the hit groups
    first = got["pane-titled", "zorblax"]
    assert (first["rank"], first["hits_rank"], first["title_match"]) == (1, 2, True), first
    assert "above" not in first
    about_it = got["pane-about", "zorblax"]
    assert (about_it["rank"], about_it["hits_rank"], about_it["title_match"]) == (2, 1, False), about_it
    # (the titled conversation, listed by its title, is not counted again at its hit group)
    assert about_it["shown"] == 2 and about_it["hits_shown"] == 2
    # (b) an unrelated title row counts above a needle found only by its hits
    below = got["pane-hits-only", "quuxly"]
    assert (below["rank"], below["hits_rank"], below["title_rows"]) == (2, 1, 1), below
    assert below["above"] == [{"row": "title", "label": "Quuxly planning", "source": "cli",
                               "id": ids["pane-title-only"].root, "hits": 0, "across": 0}]


def test_scores_are_success_at_k_and_mean_reciprocal_rank() -> None:
    got = scores([1, 3, None, 12])
    assert got == {"s@1": 0.25, "s@5": 0.5, "s@10": 0.5, "mrr": pytest.approx((1 + 1 / 3 + 1 / 12) / 4)}
    assert scores([]) == {"s@1": 0.0, "s@5": 0.0, "s@10": 0.0, "mrr": 0.0}


def test_the_command_prints_the_tables_and_writes_the_json(corpus: Path, planted: Path, tmp_path: Path) -> None:
    out = tmp_path / "rel.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench.relevance", "--db", str(corpus), "--kinds", "words,spread",
         "--json", str(out), "--quiet"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert "By kind" in proc.stdout and "exact bm25" in proc.stdout
    data = json.loads(out.read_text())
    assert data["planted"] == str(planted)
    assert {o["kind"] for o in data["outcomes"]} == {"words", "spread"}


@pytest.mark.parametrize("args, message", [
    (["--db", "/nonexistent/state.db"], "no store at"),
    (["--kinds", "fuzzy"], "unknown kind"),
])
def test_bad_arguments_say_so_in_one_line(args: list[str], message: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "bench.relevance", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == ""
