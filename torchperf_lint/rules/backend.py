"""TPL9xx — backend and hardware settings."""

from __future__ import annotations

RULES: tuple = ()
