"""Every rule's identity and documentation, without the rules: what `--help`, `rules`,
`rule CODE`, the settings, the cache keys and the reports need, free of LibCST.

The entries are generated from the rule classes into `catalog.py` (`python -m
torchperf_lint.docs`, checked by `--check` and the tests). A rule's class, which needs LibCST,
is imported only when the rule runs: `RuleInfo.implementation()` imports its family's module
alone.
"""

from __future__ import annotations

import importlib
import inspect
import re
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

from torchperf_lint.diagnostics import Applicability

if TYPE_CHECKING:
    from torchperf_lint.rules.base import Rule

DOC_SECTIONS = (
    "What it does",
    "Why is this bad?",
    "Example",
    "Use instead",
    "Fix safety",
    "References",
)
DOCS_URL = "https://github.com/torchperf-lint/torchperf-lint/blob/main/rules/{code}-{name}.md"


class RuleInfo(NamedTuple):
    """A rule as the catalog lists it: the class attributes of its `Rule` and its docstring."""

    code: str
    name: str
    family: str  # The module of `torchperf_lint.rules` that defines it.
    message: str
    default: bool
    fix_applicability: Applicability | None
    gains_only_on_cuda: bool
    checks_test_files: bool
    doc: str

    def documentation(self) -> dict[str, str]:
        """The docstring's six sections, by heading."""
        return parse_sections(self.doc)

    def summary(self) -> str:
        """The docstring's first line."""
        return self.doc.strip().splitlines()[0]

    def url(self) -> str:
        return DOCS_URL.format(code=self.code, name=self.name)

    def implementation(self) -> type[Rule]:
        """The rule's class (importing its family's module, and LibCST, on first use)."""
        found = _IMPLEMENTATIONS.get(self.code)
        if found is None:
            module = importlib.import_module(f"torchperf_lint.rules.{self.family}")
            found = next(rule for rule in module.RULES if rule.code == self.code)
            _IMPLEMENTATIONS[self.code] = found
        return found


# Rule classes by code, once imported (`implementation` is asked per rule and per file).
_IMPLEMENTATIONS: dict[str, type[Rule]] = {}


def usual_message(rule: type[Rule] | RuleInfo) -> str:
    """The rule's message with the part a site may give its own of filled in with the usual
    one (`{advice}`: the rule's `read_advice`); the catalog keeps it so."""
    return rule.message.replace("{advice}", getattr(rule, "read_advice", "{advice}"))


def info_of(rule: type[Rule]) -> RuleInfo:
    """The catalog entry of a rule class (what `catalog.py` is generated from)."""
    return RuleInfo(
        code=rule.code,
        name=rule.name,
        family=rule.__module__.rpartition(".")[2],
        message=usual_message(rule),
        default=rule.default,
        fix_applicability=rule.fix_applicability,
        gains_only_on_cuda=rule.gains_only_on_cuda,
        checks_test_files=rule.checks_test_files,
        # Python 3.13 strips docstrings' indentation at compile time: the same text everywhere.
        doc=inspect.cleandoc(rule.__doc__ or ""),
    )


def catalog_source(rules: tuple[type[Rule], ...]) -> str:
    """The text of `catalog.py` for these rule classes."""
    lines = [
        '"""Every rule\'s metadata and documentation, generated from the rule classes by',
        '`python -m torchperf_lint.docs`: do not edit (the tests fail when it drifts)."""',
        "",
        "from torchperf_lint.diagnostics import Applicability",
        "from torchperf_lint.registry import RuleInfo",
        "",
        "RULES = (",
    ]
    for rule in rules:
        info = info_of(rule)
        applicability = (
            "None"
            if info.fix_applicability is None
            else f"Applicability.{info.fix_applicability.name}"
        )
        lines += [
            "    RuleInfo(",
            f"        code={info.code!r},",
            f"        name={info.name!r},",
            f"        family={info.family!r},",
            f"        message={info.message!r},",
            f"        default={info.default!r},",
            f"        fix_applicability={applicability},",
            f"        gains_only_on_cuda={info.gains_only_on_cuda!r},",
            f"        checks_test_files={info.checks_test_files!r},",
            f"        doc={info.doc!r},",
            "    ),",
        ]
    lines.append(")")
    return "\n".join(lines) + "\n"


@lru_cache(maxsize=1)
def _catalog() -> dict[str, object]:
    from torchperf_lint.catalog import RULES

    rules = tuple(sorted(RULES, key=lambda rule: rule.code))
    return {
        "ALL_RULES": rules,
        "BY_CODE": {rule.code: rule for rule in rules},
        "BY_NAME": {rule.name: rule for rule in rules},
    }


def __getattr__(name: str) -> object:
    # PEP 562: `ALL_RULES`, `BY_CODE` and `BY_NAME` read the catalog when first asked for, so
    # that generating the catalog never needs the catalog.
    if name in ("ALL_RULES", "BY_CODE", "BY_NAME"):
        return _catalog()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def lookup(code_or_name: str) -> RuleInfo | None:
    """The rule with this code (`TPL102`) or kebab-case name (`dataloader-no-pin-memory`)."""
    catalog = _catalog()
    return catalog["BY_CODE"].get(code_or_name.upper()) or catalog["BY_NAME"].get(
        code_or_name.lower()
    )


def parse_sections(docstring: str) -> dict[str, str]:
    """Split a Markdown docstring into its `## Heading` sections."""
    text = _dedent(docstring)
    sections: dict[str, str] = {}
    parts = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
    for heading, body in zip(parts[1::2], parts[2::2]):
        sections[heading.strip()] = body.strip("\n").rstrip()
    return sections


def _dedent(docstring: str) -> str:
    lines = docstring.expandtabs().splitlines()
    indents = [len(line) - len(line.lstrip()) for line in lines[1:] if line.strip()]
    margin = min(indents, default=0)
    return "\n".join([lines[0].strip()] + [line[margin:] for line in lines[1:]]) if lines else ""
