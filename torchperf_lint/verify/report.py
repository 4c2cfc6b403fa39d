"""What `verify` learnt, as a table for people and as JSON for machines.

JSON schema (`--json`; `"schema": "torchperf-lint-verify/1"`; times in seconds, memory in
bytes, shares in [0, 1]; a value that could not be measured is `null`):

    {
      "schema": "torchperf-lint-verify/1",
      "script": "train.py", "args": ["--epochs", "1"],
      "steps": 50, "warmup": 5, "repeats": 3,
      "nproc_per_node": null | 2,             # processes per run under torch.distributed.run
      "torch_version": "2.4.0", "cuda_available": false,
      "findings": [{"code": "TPL101", "row": 12, "column": 10, "message": "...",
                    "fix": "unsafe" | "safe" | "display-only" | null}],
      "variants": [{
        "name": "as written" | "all fixes" | "TPL101 12:10",
        "codes": ["TPL101"],                 # fixes applied ([] for the baseline)
        "verdict": null (baseline) | "faster" | "slower" | "no-change" | "inconclusive"
                   | "not-measurable-here" | "changes-results" | "failed",
        "note": "..." | null,                 # why, in one sentence
        "step_time_s": 0.0123,                # median over timing runs of (window time / steps)
                                              # of the slowest rank
        "rank_step_time_s": [0.0121, 0.0123], # the same, for each rank
        "steps_per_s": 81.3,
        "speedup": 2.9, "speedup_ci": [2.7, 3.1],   # baseline time / variant time, 95 % CI
        "syncs_per_step": 1.0,                # census run, measured steps only; most of any rank
        "syncs_per_step_per_rank": [1.0, 0.0],
        "data_wait_share": 0.62,              # time in DataLoader.__next__ / window time
                                              # (slowest rank)
        "peak_memory_bytes": 412000000, "memory_kind": "rss" | "cuda",   # largest of any rank
        "losses_agree": true | false | null,  # null: no losses, or baseline not reproducible
        "loss_difference": 0.0, "loss_tolerance": 1e-05,  # max relative difference
        "loss_first_difference": 17 | null,   # index of the first loss beyond the tolerance
        "runs": [{"mode": "timing" | "census", "status": "ok" | "ended" | "crashed"
                  | "timed-out" | "no-steps", "step_time_s": ..., "wall_s": ...,
                  "step_times_s": [...],      # every measured step (slowest rank)
                  "losses": [...] | null,     # census runs: every backward's loss (rank 0)
                  "problem": "..." | null, "stderr_tail": "..." | null}]
      }],
      "evidence": [{"row": 41, "call": "item", "count": 50, "steps": 50,
                    "per_step": 1.0, "codes": ["TPL201"]}]   # host syncs seen, baseline
    }
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from torchperf_lint.diagnostics import Diagnostic
from torchperf_lint.verify import stats
from torchperf_lint.verify.runner import Plan, RunOutcome, VariantRuns
from torchperf_lint.verify.variants import CUDA_ONLY_RULES

SCHEMA = "torchperf-lint-verify/1"

CALL_TEXT = {
    "item": "`.item()`",
    "__float__": "`float()`",
    "__bool__": "`bool()` (a tensor in a condition)",
    "__int__": "`int()`",
    "tolist": "`.tolist()`",
    "cpu": "`.cpu()`",
    "numpy": "`.numpy()`",
    "__repr__": "`repr()`/`print()` of a tensor",
    "__format__": "`format()`/f-string of a tensor",
    "nonzero": "`.nonzero()`",
}


@dataclass(frozen=True)
class VariantSummary:
    """The numbers and the verdict for one variant."""

    runs: VariantRuns
    verdict: str | None
    note: str | None
    step_time_s: float | None
    rank_step_time_s: tuple[float, ...] | None
    speedup: float | None
    speedup_ci: tuple[float, float] | None
    syncs_per_step_per_rank: tuple[float, ...] | None
    data_wait_share: float | None
    peak_memory_bytes: int | None
    memory_kind: str | None
    losses: stats.LossCheck

    @property
    def steps_per_s(self) -> float | None:
        return None if self.step_time_s is None else 1 / self.step_time_s

    @property
    def syncs_per_step(self) -> float | None:
        """The most syncs per step of any rank."""
        return max(self.syncs_per_step_per_rank) if self.syncs_per_step_per_rank else None


@dataclass(frozen=True)
class Evidence:
    """A host-sync call site seen in the baseline's census run."""

    row: int
    call: str
    count: int
    steps: int
    codes: tuple[str, ...]


@dataclass(frozen=True)
class VerifyReport:
    """Everything `verify` prints."""

    plan: Plan
    findings: list[Diagnostic]
    variants: list[VariantSummary]
    evidence: list[Evidence]
    cuda_available: bool | None
    torch_version: str | None

    @property
    def measured(self) -> bool:
        """Whether the script as written ran to at least one measured step."""
        census = self.variants[0].runs.census
        return bool(census) and census[0].measured


def summarize(plan: Plan, findings: list[Diagnostic], all_runs: list[VariantRuns]) -> VerifyReport:
    """Turn the runs into per-variant numbers, verdicts and the runtime evidence."""
    baseline_runs = all_runs[0]
    first_census = baseline_runs.census[0] if baseline_runs.census else None
    facts = first_census.result if first_census and first_census.result else {}
    cuda_available = facts.get("cuda_available")
    baseline_times = _step_times(baseline_runs)
    summaries = [
        _summarize_variant(runs, baseline_runs, baseline_times, cuda_available) for runs in all_runs
    ]
    evidence = _evidence(first_census, findings) if first_census and first_census.measured else []
    return VerifyReport(
        plan=plan,
        findings=findings,
        variants=summaries,
        evidence=evidence,
        cuda_available=cuda_available,
        torch_version=facts.get("torch_version"),
    )


def _step_times(runs: VariantRuns) -> list[float]:
    return [run.step_time_s for run in runs.timing if run.measured]


def _summarize_variant(
    runs: VariantRuns,
    baseline: VariantRuns,
    baseline_times: list[float],
    cuda_available: bool | None,
) -> VariantSummary:
    times = _step_times(runs)
    timing = [run for run in runs.timing if run.measured]
    census = runs.census[0] if runs.census and runs.census[0].measured else None
    is_baseline = runs is baseline
    point = interval = None
    if not is_baseline and times and baseline_times:
        point = stats.speedup(baseline_times, times)
        interval = stats.speedup_interval(baseline_times, times)
    losses = stats.LossCheck(None, None, None)
    if not is_baseline and census is not None and len(baseline.census) > 1:
        losses = stats.compare_losses(
            baseline.census[0].result["losses"],
            baseline.census[1].result.get("losses", []),
            census.result["losses"],
        )
    verdict, note = _verdict(runs, is_baseline, point, interval, losses, cuda_available)
    return VariantSummary(
        runs=runs,
        verdict=verdict,
        note=note,
        step_time_s=stats.median(times) if times else None,
        rank_step_time_s=_rank_step_times(timing),
        speedup=point,
        speedup_ci=interval,
        syncs_per_step_per_rank=(
            tuple(_syncs_per_step(result) for result in census.rank_results) if census else None
        ),
        data_wait_share=(
            stats.median([_data_wait_share(run.slowest_rank) for run in timing]) if timing else None
        ),
        peak_memory_bytes=max(
            (result["peak_memory_bytes"] for run in timing for result in run.rank_results),
            default=None,
        ),
        memory_kind=timing[0].result["memory_kind"] if timing else None,
        losses=losses,
    )


def _rank_step_times(timing: list[RunOutcome]) -> tuple[float, ...] | None:
    """Each rank's median step time over the timing runs."""
    if not timing:
        return None
    ranks = zip(*(run.rank_results for run in timing))
    return tuple(
        stats.median([r["measured_time_s"] / r["measured_steps"] for r in rank]) for rank in ranks
    )


def _data_wait_share(result: dict) -> float:
    return result["data_wait_s"] / result["measured_time_s"]


def _verdict(
    runs: VariantRuns,
    is_baseline: bool,
    point: float | None,
    interval: tuple[float, float] | None,
    losses: stats.LossCheck,
    cuda_available: bool | None,
) -> tuple[str | None, str | None]:
    if runs.failures:
        first = runs.failures[0]
        return (None if is_baseline else stats.FAILED), f"a {first.job.mode} run {first.problem}"
    if is_baseline:
        return None, None
    cuda_only = sorted(code for code in runs.variant.codes if code in CUDA_ONLY_RULES)
    if runs.not_measurable:
        return (
            stats.NOT_MEASURABLE_HERE,
            f"{', '.join(cuda_only)} pays off only on CUDA; this machine has none",
        )
    caveat = (
        f"; {', '.join(cuda_only)} not measurable here (no CUDA)"
        if cuda_only and not cuda_available
        else ""
    )
    if losses.agree is False:
        return stats.CHANGES_RESULTS, (
            f"losses differ from the script as written by up to {losses.difference:.2g} "
            f"(relative; tolerance {losses.tolerance:.2g}){caveat}"
        )
    if point is None or interval is None:
        return stats.INCONCLUSIVE, "no timing to compare" + caveat
    verdict = stats.timing_verdict(point, interval)
    if verdict == stats.INCONCLUSIVE:
        return (
            verdict,
            "the interval straddles the threshold: run more --steps or --repeats" + caveat,
        )
    return verdict, caveat[2:] or None


def _syncs_per_step(result: dict) -> float:
    total = sum(site["count"] for site in result["syncs"]) + result["syncs_elsewhere"]
    return total / result["measured_steps"]


def _evidence(census: RunOutcome, findings: list[Diagnostic]) -> list[Evidence]:
    codes_by_row: dict[int, set[str]] = defaultdict(set)
    for diagnostic in findings:
        codes_by_row[diagnostic.location.row].add(diagnostic.code)
    steps = census.result["measured_steps"]
    return [
        Evidence(
            site["row"],
            site["call"],
            site["count"],
            steps,
            tuple(sorted(codes_by_row[site["row"]])),
        )
        for site in census.result["syncs"]
    ]


def to_json(report: VerifyReport) -> dict:
    """The report as the documented JSON object (see the module docstring)."""
    plan = report.plan
    return {
        "schema": SCHEMA,
        "script": plan.script,
        "args": list(plan.args),
        "steps": plan.steps,
        "warmup": plan.warmup,
        "repeats": plan.repeats,
        "nproc_per_node": plan.nproc_per_node,
        "torch_version": report.torch_version,
        "cuda_available": report.cuda_available,
        "findings": [
            {
                "code": d.code,
                "row": d.location.row,
                "column": d.location.column,
                "message": d.message,
                "fix": d.fix.applicability.value if d.fix else None,
            }
            for d in report.findings
        ],
        "variants": [_variant_json(summary) for summary in report.variants],
        "evidence": [
            {
                "row": item.row,
                "call": item.call,
                "count": item.count,
                "steps": item.steps,
                "per_step": item.count / item.steps,
                "codes": list(item.codes),
            }
            for item in report.evidence
        ],
    }


def _variant_json(summary: VariantSummary) -> dict:
    runs = summary.runs
    return {
        "name": runs.variant.name,
        "codes": list(runs.variant.codes),
        "verdict": summary.verdict,
        "note": summary.note,
        "step_time_s": summary.step_time_s,
        "rank_step_time_s": _optional_list(summary.rank_step_time_s),
        "steps_per_s": summary.steps_per_s,
        "speedup": summary.speedup,
        "speedup_ci": _optional_list(summary.speedup_ci),
        "syncs_per_step": summary.syncs_per_step,
        "syncs_per_step_per_rank": _optional_list(summary.syncs_per_step_per_rank),
        "data_wait_share": summary.data_wait_share,
        "peak_memory_bytes": summary.peak_memory_bytes,
        "memory_kind": summary.memory_kind,
        "losses_agree": summary.losses.agree,
        "loss_difference": summary.losses.difference,
        "loss_tolerance": summary.losses.tolerance,
        "loss_first_difference": summary.losses.first_difference,
        "runs": [
            {
                "mode": run.job.mode,
                "status": run.status,
                "step_time_s": run.step_time_s if run.measured else None,
                "wall_s": run.wall_s,
                "step_times_s": run.slowest_rank["step_times_s"] if run.measured else None,
                "losses": run.result["losses"]
                if run.measured and run.job.mode == "census"
                else None,
                "problem": None if run.measured else run.problem,
                "stderr_tail": None if run.measured else run.stderr_tail,
            }
            for run in (*runs.census, *runs.timing)
        ],
    }


def _optional_list(values: tuple[float, ...] | None) -> list[float] | None:
    return None if values is None else list(values)


def render(report: VerifyReport) -> str:
    """The human-readable report: header, table, failures, runtime evidence."""
    plan = report.plan
    device = device_text(report.cuda_available)
    processes = (
        f", {plan.nproc_per_node} processes (torch.distributed.run)" if plan.nproc_per_node else ""
    )
    lines = [
        (
            f"torchperf-lint verify {plan.script}: {plan.steps} steps after {plan.warmup} "
            f"warm-up, {plan.repeats} repeats{processes}, torch {report.torch_version or '?'}, "
            f"{device}"
        ),
        "",
    ]
    header = (
        "variant",
        "fixes",
        "step time",
        "steps/s",
        "speedup (95% CI)",
        "syncs/step",
        "data wait",
        "peak mem",
        "losses",
        "verdict",
    )
    rows = [header, *(_row(summary) for summary in report.variants)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines.extend(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows
    )
    if plan.nproc_per_node:
        lines.extend(["", "Per rank (the slowest rank's step time is the step time):"])
        lines.extend(_per_rank(summary) for summary in report.variants if summary.rank_step_time_s)
    notes = [(s.runs.variant.name, s.note) for s in report.variants if s.note]
    if notes:
        lines.append("")
        lines.extend(f"{name}: {note}" for name, note in notes)
    for summary in report.variants:
        for run in summary.runs.failures:
            lines.extend(["", f"{summary.runs.variant.name}, {run.job.mode} run: {run.problem}"])
            lines.extend(f"    {line}" for line in run.stderr_tail.splitlines())
    if report.evidence:
        lines.extend(["", "Host syncs per step in the script as written (census run):"])
        name = Path(plan.script).name
        for item in report.evidence:
            codes = f"  [{', '.join(item.codes)}]" if item.codes else ""
            lines.append(
                f"  {name}:{item.row} {CALL_TEXT[item.call]} ran {_times(item.count / item.steps)} "
                f"per step, {item.count:,} host syncs in {item.steps:,} steps{codes}"
            )
    return "\n".join(lines)


def _row(summary: VariantSummary) -> tuple[str, ...]:
    variant = summary.runs.variant
    losses = {True: "agree", False: "DIFFER", None: "-"}[summary.losses.agree]
    return (
        variant.name,
        ", ".join(variant.codes) or "-",
        _optional(summary.step_time_s, lambda t: f"{t * 1000:.2f} ms"),
        _optional(summary.steps_per_s, lambda r: f"{r:.1f}"),
        speedup_text(summary),
        _optional(summary.syncs_per_step, lambda s: f"{s:g}"),
        _optional(summary.data_wait_share, lambda s: f"{s:.0%}"),
        _optional(summary.peak_memory_bytes, lambda b: f"{b / 2**20:,.0f} MiB"),
        "-" if summary.runs.variant.is_baseline else losses,
        summary.verdict or "-",
    )


def _per_rank(summary: VariantSummary) -> str:
    times = ", ".join(f"{t * 1000:.2f} ms" for t in summary.rank_step_time_s or ())
    syncs = ", ".join(f"{s:g}" for s in summary.syncs_per_step_per_rank or ()) or "-"
    return f"  {summary.runs.variant.name}: step time {times}; syncs/step {syncs}"


def speedup_text(summary: VariantSummary) -> str:
    """`2.90x (2.70-3.10)`, or `-` when there is no speedup."""
    if summary.speedup is None or summary.speedup_ci is None:
        return "-"
    low, high = summary.speedup_ci
    return f"{summary.speedup:.2f}x ({low:.2f}-{high:.2f})"


def device_text(cuda_available: bool | None) -> str:
    return {True: "CUDA available", False: "CPU only", None: "device unknown"}[cuda_available]


def _optional(value: float | None, formatted: Callable[[float], str]) -> str:
    return "-" if value is None else formatted(value)


def _times(per_step: float) -> str:
    """`1×`, `1.01×`, `0.5×`: two decimals at most, trailing zeros dropped."""
    return f"{per_step:.2f}".rstrip("0").rstrip(".") + "×"
