"""Hermes Sessions: the command line and the Textual browser over ``hermes_state``."""

import os

# Textual composites changed widgets on a timer at TEXTUAL_FPS (default 60): a fresh search
# answer waited up to 16 ms for the next frame. 120 halves that wait; it costs nothing while
# the screen is idle. Set before textual is imported; a user's own setting wins.
#: Variables set here for this program alone: not passed on when `hermes` hands a command to
#: Hermes Agent (hermes_shim).
ENV_SET_HERE = () if "TEXTUAL_FPS" in os.environ else ("TEXTUAL_FPS",)
os.environ.setdefault("TEXTUAL_FPS", "120")

# Before anything imports pydantic: its plugin discovery costs the start 35-70 ms (see there).
from .pydantic_plugins import skip_discovery  # noqa: E402

skip_discovery()
