"""The pre-commit hooks, end to end, configured with the README's snippet as written: only its
`repo:` URL is replaced by a clone of this repository's HEAD, in which the test creates the
snippet's `rev:` tag (the README tells users to pin a release tag or a commit SHA). pre-commit
builds the hook's virtualenv once for the module (pip resolves the dependencies from the
configured indexes) and runs the hooks on throw-away projects."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import write_files

REPOSITORY = Path(__file__).resolve().parents[1]
PRE_COMMIT = shutil.which("pre-commit", path=os.path.dirname(sys.executable)) or shutil.which(
    "pre-commit"
)
SNIPPET = re.compile(r"## pre-commit\n\n```yaml\n(?P<config>.*?)```", re.DOTALL)
URL = "https://github.com/torchperf-lint/torchperf-lint"

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
              "torch.save(model, 'm.pt')\\n", "loader = torch.utils.data.DataLoader(ds)\\n",
              "batches = list(loader)"]}
 ],
 "metadata": {},
 "nbformat": 4,
 "nbformat_minor": 5
}
"""

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (REPOSITORY / ".git").exists(), reason="needs a git checkout to clone the hooks from"
    ),
]


def readme_config() -> str:
    """The README's pre-commit snippet, exactly as written."""
    match = SNIPPET.search((REPOSITORY / "README.md").read_text(encoding="utf-8"))
    assert match, "the README shows a .pre-commit-config.yaml"
    return match.group("config")


@pytest.fixture(scope="module")
def hooks(tmp_path_factory) -> dict[str, str]:
    """A clone of HEAD tagged with the snippet's `rev:`, and the snippet pointing at it, with
    the fix hook enabled (as its comment says) or not; one pre-commit cache for the module."""
    root = tmp_path_factory.mktemp("hooks")
    clone = root / "torchperf-lint"
    subprocess.run(["git", "clone", "--quiet", str(REPOSITORY), str(clone)], check=True, timeout=60)
    config = readme_config()
    (rev,) = re.findall(r"^\s*rev: (\S+)", config, re.MULTILINE)
    # --force: once the release is tagged, the clone has the tag already; here it names HEAD.
    subprocess.run(["git", "-C", str(clone), "tag", "--force", rev], check=True, timeout=60)
    assert config.count(URL) == 1
    lint = config.replace(URL, str(clone))
    return {
        "home": str(root / "pre-commit-home"),
        "lint": lint,
        "fix": lint.replace("# - id: torchperf-lint-fix", "- id: torchperf-lint-fix"),
    }


def run_hook(hooks: dict[str, str], project: Path, hook: str, *files: str):
    assert PRE_COMMIT, "pre-commit is installed with the test extra: pip install -e .[test]"
    config = hooks["fix"] if hook == "torchperf-lint-fix" else hooks["lint"]
    (project / ".pre-commit-config.yaml").write_text(config, encoding="utf-8")
    environment = dict(os.environ, PRE_COMMIT_HOME=hooks["home"])
    environment.pop("NO_COLOR", None)
    return subprocess.run(
        [PRE_COMMIT, "run", hook, "--files", *files],
        cwd=project,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def new_project(root: Path, files: dict[str, str]) -> Path:
    project = root / "project"
    write_files(project, files)
    subprocess.run(["git", "init", "--quiet"], cwd=project, check=True)
    subprocess.run(["git", "add", "."], cwd=project, check=True)
    return project


def test_lint_hook_fails_on_a_bad_training_file_and_passes_once_fixed(hooks, tmp_path):
    project = new_project(tmp_path, {"train.py": BAD_TRAINING, "notes.ipynb": NOTEBOOK})
    failed = run_hook(hooks, project, "torchperf-lint", "train.py", "notes.ipynb")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "train.py:5:10: TPL102" in failed.stdout
    # Notebooks are handed to the hook (types_or: jupyter) and reported per cell.
    assert "notes.ipynb:cell 1:" in failed.stdout
    write_files(project, {"train.py": FIXED, "notes.ipynb": NOTEBOOK.replace("ds)", "ds, 4)")})
    passed = run_hook(hooks, project, "torchperf-lint", "train.py")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "torchperf-lint" in passed.stdout and "Passed" in passed.stdout


def test_fix_hook_rewrites_the_file_then_passes(hooks, tmp_path):
    project = new_project(tmp_path, {"train.py": PINNED})
    fixed = run_hook(hooks, project, "torchperf-lint-fix", "train.py")
    # pre-commit fails a hook that changed files, so the user sees and stages the fix.
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr
    assert "files were modified by this hook" in fixed.stdout
    assert (project / "train.py").read_text() == FIXED
    again = run_hook(hooks, project, "torchperf-lint-fix", "train.py")
    assert again.returncode == 0, again.stdout + again.stderr


def test_fix_hook_passes_when_only_findings_without_a_fix_remain(hooks, tmp_path):
    # `.item()` on every step (TPL201) has no fix: --fix-only changes nothing and passes.
    unfixable = FIXED + (
        "    loss = inputs.sum()\n    loss.backward()\n    optimizer.step()\n    print(loss.item())\n"
    )
    project = new_project(tmp_path, {"train.py": unfixable})
    lint = run_hook(hooks, project, "torchperf-lint", "train.py")
    assert lint.returncode == 1 and "TPL201" in lint.stdout, lint.stdout + lint.stderr
    fix = run_hook(hooks, project, "torchperf-lint-fix", "train.py")
    assert fix.returncode == 0, fix.stdout + fix.stderr
    assert (project / "train.py").read_text() == unfixable


def test_force_exclude_applies_the_projects_excludes_to_named_files(hooks, tmp_path):
    project = new_project(
        tmp_path,
        {
            "vendored/train.py": BAD_TRAINING,
            "pyproject.toml": '[tool.torchperf-lint]\nextend-exclude = ["vendored"]\n',
        },
    )
    completed = run_hook(hooks, project, "torchperf-lint", "vendored/train.py")
    assert completed.returncode == 0, completed.stdout + completed.stderr
