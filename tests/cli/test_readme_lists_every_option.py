"""README's command-line section lists every action and every long option its ``--help``
shows (the synopsis block under "## Command line"), so a new option cannot ship undocumented."""

from __future__ import annotations

import re
from pathlib import Path

from hermes_tui.cli import build_parser

README = Path(__file__).resolve().parents[2] / "README.md"


def _synopsis() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Command line"):]
    block = section[section.index("```") + 3:]
    return block[:block.index("```")].splitlines()


def _actions() -> dict:
    parser = build_parser()
    sessions = parser._subparsers._group_actions[0].choices["sessions"]
    return sessions._subparsers._group_actions[0].choices


def test_readme_synopsis_names_every_action_and_each_of_its_long_options() -> None:
    lines = _synopsis()
    # The filter option group is written once, under "FILTERS (", and named FILTERS in the
    # line of each action that takes it.
    start = next((i for i, line in enumerate(lines) if line.startswith("FILTERS (")), len(lines))
    filters = "\n".join(lines[start:])
    lines = lines[:start]
    problems = []
    for name, action in _actions().items():
        own = [line for line in lines if re.search(rf"\bsessions (\S*\|)?{re.escape(name)}(\||\s|$)", line)]
        if not own:
            problems.append(f"{name}: no line in README's synopsis")
            continue
        for option in (o for a in action._actions for o in a.option_strings if o.startswith("--") and o != "--help"):
            in_group = any("FILTERS" in line for line in own) and re.search(rf"{re.escape(option)}\b", filters)
            if not any(option in line for line in own) and not in_group:
                problems.append(f"{name} {option}: not in README's synopsis")
    assert not problems, "\n".join(problems)
