"""One file in, diagnostics out: decode, parse once, build facts, run rules, honour `# noqa`."""

from __future__ import annotations

import ast
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import PurePath

import libcst as cst

from torchperf_lint.analysis import Analysis
from torchperf_lint.diagnostics import (
    Diagnostic,
    Edit,
    FileError,
    FileResult,
    Fix,
    Location,
    Related,
)
from torchperf_lint.facts import FileFacts
from torchperf_lint.noqa import NoqaDirectives, may_have_file_directive
from torchperf_lint.positions import node_positions
from torchperf_lint.program.link import Answer, ProgramFacts
from torchperf_lint.program.plain import summarize_plain
from torchperf_lint.program.summarize import References, summarize
from torchperf_lint.program.summary import ModuleSummary
from torchperf_lint.program.view import LinkedProgram
from torchperf_lint.reparse import EditedText
from torchperf_lint.rules.base import Finding, NodeEdit, Rule
from torchperf_lint.settings import LintSettings, RuleOptions  # noqa: F401 - re-exported
from torchperf_lint.source import (  # noqa: F401 - callers long found these here
    SourceError,
    SourceLimits,
    check_size,
    decode,
    read_source,
    worth_parsing,
)

# LibCST's native parser recurses without a limit: about 1,500 nested brackets crash the
# process (stack overflow), and long chains (`a + 1 + 1 ...`, `x[0][0]...`) take time
# quadratic in their length. Python rejects more than 200 nested brackets and expressions
# nested more than about 2,500 deep, in milliseconds. So a file whose logical lines could
# nest that deep is first given to Python's own parser; other files are not (that would add
# 3-8 % to the linting time; this scan adds about 1 %).
_STRING = r"""
    (?P<string>
        '''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*(?:'''|\Z)
      | \"\"\"[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*(?:\"\"\"|\Z)
      | '[^'\\\r\n]*(?:\\.[^'\\\r\n]*)*'?
      | "[^"\\\r\n]*(?:\\.[^"\\\r\n]*)*"?)
  | (?P<comment>\#[^\r\n]*)
  | \\(?:\r\n|[\s\S])  # a continuation line, or a stray backslash
"""
# Outside brackets a newline ends a logical line; inside, only brackets matter. Each pattern
# skips what cannot start a match in one step, which is much faster than trying each branch.
_AT_TOP_LEVEL = re.compile(
    r"""[^(\[{\r\n'"\#\\]*(?:""" + _STRING + r"""| (?P<open>[(\[{]) | (?P<newline>[\r\n]))""",
    re.VERBOSE,
)
_IN_BRACKETS = re.compile(
    r"""[^()\[\]{}'"\#\\]*(?:""" + _STRING + r"""| (?P<open>[(\[{]) | (?P<close>[)\]}]))""",
    re.VERBOSE,
)
# Tokens that can add a level to the syntax tree: their number bounds its depth in a line.
_NESTING_TOKENS = re.compile(r"[-+~*/%@&|^<>.(\[{]|\b(?:not|and|or|if|lambda|await)\b")
# More nesting tokens than this in one logical line, or brackets nested deeper than Python
# allows, and Python's parser is asked first; LibCST parses such nesting in about a second.
_NESTING_TO_CHECK = 500
_BRACKETS_PYTHON_ALLOWS = 200


def may_nest_deeply(text: str) -> bool:
    """Whether `text` has brackets nested deeper than Python allows, or a logical line
    with more tokens that can nest than that: the only ways to a deep syntax tree. Strings and
    comments are skipped; tokens are counted only in lines long enough to hold that many."""
    depth = position = line_start = 0
    while True:
        match = (_IN_BRACKETS if depth else _AT_TOP_LEVEL).match(text, position)
        if match is None:
            return _many_nesting_tokens(text, line_start, len(text))
        position = match.end()
        kind = match.lastgroup
        if kind == "open":
            depth += 1
            if depth > _BRACKETS_PYTHON_ALLOWS:
                return True
        elif kind == "close":
            depth -= 1
        elif kind == "newline":
            if _many_nesting_tokens(text, line_start, match.start(kind)):
                return True
            line_start = position


def _many_nesting_tokens(text: str, start: int, end: int) -> bool:
    if end - start <= _NESTING_TO_CHECK:
        return False
    tokens = _NESTING_TOKENS.finditer(text, start, end)
    return any(count > _NESTING_TO_CHECK for count, _ in enumerate(tokens, start=1))


def check_nesting(text: str) -> None:
    """Raise `SourceError` when Python itself rejects `text` for nesting too deeply."""
    if not may_nest_deeply(text):
        return
    # Python's parser bounds its recursion by the interpreter's limit: judge with the default
    # one, not the raised limit linting runs under.
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(_PYTHON_RECURSION_LIMIT)
    try:
        # Compiled, not only parsed: Python 3.9 builds the tree of a 50,000-term sum and only
        # its compiler gives up (Python 3.11 stops at the tree).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "<nesting>", "exec", dont_inherit=True)
    except SyntaxError as error:
        if "too many nested" in str(error.msg) or "too complex" in str(error.msg):
            location = Location(error.lineno, max(error.offset or 1, 1)) if error.lineno else None
            raise SourceError(f"too deeply nested to parse ({error.msg})", location) from None
    except (RecursionError, MemoryError):
        raise SourceError("too deeply nested to parse (Python rejects it too)") from None
    finally:
        sys.setrecursionlimit(previous)


# CPython's default recursion limit, under which it compiles about 2,500 nested levels.
_PYTHON_RECURSION_LIMIT = 1000


# Python calls per level of nesting in LibCST's visitors and code generation; with what
# Python accepts (about 2,500 levels) that needs far more than the default 1,000 frames.
_RECURSION_LIMIT = 40_000 if sys.version_info >= (3, 11) else 12_000


@contextmanager
def deep_recursion(text: str) -> Iterator[None]:
    """Room for the recursion of LibCST on the deepest code Python accepts, in `text`; deeper
    code ends in a `SourceError`. A recursion that runs out on code that does not nest deeply
    is the linter's own fault, and stays the internal error it is."""
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous, _RECURSION_LIMIT))
    try:
        yield
    except RecursionError:
        if not may_nest_deeply(text):
            raise
        raise SourceError("too deeply nested to lint (recursion limit)") from None
    finally:
        sys.setrecursionlimit(previous)


def parse(text: str) -> cst.Module:
    check_nesting(text)
    try:
        with deep_recursion(text):
            return cst.parse_module(text)
    except cst.ParserSyntaxError as error:
        raise _syntax_error(text, error) from None
    except MemoryError as error:
        raise SourceError(f"cannot parse: {type(error).__name__}") from None


def _syntax_error(text: str, error: cst.ParserSyntaxError) -> SourceError:
    """Python's own message and position where it has one (`'(' was never closed`); LibCST's
    otherwise, said as LibCST's where Python parses the file (syntax LibCST does not know
    yet, or indentation that mixes tabs and spaces in a way Python tolerates)."""
    python_parses = False
    try:
        ast.parse(text)
        python_parses = True
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
    if python_parses:
        return SourceError(f"cannot parse (LibCST's parser; Python parses it): {error.message}", location)
    return SourceError(f"syntax error: {error.message}", location)


@dataclass
class TextAnalysis:
    """The diagnostics of one source text, the file's summary for the program (of a text that
    cannot hold PyTorch code, only the switches it may turn on, `program.plain`; None when it
    has none), and the program answers they read."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    summary: ModuleSummary | None = None
    asked: dict[str, Answer] = field(default_factory=dict)


# Takes a file's new summary into its program before the file's rules run, and returns that
# program (an editor's warm program: `program.session.ProgramSession`).
Linker = Callable[[ModuleSummary], ProgramFacts]


def analyse_text(
    text: str,
    filename: str,
    settings: LintSettings,
    program: ProgramFacts | None = None,
    link: Linker | None = None,
    edited: EditedText | None = None,
) -> TextAnalysis:
    """Lint Python source `text` as the file `filename` of `program` (None: the file alone),
    or of the program `link` returns for the file's summary; raises `SourceError` when it
    does not parse. `edited` holds the file's last parse, for an editor's file: it is
    re-used where it can be, with the same result."""
    if not worth_parsing(text, filename):
        return TextAnalysis(summary=summarize_plain(text))
    # Comments are tokenized early only when a file-level directive may be there; the
    # line directives are read only for files that have findings.
    noqa = NoqaDirectives.from_source(text) if may_have_file_directive(text) else None
    check_size(text, settings.limits)
    with deep_recursion(text):
        if edited is None:
            module = parse(text)
            local = FileFacts(module, PurePath(filename))
        else:
            module = edited.parse(text)
            local = FileFacts(module, PurePath(filename), index=edited.index(module))
        refs = References(local)
        summary = summarize(local, refs)
        if not settings.rules or (noqa is not None and noqa.whole_file):
            return TextAnalysis(summary=summary)
        if link is not None:
            program = link(summary)
        if program is None:
            program = ProgramFacts({filename: summary})
        facts = local.with_program(LinkedProgram(program, filename, refs))
        return _lint_facts(facts, filename, text, noqa, settings, summary, edited)


def _lint_facts(
    facts: FileFacts,
    filename: str,
    text: str,
    noqa: NoqaDirectives | None,
    settings: LintSettings,
    summary: ModuleSummary,
    edited: EditedText | None = None,
) -> TextAnalysis:
    """Run the rules on one file's facts; positions only when something was found."""
    found: list[tuple[type[Rule], Finding]] = []
    for selected in settings.rules:
        if noqa is not None and noqa.file_ignores(selected.code):
            continue
        rule_class = selected.implementation()
        rule = rule_class(settings.options)
        if not rule.applies_to(facts):
            continue
        found.extend((rule_class, finding) for finding in rule.check(facts))
    asked = facts.program.asked
    if not found:
        return TextAnalysis(summary=summary, asked=asked)
    noqa = noqa or NoqaDirectives.from_source(text)
    # One fix may serve many findings (every use of a deprecated import is rewritten by the
    # fix of each): its nodes are located, and its edits converted, once.
    wanted = dict.fromkeys(finding.node for _, finding in found)
    wanted.update(
        (edit.node, None) for _, finding in found if finding.fix for edit in finding.fix.edits
    )
    wanted.update((node, None) for _, finding in found for node, _ in finding.also_at)
    if edited is None:
        positions = node_positions(facts.module, wanted)
    else:
        positions = edited.positions(facts.module, wanted, facts.index.parents)
    edits: dict[tuple[NodeEdit, ...], tuple[Edit, ...]] = {}
    diagnostics = []
    for rule_class, finding in found:
        diagnostic = _diagnostic(rule_class, finding, positions, filename, edits)
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


def _diagnostic(
    rule: type[Rule],
    finding: Finding,
    positions,
    filename: str,
    edits: dict[tuple[NodeEdit, ...], tuple[Edit, ...]],
) -> Diagnostic:
    """The diagnostic of `finding`; `edits` keeps the edits of the fixes converted so far."""
    span = positions[finding.node]
    start = _location(span.start)
    fix = None
    if finding.fix is not None:
        node_edits = finding.fix.edits
        if node_edits not in edits:
            edits[node_edits] = tuple(_edit(edit, positions) for edit in node_edits)
        fix = Fix(
            applicability=finding.fix.applicability,
            message=finding.fix.message,
            edits=edits[node_edits],
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
        related=finding.related + tuple(
            Related(filename, _location(positions[node].start), note)
            for node, note in finding.also_at
        ),
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
