"""Terminal input that is not UTF-8 is read, not fatal.

Textual's Linux driver decodes what the terminal sends with a strict UTF-8 decoder in its
input thread: one byte that is not UTF-8 -- a lone 0x9b (an 8-bit CSI) in a paste, a
terminal set to Latin-1 -- raised UnicodeDecodeError there, printed a traceback and closed
the browser. :func:`install` makes that decoder replace such bytes with U+FFFD, which the
search field then shows as any character: nothing typed before it is lost.

Textual offers no setting for this; the driver looks its decoder factory up by the name it
imported (``getincrementaldecoder``) each time its input thread starts, so that one name is
wrapped, and only for UTF-8. A Textual that no longer has the name is left as it is.
"""

from __future__ import annotations

import codecs
import functools

_MARK = "_hermes_tolerant"


def _tolerant(factory):
    def getincrementaldecoder(encoding: str):
        decoder = factory(encoding)
        if codecs.lookup(encoding).name != "utf-8":
            return decoder
        return functools.partial(decoder, errors="replace")

    setattr(getincrementaldecoder, _MARK, True)
    return getincrementaldecoder


def install() -> bool:
    """Wrap the Linux driver's decoder factory (once); False where there is none to wrap."""
    try:
        from textual.drivers import linux_driver
    except Exception:  # (another platform's driver: nothing to do)
        return False
    factory = getattr(linux_driver, "getincrementaldecoder", None)
    if factory is None:
        return False
    if not getattr(factory, _MARK, False):
        linux_driver.getincrementaldecoder = _tolerant(factory)
    return True
