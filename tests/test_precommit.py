"""The pre-commit hooks, end to end: pre-commit builds the hook's virtualenv from a clone of
this repository's HEAD (pip resolves the dependencies from the configured indexes, no network
needed where they are local) and runs it on a throw-away project."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_helpers import write_files

REPOSITORY = Path(__file__).resolve().parents[1]
PRE_COMMIT = shutil.which("pre-commit")

BAD_TRAINING = """import torch
from torch.utils.data import DataLoader

device = torch.device("cuda")
loader = DataLoader(dataset, batch_size=32, num_workers=4)
for inputs in loader:
    inputs = inputs.to(device)
"""
PINNED = BAD_TRAINING.replace("num_workers=4)", "num_workers=4, pin_memory=True)")
FIXED = PINNED.replace("inputs.to(device)", "inputs.to(device, non_blocking=True)")
NOTEBOOK = """{
 "cells": [
  {"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [],
   "source": ["%%time\\n", "import torch\\n", "model = torch.nn.Linear(2, 2).cuda()\\n",
              "torch.save(model, 'm.pt')\\n", "loader = torch.utils.data.DataLoader(ds)"]}
 ],
 "metadata": {},
 "nbformat": 4,
 "nbformat_minor": 5
}
"""

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def hook_repository(tmp_path_factory) -> Path:
    """A clone of HEAD: `try-repo` on the checkout itself would also take uncommitted work."""
    clone = tmp_path_factory.mktemp("hooks") / "torchperf-lint"
    subprocess.run(
        ["git", "clone", "--quiet", str(REPOSITORY), str(clone)], check=True, timeout=60
    )
    return clone


def try_repo(hook_repository: Path, project: Path, hook: str, *files: str):
    assert PRE_COMMIT, "pre-commit is installed with the test extra: pip install -e .[test]"
    environment = dict(os.environ, PRE_COMMIT_HOME=str(project.parent / "pre-commit-home"))
    environment.pop("NO_COLOR", None)
    return subprocess.run(
        [PRE_COMMIT, "try-repo", str(hook_repository), hook, "--files", *files],
        cwd=project,
        env=environment,
        capture_output=True,
        text=True,
        timeout=170,
        check=False,
    )


def new_project(root: Path, files: dict[str, str]) -> Path:
    project = root / "project"
    write_files(project, files)
    subprocess.run(["git", "init", "--quiet"], cwd=project, check=True)
    subprocess.run(["git", "add", "."], cwd=project, check=True)
    return project


def test_lint_hook_fails_on_a_bad_training_file_and_passes_once_fixed(hook_repository, tmp_path):
    project = new_project(tmp_path, {"train.py": BAD_TRAINING, "notes.ipynb": NOTEBOOK})
    failed = try_repo(hook_repository, project, "torchperf-lint", "train.py", "notes.ipynb")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "train.py:5:10: TPL102" in failed.stdout
    # Notebooks are handed to the hook (types_or: jupyter) and reported per cell.
    assert "notes.ipynb:cell 1:" in failed.stdout
    write_files(project, {"train.py": FIXED, "notes.ipynb": NOTEBOOK.replace("ds)", "ds, 4)")})
    passed = try_repo(hook_repository, project, "torchperf-lint", "train.py")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "torchperf-lint" in passed.stdout and "Passed" in passed.stdout


def test_fix_hook_rewrites_the_file_then_passes(hook_repository, tmp_path):
    project = new_project(tmp_path, {"train.py": PINNED})
    fixed = try_repo(hook_repository, project, "torchperf-lint-fix", "train.py")
    # pre-commit fails a hook that changed files, so the user sees and stages the fix.
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr
    assert "files were modified by this hook" in fixed.stdout
    assert (project / "train.py").read_text() == FIXED
    again = try_repo(hook_repository, project, "torchperf-lint-fix", "train.py")
    assert again.returncode == 0, again.stdout + again.stderr


def test_force_exclude_applies_the_projects_excludes_to_named_files(hook_repository, tmp_path):
    project = new_project(
        tmp_path,
        {
            "vendored/train.py": BAD_TRAINING,
            "pyproject.toml": '[tool.torchperf-lint]\nextend-exclude = ["vendored"]\n',
        },
    )
    completed = try_repo(hook_repository, project, "torchperf-lint", "vendored/train.py")
    assert completed.returncode == 0, completed.stdout + completed.stderr
