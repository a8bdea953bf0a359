"""What the built wheel holds, and that what it holds is found at run time.

``styles/`` at the repository top is the one source of the stylesheets; the wheel carries them in
``hermes_tui/styles``. The wheel also installs, at the top of site-packages, the module (and the
``.pth`` line importing it) that lets Hermes Agent's programs import their own ``hermes_state``
when both are installed in one environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STYLES = sorted(p.name for p in (REPO / "styles").glob("*.tcss"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(REPO)],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    (built,) = out.glob("hermes_sessions-*.whl")
    return built


def test_styles_live_at_the_top_and_nowhere_else_in_the_source():
    assert STYLES == ["app.tcss", "modals.tcss", "screens.tcss"]
    assert not (REPO / "hermes_tui" / "styles").exists()


def test_the_wheel_carries_the_stylesheets_and_the_agent_side_module(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert sorted(n.rsplit("/", 1)[1] for n in names if n.startswith("hermes_tui/styles/")) == STYLES
    assert not [n for n in names if n.startswith("styles/")]  # no top-level `styles` package
    assert "hermes_sessions_beside_agent.py" in names and "hermes_sessions_beside_agent.pth" in names
    assert not [n for n in names if n.startswith("hermes_tui/site/")]
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    scripts = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "hermes = hermes_tui.hermes_shim:main" in scripts
    assert "hermes-sessions = hermes_tui.cli:sessions_main" in scripts


def test_the_stylesheets_are_found_from_the_source_tree_and_from_the_wheel(wheel, tmp_path):
    from hermes_tui import app

    assert sorted(p.name for p in app.STYLES.glob("*.tcss")) == STYLES
    unpacked = tmp_path / "unpacked"
    zipfile.ZipFile(wheel).extractall(unpacked)
    env = dict(os.environ, PYTHONPATH=str(unpacked))
    found = subprocess.run(
        [sys.executable, "-c", "from hermes_tui.app import STYLES; print(STYLES)"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )
    assert found.returncode == 0, found.stderr[-2000:]
    styles = Path(found.stdout.strip())
    assert styles == unpacked / "hermes_tui" / "styles"
    assert sorted(p.name for p in styles.glob("*.tcss")) == STYLES


AGENT_MODULE = '"""Stands for Hermes Agent\'s hermes_state.py."""\nWHO = "agent"\n'


@pytest.fixture
def shared_site(tmp_path) -> Path:
    """A site directory holding both `hermes_state`s, as one environment with both installed
    does, and the module and .pth line our wheel installs there."""
    site = tmp_path / "site-packages"
    (site / "hermes_state").mkdir(parents=True)
    (site / "hermes_state" / "__init__.py").write_text('WHO = "ours"\n')
    (site / "hermes_state.py").write_text(AGENT_MODULE)
    source = REPO / "hermes_tui" / "site"
    for name in ("hermes_sessions_beside_agent.py", "hermes_sessions_beside_agent.pth"):
        (site / name).write_bytes((source / name).read_bytes())
    return site


def _who(site: Path, first: str = "") -> subprocess.CompletedProcess:
    code = (f"import site; site.addsitedir({str(site)!r}); {first}"
            "import hermes_state; print(hermes_state.__file__)")
    # -S: no other site directory (ours, from this environment, would answer first otherwise);
    # the directory is added the way Python adds site-packages, .pth files and all.
    return subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                          cwd=site.parent, timeout=60)


def test_beside_the_agents_module_other_programs_import_the_agents(shared_site):
    result = _who(shared_site)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert Path(result.stdout.strip()) == shared_site / "hermes_state.py"


def test_beside_the_agents_module_our_programs_keep_ours(shared_site):
    # What our console scripts do first: import hermes_tui (here a stand-in package of that
    # name, so that the real one's own hermes_state is not on the path).
    (shared_site / "hermes_tui").mkdir()
    (shared_site / "hermes_tui" / "__init__.py").write_text("")
    result = _who(shared_site, "import hermes_tui; ")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert Path(result.stdout.strip()) == shared_site / "hermes_state" / "__init__.py"


def test_without_the_agents_module_nothing_changes(shared_site):
    (shared_site / "hermes_state.py").unlink()
    result = _who(shared_site)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert Path(result.stdout.strip()) == shared_site / "hermes_state" / "__init__.py"
