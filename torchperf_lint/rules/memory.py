"""TPL5xx — memory and the autograd graph."""

from __future__ import annotations

RULES: tuple = ()
