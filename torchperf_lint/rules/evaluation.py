"""TPL7xx — evaluation."""

from __future__ import annotations

RULES: tuple = ()
