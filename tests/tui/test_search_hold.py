"""How a fresh answer is seen against the one on screen (hermes_tui.search_hold): which rows
stay, in which order, and which matches are new. Plain values, no app."""

from __future__ import annotations

from hermes_state.models import SearchHit, SessionSummary
from hermes_tui.search_hold import announcement, hit_targets, hold_still, ranked_anew, without_shown
from hermes_tui.view_models import HitGroup, SearchView


def hit(session: str, message: int, snippet: str = "kumquat") -> SearchHit:
    return SearchHit(id=message, session_id=session, role="user", timestamp=1.0, snippet=snippet)


def view(*groups: tuple[str, list[SearchHit]], titles=(), more: bool = False, label: str = "") -> SearchView:
    made = [HitGroup(root, label or f"conversation {root}", "cli", list(hits)) for root, hits in groups]
    return SearchView(
        query="kumquat", groups=made, hit_count=sum(len(g.hits) for g in made), more=more,
        title_matches=[SessionSummary(id=t, source="cli", started_at=0.0) for t in titles],
    )


def test_new_matches_above_are_counted_and_the_shown_rows_keep_their_order() -> None:
    shown = view(("a", [hit("a", 1)]), ("b", [hit("b", 2), hit("b", 3)]))
    # Newest first: a new conversation and a new hit of b rank above what is shown, and b
    # now ranks before a.
    fresh = view(("n", [hit("n", 9)]), ("b", [hit("b", 8), hit("b", 2), hit("b", 3)]), ("a", [hit("a", 1)]))
    held = hold_still(shown, fresh)
    assert hit_targets(held.steady) == hit_targets(shown)
    assert [g.root_id for g in held.steady.groups] == ["a", "b"]
    assert held.new == [("n", 9), ("b", 8)]
    assert held.steady.hit_count == 3 and held.fresh is fresh


def test_the_rows_shown_take_what_changed_in_them_in_place() -> None:
    shown = view(("a", [hit("a", 1, "old snippet")]), ("b", [hit("b", 2)]))
    fresh = view(("a", [hit("a", 1, "new snippet")]), label="renamed")  # b's hit was deleted
    held = hold_still(shown, fresh)
    assert held.new == []
    assert [g.root_id for g in held.steady.groups] == ["a"]
    assert held.steady.groups[0].label == "renamed"
    assert held.steady.groups[0].hits[0].snippet == "new snippet"


def test_hits_after_the_last_shown_are_the_next_page_not_new() -> None:
    shown = view(("a", [hit("a", 1), hit("a", 2)]), more=True)
    fresh = view(("n", [hit("n", 9)]), ("a", [hit("a", 1), hit("a", 2), hit("a", 3)]), ("c", [hit("c", 4)]))
    held = hold_still(shown, fresh)
    assert held.new == [("n", 9)]
    assert held.steady.more, "the next page still loads as the reader moves down"


def test_a_complete_answer_counts_every_match_it_did_not_show_as_new() -> None:
    shown = view(("a", [hit("a", 1)]))
    fresh = view(("a", [hit("a", 1)]), ("c", [hit("c", 4)]))
    assert hold_still(shown, fresh).new == [("c", 4)]


def test_a_shown_hit_missing_from_a_cut_answer_stays() -> None:
    """The fresh answer was cut at its limit: a hit shown but not in it may merely rank below
    the cut (new matches pushed it down), so it is not taken for deleted."""
    shown = view(("a", [hit("a", 1)]), ("b", [hit("b", 2)]))
    fresh = view(("n", [hit("n", 9)]), ("a", [hit("a", 1)]), more=True)
    held = hold_still(shown, fresh)
    assert hit_targets(held.steady) == [("a", 1), ("b", 2)]
    assert held.new == [("n", 9)]


def test_a_new_title_match_is_new() -> None:
    shown = view(("a", [hit("a", 1)]), titles=["t1"])
    fresh = view(("a", [hit("a", 1)]), titles=["t2", "t1"])
    held = hold_still(shown, fresh)
    assert held.new == [("t2", None)]
    assert [s.id for s in held.steady.title_matches] == ["t1"]


def test_the_announcement_names_the_count_and_the_key() -> None:
    assert announcement(1, "Ctrl+N") == "1 new match — press Ctrl+N to show"
    assert announcement(3, "F5") == "3 new matches — press F5 to show"


def test_a_later_page_skips_hits_shown_already_and_counts_them_towards_its_offset() -> None:
    shown = view(("a", [hit("a", 1), hit("a", 2)]), more=True)
    # Two new hits moved the pages: the page at offset 2 starts with two hits shown already.
    page = view(("a", [hit("a", 1), hit("a", 2), hit("a", 3)]), ("c", [hit("c", 4)]))
    merged = shown.merged(without_shown(shown, page))
    assert hit_targets(merged) == [("a", 1), ("a", 2), ("a", 3), ("c", 4)]
    assert merged.hit_count == 4 and merged.next_offset == 6


def test_an_older_message_that_now_ranks_among_the_shown_is_not_new() -> None:
    """Other messages changed the words' weights: a message written before the answer shown
    now ranks among its hits. It is no new match; one written since is."""
    shown = view(("a", [hit("a", 10), hit("a", 12)]), more=True)
    shown.newest_id = 20
    fresh = view(("a", [hit("a", 10), hit("a", 7), hit("a", 21), hit("a", 12)]), more=True)
    held = hold_still(shown, fresh)
    assert held.new == [("a", 21)]
    assert held.steady.newest_id == 20, "still the answer shown: the next commit is judged against it"


def test_an_answer_to_other_words_waits_whole_while_it_holds_a_new_message() -> None:
    """`kumquat zz` was answered by `kumquat` (no message held `zz`) until a new message holds
    both words: the rows shown stay as they are, the new answer waits."""
    shown = view(("a", [hit("a", 1)]), ("b", [hit("b", 2)]))
    shown.answered, shown.newest_id = "kumquat", 5
    fresh = view(("n", [hit("n", 6)]))
    held = hold_still(shown, fresh)
    assert held.steady is shown and held.new == [("n", 6)]
    # Without anything written since (the message holding `zz` was deleted), it is the answer.
    back = view(("a", [hit("a", 1)]))
    back.answered = "kumquat"
    shown_real = view(("n", [hit("n", 6)]))
    shown_real.newest_id = 6
    assert hold_still(shown_real, back).steady is back


def test_a_note_that_comes_with_a_commit_waits_with_the_new_matches() -> None:
    """The note heads the hits on a line of its own: taken from the fresh answer, it would
    push every row shown down one line while the reader holds a hit."""
    shown = view(("a", [hit("a", 1)]))
    fresh = view(("n", [hit("n", 9)]), ("a", [hit("a", 1)]))
    fresh.note = "across messages: newest 24 of 30 conversations with the words ranked"
    held = hold_still(shown, fresh)
    assert held.steady.note is None and held.fresh.note == fresh.note


def test_the_pause_ranking_takes_its_order_but_matches_written_since_wait_announced() -> None:
    """Typing paused: the query ranked over every match replaces the keystroke's answer (the
    reader is still at its first hit), in the new order -- but a gateway's messages committed
    meanwhile are in it too, and are announced, not slipped in among the rows."""
    shown = view(("a", [hit("a", 3)]), ("b", [hit("b", 5)]), titles=["t1"], more=True)
    shown.newest_id = 10
    ranked = view(("b", [hit("b", 5), hit("b", 11)]), ("n", [hit("n", 12)]), ("c", [hit("c", 2)]),
                  ("a", [hit("a", 3)]), titles=["t2", "t1"], more=True)
    ranked.newest_id = 12
    held = ranked_anew(shown, ranked)
    assert hit_targets(held.steady) == [("t1", None), ("b", 5), ("c", 2), ("a", 3)], "the new order, older hits too"
    assert held.new == [("t2", None), ("b", 11), ("n", 12)]
    assert held.fresh is ranked
    assert held.steady.newest_id == 10, "the next commit is judged against what is shown"
    assert held.steady.hit_count == 3 and held.steady.next_offset == ranked.next_offset, \
        "the next page starts where the store's does"


def test_a_pause_ranking_with_nothing_written_since_is_the_answer_itself() -> None:
    shown = view(("a", [hit("a", 3)]), ("b", [hit("b", 5)]))
    shown.newest_id = 10
    ranked = view(("b", [hit("b", 5)]), ("a", [hit("a", 3)]))
    held = ranked_anew(shown, ranked)
    assert held.steady is ranked and held.new == []
    # Several stores number their own messages: nothing is known to be new.
    shown.newest_id = None
    assert ranked_anew(shown, view(("n", [hit("n", 99)]))).new == []


def test_a_message_committed_while_the_shown_answer_was_read_is_not_taken_off_the_screen() -> None:
    """The answer's newest id is read before its search runs: a message committed in between
    is on screen already with a newer id. The pause's ranking keeps it where it ranks."""
    shown = view(("a", [hit("a", 3)]), ("b", [hit("b", 11)]))
    shown.newest_id = 10
    ranked = view(("b", [hit("b", 11)]), ("a", [hit("a", 3)]), ("n", [hit("n", 12)]))
    held = ranked_anew(shown, ranked)
    assert held.new == [("n", 12)]
    assert hit_targets(held.steady) == [("b", 11), ("a", 3)]


def test_a_title_match_kept_as_shown_keeps_its_conversation() -> None:
    """A fresh answer cut at its limit (``more``) need not hold a title match shown: the row
    stays, and so does the conversation it is of (where Esc puts the list after acting on it)."""
    shown = view(("a", [hit("a", 1)]), titles=("seg2",))
    shown.title_roots = {"seg2": "root"}
    fresh = view(("a", [hit("a", 1)]), titles=("other",), more=True)
    fresh.title_roots = {"other": "other"}
    steady = hold_still(shown, fresh).steady
    assert [s.id for s in steady.title_matches] == ["seg2"]
    assert steady.title_roots["seg2"] == "root"
