"""SR-18, ranked by conversation: ``sort="rank"`` (the pane once typing pauses, ``hermes-sessions
search``) scores each conversation from every one of its matching messages -- its best
message, how much of it is about the words, its title -- not from its best message alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_state import ListQuery, SessionDB
from hermes_state.models import CONVERSATION_RANKING, CONVERSATION_WINDOW_RANKING
from hermes_state.search import Weights
from hermes_state.search.tuning import TUNING

from tests.state.test_conversation_search import DAY, NOW, compression_chain, conversations, search, session


@pytest.fixture
def db(tmp_path: Path):
    store = SessionDB(tmp_path / "state.db")
    yield store
    store.close()


def filler(n: int, word: str = "deploy") -> list[str]:
    return [f"{word} step {i}: the release moved along as planned with nothing else to say" for i in range(n)]


def long_chat_with_one_short_mention(db: SessionDB, sid: str, at: float) -> None:
    """Forty messages about something else and one short line naming the certificate: its
    best message outranks any long one by bm25 (a short message is a strong match)."""
    session(db, sid, filler(20) + ["certificate"] + filler(20), at=at)


def test_a_conversation_about_the_words_ranks_above_one_that_mentions_them_once(db):
    session(db, "about", [
        "the staging gateway says its certificate expired this morning",
        "which certificate, the one the renewal job writes?",
        "yes, the renewal job did not run, so the certificate is stale since midnight",
        "renewed it by hand: the new certificate is served now",
        "thanks",
    ], at=NOW - 9 * DAY)
    for n in range(4):
        long_chat_with_one_short_mention(db, f"long{n}", at=NOW - (20 + n) * DAY)
    by_message = search(db, "certificate", sort="auto")
    assert by_message.ranking == "bm25"
    assert conversations(by_message)[0] != "about"  # (its best message is long: fifth by bm25)
    ranked = search(db, "certificate", sort="rank")
    assert ranked.ranking == CONVERSATION_RANKING
    assert conversations(ranked)[0] == "about"
    # Its hits come together, best first, then the other conversations' hits.
    about_hits = [hit for hit in ranked.hits if hit.conversation_id == "about"]
    assert ranked.hits[:4] == about_hits and len(about_hits) == 4
    assert [hit.score for hit in about_hits] == sorted((hit.score for hit in about_hits), reverse=True)


def test_a_title_that_holds_the_words_lifts_its_conversation(db):
    for sid in ("untitled", "titled"):
        session(db, sid, ["the quota for partner calls ran out at noon", "raised it for today"], at=NOW - 30 * DAY)
    db.set_session_title("titled", "Partner quota ran out")
    ranked = search(db, "quota", sort="rank")
    assert conversations(ranked) == ["titled", "untitled"]
    # The last word while typed is a prefix, in titles as in messages.
    assert conversations(search(db, "quot", sort="rank", prefix_last=True)) == ["titled", "untitled"]
    # A title weight of 0 leaves the tie to recency, then to the newer conversation.
    plain = search(db, "quota", sort="rank", weights=Weights(title=0.0))
    assert set(conversations(plain)) == {"titled", "untitled"}


def test_words_side_by_side_in_the_order_typed_lift_their_conversation(db):
    # The one a person remembers: the words stood together there, a few days earlier.
    session(db, "remembered", ["so the docker build cache broke after the copy step moved up"] + filler(2),
            at=NOW - 9 * DAY)
    # Newer, as long, the same words apart: bm25 and recency prefer them.
    for n in range(3):
        session(db, f"apart{n}", [f"the build broke, docker cache after the copy step moved {n}"] + filler(2),
                at=NOW - (5 + n) * DAY)
    plain = search(db, "docker build cache", sort="rank", weights=Weights(phrase=0.0))
    assert conversations(plain)[0] != "remembered"
    ranked = search(db, "docker build cache", sort="rank")
    assert ranked.ranking == CONVERSATION_RANKING
    assert conversations(ranked)[0] == "remembered"
    # Typed in another order, no pair stands so: nothing is lifted.
    assert conversations(search(db, "cache build docker", sort="rank")) == conversations(
        search(db, "cache build docker", sort="rank", weights=Weights(phrase=0.0)))
    # The word being typed is a prefix there too.
    assert conversations(search(db, "docker build cach", sort="rank", prefix_last=True))[0] == "remembered"


def test_a_query_whose_words_repeat_lifts_the_pairs_as_typed(db):
    # `build docker build cache` has `docker build` and `build cache` side by side as typed;
    # the query's words once each (build, docker, cache) would make `docker cache` a pair
    # -- the words apart in the others -- and lose `build cache`.
    session(db, "remembered", ["so the docker build cache broke after the copy step moved up"] + filler(2),
            at=NOW - 9 * DAY)
    for n in range(3):
        session(db, f"apart{n}", [f"the build broke, docker cache after the copy step moved {n}"] + filler(2),
                at=NOW - (5 + n) * DAY)
    assert conversations(search(db, "build docker build cache", sort="rank", weights=Weights(phrase=0.0)))[0] != \
        "remembered"
    assert conversations(search(db, "build docker build cache", sort="rank"))[0] == "remembered"
    # On the same connection, a query of the same words in another order ranks anew.
    assert conversations(search(db, "build docker cache", sort="rank"))[0] != "remembered"


def test_words_side_by_side_in_a_tool_call_lift_as_in_text(db):
    # The index holds a message's tool name and tool-call JSON beside its content (ST-4): a
    # command run, with no text of its own, is where the words stood together.
    ids = session(db, "remembered", ["it broke again after the copy step moved up", "running it"] + filler(2),
                  at=NOW - 9 * DAY)
    calls = '[{"function": {"name": "terminal", "arguments": "{\\"command\\": \\"docker build cache prune\\"}"}}]'
    db._execute_write(lambda conn: conn.execute(
        "UPDATE messages SET content = NULL, tool_calls = ? WHERE id = ?", (calls, ids[1])))
    for n in range(3):
        session(db, f"apart{n}", [f"the build broke, docker cache after the copy step moved {n}"] + filler(2),
                at=NOW - (5 + n) * DAY)
    assert conversations(search(db, "docker build cache", sort="rank", weights=Weights(phrase=0.0)))[0] != "remembered"
    assert conversations(search(db, "docker build cache", sort="rank"))[0] == "remembered"


def test_pairs_stand_within_an_or_alternative_and_not_across_an_excluded_word():
    from hermes_state.search.by_conversation import ByConversation, side_by_side

    assert side_by_side("docker build cach*") == ((("docker", False), ("build", False)),
                                                   (("build", False), ("cach", True)))
    # `podman` and `build` are one alternative; `docker` is another, typed beside neither.
    assert side_by_side("docker OR podman build") == ((("podman", False), ("build", False)),)
    # `compose` stood between `docker` and `build`.
    assert side_by_side("docker NOT compose build") == ()
    assert side_by_side('"auth module" error') == ((("auth", False), ("module", False)),
                                                    (("module", False), ("error", False)))
    assert side_by_side("new york new york") == ((("new", False), ("york", False)),
                                                 (("york", False), ("new", False)))
    assert side_by_side("") == () and side_by_side("one") == ()
    # Words as the index splits them: `"docker-compose" build` matched `docker compose build`.
    assert side_by_side('"docker-compose" build') == ((("docker", False), ("compose", False)),
                                                       (("compose", False), ("build", False)))
    # A word typed as a prefix before another (`cach* docker`) is the start of one there too.
    [pair] = ByConversation(store=None, now=NOW, weights=Weights(), words=(),
                            pairs=((("cach", True), ("docker", False)),)).neighbours()
    assert pair.search("the cache docker keeps") and not pair.search("docker cache")


def test_neighbouring_pairs_are_whole_words_and_cjk_stands_without_spaces():
    from hermes_state.search.by_conversation import ByConversation

    asked = ByConversation(store=None, now=NOW, weights=Weights(), words=(("lock", False), ("file", True)),
                           pairs=((("lock", False), ("file", True)),))
    [pair] = asked.neighbours()
    assert pair.search("the pip-tools Lock  file was merged")
    assert pair.search("a lock-filesystem")  # (the last word typed: a prefix)
    assert not pair.search("a padlock file")
    cjk = ByConversation(store=None, now=NOW, weights=Weights(), words=(("服务器", False), ("证书", False)),
                         pairs=((("服务器", False), ("证书", False)),))
    [pair] = cjk.neighbours()
    assert pair.search("更新服务器证书之后") and pair.search("服务器 证书")
    assert not pair.search("证书和服务器")
    # A Latin word beside a CJK one: CJK text sets no space around it.
    latin, back = ByConversation(store=None, now=NOW, weights=Weights(), words=(),
                                 pairs=((("docker", False), ("镜像", False)),
                                        (("镜像", False), ("docker", False)))).neighbours()
    assert latin.search("构建Docker镜像失败") and latin.search("docker 镜像")
    assert back.search("把镜像docker化") and not latin.search("dockerfile镜像")
    assert ByConversation(store=None, now=NOW, weights=Weights(), words=(("one", False),)).neighbours() == []


def test_a_hyphenated_word_is_two_words_in_titles_as_in_messages():
    from hermes_state.search.by_conversation import ByConversation, title_words

    words = title_words('"docker-compose" restart')
    assert words == (("docker", False), ("compose", False), ("restart", False))
    share = ByConversation(store=None, now=NOW, weights=Weights(), words=words).title_share()
    assert share("Docker Compose restart loop") == 1.0


def test_accents_count_as_the_index_counts_them_in_titles_and_side_by_side(db):
    """The word index reads ``café`` as ``cafe`` (Latin letters lose their accents), so
    ``cafe menu`` finds ``café menu``: its title and its words side by side count too --
    and only Latin letters are so read (``が`` keeps its mark)."""
    from hermes_state.folding import fold
    from hermes_state.search.by_conversation import ByConversation, title_words

    share = ByConversation(store=None, now=NOW, weights=Weights(), words=title_words("cafe menu")).title_share()
    assert share("Café menu prices") == 1.0
    assert ByConversation(store=None, now=NOW, weights=Weights(),
                          words=title_words("café")).title_share()("the cafe downstairs") == 1.0
    assert fold("がガ й Việt") == "がガ й việt"  # (two marks on one letter: kept, as the index keeps them)
    session(db, "remembered", ["the new café menu prices went up again"] + filler(2), at=NOW - 9 * DAY)
    for n in range(3):
        session(db, f"apart{n}", [f"the menu at the cafe went up, prices {n}"] + filler(2), at=NOW - (5 + n) * DAY)
    assert conversations(search(db, "cafe menu", sort="rank"))[0] == "remembered"
    assert conversations(search(db, "cafe menu", sort="rank", weights=Weights(phrase=0.0)))[0] != "remembered"


def test_the_weights_say_how_much_aboutness_counts(db):
    session(db, "about", ["certificate expired", "certificate renewed", "certificate served"] + filler(2),
            at=NOW - 30 * DAY)
    session(db, "short", ["certificate"] + filler(40), at=NOW - 30 * DAY)
    assert conversations(search(db, "certificate", sort="rank"))[0] == "about"
    # With no credit for aboutness, the best message alone decides (the one-word line).
    best_only = search(db, "certificate", sort="rank", weights=Weights(about=0.0, title=0.0))
    assert conversations(best_only)[0] == "short"


def test_a_compression_chain_is_one_conversation_with_every_hit_of_both_sessions(db):
    compression_chain(db, "chain", ["the cache layer evicts too early", "cache hit rate fell"],
                      ["cache size doubled", "the cache holds now"], at=NOW - 5 * DAY)
    long_chat_with_one_short_mention(db, "other", at=NOW - DAY)
    db.append_message("other", "user", "cache")
    ranked = search(db, "cache", sort="rank")
    assert conversations(ranked) == ["chain", "other"]
    assert {hit.session_id for hit in ranked.hits if hit.conversation_id == "chain"} == {"chain", "chain_c"}
    assert [hit.conversation_id for hit in ranked.hits][:4] == ["chain"] * 4


def test_pages_of_a_ranking_by_conversation_give_every_hit_once_in_one_order(db):
    for n in range(12):
        session(db, f"s{n:02d}", [f"worker {n} queue"] * (1 + n % 4) + filler(n % 5), at=NOW - n * DAY)
    whole = search(db, "worker", sort="rank", limit=100)
    assert whole.ranking == CONVERSATION_RANKING and not whole.has_more
    paged, offset = [], 0
    while True:
        page = search(db, "worker", sort="rank", limit=7, offset=offset)
        paged += page.hits
        offset += len(page.hits)
        if not page.has_more:
            break
    assert [hit.id for hit in paged] == [hit.id for hit in whole.hits]
    # Each conversation's hits stand together.
    order = [hit.conversation_id for hit in paged]
    assert len(list(dict.fromkeys(order))) == len([c for i, c in enumerate(order) if i == 0 or order[i - 1] != c])


def test_the_list_filters_hold_in_a_ranking_by_conversation(db):
    session(db, "mine", ["the backup job failed"], at=NOW - DAY)
    session(db, "theirs", ["backup backup backup job failed again"], at=NOW - DAY, source="telegram")
    ranked = db.search("backup", ListQuery(source="cli"), sort="rank", now=NOW)
    assert ranked.ranking == CONVERSATION_RANKING
    assert conversations(ranked) == ["mine"]


def test_more_matches_than_the_bound_have_their_newest_ranked_and_the_older_follow(db, monkeypatch):
    monkeypatch.setattr(TUNING, "CONVERSATION_RANKED_ROWS", 5)
    ids = []
    for n in range(4):  # (s3 is the oldest; each session's messages are newer than the last's)
        ids += session(db, f"s{n}", ["release notes", "release done"], at=NOW - (10 - n) * DAY)
    first = search(db, "release", sort="rank", limit=6)
    assert first.ranking == CONVERSATION_WINDOW_RANKING
    assert "ranked the newest 5 matches by conversation" in (first.note or "")
    # The newest five are ranked (s1's newer message, s2, s3), then the older newest first.
    assert set(hit.id for hit in first.hits[:5]) == set(sorted(ids)[-5:])
    assert first.hits[5].id == sorted(ids)[-6] and first.has_more
    rest = search(db, "release", sort="rank", limit=6, offset=6)
    assert [hit.id for hit in rest.hits] == sorted(ids)[:2][::-1] and not rest.has_more


def test_cjk_words_are_ranked_by_conversation_on_the_trigram_index(db):
    session(db, "about", ["服务器证书过期了", "证书续期任务没有运行", "手动续期了服务器证书"], at=NOW - 10 * DAY)
    session(db, "once", ["服务器证书"] + filler(30), at=NOW - 20 * DAY)
    ranked = search(db, "服务器证书", sort="rank")
    assert ranked.ranking == CONVERSATION_RANKING and ranked.path == "trigram"
    assert conversations(ranked)[0] == "about"
    assert all(hit.spans for hit in ranked.hits)


def test_a_commit_between_pages_ranks_afresh(db):
    session(db, "a", ["ledger entry"], at=NOW - DAY)
    first = search(db, "ledger", sort="rank", limit=1)
    assert conversations(first) == ["a"] and not first.has_more
    session(db, "b", ["ledger ledger ledger"], at=NOW)
    assert set(conversations(search(db, "ledger", sort="rank"))) == {"a", "b"}


def test_a_script_gets_what_the_pane_shows_once_typing_pauses(db):
    """``SessionDB.search`` without a sort is the answer a person reads once typing pauses
    (ranked by conversation); the keystroke's quicker ranking is asked for by name."""
    session(db, "about", ["certificate expired", "certificate renewed", "the certificate is served"],
            at=NOW - 9 * DAY)
    for n in range(3):
        long_chat_with_one_short_mention(db, f"long{n}", at=NOW - (20 + n) * DAY)
    default = db.search("certificate", now=NOW)
    assert default.ranking == CONVERSATION_RANKING and conversations(default)[0] == "about"
    assert [hit.id for hit in default.hits] == [hit.id for hit in search(db, "certificate", sort="rank").hits]
    assert db.search("certificate", now=NOW, sort="auto").ranking == "bm25"


def test_a_prefix_that_also_starts_hex_ids_ranks_the_word_first_and_still_finds_the_ids(db):
    session(db, "ids", [f'{{"id": "cadd7398{i:04x}ef"}}' for i in range(4)], at=NOW - DAY)
    session(db, "word", ["the caddy config reloads on every deploy of the proxy"], at=NOW - 30 * DAY)
    ranked = search(db, "cadd", sort="rank", prefix_last=True)
    assert ranked.ranking == CONVERSATION_RANKING
    assert conversations(ranked) == ["word", "ids"]
    # Typed with a digit, an id is what is meant: no discount.
    assert conversations(search(db, "cadd7", sort="rank", prefix_last=True)) == ["ids"]


def test_a_store_that_never_counted_its_messages_is_ranked_by_the_messages_it_holds(db):
    session(db, "about", ["certificate expired", "certificate renewed", "certificate served"] + filler(2),
            at=NOW - 30 * DAY)
    session(db, "short", ["certificate"] + filler(40), at=NOW - 30 * DAY)
    db._execute_write(lambda conn: conn.execute("UPDATE sessions SET message_count = NULL"))
    assert conversations(search(db, "certificate", sort="rank"))[0] == "about"


def test_a_filter_of_values_that_cannot_be_kept_answers_without_raising(db):
    session(db, "a", ["ledger entry"], at=NOW - DAY)
    result = db.search("ledger", source_filter=[["cli"]], now=NOW)  # (a list where a source goes)
    assert result.error or not result.hits


def test_the_clock_of_a_later_search_is_its_own(db):
    session(db, "old", ["ledger ledger ledger reconciled"], at=NOW - 400 * DAY)
    session(db, "new", ["ledger entry"], at=NOW - DAY)
    weights = Weights(recency=0.9, half_life_days=1.0)
    assert conversations(search(db, "ledger", sort="rank", weights=weights))[0] == "new"
    # A year later nothing is recent: the words decide (the same connection, nothing committed).
    later = search(db, "ledger", sort="rank", weights=weights, now=NOW + 365 * DAY)
    assert conversations(later)[0] == "old"
