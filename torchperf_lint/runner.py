"""Lint (or fix) many files, in parallel when it pays, with output that does not depend on it.

Each file is one job carrying its own settings (its nearest configuration). A job that raises
is an internal error of the linter: it is recorded, the other files are still linted, and the
command exits 2.
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
from torchperf_lint.engine import LintSettings, SourceError, lint_bytes, read_source

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


def lint_one(
    path: Path, display_name: str, settings: LintSettings, data: bytes | None = None
) -> FileResult:
    """Lint one file (its `data` when given, as for stdin): the one place that dispatches on
    the kind of file."""
    if data is None:
        try:
            data = read_source(path, settings.limits)
        except OSError as error:
            return FileResult(display_name, error=FileError.unreadable(display_name, error))
        except SourceError as error:
            return FileResult(display_name, error=FileError(display_name, error.reason))
    if path.suffix == ".ipynb":
        from torchperf_lint.notebooks import lint_notebook

        return lint_notebook(data, display_name, settings)
    return lint_bytes(data, display_name, settings)


def lint_job(job: FileJob) -> FileResult:
    if job.cache_dir is not None:
        from torchperf_lint.cache import Cache, lint_cached

        return lint_cached(Cache(job.cache_dir), job.path, job.display_name, job.settings)
    return lint_one(job.path, job.display_name, job.settings)


def run_jobs(
    function: Callable[[FileJob], Outcome], jobs: Sequence[FileJob], workers: int
) -> Run[Outcome]:
    """`function` applied to every job, in a process pool when `workers` > 1 and there are
    enough files; outcomes come back in job order either way."""
    run: Run[Outcome] = Run()
    tasks = [(function, job) for job in jobs]
    if workers > 1 and len(jobs) >= MIN_FILES_FOR_POOL:
        workers = min(workers, len(jobs))
        # File sizes vary by orders of magnitude: the largest files go first and chunks stay
        # small, so no worker is left with a big file while the other cores idle.
        order = sorted(range(len(jobs)), key=lambda position: -_size(jobs[position].path))
        chunksize = max(1, min(MAX_CHUNK, len(jobs) // (workers * 4)))
        with ProcessPoolExecutor(max_workers=workers) as pool:
            done = pool.map(_guarded, [tasks[position] for position in order], chunksize=chunksize)
            by_position = dict(zip(order, done))
        answers = [by_position[position] for position in range(len(jobs))]
    else:
        answers = [_guarded(task) for task in tasks]
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
