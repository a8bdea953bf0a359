"""The fourth held-out set (d) holds to the needle model's full check and to its own brief:
40 conversations (about 26 English and 14 CJK in all three languages), eight in every age
bucket, varied sources, at least five compression chains, some untitled conversations, half of
them about what the generated corpus talks about too, and nothing shared with the other sets."""

from __future__ import annotations

from collections import Counter

from bench.needle_model import AGE_BUCKETS, GATEWAY_SOURCES, KINDS, age_bucket, loosely_holds_all, set_digest, validate
from bench.needles import NEEDLES
from bench.needles_b import NEEDLES_B
from bench.needles_c import NEEDLES_C
from bench.needles_d import CORPUS_TOPICS, NEEDLES_D


def test_set_d_passes_the_models_full_check_with_forty_conversations() -> None:
    validate(NEEDLES_D, min_needles=40, min_cjk=14)
    assert len(NEEDLES_D) == 40


def test_set_d_is_two_thirds_english_and_a_third_chinese_japanese_korean() -> None:
    langs = Counter(n.lang for n in NEEDLES_D)
    assert langs["en"] == 26
    assert (langs["zh"], langs["ja"], langs["ko"]) == (6, 4, 4)


def test_set_d_fills_every_age_bucket_from_a_day_to_a_year() -> None:
    ages = [n.age_days for n in NEEDLES_D]
    assert min(ages) == 1 and max(ages) == 360
    buckets = Counter(age_bucket(a) for a in ages)
    assert set(buckets) == {label for _, label in AGE_BUCKETS}
    assert min(buckets.values()) >= 6


def test_set_d_comes_from_cli_tui_and_several_gateways_with_chains_in_both_scripts() -> None:
    sources = {n.source for n in NEEDLES_D}
    assert {"cli", "tui"} <= sources
    assert len(sources & set(GATEWAY_SOURCES)) >= 5
    chains = [n for n in NEEDLES_D if n.shape == "compression"]
    assert len(chains) >= 5
    assert any(n.lang != "en" for n in chains) and any(n.source in GATEWAY_SOURCES for n in chains)


def test_some_set_d_conversations_were_never_titled() -> None:
    untitled = [n for n in NEEDLES_D if not n.title]
    assert 3 <= len(untitled) <= 8


def test_no_single_message_holds_every_word_of_a_set_d_spread_query() -> None:
    for n in NEEDLES_D:
        spread = n.queries["spread"]
        assert not any(loosely_holds_all(m.searchable(), spread) for m in n.messages), n.key


def test_set_d_shares_no_key_title_query_or_planted_copy_with_the_other_sets() -> None:
    others = NEEDLES + NEEDLES_B + NEEDLES_C
    assert not {n.key for n in others} & {n.key for n in NEEDLES_D}
    assert not {n.title for n in others} & {n.title for n in NEEDLES_D if n.title}
    assert not {n.queries[k] for n in others for k in KINDS} & {n.queries[k] for n in NEEDLES_D for k in KINDS}
    digests = {set_digest(s) for s in (NEEDLES, NEEDLES_B, NEEDLES_C, NEEDLES_D)}
    assert len(digests) == 4


def test_half_of_set_d_is_about_the_corpus_topics_and_half_about_everyday_things() -> None:
    keys = {n.key for n in NEEDLES_D}
    assert CORPUS_TOPICS <= keys
    assert len(CORPUS_TOPICS) == 20
    english = [n for n in NEEDLES_D if n.lang == "en"]
    assert sum(1 for n in english if n.key in CORPUS_TOPICS) == 13


def test_the_corpus_topic_needles_vague_words_are_words_the_generator_writes(tmp_path) -> None:
    """So those vague queries compete with generated messages; checked on a small generated
    corpus, every word on its own (as set c's are)."""
    import sqlite3

    from bench.run import BENCH_NOW
    from hermes_state.search import FTS_TABLE
    from hermes_workload.corpus import generate_corpus

    path = tmp_path / "corpus.db"
    generate_corpus(path, messages=4000, seed=11, now=BENCH_NOW)
    words = {w for n in NEEDLES_D if n.lang == "en" and n.key in CORPUS_TOPICS for w in n.queries["vague"].split()}
    with sqlite3.connect(path) as conn:
        absent = [w for w in sorted(words) if not conn.execute(
            f"SELECT 1 FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH ? LIMIT 1", (f'"{w}"',)).fetchone()]
    assert absent == []
