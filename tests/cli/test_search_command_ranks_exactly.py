"""``hermes-sessions search`` is read as the browser's pane is once typing pauses: an answer
the engine ranked over the newest matches only (the keystroke's window) is ranked again over
every match, so the conversation the words describe best comes first even when it is older."""

from __future__ import annotations

from hermes_state import ListQuery, SessionDB
from hermes_state.models import CONVERSATION_RANKING
from hermes_state.search.tuning import TUNING
from hermes_tui.cli_search import answer_of

from tests.tui.dataset import NOW
from tests.tui.test_search_ranked_exactly import OLD, build


def test_an_answer_ranked_over_the_window_is_ranked_over_every_match(tmp_path, monkeypatch):
    monkeypatch.setattr(TUNING, "WINDOW", 10)
    monkeypatch.setattr(TUNING, "EXACT_BM25_MAX_ROWS", 20)
    db = SessionDB(build(tmp_path / "state.db"), read_only=True)
    try:
        keystroke = db.search("cache", ListQuery(), limit=40, now=NOW, sort="auto")
        answer = answer_of(db, "cache", ListQuery(), 5, "relevance", NOW)
    finally:
        db.close()
    assert "window" in keystroke.ranking
    assert answer.ranking == CONVERSATION_RANKING and answer.conversations[0].root_id == OLD
