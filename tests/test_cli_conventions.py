"""The conventions Ruff users and their tools rely on: `--fix-only`, `--quiet`/`--silent`,
`--output-file`, colour flags and `FORCE_COLOR`/`NO_COLOR`, `--show-settings`, `--show-files`,
stdin for notebooks and `--force-exclude`, `--add-noqa` on notebooks, `.git/info/exclude`."""

from __future__ import annotations

import json
import subprocess

from cli_helpers import torchperf_lint, write_files

# TPL105 (a safe fix) on every iteration of a loop over a loader.
MOVED_TENSOR = "import torch\n\nfor x in loader: x = torch.zeros(3).cuda()\n"
# TPL101 (no safe fix) at 6:12.
LOADER = (
    "import torch\n"
    "from torch.utils.data import DataLoader\n"
    "\n"
    "\n"
    "def make_loader(dataset):\n"
    "    return DataLoader(dataset, batch_size=32)\n"
)
FOUND = "Found 1 error.\nNo errors would be fixed (1 fix available with --unsafe-fixes).\n"
NOTEBOOK = {
    "cells": [
        {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": [
                "%matplotlib inline\n", "import torch\n", "for x in loader: x = torch.zeros(3).cuda()"
            ],
        },
        {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": "loader = torch.utils.data.DataLoader(dataset)",
        },
    ],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}
NOTEBOOK_TEXT = json.dumps(NOTEBOOK, indent=1) + "\n"


def test_fix_only_fixes_and_neither_reports_nor_fails_on_what_remains(tmp_path):
    write_files(tmp_path, {"moved.py": MOVED_TENSOR, "loader.py": LOADER})
    result = torchperf_lint("--no-cache", "--fix-only", ".", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "Fixed 1 error.\n", "")
    assert (tmp_path / "moved.py").read_text() == (
        'import torch\n\nfor x in loader: x = torch.zeros(3, device="cuda")\n'
    )
    again = torchperf_lint("--no-cache", "--fix-only", ".", cwd=tmp_path)
    assert (again.returncode, again.stdout) == (0, "")
    failing = torchperf_lint(
        "--no-cache", "--fix-only", "--exit-non-zero-on-fix", "moved.py", cwd=tmp_path
    )
    assert failing.returncode == 0  # Nothing left to fix.


def test_fix_only_still_fails_on_a_file_it_cannot_read(tmp_path):
    write_files(tmp_path, {"broken.py": "import torch\nx = 1 1\n"})
    result = torchperf_lint("--no-cache", "--fix-only", "broken.py", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("error: broken.py: syntax error")


def test_quiet_prints_only_the_findings_and_silent_nothing(tmp_path):
    write_files(tmp_path, {"loader.py": LOADER})
    normal = torchperf_lint("--no-cache", "--output-format", "concise", "loader.py", cwd=tmp_path)
    assert normal.stdout.endswith(FOUND)
    quiet = torchperf_lint(
        "--no-cache", "--output-format", "concise", "-q", "loader.py", cwd=tmp_path
    )
    assert (quiet.returncode, quiet.stdout) == (1, normal.stdout[: -len(FOUND)])
    silent = torchperf_lint("--no-cache", "--silent", "loader.py", cwd=tmp_path)
    assert (silent.returncode, silent.stdout, silent.stderr) == (1, "", "")
    clean = torchperf_lint("--no-cache", "--quiet", "--select", "TPL105", "loader.py", cwd=tmp_path)
    assert (clean.returncode, clean.stdout) == (0, "")


def test_output_file_takes_the_report_and_its_folder_is_created(tmp_path):
    write_files(tmp_path, {"loader.py": LOADER})
    result = torchperf_lint(
        "--no-cache",
        "--output-format",
        "concise",
        "--output-file",
        "reports/lint.txt",
        "loader.py",
        cwd=tmp_path,
        env={"FORCE_COLOR": "1"},
    )
    assert (result.returncode, result.stdout) == (1, "")
    report = (tmp_path / "reports" / "lint.txt").read_text(encoding="utf-8")
    # Never coloured in a file, unless --color asks.
    assert report == (
        "loader.py:6:12: TPL101 `DataLoader` without `num_workers` loads batches in the training "
        "process; set `num_workers`\n" + FOUND
    )


def test_colour_flags_and_force_color(tmp_path):
    write_files(tmp_path, {"loader.py": LOADER})
    piped = torchperf_lint("--no-cache", "loader.py", cwd=tmp_path)
    forced = torchperf_lint("--no-cache", "loader.py", cwd=tmp_path, env={"FORCE_COLOR": "1"})
    both = torchperf_lint(
        "--no-cache", "loader.py", cwd=tmp_path, env={"FORCE_COLOR": "1", "NO_COLOR": "1"}
    )
    flag = torchperf_lint("--no-cache", "--color", "loader.py", cwd=tmp_path)
    off = torchperf_lint(
        "--no-cache", "--no-color", "loader.py", cwd=tmp_path, env={"FORCE_COLOR": "1"}
    )
    assert "\x1b[" not in piped.stdout
    assert "\x1b[" in forced.stdout and "\x1b[" in both.stdout and "\x1b[" in flag.stdout
    assert off.stdout == piped.stdout


def test_show_settings_for_the_first_file(tmp_path):
    write_files(
        tmp_path,
        {
            "pkg/pyproject.toml": (
                "[tool.torchperf-lint]\n"
                'select = ["TPL1"]\n'
                'ignore = ["TPL103"]\n'
                'target-device = "cuda"\n'
                'per-file-ignores = { "b.py" = ["TPL101"] }\n'
            ),
            "pkg/a.py": LOADER,
            "pkg/b.py": LOADER,
        },
    )
    result = torchperf_lint("--show-settings", "pkg", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f'Resolved settings for: "{tmp_path.resolve() / "pkg" / "a.py"}"'
    assert (
        lines[1]
        == f"Settings path: {tmp_path.resolve() / 'pkg' / 'pyproject.toml'} [tool.torchperf-lint]"
    )
    assert 'rules = ["TPL101", "TPL102", "TPL104", "TPL105"]' in lines
    assert 'target-device = "cuda"' in lines
    assert 'per-file-ignores = {"b.py" = ["TPL101"]}' in lines
    other = torchperf_lint("--show-settings", "pkg/b.py", cwd=tmp_path).stdout.splitlines()
    assert 'rules = ["TPL102", "TPL104", "TPL105"]' in other


def test_show_files_lists_what_would_be_linted(tmp_path):
    write_files(
        tmp_path,
        {
            "a.py": "",
            "nb.ipynb": "{}",
            "build/gen.py": "",
            "private/x.py": "",
            "notes.txt": "",
        },
    )
    subprocess.run(["git", "init", "--quiet"], cwd=tmp_path, check=True)
    # Git's own per-repository ignore file is honoured like a .gitignore.
    (tmp_path / ".git" / "info").mkdir(exist_ok=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("private/\n")
    result = torchperf_lint("--show-files", ".", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        str(tmp_path.resolve() / "a.py"),
        str(tmp_path.resolve() / "nb.ipynb"),
    ]


def test_stdin_notebook_is_linted_fixed_and_diffed_as_a_notebook(tmp_path):
    args = ("--no-cache", "--stdin-filename", "nb.ipynb")
    lint = torchperf_lint(
        *args, "--output-format", "concise", cwd=tmp_path, stdin=NOTEBOOK_TEXT.encode()
    )
    assert lint.returncode == 1
    assert lint.stdout.splitlines()[0].startswith("nb.ipynb:cell 1:3:22: TPL105 [*] ")
    fixed = torchperf_lint(*args, "--fix", cwd=tmp_path, stdin=NOTEBOOK_TEXT.encode())
    expected = NOTEBOOK_TEXT.replace(
        'x = torch.zeros(3).cuda()"', 'x = torch.zeros(3, device=\\"cuda\\")"'
    )
    assert fixed.stdout == expected
    assert "TPL105" not in fixed.stderr and "TPL101" in fixed.stderr
    diff = torchperf_lint(*args, "--diff", cwd=tmp_path, stdin=NOTEBOOK_TEXT.encode())
    assert diff.returncode == 1
    assert '-    "for x in loader: x = torch.zeros(3).cuda()"\n' in diff.stdout
    assert '+    "for x in loader: x = torch.zeros(3, device=\\"cuda\\")"\n' in diff.stdout


def test_force_exclude_skips_an_excluded_stdin_filename(tmp_path):
    write_files(tmp_path, {"pyproject.toml": '[tool.torchperf-lint]\nextend-exclude = ["gen"]\n'})
    source = MOVED_TENSOR.encode()
    args = ("--no-cache", "--force-exclude", "--stdin-filename", "gen/moved.py")
    lint = torchperf_lint(*args, cwd=tmp_path, stdin=source)
    assert (lint.returncode, lint.stdout) == (0, "")
    # When fixing, an editor gets its buffer back unchanged.
    fixed = torchperf_lint(*args, "--fix", cwd=tmp_path, stdin=source)
    assert (fixed.returncode, fixed.stdout) == (0, MOVED_TENSOR)
    # Without --force-exclude the named file is linted, as any file named explicitly.
    named = torchperf_lint(
        "--no-cache", "--stdin-filename", "gen/moved.py", cwd=tmp_path, stdin=source
    )
    assert named.returncode == 1


def test_add_noqa_comments_notebook_cells_and_keeps_the_json_layout(tmp_path):
    write_files(tmp_path, {"nb.ipynb": NOTEBOOK_TEXT})
    added = torchperf_lint("--no-cache", "--add-noqa", "nb.ipynb", cwd=tmp_path)
    assert (added.returncode, added.stderr) == (0, "Added 2 noqa directives.\n")
    assert (tmp_path / "nb.ipynb").read_text() == NOTEBOOK_TEXT.replace(
        'x = torch.zeros(3).cuda()"', 'x = torch.zeros(3).cuda()  # noqa: TPL105"'
    ).replace(
        '"loader = torch.utils.data.DataLoader(dataset)"',
        '"loader = torch.utils.data.DataLoader(dataset)  # noqa: TPL101"',
    )
    clean = torchperf_lint("--no-cache", "nb.ipynb", cwd=tmp_path)
    assert clean.returncode == 0, clean.stdout
