"""Process trees and scratch folders of `verify`: nothing a run starts outlives it.

`verify` starts each run under a supervisor, this module run as a program:
`python -m torchperf_lint.verify.processes PARENT_PID COMMAND...`. On Linux the supervisor

- is a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`): whatever the run starts stays among
  its descendants, even a process that calls `setsid` and whose parent exits (orphans are
  re-parented to the supervisor instead of to init), so /proc finds every one of them;
- gets SIGTERM when `verify` dies, SIGKILL included (`prctl(PR_SET_PDEATHSIG)`), and its
  command gets SIGKILL when the supervisor dies;
- kills every descendant when the command ends, when it is told to stop (SIGTERM, SIGINT,
  SIGHUP: `verify` timing out or being stopped) and when `verify` dies. In that last case it
  also removes the scratch folders that `verify` leaves behind.

It waits in `waitpid`, so a signal reaches it at once, whereas the training process may sit in a
C call (a collective waiting for a hung rank) where Python runs no signal handler.

Scratch folders are `torchperf-verify-<pid>-*` in the temporary directory, with an `owner` file
naming the process that made them (pid and start time, so a reused pid is not mistaken for
it). Any folder whose owner is gone is removed by the next supervisor that outlives its parent
and by the next `verify` (`remove_abandoned_scratch`).

Elsewhere than Linux there is neither subreaper nor /proc: the command runs in its own process
group, which is killed as a whole (a process that leaves the group escapes).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRATCH_PREFIX = "torchperf-verify-"
OWNER_FILE = "owner"
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
ON_LINUX = sys.platform.startswith("linux")
# prctl(2) options, from <linux/prctl.h>.
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
# How long the supervisor keeps killing: a process in uninterruptible sleep dies only once its
# system call returns.
KILL_PATIENCE_S = 10.0


class Stopped(BaseException):
    """A stop signal arrived: unwind, then clean up."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum: int, frame: object) -> None:
    raise Stopped(signum)


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


def die_with_parent(signum: int = signal.SIGKILL) -> None:
    """Have the kernel send `signum` to this process when its parent dies (Linux only). For a
    `preexec_fn` or the first thing a child does."""
    if ON_LINUX:
        _prctl(PR_SET_PDEATHSIG, signum)


# Process identity and descendants.


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat after the command name (which may hold spaces and parentheses): the
    state is field 0, the parent pid field 1, the start time field 19."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()


def process_identity(pid: int) -> str | None:
    """`pid` with its start time (Linux), or `pid` alone while it exists; None when gone."""
    if ON_LINUX:
        fields = _stat_fields(pid)
        return None if fields is None or fields[0] == "Z" else f"{pid} {fields[19]}"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # it exists, under another user
    return str(pid)


def descendants(root: int) -> list[int]:
    """Every process below `root` (zombies included), from /proc; [] where there is none."""
    children: dict[int, list[int]] = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                fields = _stat_fields(int(entry.name))
                if fields is not None:
                    children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, frontier = [], [root]
    while frontier:
        below = children.get(frontier.pop(), [])
        found.extend(below)
        frontier.extend(below)
    return found


def _is_zombie(pid: int) -> bool:
    fields = _stat_fields(pid)
    return fields is None or fields[0] == "Z"


def _reap_children() -> bool:
    """Reap every child that has ended; whether any child is left."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def kill_descendants(group: int | None = None) -> None:
    """SIGKILL every descendant of this process, and the process group `group`, until none is
    left. Children of killed processes are re-parented to this subreaper and killed in turn."""
    if group is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)
    deadline = time.monotonic() + KILL_PATIENCE_S
    while time.monotonic() < deadline:
        below = descendants(os.getpid())
        for pid in below:
            if not _is_zombie(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if not _reap_children() and not below:
            return
        time.sleep(0.002)  # for the killed to die and their zombie children to be re-parented


# Scratch folders.


def make_scratch_folder() -> Path:
    """A new scratch folder, owned (in its `owner` file) by this process."""
    folder = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
    (folder / OWNER_FILE).write_text(process_identity(os.getpid()) or "", encoding="utf-8")
    return folder


def remove_abandoned_scratch() -> None:
    """Remove this user's scratch folders whose owner process is gone. A folder without an
    owner file yet (being made right now) is left alone."""
    for folder in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*"):
        try:
            if folder.is_symlink() or folder.lstat().st_uid != os.getuid():
                continue
            owner = (folder / OWNER_FILE).read_text(encoding="utf-8")
        except OSError:
            continue
        pid = owner.split()[0] if owner.split() else ""
        if pid.isdigit() and process_identity(int(pid)) != owner:
            shutil.rmtree(folder, ignore_errors=True)


# The supervisor.


def supervised(command: list[str]) -> list[str]:
    """The command line that runs `command` under a supervisor whose parent is this process."""
    return [sys.executable, "-m", __name__, str(os.getpid()), *command]


def supervise(parent: int, command: list[str]) -> int:
    """Run `command`, kill every process it left, and return the exit status to end with
    (negative: the signal that ended it)."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, _raise_stopped)
    child = None
    try:
        if ON_LINUX:
            _prctl(PR_SET_CHILD_SUBREAPER, 1)
            die_with_parent(signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before the death signal was set
            raise Stopped(signal.SIGTERM)
        # The supervisor runs no thread, so a `preexec_fn` is safe here.
        child = subprocess.Popen(
            command,
            start_new_session=True,
            preexec_fn=die_with_parent,  # noqa: PLW1509
        )
        status = _wait_for(child.pid)
    except Stopped as stop:
        status = 128 + stop.signum
    finally:
        for signum in STOP_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)  # a second stop must not cut the clean-up short
        kill_descendants(child.pid if child else None)
    if os.getppid() != parent:
        remove_abandoned_scratch()
    return status


def _wait_for(pid: int) -> int:
    """Reap children (orphans re-parented here too) until `pid` ends; its exit status."""
    while True:
        reaped, status = os.waitpid(-1, 0)
        if reaped == pid:
            return os.waitstatus_to_exitcode(status)


def _exit_like(status: int) -> None:
    if status < 0:  # end by the same signal, so the parent sees what the command saw
        if -status not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    os._exit(status if status >= 0 else 128 - status)


if __name__ == "__main__":
    _exit_like(supervise(int(sys.argv[1]), sys.argv[2:]))
