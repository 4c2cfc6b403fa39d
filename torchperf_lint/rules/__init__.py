"""The rule catalog: every rule class, by family, and lookup by code, prefix or name."""

from __future__ import annotations

from torchperf_lint.rules import (
    amp,
    backend,
    compile,
    data,
    debug,
    evaluation,
    memory,
    optim,
    sync,
)
from torchperf_lint.rules.base import Rule

FAMILIES = (data, sync, amp, compile, memory, optim, evaluation, debug, backend)

ALL_RULES: tuple[type[Rule], ...] = tuple(
    sorted((rule for family in FAMILIES for rule in family.RULES), key=lambda rule: rule.code)
)
BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in ALL_RULES}
BY_NAME: dict[str, type[Rule]] = {rule.name: rule for rule in ALL_RULES}


def lookup(code_or_name: str) -> type[Rule] | None:
    """The rule with this code (`TPL102`) or kebab-case name (`dataloader-no-pin-memory`)."""
    return BY_CODE.get(code_or_name.upper()) or BY_NAME.get(code_or_name.lower())
