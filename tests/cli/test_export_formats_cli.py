"""``hermes sessions export`` with the new formats and options, as real processes
(on a generated store and on upstream's own v16 and v30 stores, which an export
leaves exactly as they were)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_state.inert_text import UNSAFE_RE

REPO = Path(__file__).resolve().parents[2]
T0 = 1741166123.0
SECRET = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
# (--source and the other filters are the FILTERS group, checked by test_readme_lists_every_option)
EXPORT_OPTIONS = ["--format", "--lineage", "--only", "--redact", "--session-id"]


def hermes(home: Path, *args: str, timeout: float = 120):
    env = dict(os.environ, HERMES_HOME=str(home))
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("HERMES_SESSIONS_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "hermes_tui.cli", "sessions", *args],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=timeout,
    )


@pytest.fixture
def home(tmp_path, make_session) -> Path:
    """A store with a compression chain, a hostile session and a secret."""
    path = tmp_path / "home"
    path.mkdir()
    db = SessionDB(path / "state.db")
    try:
        make_session(db, "root", started_at=T0, ended_at=T0 + 100, end_reason="compression", title="Plan",
                     messages=[("user", "first prompt"), ("assistant", "first answer")])
        make_session(db, "tip", started_at=T0 + 101, parent_session_id="root", title="Plan #2",
                     messages=[("user", f"second prompt with {SECRET}"), ("assistant", "second answer")])
        make_session(db, "evil", started_at=T0 + 300, title="evil",
                     messages=[("user", "<script>document.title='pwned'</script>\x1b]0;x\x07\u202e\x00"),
                               ("assistant", "</textarea>ok")])
    finally:
        db.close()
    return path


def _state(path: Path) -> tuple:
    """What must not change: the schema version, sqlite_master, and the integrity checks."""
    # (read-write: FTS5's integrity-check is an INSERT command, though it writes nothing)
    conn = sqlite3.connect(path)
    try:
        version = conn.execute("SELECT version FROM schema_version").fetchone()
        master = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").fetchall()
        integrity = conn.execute("PRAGMA integrity_check").fetchall()
        fts = [name for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%USING fts5%'")]
        for name in fts:
            try:
                conn.execute(f"INSERT INTO {name}({name}) VALUES ('integrity-check')")
            except sqlite3.OperationalError as exc:  # (an FTS whose tokenizer lives in an extension)
                assert "tokenizer" in str(exc)
        counts = (conn.execute("SELECT COUNT(*) FROM sessions").fetchone(),
                  conn.execute("SELECT COUNT(*) FROM messages").fetchone())
    finally:
        conn.close()
    assert integrity == [("ok",)]
    return version, master, counts


def _read_all(out: Path) -> bytes:
    if out.is_dir():
        return b"".join(p.read_bytes() for p in sorted(out.iterdir()))
    return out.read_bytes()


@pytest.mark.parametrize("fmt", ["jsonl", "md", "html", "md-dir"])
def test_each_format_is_written_owner_only_by_a_real_process(home, tmp_path, fmt):
    out = tmp_path / f"export-{fmt}"
    result = hermes(home, "export", str(out), "--format", fmt)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"Exported 3 sessions to {out}\n"
    assert result.stderr == ""
    assert (out.stat().st_mode & 0o777) == (0o700 if fmt == "md-dir" else 0o600)
    data = _read_all(out)
    assert b"first prompt" in data and b"second prompt" in data
    # JSONL, HTML and the manifest hold no control raw; a Markdown file keeps every byte, as
    # today's Markdown export does
    clean = (out / "manifest.jsonl").read_text() if fmt == "md-dir" else data.decode()
    if fmt != "md":
        assert not [c for c in UNSAFE_RE.findall(clean) if c not in "\n\t"]


def test_html_to_stdout_is_the_same_page_and_holds_no_raw_control(home, tmp_path):
    result = hermes(home, "export", "-", "--format", "html")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("<!DOCTYPE html>") and result.stdout.endswith("</html>\n")
    assert "&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt;" in result.stdout
    assert "<script" not in result.stdout and "</textarea>" not in result.stdout
    assert not [c for c in UNSAFE_RE.findall(result.stdout) if c not in "\n\t"]


def test_md_dir_to_stdout_is_a_usage_error_in_one_line(home):
    result = hermes(home, "export", "-", "--format", "md-dir")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "md-dir" in result.stderr and "Traceback" not in result.stderr


def test_md_dir_into_a_directory_of_other_files_is_refused_and_nothing_lost(home, tmp_path):
    other = tmp_path / "documents"
    other.mkdir()
    (other / "thesis.txt").write_text("mine")
    result = hermes(home, "export", str(other), "--format", "md-dir")
    assert result.returncode == 1
    assert result.stderr.startswith(f"Error: cannot write {other}: ") and result.stderr.count("\n") == 1
    assert os.listdir(other) == ["thesis.txt"] and (other / "thesis.txt").read_text() == "mine"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".documents")] == []


def test_md_dir_manifest_hashes_match_the_files(home, tmp_path):
    out = tmp_path / "dir"
    result = hermes(home, "export", str(out), "--format", "md-dir", "--lineage")
    assert result.returncode == 0, result.stderr
    entries = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    assert len(entries) == 2  # the chain, the hostile session
    assert sorted(os.listdir(out)) == sorted(["manifest.jsonl", *(e["file"] for e in entries)])
    for entry in entries:
        assert hashlib.sha256((out / entry["file"]).read_bytes()).hexdigest() == entry["sha256"]
    chain = next(e for e in entries if e["session_id"] == "root")
    assert chain["sessions"] == ["root", "tip"] and chain["messages"] == 4


@pytest.mark.parametrize("fmt", ["jsonl", "md", "html", "md-dir"])
def test_redact_removes_the_secret_in_every_format(home, tmp_path, fmt):
    out = tmp_path / f"redacted-{fmt}"
    result = hermes(home, "export", str(out), "--format", fmt, "--redact")
    assert result.returncode == 0, result.stderr
    data = _read_all(out)
    assert SECRET.encode() not in data and b"[REDACTED]" in data
    assert b"second prompt with [REDACTED]" in data


@pytest.mark.parametrize("fmt", ["jsonl", "md", "html"])
def test_only_user_prompts_writes_no_answer(home, tmp_path, fmt):
    out = tmp_path / f"prompts.{fmt}"
    result = hermes(home, "export", str(out), "--format", fmt, "--only", "user-prompts")
    assert result.returncode == 0, result.stderr
    data = out.read_text()
    assert "first prompt" in data and "second prompt" in data
    assert "answer" not in data


def test_lineage_of_one_session_id_exports_its_whole_chain(home, tmp_path):
    out = tmp_path / "chain.md"
    result = hermes(home, "export", str(out), "--format", "md", "--lineage", "--session-id", "tip")
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert text.startswith("# Plan #2\n")
    assert re.findall(r"^## Segment (\d) of 2", text, re.M) == ["1", "2"]
    assert text.index("first prompt") < text.index("second prompt")


def test_an_unknown_only_value_is_a_usage_error(home):
    result = hermes(home, "export", "-", "--only", "everything")
    assert result.returncode == 2 and "Traceback" not in result.stderr and result.stdout == ""


# ----------------------------------------------------------------------------- upstream stores

RUNS = [
    ("jsonl", []), ("jsonl", ["--lineage", "--redact"]), ("md", ["--lineage"]), ("md", ["--only", "user-prompts"]),
    ("html", []), ("html", ["--lineage", "--redact"]), ("md-dir", []), ("md-dir", ["--lineage"]),
]


@pytest.mark.parametrize("version", [16, 30])
def test_every_format_on_upstream_stores_leaves_them_unchanged(upstream_copy, tmp_path, version):
    store = upstream_copy(version)
    before = _state(store)
    for fmt, options in RUNS:
        out = tmp_path / f"out-{fmt}-{len(options)}"
        result = hermes(store.parent, "export", str(out), "--format", fmt, *options)
        assert result.returncode == 0, (fmt, options, result.stderr)
        assert result.stderr == ""
        data = _read_all(out)
        assert b"release prep #3" in data
    assert _state(store) == before


@pytest.mark.parametrize("version,chain", [
    (16, ["20260528_110000_bb0001", "20260528_112000_bb0002", "20260528_114000_bb0003"]),
    (30, ["20260921_120000_c1", "20260921_121000_c2", "20260921_122000_c3"]),
])
def test_lineage_on_upstream_stores_follows_compression_and_not_the_branch(upstream_copy, tmp_path, version, chain):
    store = upstream_copy(version)
    out = tmp_path / "out.jsonl"
    result = hermes(store.parent, "export", str(out), "--lineage")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    ids = [line["id"] for line in lines]
    start = ids.index(chain[0])
    assert ids[start:start + 3] == chain
    assert [lines[start + k]["lineage"] for k in range(3)] == [
        {"conversation": chain[0], "segment": k + 1, "segments": 3} for k in range(3)
    ]
    branch = next(line for line in lines if line.get("title") == "release prep (branch)")
    assert branch["lineage"]["segments"] == 1


def test_scaffolding_is_labelled_in_markdown_of_the_v30_store(upstream_copy, tmp_path):
    store = upstream_copy(30)
    out = tmp_path / "k1.md"
    result = hermes(store.parent, "export", str(out), "--format", "md", "--session-id", "20260921_150000_k1")
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    # the hidden first message is there, under a heading that says what it is
    section = text.split("\n## User (scaffolding, not shown in chat)\n", 1)[1].split("\n## ", 1)[0]
    assert "HIDDENKINDWORD" in section


# ----------------------------------------------------------------------------- docs


def test_export_help_and_readme_list_the_same_options():
    result = subprocess.run([sys.executable, "-m", "hermes_tui.cli", "sessions", "export", "--help"],
                            capture_output=True, text=True, cwd=REPO, timeout=60)
    assert result.returncode == 0
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    line = next(line for line in readme.splitlines() if line.startswith("hermes sessions export "))
    for option in EXPORT_OPTIONS:
        assert option in result.stdout and option in line, option
    for fmt in ("jsonl", "md", "html", "md-dir"):
        assert fmt in line
    assert "user-prompts" in line
    assert "[REDACTED]" in readme and "manifest.jsonl" in readme


def test_the_path_typed_for_an_export_is_echoed_without_its_controls(home, tmp_path):
    """A path pasted with an escape sequence in it was echoed raw by 'Exported … to PATH':
    the terminal ran it. It is echoed with the controls shown."""
    out = tmp_path / "x\x1b]0;PWN\x07.md"
    done = hermes(home, "export", str(out), "--format", "md")
    assert done.returncode == 0, done.stderr
    assert out.exists()  # (the file has the name typed)
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert done.stdout.startswith("Exported ") and "PWN" in done.stdout


def test_a_markdown_file_name_without_a_format_says_it_gets_jsonl(home, tmp_path):
    """Upstream's default stays (JSONL), but a file named .md holding JSONL was a surprise
    found only on opening it: stderr says which format was written and how to get Markdown."""
    out = tmp_path / "notes.md"
    done = hermes(home, "export", str(out))
    assert done.returncode == 0, done.stderr
    assert "--format md writes Markdown" in done.stderr
    assert out.read_text(encoding="utf-8").startswith("{")  # (JSONL, as asked by default)
    quiet = hermes(home, "export", str(tmp_path / "chosen.md"), "--format", "jsonl")
    assert quiet.returncode == 0 and "Note" not in quiet.stderr
    plain = hermes(home, "export", str(tmp_path / "all.jsonl"))
    assert plain.returncode == 0 and "Note" not in plain.stderr
