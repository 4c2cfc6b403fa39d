"""A program kept warm between edits: every file's summary, linked again only when one changes,
and the answers each linted file's findings read, so that an edit anywhere tells which files
must be linted again.

`runner.lint_program` lints a whole program at once, in three phases (each file alone, link,
lint again the files whose answers changed). An editor changes one file at a time; a
`ProgramSession` keeps the state of those phases between changes:

- `analyse(file, ...)` lints one file once, in the program that already holds the file's new
  summary (the engine hands the summary over before the rules run), so that the file's own
  change is seen (its loop now calls one of its helpers, its CUDA use makes the program a
  CUDA one);
- `stale()` then names the other linted files whose recorded answers the program now gives
  differently: a helper module lost the call that made its function run on every step.

A file that stops parsing keeps its last summary, so that the program does not forget a module
while it is being typed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

from torchperf_lint.program.link import Answer, ProgramFacts
from torchperf_lint.program.summary import ModuleSummary

if TYPE_CHECKING:
    from torchperf_lint.engine import Analysis, Linker

AnalysisT = TypeVar("AnalysisT", bound="Analysis")


class ProgramSession:
    """The summaries of a program's files (each named as in `ProgramFacts`), the program they
    link into, and the answers read by the files linted so far."""

    def __init__(self, summaries: Mapping[str, ModuleSummary] | None = None) -> None:
        self._summaries: dict[str, ModuleSummary] = dict(summaries or {})
        self._program: ProgramFacts | None = None
        self._asked: dict[str, dict[str, Answer]] = {}

    @property
    def files(self) -> frozenset[str]:
        """The files the program holds (those that may hold PyTorch code, and those that may
        turn a switch on: `program.plain`)."""
        return frozenset(self._summaries)

    @property
    def program(self) -> ProgramFacts:
        """The linked program, linked again after a summary changed."""
        if self._program is None:
            self._program = ProgramFacts(dict(self._summaries))
        return self._program

    def update(self, file: str, summary: ModuleSummary | None) -> bool:
        """Give `file` its current summary (None: it leaves the program, deleted or with
        nothing the program reads); True when that changed the program."""
        if self._summaries.get(file) == summary:
            return False
        if summary is None:
            del self._summaries[file]
        else:
            self._summaries[file] = summary
        self._program = None
        return True

    def analyse(self, file: str, analyse: Callable[[Linker], AnalysisT]) -> AnalysisT:
        """Lint `file` with `analyse(link)`, an engine call that passes the file's summary to
        `link` before the rules run and lints in the program `link` returns: this one, holding
        that summary. A file that does not parse keeps its last summary; one with nothing the
        program reads (no summary) leaves the program."""

        def link(summary: ModuleSummary) -> ProgramFacts:
            self.update(file, summary)
            return self.program

        analysis = analyse(link)
        if analysis.result.error is None:
            self.update(file, analysis.summary)
        self._asked[file] = analysis.asked
        return analysis

    def holds(self, file: str, asked: Mapping[str, Answer]) -> bool:
        """Whether the program gives `file` the answers `asked` recorded."""
        program = self.program
        return all(program.answer(file, question) == answer for question, answer in asked.items())

    def forget(self, file: str) -> None:
        """Stop tracking the answers of `file` (it is no longer linted, as when closed)."""
        self._asked.pop(file, None)

    def stale(self) -> list[str]:
        """The linted files whose findings read answers that the program now gives
        differently, sorted: they must be linted again."""
        return sorted(file for file, asked in self._asked.items() if not self.holds(file, asked))
