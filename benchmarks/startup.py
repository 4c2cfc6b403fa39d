"""Start-up: the median wall time of the commands a user waits on without linting anything
(`--help`, `--version`, `rules`, a pre-commit run on one cached file, the same run with a
whole cached project), beside bare Python's (`python -c pass`).

    python benchmarks/startup.py [--runs N]

Each command runs N times (default 21) in a fresh process, in a scratch project whose files
are cached by a first run; Python writes bytecode (`PYTHONDONTWRITEBYTECODE` is unset), as it
does for an installed package. The script also says whether each command imported LibCST.

This prints numbers; it asserts nothing. Tests never time anything.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
ENVIRONMENT = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
LINTER = [sys.executable, "-m", "torchperf_lint"]
# Runs the CLI, then says whether LibCST was imported.
PROBE = (
    "import sys\nfrom torchperf_lint.cli import main\ntry:\n    main(sys.argv[1:])\n"
    "except SystemExit:\n    pass\nsys.stderr.write('libcst' in sys.modules and 'yes' or 'no')\n"
)


def times(command: list[str], cwd: Path) -> tuple[float, float]:
    """Wall time and CPU time (user + system, steadier on a busy machine) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=ENVIRONMENT, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def imports_libcst(args: list[str], cwd: Path) -> str:
    completed = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=cwd, env=ENVIRONMENT, capture_output=True,
        text=True, check=False,
    )
    return completed.stderr[-3:].strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=21)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        project = Path(scratch)
        (project / "pyproject.toml").write_text("")
        for example in sorted(EXAMPLES.glob("*.py")):
            (project / example.name).write_bytes(example.read_bytes())
        one_file = "train.py"
        commands = {
            "python -c pass": ([sys.executable, "-c", "pass"], None),
            "--help": ([*LINTER, "--help"], ["--help"]),
            "--version": ([*LINTER, "--version"], ["--version"]),
            "rules": ([*LINTER, "rules"], ["rules"]),
            f"check {one_file} (cached)": ([*LINTER, one_file], [one_file]),
            "check . (cached)": ([*LINTER, "."], ["."]),
        }
        # Fill the cache and write the bytecode.
        for command, _ in commands.values():
            subprocess.run(command, cwd=project, env=ENVIRONMENT, capture_output=True, check=False)
        print(f"{'command':<32}{'median s':>10}{'min s':>8}{'median cpu s':>14}  libcst imported")
        for name, (command, probe_args) in commands.items():
            walls, cpus = zip(*(times(command, project) for _ in range(arguments.runs)))
            libcst = "" if probe_args is None else imports_libcst(probe_args, project)
            print(
                f"{name:<32}{statistics.median(walls):>10.3f}{min(walls):>8.3f}"
                f"{statistics.median(cpus):>14.3f}  {libcst}"
            )
    print("target: --help, --version and a cached single-file run <= 0.12 s median")


if __name__ == "__main__":
    main()
