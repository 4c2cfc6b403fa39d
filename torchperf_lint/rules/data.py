"""TPL1xx — data pipeline and host-to-device transfer."""

from __future__ import annotations

RULES: tuple = ()
