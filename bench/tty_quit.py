"""How long ``q`` takes to give the terminal back: ``hermes-sessions browse`` on a real
pseudo-terminal (its controlling terminal, as a shell in a terminal window would start it),
``q`` typed at a given moment, the time until the process has exited.

A key ``*Nc`` types ``N`` characters ``c`` one key at a time (no bracketed paste), then waits
until the browser has gone quiet: ``typed_s`` is how long that took, ``rss_peak_mb`` the
browser's peak memory by then. ``ESC`` is the Escape key.

``python -m bench.tty_quit HERMES_HOME [--after S] [--keys KEYS]`` prints one JSON line:
``first_frame_s`` (the first output on the terminal), ``quit_s`` (from ``q`` written to the
terminal to the process gone), the exit status. ``--keys`` are typed before ``q`` (each
with ``--gap`` seconds between): ``/word`` to search, ``L`` for the lineage, …
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _drain(fd: int, seconds: float) -> bytes:
    out = b""
    end = time.monotonic() + seconds
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return out
        ready, _, _ = select.select([fd], [], [], min(left, 0.05))
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return out
            if not chunk:
                return out
            out += chunk


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _until_idle(pid: int, master: int, quiet_s: float = 1.0, most_s: float = 600.0) -> float:
    """Drain the terminal until the process has used no CPU for ``quiet_s``; when that began."""
    end = time.monotonic() + most_s
    last, since = _cpu_ticks(pid), time.monotonic()
    while time.monotonic() < end:
        _drain(master, 0.1)
        now = _cpu_ticks(pid)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return since
    return time.monotonic()


def _peak_rss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def quit_after(home: Path, *, after: float, keys: list[str], gap: float = 0.3, config_dir: Path | None = None,
               timeout: float = 120.0) -> dict:
    """Start the browser on ``home``'s store, wait ``after`` seconds from its first frame,
    type ``keys``, then ``q``; time until it exits."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
    env = dict(os.environ, HERMES_HOME=str(home), PYTHONPATH=str(REPO), TERM="xterm-256color")
    if config_dir is not None:
        env["HERMES_SESSIONS_CONFIG_DIR"] = str(config_dir)
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from hermes_tui.cli import sessions_main as m; raise SystemExit(m(['browse']))"], stdin=slave, stdout=slave, stderr=subprocess.DEVNULL,
        env=env, cwd=REPO, start_new_session=True, pass_fds=(slave,),
        preexec_fn=lambda: fcntl.ioctl(slave, termios.TIOCSCTTY, 0),
    )
    os.close(slave)
    out: dict = {"first_frame_s": None}
    try:
        seen = b""
        while time.monotonic() - started < timeout and b"\x1b[?1049h" not in seen and proc.poll() is None:
            seen += _drain(master, 0.05)
        out["first_frame_s"] = round(time.monotonic() - started, 3)
        _drain(master, after)
        for key in keys:
            if key.startswith("*"):  # "*105000a": that many of one character, as keys
                count, char = int(key[1:-1]), key[-1]
                began = time.monotonic()
                for start in range(0, count, 1024):
                    os.write(master, (char * min(1024, count - start)).encode())
                    _drain(master, 0.0)
                out["typed_s"] = round(_until_idle(proc.pid, master) - began, 3)
                out["rss_peak_mb"] = _peak_rss_mb(proc.pid)
                continue
            os.write(master, b"\x1b" if key == "ESC" else key.encode())
            _drain(master, gap)
        pressed = time.monotonic()
        os.write(master, b"q")
        while proc.poll() is None and time.monotonic() - pressed < timeout:
            _drain(master, 0.01)
        out["quit_s"] = round(time.monotonic() - pressed, 3) if proc.poll() is not None else None
        out["exit"] = proc.poll()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tty_quit", description=__doc__.split("\n\n")[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("--after", type=float, default=0.5, help="seconds after the first frame before the keys")
    parser.add_argument("--keys", default="", help="keys typed before q, space-separated (e.g. '/ zanzibar')")
    parser.add_argument("--gap", type=float, default=0.3)
    args = parser.parse_args(argv)
    keys = [k for k in args.keys.split(" ") if k]
    print(json.dumps(quit_after(args.home, after=args.after, keys=keys, gap=args.gap)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
