"""Imports of other agents' transcripts into a store (``hermes sessions import --from …``).

* :mod:`.claude_code` -- Claude Code's ``~/.claude/projects/**/*.jsonl``, source ``claude-code``;
* :mod:`.codex` -- Codex CLI's ``~/.codex/sessions/**/rollout-*.jsonl``, source ``codex``;
* :mod:`.common` -- the session they build and how it is written.

:func:`import_transcripts` takes a :class:`~hermes_state.store.Store` (opened for writing),
reads every file, and writes one transaction per session; it never fails on a line it cannot
read (named in ``Outcome.problems``) nor on a file (named the same way, line 0).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from . import claude_code, codex
from .common import Outcome, Problem, Session, write_sessions

if TYPE_CHECKING:
    from ..store import Store

#: ``--from`` name → (module, what a person calls it).
FORMATS = {
    claude_code.SOURCE: (claude_code, "Claude Code"),
    codex.SOURCE: (codex, "Codex"),
}


def default_root(fmt: str) -> Path:
    return FORMATS[fmt][0].default_root()


def import_transcripts(
    store: "Store", fmt: str, root: Path, progress: Callable[[int, int], None] | None = None,
) -> Outcome:
    """Import every transcript of format ``fmt`` under ``root`` (a file or a directory)."""
    module = FORMATS[fmt][0]
    files = module.transcript_files(root)
    outcome = Outcome(files=len(files))
    titles = codex.thread_names(root) if module is codex else None

    def sessions() -> Iterator[Session]:
        for done, path in enumerate(files, 1):
            problems: list[Problem] = []
            try:
                session = (module.read_session(path, problems, titles) if module is codex
                           else module.read_session(path, problems))
            except OSError as exc:
                problems.append(Problem(path, 0, f"cannot read the file: {exc.strerror or exc}"))
                session = None
            outcome.problems.extend(problems)
            if progress:
                progress(done, len(files))
            if session is not None:
                yield session

    return write_sessions(store, sessions(), outcome)


__all__ = ["FORMATS", "Outcome", "Problem", "default_root", "import_transcripts"]
