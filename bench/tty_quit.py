"""How long ``q`` takes to give the terminal back: ``hermes-sessions browse`` on a real
pseudo-terminal (its controlling terminal, as a shell in a terminal window would start it),
``q`` typed at a given moment, the time until the process has exited.

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
            os.write(master, key.encode())
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
