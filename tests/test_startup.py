"""Start-up: the commands that parse nothing never import LibCST (nor the rules), so a commit
hook whose files are all cached, `--help`, `--version`, `rules` and `rule CODE` start fast.
Timings are in `benchmarks/startup.py`; these tests check only what is imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import torchperf_lint, write_files
from test_cache import CALLER as TRAIN
from test_cache import HELPERS

from torchperf_lint import cli
from torchperf_lint.verify.command import verify

# Runs the CLI in this interpreter, then says on stderr which heavy modules it imported.
PROBE = """
import sys
from torchperf_lint.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = sorted(name for name in ("libcst", "torchperf_lint.engine", "torchperf_lint.rules.base",
                                "torchperf_lint.workers") if name in sys.modules)
sys.stderr.write("\\nimported: " + ",".join(heavy) + "\\n")
"""

def probe(*args: str, cwd: Path) -> tuple[str, str]:
    """The command's stdout, and the heavy modules it imported."""
    completed = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=cwd, capture_output=True, text=True, check=False
    )
    _, _, imported = completed.stderr.rpartition("\nimported: ")
    assert imported, completed.stderr
    return completed.stdout, imported.strip()


def test_importing_the_cli_does_not_import_libcst(tmp_path):
    completed = subprocess.run(
        [sys.executable, "-c", "import sys, torchperf_lint.cli; print('libcst' in sys.modules)"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    )
    assert completed.stdout == "False\n"


@pytest.mark.parametrize(
    "args", [("--version",), ("--help",), ("rules",), ("rule", "TPL201"), ("check", "--help")]
)
def test_commands_that_parse_nothing_import_neither_libcst_nor_the_rules(tmp_path, args):
    stdout, imported = probe(*args, cwd=tmp_path)
    assert stdout
    assert imported == ""


def test_the_command_answers_version_as_click_does_without_importing_it(tmp_path):
    script = "import sys; from torchperf_lint.__main__ import main; main(); print('click' in sys.modules)"
    completed = subprocess.run(
        [sys.executable, "-c", script, "--version"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    )
    assert completed.stdout == probe("--version", cwd=tmp_path)[0] + "False\n"
    assert torchperf_lint("--version", cwd=tmp_path).stdout == probe("--version", cwd=tmp_path)[0]


def test_a_fully_cached_run_imports_neither_libcst_nor_the_rules(tmp_path):
    write_files(tmp_path, {"train.py": TRAIN, "helpers.py": HELPERS, "pyproject.toml": ""})
    first = torchperf_lint("--output-format", "concise", ".", cwd=tmp_path)
    assert "helpers.py:5:11: TPL201" in first.stdout
    for args in ((".",), ("train.py",), ("helpers.py",)):
        torchperf_lint("--output-format", "concise", *args, cwd=tmp_path)
        stdout, imported = probe("--output-format", "concise", *args, cwd=tmp_path)
        assert imported == ""
        assert stdout == torchperf_lint(
            "--output-format", "concise", "--no-cache", *args, cwd=tmp_path
        ).stdout
    # A changed file is parsed: LibCST is imported then, and only then.
    (tmp_path / "train.py").write_text(TRAIN + "\n")
    assert "libcst" in probe("--output-format", "concise", ".", cwd=tmp_path)[1]


def test_the_verify_line_of_help_is_the_commands_own():
    assert cli.VERIFY_HELP == verify.help.split("\n\n")[0].strip()


def test_the_catalog_is_the_rule_classes_metadata_and_leads_to_them():
    """`catalog.py` is generated (`python -m torchperf_lint.docs`); a stale one fails here."""
    from torchperf_lint import registry, rules

    assert list(registry.ALL_RULES) == [registry.info_of(rule) for rule in rules.ALL_RULES]
    assert all(info.implementation() is rules.BY_CODE[info.code] for info in registry.ALL_RULES)
