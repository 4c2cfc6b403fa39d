"""What the editor can do about a finding: its quick fix, `# noqa`, every safe fix of the file,
and the rule's page on hover, computed with the CLI's own code so that the results are the
CLI's (`--fix`, `--add-noqa`, `torchperf-lint rule CODE`).

An action is a list of text changes (the whole text of a file, or of a notebook cell, before
and after); `protocol.py` turns them into LSP edits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from torchperf_lint.diagnostics import Applicability, Diagnostic
from torchperf_lint.docs import render_page
from torchperf_lint.engine import SourceError
from torchperf_lint.fixes import add_noqa_text, apply_fixes, compiles, fix_text
from torchperf_lint.notebooks import NotebookError, fix_notebook_cells, restore_ipython
from torchperf_lint.server.documents import NotebookSource, PythonSource
from torchperf_lint.server.projects import Linted

QUICK_FIX = "quickfix"
FIX_ALL = "source.fixAll.torchperf-lint"
# Titles read as Ruff's: "Ruff (F401): Remove unused import".
_NAME = "torchperf-lint"
FIX_ALL_TITLE = f"{_NAME}: Fix all safe fixes"


@dataclass(frozen=True)
class Change:
    """A file's text (`cell` None) or a notebook cell's, before and after."""

    cell: int | None
    before: str
    after: str


@dataclass(frozen=True)
class Action:
    title: str
    kind: str
    changes: tuple[Change, ...]
    diagnostic: Diagnostic | None = None
    preferred: bool = False


def actions_for(linted: Linted, diagnostic: Diagnostic, unsafe_fixes: bool) -> list[Action]:
    """The quick fix of `diagnostic` (safe ones preferred; unsafe ones, named so, only with
    `unsafe_fixes`) and the `# noqa` that silences it."""
    actions = []
    fix = diagnostic.fix
    allowed = fix is not None and fix.applies(unsafe_fixes) and fix.edits
    if allowed:
        change = _rewrite(linted.source, diagnostic, lambda text: _fixed(text, diagnostic, unsafe_fixes))
        if change is not None:
            safe = fix.applicability is Applicability.SAFE
            title = f"{_NAME} ({diagnostic.code}): {fix.message}" + ("" if safe else " (unsafe fix)")
            actions.append(Action(title, QUICK_FIX, (change,), diagnostic, preferred=safe))
    change = _rewrite(linted.source, diagnostic, lambda text: add_noqa_text(text, [diagnostic])[0])
    if change is not None:
        title = f"{_NAME} ({diagnostic.code}): Disable for this line (`# noqa`)"
        actions.append(Action(title, QUICK_FIX, (change,), diagnostic))
    return actions


def _fixed(text: str, diagnostic: Diagnostic, unsafe_fixes: bool) -> str:
    fixed, applied = apply_fixes(text, [diagnostic], unsafe_fixes)
    # As `--fix`: a rewrite that no longer compiles is never offered.
    if not applied or (not compiles(fixed) and compiles(text)):
        return text
    return fixed


def _rewrite(source, diagnostic: Diagnostic, rewrite) -> Change | None:
    """`rewrite` applied to the text holding `diagnostic` (its cell's Python, for a notebook,
    with the IPython lines put back); None when nothing changes or the change would touch an
    IPython line."""
    if isinstance(source, PythonSource):
        after = rewrite(source.text)
        return None if after == source.text else Change(None, source.text, after)
    cell = source.code_cell(diagnostic.cell or 0)
    if cell is None:
        return None
    python = rewrite(cell.python)
    if python == cell.python:
        return None
    try:
        after = restore_ipython(cell, python, source.notebook.placeholder)
    except NotebookError:
        return None
    return Change(cell.number, cell.source, after)


def offers_fix_all(linted: Linted) -> bool:
    """Whether the file has a finding with a safe fix."""
    return linted.settings is not None and any(
        d.fix is not None and d.fix.applicability is Applicability.SAFE for d in linted.diagnostics
    )


def fix_all(linted: Linted) -> Action | None:
    """Every safe fix of the file, to a fixed point, as `--fix` applies them."""
    if not offers_fix_all(linted):
        return None
    source = linted.source
    try:
        if isinstance(source, PythonSource):
            after, _, _ = fix_text(source.text, linted.name, linted.settings, False, linted.program)
            changes = [Change(None, source.text, after)] if after != source.text else []
        else:
            fixed = fix_notebook_cells(
                source.notebook, linted.name, linted.settings, False, linted.program
            )
            changes = [
                Change(index + 1, _cell_source(source, index), text)
                for index, text in sorted(fixed.sources.items())
            ]
    except (SourceError, NotebookError):
        return None
    if not changes:
        return None
    return Action(FIX_ALL_TITLE, FIX_ALL, tuple(changes))


def _cell_source(source: NotebookSource, index: int) -> str:
    cell = source.code_cell(index + 1)
    return cell.source if cell is not None else ""


def hover_text(diagnostics: Sequence[Diagnostic]) -> str | None:
    """The pages of the rules of `diagnostics` (Markdown), each rule once."""
    from torchperf_lint.rules import BY_CODE

    codes = sorted({d.code for d in diagnostics if d.code in BY_CODE})
    if not codes:
        return None
    return "\n---\n\n".join(render_page(BY_CODE[code]) for code in codes)
