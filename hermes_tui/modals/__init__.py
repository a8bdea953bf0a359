"""Typed modal screens for the browser's editing actions (each returns via ``dismiss``).

* :class:`RenameModal` -- ``ModalScreen[str | None]``: the stored title (``""`` when cleared),
  None when cancelled.
* :class:`ConfirmDeleteModal` -- ``ModalScreen[bool]``: True to delete.
* :class:`ExportModal` -- ``ModalScreen[ExportOutcome | None]``: the finished export.

Modals never run SQL themselves on the event loop: rename and export are handed a blocking
callable by :mod:`hermes_tui.actions` and run it in a thread worker, so that an error (a
duplicate title, a locked database, an unwritable path) is shown inside the modal, which
stays open.

Each lives in its own module (``delete``, ``export``, ``rename``, ``confirm_batch``, the
pickers), imported where it is opened: this package imports none of them, so that opening
the browser does not import every dialog.
"""
