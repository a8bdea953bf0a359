"""SPEC §8 (LI-1 … LI-14): listing and lineage, including broken links and parent cycles."""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from hermes_state import SessionDB
from hermes_state.lineage import EdgeKind


@contextmanager
def foreign_keys_off(db: SessionDB):
    db._conn.execute("PRAGMA foreign_keys=OFF")
    try:
        yield
    finally:
        db._conn.execute("PRAGMA foreign_keys=ON")


def set_parent(db: SessionDB, sid: str, parent: str | None) -> None:
    with foreign_keys_off(db):
        db._execute_write(lambda conn: conn.execute(
            "UPDATE sessions SET parent_session_id = ? WHERE id = ?", (parent, sid)))


def linear_chain(db: SessionDB, n: int, end_reason: str | None = None) -> None:
    """Sessions n0 <- n1 <- ... <- n{n-1} (each the parent of the next), in one write."""

    def do(conn):
        for i in range(n):
            conn.execute(
                "INSERT INTO sessions (id, source, started_at, ended_at, end_reason, parent_session_id) "
                "VALUES (?, 'cli', ?, ?, ?, ?)",
                (f"n{i}", i * 10, i * 10 + 10 if end_reason else None, end_reason,
                 f"n{i - 1}" if i else None),
            )

    db._execute_write(do)


def listed_ids(db: SessionDB, **kw) -> list[str]:
    return [row["id"] for row in db.list_sessions_rich(**kw)]


@pytest.fixture
def family(db: SessionDB, make_session):
    """A parent of each edge kind of LI-1, with one child each (times in seconds)."""
    make_session(db, "comp", started_at=100, ended_at=200, end_reason="compression",
                 messages=[("user", "compress me")])
    make_session(db, "comp_child", started_at=200, parent_session_id="comp",
                 messages=[("user", "continued")])
    make_session(db, "br", started_at=300, ended_at=400, end_reason="branched")
    make_session(db, "br_child", started_at=450, parent_session_id="br")
    make_session(db, "live", started_at=500)
    make_session(db, "live_child", started_at=510, parent_session_id="live")
    make_session(db, "ended", started_at=600, ended_at=700, end_reason="compression")
    make_session(db, "early_child", started_at=650, parent_session_id="ended")  # before the end
    make_session(db, "other", started_at=800, ended_at=900, end_reason="user_exit")
    make_session(db, "other_child", started_at=950, parent_session_id="other")
    return db


# ---------------------------------------------------------------- LI-1


def test_li1_edge_kinds_and_default_visibility(family: SessionDB):
    db = family
    kinds = {}
    for root in ("comp", "br", "live", "ended", "other"):
        tree = db.lineage_tree(root)
        for node in tree.walk():
            if node.edge is not None:
                kinds[node.id] = node.edge
    assert kinds == {
        "comp_child": EdgeKind.COMPRESSION,
        "br_child": EdgeKind.BRANCH,
        "live_child": EdgeKind.DELEGATE,
        "early_child": EdgeKind.DELEGATE,
        "other_child": EdgeKind.OTHER,
    }
    visible = set(listed_ids(db, project_compression_tips=False))
    assert visible == {"comp", "br", "br_child", "live", "ended", "other"}


def test_li1_branch_started_before_end_is_a_delegate(db: SessionDB, make_session):
    make_session(db, "p", started_at=100, ended_at=200, end_reason="branched")
    make_session(db, "c", started_at=150, parent_session_id="p")
    assert listed_ids(db) == ["p"]
    assert db.lineage_tree("p").children[0].edge is EdgeKind.DELEGATE


def test_li1_broken_link_treated_as_root(db: SessionDB, make_session):
    make_session(db, "orphan", started_at=100, messages=[("user", "lost parent")])
    set_parent(db, "orphan", "deleted-long-ago")
    assert listed_ids(db) == ["orphan"]
    assert db.get_ancestors("orphan") == ["orphan"]
    assert db.get_session_chain("orphan") == ["orphan"]
    assert db.get_lineage_root("orphan") == "orphan"
    tree = db.lineage_tree("orphan")
    assert tree.id == "orphan" and tree.broken_parent is True
    assert db.get_compression_tip("orphan") == "orphan"
    assert db.get_messages_as_conversation("orphan", include_ancestors=True)[0]["content"] == "lost parent"


# ---------------------------------------------------------------- LI-2


def test_li2_filters_order_and_paging(db: SessionDB, make_session):
    make_session(db, "a", source="cli", started_at=100)
    make_session(db, "b", source="telegram", started_at=300)
    make_session(db, "c", source="tool", started_at=200)
    make_session(db, "d", source="cli", started_at=400)
    make_session(db, "d_kid", source="cli", started_at=410, parent_session_id="d")
    assert listed_ids(db) == ["d", "b", "c", "a"]
    assert listed_ids(db, source="cli") == ["d", "a"]
    assert listed_ids(db, exclude_sources=["tool", "telegram"]) == ["d", "a"]
    assert listed_ids(db, source="cli", exclude_sources=["cli"]) == []
    assert listed_ids(db, limit=2) == ["d", "b"]
    assert listed_ids(db, limit=2, offset=2) == ["c", "a"]
    assert listed_ids(db, include_children=True) == ["d_kid", "d", "b", "c", "a"]
    assert listed_ids(db, source="", exclude_sources=[]) == ["d", "b", "c", "a"]


def test_li2_order_is_start_not_last_activity(db: SessionDB, make_session):
    make_session(db, "old", started_at=100, messages=[{"role": "user", "content": "x", "timestamp": 10_000}])
    make_session(db, "new", started_at=200)
    assert listed_ids(db) == ["new", "old"]


def test_li2_each_item_full_row_plus_preview_and_last_active(db: SessionDB, make_session):
    make_session(db, "s", started_at=100, messages=[("user", "hello")])
    row = db.list_sessions_rich()[0]
    assert set(row) == set(db.get_session("s")) | {"preview", "last_active"}
    assert row["preview"] == "hello" and row["last_active"] == 101


def test_li2_limit_offset_applied_before_projection(db: SessionDB, make_session):
    make_session(db, "root", started_at=100, ended_at=150, end_reason="compression")
    make_session(db, "tip", started_at=500, parent_session_id="root")
    make_session(db, "mid", started_at=300)
    # Ordered by the root's start (100), not the tip's (500).
    assert listed_ids(db) == ["mid", "tip"]
    assert listed_ids(db, limit=1) == ["mid"]
    assert listed_ids(db, limit=1, offset=1) == ["tip"]


# ---------------------------------------------------------------- LI-3


@pytest.mark.parametrize(
    "content,preview",
    [
        ("A" * 100, "A" * 60 + "..."),
        ("Line one\nLine two", "Line one Line two"),
        ("\n\n   " + "A" * 100, "A" * 58),
        ("a\r\nb", "a  b"),
        ("tab\there", "tab\there"),
        ("", ""),
        ("  short  ", "short"),
        ("B" * 60, "B" * 60),
        ("B" * 61, "B" * 60 + "..."),
        ("\n" * 70, ""),
        ("日本語" * 30, ("日本語" * 30)[:60] + "..."),
    ],
)
def test_li3_preview_examples(db: SessionDB, make_session, content, preview):
    make_session(db, "s", messages=[("user", content)])
    assert db.list_sessions_rich()[0]["preview"] == preview


def test_li3_preview_from_first_user_message_with_content(db: SessionDB, make_session):
    make_session(db, "s", messages=[
        ("system", "system text"),
        ("assistant", "assistant text"),
        {"role": "user", "content": None},
        ("user", "the first real prompt"),
        ("user", "second prompt"),
    ])
    make_session(db, "none", started_at=0, messages=[("assistant", "no user here")])
    rows = {r["id"]: r for r in db.list_sessions_rich()}
    assert rows["s"]["preview"] == "the first real prompt"
    assert rows["none"]["preview"] == ""


def test_li3_empty_first_user_message_counts(db: SessionDB, make_session):
    make_session(db, "s", messages=[("user", ""), ("user", "later")])
    assert db.list_sessions_rich()[0]["preview"] == ""


def test_li3_order_by_timestamp_then_id(db: SessionDB, make_session):
    make_session(db, "s", messages=[
        {"role": "user", "content": "inserted first", "timestamp": 50},
        {"role": "user", "content": "inserted second", "timestamp": 40},
    ])
    assert db.list_sessions_rich()[0]["preview"] == "inserted second"


# ---------------------------------------------------------------- LI-4


def test_li4_last_active(db: SessionDB, make_session):
    make_session(db, "empty", started_at=123.5)
    make_session(db, "busy", started_at=100, messages=[
        {"role": "user", "content": "a", "timestamp": 900},
        {"role": "user", "content": "b", "timestamp": 500},
    ])
    rows = {r["id"]: r for r in db.list_sessions_rich()}
    assert rows["empty"]["last_active"] == 123.5
    assert rows["busy"]["last_active"] == 900


# ---------------------------------------------------------------- LI-5


def test_li5_projection_copies_tip_fields(db: SessionDB, make_session):
    make_session(db, "root", source="telegram", started_at=100, ended_at=200, end_reason="compression",
                 model="root-model", title="trip", messages=[("user", "root prompt")])
    db.update_token_counts("root", input_tokens=111, output_tokens=22, estimated_cost_usd=0.5)
    db.update_system_prompt("root", "root prompt sys")
    make_session(db, "tip", source="telegram", started_at=200, parent_session_id="root",
                 model="tip-model", title="trip #2",
                 messages=[{"role": "user", "content": "tip prompt", "timestamp": 260},
                           {"role": "assistant", "content": "x", "tool_calls": [{"id": 1}], "timestamp": 270}])
    db.update_system_prompt("tip", "tip sys")
    db.update_token_counts("tip", input_tokens=5)
    [row] = db.list_sessions_rich()
    root = db.get_session("root")
    tip = db.get_session("tip")
    for field in ("id", "ended_at", "end_reason", "message_count", "tool_call_count", "title",
                  "model", "system_prompt"):
        assert row[field] == tip[field], field
    assert row["preview"] == "tip prompt" and row["last_active"] == 270
    assert row["_lineage_root_id"] == "root"
    for field in ("started_at", "source", "input_tokens", "output_tokens", "estimated_cost_usd",
                  "parent_session_id", "user_id", "model_config"):
        assert row[field] == root[field], field


def test_li5_multi_level_chain_and_hidden_delegates(db: SessionDB, make_session):
    make_session(db, "r", started_at=100, ended_at=200, end_reason="compression")
    make_session(db, "delegate", started_at=150, parent_session_id="r")
    make_session(db, "c1", started_at=200, ended_at=300, end_reason="compression", parent_session_id="r")
    make_session(db, "c2", started_at=300, parent_session_id="c1")
    rows = db.list_sessions_rich()
    assert [(r["id"], r["_lineage_root_id"]) for r in rows] == [("c2", "r")]


def test_li5_no_projection_cases(db: SessionDB, make_session):
    make_session(db, "lonely", started_at=100, ended_at=200, end_reason="compression")  # no continuation
    make_session(db, "r", started_at=300, ended_at=400, end_reason="compression")
    make_session(db, "t", started_at=400, parent_session_id="r")
    make_session(db, "plain", started_at=500)
    rows = {r["id"]: r for r in db.list_sessions_rich()}
    assert set(rows) == {"lonely", "t", "plain"}
    assert "_lineage_root_id" not in rows["lonely"] and "_lineage_root_id" not in rows["plain"]
    unprojected = db.list_sessions_rich(project_compression_tips=False)
    assert [r["id"] for r in unprojected] == ["plain", "r", "lonely"]
    assert all("_lineage_root_id" not in r for r in unprojected)
    with_children = db.list_sessions_rich(include_children=True)
    assert [r["id"] for r in with_children] == ["plain", "t", "r", "lonely"]
    assert all("_lineage_root_id" not in r for r in with_children)


# ---------------------------------------------------------------- LI-6


def test_li6_search_sessions_mru_order_children_and_tool_included(db: SessionDB, make_session):
    make_session(db, "a", started_at=100, messages=[{"role": "user", "content": "x", "timestamp": 1000}])
    make_session(db, "b", started_at=500)
    make_session(db, "kid", started_at=600, parent_session_id="a", source="tool")
    make_session(db, "t1", started_at=300, messages=[{"role": "user", "content": "x", "timestamp": 700}])
    make_session(db, "t2", started_at=400, messages=[{"role": "user", "content": "x", "timestamp": 700}])
    make_session(db, "z", started_at=400, messages=[{"role": "user", "content": "x", "timestamp": 700}])
    rows = db.search_sessions()
    assert [r["id"] for r in rows] == ["a", "z", "t2", "t1", "kid", "b"]
    assert rows[0]["last_active"] == 1000 and rows[-1]["last_active"] == 500
    assert set(rows[0]) == set(db.get_session("a")) | {"last_active"}
    assert [r["id"] for r in db.search_sessions(source="tool")] == ["kid"]
    assert [r["id"] for r in db.search_sessions(limit=2, offset=1)] == ["z", "t2"]


# ---------------------------------------------------------------- LI-7


def test_li7_compression_tip(family: SessionDB, make_session):
    db = family
    assert db.get_compression_tip("comp") == "comp_child"
    assert db.get_compression_tip("comp_child") == "comp_child"
    assert db.get_compression_tip("br") == "br"  # branches are not followed
    assert db.get_compression_tip("ended") == "ended"  # delegate (started before end) not followed
    assert db.get_compression_tip("unknown-id") == "unknown-id"
    make_session(db, "comp_child2", started_at=250, parent_session_id="comp")
    assert db.get_compression_tip("comp") == "comp_child2"  # most recently started continuation


def test_li7_a_chain_longer_than_100_segments_resumes_at_its_live_tip(db: SessionDB, make_session):
    # A gateway chat that compressed 150 times was resumed at #101 under a 100-step bound.
    linear_chain(db, 150, end_reason="compression")
    assert db.get_compression_tip("n0") == "n149"
    assert db.get_compression_tip("n50") == "n149"


def test_li7_compression_cycle_terminates(db: SessionDB, make_session):
    make_session(db, "x", started_at=100, ended_at=100, end_reason="compression")
    make_session(db, "y", started_at=100, ended_at=100, end_reason="compression", parent_session_id="x")
    set_parent(db, "x", "y")
    assert db.get_compression_tip("x") in {"x", "y"}


# ---------------------------------------------------------------- LI-8


def test_li8_resume_redirects_empty_head(db: SessionDB, make_session):
    make_session(db, "head", started_at=100, ended_at=200, end_reason="compression")
    make_session(db, "mid", started_at=200, ended_at=300, end_reason="compression", parent_session_id="head")
    make_session(db, "older", started_at=250, parent_session_id="mid", messages=[("user", "x")])
    make_session(db, "tail", started_at=300, parent_session_id="mid", messages=[("user", "y")])
    make_session(db, "full", started_at=400, messages=[("user", "z")])
    assert db.resolve_resume_session_id("head") == "tail"  # latest child at each level
    assert db.resolve_resume_session_id("full") == "full"
    assert db.resolve_resume_session_id("") == ""
    assert db.resolve_resume_session_id(None) is None
    assert db.resolve_resume_session_id("unknown") == "unknown"


def test_li8_tie_on_started_at_broken_by_id(db: SessionDB, make_session):
    make_session(db, "head", started_at=100)
    make_session(db, "kid_a", started_at=200, parent_session_id="head", messages=[("user", "a")])
    make_session(db, "kid_b", started_at=200, parent_session_id="head", messages=[("user", "b")])
    assert db.resolve_resume_session_id("head") == "kid_b"


def test_li8_no_messages_anywhere_and_depth_limit(db: SessionDB, make_session):
    make_session(db, "e0", started_at=0)
    for i in range(1, 40):
        make_session(db, f"e{i}", started_at=i, parent_session_id=f"e{i - 1}")
    assert db.resolve_resume_session_id("e0") == "e0"
    db.append_message("e35", "user", content="too deep")
    assert db.resolve_resume_session_id("e0") == "e0"  # 35 levels > 32
    db.append_message("e32", "user", content="just reachable")
    assert db.resolve_resume_session_id("e0") == "e32"


def test_li8_cycle_stops(db: SessionDB, make_session):
    make_session(db, "p", started_at=1)
    make_session(db, "q", started_at=2, parent_session_id="p")
    set_parent(db, "p", "q")
    assert db.resolve_resume_session_id("p") == "p"


def test_li8_database_error_returns_input(db_path):
    db = SessionDB(db_path)
    db.close()
    assert db.resolve_resume_session_id("abc") == "abc"


# ---------------------------------------------------------------- LI-9


def test_li9_resolve_reference_id_title_then_tip(db: SessionDB, make_session):
    make_session(db, "root", started_at=100, ended_at=200, end_reason="compression", title="trip")
    make_session(db, "tip", started_at=200, parent_session_id="root")
    make_session(db, "plain", started_at=300, title="notes")
    assert db.resolve_session_reference("root") == "tip"
    assert db.resolve_session_reference("trip") == "tip"
    assert db.resolve_session_reference("notes") == "plain"
    assert db.resolve_session_reference("plain") == "plain"
    assert db.resolve_session_reference("nothing") is None


# ---------------------------------------------------------------- LI-10, LI-11, LI-12


def test_li10_ancestors_nearest_first(db: SessionDB, make_session):
    make_session(db, "a", started_at=1)
    make_session(db, "b", started_at=2, parent_session_id="a")
    make_session(db, "c", started_at=3, parent_session_id="b")
    assert db.get_ancestors("c") == ["c", "b", "a"]
    assert db.get_ancestors("a") == ["a"]
    assert db.get_ancestors("unknown") == []


def test_li10_ancestors_cycle_safe(db: SessionDB, make_session):
    make_session(db, "a", started_at=1)
    make_session(db, "b", started_at=2, parent_session_id="a")
    make_session(db, "c", started_at=3, parent_session_id="b")
    set_parent(db, "a", "c")
    assert db.get_ancestors("c") == ["c", "b", "a"]


def test_li10_ancestors_of_a_long_chain_reach_its_root_nearest_first(db: SessionDB, make_session):
    linear_chain(db, 150)
    got = db.get_ancestors("n149")
    assert got == [f"n{i}" for i in range(149, -1, -1)]


def test_li11_descendants_by_depth_cycle_safe(db: SessionDB, make_session):
    make_session(db, "r", started_at=1)
    make_session(db, "k1", started_at=2, parent_session_id="r")
    make_session(db, "k2", started_at=3, parent_session_id="r")
    make_session(db, "g", started_at=4, parent_session_id="k1")
    got = db.get_descendants("r")
    assert got[0] == "r" and set(got[1:3]) == {"k1", "k2"} and got[3] == "g" and len(got) == 4
    assert db.get_descendants("g") == ["g"]
    set_parent(db, "r", "g")  # r -> k1 -> g -> r
    got = db.get_descendants("r")
    assert sorted(got) == ["g", "k1", "k2", "r"] and got[0] == "r"


def test_li12_chain_root_to_session(db: SessionDB, make_session):
    make_session(db, "a", started_at=1)
    make_session(db, "b", started_at=2, parent_session_id="a")
    make_session(db, "c", started_at=3, parent_session_id="b")
    assert db.get_session_chain("c") == ["a", "b", "c"]
    assert db.get_session_chain("a") == ["a"]
    assert db.get_session_chain("") == [""]
    assert db.get_session_chain(None) == [None]
    set_parent(db, "a", "c")  # cycle: stops at the repeated id
    chain = db.get_session_chain("c")
    assert chain[-1] == "c" and sorted(chain) == ["a", "b", "c"]
    set_parent(db, "a", "vanished")  # broken link: stops at the missing row
    assert db.get_session_chain("c") == ["a", "b", "c"]


def test_li12_chain_of_a_long_lineage_starts_at_its_root(db: SessionDB, make_session):
    linear_chain(db, 130)
    chain = db.get_session_chain("n129")
    assert chain == [f"n{i}" for i in range(130)]


def test_li10_li11_li12_cycle_everywhere_never_hangs(db: SessionDB, make_session):
    make_session(db, "a", started_at=1, ended_at=2, end_reason="compression", messages=[("user", "hi")])
    make_session(db, "b", started_at=2, ended_at=3, end_reason="compression", parent_session_id="a")
    set_parent(db, "a", "b")
    assert set(db.get_ancestors("a")) == {"a", "b"}
    assert set(db.get_descendants("a")) == {"a", "b"}
    assert sorted(db.get_session_chain("a")) == ["a", "b"]
    tree = db.lineage_tree("a")
    assert {n.id for n in tree.walk()} == {"a", "b"}
    assert any(n.cycle for n in tree.walk())
    db.list_sessions_rich()
    db.list_sessions_rich(include_children=True)
    db.get_messages_as_conversation("b", include_ancestors=True)
    db.resolve_resume_session_id("b")


# ---------------------------------------------------------------- LI-13


def test_li13_lineage_tree(family: SessionDB, make_session):
    db = family
    make_session(db, "comp_child_delegate", started_at=210, parent_session_id="comp_child")
    tree = db.lineage_tree("comp_child")
    assert tree.id == "comp" and tree.edge is None
    child = tree.find("comp_child")
    assert child.edge is EdgeKind.COMPRESSION and child.is_live_tip and child.is_current
    assert child.message_count == 1 and child.started_at == 200
    assert tree.end_reason == "compression" and not tree.is_live_tip
    assert child.find("comp_child_delegate").edge is EdgeKind.DELEGATE
    assert db.lineage_tree("missing") is None


# ---------------------------------------------------------------- LI-14


def test_li14_delete_and_prune_orphan_children(db: SessionDB, make_session):
    make_session(db, "p", started_at=100, ended_at=200, end_reason="compression")
    make_session(db, "c", started_at=200, parent_session_id="p", messages=[("user", "keep")])
    assert listed_ids(db) == ["c"]  # projected
    assert db.delete_session("p") is True
    assert db.get_session("c")["parent_session_id"] is None
    assert listed_ids(db) == ["c"] and "_lineage_root_id" not in db.list_sessions_rich()[0]
    assert db.get_messages("c")[0]["content"] == "keep"
    make_session(db, "old", started_at=1, ended_at=2, end_reason="user_exit")
    make_session(db, "young", started_at=3, parent_session_id="old")
    assert db.prune_sessions(older_than_days=1) == 1
    assert db.get_session("young")["parent_session_id"] is None
    assert "young" in listed_ids(db)


def test_li13_only_a_live_chain_tip_is_marked(db: SessionDB, make_session):
    make_session(db, "root", started_at=100, ended_at=200, end_reason="compression")
    make_session(db, "mid", started_at=200, ended_at=300, end_reason="compression", parent_session_id="root")
    make_session(db, "tip", started_at=300, parent_session_id="mid")
    make_session(db, "delegate", started_at=310, parent_session_id="tip")
    make_session(db, "lonely", started_at=500, ended_at=600, end_reason="compression")
    tree = db.lineage_tree("root")
    assert {n.id for n in tree.walk() if n.is_live_tip} == {"tip"} == {db.get_compression_tip("root")}
    assert not db.lineage_tree("lonely").is_live_tip  # nothing continues it
    db.end_session("tip", "user_exit")  # the chain's tip (LI-7) is no longer live
    assert db.get_compression_tip("root") == "tip"
    assert {n.id for n in db.lineage_tree("root").walk() if n.is_live_tip} == set()
