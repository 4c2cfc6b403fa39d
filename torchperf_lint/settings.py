"""What runs on one file: the selected rules, the options they read, and the size limits.

Free of LibCST and of the rule implementations: settings are resolved (and cache keys built
from them) before anything is parsed, and a run whose files are all cached parses nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NamedTuple

from torchperf_lint.source import SourceLimits

if TYPE_CHECKING:
    from torchperf_lint.registry import RuleInfo
    from torchperf_lint.rules.base import Rule


class RuleOptions(NamedTuple):
    """The settings rules may read (from `[tool.torchperf-lint]` and the CLI, or for PyTorch's
    version from the project's packaging files)."""

    target_device: Literal["auto", "cuda", "cpu"] = "auto"
    # The oldest PyTorch the code must run on.
    torch_version: tuple[int, int] = (2, 3)
    # Every PyTorch the project allows is older than this release, `(2, 4, 0)`: its declared
    # upper bound (`torch==1.11.0`, `torch<2.4`); None when it declares none.
    torch_below: tuple[int, ...] | None = None


class LintSettings(NamedTuple):
    """What runs on one file: the selected rules, the options they read, and how large a file
    may be. The rules are catalog entries (`registry.RuleInfo`), or in tests and tools rule
    classes, which have the same attributes; the engine runs `rule.implementation()`."""

    rules: tuple[RuleInfo | type[Rule], ...]
    options: RuleOptions = RuleOptions()
    limits: SourceLimits = SourceLimits()
