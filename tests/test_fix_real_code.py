"""`--fix --unsafe-fixes` with every rule on real code: the installed torch package's own
sources and every fixture. Whatever the catalog holds, fixing must keep code that parsed
parsing, reach a fixed point (a second run changes nothing), and leave files without fixes
byte for byte as they were.

The torch sources are a deterministic sample, every `TORCH_SAMPLE_STRIDE`-th `.py` file in
path order (torch 2.13: 286 of 2,285 files, 5.8 MB), so the test stays well under two minutes
on two cores with the full catalog. `TORCHPERF_LINT_TORCH_STRIDE=1` runs all of them. Run
with `-s` to see the counts.
"""

from __future__ import annotations

import importlib.util
import io
import os
import re
import shutil
import tokenize
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from torchperf_lint.engine import LintSettings, SourceError, decode, parse
from torchperf_lint.fixes import apply_fixes, fix_file
from torchperf_lint.rules import ALL_RULES

TORCH_SAMPLE_STRIDE = int(os.environ.get("TORCHPERF_LINT_TORCH_STRIDE", "8"))
FIXTURES = Path(__file__).parent / "fixtures"
LINE_ENDING = re.compile(r"\r\n|\r|\n")


def torch_sources() -> list[tuple[Path, str]]:
    """(source, name under tmp_path) for the sampled torch files; torch is found, not imported."""
    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.origin, "torch must be installed for this test"
    package = Path(spec.origin).parent
    paths = sorted(package.rglob("*.py"), key=lambda path: path.relative_to(package).as_posix())
    return [
        (path, "torch/" + path.relative_to(package).as_posix())
        for path in paths[::TORCH_SAMPLE_STRIDE]
    ]


def fixture_sources() -> list[tuple[Path, str]]:
    return [
        (path, "project/" + path.relative_to(FIXTURES).as_posix())
        for path in sorted(FIXTURES.rglob("*.py"))
    ]


@dataclass
class CorpusRun:
    """What fixing the corpus did, and everything that went wrong."""

    files: int = 0
    changed: int = 0
    not_fixable: list[str] = field(default_factory=list)
    applied: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)

    def summary(self) -> str:
        per_code = ", ".join(f"{code} {count}" for code, count in sorted(self.applied.items()))
        lines = [
            (
                f"fix on real code: {self.files} files, {self.changed} changed, "
                f"{sum(self.applied.values())} fixes applied ({per_code or 'none'}), "
                f"{len(self.not_fixable)} not fixable (unparsable), {len(self.problems)} failures"
            ),
            *(f"  not fixable: {reason}" for reason in self.not_fixable),
            *(f"  FAILURE: {problem}" for problem in self.problems),
        ]
        return "\n".join(lines)


def parse_failure(data: bytes) -> str | None:
    """Why these bytes do not decode and parse, or None when they do."""
    try:
        parse(decode(data).text)
    except SourceError as error:
        return error.reason
    return None


def lines_dedented_below_their_statement(text: str) -> int:
    """Continuation lines (inside brackets) that start left of their statement's first line:
    what a multi-line replacement rendered without its block's indentation looks like."""
    count = 0
    statement_column: int | None = None
    last_row = 0
    layout = (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT)
    try:
        for token in tokenize.generate_tokens(io.StringIO(text, newline="").readline):
            row, column = token.start
            if token.type == tokenize.NEWLINE:
                statement_column = None
            elif statement_column is None:
                if token.type not in layout:
                    statement_column = column
            elif row > last_row and token.type not in (tokenize.NL, tokenize.NEWLINE):
                count += column < statement_column
            last_row = max(last_row, token.end[0])
    except (tokenize.TokenError, SyntaxError):
        pass
    return count


def fix_and_check(path: Path, name: str, settings: LintSettings, run: CorpusRun) -> None:
    original = path.read_bytes()
    first = fix_file(path, name, settings, unsafe_fixes=True, write=True)
    fixed = path.read_bytes()
    run.files += 1
    if first.reverted:
        run.problems.append(f"{name}: {first.reverted}")
    if first.error is not None:
        if fixed != original:
            run.problems.append(f"{name}: changed although fixing failed ({first.error.reason})")
        if parse_failure(original) is None:
            run.problems.append(f"{name}: parses, yet fixing failed: {first.error.reason}")
        else:
            run.not_fixable.append(f"{name}: {first.error.reason}")
        return
    still_applicable = apply_fixes(first.after, first.remaining, unsafe_fixes=True)[1]
    if still_applicable:
        run.problems.append(f"{name}: fixes still apply after --fix: {dict(still_applicable)}")
    if not first.applied:
        if fixed != original:
            run.problems.append(f"{name}: rewritten although no fix was applied")
        return
    run.changed += 1
    run.applied.update(first.applied)
    failure = parse_failure(fixed)
    if failure is not None:
        run.problems.append(f"{name}: no longer parses after --fix: {failure}")
        return
    if decode(fixed).encoding != decode(original).encoding:
        run.problems.append(f"{name}: encoding or BOM changed")
    if not set(LINE_ENDING.findall(first.after)) <= set(LINE_ENDING.findall(first.before)):
        run.problems.append(f"{name}: a new kind of line ending appeared")
    if lines_dedented_below_their_statement(first.after) > lines_dedented_below_their_statement(
        first.before
    ):
        run.problems.append(f"{name}: a fix lost the indentation of its block")
    second = fix_file(path, name, settings, unsafe_fixes=True, write=True)
    if second.error is not None or second.applied or path.read_bytes() != fixed:
        run.problems.append(
            f"{name}: a second --fix changed something: {dict(second.applied)} {second.error}"
        )


@pytest.mark.slow
@pytest.mark.torch
def test_fix_with_every_rule_keeps_real_code_valid_and_stable(tmp_path: Path) -> None:
    settings = LintSettings(rules=ALL_RULES)
    run = CorpusRun()
    for source, name in [*torch_sources(), *fixture_sources()]:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, path)
        fix_and_check(path, name, settings, run)
    print(f"\n{len(ALL_RULES)} rules, torch sample stride {TORCH_SAMPLE_STRIDE}")
    print(run.summary())
    assert run.files > 0
    assert run.problems == []
