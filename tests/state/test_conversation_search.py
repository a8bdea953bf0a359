"""Search by conversation (SR-17), its stated ranking (SR-18) and empty answers that say why
(SR-19), on real stores: generated ones and upstream's v30 reference store."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_state.search import Weights, conversation_score
from hermes_state.query import highlight_pattern, highlight_terms, token_count

NOW = 1_790_000_000.0
DAY = 86400.0


@pytest.fixture
def db(tmp_path: Path):
    store = SessionDB(tmp_path / "state.db")
    yield store
    store.close()


def session(db: SessionDB, sid: str, texts: list[str], *, at: float, parent: str | None = None,
            source: str = "cli") -> list[int]:
    """A session whose messages are one minute apart from ``at``; returns their ids."""
    db.create_session(sid, source, parent_session_id=parent)
    ids = []
    for index, text in enumerate(texts):
        ids.append(db.append_message(sid, "user" if index % 2 == 0 else "assistant", text))
    db._execute_write(lambda conn: conn.execute(
        "UPDATE messages SET timestamp = ? + (id - (SELECT min(id) FROM messages WHERE session_id = ?)) * 60 "
        "WHERE session_id = ?", (at, sid, sid)))
    db._execute_write(lambda conn: conn.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (at, sid)))
    return ids


def compression_chain(db: SessionDB, root: str, first: list[str], second: list[str], at: float) -> None:
    session(db, root, first, at=at)
    db.end_session(root, "compression")
    session(db, root + "_c", second, at=at + 3600, parent=root)


def conversations(result) -> list[str]:
    """The conversations of an answer, in its order (each once)."""
    return list(dict.fromkeys(hit.conversation_id for hit in result.hits))


def search(db: SessionDB, query: str, **kw):
    kw.setdefault("now", NOW)
    return db.search(query, **kw)


# ----------------------------------------------------------------------------- SR-17 matching


def test_words_spread_over_a_compression_chain_find_it_below_a_conversation_holding_them_all(db):
    # `caddy` in turn 1 of the chain's first session, `udp rule` in turn 4 of its compression
    # child; another conversation holds all three words in one message.
    compression_chain(db, "chain", ["set up caddy as the reverse proxy", "caddy runs now"],
                      ["and the firewall?", "nothing yet", "please add a udp rule for dns", "the udp rule is added"],
                      at=NOW - 2 * DAY)
    session(db, "together", ["the caddy udp rule from yesterday broke"], at=NOW - 300 * DAY)
    session(db, "unrelated", ["caddy alone here"], at=NOW - DAY)
    result = search(db, "caddy udp rule")
    assert conversations(result) == ["together", "chain"]
    together, *spread = result.hits
    assert together.across == 0 and together.conversation_id == "together"
    # The chain's hits: the messages that hold the words between them, in both sessions.
    assert {hit.session_id for hit in spread} == {"chain", "chain_c"}
    assert all(hit.across == len(spread) == 2 and hit.conversation_id == "chain" for hit in spread)
    marked = {hit.snippet[a:b].lower() for hit in spread for a, b in hit.spans}
    assert marked == {"caddy", "udp", "rule"}
    assert result.order == "relevance" and result.conversations == 2 and result.spread_conversations == 1


def test_a_quoted_phrase_still_has_to_stand_in_one_message(db):
    session(db, "split", ["caddy config", "udp here", "and a rule there"], at=NOW - DAY)
    session(db, "phrase", ["caddy config", "we need a udp rule"], at=NOW - 2 * DAY)
    assert conversations(search(db, 'caddy "udp rule"')) == ["phrase"]
    assert set(conversations(search(db, "caddy udp rule"))) == {"split", "phrase"}


def test_not_drops_a_spread_conversation_any_of_whose_messages_holds_the_word(db):
    session(db, "clean", ["caddy config", "udp rule"], at=NOW - DAY)
    session(db, "firewalled", ["caddy config", "udp rule", "the firewall ate it"], at=NOW - DAY)
    # A message-level hit follows FTS5's rule: it does not hold the word itself.
    session(db, "message", ["caddy udp rule", "firewall later"], at=NOW - 3 * DAY)
    result = search(db, "caddy udp NOT firewall")
    assert set(conversations(result)) == {"clean", "message"}
    assert all(hit.across == 0 for hit in result.hits if hit.conversation_id == "message")


def test_an_answer_not_emptied_says_how_many_conversations_it_dropped_in_plain_words(db):
    session(db, "one", ["caddy config", "udp rule", "the firewall ate it"], at=NOW - DAY)
    assert search(db, "caddy udp NOT firewall").note == (
        "1 conversation holds every word across messages but also an excluded word")
    session(db, "two", ["caddy again", "udp rule", "firewall too"], at=NOW - 2 * DAY)
    assert search(db, "caddy udp NOT firewall").note.startswith("2 conversations hold every word")


def test_or_finds_a_conversation_matching_either_alternative_across_messages(db):
    session(db, "first", ["caddy config", "udp rule"], at=NOW - DAY)
    session(db, "second", ["nginx config", "proxy pass"], at=NOW - 2 * DAY)
    session(db, "neither", ["caddy config", "proxy pass"], at=NOW - 3 * DAY)
    assert set(conversations(search(db, "caddy udp OR nginx proxy"))) == {"first", "second"}


def test_a_rewound_message_never_makes_a_conversation_match(upstream_copy):
    db = SessionDB(upstream_copy(30))
    try:
        session(db, "rewound", ["caddy config", "udp rule"], at=NOW - DAY)
        session(db, "kept", ["caddy config", "a udp rule"], at=NOW - 2 * DAY)
        assert set(conversations(search(db, "caddy udp"))) == {"rewound", "kept"}
        db._execute_write(lambda conn: conn.execute(
            "UPDATE messages SET active = 0 WHERE session_id = 'rewound' AND content = 'udp rule'"))
        assert conversations(search(db, "caddy udp")) == ["kept"]
    finally:
        db.close()


def test_filters_hold_for_conversations_found_across_messages(db):
    session(db, "cli_one", ["caddy config", "udp rule"], at=NOW - DAY, source="cli")
    session(db, "tg_one", ["caddy config", "udp rule"], at=NOW - DAY, source="telegram")
    assert conversations(search(db, "caddy udp", source_filter=["telegram"])) == ["tg_one"]
    assert conversations(search(db, "caddy udp", exclude_sources=["telegram"])) == ["cli_one"]


def test_the_spread_part_follows_only_the_last_page_of_message_level_hits(db):
    for i in range(5):
        session(db, f"m{i}", [f"caddy udp number {i}"], at=NOW - i * DAY)
    session(db, "spread", ["caddy config", "udp rule"], at=NOW)
    first = search(db, "caddy udp", limit=3)
    assert first.has_more and "spread" not in conversations(first)
    second = search(db, "caddy udp", limit=3, offset=3)
    assert not second.has_more and conversations(second)[-1] == "spread"
    assert len({hit.id for hit in first.hits} | {hit.id for hit in second.hits}) == 7


# ----------------------------------------------------------------------------- SR-18 ranking


def test_hits_of_one_conversation_come_together_best_conversation_first(db):
    session(db, "rich", ["docker docker docker compose", "filler text here", "docker swarm docker"],
            at=NOW - 10 * DAY)
    session(db, "poor", ["a long message that says docker once among many other words " * 3], at=NOW - 10 * DAY)
    result = search(db, "docker")
    assert conversations(result) == ["rich", "poor"]
    rich = [hit.conversation_id for hit in result.hits]
    assert rich == sorted(rich, key=["rich", "poor"].index)  # no interleaving


def test_newest_first_orders_conversations_by_their_newest_match(db):
    session(db, "old_best", ["docker docker docker"], at=NOW - 100 * DAY)
    session(db, "new_weak", ["one docker among a great many other words of a long message"], at=NOW - DAY)
    assert conversations(search(db, "docker", order="newest")) == ["new_weak", "old_best"]
    assert search(db, "docker", order="newest").order == "newest"
    with pytest.raises(ValueError):
        db.search("docker", order="sideways")


def test_recency_weight_blends_age_into_the_order(db):
    session(db, "old_best", ["docker docker docker"], at=NOW - 400 * DAY)
    session(db, "new_weak", ["one docker among a great many other words of a long message"], at=NOW)
    assert conversations(search(db, "docker", weights=Weights(recency=0.0)))[0] == "old_best"
    assert conversations(search(db, "docker", weights=Weights(recency=0.9, half_life_days=10)))[0] == "new_weak"


def test_the_formula_is_the_documented_one():
    weights = Weights(recency=0.25, half_life_days=30.0, together=0.5)
    assert conversation_score(1.0, NOW, NOW, weights) == pytest.approx(1.0)
    assert conversation_score(1.0, NOW - 30 * DAY, NOW, weights) == pytest.approx(0.75 + 0.25 * 0.5)
    assert conversation_score(0.0, None, NOW, weights) == 0.0
    # Nonsense from a config file is held to the ranges.
    assert Weights(recency=7, half_life_days=-1, together="x").clean() == Weights(1.0, 0.01, 0.5)


def test_a_typed_prefix_ranks_the_word_above_hex_ids(db):
    session(db, "ids", [f'{{"id": "cadd7398{i:04x}ef", "ref": "cadd7398{i:04x}ef"}}' for i in range(3)],
            at=NOW - DAY)
    session(db, "word", ["restart caddy after editing the caddyfile, then check that the reverse proxy "
                         "answers on every host name we serve from this machine"], at=NOW - 30 * DAY)
    result = search(db, "cadd", prefix_last=True)
    assert conversations(result)[0] == "word"
    assert "ids" in conversations(result)  # still found


def test_short_cjk_words_are_ranked_by_relevance_not_newest_first(db):
    session(db, "relevant", ["服务器 证书 过期了，服务器 证书 需要更新"], at=NOW - 200 * DAY)
    for i in range(5):
        session(db, f"newer{i}", [f"今天的服务器很慢，顺便看了一下证书 {'其他内容' * 20} {i}"], at=NOW - i * DAY)
    result = search(db, "服务器 证书", weights=Weights(recency=0.0))
    assert result.ranking in ("bm25", "bm25-conversations")
    assert conversations(result)[0] == "relevant"


def test_a_messages_length_is_its_tokens_not_its_spaces():
    assert token_count("src/hermes_state/search_engine.py") == 6
    assert token_count("snake_case_name") == 3
    assert token_count("two words") == 2
    assert token_count("") == 1
    assert token_count("服务器，证书") == 2


# ----------------------------------------------------------------------------- one parser


def test_highlighting_takes_the_search_parsers_terms_and_never_an_excluded_word():
    assert highlight_terms("docker NOT compose") == [("word", "docker")]
    pattern = highlight_pattern("docker NOT compose")
    assert [m.group(0) for m in pattern.finditer("docker compose and docker")] == ["docker", "docker"]


def test_a_trailing_space_makes_the_last_word_whole_in_highlighting_too():
    assert [m.group(0) for m in highlight_pattern("dock").finditer("dock docker")] == ["dock", "docker"]
    assert [m.group(0) for m in highlight_pattern("dock ").finditer("dock docker")] == ["dock"]
    assert [m.group(0) for m in highlight_pattern('"udp rule"').finditer("a udp  rule, udp")] == ["udp  rule"]
    assert [m.group(0) for m in highlight_pattern("证书").finditer("服务器证书")] == ["证书"]


def test_a_trailing_space_finds_the_word_not_words_it_starts(db):
    session(db, "word", ["a dock by the sea"], at=NOW - DAY)
    session(db, "longer", ["the docker daemon"], at=NOW - DAY)
    assert set(conversations(search(db, "dock", prefix_last=True))) == {"word", "longer"}
    assert conversations(search(db, "dock ", prefix_last=True)) == ["word"]


# ----------------------------------------------------------------------------- SR-19 empty answers


def test_an_absent_word_is_named(db):
    session(db, "s", ["caddy config"], at=NOW)
    result = search(db, "caddy zebrafish")
    assert result.hits == [] and "“zebrafish”" in result.note and "no message holds" in result.note


def test_words_no_message_and_no_conversation_hold_together_say_so(db):
    session(db, "a", ["caddy config"], at=NOW)
    session(db, "b", ["udp rule"], at=NOW)
    result = search(db, "caddy udp")
    assert result.hits == []
    assert "no single message holds every word, and no conversation holds them all" in result.note


def test_a_filter_that_hides_every_match_says_how_many(db):
    session(db, "tg", ["caddy config"], at=NOW, source="telegram")
    session(db, "cli", ["something else"], at=NOW, source="cli")
    result = search(db, "caddy", source_filter=["cli"])
    assert result.hits == [] and "the filters hide every match" in result.note
    assert "source filter hides ~1" in result.note


def test_not_that_removes_every_match_says_so(db):
    session(db, "s", ["docker compose file"], at=NOW)
    result = search(db, "docker NOT compose")
    assert result.hits == [] and "NOT “compose” removed every match" in result.note


def test_hidden_sessions_that_hold_the_only_match_are_named(upstream_copy):
    db = SessionDB(upstream_copy(30))
    try:
        session(db, "hid", ["zanzibar caddy"], at=NOW)
        db._execute_write(lambda conn: conn.execute("UPDATE sessions SET hidden = 1 WHERE id = 'hid'"))
        result = search(db, "zanzibar")
        assert result.hits == [] and "hidden sessions (H shows them)" in result.note
        assert conversations(search(db, "zanzibar", include_hidden=True)) == ["hid"]
    finally:
        db.close()


def test_a_trailing_space_is_not_undone_by_the_substring_retry(db):
    session(db, "longer", ["the docker daemon"], at=NOW - DAY)
    assert search(db, "dock ", prefix_last=True).hits == []
    assert search(db, "dock ").hits == []
    # Without the space the substring index still finds Latin glued to CJK.
    session(db, "glued", ["修改youer服务端"], at=NOW - DAY)
    assert conversations(search(db, "youer")) == ["glued"]


@pytest.mark.parametrize("version", [5, 16, 30])
def test_upstream_stores_of_every_layout_answer_by_conversation_without_writing(upstream_copy, version):
    path = upstream_copy(version)
    before = path.read_bytes()
    db = SessionDB(path, read_only=True)
    try:
        for query in ("the session", "hello OR 大别山", "项目 进度", '"exact phrase" NOT x', "zzqx nothing"):
            result = db.search(query, prefix_last=True)
            assert result.error is None, (version, query)
            seen: list[str] = []
            for hit in result.hits:  # the hits of one conversation together
                if not seen or seen[-1] != hit.conversation_id:
                    assert hit.conversation_id not in seen, (version, query)
                    seen.append(hit.conversation_id)
    finally:
        db.close()
    assert path.read_bytes() == before
