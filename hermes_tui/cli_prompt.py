"""The command line's one way to ask before a change (CLI-6), shared by every command module."""

from __future__ import annotations

import sys


def confirm(prompt: str) -> bool:
    """CLI-6: ``y``/``yes`` confirms; anything else, EOF or Ctrl-C declines. The prompt is
    asked on stderr: stdout keeps only what the command produces."""
    try:
        # (inside the try: a Ctrl-C right after the prompt appears declines too)
        print(prompt, end="", file=sys.stderr, flush=True)
        answer = input()
    except (EOFError, KeyboardInterrupt):
        print(file=sys.stderr)
        return False
    return answer.strip().lower() in ("y", "yes")
