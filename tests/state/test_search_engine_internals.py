"""Pieces of the search engine checked on their own."""

from __future__ import annotations


def test_marked_spans_are_counted_as_the_regex_counts_them():
    """The window ranking's term count (one term): markers counted, the regex when the
    content carries marker characters of its own."""
    from hermes_state.query import MARK_CLOSE as C, MARK_OPEN as O, _MARKED_RE
    from hermes_state.search_engine import _marked_count

    for text in ("", "no match here", f"{O}docker{C} compose", f"a {O}dock{C} b {O}docker{C} c {O}x{C}",
                 f"stray {O} then {O}docker{C}", f"stray {C} then {O}docker{C}", f"{O}{C}"):
        assert _marked_count(text) == len(_MARKED_RE.findall(text)), repr(text)


def test_term_counts_of_marked_pieces_are_the_same_read_again():
    """The window's term frequencies (several terms): a piece seen in an earlier row counts
    for the same phrases again (they are remembered per query), exact words and prefixes."""
    from hermes_state.search_engine import _Phrase, _TfMatcher

    phrases = [
        _Phrase(match="deploy", tokens=["deploy"], prefix=False, negated=False),
        _Phrase(match="fai*", tokens=["fai"], prefix=True, negated=False),
        _Phrase(match="NOT x", tokens=["x"], prefix=False, negated=True),
        _Phrase(match="de*", tokens=["de"], prefix=True, negated=False),
    ]
    rows = [["deploy", "failed"], ["Deploy", "fail", "x"], ["deploy failing fairly"], ["deploy"], ["x"]]
    expected = [[1, 1, 0, 1], [1, 1, 0, 1], [1, 2, 0, 1], [1, 0, 0, 1], [0, 0, 0, 0]]
    shared = _TfMatcher(phrases)
    for pieces, want in zip(rows + rows, expected + expected):
        assert shared.counts(pieces) == [float(n) for n in want], pieces
        assert _TfMatcher(phrases).counts(pieces) == [float(n) for n in want]
