"""`verify` leaves nothing behind: no process (daemons that call `setsid` included) and no
scratch folder, whether a run ends, times out, hangs on one rank of a distributed job, or
`verify` itself is stopped with SIGTERM or killed with SIGKILL.

Every process a test starts carries a tag in its environment, which its descendants inherit,
so "no process of ours is left" is a scan of /proc for the tag."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from cli_helpers import EXECUTABLE

from torchperf_lint.verify.harness import Job
from torchperf_lint.verify.processes import (
    SCRATCH_PREFIX,
    process_identity,
    remove_abandoned_scratch,
)
from torchperf_lint.verify.runner import run_job

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the guarantees rely on Linux's prctl and /proc"
)

TAG_VARIABLE = "TORCHPERF_VERIFY_TEST_TAG"

# Starts two daemons that escape the process group and the session: one with `setsid`, one by
# a double fork (its parent exits at once, so it is orphaned), writes their pids next to the
# script, then trains on (the harness stops it after warmup + steps) or, with `hang` as its
# argument, sleeps without ever stepping.
SPAWNING_SCRIPT = textwrap.dedent(
    """\
    import os
    import subprocess
    import sys
    import time
    from pathlib import Path

    import torch

    sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
    setsid = subprocess.Popen(sleeper, start_new_session=True)
    if os.fork() == 0:
        os.setsid()
        orphan = subprocess.Popen(sleeper)
        # Written whole, then renamed: the parent never reads a half-written file.
        Path("orphan.tmp").write_text(str(orphan.pid))
        os.replace("orphan.tmp", "orphan.pid")
        os._exit(0)
    while not Path("orphan.pid").exists():
        time.sleep(0.01)
    Path("daemons.pid").write_text(f"{setsid.pid} {Path('orphan.pid').read_text()}")
    if sys.argv[1:] == ["hang"]:
        time.sleep(600)
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(1000):
        model(torch.ones(1, 2)).sum().backward()
        optimizer.step()
    """
)

# Rank 1 never reaches the DDP constructor, whose broadcast rank 0 then waits in (inside a C
# call, where Python runs no signal handler).
HANGING_RANK_SCRIPT = textwrap.dedent(
    """\
    import time
    from pathlib import Path

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("gloo")
    if dist.get_rank() == 1:
        Path("rank1.hanging").write_text("")
        time.sleep(600)
    model = DistributedDataParallel(torch.nn.Linear(2, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(1000):
        model(torch.ones(1, 2)).sum().backward()
        optimizer.step()
    """
)


@pytest.fixture
def tag(monkeypatch: pytest.MonkeyPatch) -> str:
    value = uuid.uuid4().hex
    monkeypatch.setenv(TAG_VARIABLE, value)
    return value


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary directory of the test's own, where `verify` makes its scratch folders."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))  # for the processes the test starts
    monkeypatch.setattr(tempfile, "tempdir", str(folder))  # for this one
    return folder


def tagged_processes(tag: str) -> list[int]:
    """The living processes whose environment holds `tag`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environment = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if f"{TAG_VARIABLE}={tag}".encode() in environment.split(b"\0") and state != "Z":
            found.append(int(entry.name))
    return found


def scratch_folders(folder: Path) -> list[str]:
    """`verify`'s scratch folders in `folder` (PyTorch keeps caches of its own there too)."""
    return sorted(path.name for path in folder.glob(f"{SCRATCH_PREFIX}*"))


def eventually(condition, within_s: float = 15.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def wait_for_file(path: Path, within_s: float = 60.0) -> None:
    assert eventually(path.exists, within_s), f"{path.name} never appeared"


def start_verify(project: Path, *args: str) -> subprocess.Popen:
    assert EXECUTABLE, "the package must be installed: pip install -e ."
    return subprocess.Popen(
        [EXECUTABLE, "verify", *args],
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.torch
def test_a_run_leaves_no_daemon_behind(tmp_path: Path, tag: str, scratch: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SPAWNING_SCRIPT, encoding="utf-8")
    outcome = run_job(Job(str(script), str(script), "timing", 1, 2), 60, cwd=str(tmp_path))
    assert outcome.status == "ok", outcome.stderr_tail
    daemons = [int(pid) for pid in (tmp_path / "daemons.pid").read_text().split()]
    assert len(daemons) == 2
    assert tagged_processes(tag) == []
    assert scratch_folders(scratch) == []


@pytest.mark.torch
def test_a_run_killed_at_the_timeout_leaves_no_daemon_behind(
    tmp_path: Path, tag: str, scratch: Path
) -> None:
    script = tmp_path / "train.py"
    script.write_text(SPAWNING_SCRIPT, encoding="utf-8")
    job = Job(str(script), str(script), "timing", 1, 2, ("hang",))
    outcome = run_job(job, 8, cwd=str(tmp_path))
    assert outcome.status == "timed-out", outcome.stderr_tail
    assert (tmp_path / "daemons.pid").exists()
    assert tagged_processes(tag) == []
    assert scratch_folders(scratch) == []


@pytest.mark.torch
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["TERM", "KILL"])
def test_stopping_verify_leaves_no_process_and_no_scratch_folder(
    tmp_path: Path, tag: str, scratch: Path, stop: signal.Signals
) -> None:
    (tmp_path / "train.py").write_text(SPAWNING_SCRIPT, encoding="utf-8")
    verify = start_verify(tmp_path, "train.py", "--timeout", "120", "--", "hang")
    try:
        wait_for_file(tmp_path / "daemons.pid")
        assert any(scratch.glob(f"{SCRATCH_PREFIX}*"))
        verify.send_signal(stop)
        verify.communicate(timeout=30)
    finally:
        verify.kill()
        verify.wait()
    assert verify.returncode == (
        128 + signal.SIGTERM if stop == signal.SIGTERM else -signal.SIGKILL
    )
    # After SIGKILL the run's supervisor cleans up once the kernel tells it that verify died.
    assert eventually(lambda: tagged_processes(tag) == [])
    assert eventually(lambda: scratch_folders(scratch) == [])


def test_only_abandoned_scratch_folders_are_removed(scratch: Path) -> None:
    # Whose owner is gone (no process has that pid), owned by a living process, being made
    # (no owner file yet). `verify` and an orphaned supervisor both call this.
    abandoned, living, unowned = (scratch / f"{SCRATCH_PREFIX}{name}" for name in "alu")
    for folder in (abandoned, living, unowned):
        (folder / "1").mkdir(parents=True)
    (abandoned / "owner").write_text("4194304 1")
    (living / "owner").write_text(process_identity(os.getpid()))
    remove_abandoned_scratch()
    assert scratch_folders(scratch) == sorted([living.name, unowned.name])


@pytest.mark.torch
@pytest.mark.slow
def test_a_rank_that_hangs_is_killed_at_the_timeout_with_every_process(
    tmp_path: Path, tag: str, scratch: Path
) -> None:
    (tmp_path / "train.py").write_text(HANGING_RANK_SCRIPT, encoding="utf-8")
    verify = start_verify(tmp_path, "train.py", "--nproc-per-node", "2", "--timeout", "30")
    stdout, stderr = verify.communicate(timeout=120)
    assert verify.returncode == 2, stdout + stderr
    assert (tmp_path / "rank1.hanging").exists()
    assert "as written, census run: killed at the time limit before reaching its steps" in stdout
    assert tagged_processes(tag) == []
    assert scratch_folders(scratch) == []
