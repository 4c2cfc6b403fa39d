"""Inputs a hostile (or unlucky) checkout holds: each case of issue 12, reproduced as a user
would meet it, must give a clear diagnostic or be refused, never crash, hang, leak processes or
write where it must not."""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import EXECUTABLE, torchperf_lint, write_files

from torchperf_lint.config import resolve_selection
from torchperf_lint.diagnostics import FileError
from torchperf_lint.engine import LintSettings
from torchperf_lint.runner import FileJob, run_jobs

LOADER = """\
import torch
from torch.utils.data import DataLoader

loader = DataLoader(dataset, batch_size=32)
"""
FINDING = "loader.py:4:10: TPL101"
# Python rejects more than 200 nested brackets; LibCST's native parser crashes on ~1,500.
DEEP_BRACKETS = "import torch\nx = " + "(" * 2000 + "1" + ")" * 2000 + "\n"
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def concise(*args: str, cwd: Path, env: dict[str, str] | None = None):
    return torchperf_lint("--no-cache", "--output-format", "concise", *args, cwd=cwd, env=env)


def without_file_permissions(*command: str) -> list[str]:
    """`command` run so that file permissions bind it: as root, without the capabilities that
    bypass them (`setpriv`, util-linux)."""
    if IS_ROOT:
        return ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", "--", *command]
    return list(command)


def run_restricted(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        without_file_permissions(EXECUTABLE, "--no-cache", "--output-format", "concise", *args),
        cwd=cwd, capture_output=True, text=True, timeout=120, check=False,
    )


# 1. A crash while parsing one file is that file's E902; the run goes on.


def test_brackets_nested_deeper_than_python_allows_are_e902_and_the_rest_is_linted(tmp_path):
    write_files(tmp_path, {"deep.py": DEEP_BRACKETS, "loader.py": LOADER,
                           "a.py": LOADER, "b.py": LOADER})
    completed = concise("-j", "2", ".", cwd=tmp_path)
    assert completed.returncode == 1, completed.stderr
    assert "deep.py:2:205: E902 too deeply nested to parse (too many nested parentheses)" in (
        completed.stdout
    )
    assert FINDING in completed.stdout and completed.stderr == ""


def _crash_on_marked_files(job: FileJob) -> str:
    if "crash" in job.display_name:
        faulthandler.disable()  # pytest's, inherited: the crash is the point, not news
        os.kill(os.getpid(), signal.SIGSEGV)
    return job.display_name


@pytest.mark.skipif(not hasattr(signal, "SIGSEGV"), reason="POSIX signals")
def test_a_worker_that_dies_costs_only_its_file(tmp_path):
    settings = LintSettings(resolve_selection(["ALL"]))
    names = ["a.py", "crash1.py", "b.py", "c.py", "crash2.py", "d.py"]
    jobs = [FileJob(tmp_path / name, name, settings) for name in names]
    run = run_jobs(_crash_on_marked_files, jobs, workers=2)
    assert run.outcomes == ["a.py", "b.py", "c.py", "d.py"]
    assert run.crashed == [
        FileError(name, "the linter crashed on this file (killed by SIGSEGV); not linted")
        for name in ("crash1.py", "crash2.py")
    ]


# 7. Long expressions: bounded recursion, and Python's own limit reported promptly.


def test_long_expressions_python_compiles_are_linted_and_fixed(tmp_path):
    source = LOADER + "total = a" + " + 1" * 400 + "\n"
    write_files(tmp_path, {"loader.py": source})
    assert FINDING in concise(".", cwd=tmp_path).stdout
    fixed = concise("--fix", "--unsafe-fixes", ".", cwd=tmp_path)
    assert (fixed.returncode, fixed.stderr) == (0, "")
    assert "num_workers" in (tmp_path / "loader.py").read_text()


def test_an_expression_longer_than_python_compiles_is_e902_promptly(tmp_path):
    # Inside brackets, so no line is long: only the nesting gives it away.
    source = "import torch\nx = (a" + "\n + 1" * 50_000 + ")\n"
    write_files(tmp_path, {"long.py": source})
    completed = concise("long.py", cwd=tmp_path)
    assert completed.returncode == 1
    assert completed.stdout.startswith("long.py:1:1: E902 too deeply nested to parse")


# 8. Notebooks nested too deeply.


def test_a_deeply_nested_notebook_is_e902(tmp_path):
    write_files(tmp_path, {"deep.ipynb": "[" * 100_000 + "]" * 100_000})
    completed = concise(".", cwd=tmp_path)
    assert (completed.returncode, completed.stderr) == (1, "")
    assert completed.stdout.startswith(
        "deep.ipynb:1:1: E902 not a notebook: JSON nested too deeply\n"
    )


# 9, 10, 16. The cache: planted entries and links change nothing; markers are repaired.


def _outputs(tmp_path: Path, env: dict[str, str], *args: str):
    completed = torchperf_lint("--output-format", "json", *args, ".", cwd=tmp_path, env=env)
    return completed.returncode, completed.stdout, completed.stderr


def test_a_planted_cache_changes_nothing(tmp_path):
    project = tmp_path / "project"
    write_files(project, {"loader.py": LOADER})
    attacker = {"XDG_CACHE_HOME": str(tmp_path / "attacker")}
    user = {"XDG_CACHE_HOME": str(tmp_path / "user")}
    expected = _outputs(project, user, "--no-cache")
    # The attacker fills the cache with their own key, then makes every entry say "clean".
    _outputs(project, attacker)
    cache = project / ".torchperf_lint_cache"
    # The file's entry, its summary (`{"summary": {...}}`), the run's verdict
    # (`{"results": [[name, record], ...]}`), the program's answers
    # (`{"answers": {name: {question: answer}}}`) and the files' stamps
    # (`{"files": {path: [size, times..., digest]}}`).
    original = {entry: entry.read_bytes() for entry in cache.rglob("*.json")}
    assert len(original) == 5
    clean = {"diagnostics": [], "error": None}
    for record in (clean, {"results": [["loader.py", clean]]}, {"answers": {"loader.py": {}}}):
        forged = json.dumps(record).encode()
        for tag in (lambda entry: original[entry][:32], lambda entry: b"\0" * 32, lambda _: b""):
            for entry in original:
                entry.write_bytes(tag(entry) + forged)
            assert _outputs(project, user) == expected
    # Corrupt shapes signed with the user's own key are misses too.
    assert _outputs(project, user) == expected
    for entry in cache.rglob("*.json"):
        for shape in ("[" * 100_000, ('{"diagnostics": [["TPL101", "n", "m", [1, 1], [1, 2], null, 1, '
                      '"cell", null]], "error": null}'), '{"results": [["loader.py", 1]]}'):
            entry.write_bytes(entry.read_bytes()[:32] + shape.encode())
            assert _outputs(project, user) == expected


def test_a_planted_cache_symlink_is_not_followed(tmp_path):
    project = tmp_path / "project"
    target = tmp_path / "home"
    target.mkdir()
    write_files(project, {"loader.py": LOADER})
    env = {"XDG_CACHE_HOME": str(tmp_path / "user")}
    expected = _outputs(project, env, "--no-cache")
    (project / ".torchperf_lint_cache").symlink_to(target, target_is_directory=True)
    assert _outputs(project, env) == expected
    assert _outputs(project, env) == expected
    assert list(target.iterdir()) == []
    # A link further down, to the version's directory or the stamps', is not followed either.
    (project / ".torchperf_lint_cache").unlink()
    _outputs(project, env)
    directories = [p for p in (project / ".torchperf_lint_cache").iterdir() if p.is_dir()]
    assert len(directories) == 2
    for directory in directories:
        for entry in directory.rglob("*"):
            if entry.is_file():
                entry.unlink()
        for shard in directory.iterdir():
            shard.rmdir()
        directory.rmdir()
        directory.symlink_to(target, target_is_directory=True)
    assert _outputs(project, env) == expected
    assert list(target.iterdir()) == []


def test_the_cache_key_is_private_and_an_empty_marker_is_repaired(tmp_path):
    write_files(tmp_path / "project", {"loader.py": LOADER})
    env = {"XDG_CACHE_HOME": str(tmp_path / "user")}
    _outputs(tmp_path / "project", env)
    key = tmp_path / "user" / "torchperf-lint" / "key"
    assert key.stat().st_mode & 0o777 == 0o600 and key.stat().st_size == 32
    # What a full disk on the first run left: an empty tag.
    tag = tmp_path / "project" / ".torchperf_lint_cache" / "CACHEDIR.TAG"
    tag.write_bytes(b"")
    (tmp_path / "project" / "loader.py").write_text(LOADER + "\n")  # a miss: the cache writes
    _outputs(tmp_path / "project", env)
    assert tag.read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55\n")


# 11, 12. Configuration mistakes name the file; third-party .gitignore globs do not abort.


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"[tool]\ntorchperf-lint = 5\n", "pyproject.toml [tool.torchperf-lint]: must be a table"),
        (b"[[tool.torchperf-lint]]\nselect = []\n", "[tool.torchperf-lint]: must be a table"),
        (b"[tool.torchperf-lint]\nselect = ['\xff']\n", "pyproject.toml: invalid TOML"),
        (b"tool = 5\n", "pyproject.toml: `tool` must be a table"),
        (b"[tool.torchperf-lint]\nper-file-ignores = { '[z-a].py' = ['TPL101'] }\n",
         "per-file-ignores: invalid glob '[z-a].py': invalid range z-a"),
        (b"[tool.torchperf-lint]\nmax-file-size = -1\n",
         "max-file-size: expected a positive integer, got -1"),
    ],
)
def test_configuration_mistakes_are_errors_naming_the_file(tmp_path, content, message):
    write_files(tmp_path, {"pyproject.toml": content, "loader.py": LOADER})
    completed = concise(".", cwd=tmp_path)
    assert completed.returncode == 2
    assert completed.stderr.startswith(f"error: {tmp_path / 'pyproject.toml'}")
    assert message in completed.stderr and "internal error" not in completed.stderr


def test_gitignore_globs_git_accepts_never_abort_or_warn(tmp_path):
    write_files(tmp_path, {
        ".git/HEAD": "ref: refs/heads/main\n",
        ".gitignore": "[z-a]*.py\n[[:alpha:]]ignored.py\n[[:nope:]]\n[unclosed\n",
        "loader.py": LOADER,
        "aignored.py": LOADER,
        "1ignored.py": LOADER,
    })
    completed = concise(".", cwd=tmp_path)
    assert completed.stderr == ""
    files = sorted({line.split(":")[0] for line in completed.stdout.splitlines() if ".py:" in line})
    assert files == ["1ignored.py", "loader.py"]


# 13. File names that are not UTF-8.


@pytest.mark.skipif(sys.platform != "linux", reason="Linux file names are bytes")
def test_file_names_that_are_not_utf8_give_valid_utf8_output(tmp_path):
    name = os.fsencode(tmp_path) + b"/bad\xff.py"
    with open(name, "w") as stream:
        stream.write(LOADER)
    json_run = subprocess.run([EXECUTABLE, "--no-cache", "--output-format", "json", "."],
                              cwd=tmp_path, capture_output=True, check=False)
    (record,) = json.loads(json_run.stdout.decode("utf-8"))
    assert (json_run.returncode, record["filename"]) == (1, "bad\ufffd.py")
    sarif_run = subprocess.run([EXECUTABLE, "--no-cache", "--output-format", "sarif", "."],
                               cwd=tmp_path, capture_output=True, check=False)
    (result,) = json.loads(sarif_run.stdout.decode("utf-8"))["runs"][0]["results"]
    location = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert (sarif_run.returncode, location) == (1, "bad%FF.py")
    text_run = subprocess.run([EXECUTABLE, "--no-cache", "."], cwd=tmp_path,
                              capture_output=True, check=False)
    assert "bad\ufffd.py:4:10" in text_run.stdout.decode("utf-8")


# 14. A notebook saved with CRLF keeps CRLF.


def test_fixing_a_crlf_notebook_keeps_crlf(tmp_path):
    notebook = {
        "cells": [{"cell_type": "code", "metadata": {}, "outputs": [],
                   "execution_count": None,
                   "source": (LOADER + "batches = list(loader)\n").splitlines(keepends=True)}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }
    text = json.dumps(notebook, indent=1).replace("\n", "\r\n") + "\r\n"
    (tmp_path / "nb.ipynb").write_bytes(text.encode())
    completed = concise("--fix", "--unsafe-fixes", "nb.ipynb", cwd=tmp_path)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    data = (tmp_path / "nb.ipynb").read_bytes()
    assert b"num_workers" in data and b"\n" not in data.replace(b"\r\n", b"")


# 15, 17. A closed pipe, Ctrl-C.


def test_a_closed_pipe_ends_the_run_quietly(tmp_path):
    write_files(tmp_path, {f"loader{i}.py": LOADER for i in range(300)})
    process = subprocess.Popen([EXECUTABLE, "--no-cache", "-j", "1", "."], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.readline()
    process.stdout.close()
    stderr = process.stderr.read()
    assert (process.wait(timeout=120), stderr) == (0, b"")


def _wait_for_output(process: subprocess.Popen, path: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        if path.exists() and path.stat().st_size:
            return
        time.sleep(0.05)


def _large_tree(root: Path, files: int = 300) -> None:
    """A tree whose run lasts well over ten seconds on any machine this suite runs on: each
    file holds a thousand statements besides its finding."""
    body = "".join(f"value_{n} = {n}\n" for n in range(1000))
    write_files(root, {f"d{i % 10}/loader{i}.py": LOADER + body for i in range(files)})


def _wait_for_workers(group: int) -> None:
    """Until the run's worker processes are up: it is then surely in the middle of its files."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        listing = subprocess.run(["ps", "-eo", "pgid=,stat="], capture_output=True,
                                 text=True, check=True).stdout
        running = [line for line in listing.splitlines()
                   if line.split()[0] == str(group) and not line.split()[1].startswith("Z")]
        if len(running) >= 3:  # the main process and its two workers
            time.sleep(0.5)
            return
        time.sleep(0.05)


def test_ctrl_c_exits_130_and_stops_the_workers(tmp_path):
    _large_tree(tmp_path)
    # A terminal's foreground job gets Ctrl-C; a background job of a script (as CI runs the
    # suites side by side) inherits SIGINT ignored, and Python then keeps ignoring it: the
    # linter is started through `exec` with SIGINT's default restored.
    with_default_sigint = (
        "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
        "os.execvp(sys.argv[1], sys.argv[1:])"
    )
    process = subprocess.Popen([sys.executable, "-c", with_default_sigint, EXECUTABLE,
                                "--no-cache", "-j", "2", "."], cwd=tmp_path,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=True)
    _wait_for_workers(process.pid)
    os.killpg(process.pid, signal.SIGINT)  # as a terminal sends it: to the whole group
    code = process.wait(timeout=60)
    stderr = process.stderr.read()
    assert code == 130, stderr.decode(errors="replace")[-3000:]
    assert b"Traceback" not in stderr
    assert _live_processes(process.pid) == []


# 5, 16. Killing the main process: no process of ours left, no temporary file behind.


def _live_processes(group: int) -> list[str]:
    """Processes still running in the process group (zombies are dead, awaiting their reaper)."""
    deadline = time.monotonic() + 20
    while True:
        listing = subprocess.run(["ps", "-eo", "pgid=,stat=,pid="], capture_output=True,
                                 text=True, check=True).stdout
        alive = [line for line in listing.splitlines()
                 if line.split()[0] == str(group) and not line.split()[1].startswith("Z")]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGKILL])
def test_killing_a_fix_run_leaves_no_process_and_no_temporary_file(tmp_path, sent):
    _large_tree(tmp_path / "tree")
    progress = tmp_path / "progress.txt"
    with open(progress, "wb") as output:
        process = subprocess.Popen(
            [EXECUTABLE, "--no-cache", "--fix", "--unsafe-fixes", "--show-fixes", "-j", "2",
             "tree"],
            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=output, start_new_session=True,
        )
        _wait_for_workers(process.pid)
        process.send_signal(sent)
        code = process.wait(timeout=60)
    assert code == (143 if sent == signal.SIGTERM else -signal.SIGKILL)
    assert _live_processes(process.pid) == []
    assert [p for p in (tmp_path / "tree").rglob("*") if p.name.endswith(".tmp")] == []


def test_a_temporary_file_left_by_a_killed_writer_is_removed_by_the_next_fix(tmp_path):
    write_files(tmp_path, {"loader.py": LOADER})
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    stale = tmp_path / f".loader.py.{dead}.abc123.torchperf-lint.tmp"
    stale.write_text("half a file")
    assert concise("--fix", "--unsafe-fixes", ".", cwd=tmp_path).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["loader.py"]


# 3, 4. What --fix must not write.


def test_fix_refuses_a_symlink_to_a_file_outside_the_given_paths(tmp_path):
    write_files(tmp_path, {"outside/target.py": LOADER, "project/inside.py": LOADER})
    (tmp_path / "project" / "link.py").symlink_to(tmp_path / "outside" / "target.py")
    completed = concise("--fix", "--unsafe-fixes", "project", cwd=tmp_path)
    assert (tmp_path / "outside" / "target.py").read_text() == LOADER
    assert "num_workers" in (tmp_path / "project" / "inside.py").read_text()
    assert (
        f"project/link.py:1:1: E902 not fixed: a symbolic link to "
        f"{(tmp_path / 'outside' / 'target.py').resolve()}, outside the paths given"
    ) in completed.stdout
    assert completed.returncode == 1


def test_fix_keeps_hard_links_by_refusing_to_replace_the_file(tmp_path):
    write_files(tmp_path, {"loader.py": LOADER})
    os.link(tmp_path / "loader.py", tmp_path / "other.txt")
    completed = concise("--fix", "--unsafe-fixes", "loader.py", cwd=tmp_path)
    assert completed.stdout.startswith(
        "loader.py:1:1: E902 cannot write: the file has 2 hard links, which replacing it"
        " would break; not fixed"
    )
    assert (tmp_path / "loader.py").read_text() == LOADER
    assert os.path.samefile(tmp_path / "loader.py", tmp_path / "other.txt")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_fix_refuses_a_read_only_file(tmp_path):
    write_files(tmp_path, {"loader.py": LOADER})
    (tmp_path / "loader.py").chmod(0o444)
    completed = run_restricted("--fix", "--unsafe-fixes", "loader.py", cwd=tmp_path)
    assert completed.stdout.startswith(
        "loader.py:1:1: E902 cannot write: the file is read-only; not fixed"
    ), completed.stdout + completed.stderr
    assert (tmp_path / "loader.py").read_text() == LOADER


@pytest.mark.skipif(not IS_ROOT, reason="only root can give a file another owner")
def test_fix_keeps_the_owner_and_group_of_a_file(tmp_path):
    write_files(tmp_path, {"loader.py": LOADER})
    os.chown(tmp_path / "loader.py", 12345, 23456)
    assert concise("--fix", "--unsafe-fixes", "loader.py", cwd=tmp_path).returncode == 0
    status = (tmp_path / "loader.py").stat()
    assert (status.st_uid, status.st_gid) == (12345, 23456)
    assert "num_workers" in (tmp_path / "loader.py").read_text()


# 2. Directories that cannot be read.


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_an_unreadable_directory_is_e902_and_the_rest_is_linted(tmp_path):
    write_files(tmp_path, {"locked/loader.py": LOADER, "loader.py": LOADER})
    (tmp_path / "locked").chmod(0o000)
    try:
        completed = run_restricted(".", cwd=tmp_path)
    finally:
        (tmp_path / "locked").chmod(0o755)
    assert completed.returncode == 1, completed.stderr
    assert completed.stdout.splitlines()[:2] == [
        (f"{FINDING} `DataLoader` without `num_workers` loads batches in the training process;"
        " set `num_workers`"),
        "locked:1:1: E902 cannot read directory: Permission denied",
    ]


# 17. Memory, CR-only files, encodings.


def test_files_over_the_size_limits_are_reported_not_parsed(tmp_path):
    write_files(tmp_path, {
        "pyproject.toml": "[tool.torchperf-lint]\nmax-file-size = 200\nmax-line-length = 60\n",
        "big.py": LOADER + "#" * 200 + "\n",
        "wide.py": LOADER.replace("batch_size=32", "batch_size=32" + ", x=1" * 10),
    })
    completed = concise(".", cwd=tmp_path)
    assert completed.stdout.splitlines()[:2] == [
        "big.py:1:1: E902 too large to lint: 299 bytes (limit: `max-file-size = 200`)",
        ("wide.py:4:1: E902 too large to lint: line 4 has 93 characters"
        " (limit: `max-line-length = 60`)"),
    ]


def test_add_noqa_on_a_file_with_cr_line_endings(tmp_path):
    (tmp_path / "loader.py").write_bytes(LOADER.replace("\n", "\r").encode())
    added = torchperf_lint("--no-cache", "--add-noqa", ".", cwd=tmp_path)
    assert (added.returncode, added.stderr) == (0, "Added 1 noqa directive.\n")
    assert b"batch_size=32)  # noqa: TPL101\r" in (tmp_path / "loader.py").read_bytes()
    assert concise(".", cwd=tmp_path).returncode == 0


def test_a_utf16_declaration_on_a_utf8_file_is_e902(tmp_path):
    write_files(tmp_path, {"loader.py": "# coding: utf-16\n" + LOADER})
    completed = concise(".", cwd=tmp_path)
    assert completed.stdout.startswith(
        "loader.py:1:1: E902 cannot decode as utf-16: Python source encodings must be"
        " ASCII-compatible"
    )


def test_a_project_whose_top_folder_is_a_package_is_linted(tmp_path):
    # An `__init__.py` beside `setup.py` (mlcommons/algorithmic-efficiency): module names
    # start at the top folder, whose parent is itself; the linter once looked for the package
    # root above it forever.
    write_files(
        tmp_path,
        {
            "__init__.py": "",
            "setup.py": "from setuptools import setup\nsetup(name='project')\n",
            "engine.py": "import torch\n\n\ndef log_loss(loss):\n    print(loss.item())\n",
            "train.py": (
                "import torch\n\nfrom .engine import log_loss\n\n\n"
                "def train(model, loader, optimizer):\n    model.cuda()\n    for x in loader:\n"
                "        loss = model(x.cuda()).sum()\n        loss.backward()\n"
                "        optimizer.step()\n        log_loss(loss)\n"
            ),
        },
    )
    completed = concise(".", cwd=tmp_path)
    assert (completed.returncode, completed.stdout.splitlines()[0]) == (
        1,
        (
            "engine.py:5:11: TPL201 `.item()` on every training step makes the host wait for"
            " the GPU; accumulate on the device with `.detach()` and read it every N steps"
        ),
    )


def test_a_name_rebound_to_the_result_of_calling_it_is_linted(tmp_path):
    # TorchSSL's `dset = dset(root, train=True)`: what the call runs is what the name was
    # bound to before, which the linker once asked of the same call again, forever.
    write_files(
        tmp_path,
        {
            "data.py": (
                "import torch\n\n\ndef get_dset(dset, root):\n    dset = dset(root, train=True)\n"
                "    return torch.utils.data.DataLoader(dset)\n"
            ),
        },
    )
    completed = concise(".", cwd=tmp_path)
    assert (completed.returncode, completed.stderr, completed.stdout.splitlines()[0]) == (
        1,
        "",
        (
            "data.py:6:12: TPL101 `DataLoader` without `num_workers` loads batches in the"
            " training process; set `num_workers`"
        ),
    )
