"""The rule classes, by family, and lookup by code, prefix or name.

The families are imported on first use of `ALL_RULES`, `BY_CODE`, `BY_NAME` or `FAMILIES`, not
when a family module is imported: a run imports only the families of the rules it runs
(`registry.RuleInfo.implementation`), and `registry` holds the metadata without them.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchperf_lint.rules.base import Rule

FAMILY_NAMES = ("data", "sync", "amp", "compile", "memory", "optim", "evaluation", "debug", "backend")


@lru_cache(maxsize=1)
def _catalog() -> dict[str, object]:
    families = tuple(importlib.import_module(f"{__name__}.{name}") for name in FAMILY_NAMES)
    rules = tuple(
        sorted((rule for family in families for rule in family.RULES), key=lambda rule: rule.code)
    )
    return {
        "FAMILIES": families,
        "ALL_RULES": rules,
        "BY_CODE": {rule.code: rule for rule in rules},
        "BY_NAME": {rule.name: rule for rule in rules},
    }


def __getattr__(name: str) -> object:
    # PEP 562: the catalog is built when first asked for.
    if name in ("FAMILIES", "ALL_RULES", "BY_CODE", "BY_NAME"):
        return _catalog()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def lookup(code_or_name: str) -> type[Rule] | None:
    """The rule with this code (`TPL102`) or kebab-case name (`dataloader-no-pin-memory`)."""
    catalog = _catalog()
    return catalog["BY_CODE"].get(code_or_name.upper()) or catalog["BY_NAME"].get(
        code_or_name.lower()
    )
