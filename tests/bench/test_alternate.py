"""``bench.alternate`` compares an old checkout's ``hermes_state`` with this one, call by call
in one process: here the "old" checkout is this repository itself, on a small corpus."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench import alternate

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    from hermes_workload.corpus import generate_corpus

    path = tmp_path_factory.mktemp("alternate") / "state.db"
    generate_corpus(path, messages=3000, seed=2, now=1767225600.0, schema=30)
    return path


def test_searches_are_compared_side_by_side(corpus):
    lines = alternate.compare(REPO, corpus, runs=5, searches=["docker compose", "dock*"])
    assert [line.split(":")[0] for line in lines] == ["search 'docker compose'", "search 'dock*'"]
    for line in lines:
        old, new = re.search(r"old ([\d.]+) / [\d.]+ .* new ([\d.]+) / [\d.]+", line).groups()
        assert float(old) > 0 and float(new) > 0
        assert re.search(r"new/old p50 [\d.]+, SQLite [\d.]+", line)


def test_typed_words_time_every_key(corpus):
    lines = alternate.compare_typed(REPO, corpus, rounds=2, words=["dock", "kube"])
    assert lines[0].startswith("every key: old ")
    assert [line.split(":")[0] for line in lines[1:]] == ["'d'", "'do'", "'doc'", "'dock'", "'k'", "'ku'", "'kub'", "'kube'"]
