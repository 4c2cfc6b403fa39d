"""TPL8xx — measurement and debugging left on."""

from __future__ import annotations

RULES: tuple = ()
