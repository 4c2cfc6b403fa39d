"""End-to-end: the installed `torchperf-lint` command on small projects, as a user runs it."""

from __future__ import annotations

import os
import pty
import shutil
import subprocess

import pytest
from cli_helpers import EXECUTABLE, torchperf_lint, write_files

from torchperf_lint.engine import LintSettings, rules_for
from torchperf_lint.noqa import NoqaDirectives
from torchperf_lint.rules import BY_CODE
from torchperf_lint.runner import FileJob, analyse_job, run_jobs

NO_WORKERS = BY_CODE["TPL101"].message
MOVED = BY_CODE["TPL105"].message

# TPL101 at 6:12 (unsafe fix), nothing else by default.
LOADER = """\
import torch
from torch.utils.data import DataLoader


def make_loader(dataset):
    return DataLoader(dataset, batch_size=32)
"""
# TPL105 at 3:22 (safe fix): a tensor built on the host and moved on every step.
MOVED_TENSOR = "import torch\n\nfor x in loader: x = torch.zeros(3).cuda()\n"
CLEAN = "import torch\n\nx = torch.zeros(3)\n"
# A distribution's modules are its users' API: linted whether or not its own files use them
# (in a tree without packaging, a module that no script imports runs nowhere).
DISTRIBUTION = "[project]\nname = 'loaders'\n"


def test_bare_paths_run_check_with_ruff_like_full_output(tmp_path):
    write_files(tmp_path, {"loader.py": LOADER})
    bare = torchperf_lint("loader.py", cwd=tmp_path)
    explicit = torchperf_lint("check", "loader.py", cwd=tmp_path)
    assert bare.returncode == explicit.returncode == 1
    assert bare.stdout == explicit.stdout
    assert bare.stdout.splitlines() == [
        f"loader.py:6:12: TPL101 {NO_WORKERS}",
        "  |",
        "6 |     return DataLoader(dataset, batch_size=32)",
        "  |            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ TPL101",
        "  |",
        "  = help: Load batches in 4 persistent worker processes",
        "",
        "Found 1 error.",
        "No errors would be fixed (1 fix available with --unsafe-fixes).",
    ]


def test_concise_marks_fixes_the_current_flags_would_apply(tmp_path):
    write_files(tmp_path, {"loader.py": LOADER, "moved.py": MOVED_TENSOR})
    safe_only = torchperf_lint("--output-format", "concise", ".", cwd=tmp_path)
    assert safe_only.stdout.splitlines() == [
        f"loader.py:6:12: TPL101 {NO_WORKERS}",
        f"moved.py:3:22: TPL105 [*] {MOVED}",
        "Found 2 errors (1 fixable with --fix).",
        "1 more fix available with --unsafe-fixes.",
    ]
    unsafe = torchperf_lint("--output-format", "concise", "--unsafe-fixes", ".", cwd=tmp_path)
    assert unsafe.stdout.splitlines() == [
        f"loader.py:6:12: TPL101 [*] {NO_WORKERS}",
        f"moved.py:3:22: TPL105 [*] {MOVED}",
        "Found 2 errors (2 fixable with --fix).",
    ]


def test_clean_project_and_exit_zero(tmp_path):
    write_files(tmp_path, {"clean.py": CLEAN})
    clean = torchperf_lint(".", cwd=tmp_path)
    assert (clean.returncode, clean.stdout) == (0, "All checks passed!\n")
    write_files(tmp_path, {"loader.py": LOADER})
    assert torchperf_lint("--exit-zero", ".", cwd=tmp_path).returncode == 0


def test_no_python_files_warns_and_exits_zero(tmp_path):
    result = torchperf_lint(".", cwd=tmp_path)
    assert result.returncode == 0
    assert "warning: No Python files found under the given path(s)" in result.stderr


@pytest.mark.parametrize(
    ("args", "expected_codes"),
    [
        (("--select", "TPL105"), ["TPL105"]),
        (("--select", "TPL1", "--ignore", "TPL101"), ["TPL105"]),
        (("--ignore", "TPL1"), []),
        (("--ignore", "TPL1", "--extend-select", "TPL101"), ["TPL101"]),
        (("--select", "tpl101,TPL105"), ["TPL101", "TPL105"]),
    ],
)
def test_selection_options(tmp_path, args, expected_codes):
    write_files(tmp_path, {"loader.py": LOADER, "moved.py": MOVED_TENSOR})
    result = torchperf_lint("--output-format", "json", *args, ".", cwd=tmp_path)
    import json

    assert [d["code"] for d in json.loads(result.stdout)] == expected_codes


@pytest.mark.parametrize("selector", ["TPL999", "TPL99", "XYZ"])
def test_unknown_selector_is_a_usage_error_naming_it(tmp_path, selector):
    write_files(tmp_path, {"loader.py": LOADER})
    result = torchperf_lint("--select", selector, ".", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == (
        f"error: command line: select: unknown rule code or prefix {selector!r}\n"
    )


def test_bad_option_values_exit_2(tmp_path):
    write_files(tmp_path, {"loader.py": LOADER})
    assert torchperf_lint("--target-device", "tpu", ".", cwd=tmp_path).returncode == 2
    assert torchperf_lint("--torch-version", "two", ".", cwd=tmp_path).returncode == 2
    assert torchperf_lint("--output-format", "xml", ".", cwd=tmp_path).returncode == 2


def test_config_unknown_key_names_key_and_file(tmp_path):
    write_files(
        tmp_path,
        {"pyproject.toml": '[tool.torchperf-lint]\nselct = ["TPL1"]\n', "loader.py": LOADER},
    )
    result = torchperf_lint(".", cwd=tmp_path)
    assert result.returncode == 2
    pyproject = tmp_path.resolve() / "pyproject.toml"
    assert result.stderr == f"error: {pyproject} [tool.torchperf-lint]: unknown key 'selct'\n"


def test_nearest_config_per_package_and_cli_on_top(tmp_path):
    write_files(
        tmp_path,
        {
            "pyproject.toml": "[tool.torchperf-lint]\nignore = []\n",
            "a/pyproject.toml": '[tool.torchperf-lint]\nignore = ["TPL101"]\n',
            "a/loader.py": LOADER,
            "b/loader.py": LOADER,
        },
    )
    result = torchperf_lint("--output-format", "concise", ".", cwd=tmp_path)
    assert result.stdout.splitlines()[:-2] == [f"b/loader.py:6:12: TPL101 {NO_WORKERS}"]
    selected = torchperf_lint("--output-format", "concise", "--select", "TPL101", ".", cwd=tmp_path)
    assert [line.split(":")[0] for line in selected.stdout.splitlines()[:2]] == [
        "a/loader.py",
        "b/loader.py",
    ]


def test_explicit_config_file_applies_everywhere(tmp_path):
    write_files(
        tmp_path,
        {
            "ci.toml": 'select = ["TPL105"]\n',
            "pkg/pyproject.toml": '[tool.torchperf-lint]\nselect = ["TPL101"]\n',
            "pkg/loader.py": LOADER,
            "pkg/moved.py": MOVED_TENSOR,
        },
    )
    result = torchperf_lint("--output-format", "concise", "--config", "ci.toml", ".", cwd=tmp_path)
    assert result.stdout.splitlines()[0] == f"pkg/moved.py:3:22: TPL105 [*] {MOVED}"
    assert result.stdout.count("TPL1") == 1


def test_stdin_with_and_without_filename(tmp_path):
    named = torchperf_lint(
        "--output-format",
        "concise",
        "-",
        "--stdin-filename",
        "src/x.py",
        cwd=tmp_path,
        stdin=LOADER.encode(),
    )
    assert named.returncode == 1
    assert named.stdout.splitlines()[0] == f"src/x.py:6:12: TPL101 {NO_WORKERS}"
    anonymous = torchperf_lint("--output-format", "concise", "-", cwd=tmp_path, stdin=b"x = 1\n")
    assert (anonymous.returncode, anonymous.stdout) == (0, "All checks passed!\n")


def test_stdin_filename_settings_come_from_its_config(tmp_path):
    write_files(tmp_path, {"a/torchperf-lint.toml": 'ignore = ["TPL101"]\n'})
    result = torchperf_lint("--stdin-filename", "a/x.py", cwd=tmp_path, stdin=LOADER.encode())
    assert (result.returncode, result.stdout) == (0, "All checks passed!\n")


@pytest.mark.parametrize(
    "comment",
    ["  # noqa", "  # noqa: TPL101", "  # noqa: dataloader-no-workers", "  # noqa: E501, TPL101"],
)
def test_line_noqa_suppresses(tmp_path, comment):
    source = LOADER.replace("batch_size=32)", "batch_size=32)" + comment)
    write_files(tmp_path, {"loader.py": source})
    result = torchperf_lint(".", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "All checks passed!\n")


def test_noqa_for_another_code_and_file_level_noqa(tmp_path):
    other = LOADER.replace("batch_size=32)", "batch_size=32)  # noqa: TPL105")
    write_files(tmp_path, {"other.py": other})
    assert torchperf_lint(".", cwd=tmp_path).returncode == 1
    write_files(tmp_path, {"other.py": "# torchperf-lint: noqa\n" + LOADER})
    assert torchperf_lint(".", cwd=tmp_path).stdout == "All checks passed!\n"


def test_torchfix_code_for_the_same_check_suppresses_ours_and_add_noqa_writes_ours(tmp_path):
    # TorchFix's TOR401 is TPL101's check; its TOR402 (zero_grad) is another one's.
    silenced = LOADER.replace("batch_size=32)", "batch_size=32)  # noqa: TOR401")
    other = LOADER.replace("batch_size=32)", "batch_size=32)  # noqa: TOR402")
    write_files(tmp_path, {"silenced.py": silenced, "other.py": other})
    result = torchperf_lint("--output-format", "concise", ".", cwd=tmp_path)
    assert result.stdout.splitlines()[:2] == [f"other.py:6:12: TPL101 {NO_WORKERS}", "Found 1 error."]
    added = torchperf_lint("--add-noqa", ".", cwd=tmp_path)
    assert (added.returncode, added.stderr) == (0, "Added 1 noqa directive.\n")
    assert "batch_size=32)  # noqa: TOR402, TPL101\n" in (tmp_path / "other.py").read_text()
    assert (tmp_path / "silenced.py").read_text() == silenced
    # TOR401 names TPL101's check only.
    directives = NoqaDirectives.from_source("loader = DataLoader(ds)  # noqa: TOR401\n")
    codes = ("TPL101", "TPL102", "TPL103", "TPL602")
    assert [code for code in codes if directives.suppresses(1, code, "")] == ["TPL101"]


def test_broken_files_are_reported_and_the_rest_still_linted(tmp_path):
    write_files(
        tmp_path,
        {
            "a_syntax.py": "import torch\ndef f(:\n",
            "b_bytes.py": b"import torch\nx = '\xff\xfe'\n",
            "c_empty.py": "",
            "d_loader.py": LOADER,
        },
    )
    result = torchperf_lint("--output-format", "concise", ".", "missing.py", cwd=tmp_path)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("a_syntax.py:2:")
    assert " E902 syntax error: " in lines[0]
    assert lines[1].startswith("b_bytes.py:1:1: E902 cannot decode as utf-8")
    assert lines[2] == f"d_loader.py:6:12: TPL101 {NO_WORKERS}"
    assert lines[3] == "missing.py:1:1: E902 cannot read: No such file or directory"
    assert lines[4] == "Found 4 errors."


def test_a_file_python_parses_but_libcst_does_not_says_so(tmp_path):
    # Indentation that mixes a tab into spaces in a way CPython tolerates (deepsnap's
    # examples): LibCST's tokenizer rejects it.
    source = (
        "import torch\n\n\nclass GNN(torch.nn.Module):\n    def build(self, kind):\n"
        "        if kind == 'GCN':\n            return 1\n        elif kind == 'GAT':\n"
        "       \t    return 2\n        else:\n            raise ValueError(kind)\n"
    )
    write_files(tmp_path, {"mixed.py": source})
    result = torchperf_lint("--output-format", "concise", "mixed.py", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.splitlines()[0] == (
        "mixed.py:1:1: E902 cannot parse (LibCST's parser; Python parses it): tokenizer error:"
        " no matching outer block for dedent"
    )
    assert (tmp_path / "mixed.py").read_text() == source


def test_parallel_output_is_identical_to_serial(tmp_path):
    files = {f"pkg{i % 3}/file{i}.py": LOADER if i % 2 else MOVED_TENSOR for i in range(12)}
    files["pkg1/broken.py"] = "import torch\nif:\n"
    files["pyproject.toml"] = DISTRIBUTION
    write_files(tmp_path, files)
    serial = torchperf_lint("--jobs", "1", "--output-format", "json", ".", cwd=tmp_path)
    parallel = torchperf_lint("--jobs", "2", "--output-format", "json", ".", cwd=tmp_path)
    assert serial.returncode == parallel.returncode == 1
    assert serial.stdout == parallel.stdout
    assert serial.stdout.count('"code"') == 13


def test_run_jobs_records_internal_errors_and_goes_on(tmp_path):
    write_files(tmp_path, {"a.py": LOADER, "b.py": LOADER})
    settings = LintSettings(rules_for(["TPL101"]))
    jobs = [FileJob(tmp_path / name, name, settings) for name in ("a.py", "b.py")]

    def crash_on_a(job):
        if job.display_name == "a.py":
            raise ValueError("boom")
        return analyse_job(job)

    run = run_jobs(crash_on_a, jobs, workers=1)
    assert [analysis.result.filename for analysis in run.outcomes] == ["b.py"]
    assert [error.filename for error in run.internal_errors] == ["a.py"]
    assert run.internal_errors[0].message.startswith("ValueError: boom (at test_cli.py:")


def test_a_recursion_error_on_code_that_nests_little_is_an_internal_error(tmp_path, monkeypatch):
    # Only code that nests deeply ends in "too deeply nested" (E902); on shallow code a
    # RecursionError is the linter's own fault and is reported as one.
    write_files(tmp_path, {"a.py": LOADER})

    def recurse(self, facts):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(BY_CODE["TPL101"], "check", recurse)
    jobs = [FileJob(tmp_path / "a.py", "a.py", LintSettings(rules_for(["TPL101"])))]
    run = run_jobs(analyse_job, jobs, workers=1)
    assert run.outcomes == []
    assert [error.filename for error in run.internal_errors] == ["a.py"]
    assert run.internal_errors[0].message.startswith("RecursionError: maximum recursion depth")


def test_statistics(tmp_path):
    write_files(
        tmp_path,
        {"pyproject.toml": DISTRIBUTION, "a.py": LOADER, "b.py": LOADER, "moved.py": MOVED_TENSOR},
    )
    result = torchperf_lint("--statistics", ".", cwd=tmp_path)
    assert result.stdout.splitlines() == [
        "2\tTPL101\t[ ] dataloader-no-workers",
        "1\tTPL105\t[*] tensor-created-then-moved",
        "Found 3 errors (1 fixable with --fix).",
        "2 more fixes available with --unsafe-fixes.",
    ]


def test_explicit_files_are_linted_unless_force_exclude(tmp_path):
    write_files(
        tmp_path,
        {
            "build/gen.py": LOADER,
            "skipme/x.py": LOADER,
            "pyproject.toml": '[tool.torchperf-lint]\nextend-exclude = ["skipme"]\n',
        },
    )
    assert torchperf_lint(".", cwd=tmp_path).stdout == "All checks passed!\n"
    explicit = torchperf_lint(
        "build/gen.py", "skipme/x.py", "--output-format", "concise", cwd=tmp_path
    )
    assert explicit.stdout.count("TPL101") == 2
    forced = torchperf_lint("--force-exclude", "build/gen.py", "skipme/x.py", cwd=tmp_path)
    assert forced.returncode == 0


def test_colour_only_on_a_terminal_and_never_with_no_color(tmp_path):
    write_files(tmp_path, {"loader.py": LOADER})

    def run_in_terminal(extra_env):
        controller, terminal = pty.openpty()
        env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | extra_env
        subprocess.run(
            [EXECUTABLE, "loader.py"],
            cwd=tmp_path,
            stdout=terminal,
            env=env,
            timeout=120,
            check=False,
        )
        os.close(terminal)
        chunks = []
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(controller)
        return b"".join(chunks).decode()

    assert "\x1b[" in run_in_terminal({})
    assert "\x1b[" not in run_in_terminal({"NO_COLOR": "1"})
    assert "\x1b[" not in torchperf_lint("loader.py", cwd=tmp_path).stdout


def test_rules_lists_the_catalog(tmp_path):
    result = torchperf_lint("rules", cwd=tmp_path)
    lines = result.stdout.splitlines()
    assert result.returncode == 0
    assert lines[0].split() == ["Code", "Name", "Status", "Fix"]
    assert ["TPL101", "dataloader-no-workers", "default", "unsafe"] in [
        line.split() for line in lines
    ]
    assert ["TPL103", "dataloader-workers-not-persistent", "opt-in", "unsafe"] in [
        line.split() for line in lines
    ]


def test_rule_prints_its_page_and_rejects_unknown_codes(tmp_path):
    from torchperf_lint.docs import render_page

    result = torchperf_lint("rule", "TPL101", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, render_page(BY_CODE["TPL101"]))
    by_name = torchperf_lint("rule", "dataloader-no-workers", cwd=tmp_path)
    assert by_name.stdout == result.stdout
    unknown = torchperf_lint("rule", "TPL999", cwd=tmp_path)
    assert unknown.returncode == 2
    assert unknown.stderr == "error: unknown rule 'TPL999' (see `torchperf-lint rules`)\n"


# --fix, --diff, --add-noqa


def test_fix_applies_safe_fixes_and_a_second_run_is_clean(tmp_path):
    write_files(tmp_path, {"moved.py": MOVED_TENSOR})
    fixed = torchperf_lint("--fix", ".", cwd=tmp_path)
    assert (fixed.returncode, fixed.stdout) == (0, "Found 1 error (1 fixed, 0 remaining).\n")
    assert (
        tmp_path / "moved.py"
    ).read_text() == 'import torch\n\nfor x in loader: x = torch.zeros(3, device="cuda")\n'
    again = torchperf_lint("--fix", ".", cwd=tmp_path)
    assert (again.returncode, again.stdout) == (0, "All checks passed!\n")


def test_fix_leaves_unsafe_fixes_without_the_flag(tmp_path):
    write_files(tmp_path, {"loader.py": LOADER})
    result = torchperf_lint("--fix", "--output-format", "concise", ".", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f"loader.py:6:12: TPL101 {NO_WORKERS}",
        "Found 1 error (0 fixed, 1 remaining).",
        "No errors were fixed (1 fix available with --unsafe-fixes).",
    ]
    assert (tmp_path / "loader.py").read_text() == LOADER
    unsafe = torchperf_lint("--fix", "--unsafe-fixes", "--show-fixes", ".", cwd=tmp_path)
    assert unsafe.returncode == 0
    assert unsafe.stdout.splitlines() == [
        "Fixed 1 error:",
        "- loader.py:",
        "    1 × TPL101 (dataloader-no-workers)",
        "",
        "Found 1 error (1 fixed, 0 remaining).",
    ]
    assert "num_workers=4, persistent_workers=True" in (tmp_path / "loader.py").read_text()


def test_exit_non_zero_on_fix(tmp_path):
    write_files(tmp_path, {"moved.py": MOVED_TENSOR})
    assert torchperf_lint("--fix", "--exit-non-zero-on-fix", ".", cwd=tmp_path).returncode == 1


def test_diff_prints_and_writes_nothing(tmp_path):
    write_files(tmp_path, {"moved.py": MOVED_TENSOR, "loader.py": LOADER})
    result = torchperf_lint("--diff", ".", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == (
        "--- a/moved.py\n+++ b/moved.py\n@@ -1,3 +1,3 @@\n import torch\n \n"
        '-for x in loader: x = torch.zeros(3).cuda()\n'
        '+for x in loader: x = torch.zeros(3, device="cuda")\n'
    )
    assert result.stderr == "Would fix 1 error.\n"
    assert (tmp_path / "moved.py").read_text() == MOVED_TENSOR
    (tmp_path / "moved.py").unlink()
    nothing = torchperf_lint("--diff", ".", cwd=tmp_path)
    assert (nothing.returncode, nothing.stdout) == (0, "")


def test_fix_from_stdin_prints_the_fixed_source(tmp_path):
    result = torchperf_lint("--fix", "-", cwd=tmp_path, stdin=MOVED_TENSOR.encode())
    assert result.returncode == 0
    assert result.stdout == 'import torch\n\nfor x in loader: x = torch.zeros(3, device="cuda")\n'


def test_add_noqa_silences_current_findings(tmp_path):
    write_files(tmp_path, {"loader.py": LOADER})
    added = torchperf_lint("--add-noqa", ".", cwd=tmp_path)
    assert (added.returncode, added.stderr) == (0, "Added 1 noqa directive.\n")
    assert "batch_size=32)  # noqa: TPL101\n" in (tmp_path / "loader.py").read_text()
    assert torchperf_lint(".", cwd=tmp_path).returncode == 0


def test_help_and_version(tmp_path):
    assert "check" in torchperf_lint("--help", cwd=tmp_path).stdout
    assert torchperf_lint("--version", cwd=tmp_path).stdout.strip().endswith("0.1.0")
    assert shutil.which("torchperf-lint") == EXECUTABLE
