"""``python -m bench.relevance --needles b`` measures the held-out set: its own planted copy
(named by the set's digest, beside the first set's, the corpus untouched), its own queries, and
for a query whose conversation is not first, what the browser showed above it."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.needle_model import set_digest
from bench.needles import NEEDLES
from bench.needles_b import NEEDLES_B
from bench.relevance import NEEDLE_SETS, needle_set
from bench.run import BENCH_NOW
from hermes_workload.corpus import generate_corpus

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("needle-sets") / "corpus.db"
    generate_corpus(path, messages=1500, seed=5, now=BENCH_NOW)
    return path


def _run(corpus: Path, out: Path, *extra: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.relevance", "--db", str(corpus), "--kinds", "prefix,spread",
         "--json", str(out), "--quiet", *extra],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert "By kind" in proc.stdout
    return json.loads(out.read_text())


def test_needles_b_plants_its_own_copy_and_asks_its_own_queries(corpus: Path, tmp_path: Path) -> None:
    before = hashlib.sha256(corpus.read_bytes()).hexdigest()
    held_out = _run(corpus, tmp_path / "b.json", "--needles", "b")
    first = _run(corpus, tmp_path / "a.json")
    assert hashlib.sha256(corpus.read_bytes()).hexdigest() == before
    assert set_digest(NEEDLES_B) in held_out["planted"] and set_digest(NEEDLES) in first["planted"]
    assert held_out["planted"] != first["planted"]
    assert {o["key"] for o in held_out["outcomes"]} == {n.key for n in NEEDLES_B}
    assert {o["key"] for o in first["outcomes"]} == {n.key for n in NEEDLES}
    assert {o["query"] for o in held_out["outcomes"]} == \
        {n.queries[k] for n in NEEDLES_B for k in ("prefix", "spread")}


def test_a_query_not_ranked_first_records_what_the_browser_showed_above_it(corpus: Path, tmp_path: Path) -> None:
    data = _run(corpus, tmp_path / "b.json", "--needles", "b")
    for o in data["outcomes"]:
        rank = o["ranks"]["browser"]
        if rank == 1:
            assert "above" not in o["browser"], o["query"]
        else:
            above = o["browser"]["above"]
            assert len(above) == min(3, (rank or 4) - 1, o["browser"]["shown"]), o["query"]
            # (in the pane's order: a title row may be above it with no hits of its own)
            assert all(g["row"] in ("title", "hits") for g in above), above
            assert all(isinstance(g["label"], str) and (g["row"] == "title" or g["hits"] >= 1) for g in above)


def test_an_unknown_needle_set_is_refused_in_one_line() -> None:
    proc = subprocess.run([sys.executable, "-m", "bench.relevance", "--needles", "z"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "--needles" in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_the_default_set_is_the_first_and_b_is_the_held_out_one() -> None:
    assert needle_set("a") is NEEDLES
    assert needle_set("b") is NEEDLES_B


def test_each_held_out_set_is_chosen_by_its_letter() -> None:
    from bench.needles_c import NEEDLES_C
    from bench.needles_d import NEEDLES_D

    assert needle_set("c") is NEEDLES_C
    assert needle_set("d") is NEEDLES_D
    assert NEEDLE_SETS == ("a", "b", "c", "d")


def test_the_needles_option_names_every_set_in_its_help() -> None:
    proc = subprocess.run([sys.executable, "-m", "bench.relevance", "--help"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    help_text = " ".join(proc.stdout.split())
    assert "{a,b,c,d}" in help_text and "bench/needles_d.py" in help_text

