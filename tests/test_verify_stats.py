"""`verify`'s statistics and verdicts, on synthetic samples (no process is started)."""

from __future__ import annotations

import math

from verify_helpers import PLAN, baseline_runs, finding, runs_of

from torchperf_lint.verify import stats
from torchperf_lint.verify.harness import Job
from torchperf_lint.verify.report import render, summarize, to_json
from torchperf_lint.verify.runner import RunOutcome, VariantRuns
from torchperf_lint.verify.variants import ALL_FIXES, BASELINE, Variant


def test_speedup_is_the_ratio_of_medians() -> None:
    assert stats.speedup([0.30, 0.20, 0.25], [0.10, 0.12, 0.11]) == 0.25 / 0.11


def test_bootstrap_interval_is_seeded_and_brackets_the_point() -> None:
    baseline, variant = [0.30, 0.31, 0.29, 0.30], [0.15, 0.16, 0.14, 0.15]
    first = stats.speedup_interval(baseline, variant)
    assert first == stats.speedup_interval(baseline, variant)
    low, high = first
    assert low <= stats.speedup(baseline, variant) <= high
    assert (round(low, 3), round(high, 3)) == (1.875, 2.143)  # 0.30 / 0.16 and 0.30 / 0.14


def test_timing_verdicts() -> None:
    assert stats.timing_verdict(2.0, (1.8, 2.2)) == stats.FASTER
    assert stats.timing_verdict(0.5, (0.4, 0.6)) == stats.SLOWER
    assert stats.timing_verdict(1.005, (0.99, 1.015)) == stats.NO_CHANGE
    # The whole interval above 1 but the effect under 2 %: not worth calling faster.
    assert stats.timing_verdict(1.012, (1.005, 1.03)) == stats.INCONCLUSIVE
    assert stats.timing_verdict(1.3, (0.9, 1.7)) == stats.INCONCLUSIVE


def test_losses_agree_within_the_baselines_own_noise() -> None:
    baseline = [1.0, 0.8, 0.6]
    check = stats.compare_losses(baseline, baseline, [1.0, 0.8, 0.6000001])
    assert check.agree is True
    assert check.tolerance == stats.LOSS_RTOL


def test_diverging_losses_are_detected() -> None:
    check = stats.compare_losses([1.0, 0.8, 0.6], [1.0, 0.8, 0.6], [1.0, 0.79, 0.55])
    assert check.agree is False
    assert math.isclose(check.difference, 0.05 / 0.6)


def test_an_irreproducible_baseline_says_nothing_about_losses() -> None:
    check = stats.compare_losses([1.0, 0.8], [1.0, 0.5], [1.0, 0.9])
    assert check == stats.LossCheck(None, None, None)


def test_nan_against_a_number_differs_and_nan_against_nan_does_not() -> None:
    nan = float("nan")
    assert stats.max_relative_difference([1.0, nan], [1.0, nan]) == 0.0
    assert stats.max_relative_difference([1.0, nan], [1.0, 2.0]) == math.inf


def test_report_faster_variant_and_runtime_evidence() -> None:
    fixed = Variant(ALL_FIXES, "fixed", (finding("TPL101", 3),), ("TPL101",))
    report = summarize(
        PLAN, [finding("TPL201", 7)], [baseline_runs(), runs_of(fixed, [0.05, 0.05, 0.052])]
    )
    document = to_json(report)
    variant = document["variants"][1]
    assert variant["verdict"] == "faster"
    assert variant["speedup"] == 2.0
    assert variant["losses_agree"] is True
    assert variant["syncs_per_step"] == 1.0
    assert variant["data_wait_share"] == 0.5
    assert document["evidence"] == [
        {"row": 7, "call": "item", "count": 10, "steps": 10, "per_step": 1.0, "codes": ["TPL201"]}
    ]
    text = render(report)
    assert "train.py:7 `.item()` ran 1× per step, 10 host syncs in 10 steps  [TPL201]" in text
    assert report.measured


def test_report_changes_results_wins_over_a_speedup() -> None:
    adamw = Variant("TPL601 3:5", "fixed", (finding("TPL601", 3),), ("TPL601",))
    report = summarize(PLAN, [], [baseline_runs(), runs_of(adamw, [0.05] * 3, losses=(1.0, 0.4))])
    assert report.variants[1].verdict == stats.CHANGES_RESULTS
    assert report.variants[1].note.startswith(
        "losses differ from the script as written by up to 0.2"
    )


def test_report_cuda_only_fix_is_not_measurable_on_cpu() -> None:
    pinned = Variant("TPL102 3:5", "fixed", (finding("TPL102", 3),), ("TPL102",))
    skipped = VariantRuns(pinned, "train.py", not_measurable=True)
    report = summarize(PLAN, [], [baseline_runs(), skipped])
    summary = report.variants[1]
    assert (summary.verdict, summary.speedup) == (stats.NOT_MEASURABLE_HERE, None)
    assert summary.note == "TPL102 pays off only on CUDA; this machine has none"


def test_report_a_failed_variant_keeps_the_others() -> None:
    broken = Variant(ALL_FIXES, "fixed", (finding("TPL101", 3),), ("TPL101",))
    runs = VariantRuns(broken, "train.py")
    crash = RunOutcome(
        Job("train.py", "x.py", "timing", 2, 10),
        "crashed",
        [{"error": "Trace\nOSError: boom"}],
        stderr_tail="Trace\nOSError: boom",
    )
    runs.timing = [crash]
    report = summarize(PLAN, [], [baseline_runs(), runs])
    assert report.variants[1].verdict == stats.FAILED
    assert report.variants[1].note == "a timing run crashed: OSError: boom"
    assert report.variants[0].step_time_s == 0.10
    assert "    OSError: boom" in render(report)
    assert report.measured


def test_report_not_measured_when_the_baseline_census_failed() -> None:
    runs = VariantRuns(Variant(BASELINE, "source"), "train.py")
    runs.census = [RunOutcome(Job("train.py", "train.py", "census", 2, 10), "timed-out")]
    report = summarize(PLAN, [], [runs])
    assert not report.measured
    assert to_json(report)["variants"][0]["runs"][0]["problem"] == (
        "killed at the time limit before reaching its steps"
    )
