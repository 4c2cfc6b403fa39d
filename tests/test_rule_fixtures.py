"""Every rule's fixture files: the findings written beside the lines are exactly the findings.

A fixture `X.py` with a sibling `X.fixed` also pins the exact output of
`--fix --unsafe-fixes` with only that rule selected (a `.fixed` identical to the fixture says
nothing may be rewritten), and a second fix must change nothing.

A fixture is `tests/fixtures/TPLnnn*.py` (or any `.py` below a `tests/fixtures/TPLnnn/` folder,
for rules that look at the path). A line that must be reported ends with
`# error: TPLnnn:COL` (several separated by spaces); every other line must stay silent. A first
line `# fixture-options: target_device=cuda torch_version=2.1 torch_below=2.4.0` sets rule
options.

A fixture is linted under its path below `tests/fixtures/` (`TPL101.py`,
`TPL201/tests/test_training.py`): only the folders a fixture names itself make it a test file.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchperf_lint.engine import LintSettings, lint_text, rules_for
from torchperf_lint.fixes import fix_text
from torchperf_lint.rules.base import RuleOptions

FIXTURES = Path(__file__).parent / "fixtures"
EXPECTATION = re.compile(r"#\s*error:\s*(?P<items>(?:TPL\d{3}:\d+\s*)+)")
OPTIONS = re.compile(r"#\s*fixture-options:\s*(?P<options>.*)")
CODE = re.compile(r"TPL\d{3}")


def fixture_files() -> list[Path]:
    return sorted(
        path for path in FIXTURES.rglob("*.py")
        if CODE.match(path.name) or any(CODE.fullmatch(part) for part in path.parent.parts)
    )


def fixture_code(path: Path) -> str:
    for part in (path.name, *reversed(path.relative_to(FIXTURES).parts)):
        match = CODE.match(part)
        if match:
            return match.group(0)
    raise AssertionError(f"{path} names no rule")


def fixture_options(text: str) -> RuleOptions:
    match = OPTIONS.match(text)
    if not match:
        return RuleOptions()
    values = dict(item.split("=", 1) for item in match.group("options").split())
    options = {}
    if "target_device" in values:
        options["target_device"] = values["target_device"]
    if "torch_version" in values:
        major, minor = values["torch_version"].split(".")[:2]
        options["torch_version"] = (int(major), int(minor))
    if "torch_below" in values:
        options["torch_below"] = tuple(int(part) for part in values["torch_below"].split("."))
    return RuleOptions(**options)


def expected_findings(text: str) -> list[tuple[str, int, int]]:
    expected = []
    for row, line in enumerate(text.splitlines(), start=1):
        match = EXPECTATION.search(line)
        if match:
            for item in match.group("items").split():
                code, column = item.split(":")
                expected.append((code, row, int(column)))
    return sorted(expected)


@pytest.mark.parametrize(
    "path", fixture_files(), ids=lambda p: str(p.relative_to(FIXTURES))
)
def test_fixture_findings_match_annotations(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    settings = fixture_settings(path, text)
    filename = str(path.relative_to(FIXTURES))
    found = sorted(
        (d.code, d.location.row, d.location.column) for d in lint_text(text, filename, settings)
    )
    assert found == expected_findings(text)


def fixture_settings(path: Path, text: str) -> LintSettings:
    return LintSettings(rules=rules_for([fixture_code(path)]), options=fixture_options(text))


@pytest.mark.parametrize(
    "path",
    [path for path in fixture_files() if path.with_suffix(".fixed").exists()],
    ids=lambda p: str(p.relative_to(FIXTURES)),
)
def test_fixture_fix_output(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    settings = fixture_settings(path, text)
    filename = str(path.relative_to(FIXTURES))
    expected = path.with_suffix(".fixed").read_text(encoding="utf-8")
    fixed, applied, _ = fix_text(text, filename, settings, unsafe_fixes=True)
    # A `.fixed` equal to its fixture is a must-not-rewrite expectation.
    assert bool(applied) == (expected != text)
    assert fixed == expected
    again, applied_again, _ = fix_text(fixed, filename, settings, unsafe_fixes=True)
    assert (again, dict(applied_again)) == (fixed, {})


def test_every_rule_has_a_fixture() -> None:
    from torchperf_lint.rules import ALL_RULES

    covered = {fixture_code(path) for path in fixture_files()}
    assert [rule.code for rule in ALL_RULES if rule.code not in covered] == []
