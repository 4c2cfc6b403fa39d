"""One file in, diagnostics out: decode, parse once, build facts, run rules, honour `# noqa`."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePath

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from torchperf_lint.diagnostics import (
    Diagnostic,
    Edit,
    FileError,
    FileResult,
    Fix,
    Location,
)
from torchperf_lint.facts import FileFacts
from torchperf_lint.noqa import NoqaDirectives, may_have_file_directive
from torchperf_lint.program.link import Answer, ProgramFacts
from torchperf_lint.program.summary import ModuleSummary, summarize
from torchperf_lint.program.view import LinkedProgram
from torchperf_lint.rules.base import Finding, NodeEdit, Rule, RuleOptions


@dataclass(frozen=True)
class LintSettings:
    """What runs on one file: the selected rule classes and the options they read."""

    rules: tuple[type[Rule], ...]
    options: RuleOptions = field(default_factory=RuleOptions)


class SourceError(Exception):
    """A file's bytes could not be turned into a module: the reason is the message."""

    def __init__(self, reason: str, location: Location | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.location = location


@dataclass(frozen=True)
class DecodedSource:
    """Text plus what is needed to write it back byte-for-byte the same way."""

    text: str
    encoding: str
    bom: bool


def decode(data: bytes) -> DecodedSource:
    """Decode Python source as the interpreter would (BOM, PEP 263 cookie, else UTF-8)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        raise SourceError(f"cannot detect the encoding: {error}") from None
    bom = encoding == "utf-8-sig"
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as error:
        raise SourceError(f"cannot decode as {encoding}: {error}") from None
    return DecodedSource(text=text, encoding=encoding, bom=bom)


def parse(text: str) -> cst.Module:
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as error:
        raise _syntax_error(text, error) from None
    except (RecursionError, MemoryError) as error:
        raise SourceError(f"cannot parse: {type(error).__name__}") from None


def _syntax_error(text: str, error: cst.ParserSyntaxError) -> SourceError:
    """Python's own message and position where it has one (`'(' was never closed`); LibCST's
    otherwise (syntax Python accepts but LibCST does not know yet)."""
    try:
        ast.parse(text)
    except SyntaxError as python_error:
        if python_error.lineno is not None:
            column = max(python_error.offset or 1, 1)
            location = Location(python_error.lineno, column)
            return SourceError(f"syntax error: {python_error.msg}", location)
    except (ValueError, RecursionError, MemoryError):
        pass
    match = re.search(r"error at (\d+):(\d+)", error.message)
    location = (
        Location(int(match.group(1)), int(match.group(2)) + 1)
        if match
        else Location(error.raw_line, 1)
    )
    return SourceError(f"syntax error: {error.message}", location)


# A file that mentions none of these cannot hold PyTorch code (a Lightning or accelerate
# script may never name `torch` itself).
_PYTORCH_MARKERS = ("torch", "lightning", "accelerate")


def may_contain_pytorch(text: str) -> bool:
    """Files without `torch`, `lightning` or `accelerate` in their text cannot hold PyTorch
    code and are not parsed."""
    return any(marker in text for marker in _PYTORCH_MARKERS)


@dataclass
class TextAnalysis:
    """The diagnostics of one source text, the file's summary for the program (None when the
    text was not parsed: it cannot hold PyTorch code), and the program answers they read."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    summary: ModuleSummary | None = None
    asked: dict[str, Answer] = field(default_factory=dict)


@dataclass
class Analysis:
    """What linting one file gives the runner: its result, summary and the answers read."""

    result: FileResult
    summary: ModuleSummary | None = None
    asked: dict[str, Answer] = field(default_factory=dict)
    # Replayed from the cache rather than linted in this run.
    replayed: bool = False


def analyse_text(
    text: str, filename: str, settings: LintSettings, program: ProgramFacts | None = None
) -> TextAnalysis:
    """Lint Python source `text` as the file `filename` of `program` (None: the file alone);
    raises `SourceError` when it does not parse."""
    if not may_contain_pytorch(text):
        return TextAnalysis()
    # Comments are tokenized early only when a file-level directive may be there; the
    # line directives are read only for files that have findings.
    noqa = NoqaDirectives.from_source(text) if may_have_file_directive(text) else None
    module = parse(text)
    local = FileFacts(module, PurePath(filename))
    summary = summarize(local)
    if not settings.rules or (noqa is not None and noqa.whole_file):
        return TextAnalysis(summary=summary)
    if program is None:
        program = ProgramFacts({filename: summary})
    facts = local.with_program(LinkedProgram(program, filename))
    found: list[tuple[type[Rule], Finding]] = []
    for rule_class in settings.rules:
        if noqa is not None and noqa.file_ignores(rule_class.code):
            continue
        rule = rule_class(settings.options)
        found.extend((rule_class, finding) for finding in rule.check(facts))
    asked = facts.program.asked
    if not found:
        return TextAnalysis(summary=summary, asked=asked)
    noqa = noqa or NoqaDirectives.from_source(text)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    diagnostics = []
    for rule_class, finding in found:
        diagnostic = _diagnostic(rule_class, finding, positions, filename)
        if not noqa.suppresses(diagnostic.location.row, rule_class.code, rule_class.name):
            diagnostics.append(diagnostic)
    diagnostics.sort(key=lambda d: d.sort_key)
    return TextAnalysis(diagnostics, summary, asked)


def lint_text(
    text: str, filename: str, settings: LintSettings, program: ProgramFacts | None = None
) -> list[Diagnostic]:
    """Diagnostics for Python source `text`; raises `SourceError` when it does not parse."""
    return analyse_text(text, filename, settings, program).diagnostics


def analyse_bytes(
    data: bytes, filename: str, settings: LintSettings, program: ProgramFacts | None = None
) -> Analysis:
    """Decode and lint the bytes of one `.py` file (from disk or stdin); never raises on input."""
    result = FileResult(filename=filename)
    try:
        source = decode(data)
        analysis = analyse_text(source.text, filename, settings, program)
    except SourceError as error:
        result.error = FileError(filename, error.reason, error.location)
        return Analysis(result)
    result.diagnostics = analysis.diagnostics
    return Analysis(result, analysis.summary, analysis.asked)


def _location(position) -> Location:
    return Location(position.line, position.column + 1)


def _diagnostic(rule: type[Rule], finding: Finding, positions, filename: str) -> Diagnostic:
    span = positions[finding.node]
    start = _location(span.start)
    fix = None
    if finding.fix is not None:
        fix = Fix(
            applicability=finding.fix.applicability,
            message=finding.fix.message,
            edits=tuple(_edit(edit, positions) for edit in finding.fix.edits),
        )
    return Diagnostic(
        code=rule.code,
        name=rule.name,
        message=finding.message or rule.message,
        filename=filename,
        location=start,
        end_location=_location(span.end),
        fix=fix,
        noqa_row=start.row,
        url=rule.url(),
        related=finding.related,
    )


def _edit(edit: NodeEdit, positions) -> Edit:
    span = positions[edit.node]
    if edit.mode == "insert_before":
        start = _location(span.start)
        return Edit(start, start, edit.content)
    if edit.mode == "delete_lines":
        return Edit(Location(span.start.line, 1), Location(span.end.line + 1, 1), "")
    return Edit(_location(span.start), _location(span.end), edit.content)


def rules_for(codes: Sequence[str]) -> tuple[type[Rule], ...]:
    """Rule classes for exact codes, in catalog order (for tests and tools)."""
    from torchperf_lint.rules import BY_CODE

    return tuple(BY_CODE[code] for code in sorted(codes))
