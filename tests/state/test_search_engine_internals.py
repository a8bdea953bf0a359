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
