"""Every rule's documented examples are executable specifications.

The `## Example` code of a rule's docstring must be reported by that rule, and its
`## Use instead` code must not be: the docs a reader sees are the tests the rule passes.
Each section's ```python blocks are joined and linted with only that rule selected and
`target_device="cuda"` (the examples are about GPU training).
"""

from __future__ import annotations

import re

import pytest

from torchperf_lint.engine import LintSettings, lint_text
from torchperf_lint.rules import ALL_RULES
from torchperf_lint.rules.base import Rule, RuleOptions

# The imports every example may take for granted, so that the docs can show the pattern
# without boilerplate. Anything else an example uses (a model, an optimizer, a loop) it
# builds itself: the rules look for that context, and a reader needs it to see the point.
PREAMBLE = """\
import time
import torch
import torch.nn as nn
from torch.utils.data import DataLoader
"""

PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def section_code(rule: type[Rule], heading: str) -> str:
    """The preamble followed by every ```python block of the docstring section `heading`."""
    blocks = PYTHON_BLOCK.findall(rule.documentation().get(heading, ""))
    assert blocks, f"{rule.code}: `## {heading}` has no ```python block"
    return PREAMBLE + "\n".join(blocks)


def codes_reported(rule: type[Rule], source: str) -> list[str]:
    settings = LintSettings((rule,), RuleOptions(target_device="cuda"))
    return [diagnostic.code for diagnostic in lint_text(source, "train.py", settings)]


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.code)
def test_example_is_reported(rule):
    reported = codes_reported(rule, section_code(rule, "Example"))
    assert reported and set(reported) == {rule.code}


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.code)
def test_use_instead_is_not_reported(rule):
    assert codes_reported(rule, section_code(rule, "Use instead")) == []
