"""Run the variants: each job in a supervised child process (time limit, no process left
behind), timing runs alternating A B A B ..., then census runs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from torchperf_lint.verify.harness import JOB_ENV, RESULT_ENV, Job
from torchperf_lint.verify.processes import make_scratch_folder, supervised
from torchperf_lint.verify.variants import Variant

CHILD_PROGRAM = "from torchperf_lint.verify.harness import main; main()"
STDERR_TAIL_LINES = 20
# The supervisor needs well under a second to kill a run; past this it is killed itself.
SUPERVISOR_PATIENCE_S = 30.0


@dataclass
class RunOutcome:
    """One child run. `status`: `ok` (every rank reached warmup + steps), `ended` (the script
    finished earlier), `crashed`, `timed-out`, or `no-steps` (it ended before a measured step).
    `rank_results` holds what each rank reported, by rank."""

    job: Job
    status: str
    rank_results: list[dict] = field(default_factory=list)
    stderr_tail: str = ""
    wall_s: float = 0.0
    returncode: int | None = None

    @property
    def measured(self) -> bool:
        return self.status in ("ok", "ended")

    @property
    def result(self) -> dict:
        """Rank 0's results (losses and the sync census come from it); {} when none came."""
        return self.rank_results[0] if self.rank_results else {}

    @property
    def slowest_rank(self) -> dict:
        """The result of the rank with the longest mean step: its time is the run's."""
        return max(self.rank_results, key=_mean_step_time)

    @property
    def step_time_s(self) -> float:
        """Mean time per measured step of the slowest rank: the run's throughput, data stalls
        included (in data-parallel training every rank waits for the slowest)."""
        return _mean_step_time(self.slowest_rank)

    @property
    def problem(self) -> str:
        """What went wrong, in one line, for the report."""
        if self.status == "timed-out":
            return "killed at the time limit before reaching its steps"
        if self.status == "no-steps":
            return f"ended after {self.result.get('steps', 0)} steps, before a measured step"
        error = next((r["error"] for r in self.rank_results if r.get("error")), "")
        last_line = error.strip().splitlines()[-1] if error.strip() else ""
        return f"crashed: {last_line}" if last_line else f"crashed (exit status {self.returncode})"


def _mean_step_time(result: dict) -> float:
    return result["measured_time_s"] / result["measured_steps"]


def run_job(
    job: Job, timeout_s: float, cwd: str | None = None, nproc_per_node: int | None = None
) -> RunOutcome:
    """Run `job` under the harness, through `torch.distributed.run` with `nproc_per_node`
    processes when given, under a supervisor (see `processes`) that kills every process the
    run started once it ends, at the time limit, or when this process dies."""
    folder = make_scratch_folder()
    try:
        stderr_path = folder / "stderr.txt"
        results = folder / "results"
        results.mkdir()
        env = {**os.environ, JOB_ENV: job.to_json(), RESULT_ENV: str(results)}
        started = time.perf_counter()
        with stderr_path.open("wb") as stderr:
            supervisor = subprocess.Popen(
                supervised(_command(nproc_per_node, folder)),
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,
            )
            timed_out = False
            try:
                supervisor.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                _stop(supervisor)
        outcome = RunOutcome(
            job=job,
            status="crashed",
            wall_s=time.perf_counter() - started,
            returncode=None if timed_out else supervisor.returncode,
        )
        outcome.stderr_tail = _tail(stderr_path)
        outcome.rank_results = sorted(
            (json.loads(path.read_text(encoding="utf-8")) for path in results.glob("rank-*.json")),
            key=lambda result: result["rank"],
        )
        if timed_out:
            outcome.status = "timed-out"
        elif len(outcome.rank_results) == job.ranks and all(
            result["status"] in ("ok", "ended") for result in outcome.rank_results
        ):
            statuses = {result["status"] for result in outcome.rank_results}
            measured = all(result["measured_steps"] > 0 for result in outcome.rank_results)
            outcome.status = ("ended" if "ended" in statuses else "ok") if measured else "no-steps"
        return outcome
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _command(nproc_per_node: int | None, folder: Path) -> list[str]:
    """The harness, or PyTorch's own launcher starting one harness per rank (its logs go to
    `folder`, not to a `torchelastic_*` folder of their own)."""
    harness = [sys.executable, "-c", CHILD_PROGRAM]
    if nproc_per_node is None:
        return harness
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nnodes=1",
        f"--nproc-per-node={nproc_per_node}",
        f"--log-dir={folder / 'torchrun'}",
        "--no-python",
        *harness,
    ]


def _stop(supervisor: subprocess.Popen) -> None:
    """Stop the supervisor (it kills the run's processes first); SIGKILL if it does not end."""
    if supervisor.poll() is None:
        supervisor.send_signal(signal.SIGTERM)
        try:
            supervisor.wait(timeout=SUPERVISOR_PATIENCE_S)
        except subprocess.TimeoutExpired:
            supervisor.kill()
    supervisor.wait()


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
    # Processes per run under `torch.distributed.run`; None: one process, no launcher.
    nproc_per_node: int | None = None


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
        ranks=plan.nproc_per_node or 1,
    )
    outcome = run_job(job, plan.timeout_s, nproc_per_node=plan.nproc_per_node)
    getattr(variant_runs, mode).append(outcome)
    return outcome.measured
