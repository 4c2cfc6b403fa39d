"""Worker processes for `runner.run_jobs`: one job at a time each, so a worker that dies is
known to have died on exactly one file; and what a job that raises becomes.

Imported only when jobs run: a run whose verdict is cached starts no worker and needs neither
signals nor tracebacks.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from torchperf_lint.diagnostics import FileError
from torchperf_lint.runner import FileJob, InternalError

if TYPE_CHECKING:
    import multiprocessing
    from multiprocessing.connection import Connection

Outcome = TypeVar("Outcome")


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def guarded(function: Callable[[FileJob], Outcome], job: FileJob) -> Outcome | InternalError | FileError:
    """`function(job)`, or the `InternalError` it raised, or the `FileError` of a file that
    exhausted memory."""
    try:
        return function(job)
    except MemoryError:
        return FileError(job.display_name, "ran out of memory while linting; not linted")
    except Exception as error:  # noqa: BLE001 - one file's crash must not stop the run
        frame = traceback.extract_tb(error.__traceback__)[-1]
        where = f"{Path(frame.filename).name}:{frame.lineno}"
        return InternalError(job.display_name, f"{type(error).__name__}: {error} (at {where})")


# The exit status of a process ended by SIGTERM, as a shell reports it.
EXIT_TERMINATED = 128 + signal.SIGTERM


def _exit_on_sigterm(signum: int, frame: object) -> None:
    # An exception, not an immediate exit: `finally` blocks run, so a temporary file being
    # written is removed and workers are stopped.
    raise SystemExit(EXIT_TERMINATED)


@contextmanager
def terminate_on_sigterm() -> Iterator[None]:
    """SIGTERM raises `SystemExit(EXIT_TERMINATED)` in the main thread while this lasts."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@dataclass
class _Worker:
    process: multiprocessing.process.BaseProcess
    connection: Connection
    # The position of the job it is working on; None while idle.
    position: int | None = None


class WorkerPool:
    """Worker processes fed one job at a time, so a worker that dies is known to have died on
    exactly one file. Each worker calls `setup` once, before its first job (`run_jobs` gives
    it what the jobs share)."""

    def __init__(
        self, function: Callable[[FileJob], Outcome], size: int, setup: Callable[[], None]
    ) -> None:
        self.function = function
        self.size = size
        self.setup = setup
        import multiprocessing

        self.context = multiprocessing.get_context()
        self.workers: list[_Worker] = []

    def run(self, jobs: Sequence[FileJob]) -> list[Outcome | InternalError | FileError]:
        from multiprocessing.connection import wait

        # File sizes vary by orders of magnitude: the largest files go first, so no worker is
        # left with a big file at the end while the other cores idle.
        pending = sorted(range(len(jobs)), key=lambda position: -_size(jobs[position].path))
        pending.reverse()  # popped from the end
        answers: dict[int, Outcome | InternalError | FileError] = {}
        try:
            for _ in range(self.size):
                self.workers.append(self._start())
            while len(answers) < len(jobs):
                for worker in self.workers:
                    if worker.position is None and pending:
                        worker.position = pending.pop()
                        worker.connection.send(jobs[worker.position])
                busy = [worker for worker in self.workers if worker.position is not None]
                ready = set(wait([w.connection for w in busy] + [w.process.sentinel for w in busy]))
                for worker in busy:
                    if worker.connection not in ready and worker.process.sentinel not in ready:
                        continue
                    position = worker.position
                    try:
                        answers[position] = worker.connection.recv()
                        worker.position = None
                    except (EOFError, OSError):
                        answers[position] = self._crashed(worker, jobs[position])
                        self.workers.remove(worker)
                        worker.process.join()
                        if pending:
                            self.workers.append(self._start())
        finally:
            self._stop()
        return [answers[position] for position in range(len(jobs))]

    def _start(self) -> _Worker:
        ours, theirs = self.context.Pipe()
        process = self.context.Process(
            target=_work,
            args=(theirs, self.function, self.setup),
            daemon=True,
            name="torchperf-lint worker",
        )
        process.start()
        theirs.close()
        return _Worker(process, ours)

    def _crashed(self, worker: _Worker, job: FileJob) -> FileError:
        worker.process.join(timeout=5)
        code = worker.process.exitcode
        if code is not None and code < 0:
            try:
                how = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
        else:
            how = f"exit status {code}"
        return FileError(job.display_name, f"the linter crashed on this file ({how}); not linted")

    def _stop(self) -> None:
        """Idle workers are told to finish; busy ones (an interrupted run) are terminated, and
        get a few seconds to remove what they were writing before they are killed."""
        for worker in self.workers:
            if worker.position is None:
                with suppress(OSError):
                    worker.connection.send(None)
            elif worker.process.is_alive():
                with suppress(OSError):
                    worker.process.terminate()
        deadline = time.monotonic() + 5
        for worker in self.workers:
            worker.process.join(timeout=max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.connection.close()
        self.workers = []


def _work(
    connection: Connection, function: Callable[[FileJob], Outcome], setup: Callable[[], None]
) -> None:
    """A worker's life: jobs in, answers out, until told to stop or its parent is gone."""
    _die_with_parent()
    setup()
    # Ctrl-C reaches every process of the terminal's group; the parent decides what stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    while True:
        try:
            job = connection.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        answer = guarded(function, job)
        try:
            connection.send(answer)
        except (EOFError, OSError):
            return
        except Exception as error:  # noqa: BLE001 - an answer that cannot be sent back
            connection.send(InternalError(job.display_name, f"{type(error).__name__}: {error}"))


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Have this process receive SIGTERM when its parent dies (even by SIGKILL), so no worker
    goes on fixing files, or holds the caller's output open, for a run that is over."""
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        except (OSError, AttributeError):
            _watch_parent(parent)
    else:
        _watch_parent(parent)
    if os.getppid() != parent or parent == 1:
        # The parent died before the signal was asked for.
        os.kill(os.getpid(), signal.SIGTERM)


def _watch_parent(parent: int) -> None:
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, daemon=True, name="parent watch").start()
