"""Export formats beyond JSONL and Markdown: the HTML page, the Markdown
directory, compression lineages as one document, prompts only, redaction -- and the
Markdown transcript's labels for rows the chat does not show as turns."""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
from html.parser import HTMLParser
from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_state.export import export_to_path, import_jsonl, iter_export, render_chunks
from hermes_state.export_mddir import MANIFEST, NAME_BYTES, file_name, write_md_dir
from hermes_state.export_units import ExportOptions, is_user_prompt
from hermes_state.inert_text import UNSAFE_RE
from hermes_state.redact import MARK, redact_text, redact_value

T0 = 1741166123.0

# ----------------------------------------------------------------------------- redaction

SECRETS = {
    "openai": ("key is sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z here", "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"),
    "openai-legacy": ("OPENAI sk-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3dEf6h.", "sk-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3dEf6h"),
    "anthropic": ("use sk-ant-api03-Zx9_Yw8-Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe", "sk-ant-api03-Zx9_Yw8-Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe"),
    "github": ("token ghp_16C7e42F292c6912E7710c838347Ae178B4a ok", "ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
    "github-pat": ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF"),
    "slack-bot": ("SLACK=xoxb-2048-4096-aBcDeFgHiJkLmNoP", "xoxb-2048-4096-aBcDeFgHiJkLmNoP"),
    "slack-app": ("xoxa-2-11111111-22222222 then", "xoxa-2-11111111-22222222"),
    "slack-user": ("(xoxp-1234567890-abcdefabcdef)", "xoxp-1234567890-abcdefabcdef"),
    "aws": ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    "bearer": ("Authorization: Bearer 0123456789abcdefXYZ.ab-cd_ef", "0123456789abcdefXYZ.ab-cd_ef"),
    "jwt": (
        "cookie jwt eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c;",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    ),
    "password-assignment": ("mysql -u root password=hunter2!", "hunter2!"),
    "env-password": ("DB_PASSWORD=correct-horse-battery", "correct-horse-battery"),
    "json-password": ('{"user": "bob", "password": "p@ss w0rd"}', "p@ss w0rd"),
    "python-api-key": ("config = {'api_key': 'abc123secretvalue'}", "abc123secretvalue"),
    "yaml-password": ("db:\n  password: s3cr3t-Value\n  host: x", "s3cr3t-Value"),
    "option": ("run --api-key=QWERTY12345 now", "QWERTY12345"),
    "private-key": (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq\nl2dPm9YtqS0=\n-----END RSA PRIVATE KEY-----\nafter",
        "\nMIIEowIBAAKCAQEA7bq\nl2dPm9YtqS0=\n",
    ),
    "private-key-cut-off": ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA", "\nb3BlbnNzaC1rZXktdjEAAAAA"),
    "url-credentials": ("postgres://admin:Sup3rS3cret@db.example.com:5432/app", "Sup3rS3cret"),
}


@pytest.mark.parametrize("shape", sorted(SECRETS))
def test_redaction_replaces_each_secret_shape_and_keeps_what_is_around_it(shape):
    text, secret = SECRETS[shape]
    # the secret, and only the secret, is replaced: the words around it stay readable
    expected = text.replace(secret, f"\n{MARK}\n" if shape.startswith("private-key") else MARK)
    assert redact_text(text) == expected


def test_redaction_keeps_the_name_of_what_was_redacted():
    assert redact_text("password=hunter2") == f"password={MARK}"
    assert redact_text('{"password": "x1"}') == f'{{"password": "{MARK}"}}'
    assert redact_text("Bearer abcdefghijklmnop1234") == f"Bearer {MARK}"
    assert redact_text("https://bob:pw12345@host/x") == f"https://bob:{MARK}@host/x"
    block = redact_text("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----")
    assert block == f"-----BEGIN PRIVATE KEY-----\n{MARK}\n-----END PRIVATE KEY-----"


@pytest.mark.parametrize(
    "ordinary",
    [
        "I forgot my password and the token expired yesterday.",
        "Reset your password: the link is in the email.",
        "The secret to a good sketch is a sturdy skeleton; ask the task runner.",
        "She was the bearer of bad news.",
        "max_tokens=4096 and tokenizer=cl100k, temperature=0.2",
        "Use the keyword `password` in the form; passwords must be 12 characters.",
        "risk-based skills: sk-8 is a size, ghp is a word, xox is a game",
        "AKIA is a prefix of AWS keys; ASIA is a continent.",
        "see https://example.com/docs:8080/path and mailto:someone@example.com",
        "eyJ is how base64 JSON starts",
        "ssh-keygen writes -----BEGIN OPENSSH PUBLIC KEY----- blocks",
    ],
)
def test_redaction_leaves_ordinary_text_alone(ordinary):
    assert redact_text(ordinary) == ordinary


def test_redaction_of_a_session_walks_every_text_but_keeps_ids():
    obj = {
        "id": "sess_password=abc",
        "title": "deploy with sk-ant-api03-Zx9_Yw8-Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe",
        "parent_session_id": None,
        "messages": [
            {"id": 1, "session_id": "sess_password=abc", "role": "assistant", "content": "ok",
             "tool_calls": [{"id": "call_1", "function": {"name": "terminal",
                                                          "arguments": '{"cmd": "export API_KEY=abcdef123456"}'}}]},
            {"id": 2, "role": "tool", "tool_call_id": "call_1", "content": "AKIAIOSFODNN7EXAMPLE"},
        ],
    }
    out = redact_value(obj)
    assert out["id"] == obj["id"] and out["messages"][0]["session_id"] == obj["id"]
    assert MARK in out["title"]
    assert "abcdef123456" not in json.dumps(out)
    assert out["messages"][1]["content"] == MARK
    assert obj["messages"][1]["content"] == "AKIAIOSFODNN7EXAMPLE"  # the input is not changed


# ----------------------------------------------------------------------------- stores

HOSTILE = (
    "osc \x1b]0;pwned\x07 csi \x1b[2J c1 \x9b31m bidi \u202eevil\u202c nul \x00 "
    "<script>document.title='pwned'</script> </textarea><img src=x onerror=alert(1)> \"q\" & done"
)


@pytest.fixture
def chain_store(db, make_session):
    """A conversation compressed twice (root → mid → tip), a branch of the root's tip, a
    delegate run, and an unrelated session."""
    make_session(db, "root", started_at=T0, ended_at=T0 + 100, end_reason="compression", title="Plan",
                 messages=[("user", "first prompt"), ("assistant", "first answer")])
    make_session(db, "mid", started_at=T0 + 101, ended_at=T0 + 200, end_reason="compression",
                 parent_session_id="root", title="Plan #2",
                 messages=[("user", "[CONTEXT COMPACTION] summary of before"), ("user", "second prompt"),
                           ("assistant", "second answer")])
    make_session(db, "tip", started_at=T0 + 201, parent_session_id="mid", title="Plan #3",
                 messages=[("user", "third prompt"), ("assistant", "third answer")])
    make_session(db, "helper", source="subagent", started_at=T0 + 150, parent_session_id="mid",
                 messages=[("user", "delegated task"), ("assistant", "delegated answer")])
    make_session(db, "other", started_at=T0 + 500, title="Other",
                 messages=[("user", "unrelated"), ("assistant", "fine")])
    return db


def _units(text: str) -> list[str]:
    return text.split("\n---\n\n")


def test_lineage_markdown_is_one_document_root_to_tip_with_segments_marked(chain_store):
    text = "".join(render_chunks(iter_export(chain_store, options=ExportOptions(lineage=True)), "md"))
    documents = _units(text)
    plan = next(d for d in documents if "first prompt" in d)
    assert plan.startswith("# Plan #3\n")
    assert [m.group(1) for m in re.finditer(r"^## Segment (\d) of 3", plan, re.M)] == ["1", "2", "3"]
    assert plan.index("first prompt") < plan.index("second prompt") < plan.index("third prompt")
    assert "(continued after compression)" in plan
    assert sum("second prompt" in d for d in documents) == 1  # a segment is never its own document
    assert any("delegated task" in d and "Segment" not in d for d in documents)  # not a compression
    assert len(documents) == 3  # the chain, the delegate run, the other session


def test_lineage_of_one_session_brings_its_whole_chain(chain_store):
    objs = list(iter_export(chain_store, session_ids=["mid"], options=ExportOptions(lineage=True)))
    assert [o["id"] for o in objs] == ["root", "mid", "tip"]
    assert [o["lineage"] for o in objs] == [
        {"conversation": "root", "segment": n, "segments": 3} for n in (1, 2, 3)
    ]


def test_lineage_jsonl_puts_segments_together_and_imports_back(chain_store, tmp_path):
    out = tmp_path / "lineage.jsonl"
    export_to_path(chain_store, out, "jsonl", options=ExportOptions(lineage=True))
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    ids = [line["id"] for line in lines]
    assert ids[ids.index("root"):ids.index("root") + 3] == ["root", "mid", "tip"]
    fresh = SessionDB(tmp_path / "fresh.db")
    try:
        report = import_jsonl(fresh, out)
        assert report.ok and sorted(report.imported) == sorted(ids)
        assert fresh.get_session("mid")["parent_session_id"] == "root"
    finally:
        fresh.close()


def test_only_user_prompts_keeps_the_users_own_prompts(chain_store):
    objs = list(iter_export(chain_store, options=ExportOptions(only="user-prompts")))
    contents = [m["content"] for o in objs for m in o["messages"]]
    assert "second prompt" in contents and "first prompt" in contents
    assert not any("answer" in c for c in contents)
    assert not any(c.startswith("[CONTEXT COMPACTION]") for c in contents)
    assert {m["role"] for o in objs for m in o["messages"]} == {"user"}


def test_only_user_prompts_leaves_scaffolding_out():
    assert not is_user_prompt({"role": "user", "content": "[signal context] …", "display_kind": "hidden"})
    assert is_user_prompt({"role": "user", "content": "hi", "display_kind": None})


def test_markdown_labels_scaffolding_and_compaction_history_as_the_transcript_does():
    obj = {"id": "s", "source": "cli", "started_at": T0, "messages": [
        {"role": "user", "content": "[context] reply plainly", "timestamp": T0, "display_kind": "hidden"},
        {"role": "user", "content": "older prompt", "timestamp": T0 + 1, "compacted": 1},
        {"role": "user", "content": "real prompt", "timestamp": T0 + 2},
    ]}
    text = "".join(render_chunks([obj], "md"))
    assert "## User (scaffolding, not shown in chat)\n" in text
    assert "## User (compaction history)\n" in text
    assert "## User\n\n*2025-03-05 09:15:25 UTC*\n\nreal prompt" in text


def test_markdown_of_a_v30_corpus_labels_every_scaffolding_row(tmp_path):
    from hermes_workload.corpus import generate_corpus

    path = tmp_path / "state.db"
    generate_corpus(path, messages=1500, seed=3, now=1767225600.0, schema=30)
    conn = sqlite3.connect(path)
    hidden = conn.execute("SELECT COUNT(*) FROM messages WHERE display_kind = 'hidden' AND active = 1").fetchone()[0]
    conn.close()
    assert hidden > 0
    db = SessionDB(path, read_only=True)
    try:
        text = "".join(render_chunks(iter_export(db), "md"))
    finally:
        db.close()
    assert text.count("(scaffolding, not shown in chat)") == hidden


# ----------------------------------------------------------------------------- HTML


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.text: list[str] = []
        self.links: list[tuple[str, str]] = []
        self._href: str | None = None
        self.in_nav = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        attrs = dict(attrs)
        if tag == "nav":
            self.in_nav = True
        if tag == "a" and self.in_nav:
            self._href = attrs.get("href")

    def handle_endtag(self, tag):
        if tag == "nav":
            self.in_nav = False

    def handle_data(self, data):
        self.text.append(data)
        if self._href is not None:
            self.links.append((self._href, data))
            self._href = None


def _hostile_session(db, make_session, session_id="evil", title=None):
    make_session(db, session_id, started_at=T0, title=title, messages=[
        ("user", HOSTILE),
        {"role": "assistant", "content": "calling", "tool_calls": [
            {"id": "call_\x1b[31m", "function": {"name": "term</code><script>x</script>",
                                                "arguments": json.dumps({"cmd": HOSTILE})}}]},
        {"role": "tool", "tool_name": "term\x07", "tool_call_id": "call_\x1b[31m", "content": HOSTILE},
    ])


def test_html_escapes_every_text_and_shows_controls_inert(db, make_session):
    _hostile_session(db, make_session)
    # (written as another tool might: set_session_title would clean it)
    db._execute_write(lambda conn: conn.execute(
        "UPDATE sessions SET title = ?", ("title <b>bold</b> \u202eright\x1b]0;t\x07",)))
    page = "".join(render_chunks(iter_export(db), "html"))
    # no control reaches the file raw (newline and tab aside)
    assert not [c for c in UNSAFE_RE.findall(page) if c not in "\n\t"]
    # no markup from the data: the page's own tags only
    parser = _Page()
    parser.feed(page)
    assert "script" not in parser.tags and "img" not in parser.tags and "textarea" not in parser.tags
    assert "b" not in parser.tags
    text = "".join(parser.text)
    assert "<script>document.title='pwned'</script>" in text  # shown as text
    assert "</textarea><img src=x onerror=alert(1)>" in text
    assert "osc \u241b]0;pwned\u2407" in text and "nul \u2400" in text and "c1 \ufffd31m" in text
    assert "title <b>bold</b> \ufffdright\u241b]0;t\u2407" in text


def test_html_page_is_self_contained_and_lists_every_conversation(chain_store):
    page = "".join(render_chunks(iter_export(chain_store, options=ExportOptions(lineage=True)), "html"))
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert not re.search(r"(?:src|href)=\"(?:https?:)?//", page)  # nothing fetched
    parser = _Page()
    parser.feed(page)
    # most recently used first; the chain where its tip is; the delegate run on its own
    assert [text for _href, text in parser.links] == ["Other", "Plan #3", "Untitled session"]
    for href, _text in parser.links:
        assert f'id="{href[1:]}"' in page
    assert page.count('<h3 class="segment">') == 3
    assert "scaffolding" not in page


def test_html_sidebar_counts_conversations_of_a_lineage_export_and_sessions_otherwise(chain_store, tmp_path):
    """Without --lineage each article is a session: the sidebar said "5 conversations" of the
    5 sessions of three conversations."""
    lineage = "".join(render_chunks(iter_export(chain_store, options=ExportOptions(lineage=True)), "html"))
    assert "<p>3 conversations</p>" in lineage
    plain = "".join(render_chunks(iter_export(chain_store), "html"))
    assert "<p>5 sessions</p>" in plain and "conversations</p>" not in plain
    # The writer to a file (on several cores when the store is large) says the same.
    from hermes_state.export_parallel import export_to_path

    out = tmp_path / "all.html"
    export_to_path(chain_store, out, "html")
    assert "<p>5 sessions</p>" in out.read_text(encoding="utf-8")


def test_html_of_nothing_is_still_a_page(db):
    page = "".join(render_chunks([], "html"))
    assert page.startswith("<!DOCTYPE html>") and "<p>0 sessions</p>" in page and page.endswith("</html>\n")


# ----------------------------------------------------------------------------- md-dir


def _manifest(directory: Path) -> list[dict]:
    return [json.loads(line) for line in (directory / MANIFEST).read_text(encoding="utf-8").splitlines()]


def test_md_dir_writes_one_file_per_conversation_with_a_manifest_of_hashes(chain_store, tmp_path):
    out = tmp_path / "export"
    count = export_to_path(chain_store, out, "md-dir", options=ExportOptions(lineage=True))
    assert count == 5  # sessions
    entries = _manifest(out)
    assert len(entries) == 3
    assert sorted(os.listdir(out)) == sorted([MANIFEST, *(e["file"] for e in entries)])
    for entry in entries:
        data = (out / entry["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
        assert entry["messages"] == sum(1 for line in data.decode().splitlines() if re.match(r"^#{2,3} (User|Assistant)", line))
    plan = next(e for e in entries if e["session_id"] == "root")
    assert plan["sessions"] == ["root", "mid", "tip"] and plan["title"] == "Plan #3"
    assert (out.stat().st_mode & 0o777) == 0o700
    assert all((p.stat().st_mode & 0o777) == 0o600 for p in out.iterdir())
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp left


def test_md_dir_file_names_are_safe_bounded_and_unique():
    taken: set[str] = set()
    hostile = [
        {"id": "../../etc/passwd", "title": "a/b\\c", "started_at": T0},
        {"id": "x\x1b]0;t\x07y", "title": "\u202eevil\x00", "started_at": T0},
        {"id": "SAME", "title": "Title", "started_at": T0},
        {"id": "same", "title": "title", "started_at": T0},
        {"id": ".hidden", "title": "." * 50, "started_at": None},
        {"id": "long", "title": "長い題名" * 100, "started_at": T0},
        {"id": "", "title": None, "started_at": "not a time"},
    ]
    names = [file_name([obj], taken) for obj in hostile]
    assert len(set(n.casefold() for n in names)) == len(names)
    for name in names:
        assert "/" not in name and "\\" not in name and not UNSAFE_RE.search(name)
        assert not name.startswith(".") and name.endswith(".md") and name != MANIFEST
        assert len(name.encode("utf-8")) <= NAME_BYTES
    assert names[0].startswith("2025-03-05_091523_etc-passwd_a-b-c")


def test_md_dir_replaces_an_earlier_export_but_never_another_directory(chain_store, tmp_path):
    out = tmp_path / "export"
    export_to_path(chain_store, out, "md-dir")
    first = set(os.listdir(out))
    export_to_path(chain_store, out, "md-dir", options=ExportOptions(lineage=True))
    assert len(os.listdir(out)) == 4 and set(os.listdir(out)) != first
    other = tmp_path / "documents"
    other.mkdir()
    (other / "thesis.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        export_to_path(chain_store, other, "md-dir")
    assert os.listdir(other) == ["thesis.txt"]
    (out / "notes.txt").write_text("added by hand")
    with pytest.raises(FileExistsError):
        export_to_path(chain_store, out, "md-dir")
    assert (out / "notes.txt").exists()


def test_md_dir_failure_half_way_leaves_nothing_behind(chain_store, tmp_path):
    out = tmp_path / "export"
    export_to_path(chain_store, out, "md-dir")
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def units():
        yield [{"id": "a", "title": "A", "started_at": T0, "messages": []}]
        raise RuntimeError("the store went away")

    with pytest.raises(RuntimeError):
        write_md_dir(out, units())
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".export.")]


def test_md_dir_removes_the_temp_directory_a_killed_export_left(chain_store, tmp_path):
    stale = tmp_path / ".export.999999999.abcd1234.tmp"
    stale.mkdir()
    (stale / "half.md").write_text("x")
    export_to_path(chain_store, tmp_path / "export", "md-dir")
    assert not stale.exists()


def test_redaction_reaches_every_format(db, make_session, tmp_path):
    secret = "sk-ant-api03-Zx9_Yw8-Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe"
    make_session(db, "s1", started_at=T0, title=f"key {secret}", messages=[
        ("user", f"my key is {secret}"),
        {"role": "assistant", "content": "ok", "tool_calls": [
            {"id": "c1", "function": {"name": "sh", "arguments": json.dumps({"cmd": f"export K={secret}"})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": f"K={secret}"},
    ])
    options = ExportOptions(redact=True)
    for fmt in ("jsonl", "md", "html", "md-dir"):
        out = tmp_path / f"out-{fmt}"
        export_to_path(db, out, fmt, options=options)
        files = [out] if out.is_file() else list(out.iterdir())
        data = b"".join(p.read_bytes() for p in files)
        assert secret.encode() not in data, fmt
        assert MARK.encode() in data, fmt


# ----------------------------------------------------------------------------- the fast paths


def test_timestamps_read_as_datetime_shows_them_including_rounding_into_the_next_second():
    import random
    from datetime import datetime, timezone

    from hermes_state.export_markdown import format_timestamp

    def reference(ts):
        try:
            return datetime.fromtimestamp(float(ts), timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        except (TypeError, ValueError, OverflowError, OSError):
            return "?"

    rng = random.Random(7)
    values = [rng.uniform(0, 4.2e9) for _ in range(20000)]
    values += [k + 0.9999995 for k in range(0, 400000, 13)] + [T0 + 0.4999995, T0 + 0.9999994999]
    values += [0, -1.5, -86400.25, "1741166123.5", None, "soon", float("nan"), float("inf"), 1e20, 253402300799.9999999]
    assert [format_timestamp(v) for v in values] == [reference(v) for v in values]


@pytest.mark.parametrize("value", [
    {"command": "ls -la", "timeout": 120, "background": False, "note": None, "ratio": 0.5},
    {"text": "é\n\"quoted\" \u202e\x1b", "big": 10**30, "neg": -0.0, "nan": float("nan")},
    {}, [], {"nested": {"a": [1, 2]}}, [{"a": 1}], "text", 3, None, {"blob": b"\xff\xfebytes"},
])
def test_tool_arguments_are_pretty_printed_exactly_as_json_does(value):
    from hermes_state.export_batch import blob_text
    from hermes_state.export_markdown import pretty_json

    assert pretty_json(value) == json.dumps(value, ensure_ascii=False, indent=2, default=blob_text)


def test_redaction_reaches_text_stored_as_a_blob_or_nested_anywhere():
    secret = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
    obj = {"id": "s", "messages": [{"content": f"key {secret}".encode(), "n": 3, "ok": True, "x": None,
                                     "nested": [({"deep": secret},), [secret]]}]}
    out = redact_value(obj)
    assert secret not in json.dumps(out, default=str)
    assert out["messages"][0]["content"] == f"key {MARK}"
    assert out["messages"][0]["n"] == 3 and out["messages"][0]["ok"] is True and out["messages"][0]["x"] is None
