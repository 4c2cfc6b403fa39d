"""Start-up: the median wall time of the commands a user waits on without linting anything
(`--help`, `--version`, `rules`, a pre-commit run on one cached file, the same run with a
whole cached project), beside bare Python's (`python -c pass`).

    python benchmarks/startup.py [--runs N] [--project DIR] [--checkout DIR ...]

Each command runs N times (default 21) in a fresh process, in a scratch project whose files
are cached by a first run (the `examples/` files, or a copy of `--project DIR`, whose
`--one-file` is the single file); Python writes bytecode (`PYTHONDONTWRITEBYTECODE` is unset),
as it does for an installed package. The script also says whether each command imported
LibCST.

With `--checkout DIR` (twice or more: source trees holding `torchperf_lint/`, e.g. main and a
branch extracted with `git archive`), each command runs from every checkout in turn
(`PYTHONPATH=DIR`, interleaved, so a busy machine slows them alike), and the table gives each
checkout's median wall time and its ratio to the first's, and each checkout's median CPU time.

This prints numbers; it asserts nothing. Tests never time anything.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
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
# A file changed this recently is hashed by every run (see `cache.RACY_SECONDS`): the scratch
# project and the checkouts are left this long before the cache is filled, as a project is
# between commits.
SETTLE_SECONDS = 2.5


def environment(checkout: Path | None) -> dict[str, str]:
    if checkout is None:
        return ENVIRONMENT
    return {**ENVIRONMENT, "PYTHONPATH": str(checkout)}


def times(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall time and CPU time (user + system, steadier on a busy machine) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def imports_libcst(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    completed = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=cwd, env=env, capture_output=True,
        text=True, check=False,
    )
    return completed.stderr[-3:].strip()


def make_project(directory: Path, source: Path | None) -> None:
    if source is None:
        directory.mkdir()
        (directory / "pyproject.toml").write_text("")
        for example in sorted(EXAMPLES.glob("*.py")):
            (directory / example.name).write_bytes(example.read_bytes())
    else:
        shutil.copytree(source, directory, symlinks=True,
                        ignore=shutil.ignore_patterns(".torchperf_lint_cache"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--project", type=Path, help="a project to copy (default: examples/)")
    parser.add_argument("--one-file", default="train.py", help="the single file (default: train.py)")
    parser.add_argument("--checkout", type=Path, action="append", default=[],
                        help="a source tree to run (PYTHONPATH); repeat to compare")
    arguments = parser.parse_args()
    checkouts: list[Path | None] = [c.resolve() for c in arguments.checkout] or [None]
    with tempfile.TemporaryDirectory() as scratch:
        # One project per checkout: their caches stay apart.
        projects = []
        for index, _ in enumerate(checkouts):
            project = Path(scratch) / f"project{index}"
            make_project(project, arguments.project)
            projects.append(project)
        one_file = arguments.one_file
        commands = {
            "python -c pass": ([sys.executable, "-c", "pass"], None),
            "--help": ([*LINTER, "--help"], ["--help"]),
            "--version": ([*LINTER, "--version"], ["--version"]),
            "rules": ([*LINTER, "rules"], ["rules"]),
            f"check {one_file} (cached)": ([*LINTER, one_file], [one_file]),
            "check . (cached)": ([*LINTER, "."], ["."]),
        }
        time.sleep(SETTLE_SECONDS)
        # Fill the caches and write the bytecode.
        for checkout, project in zip(checkouts, projects):
            for command, _ in commands.values():
                subprocess.run(command, cwd=project, env=environment(checkout),
                               capture_output=True, check=False)
        header = f"{'command':<32}"
        for index, checkout in enumerate(checkouts):
            name = "installed" if checkout is None else checkout.name
            header += f"{name[:14]:>16}" + ("" if index == 0 else f"{'ratio':>7}")
        # CPU time: steadier than wall time on a busy machine.
        cpu_header = "".join(f"{'cpu s':>8}" for _ in checkouts)
        print(header + cpu_header + "  libcst imported")
        for name, (command, probe_args) in commands.items():
            walls: list[list[float]] = [[] for _ in checkouts]
            cpus: list[list[float]] = [[] for _ in checkouts]
            for _ in range(arguments.runs):
                for index, (checkout, project) in enumerate(zip(checkouts, projects)):
                    wall, cpu = times(command, project, environment(checkout))
                    walls[index].append(wall)
                    cpus[index].append(cpu)
            medians = [statistics.median(w) for w in walls]
            row = f"{name:<32}"
            for index, median in enumerate(medians):
                row += f"{median:>16.3f}" + ("" if index == 0 else f"{median / medians[0]:>7.2f}")
            libcst = "" if probe_args is None else " ".join(
                imports_libcst(probe_args, project, environment(checkout))
                for checkout, project in zip(checkouts, projects)
            )
            row += "".join(f"{statistics.median(cpu):>8.3f}" for cpu in cpus)
            print(f"{row}  {libcst}")
    print(f"load average: {' '.join(f'{load:.2f}' for load in os.getloadavg())}")
    print("target: --help, --version and a cached single-file run <= 0.12 s median")


if __name__ == "__main__":
    main()
