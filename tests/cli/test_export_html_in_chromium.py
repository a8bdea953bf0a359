"""The HTML export opened in a real browser: headless Chromium (Debian's ``chromium``), offline.

What a parser in Python cannot prove: that a browser, reading the page as it reads any page,
runs nothing planted in the data (a ``<script>`` that would retitle the document, an
``<img onerror>``, a ``</textarea>`` breaking out), shows the planted text as text, and lists
every conversation in the sidebar. A screenshot is taken too (it was looked at when this test
was written; the test checks it is a real image). Skipped, saying so, where Chromium is not
installed (``.ci/run`` installs it when it can).
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_state import SessionDB

REPO = Path(__file__).resolve().parents[2]
T0 = 1741166123.0
PLANTED = (
    "<script>document.title='pwned'</script>"
    "<img src=x onerror=\"document.title='pwned-img'\">"
    "</textarea></pre><script>document.title='pwned-2'</script>"
    "\x1b]0;retitled\x07 \u202eevil\u202c \x00 end"
)


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("Chromium is not installed (apt-get install chromium): the HTML export is not checked in a browser")


def _browser(binary: str, *args: str, profile: Path) -> subprocess.CompletedProcess:
    # Offline: no network service is reached (the page's CSP forbids requests anyway); a
    # profile of its own so nothing of the machine's user is read or written.
    return subprocess.run(
        [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
         "--disable-background-networking", "--disable-sync", f"--user-data-dir={profile}",
         "--proxy-server=127.0.0.1:9", "--window-size=1280,900", *args],
        capture_output=True, text=True, timeout=120, env=dict(os.environ, HOME=str(profile)),
    )


@pytest.fixture
def exported(tmp_path, make_session) -> tuple[Path, list[str]]:
    home = tmp_path / "home"
    home.mkdir()
    db = SessionDB(home / "state.db")
    titles = []
    try:
        make_session(db, "root", started_at=T0, ended_at=T0 + 100, end_reason="compression", title="Release plan",
                     messages=[("user", "first prompt"), ("assistant", "first answer")])
        make_session(db, "tip", started_at=T0 + 101, parent_session_id="root", title="Release plan #2",
                     messages=[("user", "second prompt"), ("assistant", "second answer")])
        make_session(db, "evil", started_at=T0 + 300, title="Planted markup",
                     messages=[("user", PLANTED), {"role": "assistant", "content": "called", "tool_calls": [
                         {"id": "c1", "function": {"name": "<script>x</script>", "arguments": PLANTED}}]},
                         {"role": "tool", "tool_call_id": "c1", "content": PLANTED}])
        for n in range(5):
            make_session(db, f"plain{n}", started_at=T0 + 400 + n, title=f"Conversation {n}",
                         messages=[("user", f"question {n}"), ("assistant", f"answer {n}")])
        # conversations: the chain (one with --lineage), the planted one, five plain ones
        titles = ["Release plan #2", "Planted markup", *(f"Conversation {n}" for n in range(5))]
    finally:
        db.close()
    out = tmp_path / "export.html"
    env = dict(os.environ, HERMES_HOME=str(home))
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    result = subprocess.run(
        [sys.executable, "-m", "hermes_tui.cli", "sessions", "export", str(out), "--format", "html", "--lineage"],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return out, titles


def test_html_export_in_headless_chromium_runs_nothing_planted_and_lists_every_conversation(exported, tmp_path):
    binary = _chromium()
    page, titles = exported
    result = _browser(binary, "--dump-dom", page.as_uri(), profile=tmp_path / "profile-dom")
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    assert "<main>" in dom and 'id="sidebar"' in dom  # the browser loaded the page itself
    # No planted script ran: the document's title is the export's own.
    assert re.search(r"<title>([^<]*)</title>", dom).group(1) == "Hermes sessions"
    assert "pwned" not in re.search(r"<head>.*?</head>", dom, re.S).group(0)
    # No element came from the data: the page has no script, image or textarea at all ...
    assert not re.search(r"<(script|img|textarea)\b", dom)
    # ... and the planted markup is there as text, its controls shown, not acted on.
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in dom
    assert "&lt;/textarea&gt;&lt;/pre&gt;" in dom
    assert "\u241b]0;retitled\u2407" in dom and "\ufffdevil\ufffd" in dom and "\u2400 end" in dom
    # The sidebar lists every conversation, each linking to its article.
    nav = re.search(r'<nav id="sidebar".*?</nav>', dom, re.S).group(0)
    links = re.findall(r'<a href="#(c\d+)">([^<]*)</a>', nav)
    assert sorted(html.unescape(text) for _anchor, text in links) == sorted(titles)
    for anchor, _text in links:
        assert f'<article id="{anchor}">' in dom
    assert "7 conversations" in nav


def test_html_export_screenshot_in_headless_chromium(exported, tmp_path):
    binary = _chromium()
    page, _titles = exported
    shot = tmp_path / "export.png"
    result = _browser(binary, f"--screenshot={shot}", page.as_uri(), profile=tmp_path / "profile-shot")
    assert result.returncode == 0, result.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1280, 900)
    keep = os.environ.get("HERMES_SESSIONS_KEEP_SCREENSHOT")
    if keep:  # (to look at it: HERMES_SESSIONS_KEEP_SCREENSHOT=/tmp/export.png pytest …)
        shutil.copyfile(shot, keep)
