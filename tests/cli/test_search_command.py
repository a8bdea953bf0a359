"""``hermes-sessions search QUERY...`` as a person and a script run it: real processes on real
stores -- stores these tests build through the library's public API, and copies of upstream's
own (``../shared/fixtures``, skipped when absent). The answer is the browser's (conversations,
ranked, named and marked as the list shows them); data alone on stdout, the rest on stderr,
never a traceback, and the store is never written."""

from __future__ import annotations

import hashlib
import json
import os
import pty
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_state.unread import set_read

from process_helpers import REPO, assert_store_sound, hermes, shape

DAY = 86400.0
#: Ids of the store built by :func:`remembered` (what the person remembers is CADDY).
CADDY, CADDY_ONLY, UDP_ONLY, TELEGRAM, OLD = (
    "20261001_120000_caddy", "20261002_120000_conly", "20261003_120000_udpon",
    "20261004_120000_teleg", "20250101_120000_old01",
)
#: The v30 fixture's conversations (its README, beside the upstream stores, describes them).
K1, R1, C1, C3 = "20260921_150000_k1", "20260921_140000_r1", "20260921_120000_c1", "20260921_122000_c3"


@pytest.fixture
def remembered(tmp_path: Path, make_session, fixed_now) -> Path:
    """A ``HERMES_HOME`` whose store holds "the caddy thing where we added a udp rule" (the
    words in different messages), conversations holding only some of the words, one on
    telegram, and an old one; returns the home."""
    home = tmp_path / "home"
    home.mkdir()
    db = SessionDB(home / "state.db")
    try:
        make_session(db, CADDY, title="reverse proxy", started_at=fixed_now, ended_at=fixed_now + 600, messages=[
            ("user", "set up caddy as the reverse proxy for the game host"),
            ("assistant", "Caddy is configured; the site answers on 443."),
            ("user", "now we need a udp rule for the voice port"),
            ("assistant", "Added the firewall rule: udp 9987 is open."),
        ])
        make_session(db, CADDY_ONLY, started_at=fixed_now + DAY, ended_at=fixed_now + DAY + 60, messages=[
            ("user", "why does caddy renew certificates so often"), ("assistant", "it renews early")])
        make_session(db, UDP_ONLY, started_at=fixed_now + 2 * DAY, ended_at=fixed_now + 2 * DAY + 60, messages=[
            ("user", "what is a udp rule in nftables"), ("assistant", "a rule matching udp packets")])
        make_session(db, TELEGRAM, source="telegram", started_at=fixed_now + 3 * DAY, messages=[
            ("user", "caddy logs on the phone please"), ("assistant", "here are the caddy logs")])
        make_session(db, OLD, started_at=fixed_now - 300 * DAY, ended_at=fixed_now - 300 * DAY + 60, messages=[
            ("user", "old caddy question"), ("assistant", "answered: add a udp rule")])
    finally:
        db.close()
    return home


def blocks(stdout: str) -> list[list[str]]:
    """The text output's blocks (one per conversation), each its lines."""
    return [block.splitlines() for block in stdout.strip("\n").split("\n\n")] if stdout.strip() else []


def ids_in(stdout: str) -> list[str]:
    return [block[0].split()[0] for block in blocks(stdout)]


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def untouched(path: Path):
    """What a read must leave as it was: the file's bytes and its mtime, what its log holds
    (a reader may make an empty ``-wal`` beside a WAL store: SQLite's own doing, no data),
    the schema and its version."""
    def state():
        wal = Path(f"{path}-wal")
        held = wal.stat().st_size if wal.exists() else 0
        return (path.stat().st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest(), held, shape(path))
    return state


# ---------------------------------------------------------------------------- what it finds


def test_words_from_different_messages_find_the_conversation_first(remembered):
    result = hermes(remembered, "search", "caddy", "udp", "rule")
    assert result.returncode == 0, result.stderr
    found = ids_in(result.stdout)
    # Both hold the words across messages; the one from last week ranks above last year's.
    assert found == [CADDY, OLD], result.stdout
    assert CADDY_ONLY not in found and UDP_ONLY not in found  # (each holds only some words)
    [block] = [b for b in blocks(result.stdout) if b[0].startswith(CADDY)]
    assert block[0].split(None, 1)[1].strip() == "reverse proxy"
    assert "found across 2 messages" in block[1]
    assert ">>>" in "\n".join(block[2:]) and "<<<" in "\n".join(block[2:])  # (piped: grep finds the match)
    summary = one_line(result.stderr)
    assert summary.startswith(f"{len(found)} conversation") and "ranked by relevance" in summary


def test_each_block_names_the_conversation_its_source_activity_and_up_to_three_hits(remembered):
    result = hermes(remembered, "search", "caddy")
    assert result.returncode == 0, result.stderr
    by_id = {block[0].split()[0]: block for block in blocks(result.stdout)}
    assert set(by_id) == {CADDY, CADDY_ONLY, TELEGRAM, OLD}
    caddy = by_id[CADDY]
    assert "cli" in caddy[1] and "last active 2025-03-0" in caddy[1] and "2 hits" in caddy[1]
    hit_lines = caddy[2:]
    assert len(hit_lines) == 2 and {line.split()[0] for line in hit_lines} == {"user", "assistant"}
    for line in hit_lines:
        assert line.split()[1].count("-") == 2  # (its date)
        assert ">>>" in line.lower() and "caddy<<<" in line.lower()


def test_a_compressed_conversation_is_shown_under_the_id_list_shows_and_resume_takes(upstream_copy):
    home = upstream_copy(30).parent
    result = hermes(home, "search", "COMPACTEDWORD", "--json")
    assert result.returncode == 0, result.stderr
    [conversation] = json.loads(result.stdout)["conversations"]
    assert conversation["id"] == C3 and conversation["root_id"] == C1
    listed = hermes(home, "list", "--json", "--limit", "100")
    assert C3 in {row["id"] for row in json.loads(listed.stdout)["sessions"]}


def test_the_json_document_has_the_promised_shape(remembered):
    result = hermes(remembered, "search", "caddy", "udp", "rule", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert list(document) == ["version", "command", "query", "ranking", "path", "order", "conversations"]
    assert document["version"] == 1 and document["command"] == "search"
    assert document["query"] == "caddy udp rule" and document["order"] == "relevance"
    # (found across messages alone: no message-level ranking ran, the conversations' did)
    assert document["path"] == "fts5" and isinstance(document["ranking"], str)
    conversations = document["conversations"]
    assert conversations
    for item in conversations:
        assert list(item) == ["id", "root_id", "title", "label", "source", "archived", "hidden", "unread",
                              "status", "last_active", "hit_count", "across", "hits"]
        assert item["hit_count"] == len(item["hits"]) > 0
        for hit in item["hits"]:
            assert list(hit) == ["session_id", "message_id", "role", "timestamp", "snippet", "spans", "score"]
            for start, end in hit["spans"]:
                assert 0 <= start < end <= len(hit["snippet"])
    caddy = next(item for item in conversations if item["id"] == CADDY)
    assert caddy["title"] == "reverse proxy" and caddy["source"] == "cli" and caddy["status"] == "complete"
    assert caddy["across"] == 2 and caddy["archived"] is False
    assert "profile" not in caddy  # (one profile: no profile field)


def test_limit_and_order_newest(remembered):
    newest = json.loads(hermes(remembered, "search", "caddy", "--order", "newest", "--json").stdout)
    assert newest["order"] == "newest"
    best = [max(hit["timestamp"] for hit in item["hits"]) for item in newest["conversations"]]
    assert best == sorted(best, reverse=True) and len(best) == 4
    two = hermes(remembered, "search", "caddy", "--order", "newest", "--limit", "2")
    assert two.returncode == 0, two.stderr
    assert ids_in(two.stdout) == [item["id"] for item in newest["conversations"][:2]]
    assert "more with --limit" in two.stderr


def test_words_typed_after_an_option_are_words_of_the_query(remembered):
    split = hermes(remembered, "search", "caddy", "--json", "udp", "rule")
    assert split.returncode == 0, split.stderr
    document = json.loads(split.stdout)
    assert document["query"] == "caddy udp rule"
    assert [item["id"] for item in document["conversations"]] == [CADDY, OLD]
    bad = hermes(remembered, "search", "caddy", "--json", "--no-such-option")
    assert bad.returncode == 2 and "unrecognized arguments: --no-such-option" in bad.stderr


# ---------------------------------------------------------------------------- filters


def test_source_and_since_filters_keep_the_conversations_list_would(remembered, fixed_now):
    telegram = hermes(remembered, "search", "caddy", "--source", "telegram")
    assert telegram.returncode == 0, telegram.stderr
    assert ids_in(telegram.stdout) == [TELEGRAM]
    recent = hermes(remembered, "search", "caddy", "--since", "2025-01-01")
    assert recent.returncode == 0, recent.stderr
    assert OLD not in ids_in(recent.stdout) and CADDY in ids_in(recent.stdout)
    # The query's own time terms narrow the same window (the browser's field).
    termed = hermes(remembered, "search", "caddy", "after:2025-01-01")
    assert ids_in(termed.stdout) == ids_in(recent.stdout)


def test_filters_that_leave_every_match_out_say_so_in_one_line(remembered):
    result = hermes(remembered, "search", "caddy", "--until", "2020-01-01")
    assert result.returncode == 0 and result.stdout == ""
    line = one_line(result.stderr)
    assert line.startswith("No conversation found") and "left out by the time window" in line
    both = one_line(hermes(remembered, "search", "caddy", "--until", "2020-01-01", "--status", "done").stderr)
    assert "left out by the time window and the status filter" in both


def test_unread_on_a_v30_store_keeps_the_unread_conversations(upstream_copy):
    path = upstream_copy(30)
    writer = SessionDB(path)
    try:
        set_read(writer.store, K1, False)  # (upstream's "mark as unread")
        set_read(writer.store, R1, True, now=2_000_000_000.0)
    finally:
        writer.close()
    everything = json.loads(hermes(path.parent, "search", "the", "--json").stdout)["conversations"]
    unread = hermes(path.parent, "search", "the", "--unread", "--json")
    assert unread.returncode == 0, unread.stderr
    kept = json.loads(unread.stdout)["conversations"]
    assert [item["id"] for item in kept] == [item["id"] for item in everything if item["unread"]]
    assert K1 in [item["id"] for item in kept] and R1 not in [item["id"] for item in kept]


def test_status_keeps_the_conversations_whose_last_turn_ended_so(upstream_copy):
    home = upstream_copy(30).parent
    everything = json.loads(hermes(home, "search", "the", "--json").stdout)["conversations"]
    result = hermes(home, "search", "the", "--status", "intr", "--json")
    assert result.returncode == 0, result.stderr
    kept = json.loads(result.stdout)["conversations"]
    assert kept and [item["id"] for item in kept] == [
        item["id"] for item in everything if item["status"] == "interrupted"]
    assert len(kept) < len(everything)


def test_unread_on_a_store_that_does_not_track_it_says_so(upstream_copy):
    home = upstream_copy(16).parent
    result = hermes(home, "search", "docker", "--unread")
    assert result.returncode == 0 and result.stdout == ""
    assert "unread is not tracked" in result.stderr and "Traceback" not in result.stderr


def test_hidden_sessions_and_internal_runs_are_searched_only_when_asked(upstream_copy):
    home = upstream_copy(30).parent
    for word, mark in (("HIDDENSESSIONWORD", "hidden"), ("kanban", None)):
        plain = hermes(home, "search", word, "--json")
        assert plain.returncode == 0 and json.loads(plain.stdout)["conversations"] == [], plain.stdout
        asked = json.loads(hermes(home, "search", word, "--hidden", "--json").stdout)["conversations"]
        assert len(asked) == 1, asked
        if mark:
            assert asked[0][mark] is True


# ---------------------------------------------------------------------------- profiles


def test_across_profiles_each_conversation_names_its_profile_and_the_broken_one_is_named_once(profiles_home):
    result = hermes(profiles_home, "search", "docker", "--all-profiles", "--json", "--limit", "50")
    assert result.returncode == 0, result.stderr
    broken = [line for line in result.stderr.splitlines() if "broken" in line]
    assert len(broken) == 1 and "left out" in broken[0] and "Traceback" not in result.stderr
    conversations = json.loads(result.stdout)["conversations"]
    profiles = {item["profile"] for item in conversations}
    assert profiles <= {"default", "coder", "old"} and len(profiles) >= 2
    # Ids collide across profiles (the default store holds the v16 ids): each is its own.
    by_id: dict[str, set[str]] = {}
    for item in conversations:
        by_id.setdefault(item["id"], set()).add(item["profile"])
    assert any(len(names) > 1 for names in by_id.values()), by_id
    for name in profiles:
        alone = json.loads(hermes(profiles_home, "search", "docker", "--profile", name, "--json",
                                  "--limit", "50").stdout)["conversations"]
        assert [item["id"] for item in conversations if item["profile"] == name] == [i["id"] for i in alone]


def test_across_profiles_a_store_that_found_nothing_does_not_explain_the_others_hits(profiles_home):
    """COMPACTEDWORD is in the v30 stores, not in the v16 one: its "no message holds the
    word" was printed under the other profiles' hits, where it was false."""
    result = hermes(profiles_home, "search", "COMPACTEDWORD", "--all-profiles")
    assert result.returncode == 0, result.stderr
    assert "COMPACTEDWORD" in result.stdout
    assert "no message holds" not in result.stderr, result.stderr
    alone = hermes(profiles_home, "search", "COMPACTEDWORD", "--profile", "old")
    assert alone.stdout == "" and "no message holds the word" in alone.stderr


def test_across_profiles_the_text_names_each_profile(profiles_home):
    result = hermes(profiles_home, "search", "docker", "--all-profiles")
    assert result.returncode == 0, result.stderr
    for block in blocks(result.stdout):
        assert block[1].lstrip().startswith("profile ")
    assert "across 3 profiles" in result.stderr


# ---------------------------------------------------------------------------- terminal safety


@pytest.fixture
def hostile_home(tmp_path: Path, make_session, fixed_now) -> Path:
    home = tmp_path / "hostile"
    home.mkdir()
    db = SessionDB(home / "state.db")
    try:
        make_session(db, "20261001_120000_esc", title="title \x1b[2J wiped", ended_at=fixed_now + 60, messages=[
            ("user", "rotate the caddy cert \x1b]0;pwned\x07 and \x1b]52;c;Y2xpcA==\x07 then \x9b31m red"),
            ("assistant", "caddy done \u202e reversed"),
        ])
    finally:
        db.close()
    return home


def test_a_message_holding_escape_sequences_prints_none_when_piped(hostile_home):
    result = hermes(hostile_home, "search", "caddy")
    assert result.returncode == 0, result.stderr
    for control in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert control not in result.stdout and control not in result.stderr
    assert "pwned" in result.stdout  # (shown, as visible characters)
    data = json.loads(hermes(hostile_home, "search", "caddy", "--json").stdout)
    snippets = " ".join(hit["snippet"] for item in data["conversations"] for hit in item["hits"])
    assert "\x1b]0;pwned\x07" in snippets  # (JSON: the stored text exactly, escaped)


def test_on_a_terminal_matches_are_emphasised_and_no_stored_escape_reaches_it(hostile_home):
    env = dict(os.environ, HERMES_HOME=str(hostile_home), TERM="xterm-256color", COLUMNS="200",
               PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("NO_COLOR", None)
    env.pop("HERMES_SESSIONS_DEBUG", None)
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "hermes_tui.cli", "sessions", "search", "caddy"],
                            stdout=child, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=REPO, env=env)
    os.close(child)
    out = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(main)
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, stderr
    text = out.decode("utf-8", "replace")
    assert "\x1b[" in text  # (the match, emphasised)
    assert "\x1b]" not in text and "\x07" not in text and "\x1b[2J" not in text
    assert "\u202e" not in text and "\x9b" not in text
    assert ">>>" not in text  # (a terminal shows emphasis, not markers)
    assert "pwned" in text


# ---------------------------------------------------------------------------- bad input, no writes


@pytest.mark.parametrize("query", [
    '"unbalanced', "NOT", "***", "OR", "AND NOT OR", "(", "NEAR(a b", '"', "'", "\\", "^", "kube*",
    "x" * 2000, " ".join(["word"] * 400), "after:", "before:2026-13-45 caddy", "caddy NOT caddy", "\x1b[31m",
    "NOT caddy",
])
def test_a_hostile_query_answers_or_explains_in_one_line_without_traceback(remembered, query):
    before = untouched(remembered / "state.db")()
    result = hermes(remembered, "search", query)
    if query == "after:":
        # (a time term waiting for its time, and nothing else: a usage error, said in one line)
        assert result.returncode == 2 and result.stderr.startswith("Error: after: needs a time")
    else:
        assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr and "\x1b" not in result.stderr + result.stdout
    if not result.stdout:
        assert result.stderr.strip(), "an empty answer says why"
        assert len([line for line in result.stderr.splitlines() if line.strip()]) <= 2  # (a left-out term's note)
    assert untouched(remembered / "state.db")() == before


def test_nothing_is_written_to_the_store(upstream_copy):
    path = upstream_copy(30)
    state = untouched(path)
    before = state()
    for args in (["the"], ["the", "--json"], ["the", "--unread"], ["COMPACTEDWORD", "--hidden"],
                 ["nowherewordzz"], ["the", "--since", "7d"], ["the", "--order", "newest"]):
        result = hermes(path.parent, "search", *args)
        assert result.returncode == 0, result.stderr
    assert state() == before
    assert_store_sound(path)
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_an_empty_answer_prints_nothing_and_says_why_in_one_line(remembered):
    result = hermes(remembered, "search", "zebra")
    assert result.returncode == 0 and result.stdout == ""
    line = one_line(result.stderr)
    assert line.startswith("No conversation found") and "zebra" in line
    as_json = hermes(remembered, "search", "zebra", "--json")
    assert as_json.returncode == 0 and json.loads(as_json.stdout)["conversations"] == []


def test_no_words_is_a_usage_error(remembered):
    result = hermes(remembered, "search", "   ")
    assert result.returncode == 2 and result.stdout == ""
    assert one_line(result.stderr).startswith("Error: nothing to search for")


# ---------------------------------------------------------------------------- the browser's answer


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    """A home whose store the workload generator wrote (10k messages, as ``generate`` does)."""
    home = tmp_path_factory.mktemp("generated")
    result = hermes(home, "generate", "--home", str(home), "--size", "10k")
    assert result.returncode == 0, result.stderr
    return home


@pytest.mark.parametrize("query", ["docker", "deploy failed", "nginx OR caddy", "kube*", "the", "docker NOT compose"])
def test_the_command_answers_what_the_browsers_pane_shows(generated, query):
    """The conversations, in the order the browser's pane shows them page after page (its
    query typed whole: a trailing space, so its last word is not a prefix being typed)."""
    from hermes_state import ListQuery
    from hermes_state.models import ranks_again_when_paused
    from hermes_tui.cli_search import PAGE_HITS
    from hermes_tui.data import BrowserData
    from hermes_tui.screens.browser_search import SEARCH_PAGE

    assert PAGE_HITS == SEARCH_PAGE
    limit = 15
    result = hermes(generated, "search", query, "--json", "--limit", str(limit))
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)["conversations"]
    assert shown
    door = BrowserData(generated / "state.db")
    try:
        view = door.search(query + " ", ListQuery.human(), limit=SEARCH_PAGE)
        # (as the pane shows it once typing pauses: ranked again, over every match)
        sort = "rank" if ranks_again_when_paused(view.ranking) else "auto"
        if sort == "rank":
            view = door.search(query + " ", ListQuery.human(), limit=SEARCH_PAGE, sort=sort)
        while len(view.groups) < limit and view.more:
            view = view.merged(door.search(query + " ", ListQuery.human(), limit=SEARCH_PAGE,
                                           offset=view.next_offset, sort=sort))
    finally:
        door.close()
    assert [item["root_id"] for item in shown] == [group.root_id for group in view.groups[:limit]]
    assert [item["label"] for item in shown] == [group.label for group in view.groups[:limit]]
    assert [item["unread"] for item in shown] == [group.unread for group in view.groups[:limit]]
    first = view.groups[0]
    assert [hit["message_id"] for hit in shown[0]["hits"]] == [hit.id for hit in first.hits]


@pytest.mark.parametrize("version", [2, 5, 7, 9, 10, 11])
def test_every_older_schema_is_searched_as_it_is_and_never_written(upstream_copy, version):
    """Upstream's stores of v2..v11 hold the same five sessions: the CJK word is found in
    each (whatever index the schema has), and the file's bytes stay as they were (a read never
    migrates)."""
    path = upstream_copy(version)
    state = untouched(path)
    before = state()
    result = hermes(path.parent, "search", "桂林", "--json")
    assert result.returncode == 0, result.stderr
    [conversation] = json.loads(result.stdout)["conversations"]
    # The compression pair `travel plans` → `#2`, shown once, at its tip (v2 has no titles).
    assert conversation["id"] != conversation["root_id"]
    assert conversation["label"] == "travel plans #2" or "桂林" in conversation["label"]
    assert any("桂林" in hit["snippet"] for hit in conversation["hits"])
    assert "Traceback" not in result.stderr
    assert state() == before
