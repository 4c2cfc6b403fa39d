"""Lint (or fix) many files, in parallel when it pays, with output that does not depend on it.

Each file is one job carrying its own settings (its nearest configuration). A job that raises
is an internal error of the linter: it is recorded, the other files are still linted, and the
command exits 2.

Linting a program takes three phases (`lint_program`):
1. every file is linted on its own, in parallel (or replayed from the cache), giving its
   findings, its summary and the program answers they read; the other files of the project
   give their summaries only;
2. the parent links the summaries into the program (`program.link.ProgramFacts`) and checks
   each file's answers against it;
3. the files whose answers differ are linted again, with the program, in parallel.
Findings reached through calls then get the rows of the calls on their paths.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from torchperf_lint.diagnostics import Diagnostic, FileError, FileResult
from torchperf_lint.engine import Analysis, LintSettings, analyse_bytes, decode, may_contain_pytorch
from torchperf_lint.program.link import ProgramFacts
from torchperf_lint.program.locate import locate_related
from torchperf_lint.program.summary import ModuleSummary, summarize

# Below this many files a process pool costs more than it saves.
MIN_FILES_FOR_POOL = 4
# Files handed to a worker at a time.
MAX_CHUNK = 8

Outcome = TypeVar("Outcome")


@dataclass(frozen=True)
class FileJob:
    """One file to process: where it is, the name to report it under, and its settings."""

    path: Path
    display_name: str
    settings: LintSettings
    # Where linting keeps and replays results of unchanged files; None: no cache.
    cache_dir: Path | None = None


@dataclass(frozen=True)
class InternalError:
    """A bug in the linter met while processing one file."""

    filename: str
    message: str


@dataclass
class Run(Generic[Outcome]):
    """Outcomes in the order of the jobs, and the files the linter failed on."""

    outcomes: list[Outcome] = field(default_factory=list)
    internal_errors: list[InternalError] = field(default_factory=list)
    # The files linted in this run (`lint_program`), sorted; the others were replayed from the
    # cache.
    linted: list[str] = field(default_factory=list)


def analyse_one(
    path: Path,
    display_name: str,
    settings: LintSettings,
    data: bytes | None = None,
    program: ProgramFacts | None = None,
) -> Analysis:
    """Lint one file (its `data` when given, as for stdin) as part of `program` (None: on its
    own): the one place that dispatches on the kind of file."""
    if data is None:
        try:
            data = path.read_bytes()
        except OSError as error:
            return Analysis(FileResult(display_name, error=FileError.unreadable(display_name, error)))
    if path.suffix == ".ipynb":
        from torchperf_lint.notebooks import analyse_notebook

        return analyse_notebook(data, display_name, settings, program)
    return analyse_bytes(data, display_name, settings, program)


def lint_one(
    path: Path, display_name: str, settings: LintSettings, data: bytes | None = None
) -> FileResult:
    """The result of linting one file on its own (see `analyse_one`)."""
    return analyse_one(path, display_name, settings, data).result


def analyse_job(job: FileJob) -> Analysis:
    """Lint one job's file, through the cache when there is one, as part of the program this
    phase shares with its workers (none in the first phase: the file alone)."""
    program = shared()
    if job.cache_dir is not None:
        from torchperf_lint.cache import Cache, analyse_cached

        return analyse_cached(Cache(job.cache_dir), job, program)
    return analyse_one(job.path, job.display_name, job.settings, program=program)


def summary_job(job: FileJob) -> Analysis:
    """Only the summary of a file the program reads but that is not linted (its findings are
    not reported): from the cache, or parsed."""
    if job.cache_dir is not None:
        from torchperf_lint.cache import Cache, summary_cached

        summary = summary_cached(Cache(job.cache_dir), job.path)
    else:
        summary = summarize_file(job.path)
    return Analysis(FileResult(job.display_name), summary)


def summarize_file(path: Path) -> ModuleSummary | None:
    """The summary of the file at `path`; None when it cannot be read or parsed, or cannot
    hold PyTorch code."""
    from torchperf_lint.engine import SourceError, parse
    from torchperf_lint.facts import FileFacts

    try:
        text = _python_text(path.read_bytes(), path)
        if text is None or not may_contain_pytorch(text):
            return None
        return summarize(FileFacts(parse(text), path))
    except (OSError, SourceError):
        return None


def _python_text(data: bytes, path: Path) -> str | None:
    """The Python the linter sees in a file: a notebook's code cells joined, or the source."""
    from torchperf_lint.engine import SourceError

    if path.suffix == ".ipynb":
        from torchperf_lint.notebooks import NotebookError, read_notebook

        try:
            notebook = read_notebook(data)
        except NotebookError:
            return None
        return notebook.joined() if notebook.cells else None
    try:
        return decode(data).text
    except SourceError:
        return None


def link_files(jobs: Sequence[FileJob], workers: int) -> ProgramFacts:
    """The program of these files, from their summaries alone (for `--fix`: the findings
    come from fixing)."""
    run = run_jobs(summary_job, jobs, workers)
    return ProgramFacts({
        analysis.result.filename: analysis.summary
        for analysis in run.outcomes
        if analysis.summary is not None
    })


def lint_program(
    jobs: Sequence[FileJob], context: Sequence[FileJob], workers: int
) -> Run[FileResult]:
    """Lint `jobs` as parts of the program they form with the `context` files (the rest of
    their project, read for summaries only), in the three phases the module describes."""
    first = run_jobs(analyse_job, jobs, workers)
    linted = {analysis.result.filename for analysis in first.outcomes}
    others = run_jobs(summary_job, [job for job in context if job.display_name not in linted], workers)
    summaries = {
        analysis.result.filename: analysis.summary
        for analysis in (*first.outcomes, *others.outcomes)
        if analysis.summary is not None
    }
    program = ProgramFacts(summaries)
    by_name = {job.display_name: job for job in jobs}
    results: dict[str, FileResult] = {}
    stale = []
    for analysis in first.outcomes:
        name = analysis.result.filename
        if all(program.answer(name, question) == answer for question, answer in analysis.asked.items()):
            results[name] = analysis.result
        else:
            stale.append(by_name[name])
    second = run_jobs(analyse_job, stale, workers, shared=program)
    for analysis in second.outcomes:
        results[analysis.result.filename] = analysis.result
    run: Run[FileResult] = Run(internal_errors=first.internal_errors + second.internal_errors)
    run.outcomes = [results[job.display_name] for job in jobs if job.display_name in results]
    run.linted = sorted({
        analysis.result.filename
        for analysis in (*first.outcomes, *second.outcomes)
        if not analysis.replayed
    })
    paths = {job.display_name: job.path for job in (*jobs, *context)}
    locate_related(run.outcomes, lambda name: _located_source(paths.get(name)))
    return run


def lint_source(
    job: FileJob, data: bytes, context: Sequence[FileJob], workers: int
) -> FileResult:
    """Lint `data` as the file of `job` (an editor's unsaved buffer, read from stdin) in the
    program of its project (`context`), as `lint_program` would lint it from disk."""
    alone = analyse_one(job.path, job.display_name, job.settings, data)
    others = [other for other in context if other.display_name != job.display_name]
    program = link_files(others, workers)
    if alone.summary is not None:
        program = ProgramFacts({**program.summaries, job.display_name: alone.summary})
    result = alone.result
    if any(program.answer(job.display_name, q) != a for q, a in alone.asked.items()):
        result = analyse_one(job.path, job.display_name, job.settings, data, program).result
    paths = {other.display_name: other.path for other in context}

    def source(name: str):
        if name == job.display_name:
            return _located_source(job.path, data)
        return _located_source(paths.get(name))

    locate_related([result], source)
    return result


def _located_source(path: Path | None, data: bytes | None = None):
    """A file's Python text (of `data` when given, else read), and for a notebook the
    (cell, row) of each row of it."""
    if path is None:
        return None
    try:
        data = path.read_bytes() if data is None else data
    except OSError:
        return None
    text = _python_text(data, path)
    if text is None:
        return None
    if path.suffix != ".ipynb":
        return text, None
    from torchperf_lint.notebooks import cell_of_row, read_notebook

    notebook = read_notebook(data)
    return text, lambda row: cell_of_row(notebook, text, row)


# The object every worker of the current phase reads (the linked program), set in each worker
# when its pool starts: sent once per worker, not once per file.
_SHARED: object = None


def shared() -> object:
    """What the current `run_jobs` call shares with its jobs (None outside one)."""
    return _SHARED


def _share(value: object) -> None:
    global _SHARED
    _SHARED = value


def run_jobs(
    function: Callable[[FileJob], Outcome],
    jobs: Sequence[FileJob],
    workers: int,
    shared: object = None,
) -> Run[Outcome]:
    """`function` applied to every job, in a process pool when `workers` > 1 and there are
    enough files; outcomes come back in job order either way. `shared` is what the jobs read
    through `shared()`."""
    run: Run[Outcome] = Run()
    tasks = [(function, job) for job in jobs]
    before = _SHARED
    _share(shared)
    try:
        if workers > 1 and len(jobs) >= MIN_FILES_FOR_POOL:
            workers = min(workers, len(jobs))
            # File sizes vary by orders of magnitude: the largest files go first and chunks
            # stay small, so no worker is left with a big file while the other cores idle.
            order = sorted(range(len(jobs)), key=lambda position: -_size(jobs[position].path))
            chunksize = max(1, min(MAX_CHUNK, len(jobs) // (workers * 4)))
            with ProcessPoolExecutor(
                max_workers=workers, initializer=_share, initargs=(shared,)
            ) as pool:
                done = pool.map(
                    _guarded, [tasks[position] for position in order], chunksize=chunksize
                )
                by_position = dict(zip(order, done))
            answers = [by_position[position] for position in range(len(jobs))]
        else:
            answers = [_guarded(task) for task in tasks]
    finally:
        _share(before)
    for answer in answers:
        if isinstance(answer, InternalError):
            run.internal_errors.append(answer)
        else:
            run.outcomes.append(answer)
    return run


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _guarded(task: tuple[Callable[[FileJob], Outcome], FileJob]) -> Outcome | InternalError:
    function, job = task
    try:
        return function(job)
    except Exception as error:  # noqa: BLE001 - one file's crash must not stop the run
        frame = traceback.extract_tb(error.__traceback__)[-1]
        where = f"{Path(frame.filename).name}:{frame.lineno}"
        return InternalError(job.display_name, f"{type(error).__name__}: {error} (at {where})")


def display_name(path: Path, cwd: Path) -> str:
    """How a file is named in the output: relative to the working directory when under it."""
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


def default_jobs() -> int:
    return os.cpu_count() or 1


def sorted_findings(
    results: Sequence[FileResult],
) -> tuple[list[Diagnostic], list[FileError]]:
    """All diagnostics and file errors of `results`, each sorted by (file, row, column)."""
    diagnostics = sorted((d for r in results for d in r.diagnostics), key=lambda d: d.sort_key)
    errors = sorted((r.error for r in results if r.error), key=lambda e: e.sort_key)
    return diagnostics, errors
