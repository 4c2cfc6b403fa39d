"""TPL6xx — optimizer and step."""

from __future__ import annotations

RULES: tuple = ()
