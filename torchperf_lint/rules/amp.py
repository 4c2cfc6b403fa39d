"""TPL3xx — mixed precision."""

from __future__ import annotations

RULES: tuple = ()
