"""Turn diagnostics into output: one module per `--output-format`, plus the summary lines.

Files that cannot be read, decoded or parsed are reported like findings, under the code
`E902` (name `file-error`, after Ruff's `E902 io-error`), at the syntax error's position or at
1:1, with no fix and no `noqa_row`; they cannot be ignored or suppressed.
"""

from __future__ import annotations

import hashlib
import importlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import click

from torchperf_lint.diagnostics import (
    FILE_ERROR_CODE,
    Applicability,
    Diagnostic,
    FileError,
    Location,
)
from torchperf_lint.registry import RuleInfo

if TYPE_CHECKING:
    from torchperf_lint.notebooks import NotebookLines

@dataclass(frozen=True)
class Report:
    """What a reporter needs: the sorted findings (file errors included) and how to show them."""

    diagnostics: Sequence[Diagnostic]
    unsafe_fixes: bool = False
    color: bool = False
    rules: Sequence[RuleInfo] = ()
    cwd: Path = field(default_factory=Path.cwd)
    source_of: Callable[[str], str | None] = lambda filename: None
    # Each notebook's cell-to-file map, computed once per report.
    _notebooks: dict[str, NotebookLines | None] = field(
        default_factory=dict, compare=False, repr=False
    )

    def file_span(self, diagnostic: Diagnostic) -> tuple[Location, Location]:
        """Where `diagnostic` starts and ends as rows and columns of the file itself.

        In a notebook the rows are relative to a cell; formats that name a line of the file
        get the line of the `.ipynb` JSON that holds that code instead (1:1 when the notebook
        cannot be read back, as Ruff's fallback for notebooks).
        """
        if diagnostic.cell is None:
            return diagnostic.location, diagnostic.end_location
        filename = diagnostic.filename
        if filename not in self._notebooks:
            from torchperf_lint.notebooks import notebook_lines

            text = self.source_of(filename)
            self._notebooks[filename] = None if text is None else notebook_lines(text)
        lines = self._notebooks[filename]
        if lines is None:
            return Location(1, 1), Location(1, 1)
        start = lines.file_location(diagnostic.cell, diagnostic.location)
        end = lines.file_location(diagnostic.cell, diagnostic.end_location)
        if start is None:
            return Location(1, 1), Location(1, 1)
        return start, end if end is not None and end >= start else start


def merged(diagnostics: Sequence[Diagnostic], errors: Sequence[FileError]) -> list[Diagnostic]:
    """Findings and file errors together, sorted by (file, row, column, code)."""
    everything = [*diagnostics, *(error.as_diagnostic() for error in errors)]
    return sorted(everything, key=lambda d: d.sort_key)


def fix_applies(diagnostic: Diagnostic, unsafe_fixes: bool) -> bool:
    """Whether `--fix` with the current flags would apply this diagnostic's fix (`[*]`)."""
    return diagnostic.fix is not None and diagnostic.fix.applies(unsafe_fixes)


def hidden_unsafe(diagnostic: Diagnostic, unsafe_fixes: bool) -> bool:
    """A fix that only `--unsafe-fixes` would apply."""
    fix = diagnostic.fix
    return not unsafe_fixes and fix is not None and fix.applicability is Applicability.UNSAFE


def paint(text: str, color: bool, **style: object) -> str:
    return click.style(text, **style) if color else text


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def severity(diagnostic: Diagnostic, rules: Sequence[RuleInfo]) -> str:
    """`error` for a file that could not be linted, `warning` for a finding of a default rule,
    `note` for one of an opt-in rule (SARIF's levels; the other formats map them)."""
    if diagnostic.code == FILE_ERROR_CODE:
        return "error"
    rule = next((rule for rule in rules if rule.code == diagnostic.code), None)
    return "note" if rule is not None and not rule.default else "warning"


def fingerprints(report: Report) -> list[str]:
    """A stable identity for each finding, for CI systems that track findings across commits
    (SARIF's `partialFingerprints`, GitLab's `fingerprint`): a hash of the code, the file and the
    text of the reported line without its indentation, so lines added above it do not change
    it, plus its ordinal among the findings that share all three."""
    lines: dict[tuple[str, int | None], list[str]] = {}
    seen: Counter[str] = Counter()
    found = []
    for diagnostic in report.diagnostics:
        key = (diagnostic.filename, diagnostic.cell)
        if key not in lines:
            text = report.source_of(diagnostic.filename)
            if text is not None and diagnostic.cell is not None:
                from torchperf_lint.notebooks import cell_source

                text = cell_source(text, diagnostic.cell)
            lines[key] = [] if text is None else text.splitlines()
        row = diagnostic.location.row
        line = lines[key][row - 1].strip() if 1 <= row <= len(lines[key]) else ""
        identity = "\0".join((diagnostic.code, diagnostic.filename, str(diagnostic.cell), line))
        seen[identity] += 1
        # surrogatepass: a file name that is not UTF-8 keeps its identity.
        identity_bytes = f"{identity}\0{seen[identity]}".encode("utf-8", "surrogatepass")
        digest = hashlib.blake2b(identity_bytes, digest_size=16)
        found.append(digest.hexdigest())
    return found


def render(output_format: str, report: Report) -> str:
    """The findings in `output_format` (one of `formats.FORMATS`), ending with a newline when
    non-empty; only that format's module is imported."""
    module = importlib.import_module(f"torchperf_lint.report.{output_format.replace('-', '_')}")
    return module.render(report)


def check_summary(diagnostics: Sequence[Diagnostic], unsafe_fixes: bool) -> list[str]:
    """`Found N errors (M fixable with --fix).` and the `--unsafe-fixes` hint, or
    `All checks passed!`."""
    if not diagnostics:
        return ["All checks passed!"]
    fixable = sum(fix_applies(d, unsafe_fixes) for d in diagnostics)
    found = f"Found {plural(len(diagnostics), 'error')}"
    lines = [f"{found} ({fixable} fixable with --fix)." if fixable else f"{found}."]
    return lines + _unsafe_hint(diagnostics, unsafe_fixes, "would be", nothing_fixed=not fixable)


def fix_summary(fixed: int, remaining: Sequence[Diagnostic], unsafe_fixes: bool) -> list[str]:
    """After `--fix`: `Found N errors (K fixed, R remaining).` and the `--unsafe-fixes` hint."""
    if not fixed and not remaining:
        return ["All checks passed!"]
    total = fixed + len(remaining)
    lines = [f"Found {plural(total, 'error')} ({fixed} fixed, {len(remaining)} remaining)."]
    return lines + _unsafe_hint(remaining, unsafe_fixes, "were", nothing_fixed=not fixed)


def _unsafe_hint(
    diagnostics: Sequence[Diagnostic], unsafe_fixes: bool, verb: str, nothing_fixed: bool
) -> list[str]:
    hidden = sum(hidden_unsafe(d, unsafe_fixes) for d in diagnostics)
    fixes = "1 fix" if hidden == 1 else f"{hidden} fixes"
    if not hidden:
        return []
    if nothing_fixed:
        return [f"No errors {verb} fixed ({fixes} available with --unsafe-fixes)."]
    return [f"{fixes.replace(' ', ' more ', 1)} available with --unsafe-fixes."]


def statistics_records(report: Report) -> list[dict[str, object]]:
    """Per code: its name, how many findings, and whether the current flags would fix them;
    most frequent first."""
    counts = Counter(d.code for d in report.diagnostics)
    names = {d.code: d.name for d in report.diagnostics}
    fixable = {d.code for d in report.diagnostics if fix_applies(d, report.unsafe_fixes)}
    return [
        {"code": code, "name": names[code], "count": count, "fixable": code in fixable}
        for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]


def statistics(report: Report) -> str:
    """One line per code in Ruff's layout: `count<TAB>code<TAB>[*] name` (`[ ]`: no fix)."""
    records = statistics_records(report)
    if not records:
        return ""
    count_width = max(len(str(r["count"])) for r in records)
    code_width = max(len(str(r["code"])) for r in records)
    lines = [
        f"{r['count']:>{count_width}}\t{r['code']:<{code_width}}\t"
        f"{'[*]' if r['fixable'] else '[ ]'} {r['name']}"
        for r in records
    ]
    return "\n".join(lines) + "\n"
