"""Typed modal screens for the browser's editing actions (each returns via ``dismiss``).

* :class:`RenameModal` -- ``ModalScreen[str | None]``: the stored title (``""`` when cleared),
  None when cancelled.
* :class:`ConfirmDeleteModal` -- ``ModalScreen[bool]``: True to delete.
* :class:`ExportModal` -- ``ModalScreen[ExportOutcome | None]``: the finished export.

Modals never run SQL themselves on the event loop: rename and export are handed a blocking
callable by :mod:`hermes_tui.actions` and run it in a thread worker, so that an error (a
duplicate title, a locked database, an unwritable path) is shown inside the modal, which
stays open.
"""

from .delete import ConfirmDeleteModal
from .export import ExportModal
from .rename import RenameModal

__all__ = ["ConfirmDeleteModal", "ExportModal", "RenameModal"]
