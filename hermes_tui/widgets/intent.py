"""The base of the messages widgets post: each names the widget it came from.

Textual routes ``@on(Widget.Message, "#id")`` by the message's ``control``; without one a
screen cannot tell two lists apart. Every widget message of this package derives from
:class:`WidgetMessage` and is constructed with its widget first.
"""

from __future__ import annotations

from textual.message import Message
from textual.widget import Widget


class WidgetMessage(Message):
    """A message about ``widget`` (its :attr:`control`)."""

    def __init__(self, widget: Widget) -> None:
        super().__init__()
        self.widget = widget

    @property
    def control(self) -> Widget:
        return self.widget
