"""Lint (or fix) many files, in parallel when it pays, with output that does not depend on it.

Each file is one job carrying its own settings (its nearest configuration). A job that raises
is an internal error of the linter: it is recorded, the other files are still linted, and the
command exits 2. A job whose process dies (a crash in native code) is that file's `E902`.

Linting a program takes three phases (`lint_program`):
1. every file is linted on its own, in parallel (or replayed from the cache, in this process),
   giving its findings, its summary and the program answers they read; the other files of the
   project give their summaries only;
2. the parent links the summaries into the program (`program.link.ProgramFacts`) and checks
   each file's answers against it;
3. the files whose answers differ are linted again, with the program, in parallel.
Findings reached through calls then get the rows of the calls on their paths. With a cache,
a run in which no file changed replays the verdict of the last such run instead (`cache`).

This module imports LibCST only when a file is linted, not to replay results.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Generic, NamedTuple, TypeVar

from torchperf_lint.analysis import Analysis
from torchperf_lint.diagnostics import Diagnostic, FileError, FileResult
from torchperf_lint.discovery import LAUNCHER_MAX_BYTES, LAUNCHER_SUFFIXES
from torchperf_lint.settings import LintSettings
from torchperf_lint.source import SourceError, decode, read_source, worth_parsing

# The program, the worker processes (`workers`) and LibCST are imported when a run needs them:
# a run whose verdict is cached needs none of them.
if TYPE_CHECKING:
    from torchperf_lint.cache import Cache
    from torchperf_lint.notebooks import Notebook
    from torchperf_lint.program.link import Answer, ProgramFacts
    from torchperf_lint.program.summary import ModuleSummary

# Below this many files worker processes cost more than they save.
MIN_FILES_FOR_POOL = 4

Outcome = TypeVar("Outcome")


class FileJob(NamedTuple):
    """One file to process: where it is, the name to report it under, and its settings."""

    path: Path
    display_name: str
    settings: LintSettings
    # Where linting keeps and replays results of unchanged files; None: no cache.
    cache_dir: Path | None = None


class InternalError(NamedTuple):
    """A bug in the linter met while processing one file."""

    filename: str
    message: str


@dataclass
class Run(Generic[Outcome]):
    """Outcomes in the order of the jobs, the files the linter failed on, and the files whose
    worker died (reported as file errors, `E902`)."""

    outcomes: list[Outcome] = field(default_factory=list)
    internal_errors: list[InternalError] = field(default_factory=list)
    crashed: list[FileError] = field(default_factory=list)
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
            data = read_source(path, settings.limits)
        except OSError as error:
            return Analysis(FileResult(display_name, error=FileError.unreadable(display_name, error)))
        except SourceError as error:
            return Analysis(FileResult(display_name, error=FileError(display_name, error.reason)))
    if path.suffix == ".ipynb":
        from torchperf_lint.notebooks import analyse_notebook

        return analyse_notebook(data, display_name, settings, program)
    from torchperf_lint.engine import analyse_bytes

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
    if job.cache_dir is None:
        return Analysis(FileResult(job.display_name), summarize_file(job.path))
    from torchperf_lint.cache import Cache, summary_cached

    summary, digest = summary_cached(Cache(job.cache_dir), job.path)
    return Analysis(FileResult(job.display_name), summary, summary_digest=digest)


def summarize_file(path: Path) -> ModuleSummary | None:
    """The summary of the file at `path` (of a file that cannot hold PyTorch code, only the
    switches it may turn on: `program.plain`; of a launcher, the settings it gives:
    `program.options`); None when it cannot be read or parsed, or has nothing the program
    reads."""
    from torchperf_lint.engine import parse
    from torchperf_lint.facts import FileFacts
    from torchperf_lint.program.plain import summarize_plain
    from torchperf_lint.program.summarize import summarize

    try:
        if path.name.endswith(LAUNCHER_SUFFIXES):
            return _launcher_summary(path)
        text = _python_text(path.read_bytes(), path)
        if text is None:
            return None
        if not worth_parsing(text, path.name):
            return summarize_plain(text)
        return summarize(FileFacts(parse(text), path))
    except (OSError, SourceError):
        return None


def _launcher_summary(path: Path) -> ModuleSummary | None:
    """The settings a launcher gives and the words it holds (`program.options`); None for
    one too large to be a config."""
    from torchperf_lint.program.options import summarize_launcher

    with open(path, "rb") as stream:
        data = stream.read(LAUNCHER_MAX_BYTES + 1)
    if len(data) > LAUNCHER_MAX_BYTES:
        return None
    return summarize_launcher(data.decode("utf-8", errors="replace"))


def _python_text(data: bytes, path: Path) -> str | None:
    """The Python the linter sees in a file: a notebook's code cells joined (those it lints),
    or the source."""
    if path.suffix == ".ipynb":
        notebook = _lintable_notebook(data, path)
        return None if notebook is None else notebook.joined()
    try:
        return decode(data).text
    except SourceError:
        return None


def _lintable_notebook(data: bytes, path: Path) -> Notebook | None:
    """The code cells of a notebook the linter lints (`notebooks.lintable`); None when it is
    not a notebook or has no code."""
    from torchperf_lint.notebooks import NotebookError, lintable, read_notebook

    try:
        notebook, _ = lintable(read_notebook(data), str(path))
    except NotebookError:
        return None
    return notebook if notebook.cells else None


def link_files(jobs: Sequence[FileJob], workers: int) -> ProgramFacts:
    """The program of these files, from their summaries alone (for `--fix`: the findings
    come from fixing)."""
    from torchperf_lint.program.link import ProgramFacts

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
    their project, read for summaries only), in the three phases the module describes; with a
    cache (the jobs' `cache_dir`), the verdict of an identical earlier run is replayed."""
    cache = _cache_of(jobs)
    if cache is None:
        return _lint_program(jobs, context, workers)
    from torchperf_lint.cache import job_key, summary_key

    keys = {job.display_name: job_key(cache, job) for job in jobs}
    others = [job for job in context if job.display_name not in keys]
    summary_keys = {job.display_name: summary_key(cache, job.path) for job in others}
    cache.digests.save()
    verdict = None
    if all(key is not None for key in keys.values()):
        verdict = cache.program_key([
            *keys.items(),
            *((name, key or "unreadable") for name, key in summary_keys.items()),
        ])
        replayed = cache.get_results(verdict)
        if replayed is not None and [r.filename for r in replayed] == list(keys):
            return Run(outcomes=replayed)
    run = _lint_program(jobs, context, workers, cache, keys, summary_keys)
    if verdict is not None and not run.internal_errors and not run.crashed:
        cache.put_results(verdict, run.outcomes)
    return run


def _cache_of(jobs: Sequence[FileJob]) -> Cache | None:
    """The cache every job uses, or None (the CLI gives all jobs the same one, or none)."""
    directories = {job.cache_dir for job in jobs}
    if len(directories) != 1 or None in directories:
        return None
    from torchperf_lint.cache import Cache

    return Cache(directories.pop())


def _lint_program(
    jobs: Sequence[FileJob],
    context: Sequence[FileJob],
    workers: int,
    cache: Cache | None = None,
    keys: dict[str, str | None] | None = None,
    summary_keys: dict[str, str | None] | None = None,
) -> Run[FileResult]:
    """The three phases; the entries of `keys` (linted files) and `summary_keys` (the other
    files) that are in `cache` are read here, and only the other files go to the workers."""
    from torchperf_lint.program.locate import locate_related

    replayed: list[Analysis] = []
    # Each file's summary, or the digest under which the cache keeps it (`Cache.summary`).
    summaries: dict[str, ModuleSummary | str] = {}
    digests: dict[str, str | None] = {}
    linted_names = {job.display_name for job in jobs}
    to_lint = list(jobs)
    to_summarize = [job for job in context if job.display_name not in linted_names]
    if cache is not None and keys is not None and summary_keys is not None:
        from torchperf_lint.cache import get_summary

        to_lint = []
        for job in jobs:
            key = keys[job.display_name]
            cached = None if key is None else cache.get(key, job.display_name)
            if cached is None:
                to_lint.append(job)
            else:
                replayed.append(cached)
        missing = []
        for job in to_summarize:
            key = summary_keys[job.display_name]
            found = None if key is None else get_summary(cache, key)
            if key is not None and found is None:
                missing.append(job)
            elif found is not None and found[0]:
                summaries[job.display_name] = digests[job.display_name] = found[1]
        to_summarize = missing
    linted = run_jobs(analyse_job, to_lint, workers)
    first = [*replayed, *linted.outcomes]
    others = run_jobs(summary_job, to_summarize, workers)
    for analysis in (*first, *others.outcomes):
        summary = analysis.summary if analysis.summary is not None else analysis.stored_summary
        if summary is not None:
            summaries[analysis.result.filename] = summary
            digests[analysis.result.filename] = analysis.summary_digest
    paths = {job.display_name: job.path for job in (*jobs, *context)}
    answers = _Answers(partial(_linked, summaries, cache, paths), cache, digests)
    by_name = {job.display_name: job for job in jobs}
    results: dict[str, FileResult] = {}
    final: list[Analysis] = []
    stale = []
    for analysis in first:
        name = analysis.result.filename
        if all(answers.answer(name, question) == answer for question, answer in analysis.asked.items()):
            results[name] = analysis.result
            final.append(analysis)
        else:
            stale.append(by_name[name])
    second = run_jobs(analyse_job, stale, workers, shared=answers.program if stale else None)
    for analysis in second.outcomes:
        results[analysis.result.filename] = analysis.result
    run: Run[FileResult] = Run(
        internal_errors=linted.internal_errors + second.internal_errors,
        crashed=linted.crashed + second.crashed,
    )
    if not run.internal_errors and not run.crashed:
        answers.store([*final, *second.outcomes])
    run.outcomes = [results[job.display_name] for job in jobs if job.display_name in results]
    run.linted = sorted({
        analysis.result.filename
        for analysis in (*linted.outcomes, *second.outcomes)
        if not analysis.replayed
    })
    locate_related(run.outcomes, lambda name: _located_source(paths.get(name)))
    return run


def _linked(
    summaries: dict[str, ModuleSummary | str], cache: Cache | None, paths: dict[str, Path]
) -> ProgramFacts:
    """The program of these summaries, reading those the cache keeps (by their digests; a
    file whose summary has gone from the cache is summarized again)."""
    from torchperf_lint.program.link import ProgramFacts

    linked = {}
    for name, summary in summaries.items():
        if isinstance(summary, str):
            kept = None if cache is None else cache.summary(summary)
            summary = kept if kept is not None else summarize_file(paths[name])
        if summary is not None:
            linked[name] = summary
    return ProgramFacts(linked)


class _Answers:
    """The program's answers to the files' questions: those an earlier run stored for the same
    summaries (the cache, by their digests), else the linked program's, linked when first
    needed (linking a large program takes longer than replaying all its files)."""

    def __init__(
        self,
        link: Callable[[], ProgramFacts],
        cache: Cache | None,
        digests: dict[str, str | None],
    ) -> None:
        self._link = link
        self.cache = cache
        self.key = None
        if cache is not None and all(digest is not None for digest in digests.values()):
            self.key = cache.answers_key(digests)  # type: ignore[arg-type]
        self.known = {} if self.key is None else cache.get_answers(self.key)
        self.new = self.key is not None and not self.known

    @cached_property
    def program(self) -> ProgramFacts:
        return self._link()

    def answer(self, file: str, question: str) -> Answer:
        known = self.known.get(file, {})
        if question in known:
            return known[question]
        self.new = self.key is not None
        return self.program.answer(file, question)

    def store(self, analyses: Sequence[Analysis]) -> None:
        """Keep the answers the final findings of `analyses` read, when any were new."""
        if self.cache is not None and self.key is not None and self.new:
            # Answers for one program hold whichever run asked them: merged, never dropped.
            answers = {**self.known, **{a.result.filename: a.asked for a in analyses if a.asked}}
            if answers:
                self.cache.put_answers(self.key, answers)


def lint_source(
    job: FileJob, data: bytes, context: Sequence[FileJob], workers: int
) -> FileResult:
    """Lint `data` as the file of `job` (an editor's unsaved buffer, read from stdin) in the
    program of its project (`context`), as `lint_program` would lint it from disk."""
    from torchperf_lint.program.link import ProgramFacts
    from torchperf_lint.program.locate import locate_related

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
    if path.suffix != ".ipynb":
        text = _python_text(data, path)
        return None if text is None else (text, None)
    from torchperf_lint.notebooks import cell_of_row

    notebook = _lintable_notebook(data, path)
    if notebook is None:
        return None
    text = notebook.joined()
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
    """`function` applied to every job, in worker processes when `workers` > 1 and there are
    enough files; outcomes come back in job order either way. `shared` is what the jobs read
    through `shared()` (sent once to each worker, not once per job).

    A worker that dies on a file (a crash in LibCST's native parser, the kernel's out-of-memory
    killer) costs that file only: it becomes a `FileError` in `crashed`, a new worker takes the
    remaining files, and what the others produced is kept. Workers die with the run: on
    SIGTERM, Ctrl-C or an error here they are stopped, and if this process is killed outright
    they stop themselves (a parent-death signal on Linux, a watch on the parent elsewhere).
    """
    from torchperf_lint.workers import WorkerPool, guarded, terminate_on_sigterm

    run: Run[Outcome] = Run()
    before = _SHARED
    _share(shared)
    try:
        with terminate_on_sigterm():
            if workers > 1 and len(jobs) >= MIN_FILES_FOR_POOL:
                pool = WorkerPool(function, min(workers, len(jobs)), partial(_share, shared))
                answers = pool.run(jobs)
            else:
                answers = [guarded(function, job) for job in jobs]
    finally:
        _share(before)
    for answer in answers:
        if isinstance(answer, InternalError):
            run.internal_errors.append(answer)
        elif isinstance(answer, FileError):
            run.crashed.append(answer)
        else:
            run.outcomes.append(answer)
    return run


def display_name(path: Path, cwd: Path) -> str:
    """How a file is named in the output: relative to the working directory when under it."""
    text, folder = str(path), str(cwd)
    # A run names every file of its project: a prefix is found faster than `relative_to`
    # compares parts, which still decides the rest (on Windows, a case that differs).
    if not folder.endswith(os.sep) and text.startswith(folder + os.sep):
        return text[len(folder) + 1 :]
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return text


def default_jobs() -> int:
    return os.cpu_count() or 1


def sorted_findings(
    results: Sequence[FileResult],
) -> tuple[list[Diagnostic], list[FileError]]:
    """All diagnostics and file errors of `results`, each sorted by (file, row, column)."""
    diagnostics = sorted((d for r in results for d in r.diagnostics), key=lambda d: d.sort_key)
    errors = sorted((r.error for r in results if r.error), key=lambda e: e.sort_key)
    return diagnostics, errors
