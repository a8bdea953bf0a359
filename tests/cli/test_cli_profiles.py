"""``--profile`` and ``--all-profiles`` as a person runs them (PF-1..PF-5): real processes on
a Hermes root whose default store and profiles are copies of upstream's stores (v30 upgraded,
v30, v16) plus a profile whose store is garbage. The broken one is named once, on stderr; the
others are read, counted, exported and renamed in, and nothing but the rename writes."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: Sessions each readable profile's store holds (``hermes sessions stats`` on each).
READABLE = ("default", "coder", "old")


def hermes(root: Path, *args: str, tmp: Path | None = None):
    env = dict(os.environ)
    env["HERMES_HOME"] = str(root)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("HERMES_SESSIONS_DEBUG", None)
    side = tmp or root.parent
    env["HERMES_SESSIONS_DATA_DIR"] = str(side / "data")
    env["HERMES_SESSIONS_CACHE_DIR"] = str(side / "cache")
    return subprocess.run(
        [sys.executable, "-m", "hermes_tui.cli", "sessions", *args],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=120,
    )


def store(root: Path, name: str) -> Path:
    return root / "state.db" if name == "default" else root / "profiles" / name / "state.db"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def ids_of(path: Path) -> set[str]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return {r[0] for r in conn.execute("SELECT id FROM sessions")}


def integrity(path: Path) -> str:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]


def broken_named_once(stderr: str) -> None:
    lines = [line for line in stderr.splitlines() if "broken" in line]
    assert len(lines) == 1, stderr
    assert "left out" in lines[0] and "not a SQLite database" in lines[0]
    assert "Traceback" not in stderr


def test_list_across_profiles_shows_each_row_with_its_profile_and_names_the_broken_one_once(profiles_home):
    result = hermes(profiles_home, "list", "--all-profiles", "--limit", "200")
    assert result.returncode == 0, result.stderr
    broken_named_once(result.stderr)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Profile ")
    rows = [line.split() for line in lines[2:]]
    profiles = {row[0] for row in rows}
    assert profiles == set(READABLE)
    # Each profile's rows are that profile's list, in its order, and nothing else.
    for name in READABLE:
        alone = hermes(profiles_home, "list", "--profile", name, "--limit", "200")
        assert alone.returncode == 0, alone.stderr
        expected = [line.split()[-1] for line in alone.stdout.splitlines()[2:]]
        assert [row[-1] for row in rows if row[0] == name] == expected
        assert not alone.stdout.startswith("Profile")  # (one profile: no column)


def test_the_same_id_in_two_profiles_is_listed_once_in_each(profiles_home):
    shared = ids_of(store(profiles_home, "default")) & ids_of(store(profiles_home, "old"))
    assert shared  # (the upgraded default store holds the v16 store's ids)
    result = hermes(profiles_home, "list", "--all-profiles", "--limit", "200")
    listed = [line.split() for line in result.stdout.splitlines()[2:]]
    in_old = {row[-1] for row in listed if row[0] == "old"}
    in_default = {row[-1] for row in listed if row[0] == "default"}
    assert in_old & in_default


def test_an_unknown_profile_is_one_line_naming_the_known_ones(profiles_home):
    result = hermes(profiles_home, "list", "--profile", "nosuch")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.strip().count("\n") == 0
    assert "no profile 'nosuch'" in result.stderr
    assert "default, broken, coder, fresh, old" in result.stderr


def test_profile_and_all_profiles_together_are_a_usage_error(profiles_home):
    result = hermes(profiles_home, "list", "--profile", "old", "--all-profiles")
    assert result.returncode == 2
    assert "not allowed with" in result.stderr


def test_the_broken_profile_alone_is_one_error_line(profiles_home):
    result = hermes(profiles_home, "stats", "-p", "broken")
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "not a SQLite database" in result.stderr


def test_stats_across_profiles_add_up_each_profiles_figures(profiles_home):
    result = hermes(profiles_home, "stats", "--all-profiles")
    assert result.returncode == 0, result.stderr
    broken_named_once(result.stderr)
    figures = {}
    for name in READABLE:
        alone = hermes(profiles_home, "stats", "--profile", name).stdout.splitlines()
        figures[name] = (int(alone[0].split(": ")[1]), int(alone[1].split(": ")[1]))
    lines = result.stdout.splitlines()
    assert lines[0] == f"Total sessions: {sum(s for s, _m in figures.values())}"
    assert lines[1] == f"Total messages: {sum(m for _s, m in figures.values())}"
    assert "Profiles: 3" in lines
    for name, (sessions, messages) in figures.items():
        assert any(line.startswith(f"  {name}: {sessions} sessions, {messages} messages") for line in lines)


def test_reads_across_profiles_write_nothing(profiles_home, tmp_path):
    before = {name: digest(store(profiles_home, name)) for name in (*READABLE, "broken")}
    for args in (["list", "--all-profiles"], ["stats", "--all-profiles"],
                 ["export", "--all-profiles", str(tmp_path / "all.jsonl")]):
        hermes(profiles_home, *args)
    after = {name: digest(store(profiles_home, name)) for name in (*READABLE, "broken")}
    assert after == before


def test_export_across_profiles_holds_every_session_with_its_profile(profiles_home, tmp_path):
    out = tmp_path / "all.jsonl"
    result = hermes(profiles_home, "export", "--all-profiles", str(out))
    # The broken profile is named and left out: the file is not everything asked for.
    assert result.returncode == 1
    broken_named_once(result.stderr)
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    by_profile: dict[str, set[str]] = {}
    for record in records:
        by_profile.setdefault(record["profile"], set()).add(record["id"])
    assert set(by_profile) == set(READABLE)
    for name in READABLE:
        assert by_profile[name] == ids_of(store(profiles_home, name))
    assert result.stdout.strip() == f"Exported {len(records)} sessions of 3 profiles to {out}"
    # Read back into a fresh home: the field is not stored, each session id once.
    fresh = tmp_path / "fresh-home"
    fresh.mkdir()
    back = hermes(fresh, "import", str(out), tmp=tmp_path)
    assert back.returncode == 0, back.stderr
    assert ids_of(fresh / "state.db") == set().union(*by_profile.values())


def test_export_across_profiles_as_a_markdown_directory_and_an_html_page(profiles_home, tmp_path):
    expected = sum(len(ids_of(store(profiles_home, name))) for name in READABLE)
    directory = tmp_path / "all-md"
    result = hermes(profiles_home, "export", "--all-profiles", str(directory), "--format", "md-dir", "--redact")
    assert result.returncode == 1  # (the broken profile is left out, as for JSONL)
    manifest = [json.loads(line) for line in (directory / "manifest.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(manifest) == expected  # ids shared by two profiles get a file each (names unique)
    assert len({entry["file"] for entry in manifest}) == expected
    assert all("- **Profile:** " in (directory / entry["file"]).read_text(encoding="utf-8") for entry in manifest)
    page = tmp_path / "all.html"
    result = hermes(profiles_home, "export", "--all-profiles", str(page), "--format", "html")
    assert result.returncode == 1
    assert page.read_text(encoding="utf-8").count("<article ") == expected


def test_export_of_one_session_finds_its_profile_and_refuses_an_id_in_two(profiles_home):
    only_coder = sorted(ids_of(store(profiles_home, "coder")) - ids_of(store(profiles_home, "default"))
                        - ids_of(store(profiles_home, "old")))[0]
    result = hermes(profiles_home, "export", "--all-profiles", "-", "--session-id", only_coder, "--format", "md")
    assert f"`{only_coder}`" in result.stdout and "- **Profile:** coder" in result.stdout
    shared = sorted(ids_of(store(profiles_home, "default")) & ids_of(store(profiles_home, "old")))[0]
    refused = hermes(profiles_home, "export", "--all-profiles", "-", "--session-id", shared)
    assert refused.returncode == 1 and refused.stdout == ""
    assert "in several profiles (default, old)" in refused.stderr and "--profile" in refused.stderr


def test_a_rename_goes_to_the_named_profiles_store_only(profiles_home):
    shared = sorted(ids_of(store(profiles_home, "default")) & ids_of(store(profiles_home, "old")))
    target = shared[0]
    before = {name: digest(store(profiles_home, name)) for name in ("default", "coder", "broken")}
    schema_before = _schema(store(profiles_home, "old"))
    result = hermes(profiles_home, "rename", "--profile", "old", target, "renamed", "in", "old")
    assert result.returncode == 0, result.stderr
    assert "renamed to: renamed in old" in result.stdout
    assert _title(store(profiles_home, "old"), target) == "renamed in old"
    assert _title(store(profiles_home, "default"), target) != "renamed in old"
    assert {name: digest(store(profiles_home, name)) for name in before} == before
    assert _schema(store(profiles_home, "old")) == schema_before  # (v16 written in place, no DDL)
    listed = hermes(profiles_home, "list", "--all-profiles", "--limit", "200").stdout
    assert any(line.startswith("old") and "renamed in old" in line and target in line for line in listed.splitlines())
    for name in READABLE:
        assert integrity(store(profiles_home, name)) == "ok"


def test_without_a_profile_named_the_sticky_one_is_used(profiles_home):
    (profiles_home / "active_profile").write_text("coder\n")
    plain = hermes(profiles_home, "list", "--limit", "200")
    coder = hermes(profiles_home, "list", "--profile", "coder", "--limit", "200")
    assert plain.returncode == 0 and plain.stdout == coder.stdout
    (profiles_home / "active_profile").write_text("gone\n")
    missing = hermes(profiles_home, "list")
    assert missing.returncode == 1 and "active profile 'gone'" in missing.stderr
    assert missing.stderr.count("\n") == 1


def _title(path: Path, session_id: str):
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT title FROM sessions WHERE id = ?", (session_id,)).fetchone()[0]


def _schema(path: Path):
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        version = conn.execute("SELECT version FROM schema_version").fetchone()
        return version, sorted(conn.execute("SELECT type, name, sql FROM sqlite_master"))


def future_profile(root: Path) -> Path:
    """A profile whose store is upstream's v30 marked with a schema this program does not know."""
    home = root / "profiles" / "future"
    home.mkdir()
    target = home / "state.db"
    target.write_bytes(store(root, "coder").read_bytes())
    with sqlite3.connect(target) as conn:
        conn.execute("UPDATE schema_version SET version = 99")
    conn.close()
    return target


def test_a_store_newer_than_known_is_read_with_one_warning_and_never_written(profiles_home):
    path = future_profile(profiles_home)
    before = digest(path)
    result = hermes(profiles_home, "list", "--all-profiles", "--limit", "200")
    assert result.returncode == 0, result.stderr
    warned = [line for line in result.stderr.splitlines() if "future" in line]
    assert len(warned) == 1 and "newer" in warned[0]
    assert any(line.startswith("future ") for line in result.stdout.splitlines())
    renamed = hermes(profiles_home, "rename", "--profile", "future", "20260921_090000_s1", "x")
    assert renamed.returncode == 1 and "Traceback" not in renamed.stderr
    assert digest(path) == before


def test_hermes_dash_p_before_sessions_chooses_the_profile_as_hermes_does(profiles_home, monkeypatch, capsys):
    from hermes_tui.hermes_shim import main as hermes_main

    monkeypatch.setenv("HERMES_HOME", str(profiles_home))
    monkeypatch.setenv("HERMES_SESSIONS_DATA_DIR", str(profiles_home.parent / "data"))
    assert hermes_main(["-p", "old", "sessions", "list", "--limit", "200"]) == 0
    via_dash_p = capsys.readouterr().out
    assert hermes_main(["sessions", "list", "--profile", "old", "--limit", "200"]) == 0
    assert capsys.readouterr().out == via_dash_p
    assert hermes_main(["--profile=old", "sessions", "stats"]) == 0
    assert capsys.readouterr().out.startswith("Total sessions: ")


def browse(root: Path, *args: str, stdin: str):
    env = dict(os.environ, HERMES_HOME=str(root), PYTHONPATH=str(REPO),
               HERMES_SESSIONS_DATA_DIR=str(root.parent / "data"), HERMES_SESSIONS_CACHE_DIR=str(root.parent / "cache"),
               HERMES_SESSIONS_CONFIG_DIR=str(root.parent / "config"))
    return subprocess.run(
        [sys.executable, "-m", "hermes_tui.cli", "sessions", "browse", "--plain", *args],
        input=stdin, capture_output=True, text=True, cwd=REPO, env=env, timeout=120, start_new_session=True,
    )


def test_browse_across_profiles_picks_a_session_and_says_its_profile(profiles_home):
    result = browse(profiles_home, "--all-profiles", stdin="1\n")
    assert result.returncode == 0, result.stderr
    chosen = result.stdout.strip()
    assert chosen and ":" not in chosen  # (the session's own id, as hermes --resume takes it)
    broken_named_once(result.stderr)
    # The one resume command printed names the profile the session is in (PF-7).
    commands = _resume_commands(result.stderr)
    assert len(commands) == 1 and commands[0].startswith("hermes -p ") and commands[0].endswith(f" --resume {chosen}")
    name = commands[0].split()[2]
    assert chosen in ids_of(store(profiles_home, name))
    menu = result.stderr
    assert all(f"{profile} · " in menu for profile in READABLE)


def test_browse_one_profile_lists_only_its_sessions(profiles_home):
    result = browse(profiles_home, "--profile", "old", stdin="1\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() in ids_of(store(profiles_home, "old"))


def test_an_id_of_another_profile_says_which_profile_has_it(profiles_home):
    only_coder = sorted(ids_of(store(profiles_home, "coder")) - ids_of(store(profiles_home, "default")))[0]
    result = hermes(profiles_home, "rename", only_coder, "x")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip() == f"Session '{only_coder}' not found. It is in profile coder: add --profile coder."


def _listed(result) -> list[dict]:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["sessions"]


def test_list_across_profiles_takes_the_filters_on_each_store(profiles_home):
    """Each profile's rows under a filter are what ``--profile NAME`` lists under it, and each
    JSON item says its profile."""
    across = _listed(hermes(profiles_home, "list", "--all-profiles", "--min-messages", "3", "--json", "--limit", "200"))
    assert {item["profile"] for item in across} <= set(READABLE)
    assert across and all(item["message_count"] >= 3 for item in across)
    for name in READABLE:
        alone = _listed(hermes(profiles_home, "list", "--profile", name, "--min-messages", "3", "--json", "--limit", "200"))
        assert [item["id"] for item in across if item["profile"] == name] == [item["id"] for item in alone]
        everything = _listed(hermes(profiles_home, "list", "--profile", name, "--json", "--limit", "200"))
        assert len(alone) < len(everything) or all(item["message_count"] >= 3 for item in everything)


def test_a_filter_a_profiles_store_cannot_take_leaves_that_profile_out_in_one_line(profiles_home):
    """``old`` is a v16 store: it records no git branch. The others are still filtered and
    listed; ``old`` is named once, with the reason."""
    result = hermes(profiles_home, "list", "--all-profiles", "--branch", "", "--json")
    assert result.returncode == 2 and "--branch needs a value" in result.stderr  # (a bad value: before any store)
    result = hermes(profiles_home, "list", "--all-profiles", "--branch", "zz-no-such-branch", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["sessions"] == []
    left_out = [line for line in result.stderr.splitlines() if "'old' left out" in line]
    assert len(left_out) == 1 and "git_branch" in left_out[0], result.stderr
    assert "Traceback" not in result.stderr
    # Only the profile that cannot take it at all: an error naming why.
    alone = hermes(profiles_home, "list", "--profile", "old", "--branch", "main")
    assert alone.returncode == 1 and "git_branch" in alone.stderr and alone.stdout == ""


def test_unread_across_profiles_names_each_profile_that_does_not_track_it(profiles_home):
    """``list --unread --all-profiles`` once said nothing of the v16 profile, where nothing
    can be unread; ``search`` already named it. Both now say it once per such profile."""
    for args in (("list", "--unread", "--all-profiles"), ("search", "the", "--unread", "--all-profiles")):
        result = hermes(profiles_home, *args)
        assert result.returncode == 0, result.stderr
        notes = [line for line in result.stderr.splitlines() if "unread is not tracked" in line]
        assert len(notes) == 1 and notes[0].startswith("Note: profile 'old': "), result.stderr
        broken_named_once(result.stderr)


def _menu_number(menu: str, profile: str) -> int:
    """The number of the plain picker's first row of ``profile``."""
    for line in menu.splitlines():
        head, _dot, rest = line.strip().partition(". ")
        if head.isdigit() and rest.rstrip().endswith(f"{profile} · {rest.rstrip().rsplit(' · ', 1)[-1]}"):
            return int(head)
    raise AssertionError(f"no row of profile {profile}:\n{menu}")


def _resume_commands(stderr: str) -> list[str]:
    """Every ``hermes … --resume ID`` command printed, from ``hermes`` to the id."""
    import re

    return re.findall(r"hermes(?: -p \S+)? --resume [^\s)]+", stderr)


def test_every_resume_command_printed_for_a_session_across_profiles_names_its_profile(profiles_home):
    menu = browse(profiles_home, "--all-profiles", stdin="q\n").stderr
    number = _menu_number(menu, "coder")
    result = browse(profiles_home, "--all-profiles", stdin=f"{number}\n")
    assert result.returncode == 0, result.stderr
    chosen = result.stdout.strip()
    assert chosen in ids_of(store(profiles_home, "coder"))
    # (Hermes Agent is not installed for the tests: the hint says what to install, then the
    # command; a `hermes --resume` without the profile would resume in the default profile)
    commands = _resume_commands(result.stderr)
    assert commands and set(commands) == {f"hermes -p coder --resume {chosen}"}, result.stderr


def test_a_session_of_a_profile_named_is_resumed_in_that_profile(profiles_home):
    result = browse(profiles_home, "--profile", "old", stdin="1\n")
    assert result.returncode == 0, result.stderr
    chosen = result.stdout.strip()
    assert set(_resume_commands(result.stderr)) == {f"hermes -p old --resume {chosen}"}, result.stderr
    # The default profile, named by nothing, is where a plain `hermes --resume` goes.
    plain = browse(profiles_home, stdin="1\n")
    assert plain.returncode == 0, plain.stderr
    assert set(_resume_commands(plain.stderr)) == {f"hermes --resume {plain.stdout.strip()}"}, plain.stderr


def test_resume_command_runs_in_the_chosen_sessions_profile(profiles_home):
    """The configured ``resume_command`` (``hermes --resume {id}`` for most) runs with
    ``HERMES_HOME`` at the session's profile, where Hermes Agent finds it."""
    record = profiles_home.parent / "resumed.json"
    script = profiles_home.parent / "record.py"
    script.write_text("import json, os, sys\n"
                      f"open({str(record)!r}, 'w').write(json.dumps([os.environ.get('HERMES_HOME'), sys.argv[1:]]))\n")
    config = profiles_home.parent / "config"
    config.mkdir()
    (config / "config.yaml").write_text(f"resume_command: \"{sys.executable} {script} --resume {{id}}\"\n")
    for args, profile in ((("--profile", "old"), "old"), (("--all-profiles",), "coder")):
        number = _menu_number(browse(profiles_home, *args, stdin="q\n").stderr, profile) if profile == "coder" else 1
        result = browse(profiles_home, *args, stdin=f"{number}\n")
        assert result.returncode == 0, result.stderr
        home, argv = json.loads(record.read_text())
        assert Path(home) == store(profiles_home, profile).parent
        assert argv == ["--resume", result.stdout.strip()]
        assert "hermes --resume" not in result.stderr


def test_a_list_of_only_archived_matches_names_the_profile_in_its_hint(profiles_home):
    """The hint to list the archived ones is typed later, where Hermes may run in another
    profile: it names the one that was listed."""
    alone = hermes(profiles_home, "list", "-p", "coder", "--title", "taxes")
    assert alone.returncode == 0 and alone.stdout == "No sessions found.\n"
    assert "hermes sessions list -p coder --title taxes --archived" in alone.stderr, alone.stderr
    every = hermes(profiles_home, "list", "--all-profiles", "--title", "taxes")
    assert "hermes sessions list --all-profiles --title taxes --archived" in every.stderr, every.stderr
