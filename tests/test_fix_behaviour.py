"""Fixes never break a working program: small real-shaped training programs
(`tests/fixtures/programs/`, CPU, synthetic data, a few steps) run as written, after `--fix`
and after `--fix --unsafe-fixes` (the default rules). The safe fixes must print the very same losses; with the
unsafe fixes the program must still run to completion.

Each program's three variants run in one subprocess (torch is imported once per program),
one after the other, from a scratch directory outside any test folder; the programs'
subprocesses run side by side.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from torchperf_lint.config import resolve_selection
from torchperf_lint.engine import LintSettings
from torchperf_lint.fixes import fix_text

pytestmark = pytest.mark.torch

PROGRAMS = sorted((Path(__file__).parent / "fixtures" / "programs").glob("*.py"))
# Runs each variant as `__main__`, capturing what it prints; prints the captures as JSON.
RUNNER = """\
import contextlib, gc, io, json, runpy, sys, warnings
warnings.simplefilter("ignore")
printed = {}
for variant, path in json.loads(sys.argv[1]).items():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(path, run_name="__main__")
    gc.collect()
    printed[variant] = out.getvalue()
print(json.dumps(printed))
"""


@dataclass
class Outcome:
    """One program's three variants and what running them printed."""

    safe_applied: Counter[str]
    unsafe_applied: Counter[str]
    returncode: int
    printed: dict[str, str]
    stderr: str


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every program fixed and run; the subprocesses run side by side (torch's import is
    most of their time)."""
    settings = LintSettings(resolve_selection(None))  # the default rules, as `--fix` runs them
    scratch = tmp_path_factory.mktemp("programs")
    started = {}
    for program in PROGRAMS:
        source = program.read_text(encoding="utf-8")
        safe, safe_applied, _ = fix_text(source, program.name, settings, unsafe_fixes=False)
        unsafe, unsafe_applied, _ = fix_text(source, program.name, settings, unsafe_fixes=True)
        variants = {}
        for variant, text in (("as written", source), ("safe", safe), ("unsafe", unsafe)):
            path = scratch / program.stem / variant.replace(" ", "_") / program.name
            path.parent.mkdir(parents=True)
            path.write_text(text, encoding="utf-8")
            variants[variant] = str(path)
        process = subprocess.Popen(
            [sys.executable, "-c", RUNNER, json.dumps(variants)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=scratch,
        )
        started[program.name] = (process, safe_applied, unsafe_applied)
    found = {}
    for name, (process, safe_applied, unsafe_applied) in started.items():
        stdout, stderr = process.communicate(timeout=300)
        lines = stdout.splitlines()
        printed = json.loads(lines[-1]) if process.returncode == 0 and lines else {}
        found[name] = Outcome(safe_applied, unsafe_applied, process.returncode, printed, stderr)
    return found


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda path: path.stem)
def test_fixes_keep_the_program_running_and_safe_fixes_keep_its_losses(
    program: Path, outcomes: dict[str, Outcome]
) -> None:
    outcome = outcomes[program.name]
    fixes = f"safe fixes {dict(outcome.safe_applied)}, unsafe {dict(outcome.unsafe_applied)}"
    assert outcome.safe_applied or outcome.unsafe_applied, f"{program.name}: nothing was fixed"
    assert outcome.returncode == 0, f"{program.name} failed ({fixes}):\n{outcome.stderr[-3000:]}"
    assert "loss" in outcome.printed["as written"]
    assert outcome.printed["safe"] == outcome.printed["as written"], fixes
    assert "loss" in outcome.printed["unsafe"], fixes
