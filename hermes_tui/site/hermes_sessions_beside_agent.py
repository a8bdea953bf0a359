"""In an environment that holds Hermes Agent too, its programs import its own ``hermes_state``.

Hermes Agent ships its session store as one module, ``hermes_state.py``; this project ships a
package of the same name (drop-in compatible with an older upstream). Installed into one
environment, in either order, both sit in the same site-packages, where Python always picks the
package: every agent command would import our store instead of its own and fail (Hermes Agent
0.19's ``hermes sessions list`` stops on ``ImportError: workspace_key``).

The wheel installs this module at the top of site-packages with a ``.pth`` line importing it at
interpreter start. Where the agent's module sits beside our package it puts a finder first on
``sys.meta_path`` that answers ``hermes_state`` with the agent's module -- unless one of our
programs is the one asking: they import ``hermes_tui`` or ``hermes_workload`` before the store,
and keep ours. Anywhere else (no agent module beside ours) it does nothing, at the cost of two
``stat`` calls.

It must stay small, import nothing of ours and never raise: a ``.pth`` line that fails prints
its traceback at every start of every program of the environment.
"""

import os
import sys

#: Packages whose import says "this process is one of ours".
OUR_PROGRAMS = ("hermes_tui", "hermes_workload")


class AgentStoreFirst:
    """A meta path finder: ``hermes_state`` is the agent's module for every program but ours."""

    def __init__(self, agent_module: str) -> None:
        self.agent_module = agent_module

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "hermes_state" or any(name in sys.modules for name in OUR_PROGRAMS):
            return None
        from importlib.util import spec_from_file_location

        return spec_from_file_location("hermes_state", self.agent_module)

    def invalidate_caches(self) -> None:
        pass


def install(site_dir: str | None = None) -> bool:
    """Put the finder first when the agent's ``hermes_state.py`` is beside our package."""
    here = site_dir or os.path.dirname(os.path.abspath(__file__))
    agent_module = os.path.join(here, "hermes_state.py")
    ours = os.path.join(here, "hermes_state", "__init__.py")
    if not (os.path.isfile(agent_module) and os.path.isfile(ours)):
        return False
    if not any(isinstance(f, AgentStoreFirst) for f in sys.meta_path):
        sys.meta_path.insert(0, AgentStoreFirst(agent_module))
    return True


try:
    install()
except Exception:  # never a traceback at interpreter start (see above)
    pass
