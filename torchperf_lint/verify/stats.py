"""Statistics for `verify`: medians, a seeded bootstrap interval for the speedup, verdicts.

The sample of one variant is its per-run step times (one number per run, runs alternating
A B A B ...), so slow drifts of the machine hit every variant alike.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

RESAMPLES = 2000
CONFIDENCE = 0.95
SEED = 20240607
# A change smaller than this is "no change" even when the interval excludes 1: nobody
# rewrites training code for 1%, and run-to-run noise on a shared machine is of that order.
MIN_EFFECT = 0.02
# Loss curves agree when every loss is within this relative distance of the baseline's, or
# within ten times the baseline's own run-to-run difference when that is larger.
LOSS_RTOL = 1e-5
# A baseline whose two census runs differ by more than this is not reproducible (unseeded):
# its losses say nothing about a rewrite.
IRREPRODUCIBLE = 1e-2

FASTER = "faster"
SLOWER = "slower"
NO_CHANGE = "no-change"
INCONCLUSIVE = "inconclusive"
NOT_MEASURABLE_HERE = "not-measurable-here"
CHANGES_RESULTS = "changes-results"
FAILED = "failed"


def median(values: Sequence[float]) -> float:
    """The median of a non-empty sample."""
    return statistics.median(values)


def speedup(baseline: Sequence[float], variant: Sequence[float]) -> float:
    """How many times faster the variant's median step time is (above 1: faster)."""
    return median(baseline) / median(variant)


def speedup_interval(
    baseline: Sequence[float],
    variant: Sequence[float],
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = SEED,
) -> tuple[float, float]:
    """Percentile bootstrap interval of `speedup`, resampling each variant's runs; seeded,
    so the same samples always give the same interval."""
    generator = random.Random(seed)
    ratios = sorted(
        speedup(
            generator.choices(baseline, k=len(baseline)), generator.choices(variant, k=len(variant))
        )
        for _ in range(resamples)
    )
    tail = (1 - confidence) / 2
    low = ratios[math.floor(tail * (resamples - 1))]
    high = ratios[math.ceil((1 - tail) * (resamples - 1))]
    return low, high


def timing_verdict(point: float, interval: tuple[float, float]) -> str:
    """`faster`/`slower` when the whole interval is on one side of 1 and the effect is at
    least `MIN_EFFECT`; `no-change` when the whole interval is within `MIN_EFFECT` of 1;
    otherwise `inconclusive` (more steps or repeats would tell)."""
    low, high = interval
    if low > 1 and point >= 1 + MIN_EFFECT:
        return FASTER
    if high < 1 and point <= 1 - MIN_EFFECT:
        return SLOWER
    if low >= 1 - MIN_EFFECT and high <= 1 + MIN_EFFECT:
        return NO_CHANGE
    return INCONCLUSIVE


def max_relative_difference(reference: Sequence[float], other: Sequence[float]) -> float:
    """The largest `|a - b| / max(|a|, tiny)` over the two curves' common prefix; NaN equals
    NaN, NaN against a number is infinitely different."""
    largest = 0.0
    for a, b in zip(reference, other):
        if math.isnan(a) and math.isnan(b):
            continue
        if math.isnan(a) or math.isnan(b):
            return math.inf
        largest = max(largest, abs(a - b) / max(abs(a), 1e-12))
    return largest


def first_difference(
    reference: Sequence[float], other: Sequence[float], tolerance: float
) -> int | None:
    """The index of the first loss whose relative difference exceeds `tolerance`; None when
    the curves agree over their common prefix."""
    for index, (a, b) in enumerate(zip(reference, other)):
        if max_relative_difference([a], [b]) > tolerance:
            return index
    return None


@dataclass(frozen=True)
class LossCheck:
    """Whether a variant's losses follow the baseline's. `agree` is None when it cannot be
    told: no losses were recorded, or the baseline does not reproduce itself. `first_difference`
    is the index of the first loss beyond the tolerance."""

    agree: bool | None
    difference: float | None
    tolerance: float | None
    first_difference: int | None = None


def compare_losses(
    baseline: Sequence[float], baseline_again: Sequence[float], variant: Sequence[float]
) -> LossCheck:
    """Compare a variant's losses with the baseline's, judging by how well the baseline
    reproduces itself (`baseline_again` is a second run of the unchanged script)."""
    if not baseline or not variant or not baseline_again:
        return LossCheck(None, None, None)
    noise = max_relative_difference(baseline, baseline_again)
    if noise > IRREPRODUCIBLE:
        return LossCheck(None, None, None)
    tolerance = max(LOSS_RTOL, 10 * noise)
    difference = max_relative_difference(baseline, variant)
    return LossCheck(
        difference <= tolerance,
        difference,
        tolerance,
        first_difference(baseline, variant, tolerance),
    )
