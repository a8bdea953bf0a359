"""Browser settings (pydantic), read from a YAML file under platformdirs' user config dir.

Nothing here reads the user's files at import time: :func:`load_config` is called by the CLI,
and tests pass an :class:`AppConfig` straight to ``build_app``.

Example ``~/.config/hermes-sessions/config.yaml``::

    resume_command: "hermes --resume {id}"
    keymap:            # binding id -> keys (comma separated)
      quit: "q,ctrl+q"
      search: "/,ctrl+f"
    recap:
      exchanges: 6
    page_size: 100
"""

from __future__ import annotations

import copy
import logging
import os
from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hermes_state.recap import RecapConfig

log = logging.getLogger(__name__)

APP_NAME = "hermes-sessions"
CONFIG_FILE = "config.yaml"
#: The theme used when none is set, or the one set is not known.
DEFAULT_THEME = "textual-dark"


class SearchConfig(BaseModel):
    """How the browser's search orders conversations (SR-18): the numbers of
    :class:`hermes_state.search.Weights`, and the order it starts in."""

    model_config = ConfigDict(extra="ignore")

    #: ``relevance`` (the blend below) or ``newest`` (newest conversation first); a key
    #: toggles it in the browser.
    order: Literal["relevance", "newest"] = "relevance"
    #: Share of a conversation's score that is recency (0: relevance alone, 1: newest first).
    recency_weight: float = Field(default=0.2, ge=0.0, le=1.0)
    #: Recency halves every this many days of a conversation's age.
    half_life_days: float = Field(default=30.0, gt=0.0, le=36500.0)
    #: For a conversation found across messages: the share of its relevance given for how
    #: much of the query one of its messages holds.
    together_weight: float = Field(default=0.5, ge=0.0, le=1.0)
    #: Ranked by conversation over every match (once typing pauses): the share of relevance
    #: given for how much of a conversation is about the words (its matching messages
    #: against its length) rather than for its best message.
    about_weight: float = Field(default=0.5, ge=0.0, le=1.0)
    #: ...and how much a title holding the query's words lifts its conversation (relevance
    #: times ``1 + title_weight × share of the words its title holds``).
    title_weight: float = Field(default=0.5, ge=0.0, le=10.0)
    #: ...and how much a message holding the query's words side by side, in the order typed,
    #: lifts its conversation (relevance times ``1 + phrase_weight × share of the query's
    #: neighbouring word pairs one message holds so``).
    phrase_weight: float = Field(default=0.5, ge=0.0, le=10.0)
    #: Seconds typing must pause before a keystroke's answer (ranked for speed: over the newest
    #: matches, or message by message) is ranked again over every match by conversation; 0
    #: turns it off.
    exact_after_s: float = Field(default=0.6, ge=0.0, le=10.0)

    def weights(self):
        """These numbers as the storage library takes them."""
        from hermes_state.search import Weights

        return Weights(recency=self.recency_weight, half_life_days=self.half_life_days,
                       together=self.together_weight, about=self.about_weight, title=self.title_weight,
                       phrase=self.phrase_weight)


class AppConfig(BaseModel):
    """Everything a user may set for the browser. Unknown keys are ignored here;
    :func:`load_config` names them as problems."""

    model_config = ConfigDict(extra="ignore")

    #: Command run when a session is chosen (``{id}`` is replaced by the session id).
    resume_command: Optional[str] = None
    #: Binding id → keys, e.g. ``{"quit": "q,ctrl+q"}``; see the help screen for the ids.
    keymap: dict[str, str] = Field(default_factory=dict)
    #: Resume recap settings (RC-9/RC-10).
    recap: RecapConfig = Field(default_factory=RecapConfig)
    #: Rows fetched per page of the session list.
    page_size: int = Field(default=100, ge=10, le=1000)
    #: How often the database is polled for commits by other processes.
    poll_interval_s: float = Field(default=0.3, ge=0.05, le=10.0)
    #: Delay between a keystroke and the search it triggers.
    search_debounce_s: float = Field(default=0.08, ge=0.0, le=1.0)
    #: Textual theme name.
    theme: str = DEFAULT_THEME
    #: Show ``tool`` sessions in the list even without a source filter.
    show_tool_sessions: bool = False
    #: Reasoning in the transcript: hidden (default) or shown.
    show_reasoning: bool = False
    #: Where exports go by default (None: the user's documents or downloads directory).
    export_dir: Optional[str] = None
    #: A session written to within this many seconds and not ended counts as live.
    live_window_s: float = 300.0
    #: Opening a conversation's transcript or recap marks it read (upstream's watermark,
    #: ``last_read_at``, on stores that keep it), as upstream's desktop does; false: only
    #: the mark read / mark unread keys change it.
    mark_read_on_open: bool = True
    #: Animations off makes the UI calmer and tests deterministic.
    animations: Literal["full", "basic", "none"] = "basic"
    #: The search's ranking (SR-18).
    search: SearchConfig = Field(default_factory=SearchConfig)

    @field_validator("keymap", mode="before")
    @classmethod
    def _keymap_strings(cls, value):
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise ValueError("it must map binding ids to keys, e.g. copy_id: \"c\"")
        # An entry with no key (``rename:``, ``rename: null``, or ``rename: false`` -- YAML's
        # boolean, which would become the key name "False") is kept as "" so that it is said
        # (keys.checked_keymap), not dropped in silence; the binding keeps its own keys.
        return {str(k): "" if v is None or isinstance(v, bool) else str(v) for k, v in value.items()}


def config_dir() -> Path:
    from platformdirs import user_config_dir

    override = os.environ.get("HERMES_SESSIONS_CONFIG_DIR", "").strip()
    return Path(override) if override else Path(user_config_dir(APP_NAME))


def config_path() -> Path:
    return config_dir() / CONFIG_FILE


def load_config(path: Path | None = None) -> tuple[AppConfig, list[str]]:
    """Read the config file; returns the config and human-readable problems (never raises).

    A missing file gives the defaults. A file that is not valid YAML gives the defaults and a
    problem line saying why. An unknown key (a misspelt setting) is a problem line, with the
    known name it is closest to; an invalid value is a problem line and only that setting
    takes its default (the rest of its block is kept).
    """
    import yaml

    from hermes_state.paths import SideFileError, read_side_file

    path = path or config_path()
    problems: list[str] = []
    try:
        # Never blocks on a FIFO nor reads a device into memory (SideFileError says which).
        text = read_side_file(path).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return AppConfig(), problems
    except SideFileError as exc:
        return AppConfig(), [str(exc)]
    except OSError as exc:
        return AppConfig(), [f"cannot read {path}: {exc.strerror or exc}"]
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        return AppConfig(), [f"{path} is not valid YAML: {str(exc).splitlines()[0]}"]
    if not isinstance(data, dict):
        return AppConfig(), [f"{path} must hold a mapping of settings"]
    data = copy.deepcopy(data)
    # Unknown keys first (a misspelt setting does nothing, so it must be said), taken out
    # so that a block that forbids them (recap) keeps its other settings.
    for dotted, suggestion in _drop_unknown_keys(AppConfig, data, ""):
        hint = f" — did you mean '{suggestion}'?" if suggestion else ""
        problems.append(f"{path}: unknown setting '{dotted}' (ignored){hint}")
    # Then each invalid value alone gives way to its default: its siblings in the same
    # block (search: order beside a bad recency_weight) are kept.
    for _attempt in range(10):
        try:
            return AppConfig.model_validate(data), problems
        except ValidationError as exc:
            dropped = False
            for err in exc.errors():
                found = _drop_at(data, err["loc"])
                if found is None:
                    continue
                dotted, value = found
                dropped = True
                problems.append(
                    f"{path}: {dotted}: {_shown(value)} is not valid "
                    f"({err['msg'].removeprefix('Value error, ')}); the default is used"
                )
            if not dropped:
                break
    return AppConfig(), problems + [f"{path}: the settings could not be used; the defaults are used"]


def _field_models(model: type[BaseModel]) -> dict[str, type[BaseModel] | None]:
    """Each setting of ``model`` (by its name in the file) and, for a block of settings,
    the model of that block."""
    out: dict[str, type[BaseModel] | None] = {}
    for name, field in model.model_fields.items():
        ann = field.annotation
        nested = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
        out[field.alias or name] = nested
    return out


def _drop_unknown_keys(model: type[BaseModel], data: dict, prefix: str) -> list[tuple[str, str | None]]:
    """Take out of ``data`` (in place) every key ``model`` has no setting for, down into its
    blocks; returns each one's dotted name and the closest known name (or None)."""
    import difflib

    fields = _field_models(model)
    unknown: list[tuple[str, str | None]] = []
    for key in list(data):
        name = str(key)
        if name not in fields:
            close = difflib.get_close_matches(name, list(fields), n=1, cutoff=0.75)
            unknown.append((prefix + name, prefix + close[0] if close else None))
            del data[key]
        elif fields[name] is not None and data[key] is None:
            del data[key]  # a block left empty (its settings commented out): its defaults
        elif fields[name] is not None and isinstance(data[key], dict):
            unknown += _drop_unknown_keys(fields[name], data[key], f"{prefix}{name}.")
    return unknown


def _drop_at(data: dict, loc: tuple) -> tuple[str, object] | None:
    """Take out of ``data`` the setting a validation error's ``loc`` points at: the deepest
    key of a mapping on that path (a value inside a list or a string goes with its key).
    Returns its dotted name and the value taken out, or None when nothing was there."""
    node: object = data
    holder: dict | None = None
    last = None
    names: list[str] = []
    for part in loc:
        if not isinstance(node, dict) or part not in node:
            break
        holder, last = node, part
        names.append(str(part))
        node = node[part]
    if holder is None:
        return None
    value = holder.pop(last)
    return ".".join(names), value


def _shown(value: object) -> str:
    """A value as the file had it, cut short."""
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:39] + "…"


def theme_problem(name: str, known, source: str) -> str:
    """The problem line of a theme ``name`` that is not one of ``known`` (the app's themes)."""
    import difflib

    known = sorted(known)
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f"did you mean '{close[0]}'? " if close else ""
    some = [t for t in (DEFAULT_THEME, "textual-light", "nord", "gruvbox", "dracula") if t in known]
    return (f"{source}: unknown theme '{name}' ({DEFAULT_THEME} is used); {hint}themes include "
            f"{', '.join(some)} — Ctrl+P, then Theme, lists all {len(known)}")


def default_export_dir(config: AppConfig) -> Path:
    """The configured export directory, else documents, else downloads, else home."""
    if config.export_dir:
        return Path(config.export_dir).expanduser()
    from platformdirs import user_documents_dir, user_downloads_dir

    for candidate in (user_documents_dir(), user_downloads_dir()):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return Path.home()


def save_setting(key: str, value: str, path: Path | None = None) -> str | None:
    """Keep one top-level setting (e.g. the theme, BR-18) in the config file.

    Only that line is replaced (or added); the rest of the file — other settings, comments —
    is kept as written. Returns a one-line problem, or None when it was saved.
    """
    import json
    import re

    from hermes_state.paths import SideFileError, read_side_file, replace_side_file

    path = path or config_path()
    line = f"{key}: {json.dumps(value)}"  # a JSON string is a valid YAML scalar
    try:
        text = read_side_file(path).decode("utf-8")
    except FileNotFoundError:
        text = ""
    except SideFileError as exc:
        return str(exc)
    except UnicodeDecodeError:
        return f"{path} is not UTF-8 text; {key} was not saved and the file was left as it is"
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror or exc}"
    pattern = re.compile(rf"^{re.escape(key)}\s*:.*$", re.MULTILINE)
    if pattern.search(text):
        text = pattern.sub(lambda _m: line, text, count=1)
    else:
        text = text + ("" if not text or text.endswith("\n") else "\n") + line + "\n"
    try:
        # Through a symlink to its target (a dotfiles setup keeps its link), keeping the
        # file's own mode; a new file is 0644 as editors make them.
        replace_side_file(path, text, mode=0o644)
    except SideFileError as exc:
        return str(exc)
    except OSError as exc:
        return f"cannot save {key} to {path}: {exc.strerror or exc}"
    return None
