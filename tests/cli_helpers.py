"""Run the installed `torchperf-lint` command as a user would, in a project of test files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

# The console script of the interpreter running the tests, even when its virtualenv is not on
# PATH (CI runs the suite under several Pythons).
EXECUTABLE = shutil.which("torchperf-lint", path=os.path.dirname(sys.executable)) or shutil.which(
    "torchperf-lint"
)


def torchperf_lint(
    *args: str, cwd: Path, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The console script's exit code, stdout and stderr (stdout is not a terminal)."""
    assert EXECUTABLE, "the package must be installed: pip install -e ."
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("NO_COLOR", "FORCE_COLOR", "CI_PROJECT_DIR")
    }
    environment.update(env or {})
    completed = subprocess.run(
        [EXECUTABLE, *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        env=environment,
        timeout=120,
        check=False,
    )
    return subprocess.CompletedProcess(
        completed.args,
        completed.returncode,
        completed.stdout.decode("utf-8"),
        completed.stderr.decode("utf-8"),
    )


def write_files(root: Path, files: dict[str, str | bytes]) -> None:
    """Create `files` (relative path → text or bytes) under `root`."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
