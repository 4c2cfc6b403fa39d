"""TPL4xx — compilation."""

from __future__ import annotations

RULES: tuple = ()
