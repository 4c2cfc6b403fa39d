"""Rule pages: every rule documents the six sections, and the committed pages match the
rules' metadata (regenerate with `python -m torchperf_lint.docs`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchperf_lint import docs
from torchperf_lint.diagnostics import Applicability
from torchperf_lint.rules import ALL_RULES
from torchperf_lint.rules.base import Rule

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.code)
def test_rule_docstring_has_the_six_sections(rule):
    assert docs.missing_sections(rule) == []


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.code)
def test_committed_page_matches_the_rule(rule):
    page = ROOT / docs.PAGES_DIR / docs.page_name(rule)
    assert page.is_file(), f"{page} is missing: run `python -m torchperf_lint.docs`"
    assert page.read_text(encoding="utf-8") == docs.render_page(rule), (
        f"{page} is stale: run `python -m torchperf_lint.docs`"
    )


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.code)
def test_every_reference_is_a_public_page_users_can_open(rule):
    """Each `## References` item links to its source; no private document is cited."""
    references = rule.documentation()["References"]
    items = re.split(r"\n(?=- )", references)
    assert all(item.startswith("- ") and "](https://" in item for item in items), items
    assert "seed document" not in (rule.__doc__ or "").lower()


def test_nothing_has_drifted():
    assert docs.drift(ROOT, ALL_RULES) == []


class ExampleRule(Rule):
    """Example finding.

    ## What it does
    Finds examples.

    ## Why is this bad?
    It is slow.

    ## Example
    ```python
    slow()
    ```

    ## Use instead
    ```python
    fast()
    ```

    ## Fix safety
    Safe.

    ## References
    - A book
    """

    code = "TPL000"
    name = "example-rule"
    message = "An example"
    default = False
    fix_applicability = Applicability.SAFE


class UndocumentedRule(Rule):
    """Undocumented.

    ## What it does
    Something.
    """

    code = "TPL001"
    name = "undocumented-rule"
    message = "Undocumented"
    default = True


def test_page_layout():
    assert docs.render_page(ExampleRule) == (
        "# TPL000 example-rule\n\n**Opt-in** rule · Fix: **safe**\n\nExample finding.\n\n"
        "Message: An example\n\n## What it does\n\nFinds examples.\n\n## Why is this bad?\n\n"
        "It is slow.\n\n## Example\n\n```python\nslow()\n```\n\n## Use instead\n\n```python\n"
        "fast()\n```\n\n## Fix safety\n\nSafe.\n\n## References\n\n- A book\n"
    )


def test_generate_check_and_drift_detection(tmp_path):
    readme = "# Project\n\n<!-- rules-table:start -->\nold\n<!-- rules-table:end -->\nafter\n"
    (tmp_path / "README.md").write_text(readme)
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "TPL999-gone.md").write_text("old page")
    docs.generate(tmp_path, [ExampleRule])
    assert sorted(p.name for p in (tmp_path / "rules").iterdir()) == [
        "README.md",
        "TPL000-example-rule.md",
    ]
    assert (tmp_path / "README.md").read_text() == (
        "# Project\n\n<!-- rules-table:start -->\n| Code | Name | Status | Fix | Summary |\n"
        "|---|---|---|---|---|\n| [TPL000](rules/TPL000-example-rule.md) | `example-rule` | "
        "opt-in | safe | Example finding. |\n<!-- rules-table:end -->\nafter\n"
    )
    assert docs.drift(tmp_path, [ExampleRule]) == []
    (tmp_path / "rules" / "TPL000-example-rule.md").write_text("edited")
    (tmp_path / "rules" / "TPL998-orphan.md").write_text("orphan")
    assert docs.drift(tmp_path, [ExampleRule, UndocumentedRule]) == [
        (
            "TPL001: docstring lacks section(s): Why is this bad?, Example, Use instead, "
            "Fix safety, References"
        ),
        "rules/TPL000-example-rule.md: out of date",
        "rules/TPL001-undocumented-rule.md: missing",
        "rules/README.md: out of date",
        "README.md: out of date",
        "rules/TPL998-orphan.md: no rule has this page",
    ]


def test_main_regenerates_and_checks(tmp_path):
    assert docs.main(["--check", "--root", str(tmp_path)]) == 1
    assert docs.main(["--root", str(tmp_path)]) == 0
    assert docs.main(["--check", "--root", str(tmp_path)]) == 0


def test_readme_without_markers_is_left_alone(tmp_path):
    (tmp_path / "README.md").write_text("# Project\n")
    docs.generate(tmp_path, [ExampleRule])
    assert (tmp_path / "README.md").read_text() == "# Project\n"
