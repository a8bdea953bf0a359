"""Pieces of the search engine checked on their own."""

from __future__ import annotations


def test_marked_spans_are_counted_as_the_regex_counts_them():
    """The window ranking's term count (one term): markers counted, the regex when the
    content carries marker characters of its own."""
    from hermes_state.query import MARK_CLOSE as C, MARK_OPEN as O, MARKED_RE
    from hermes_state.search.ranking import marked_count

    for text in ("", "no match here", f"{O}docker{C} compose", f"a {O}dock{C} b {O}docker{C} c {O}x{C}",
                 f"stray {O} then {O}docker{C}", f"stray {C} then {O}docker{C}", f"{O}{C}"):
        assert marked_count(text) == len(MARKED_RE.findall(text)), repr(text)


def test_term_counts_of_marked_pieces_are_the_same_read_again():
    """The window's term frequencies (several terms): a piece seen in an earlier row counts
    for the same phrases again (they are remembered per query), exact words and prefixes."""
    from hermes_state.search.ranking import Phrase, TfMatcher

    phrases = [
        Phrase(match="deploy", tokens=["deploy"], prefix=False, negated=False),
        Phrase(match="fai*", tokens=["fai"], prefix=True, negated=False),
        Phrase(match="NOT x", tokens=["x"], prefix=False, negated=True),
        Phrase(match="de*", tokens=["de"], prefix=True, negated=False),
    ]
    rows = [["deploy", "failed"], ["Deploy", "fail", "x"], ["deploy failing fairly"], ["deploy"], ["x"]]
    expected = [[1, 1, 0, 1], [1, 1, 0, 1], [1, 2, 0, 1], [1, 0, 0, 1], [0, 0, 0, 0]]
    shared = TfMatcher(phrases)
    for pieces, want in zip(rows + rows, expected + expected):
        assert shared.counts(pieces) == [float(n) for n in want], pieces
        assert TfMatcher(phrases).counts(pieces) == [float(n) for n in want]


def test_a_hit_only_in_tool_calls_or_the_tool_name_has_a_highlighted_snippet(tmp_path):
    """A v30 store also indexes each message's tool name and tool calls: a message found only
    there is shown with the text that matched (it had an empty snippet), and a hit in its text
    keeps its text's snippet."""
    from hermes_state import SessionDB
    from hermes_workload.schema_v30 import create_v30_store

    path = create_v30_store(tmp_path / "state.db")
    db = SessionDB(path)
    try:
        db.create_session("s1", "cli")
        call = {"id": "c1", "type": "function",
                "function": {"name": "terminal", "arguments": '{"command": "kubectl rollout status"}'}}
        asked = db.append_message("s1", "assistant", "Let me look.", tool_calls=[call])
        answered = db.append_message("s1", "tool", "deployment ready", tool_name="terminal", tool_call_id="c1")
        said = db.append_message("s1", "user", "is kubectl installed? rollout went fine")
        by_id = {hit.id: hit for hit in db.search("kubectl").hits}
        assert set(by_id) == {asked, said}
        hit = by_id[asked]
        assert [hit.snippet[a:b] for a, b in hit.spans] == ["kubectl"]
        assert by_id[said].snippet.startswith("is kubectl installed")
        tool = {hit.id: hit for hit in db.search("terminal").hits}[answered]
        assert tool.snippet.startswith("terminal: deployment ready")
        assert [tool.snippet[a:b] for a, b in tool.spans] == ["terminal"]
    finally:
        db.close()


def test_a_store_ranking_a_share_of_the_window_ranks_exactly_only_that_share_of_the_work(tmp_path, monkeypatch):
    """Several profiles' stores each rank a share of a keystroke's window (``window``): a
    first key whose matches one store alone would rank exactly (exact bm25 within its work
    bound) is ranked over the share's newest matches when that share of the bound is too
    small -- three stores ranking it exactly cost three keystrokes. One store, the whole
    window, ranks it exactly as before; a share still ranks a few matches exactly."""
    from hermes_state import SessionDB
    from hermes_state.models import WINDOW_RANKING
    from hermes_state.search.tuning import TUNING

    monkeypatch.setattr(TUNING, "WINDOW", 40)
    monkeypatch.setattr(TUNING, "EXACT_BM25_MAX_ROWS", 120)
    db = SessionDB(tmp_path / "state.db")
    try:
        db.create_session("s", "cli")
        for n in range(250):  # (zebra in 50: work 100, within 120, not within a third of it)
            db.append_message("s", "user", (f"zebra crossing note {n}" + (" rare" if n < 5 else ""))
                              if n % 5 == 0 else f"plain filler line {n}")

        def ranking(word, **kw):
            return db.search(word, limit=10, sort="auto", **kw).ranking

        assert ranking("zebra") == "bm25"
        assert ranking("zebra", window=13) == WINDOW_RANKING
        assert ranking("rare", window=13) == "bm25"
    finally:
        db.close()
