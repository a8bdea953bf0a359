"""The search compares words as the word index stores them (hermes_state.folding): the store's
own index is the judge, across scripts."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hermes_state import SessionDB
from hermes_state.folding import fold
from hermes_state.search import Weights
from hermes_state.search.by_conversation import ByConversation, title_words

from tests.state.test_conversation_search import NOW, session

#: Words whose folding Python's own tables get wrong one way or another: a Latin accent (gone
#: in the index), two marks on one letter and Cyrillic, Greek and kana marks (kept), a dotted
#: capital I (one letter there), a decomposed accent, letters Python lower-cases alike.
WORDS = ["Café", "ÉCOLE", "Łódź", "Việt", "Ḗos", "мой", "ёлка", "Йогурт", "άλφα", "がっこう", "ガス",
         "İstanbul", "e\u0301cran", "Straße", "Øre", "ǅemal", "Ελληνικά"]


def index_terms(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, messages_fts, row)")
        return {term for (term,) in conn.execute("SELECT term FROM temp.terms")}
    finally:
        conn.close()


def test_every_word_folds_to_the_term_the_stores_word_index_holds(tmp_path: Path):
    db = SessionDB(tmp_path / "state.db")
    try:
        session(db, "words", [f"{word} zz{index}" for index, word in enumerate(WORDS)], at=NOW)
    finally:
        db.close()
    terms = index_terms(tmp_path / "state.db")
    assert {fold(word) for word in WORDS} <= terms
    # (and the ones Python alone would have folded otherwise are among them)
    assert {"мой", "ёлка", "йогурт", "άλφα", "がっこう", "việt", "istanbul", "cafe", "ecran"} <= terms


def test_separators_stay_so_a_text_keeps_its_word_boundaries():
    assert fold("mot, été — 服务器/docker_compose!") == "mot, ete — 服务器/docker_compose!"
    assert fold("Docker-Compose") == "docker-compose"


def test_a_title_shares_only_the_words_the_index_would_match():
    """``viet`` is not ``Việt`` to the index (two marks: kept), while ``cafe`` is ``Café``:
    the title's share of the query says the same."""
    def share(query: str, title: str) -> float:
        return ByConversation(store=None, now=NOW, weights=Weights(), words=title_words(query)).title_share()(title)

    assert share("cafe", "Café menu") == 1.0
    assert share("viet", "Việt Nam trip") == 0.0
    assert share("việt", "VIỆT NAM trip") == 1.0
    assert share("мои", "мой сервер") == 0.0
    assert share("мой", "Мой сервер") == 1.0


def test_a_decomposed_accent_counts_as_the_one_word_the_index_matched():
    """``e\u0301cran`` (the accent a character of its own, as macOS pastes text) is one word
    to the index, ``ecran``: the window ranking counts the marked piece for it, where
    splitting before folding made it ``e`` and ``cran``."""
    from hermes_state.search.ranking import Phrase, TfMatcher

    assert fold("e\u0301cran") == "ecran"
    assert TfMatcher([Phrase("ecran", ["ecran"], False, False)]).counts(["e\u0301cran"]) == [1.0]


def test_a_lone_surrogate_is_kept_and_the_rest_folded():
    assert fold("Caf\u00e9 \ud800 ёж") == "cafe \ud800 ёж"


def test_a_hit_is_highlighted_where_the_index_matched_it_accents_and_all():
    """The highlight (snippets of words found across messages, the transcript) marks what the
    index matched: ``cafe`` marks ``Café``, ``CAFÉ`` and ``Cafe`` + U+0301 (the accent a
    character of its own), ``café`` marks ``cafe``; ``viet`` does not mark ``Việt``, which
    the index keeps apart."""
    from hermes_state.query import highlight_pattern

    def marked(query: str, text: str) -> list[str]:
        return [m.group(0) for m in highlight_pattern(query).finditer(text)]

    assert marked("cafe ", "Le Café, CAFÉ, Cafe\u0301 et cafés") == ["Café", "CAFÉ", "Cafe\u0301"]
    assert marked("café ", "the cafe downstairs") == ["cafe"]
    assert marked("caf", "Le Café") == ["Café"]
    assert marked("viet ", "Việt Nam, viet") == ["viet"]
    assert marked('"cafe menu"', "le café  menu") == ["café  menu"]


def test_words_found_across_messages_are_marked_in_their_accented_forms(tmp_path: Path):
    """A conversation holding ``café`` in one message and ``menu`` in another is found for
    ``cafe menu`` across its messages; each of those messages' snippets marks its word."""
    db = SessionDB(tmp_path / "state.db")
    try:
        session(db, "apart", ["Le Café était fermé ce matin", "then the menu changed again"], at=NOW)
        result = db.search("cafe menu", sort="rank", now=NOW)
        marked = {hit.snippet[a:b] for hit in result.hits if hit.conversation_id == "apart"
                  for a, b in hit.spans}
    finally:
        db.close()
    assert marked == {"Café", "menu"}
