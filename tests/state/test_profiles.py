"""Finding every Hermes profile's store as Hermes Agent finds them (PF-1), and the merges
that make several stores one list and one search answer (PF-6). Real directories, real
files; Hermes' variables are passed in as a mapping."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from hermes_state.across_profiles import merge_listed, merge_ranked, open_each
from hermes_state.profiles import DEFAULT, ProfileError, discover, hermes_root, normalize, read_active


def env(home: Path | None, **more: str) -> dict[str, str]:
    values = {"HERMES_HOME": str(home)} if home is not None else {}
    values.update(more)
    return values


def test_every_profile_with_a_valid_name_is_found_default_first(profiles_home):
    found = discover(env(profiles_home))
    assert found.root == profiles_home
    # (deleted "gone", a name that is no profile id and the dot directory are not profiles)
    assert found.names == ["default", "broken", "coder", "fresh", "old"]
    assert found.all[0].home == profiles_home
    assert found.named("coder").db_path == profiles_home / "profiles" / "coder" / "state.db"


def test_only_profiles_with_a_store_are_read_across(profiles_home):
    names = [p.name for p in discover(env(profiles_home)).with_stores()]
    assert names == ["default", "broken", "coder", "old"]


def test_a_name_is_matched_as_upstream_matches_it(profiles_home):
    found = discover(env(profiles_home))
    assert found.named("  Coder ").name == "coder"
    assert found.named("DEFAULT").home == profiles_home
    assert normalize("Default") == DEFAULT


def test_an_unknown_name_is_one_line_naming_the_profiles(profiles_home):
    with pytest.raises(ProfileError) as caught:
        discover(env(profiles_home)).named("gone")
    message = str(caught.value)
    assert "\n" not in message
    assert "no profile 'gone'" in message and "default, broken, coder, fresh, old" in message


def test_a_run_uses_home_when_no_profile_is_sticky(profiles_home):
    assert discover(env(profiles_home)).chosen(None).home == profiles_home


def test_the_sticky_profile_is_the_one_a_run_uses(profiles_home):
    (profiles_home / "active_profile").write_text("coder\n")
    found = discover(env(profiles_home))
    assert found.chosen(None).name == "coder"
    assert found.chosen("old").name == "old"  # (a name given wins)


def test_a_sticky_default_or_empty_file_means_the_root(profiles_home):
    for text in ("default\n", "", "  \n", "\ufeffDefault"):
        (profiles_home / "active_profile").write_text(text, encoding="utf-8")
        assert read_active(profiles_home) is None
        assert discover(env(profiles_home)).chosen(None).name == "default"


def test_a_sticky_profile_that_is_gone_is_an_error_saying_how_to_change_it(profiles_home):
    (profiles_home / "active_profile").write_text("gone\n")
    found = discover(env(profiles_home))
    with pytest.raises(ProfileError, match="active profile 'gone'.*does not exist.*hermes profile use"):
        found.chosen(None)
    assert found.chosen("coder").name == "coder"  # (naming one still works)


def test_a_home_inside_profiles_is_that_profile_and_its_root_the_grandparent(profiles_home):
    (profiles_home / "active_profile").write_text("old\n")  # (ignored: HERMES_HOME names one)
    found = discover(env(profiles_home / "profiles" / "coder"))
    assert found.root == profiles_home
    assert found.chosen(None).name == "coder"
    assert "old" in found.names


def test_a_home_under_the_native_root_has_the_native_root(tmp_path, monkeypatch):
    native = tmp_path / "user" / ".hermes"
    (native / "profiles" / "work").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))  # (Path.home() reads it)
    values = {"HERMES_HOME": str(native / "profiles" / "work")}
    assert hermes_root(values) == native
    assert hermes_root({}) == native
    assert hermes_root({"HERMES_DATA_DIR_SUFFIX": "-dev"}) == tmp_path / "user" / ".hermes-dev"
    assert discover(values).chosen(None).name == "work"


def test_a_home_outside_any_root_is_a_profile_of_its_own(tmp_path):
    home = tmp_path / "elsewhere"
    home.mkdir()
    found = discover(env(home))
    assert found.root == home and found.chosen(None).home == home


def test_a_broken_store_is_left_out_in_one_line_and_the_others_open(profiles_home):
    from hermes_state import open_store

    profiles = discover(env(profiles_home)).with_stores()
    opened, left = open_each(profiles, lambda p: open_store(p.db_path, "read"))
    try:
        assert [o.profile.name for o in opened] == ["default", "coder", "old"]
        assert [item.profile.name for item in left] == ["broken"]
        line = left[0].line()
        assert "\n" not in line and "broken" in line and "not a SQLite database" in line
    finally:
        for item in opened:
            item.store.close()


def row(started, pinned=0, last=None, id="x"):
    return {"id": id, "started_at": started, "pinned": pinned, "last_active": last}


def test_lists_merge_pinned_first_then_newest_start_keeping_each_stores_order():
    a = [row(5, pinned=1, id="a-pin"), row(9, id="a9"), row(3, id="a3")]
    b = [row(1, pinned=1, id="b-pin"), row(7, id="b7"), row(None, id="b-none")]
    merged = [(owner, r["id"]) for owner, r in merge_listed([("a", a), ("b", b)], by_activity=False)]
    assert merged == [("a", "a-pin"), ("b", "b-pin"), ("a", "a9"), ("b", "b7"), ("a", "a3"), ("b", "b-none")]


def test_lists_by_activity_merge_by_last_activity():
    a = [row(1, last=50, id="a50"), row(9, last=10, id="a10")]
    b = [row(2, last=30, id="b30")]
    merged = [r["id"] for _owner, r in merge_listed([("a", a), ("b", b)], by_activity=True)]
    assert merged == ["a50", "b30", "a10"]


def hit(score, ts=0.0, id=0, across=0):
    return SimpleNamespace(score=score, timestamp=ts, id=id, across=across)


def test_search_answers_rank_together_by_score_then_recency():
    a = [hit(9.0, id=1), hit(2.0, id=2), hit(None, ts=100, id=3)]
    b = [hit(5.0, id=4), hit(None, ts=200, id=5)]
    merged = [(owner, h.id) for owner, h in merge_ranked([("a", a), ("b", b)])]
    assert merged == [("a", 1), ("b", 4), ("a", 2), ("b", 5), ("a", 3)]


def test_a_conversation_found_across_messages_follows_every_store_s_message_level_hits():
    """SR-17 across stores: a message holding the words comes before a conversation whose
    messages hold them between them, whatever the scores -- bm25 (a small store's can be tiny)
    and a share of the query's words are not on one scale."""
    a = [hit(0.9, id=1, across=2), hit(0.5, id=2, across=3)]  # (all found across messages)
    b = [hit(0.2, id=3), hit(0.1, id=4)]  # (a small store: its words in most messages)
    merged = [h.id for _owner, h in merge_ranked([("a", a), ("b", b)])]
    assert merged == [3, 4, 1, 2]


def test_a_store_whose_hits_are_out_of_key_order_keeps_its_own_order():
    a = [hit(1.0, id=1), hit(8.0, id=2)]  # (its own ranking: kept)
    merged = [h.id for _owner, h in merge_ranked([("a", a), ("b", [hit(5.0, id=3)])])]
    assert merged.index(1) < merged.index(2)
