"""Figures of the commands scripts use: ``stats --json``, ``list --json`` and
``import --from claude-code|codex`` in a fresh process, wall time from spawn to exit and peak
RSS (the child's ``ru_maxrss``). Printed as Markdown rows for ``bench/README.md``.

    python -m bench.script_suite [--messages 100000] [--schema 16|30] [--transcripts 200]

The corpus is built in a temporary directory (``hermes_workload.corpus``, seed 0); the
transcripts are written there too, each of ~250 messages (a user turn, an assistant turn with
a tool call, its result), in the shapes of ``tests/cli/test_import_foreign_transcripts.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _run(home: Path, *args: str) -> tuple[float, float, str]:
    """Wall time (s), peak RSS (MB) and stdout of one ``hermes sessions`` process."""
    env = dict(os.environ, HERMES_HOME=str(home), PYTHONPATH=str(REPO))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "hermes_tui.cli", "sessions", *args],
                                stdout=out, stderr=err, env=env, cwd=REPO)
        _pid, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{args}: exit {proc.returncode}: {err.read()[-500:]!r}")
        return wall, usage.ru_maxrss / 1024, out.read().decode("utf-8")


def _claude_code_tree(root: Path, files: int, turns: int) -> int:
    project = root / "-bench-project"
    project.mkdir(parents=True)
    messages = 0
    for f in range(files):
        sid = f"00000000-0000-4000-8000-{f:012d}"
        lines = []
        t = 1_775_000_000 + f * 10_000
        for turn in range(turns):
            iso = lambda k: time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(t + turn * 10 + k))  # noqa: E731
            common = {"sessionId": sid, "cwd": "/bench", "gitBranch": "main"}
            lines.append(json.dumps({**common, "type": "user", "timestamp": iso(0),
                                     "message": {"role": "user", "content": f"question {turn} about the build"}}))
            lines.append(json.dumps({**common, "type": "assistant", "timestamp": iso(1),
                                     "message": {"id": f"m{f}-{turn}", "role": "assistant", "model": "claude-opus-4-6",
                                                 "content": [{"type": "text", "text": "Let me look. " * 20},
                                                             {"type": "tool_use", "id": f"t{f}-{turn}", "name": "Bash",
                                                              "input": {"command": f"make test-{turn}"}}],
                                                 "usage": {"input_tokens": 900, "output_tokens": 120}}}))
            lines.append(json.dumps({**common, "type": "user", "timestamp": iso(2),
                                     "message": {"role": "user", "content": [
                                         {"type": "tool_result", "tool_use_id": f"t{f}-{turn}",
                                          "content": "ok\n" * 30}]}}))
            messages += 3
        (project / f"{sid}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return messages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.script_suite")
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--schema", type=int, choices=(16, 30), default=16)
    parser.add_argument("--transcripts", type=int, default=200)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="script-suite-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        # Built in a child: this process stays small, and so does what each command's process
        # starts from (a forked child's peak RSS counts the parent's pages until it execs).
        subprocess.run([sys.executable, "-c", "import sys; from hermes_workload.corpus import generate_corpus; "
                        "generate_corpus(sys.argv[1], messages=int(sys.argv[2]), seed=0, now=1767225600.0, "
                        "schema=int(sys.argv[3]))", str(home / "state.db"), str(args.messages), str(args.schema)],
                       check=True, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)))
        rows = []
        wall, rss, result = _run(home, "stats", "--json")
        rows.append((f"`stats --json`, {args.messages:,}-message v{args.schema} corpus", wall, rss,
                     f"{json.loads(result)['sessions']:,} sessions"))
        wall, rss, _ = _run(home, "stats")
        rows.append(("`stats` (text), same corpus", wall, rss, ""))
        wall, rss, result = _run(home, "list", "--json", "--limit", "1000000")
        listed = len(json.loads(result)["sessions"])
        rows.append(("`list --json --limit 1000000`, same corpus", wall, rss, f"{listed:,} rows, {listed / wall:,.0f} rows/s"))
        fresh = Path(tmp) / "fresh"
        fresh.mkdir()
        count = _claude_code_tree(Path(tmp) / "claude", args.transcripts, 85)
        wall, rss, _ = _run(fresh, "import", "--from", "claude-code", str(Path(tmp) / "claude"))
        rows.append((f"`import --from claude-code`, {args.transcripts} transcripts into a new store", wall, rss,
                     f"{count:,} messages, {count / wall:,.0f} messages/s"))
        wall, rss, _ = _run(fresh, "import", "--from", "claude-code", str(Path(tmp) / "claude"))
        rows.append(("the same import again (adds nothing)", wall, rss, f"{count / wall:,.0f} messages read/s"))
    load = os.getloadavg()[0]
    print("| command | wall | peak RSS | |\n|---|---:|---:|---|")
    for name, wall, rss, note in rows:
        print(f"| {name} | {wall:.2f} s | {rss:.0f} MB | {note} |")
    print(f"\n(load average {load:.2f} at the end; {os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
