"""The repository explains itself: every requirement id it cites is defined in
``docs/requirements.md``, no text leans on a document kept outside the repository, and the
relative links of its Markdown files lead to files inside it.

A comment that says "(BR-10)" is only useful if the reader can look BR-10 up, and a comment
that says "(issue 15)" or points at ``../shared/DESIGN.md`` sends the next engineer to a text
they do not have. These checks read the files as text; they import nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "docs" / "requirements.md"

#: Where requirement ids are cited: the code, the tests, the bench and the docs that explain them.
CITING = ("hermes_state", "hermes_workload", "hermes_tui", "tests", "bench", "README.md", "docs")

#: Files read as text. Snapshots and screenshots are pictures of data, not prose.
TEXT_SUFFIXES = {".py", ".md", ".tcss", ".toml", ".txt", ".yaml", ".yml", ".cfg", ".ini", ".sh"}
SKIPPED_DIRS = {
    ".git", ".venv", ".ci-venv", "__pycache__", ".pytest_cache", ".hypothesis", "build", "dist",
    ".corpus", "results", "__snapshots__", "screenshots",
}

#: Paths (a directory ends in "/") still allowed to point outside the repository, because
#: another engineer is moving that code now and rewording it would collide with the move.
#: Empty it as they are cleaned: the test below fails on an entry that no longer needs to be here.
NOT_YET_FREE_OF_OUTSIDE_DOCUMENTS = (
    "hermes_state/",
    "tests/state/test_compat_surface.py",
    "tests/state/test_corpus.py",
    "tests/state/test_export.py",
    "tests/state/test_fixtures_upstream.py",
    "tests/state/test_gateway.py",
    "tests/state/test_lineage.py",
    "tests/state/test_messages.py",
    "tests/state/test_migrations.py",
    "tests/state/test_prune_delete.py",
    "tests/state/test_recap.py",
    "tests/state/test_retrieval.py",
    "tests/state/test_schema.py",
    "tests/state/test_schema_v30.py",
    "tests/state/test_search.py",
    "tests/state/test_search_narrowing.py",
    "tests/state/test_search_structured.py",
    "tests/state/test_sessions.py",
    "tests/state/test_simulate.py",
    "tests/state/test_timefmt.py",
    "tests/state/test_titles.py",
    "tests/state/test_trigram_text.py",
    "tests/state/test_upstream_readers.py",
    "tests/state/test_upstream_stores.py",
    "tests/state/test_write_path.py",
)

#: What leans on a document outside the repository, each with what to write instead.
OUTSIDE_DOCUMENTS = (
    (re.compile(r"\.\./shared/[^\s`'\")]*\.md"), "a link to ../shared/*.md: say it in words"),
    (re.compile(r"\b(?:SPEC|DESIGN)\.md\b"),
     "SPEC.md / DESIGN.md: docs/requirements.md or docs/architecture.md"),
    (re.compile(r"\bSPEC\b"), "'SPEC': cite the id alone, or docs/requirements.md §N"),
    (re.compile(r"\bissues? #?\d+", re.IGNORECASE), "an issue number: say why in words"),
)


def _text_files(*tops: str) -> list[Path]:
    files: list[Path] = []
    for top in tops:
        path = ROOT / top
        if path.is_file():
            files.append(path)
            continue
        for found in sorted(path.rglob("*")):
            parts = found.relative_to(ROOT).parts
            if any(part in SKIPPED_DIRS or part.endswith(".egg-info") for part in parts[:-1]):
                continue
            if found.is_file() and found.suffix in TEXT_SUFFIXES:
                files.append(found)
    return files


def _repository_text_files() -> list[Path]:
    tops = [
        p.name for p in ROOT.iterdir()
        if p.name not in SKIPPED_DIRS and not p.name.endswith(".egg-info")
        and (not p.name.startswith(".") or p.name == ".ci")
    ]
    files = _text_files(*tops)
    # .ci/run has no suffix: it is a script, read it too.
    files += [p for p in (ROOT / ".ci").glob("*") if p.is_file() and not p.suffix]
    return files


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _requirement_sections() -> tuple[set[str], list[str]]:
    """The id prefixes (from section headings such as "## 9. Search (SR)") and every id
    defined, in order: bold at the start of its paragraph, ``**SR-3**``."""
    text = REQUIREMENTS.read_text(encoding="utf-8")
    prefixes = set(re.findall(r"^#{2,3} .*\(([A-Z]{2,3})\)\s*$", text, re.MULTILINE))
    defined = re.findall(r"^\*\*([A-Z]{2,3}-\d+)\b", text, re.MULTILINE)
    return prefixes, defined


def test_every_requirement_is_defined_once_under_a_known_section() -> None:
    prefixes, defined = _requirement_sections()
    assert len(prefixes) >= 17 and len(defined) >= 170, "docs/requirements.md lost its sections"
    twice = sorted({rid for rid in defined if defined.count(rid) > 1})
    assert not twice, f"defined more than once in docs/requirements.md: {twice}"
    unknown = sorted({rid for rid in defined if rid.split("-")[0] not in prefixes})
    assert not unknown, f"ids whose prefix names no section: {unknown}"


def test_every_requirement_id_cited_is_defined_in_docs_requirements() -> None:
    prefixes, defined = _requirement_sections()
    cited = re.compile(r"\b(?:%s)-\d+\b" % "|".join(sorted(prefixes, key=len, reverse=True)))
    known = set(defined)
    missing: dict[str, list[str]] = {}
    for path in _text_files(*CITING):
        if path == REQUIREMENTS:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for rid in cited.findall(line):
                if rid not in known:
                    missing.setdefault(rid, []).append(f"{_rel(path)}:{number}")
    assert not missing, "cited but not defined in docs/requirements.md: " + "; ".join(
        f"{rid} ({', '.join(where[:3])})" for rid, where in sorted(missing.items()))


def _outside_references(path: Path) -> list[str]:
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        for pattern, instead in OUTSIDE_DOCUMENTS:
            if pattern.search(line):
                found.append(f"{_rel(path)}:{number}: {instead}")
    return found


def _not_yet_free(path: Path) -> bool:
    rel = _rel(path)
    return any(rel == entry or (entry.endswith("/") and rel.startswith(entry))
               for entry in NOT_YET_FREE_OF_OUTSIDE_DOCUMENTS)


def test_no_text_leans_on_a_document_outside_the_repository() -> None:
    this = Path(__file__).resolve()  # the patterns above would find themselves
    problems = [
        problem
        for path in _repository_text_files()
        if path.resolve() != this and not _not_yet_free(path)
        for problem in _outside_references(path)
    ]
    assert not problems, "\n".join(problems)


def test_every_path_not_yet_free_of_outside_documents_still_needs_to_be() -> None:
    files = _repository_text_files()
    stale = []
    for entry in NOT_YET_FREE_OF_OUTSIDE_DOCUMENTS:
        covered = [p for p in files if _not_yet_free(p) and _rel(p).startswith(entry)]
        if not any(_outside_references(p) for p in covered):
            stale.append(entry)
    assert not stale, f"clean now, remove from NOT_YET_FREE_OF_OUTSIDE_DOCUMENTS: {stale}"


def test_markdown_links_lead_to_files_inside_the_repository() -> None:
    link = re.compile(r"\]\(([^)\s]+)\)")
    broken = []
    for path in _text_files("README.md", "docs", "bench/README.md"):
        if path.suffix != ".md":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for target in link.findall(line):
                if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                    continue  # a web address or an anchor in the same file
                resolved = (path.parent / target.split("#")[0]).resolve()
                if not resolved.is_relative_to(ROOT) or not resolved.exists():
                    broken.append(f"{_rel(path)}:{number}: {target}")
    assert not broken, "links that lead nowhere or out of the repository:\n" + "\n".join(broken)
