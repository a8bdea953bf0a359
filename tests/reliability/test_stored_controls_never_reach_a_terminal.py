"""No byte sequence from stored data reaches a terminal raw, from any command or screen.

A store holds OSC 0 / OSC 52 / CSI / C1 / bidi / NUL payloads in every text column a writer
can set and in session ids (:mod:`controls_store`). Every ``hermes sessions`` command runs
as a real process against it, and its stdout and stderr are scanned for raw controls (any C0
but newline and tab, DEL, C1, bidi controls). Exports to files keep the data exact (equal
after JSON decoding to what the store holds, and through an import into a fresh store);
an export to stdout on a real terminal (a pseudo-terminal) is safe.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

try:
    from .controls_store import PAYLOAD, PREFIX, S5, SESSIONS, build_controls_store, raw_controls
except ImportError:  # collected as a rootdir-relative module
    from controls_store import PAYLOAD, PREFIX, S5, SESSIONS, build_controls_store, raw_controls

from hermes_state import SessionDB

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(params=[30, 16], ids=["v30", "v16"])
def home(request, tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "sessions").mkdir(parents=True)
    build_controls_store(home / "state.db", schema=request.param)
    return home


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(HERMES_HOME=str(home), PYTHONPATH=str(REPO), TERM="xterm-256color")
    env.pop("HERMES_SESSIONS_DEBUG", None)
    return env


def hermes(home: Path, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hermes_tui.cli", "sessions", *args],
        input=stdin, capture_output=True, cwd=REPO, env=_env(home), timeout=120,
        start_new_session=True,  # no controlling terminal: browse runs its plain picker
    )


def assert_clean(result: subprocess.CompletedProcess, what: str) -> tuple[str, str]:
    out = result.stdout.decode("utf-8")  # (strict: a stray byte of a cut character fails too)
    err = result.stderr.decode("utf-8")
    assert "Traceback" not in err, f"{what}: {err[-2000:]}"
    assert not raw_controls(out), f"{what}: stdout carries raw controls: {raw_controls(out)[:3]}"
    assert not raw_controls(err), f"{what}: stderr carries raw controls: {raw_controls(err)[:3]}"
    return out, err


def stored(home: Path) -> dict[str, dict]:
    """Every session as the store exports it all (EX-2: the exact values)."""
    db = SessionDB(home / "state.db", read_only=True)
    try:
        found = {obj["id"]: obj for obj in db.export_all()}
        assert set(found) == set(SESSIONS)
        return found
    finally:
        db.close()


def read_jsonl(data: bytes) -> dict[str, dict]:
    # Split on "\n" only: str.splitlines() would also split at U+0085 inside strings.
    return {obj["id"]: obj for obj in map(json.loads, filter(None, data.decode("utf-8").split("\n")))}


# ---------------------------------------------------------------------------- every command


def test_every_command_keeps_stored_controls_off_the_terminal(home: Path, tmp_path: Path) -> None:
    seen: dict[str, tuple[int, str, str]] = {}

    def run(*args: str, stdin: bytes = b"", codes: tuple[int, ...] = (0,)) -> tuple[str, str]:
        result = hermes(home, *args, stdin=stdin)
        what = "hermes sessions " + " ".join(args)
        out, err = assert_clean(result, what)
        assert result.returncode in codes, f"{what}: exit {result.returncode}: {err[-500:]}"
        seen[what] = (result.returncode, out, err)
        return out, err

    out, _ = run("list", "--limit", "50")
    assert "ctl1" in out and "\u241b]0;pwned\u2407" in out  # shown, as ␛ and ␇
    assert "early\u2400nul" in out, "the preview goes on after a NUL"
    run("stats")
    exported, _ = run("export", "-")
    assert read_jsonl(exported.encode("utf-8")) == stored(home)  # exact, although escaped
    markdown, _ = run("export", "-", "--format", "md")
    assert "\u241b]52;c;" in markdown and "after-nul" in markdown
    run("export", "-", "--session-id", "ctl2")
    run("export", "-", "--format", "md", "--session-id", "ctl2")
    run("export", str(tmp_path / "out.jsonl"))
    run("export", str(tmp_path / "out.md"), "--format", "md")
    run("rename", "ctl1", "renamed", "\x1b]0;typed\x07title")
    for action in ("pin", "unpin", "archive", "unarchive"):
        run(action, "ctl1")
    run("list", "--archived")
    # Marked read / unread where the store keeps the watermark; said not tracked where not.
    run("read", "ctl1", codes=(0, 1))
    run("unread", "ctl1", "ctl2", codes=(0, 1))
    run("read", "nope\x1b[2J", codes=(1,))  # not found (or not tracked): nothing raw echoed
    run("list", "--unread", "--status", "done,interrupted,error,empty")
    run("prune", "--dry-run", "--older-than", "30")
    run("prune", "--older-than", "30", stdin=b"n\n", codes=(1,))  # asked, declined
    run("delete", "ctl4", stdin=b"n\n", codes=(1,))  # the prompt names the id
    run("delete", "ctl4", "--yes")
    run("trash")
    run("restore", "ctl4")
    run("rename", "ctl", "x", codes=(1,))  # ambiguous: says how many
    run("rename", "nope\x1b[2J", "x", codes=(1,))  # not found: echoes what was typed
    run("import", str(tmp_path / "out.jsonl"), codes=(0, 1))  # all already present
    # Search: hits' snippets, titles and ids of stored text, plain and as JSON, and a query
    # typed with controls (echoed in the reason of its empty answer).
    found, _ = run("search", "nul")
    assert "after" in found
    run("search", "pwned", "--json")
    run("search", "zzz\x1b[2Jqqq")
    # The plain picker's menu (its choices: the next test).
    run("browse", "--plain", stdin=b"q\n", codes=(130,))
    # Every command that reads the store was run (a new one must join this list).
    from hermes_tui.cli import SESSION_ACTIONS

    ran = {what.split()[2] for what in seen}
    assert set(SESSION_ACTIONS) - {"simulate", "generate"} <= ran, set(SESSION_ACTIONS) - ran


def test_the_plain_picker_refuses_an_id_with_controls_and_says_how_to_resume_it(home: Path) -> None:
    """BR-17's stdout carries only a chosen id: an id with controls is not printed (exit 1),
    and stderr gives the resume command, quoted so that bash makes the exact id of it."""
    menu = hermes(home, "browse", "--plain", stdin=b"q\n")
    # Each row shows its title, "title<n>:…" for SESSIONS[n - 1].
    rows = [int(found.group(1)) for found in re.finditer(r"^ +\d+\. title(\d):", menu.stderr.decode("utf-8"), re.M)]
    assert S5 in [SESSIONS[n - 1] for n in rows] and len(rows) >= 4, menu.stderr
    for number, n in enumerate(rows, 1):
        sid = SESSIONS[n - 1]
        result = hermes(home, "browse", "--plain", stdin=f"{number}\n".encode())
        out, err = assert_clean(result, f"browse --plain, choice {number}")
        if sid == S5:
            assert (result.returncode, out) == (0, S5 + "\n")
            assert "hermes --resume plain_ok_5\n" in err  # ("Run: …", or what to install first)
            continue
        assert (result.returncode, out) == (1, ""), err
        assert "not printed" in err and f"hermes --resume $'{PREFIX[sid]}\\x1b]0;pwned\\x07" in err
        quoted = err.split("hermes --resume ", 1)[1].strip()
        resumed = subprocess.run(["bash", "-c", f"printf %s {quoted}"], capture_output=True, timeout=30)
        # bash makes the exact id of it, up to the NUL (no shell word can hold one)
        assert resumed.stdout.decode("utf-8") == sid.split("\x00")[0]


# ---------------------------------------------------------------------------- files stay exact


def test_exports_to_files_keep_every_stored_byte(home: Path, tmp_path: Path) -> None:
    jsonl, md = tmp_path / "all.jsonl", tmp_path / "all.md"
    assert hermes(home, "export", str(jsonl)).returncode == 0
    assert hermes(home, "export", str(md), "--format", "md").returncode == 0
    expected = stored(home)
    data = jsonl.read_bytes()
    assert read_jsonl(data) == expected
    # JSON escapes C0 itself; C1 and bidi controls are escaped too: `cat` of the file is safe.
    assert not raw_controls(data.decode("utf-8").replace("\n", ""))
    # Markdown written to a file keeps the content exactly, controls and all.
    markdown = md.read_bytes().decode("utf-8")
    for obj in expected.values():
        for message in obj["messages"]:
            assert message["content"] in markdown
    assert PAYLOAD in markdown
    # Redirected to a file, stdout is a file: exact as well.
    with open(tmp_path / "redirected.md", "wb") as out:
        subprocess.run([sys.executable, "-m", "hermes_tui.cli", "sessions", "export", "-", "--format", "md"],
                       stdout=out, stderr=subprocess.PIPE, env=_env(home), cwd=REPO, timeout=120, check=True)
    assert (tmp_path / "redirected.md").read_bytes() == md.read_bytes()
    # The round trip: a fresh store imports the file and exports the same sessions.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    SessionDB(fresh / "state.db").close()
    imported = hermes(fresh, "import", str(jsonl))
    assert imported.returncode == 0, imported.stdout
    again = tmp_path / "again.jsonl"
    assert hermes(fresh, "export", str(again)).returncode == 0
    twice = read_jsonl(again.read_bytes())
    assert set(twice) == set(expected)
    for sid, obj in expected.items():
        # Every field the fresh store has (it is born v16: a v30 store has more columns).
        kept = set(twice[sid]) & set(obj) - {"messages"}
        assert {k: twice[sid][k] for k in kept} == {k: obj[k] for k in kept}, sid
        assert len(twice[sid]["messages"]) == len(obj["messages"])
        for again_message, message in zip(twice[sid]["messages"], obj["messages"]):
            kept = set(again_message) & set(message) - {"id"}  # (EX-3: message ids may differ)
            assert {k: again_message[k] for k in kept} == {k: message[k] for k in kept}
            assert again_message["content"] == message["content"]


# ---------------------------------------------------------------------------- a real terminal


def _on_a_terminal(home: Path, *args: str) -> tuple[int, bytes]:
    """``hermes sessions ARGS`` with stdout and stderr on a pseudo-terminal: every byte the
    terminal would be sent."""
    master, slave = os.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "hermes_tui.cli", "sessions", *args],
                            stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=_env(home), cwd=REPO)
    os.close(slave)
    received = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                chunk = b""
            if not chunk and proc.poll() is not None:
                break
            received += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    return proc.wait(timeout=30), received


@pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals are POSIX")
@pytest.mark.parametrize("fmt", ["md", "jsonl"])
def test_an_export_to_a_terminal_sends_it_no_control(home: Path, fmt: str) -> None:
    code, received = _on_a_terminal(home, "export", "-", "--format", fmt)
    assert code == 0
    text = received.decode("utf-8").replace("\r\n", "\n")  # (the terminal's own line ends)
    assert not raw_controls(text), raw_controls(text)[:3]
    assert "after-nul" in text and ("\u241b]0;pwned\u2407" in text or "\\u001b]0;pwned\\u0007" in text)


# ---------------------------------------------------------------------------- the browser


async def test_the_browser_draws_every_stored_control_inert(home: Path) -> None:
    """The list with its detail pane, search results and each transcript, as the terminal
    would receive them: no raw control, no OSC/DCS sequence; the NUL shown as ␀ with the
    text after it, in the preview and in a search snippet."""
    try:
        from .helpers_env import assert_inert_screen, make_app, settle
    except ImportError:
        from helpers_env import assert_inert_screen, make_app, settle
    from hermes_tui.screens.transcript import TranscriptScreen
    from hermes_tui.widgets.session_list import SessionList

    def inert(where: str) -> str:
        try:
            return assert_inert_screen(app)
        except AssertionError as exc:
            raise AssertionError(f"{where}: {exc}") from None

    app = make_app(home / "state.db")
    async with app.run_test(size=(120, 48)) as pilot:  # (tall: the detail pane shows the preview)
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        listed = [sid for sid in SESSIONS if lst.index_of(sid) is not None]
        assert S5 in listed and len(listed) >= 4
        for sid in listed:
            lst.move_to(lst.index_of(sid))
            await settle(pilot)
            screen = inert(f"list and detail pane of {PREFIX[sid]}")
            if sid == S5:
                assert "early\u2400nul" in screen  # its preview goes on past its NUL
        for query in ("zebra", "quokka", "pwned", "tool_name"):
            await pilot.press("slash")
            app.screen.query_one("#search").value = query
            await settle(pilot)
            await pilot.pause(0.05)
            await settle(pilot)
            screen = inert(f"search results of {query!r}")
            if query == "quokka":
                assert "nulword\u2400 tailword quokka" in screen  # the snippet keeps its NUL and tail
            await pilot.press("escape")
            await settle(pilot)
        for sid in listed:
            app.push_screen(app.ctx.screens.transcript(sid))
            await settle(pilot)
            assert isinstance(app.screen, TranscriptScreen)
            await pilot.press("a")  # everything expanded: tool calls, results, reasoning
            await settle(pilot)
            for page in range(3):
                inert(f"transcript of {PREFIX[sid]}, page {page}")
                await pilot.press("pagedown")
                await settle(pilot)
            await pilot.press("escape")
            await settle(pilot)
        assert app.is_running
