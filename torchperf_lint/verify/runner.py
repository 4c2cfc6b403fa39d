"""Run the variants: each job in a child process (own process group, time limit), timing runs
alternating A B A B ..., then census runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from torchperf_lint.verify.harness import JOB_ENV, RESULT_ENV, Job
from torchperf_lint.verify.variants import Variant

CHILD_PROGRAM = "from torchperf_lint.verify.harness import main; main()"
STDERR_TAIL_LINES = 20


@dataclass
class RunOutcome:
    """One child run. `status`: `ok` (reached warmup + steps), `ended` (the script finished
    earlier), `crashed`, `timed-out`, or `no-steps` (it ended before a measured step)."""

    job: Job
    status: str
    result: dict = field(default_factory=dict)
    stderr_tail: str = ""
    wall_s: float = 0.0
    returncode: int | None = None

    @property
    def measured(self) -> bool:
        return self.status in ("ok", "ended")

    @property
    def step_time_s(self) -> float:
        """Mean time per measured step: the run's throughput, data stalls included."""
        return self.result["measured_time_s"] / self.result["measured_steps"]

    @property
    def problem(self) -> str:
        """What went wrong, in one line, for the report."""
        if self.status == "timed-out":
            return "killed at the time limit before reaching its steps"
        if self.status == "no-steps":
            return f"ended after {self.result.get('steps', 0)} steps, before a measured step"
        error = self.result.get("error") or ""
        last_line = error.strip().splitlines()[-1] if error.strip() else ""
        return f"crashed: {last_line}" if last_line else f"crashed (exit status {self.returncode})"


def run_job(job: Job, timeout_s: float, cwd: str | None = None) -> RunOutcome:
    """Run `job` under the harness in a new session (DataLoader workers are grandchildren:
    the whole group is killed at the time limit and after the run)."""
    with tempfile.TemporaryDirectory(prefix="torchperf-verify-run-") as folder:
        result_path = Path(folder, "result.json")
        stderr_path = Path(folder, "stderr.txt")
        env = {**os.environ, JOB_ENV: job.to_json(), RESULT_ENV: str(result_path)}
        started = time.perf_counter()
        with stderr_path.open("wb") as stderr:
            child = subprocess.Popen(
                [sys.executable, "-c", CHILD_PROGRAM],
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,
            )
            timed_out = False
            try:
                child.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                _kill_group(child.pid)
                child.wait()
        outcome = RunOutcome(
            job=job,
            status="crashed",
            wall_s=time.perf_counter() - started,
            returncode=None if timed_out else child.returncode,
        )
        outcome.stderr_tail = _tail(stderr_path)
        if result_path.exists():
            outcome.result = json.loads(result_path.read_text(encoding="utf-8"))
        if timed_out:
            outcome.status = "timed-out"
        elif outcome.result.get("status") in ("ok", "ended"):
            measured = outcome.result["measured_steps"] > 0
            outcome.status = outcome.result["status"] if measured else "no-steps"
        return outcome


def _kill_group(group: int) -> None:
    try:
        os.killpg(group, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone


def _tail(path: Path) -> str:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return "\n".join(lines[-STDERR_TAIL_LINES:])


@dataclass(frozen=True)
class Plan:
    """How `verify` runs the script: its arguments, the step counts, repeats and time limit."""

    script: str
    args: tuple[str, ...]
    steps: int
    warmup: int
    repeats: int
    timeout_s: float


@dataclass
class VariantRuns:
    """Every run of one variant. `not_measurable` is set when its runs were not even started
    (each of its fixes pays off only on CUDA and this machine has none)."""

    variant: Variant
    code_path: str
    timing: list[RunOutcome] = field(default_factory=list)
    census: list[RunOutcome] = field(default_factory=list)
    not_measurable: bool = False

    @property
    def failures(self) -> list[RunOutcome]:
        return [run for run in (*self.census, *self.timing) if not run.measured]


def measure(
    plan: Plan,
    variants: list[tuple[Variant, str]],
    progress: Callable[[str], None] = lambda message: None,
) -> list[VariantRuns]:
    """Run every `(variant, code path)`; the first is the baseline.

    A census run of the baseline goes first: it shows that the script runs at all and whether
    CUDA is here. Then timing runs alternate A B C A B C ... over `plan.repeats`, then census
    runs: the baseline's second one (to learn how well its losses reproduce) and one per
    variant. A variant that fails once is not run again.
    """
    runs = [VariantRuns(variant, path) for variant, path in variants]
    baseline = runs[0]
    if not _run(plan, baseline, "census", progress, "1"):
        return runs
    if not baseline.census[0].result["cuda_available"]:
        for variant_runs in runs[1:]:
            variant_runs.not_measurable = variant_runs.variant.cuda_only
    active = [variant_runs for variant_runs in runs if not variant_runs.not_measurable]
    total = 1 + plan.repeats * len(active) + len(active)
    done = 1
    for repeat in range(plan.repeats):
        for variant_runs in active:
            done += 1
            if not variant_runs.failures:
                _run(plan, variant_runs, "timing", progress, f"{done}/{total}")
    for variant_runs in active:
        done += 1
        if not variant_runs.failures:
            _run(plan, variant_runs, "census", progress, f"{done}/{total}")
    return runs


def _run(
    plan: Plan, variant_runs: VariantRuns, mode: str, progress: Callable[[str], None], count: str
) -> bool:
    progress(f"[{count}] {mode} run: {variant_runs.variant.name}")
    job = Job(
        script=plan.script,
        code_path=variant_runs.code_path,
        mode=mode,
        warmup=plan.warmup,
        steps=plan.steps,
        args=plan.args,
    )
    outcome = run_job(job, plan.timeout_s)
    getattr(variant_runs, mode).append(outcome)
    return outcome.measured
