"""Transcript view: every message, collapsible tools, reasoning, search hits."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len

from hermes_state import SessionDB
from hermes_tui.config import AppConfig
from hermes_tui.screens.browser import BrowserScreen
from hermes_tui.screens.transcript import TranscriptScreen
from hermes_tui.widgets.transcript_view import TranscriptView, query_terms, wrap_offsets

from .conftest import SIZE, make_app, settle
from .dataset import HOUR, NOW

ROOT = Path(__file__).resolve().parents[2]
DOCKER = "20261118_074000_a1b2c3"
DEPLOY = "20261118_061500_dep001"
MANY = "20261118_020000_many01"


def _call(name: str, args: dict, call_id: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def add_messages(path: Path, sid: str, messages: list[dict], *, title: str | None, started: float) -> list[int]:
    """A session through the real API with timestamps pinned one minute apart; returns ids."""
    db = SessionDB(path)
    ids = []
    try:
        db.create_session(sid, "cli", model="claude-sonnet-4")
        for index, message in enumerate(messages):
            mid = db.append_message(sid, **message)
            db._execute_write(lambda c, mid=mid, stamp=started + 60 * (index + 1): c.execute(
                "UPDATE messages SET timestamp = ? WHERE id = ?", (stamp, mid)))
            ids.append(mid)
        if title:
            db.set_session_title(sid, title)
        db._execute_write(lambda c: c.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (started, sid)))
    finally:
        db.close()
    return ids


DEPLOY_MESSAGES = [
    dict(role="user", content="The api container keeps restarting after docker compose up"),
    dict(role="assistant", content="Let me check the container logs.", reasoning="Logs first, then config.",
         tool_calls=[_call("terminal", {"command": "docker compose logs api --tail 3"}, "c1")]),
    dict(role="tool", tool_name="terminal", tool_call_id="c1",
         content="api-1  | Error: connect ECONNREFUSED 10.0.0.5:5432\napi-1  | exited with code 1\n"
                 "api-1  | restarting (docker restart policy: always)"),
    dict(role="assistant", content="The api cannot reach Postgres at 10.0.0.5:5432. Is the database "
                                   "service defined in the same compose file?"),
    dict(role="user", content="Yes, it is called db."),
    dict(role="assistant", content=None,
         tool_calls=[_call("read_file", {"path": "docker-compose.yml"}, "c2")]),
    dict(role="tool", tool_name="read_file", tool_call_id="c2",
         content="services:\n  api:\n    build: .\n    environment:\n      DATABASE_URL: postgres://10.0.0.5:5432/app\n"
                 "  db:\n    image: postgres:16"),
    dict(role="assistant", content="The api uses a fixed IP. Docker's embedded DNS resolves service names, so "
                                   "set DATABASE_URL to postgres://db:5432/app and recreate the container with "
                                   "`docker compose up -d --force-recreate api`. DOCKER will then start it after db."),
    dict(role="user", content="Restarted, works now. Thanks!"),
    dict(role="assistant", content="Great. Add a healthcheck and depends_on with condition: service_healthy so "
                                   "the api waits for Postgres."),
]


@pytest.fixture
def deploy_db(fixed_db: Path) -> tuple[Path, list[int]]:
    ids = add_messages(fixed_db, DEPLOY, DEPLOY_MESSAGES, title="api restart loop", started=NOW - 2 * HOUR)
    return fixed_db, ids


async def open_transcript(pilot, sid: str, **kwargs) -> TranscriptScreen:
    pilot.app.push_screen(pilot.app.ctx.screens.transcript(sid, **kwargs))
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, TranscriptScreen)
    return screen


def plain(view: TranscriptView, index: int) -> list[str]:
    return [line.plain for line in view.block_lines(index)]


def matches(view: TranscriptView, index: int) -> list[str]:
    """The text under the match highlight in message ``index``, in order."""
    style = view._style("match")
    found = []
    for line in view.block_lines(index):
        for span in line.spans:
            if span.style == style:
                found.append(line.plain[span.start:span.end])
    return found


# ----------------------------------------------------------------------------- opening


async def test_t_on_list_opens_every_message_of_the_session(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TranscriptScreen) and screen.session_id == DOCKER
        view = screen.view
        assert [e.message.role for e in view.entries] == ["user", "assistant", "tool", "assistant"]
        assert view.cursor == 0 and view.is_visible(0)
        assert plain(view, 0)[0].startswith("● You") and "#" in plain(view, 0)[0]
        assert plain(view, 0)[1] == "   Help me fix the docker-compose deploy for the api service"
        assert plain(view, 1)[0].startswith("◆ Hermes")
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, BrowserScreen)


async def test_a_message_header_says_its_date_once(deploy_db, tmp_path: Path) -> None:
    """A recent message shows its time and how long ago (`· 1h ago`); one a week or more old,
    whose relative form is its date, shows the date once, not `2026-11-01 … · 2026-11-01`."""
    path, _ids = deploy_db
    old = "20261101_090000_old001"
    add_messages(path, old, [dict(role="user", content="an old question")], title="old", started=NOW - 20 * 86400)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_transcript(pilot, DEPLOY)
        header = plain(screen.view, 0)[0]
        assert " · 1h ago" in header
        await pilot.press("escape")
        await settle(pilot)
        screen = await open_transcript(pilot, old)
        header = plain(screen.view, 0)[0]
        day = time.strftime("%Y-%m-%d", time.localtime(NOW - 20 * 86400 + 60))
        assert header.count(day) == 1, header


async def test_tool_calls_and_results_collapsed_by_default_and_toggle(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        view = (await open_transcript(pilot, DOCKER)).view
        # Collapsed: one summary line for the call, the result is its header line only.
        assert "   ▸ 1 tool call: read_file  {\"path\": \"docker-compose.yml\"}" in plain(view, 1)
        result = plain(view, 2)
        assert len(result) == 2 and result[1] == ""  # header + separator
        assert result[0].startswith("▸ ⚙ read_file result") and "3 lines" in result[0]
        assert result[0].endswith("services:")
        # Enter toggles the focused message.
        await pilot.press("j", "j", "enter")
        await settle(pilot)
        assert view.cursor == 2
        assert plain(view, 2)[1:4] == ["   services:", "     api:", "       image: api:latest"]
        await pilot.press("enter")
        await settle(pilot)
        assert len(plain(view, 2)) == 2
        # `a` expands everything, then collapses everything.
        await pilot.press("a")
        await settle(pilot)
        call = plain(view, 1)
        assert "   ▾ read_file  (c1)" in call and '       "path": "docker-compose.yml"' in call
        assert len(plain(view, 2)) == 5
        await pilot.press("a")
        await settle(pilot)
        assert len(plain(view, 2)) == 2 and any("▸ 1 tool call" in line for line in plain(view, 1))
        # A message without tools has nothing to expand: a notice, no change.
        await pilot.press("g", "enter")
        await settle(pilot)
        assert len(plain(view, 0)) == 3


async def test_reasoning_hidden_by_default_r_shows_it(deploy_db) -> None:
    path, _ids = deploy_db
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        view = (await open_transcript(pilot, DEPLOY)).view
        assert not any("Logs first" in line for line in plain(view, 1))
        assert "reasoning hidden" in plain(view, 1)[0]
        await pilot.press("r")
        await settle(pilot)
        assert "   Logs first, then config." in plain(view, 1)
        await pilot.press("r")
        await settle(pilot)
        assert not any("Logs first" in line for line in plain(view, 1))


async def test_config_show_reasoning_shows_it_at_open(deploy_db) -> None:
    path, _ids = deploy_db
    app = make_app(path, config=AppConfig(animations="none", show_reasoning=True))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        view = (await open_transcript(pilot, DEPLOY)).view
        assert "   Logs first, then config." in plain(view, 1)


async def test_layout_heights_match_drawn_lines_and_wrapped_text_fits(deploy_db) -> None:
    """The virtual layout (heights) and the drawn lines agree, and wrapped text is never cut."""
    path, _ids = deploy_db
    app = make_app(path)
    async with app.run_test(size=(60, 24)) as pilot:
        await settle(pilot)
        view = (await open_transcript(pilot, DEPLOY)).view
        for expand in (False, True):
            if expand:
                await pilot.press("a", "r")
                await settle(pilot)
            for index in range(len(view.entries)):
                lines = view.block_lines(index)
                assert view.block_range(index)[1] == len(lines)
                for line in lines[1:]:  # line 0 is the header, cut with an ellipsis by design
                    text = line.plain.rstrip()
                    if text.lstrip().startswith("▸"):
                        continue  # one-line summaries are cut by design too
                    assert cell_len(text) <= view._width - 1, text
        await pilot.resize_terminal(90, 24)
        await settle(pilot)
        assert all(view.block_range(i)[1] == len(view.block_lines(i)) for i in range(len(view.entries)))
        assert view.total_lines == sum(len(view.block_lines(i)) for i in range(len(view.entries)))


# ----------------------------------------------------------------------------- search hits


async def test_open_at_hit_scrolls_to_message_and_highlights_every_term(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    SessionDB(path).close()
    messages = [dict(role="user" if i % 2 == 0 else "assistant", content=f"filler message {i}") for i in range(200)]
    messages[20]["content"] = "first docker mention"
    messages[150]["content"] = "Docker and docker-compose and DOCKER: all three"
    messages[181] = dict(role="tool", tool_name="terminal", content="ok\nrestarted by dockerd")
    ids = add_messages(path, MANY, messages, title="many", started=NOW - 5 * HOUR)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_transcript(pilot, MANY, message_id=ids[150], query="docker")
        view = screen.view
        assert view.cursor == 150
        assert view.is_visible(150) and not view.is_visible(0)
        assert matches(view, 150) == ["Docker", "docker", "DOCKER"]
        assert view.match_indices == [20, 150, 181]
        header = str(screen.query_one("#transcript-header").render())
        assert "3 messages match" in header and "match 2 of 3" in header
        # n / N move between matching messages, wrapping around.
        await pilot.press("n")
        await settle(pilot)
        assert view.cursor == 181 and view.is_visible(181)
        # The match is inside a collapsed tool result: it was expanded to show it.
        assert view.entries[181].message.id in view.expanded
        # `docker` as typed is a prefix (the search found `dockerd` so): the word is marked whole.
        assert matches(view, 181) == ["dockerd"]
        await pilot.press("n")
        await settle(pilot)
        assert view.cursor == 20 and view.is_visible(20)
        await pilot.press("N")
        await settle(pilot)
        assert view.cursor == 181
        await pilot.press("N", "N")
        await settle(pilot)
        assert view.cursor == 20
        assert "match 1 of 3" in str(screen.query_one("#transcript-header").render())


async def test_open_at_hit_deep_inside_a_tall_message_shows_the_matching_line(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    SessionDB(path).close()
    lines = [f"log line {i}" for i in range(200)]
    lines[150] = "log line 150: docker daemon restarted"
    ids = add_messages(path, MANY, [
        dict(role="user", content="show me the log"),
        dict(role="assistant", content="\n".join(lines)),
        dict(role="user", content="thanks"),
    ], title=None, started=NOW - HOUR)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        view = (await open_transcript(pilot, MANY, message_id=ids[1], query="docker")).view
        start, count = view.block_range(1)
        assert count > 200 and view.cursor == 1
        match_line = start + view.first_match_line(1)
        assert view.first_match_line(1) == 151  # the header is line 0
        top = view.scroll_offset.y
        assert top <= match_line < top + view.scrollable_content_region.height
        assert top >= start  # the message fills the view; it is not scrolled past its start


async def test_br4_enter_on_search_hit_opens_transcript_at_message(fixed_db: Path) -> None:
    if not hasattr(SessionDB, "search"):
        pytest.skip("SessionDB.search (the search engineer's work) is not merged yet")
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", *"pinned")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TranscriptScreen)
        assert screen.session_id == DOCKER and screen.search_query == "pinned"
        view = screen.view
        assert view.current.id == screen.message_id
        assert view.current.content.startswith("The api image tag is pinned")
        assert view.is_visible(view.cursor)
        assert matches(view, view.cursor) == ["pinned"]


# ----------------------------------------------------------------------------- safety


async def test_content_is_data_markup_and_controls_inert(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    SessionDB(path).close()
    add_messages(path, "20261118_070000_evil01", [
        dict(role="user", content="[bold]not bold[/bold] [@click=app.quit]x[/] \x1b[31mred\x1b[0m \u202eevil"),
    ], title=None, started=NOW - HOUR)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        view = (await open_transcript(pilot, "20261118_070000_evil01")).view
        body = plain(view, 0)[1]
        assert "[bold]not bold[/bold] [@click=app.quit]x[/]" in body
        assert "\x1b" not in body and "\u202e" not in body
        assert "␛[31mred␛[0m" in body
        strip = view.render_line(1)
        assert "\x1b" not in "".join(segment.text for segment in strip)
        assert app.is_running


# ----------------------------------------------------------------------------- live


APPEND_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[1])
from hermes_state import SessionDB
db = SessionDB(sys.argv[2])
db.append_message(sys.argv[3], "user", "a message written by another process")
db.close()
"""


async def test_live_append_from_another_process_follows_the_end(fixed_db: Path) -> None:
    app = make_app(fixed_db, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        view = (await open_transcript(pilot, DOCKER)).view
        await pilot.press("G")
        await settle(pilot)
        assert view.cursor == 3
        proc = subprocess.run([sys.executable, "-c", APPEND_SCRIPT, str(ROOT), str(fixed_db), DOCKER],
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        assert proc.returncode == 0, proc.stderr.decode()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and len(view.entries) < 5:
            await pilot.pause(0.05)
        await settle(pilot)
        assert len(view.entries) == 5
        assert view.cursor == 4 and view.is_visible(4)
        assert view.current.content == "a message written by another process"


async def test_commit_to_another_session_does_not_reload_the_transcript(fixed_db: Path) -> None:
    app = make_app(fixed_db, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_transcript(pilot, DOCKER)
        view = screen.view
        await pilot.press("j", "j", "enter")
        await settle(pilot)
        entries = view.entries
        proc = subprocess.run(
            [sys.executable, str(Path(__file__).with_name("live_writer.py")), str(fixed_db), "1", "0"],
            stdin=subprocess.DEVNULL, capture_output=True, timeout=60,
        )
        assert proc.returncode == 0, proc.stderr.decode()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and screen.loads.current == 1:
            await pilot.pause(0.05)
        await settle(pilot)
        assert screen.loads.current >= 2  # the change was noticed (a load after the first) …
        assert view.entries is entries  # … and this session's messages were not re-read
        assert view.cursor == 2 and view.entries[2].message.id in view.expanded


# ----------------------------------------------------------------------------- size


async def test_5000_message_session_opens_at_target_quickly(tmp_path: Path) -> None:
    """Virtualised: 5,000 messages open, scrolled to message 4,000, well under 2 s."""
    path = tmp_path / "state.db"
    db = SessionDB(path)
    db.create_session("big", "cli")
    base = NOW - 10 * HOUR

    def fill(conn) -> None:
        rows = []
        for i in range(5000):
            role = ("user", "assistant", "tool")[i % 3]
            text = f"message {i} " + "lorem ipsum dolor sit amet " * (1 + i % 9)
            if i % 500 == 0:
                text += "\nthe docker daemon restarted"
            calls = json.dumps([{"id": f"c{i}", "type": "function",
                                 "function": {"name": "terminal", "arguments": '{"command": "ls"}'}}]) \
                if role == "assistant" else None
            rows.append(("big", role, text, calls, "terminal" if role == "tool" else None, base + i))
        conn.executemany(
            "INSERT INTO messages (session_id, role, content, tool_calls, tool_name, timestamp) "
            "VALUES (?, ?, ?, ?, ?, ?)", rows)
        conn.execute("UPDATE sessions SET message_count = 5000 WHERE id = 'big'")

    db._execute_write(fill)
    target = db._fetchone("SELECT id FROM messages WHERE session_id = 'big' ORDER BY timestamp, id "
                          "LIMIT 1 OFFSET 4000")[0]
    db.close()
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        started, cpu = time.perf_counter(), time.process_time()
        app.push_screen(app.ctx.screens.transcript("big", message_id=target, query="docker"))
        elapsed = None
        while time.perf_counter() - started < 10:
            await pilot.pause(0.01)
            screen = app.screen
            if isinstance(screen, TranscriptScreen) and screen.loaded:
                view = screen.view
                if view.current is not None and view.current.id == target and view.is_visible(view.cursor):
                    elapsed = time.perf_counter() - started
                    cpu = time.process_time() - cpu
                    break
        assert elapsed is not None, "the target message never became visible"
        print(f"\n5,000-message transcript: open at message 4,000 in {elapsed * 1000:.0f} ms "
              f"(process CPU {cpu * 1000:.0f} ms)")  # (how fast is bench/'s to hold: not a test's)
        view = app.screen.view
        assert len(view.entries) == 5000 and view.cursor == 4000
        assert view.total_lines > 5000
        assert len(view._lines) < 100  # only drawn blocks were styled
        await pilot.press("n")
        await settle(pilot)
        assert view.cursor == 4500 and view.is_visible(4500)


# ----------------------------------------------------------------------------- helpers


def test_query_terms_are_the_search_parsers_positive_items() -> None:
    assert query_terms("docker") == ["docker"]
    assert query_terms('"docker compose" OR kubectl*') == ["docker compose", "kubectl"]
    # `content:nginx` is the phrase the search looks for; the excluded word is no term.
    assert query_terms("content:nginx AND proxy NOT apache") == ["content nginx", "proxy"]
    assert query_terms("桂林 天气") == ["桂林", "天气"]
    assert query_terms("Docker docker ") == ["Docker"]
    assert query_terms("") == [] and query_terms(None) == [] and query_terms('""') == []


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(list("ab cd\n  efg 中文字 x")), max_size=120),
    width=st.integers(min_value=1, max_value=30),
)
def test_wrap_offsets_cover_the_text_and_fit_the_width(text: str, width: int) -> None:
    lines = wrap_offsets(text, width)
    assert lines and lines[0][0] == 0 and lines[-1][1] == len(text)
    for (s1, e1), (s2, _e2) in zip(lines, lines[1:]):
        # Consecutive display lines are contiguous, or separated by exactly one newline.
        assert s2 == e1 or (s2 == e1 + 1 and text[e1] == "\n")
    for start, end in lines:
        piece = text[start:end]
        assert "\n" not in piece
        # Fits, except trailing spaces (cropped when drawn) or one wide character alone.
        assert cell_len(piece.rstrip(" ")) <= width or len(piece.rstrip(" ")) == 1


# ----------------------------------------------------------------------------- snapshot


def test_snapshot_transcript_at_search_hit(fixed_db: Path, snap_compare) -> None:
    ids = add_messages(fixed_db, DEPLOY, DEPLOY_MESSAGES, title="api restart loop", started=NOW - 2 * HOUR)

    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.push_screen(pilot.app.ctx.screens.transcript(DEPLOY, message_id=ids[7], query="docker"))
        await settle(pilot)

    assert snap_compare(make_app(fixed_db), terminal_size=(120, 32), run_before=run_before)


# ----------------------------------------------------------------------------- words at the edge


@pytest.mark.parametrize("query", [None, "matches"], ids=["plain", "highlighted"])
async def test_word_ending_at_the_right_edge_is_drawn_whole(tmp_path: Path, query) -> None:
    """A word that ends exactly at the right edge keeps its last letter ("13 matche…" bug):
    the space after it belongs to the line but must not push the line past the edge."""
    from .dataset import build_fixed_db

    path = build_fixed_db(tmp_path / "state.db")
    # One message per left margin, so that in one of them "matches" ends on the last cell.
    messages = [dict(role="user", content="x" * k + " 13 matches for the query in here") for k in range(30, 56)]
    add_messages(path, DEPLOY, messages, title="edge", started=NOW - HOUR)
    app = make_app(path)
    async with app.run_test(size=(60, 120)) as pilot:
        await settle(pilot)
        pilot.app.push_screen(pilot.app.ctx.screens.transcript(DEPLOY, query=query))
        await settle(pilot)
        view = app.screen.view
        drawn = [view.render_line(y).text.rstrip() for y in range(view.size.height)]
        body = [line[4:] for line in drawn if line[1:4] == "   " and line.strip()]  # message text
        assert any(line.endswith("13 matches") for line in body)  # the edge case is on screen
        for line in body:
            assert "…" not in line, line
            assert "matche" not in line or "matches" in line, line
        text = " ".join(body)
        assert text.count("13 matches for the query in here") == len(messages)


async def test_uc3_compaction_history_and_scaffolding_are_said_in_their_headers(upstream_copy) -> None:
    """A v30 transcript shows compaction history (``compacted = 1``) and scaffolding
    (``display_kind = 'hidden'``) as what they are, not as turns someone typed."""
    app = make_app(upstream_copy(30))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for sid, word, said in (
            ("20260921_121000_c2", "COMPACTEDWORD", "compaction history"),
            ("20260921_150000_k1", "HIDDENKINDWORD", "scaffolding, not shown in chat"),
        ):
            view = (await open_transcript(pilot, sid)).query_one(TranscriptView)
            marked = [i for i, e in enumerate(view.entries) if said in plain(view, i)[0]]
            assert [word in (view.entries[i].message.content or "") for i in marked] == [True], sid
            assert all(said not in plain(view, i)[0] for i in range(len(view.entries)) if i not in marked)
            await pilot.press("escape")
            await settle(pilot)


# ----------------------------------------------------------------------------- the header's match position

SERVER = "20261118_090000_srv001"


def header_lines(screen: TranscriptScreen) -> list[str]:
    """The header's two lines as drawn: cut to the header's width."""
    import io

    from rich.console import Console

    header = screen.query_one("#transcript-header")
    console = Console(width=header.content_region.width, record=True, file=io.StringIO())
    console.print(header.content, crop=True)
    return console.export_text().splitlines()


@pytest.fixture
def server_db(tmp_path: Path) -> tuple[Path, list[int]]:
    path = tmp_path / "state.db"
    SessionDB(path).close()
    messages = [dict(role="user" if i % 2 == 0 else "assistant", content=f"filler message {i}") for i in range(12)]
    for i in (2, 5, 8, 11):
        messages[i]["content"] = f"服务器 {i} 重启了"
    messages[5]["content"] += " (kubelet)"
    ids = add_messages(path, SERVER, messages, title="服务器重启", started=NOW - 3 * HOUR)
    return path, ids


@pytest.mark.parametrize("size", [(80, 24), (60, 20)])
async def test_the_match_position_stays_in_the_header_at_80_and_60_columns(server_db, size) -> None:
    path, ids = server_db
    app = make_app(path)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        screen = await open_transcript(pilot, SERVER, message_id=ids[11], query="服务器")
        assert screen.view.match_position() == 4
        second = header_lines(screen)[1]
        assert "match 4 of 4" in second, second
        assert "…" not in second, second  # the less important parts gave way whole, not cut


async def test_the_header_says_every_part_when_there_is_room(server_db) -> None:
    path, ids = server_db
    app = make_app(path)
    async with app.run_test(size=(130, 24)) as pilot:
        await settle(pilot)
        screen = await open_transcript(pilot, SERVER, message_id=ids[11], query="服务器")
        second = header_lines(screen)[1]
        assert "reasoning hidden (r)" in second and "(enter, a: all)" in second
        assert "4 messages match “服务器” — match 4 of 4 (n/N)" in second


async def test_one_matching_message_is_said_as_1_message_matches(server_db) -> None:
    path, ids = server_db
    app = make_app(path)
    async with app.run_test(size=(130, 24)) as pilot:
        await settle(pilot)
        screen = await open_transcript(pilot, SERVER, message_id=ids[5], query="kubelet")
        assert screen.view.match_indices == [5]
        assert "1 message matches “kubelet”" in header_lines(screen)[1]


async def test_t_on_a_search_hit_opens_the_transcript_at_that_message_as_enter_does(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", *"pinned")
        await settle(pilot)
        await pilot.press("tab")
        await settle(pilot)
        browser = app.screen
        assert isinstance(browser, BrowserScreen)
        session_id, message_id = browser.results.target_of_highlighted()
        assert message_id is not None
        await pilot.press("t")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TranscriptScreen)
        assert screen.session_id == session_id and screen.search_query == "pinned"
        view = screen.view
        assert view.current.id == message_id  # not the first message
        assert view.cursor > 0 and view.is_visible(view.cursor)
        assert matches(view, view.cursor) == ["pinned"]
