"""The speed suite holds phrases of common words and words spread over a conversation,
the spread words to a target that grows with the store."""

from __future__ import annotations

from bench.registry import REGISTRY
from bench.run import load_suites


def _bench(key: str):
    load_suites()
    return next(b for b in REGISTRY if b.key == key)


def test_spread_words_are_held_to_30_ms_at_1m_and_60_ms_at_5m() -> None:
    spread = _bench("search.spread_words")
    assert spread.at_size(10_000).target_ms == 30.0
    assert spread.at_size(1_000_000).target_ms == 30.0
    assert spread.at_size(5_000_000).target_ms == 60.0
    assert spread.at_size(5_000_000).target_note == "≤ 60 ms"


def test_a_class_without_scaled_targets_keeps_its_target_at_every_size() -> None:
    phrase = _bench("search.common_phrase")
    assert phrase.at_size(5_000_000) is phrase and phrase.target_ms == 15.0


def test_the_phrases_the_issue_names_are_measured() -> None:
    from bench.search_suite import QUERY_CLASSES

    queries = QUERY_CLASSES["common_phrase"][3]
    assert {'"staging cluster"', '"docker deployment"', '"auth module"'} <= set(queries)
    assert all(len(q.split()) >= 2 for q in QUERY_CLASSES["spread_words"][3])
