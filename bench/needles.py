"""The relevance bench's needle set: :data:`NEEDLES`, checked when imported (a broken needle
fails loudly, before anything is planted or measured). See :mod:`bench.needle_model`."""

from __future__ import annotations

from .needle_model import Needle, validate
from .needles_cjk import CJK
from .needles_en import EN

NEEDLES: list[Needle] = EN + CJK
validate(NEEDLES)
