"""The relevance bench's needle set holds to its rules: enough hand-written
conversations, English and CJK, ages spread over the year, compression chains and gateway
chats, and four queries each -- the spread kind never answerable by a single message."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from bench.needle_model import (
    AGE_BUCKETS,
    KINDS,
    A,
    NeedleError,
    U,
    age_bucket,
    holds_all,
    loosely_holds_all,
    needle,
    query_words,
    set_digest,
    validate,
    validate_needle,
)
from bench.needles import NEEDLES


def test_the_set_has_forty_conversations_and_ten_in_cjk() -> None:
    langs = Counter(n.lang for n in NEEDLES)
    assert len(NEEDLES) >= 40
    assert sum(v for k, v in langs.items() if k != "en") >= 10
    assert {"zh", "ja", "ko"} <= set(langs)


def test_every_needle_has_four_non_empty_queries() -> None:
    for n in NEEDLES:
        assert set(n.queries) == set(KINDS), n.key
        assert all(query_words(n.queries[k]) for k in KINDS), n.key


def test_no_single_message_holds_every_word_of_a_spread_query() -> None:
    for n in NEEDLES:
        spread = n.queries["spread"]
        assert not any(loosely_holds_all(m.searchable(), spread) for m in n.messages), n.key
        # ... while the conversation as a whole holds every word.
        assert holds_all("\n".join(m.content or "" for m in n.messages), spread), n.key


def test_words_and_vague_queries_are_held_by_one_message() -> None:
    for n in NEEDLES:
        for kind in ("words", "vague"):
            assert any(holds_all(m.content or "", n.queries[kind]) for m in n.messages), (n.key, kind)


def test_ages_spread_from_days_to_a_year_in_every_bucket() -> None:
    ages = [n.age_days for n in NEEDLES]
    assert min(ages) <= 3 and max(ages) >= 340
    buckets = Counter(age_bucket(a) for a in ages)
    assert set(buckets) == {label for _, label in AGE_BUCKETS}
    assert min(buckets.values()) >= 4


def test_some_needles_span_sessions_and_some_are_gateway_chats() -> None:
    shapes = Counter(n.shape for n in NEEDLES)
    assert shapes["compression"] >= 4 and shapes["gateway"] >= 4
    assert any(n.shape == "compression" and n.lang != "en" for n in NEEDLES)


def _needle(**queries: str):
    base = {"prefix": "zeppel", "words": "zeppelin hangar", "vague": "big hangar",
            "spread": "zeppelin tuesday"}
    base.update(queries)
    return needle("test", "en", "cli", 10, "Zeppelin test",
                  [U("the zeppelin is in the big hangar"), A("it leaves on tuesday"),
                   U("ok"), A("fine")], base)


def test_a_valid_needle_passes() -> None:
    validate_needle(_needle())


def test_a_spread_query_one_message_holds_fails_loudly() -> None:
    with pytest.raises(NeedleError, match="holds every word of the spread query"):
        validate_needle(_needle(spread="zeppelin hangar"))


def test_a_spread_word_inside_a_longer_word_still_counts_as_held() -> None:
    """The check is by substring: ``hang`` inside ``hangar`` would match as a typed prefix."""
    with pytest.raises(NeedleError, match="spread query"):
        validate_needle(_needle(spread="zeppelin hang"))


def test_a_prefix_query_must_be_partly_typed() -> None:
    with pytest.raises(NeedleError, match="not a partly typed one"):
        validate_needle(_needle(prefix="zeppelin"))


def test_a_words_query_no_message_holds_fails() -> None:
    with pytest.raises(NeedleError, match="no single message holds every word"):
        validate_needle(_needle(words="zeppelin tuesday"))


def test_an_empty_query_fails() -> None:
    with pytest.raises(NeedleError, match="empty"):
        validate_needle(_needle(vague="  "))


def test_a_set_too_small_or_without_cjk_fails() -> None:
    with pytest.raises(NeedleError, match="at least 40"):
        validate([n for n in NEEDLES if n.lang == "en"][:30])
    with pytest.raises(NeedleError, match="CJK needles"):
        validate([n for n in NEEDLES if n.lang == "en"], min_needles=10)


def test_titles_may_not_repeat_but_many_conversations_may_have_none() -> None:
    titled = [n for n in NEEDLES if n.lang == "en"][:10]
    untitled = [replace(n, title="") for n in titled]
    validate(untitled, min_needles=10, min_cjk=0)
    with pytest.raises(NeedleError, match="titles repeat"):
        validate([titled[0], replace(titled[1], title=titled[0].title)], min_needles=2, min_cjk=0)


def test_the_digest_changes_with_the_text() -> None:
    assert set_digest(NEEDLES) == set_digest(list(NEEDLES))
    assert set_digest(NEEDLES) != set_digest(NEEDLES[:-1])
