"""Synthetic `verify` runs for tests of the report (no process is started)."""

from __future__ import annotations

from torchperf_lint.diagnostics import Applicability, Diagnostic, Fix, Location
from torchperf_lint.verify.harness import Job
from torchperf_lint.verify.runner import Plan, RunOutcome, VariantRuns
from torchperf_lint.verify.variants import Variant

PLAN = Plan("train.py", (), steps=10, warmup=2, repeats=3, timeout_s=60)


def rank_result(
    step_times: list[float], losses: tuple[float, ...] = (1.0, 0.5), rank: int = 0, **extra
) -> dict:
    """What one rank of a run that measured `step_times` reports."""
    total = sum(step_times)
    return {
        "rank": rank,
        "status": "ok",
        "steps": len(step_times) + 2,
        "measured_steps": len(step_times),
        "measured_time_s": total,
        "step_times_s": list(step_times),
        "data_wait_s": total / 2,
        "peak_memory_bytes": 100 * 2**20,
        "memory_kind": "rss",
        "cuda_available": False,
        "torch_version": "2.13.0+cpu",
        "syncs": [{"row": 7, "call": "item", "count": len(step_times)}],
        "syncs_elsewhere": 0,
        "losses": list(losses),
        **extra,
    }


def outcome(
    mode: str, step_time: float = 0.1, losses: tuple[float, ...] = (1.0, 0.5), **extra
) -> RunOutcome:
    """A run of one process whose 10 measured steps each took `step_time`."""
    job = Job("train.py", "train.py", mode, PLAN.warmup, PLAN.steps)
    timing = {"measured_time_s": step_time * 10, "data_wait_s": step_time * 5}
    return RunOutcome(job, "ok", [rank_result([step_time] * 10, losses, **{**timing, **extra})])


def finding(code: str, row: int) -> Diagnostic:
    fix = Fix(Applicability.UNSAFE, "fix it", ())
    return Diagnostic(code, "name", "message", "train.py", Location(row, 5), Location(row, 9), fix)


def runs_of(
    variant: Variant, times: list[float], losses: tuple[float, ...] = (1.0, 0.5)
) -> VariantRuns:
    runs = VariantRuns(variant, "train.py")
    runs.timing = [outcome("timing", t) for t in times]
    runs.census = [outcome("census", losses=losses)]
    return runs


def baseline_runs() -> VariantRuns:
    runs = runs_of(Variant("as written", "source"), [0.10, 0.11, 0.10])
    runs.census.append(outcome("census"))
    return runs
