"""Lint one directory with torchperf-lint (cold; warm from the cache; again after editing one
file) and with TorchFix, and print files, lines, wall time, peak memory and the ratios, with
LibCST's bare parse time of the files torchperf-lint parses as the floor.

    python benchmarks/compare_torchfix.py [DIRECTORY] [--jobs N] [--torchfix-venv PATH]
        [--skip-torchfix] [--checkout DIR ...]

The directory is copied into a scratch folder first, so the edit (a comment appended to the
median-sized file that is parsed) never touches the original.

DIRECTORY defaults to the installed torch package's sources. TorchFix 0.7.0 runs from its own
virtualenv (default /tmp/torchfix-0.7.0-venv, created with `pip install torchfix==0.7.0` when
missing), never from this environment. Both linters run with their default rules and the same
number of processes. Each measurement runs in a fresh child process, so "peak memory" is the
peak resident set of the largest process of that run, the parent or one worker (`ru_maxrss` of
`RUSAGE_CHILDREN`); "cpu s" is the user and system time of the run and its workers, steadier
than wall time on a busy machine. Python writes bytecode for the runs (`PYTHONDONTWRITEBYTECODE`
is unset), as it does for an installed package.

With `--checkout DIR` (twice or more: source trees holding `torchperf_lint/`, e.g. main and a
branch's worktree), torchperf-lint runs from each checkout in turn (`PYTHONPATH=DIR`, each with
its own cache; warm runs interleaved, so a busy machine slows them alike; one edit, which each
checkout's next run meets), and each row is printed per checkout.

This prints numbers; it asserts nothing. Tests never time anything.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

TORCHFIX_VERSION = "0.7.0"
DEFAULT_VENV = Path(tempfile.gettempdir()) / f"torchfix-{TORCHFIX_VERSION}-venv"


# As an installed package runs: with its bytecode cached.
ENVIRONMENT = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def environment(checkout: Path | None) -> dict[str, str]:
    if checkout is None:
        return ENVIRONMENT
    return {**ENVIRONMENT, "PYTHONPATH": str(checkout)}


def measure(
    command: list[str], cwd: Path | None = None, checkout: Path | None = None
) -> dict[str, float]:
    """Wall time, CPU time and peak RSS of `command`, run from a fresh child so the peak is
    its own."""
    probe = [sys.executable, __file__, "--probe", "--", *command]
    completed = subprocess.run(
        probe, cwd=cwd, capture_output=True, text=True, check=True, env=environment(checkout)
    )
    return json.loads(completed.stdout.splitlines()[-1])


def median(results: list[dict[str, float]]) -> dict[str, float]:
    """The run of median wall time, with the median CPU time."""
    by_wall = sorted(results, key=lambda r: r["wall"])
    cpus = sorted(r["cpu"] for r in results)
    return {**by_wall[len(by_wall) // 2], "cpu": cpus[len(cpus) // 2]}


def probe(command: list[str]) -> None:
    """Run `command` (its output discarded) and print its wall time and peak RSS as JSON."""
    start = time.perf_counter()
    completed = subprocess.run(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False
    )
    wall = time.perf_counter() - start
    if completed.returncode == 2 and b"internal error" in completed.stderr:
        # A linter bug on some file: the run still went through every file, so it is timed.
        sys.stderr.write(f"warning: {command[0]} met internal errors (exit 2)\n")
    elif completed.returncode not in (0, 1):
        sys.stderr.write(completed.stderr.decode(errors="replace")[-2000:])
        raise SystemExit(f"{command[0]} exited {completed.returncode}")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime
    print(json.dumps({"wall": wall, "cpu": cpu, "peak_mib": usage.ru_maxrss / 1024}))


def torchfix_executable(venv: Path) -> Path:
    executable = venv / "bin" / "torchfix"
    if not executable.exists():
        print(f"creating {venv} with torchfix=={TORCHFIX_VERSION} ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "pip"), "install", "--quiet"]
        subprocess.run([*pip, f"torchfix=={TORCHFIX_VERSION}"], check=True)
    return executable


def python_files(directory: Path) -> list[Path]:
    return sorted(path for path in directory.rglob("*.py") if path.is_file())


def parse_one(path: Path) -> bool:
    import libcst

    try:
        libcst.parse_module(path.read_bytes())
    except Exception:  # noqa: BLE001 - the floor counts the time, not the outcome
        return False
    return True


def bare_parse(paths: list[str], jobs: int) -> None:
    """Parse every path with LibCST in `jobs` processes (run through `--probe`)."""
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(parse_one, map(Path, paths), chunksize=8))


def main() -> None:
    if sys.argv[1:2] == ["--probe"]:
        probe(sys.argv[3:])
        return
    if sys.argv[1:2] == ["--parse"]:
        bare_parse(Path(sys.argv[3]).read_text().splitlines(), int(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", nargs="?", type=Path)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--torchfix-venv", type=Path, default=DEFAULT_VENV)
    parser.add_argument("--skip-torchfix", action="store_true", help="Only torchperf-lint.")
    parser.add_argument("--warm-runs", type=int, default=5, help="Warm runs (the median counts).")
    parser.add_argument("--checkout", type=Path, action="append", default=[],
                        help="a source tree to run (PYTHONPATH); repeat to compare")
    arguments = parser.parse_args()
    checkouts: list[Path | None] = [c.resolve() for c in arguments.checkout] or [None]
    directory = arguments.directory
    if directory is None:
        import importlib.util

        directory = Path(importlib.util.find_spec("torch").origin).parent
    directory = directory.resolve()
    jobs = arguments.jobs

    with tempfile.TemporaryDirectory() as scratch:
        corpus = Path(scratch) / directory.name
        shutil.copytree(directory, corpus, symlinks=True)
        files = python_files(corpus)
        texts = [path.read_bytes() for path in files]
        parsed = [path for path, data in zip(files, texts) if b"torch" in data]
        lines = sum(data.count(b"\n") for data in texts)
        print(f"corpus: {directory}")
        print(f"files: {len(files)} .py, {lines} lines; {len(parsed)} mention torch (parsed)")
        print(f"jobs: {jobs}")

        listing = Path(scratch) / "parsed.txt"
        listing.write_text("\n".join(map(str, parsed)))
        floor = measure([sys.executable, __file__, "--parse", str(jobs), str(listing)])
        # An empty configuration: the corpus's own settings (if any) do not change the rules.
        config = Path(scratch) / "torchperf-lint.toml"
        config.write_text("")
        ours = [
            [
                sys.executable, "-m", "torchperf_lint", "check", str(corpus), "--jobs", str(jobs),
                "--cache-dir", str(Path(scratch) / f"cache{index}"), "--output-format",
                "concise", "--exit-zero", "--config", str(config),
            ]
            for index, _ in enumerate(checkouts)
        ]
        runs = list(zip(checkouts, ours))
        cold = [measure(command, Path(scratch), checkout) for checkout, command in runs]
        warms: list[list[dict[str, float]]] = [[] for _ in runs]
        for _ in range(arguments.warm_runs):
            for index, (checkout, command) in enumerate(runs):
                warms[index].append(measure(command, Path(scratch), checkout))
        warm = [median(results) for results in warms]
        edited = sorted(parsed, key=lambda path: path.stat().st_size)[len(parsed) // 2]
        with edited.open("a", encoding="utf-8") as stream:
            stream.write("\n# edited by the benchmark\n")
        one_edit = [measure(command, Path(scratch), checkout) for checkout, command in runs]
        if not arguments.skip_torchfix:
            torchfix = torchfix_executable(arguments.torchfix_venv)
            torchfix_run = measure([str(torchfix), "-j", str(jobs), str(corpus)])
    names = ["" if c is None else f" ({c.name})" for c in checkouts]
    rows = [("libcst parse (floor)", floor)]
    for name, cold_run, warm_run, edit_run in zip(names, cold, warm, one_edit):
        rows += [
            (f"torchperf-lint cold{name}", cold_run),
            (f"torchperf-lint warm{name} (median of {arguments.warm_runs})", warm_run),
            (f"torchperf-lint 1 file edited{name}", edit_run),
        ]
    if not arguments.skip_torchfix:
        rows.append((f"torchfix {TORCHFIX_VERSION}", torchfix_run))

    print(f"edited: {edited.relative_to(Path(scratch))}")
    print(f"{'run':<52}{'wall s':>9}{'cpu s':>9}{'peak MiB per process':>22}")
    for name, numbers in rows:
        print(f"{name:<52}{numbers['wall']:>9.2f}{numbers['cpu']:>9.2f}{numbers['peak_mib']:>22.0f}")
    for name, cold_run, warm_run, edit_run in zip(names, cold, warm, one_edit):
        if name:
            print(f"{name.strip()}:")
        for what, ratio, target in (
            ("cold / bare parse", cold_run["wall"] / floor["wall"], "<= 1.2x"),
            ("cold / warm", cold_run["wall"] / warm_run["wall"], ">= 50x"),
            ("1 file edited / warm", edit_run["wall"] / warm_run["wall"], "<= 3x"),
        ):
            print(f"  {what}: {ratio:.2f}x wall (target {target})")
        print(f"  cpu: cold / bare parse {cold_run['cpu'] / floor['cpu']:.2f}x, "
              f"1 file edited / warm {edit_run['cpu'] / warm_run['cpu']:.2f}x")
    if not arguments.skip_torchfix:
        torchfix_wall = rows[-1][1]["wall"]
        print(f"torchfix / cold: {torchfix_wall / cold[-1]['wall']:.1f}x (target >= 5x)")


if __name__ == "__main__":
    main()
