"""The held-out needle sets (b, and c in the corpus's own words) hold to the needle model's rules and to its own brief: at
least 24 conversations (16 English, 8 CJK in all three languages), ages over the whole year,
compression chains and gateway chats, and nothing shared with the first set -- a held-out set
that repeated the first one's queries would measure the tuning, not the search."""

from __future__ import annotations

from collections import Counter

from bench.needle_model import AGE_BUCKETS, KINDS, age_bucket, holds_all, loosely_holds_all, set_digest, validate
from bench.needles import NEEDLES
from bench.needles_b import NEEDLES_B
from bench.needles_c import NEEDLES_C


def test_the_held_out_set_validates_with_sixteen_english_and_eight_cjk_conversations() -> None:
    validate(NEEDLES_B, min_needles=24, min_cjk=8)
    langs = Counter(n.lang for n in NEEDLES_B)
    assert langs["en"] >= 16
    assert sum(v for k, v in langs.items() if k != "en") >= 8
    assert {"zh", "ja", "ko"} <= set(langs)


def test_no_single_message_holds_every_word_of_a_held_out_spread_query() -> None:
    for n in NEEDLES_B:
        spread = n.queries["spread"]
        assert not any(loosely_holds_all(m.searchable(), spread) for m in n.messages), n.key
        assert holds_all("\n".join(m.content or "" for m in n.messages), spread), n.key


def test_held_out_ages_fill_every_bucket_from_a_day_to_a_year() -> None:
    ages = [n.age_days for n in NEEDLES_B]
    assert min(ages) <= 3 and max(ages) >= 340
    buckets = Counter(age_bucket(a) for a in ages)
    assert set(buckets) == {label for _, label in AGE_BUCKETS}
    assert min(buckets.values()) >= 4


def test_held_out_set_has_chains_and_gateway_chats_in_both_scripts() -> None:
    shapes = Counter(n.shape for n in NEEDLES_B)
    assert shapes["compression"] >= 4 and shapes["gateway"] >= 4
    assert any(n.shape == "compression" and n.lang != "en" for n in NEEDLES_B)
    assert {"telegram", "discord"} <= {n.source for n in NEEDLES_B}


def test_the_held_out_set_shares_no_key_title_or_query_with_the_first() -> None:
    assert not {n.key for n in NEEDLES} & {n.key for n in NEEDLES_B}
    assert not {n.title for n in NEEDLES} & {n.title for n in NEEDLES_B}
    first = {n.queries[k] for n in NEEDLES for k in KINDS}
    assert not first & {n.queries[k] for n in NEEDLES_B for k in KINDS}


def test_the_two_sets_plant_into_different_cached_copies() -> None:
    """The planted copy is named by the set's digest, so the two sets never share one."""
    assert set_digest(NEEDLES_B) != set_digest(NEEDLES)


def test_the_corpus_vocabulary_set_validates_and_is_apart_from_the_others() -> None:
    validate(NEEDLES_C, min_needles=24, min_cjk=8)
    assert {"zh", "ja", "ko"} <= {n.lang for n in NEEDLES_C}
    assert {age_bucket(n.age_days) for n in NEEDLES_C} == {label for _, label in AGE_BUCKETS}
    assert sum(1 for n in NEEDLES_C if n.shape == "compression") >= 2
    others = NEEDLES + NEEDLES_B
    assert not {n.key for n in others} & {n.key for n in NEEDLES_C}
    assert not {n.title for n in others} & {n.title for n in NEEDLES_C}
    assert not {n.queries[k] for n in others for k in KINDS} & {n.queries[k] for n in NEEDLES_C for k in KINDS}
    assert len({set_digest(NEEDLES), set_digest(NEEDLES_B), set_digest(NEEDLES_C)}) == 3



def test_the_corpus_vocabulary_sets_vague_words_are_words_the_generator_writes(tmp_path) -> None:
    """The point of set c: its English vague queries are made of words the generated corpus
    itself writes, so they compete with generated messages (set b's everyday words mostly
    matched the needle alone). Checked on a small generated corpus, every word on its own."""
    import sqlite3

    from bench.run import BENCH_NOW
    from hermes_state.search import FTS_TABLE
    from hermes_workload.corpus import generate_corpus

    path = tmp_path / "corpus.db"
    generate_corpus(path, messages=4000, seed=11, now=BENCH_NOW)
    words = {w for n in NEEDLES_C if n.lang == "en" for w in n.queries["vague"].split()}
    with sqlite3.connect(path) as conn:
        absent = [w for w in sorted(words) if not conn.execute(
            f"SELECT 1 FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH ? LIMIT 1", (f'"{w}"',)).fetchone()]
    assert absent == []
