"""TPL2xx — host-device synchronization."""

from __future__ import annotations

RULES: tuple = ()
