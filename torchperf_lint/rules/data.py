"""TPL1xx — data pipeline and host-to-device transfer."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from torchperf_lint.diagnostics import Applicability
from torchperf_lint.facts import FileFacts
from torchperf_lint.facts.arguments import MISSING
from torchperf_lint.rules.base import Finding, Rule
from torchperf_lint.rules.edits import add_keyword, replace_argument

SEED_SPEED = "Seed document 001, \"PyTorch 모델 훈련 속도를 획기적으로 높이는 7가지 최적화 기법\", section 1"
SEED_TRANSFER = "Seed document 000, \"성능 최적화 팁\", section \"데이터 전송 병목 최소화\""
DATA_DOCS = "https://pytorch.org/docs/stable/data.html#multi-process-data-loading"
PIN_DOCS = "https://pytorch.org/docs/stable/data.html#memory-pinning"

# What the fix proposes: enough workers to overlap loading with compute on most machines,
# without the oversubscription of one worker per core on a many-core box.
SUGGESTED_WORKERS = 4


def trains_at_import_time(facts: FileFacts) -> bool:
    """A hot loop at module level outside `if __name__ == "__main__":`.

    Spawned DataLoader workers (the default on Windows and macOS) re-import the main module,
    so such a module would start training again in every worker.
    """
    return any(
        loop.function is None and loop.is_hot and not facts.guards.under_main_guard(loop.node)
        for loop in facts.loops.all
    )


class DataLoaderNoWorkers(Rule):
    """`DataLoader` loads every batch in the training process (`num_workers` is 0).

    ## What it does
    Checks for `DataLoader(...)` calls whose `num_workers` is missing or the literal `0`.

    ## Why is this bad?
    With `num_workers=0` the main process reads, decodes and collates every batch itself, and
    the GPU waits while it does. Worker processes prepare the next batches while the model
    trains on the current one. Iterable datasets that already stream from their own workers are
    still flagged: the DataLoader's workers are what overlap loading with the training step.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, shuffle=True)
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=4, persistent_workers=True)
    ```

    ## Fix safety
    Unsafe: workers need a picklable dataset and `collate_fn`, each worker holds a copy of the
    dataset, and random augmentation draws from per-worker generators. The fix sets
    `num_workers=4` (tune it to your cores) and `persistent_workers=True`. It is display-only
    when the module trains at import time without an `if __name__ == "__main__":` guard:
    spawned workers (Windows, macOS) re-import the module and would run the training again.

    ## References
    - PyTorch docs, [Multi-process data loading](https://pytorch.org/docs/stable/data.html#multi-process-data-loading)
    - PyTorch Performance Tuning Guide, "Enable asynchronous data loading and augmentation"
    - Seed document 001, section 1 (num_workers), and seed document 000, "데이터 전송 병목 최소화"
    """

    code = "TPL101"
    name = "dataloader-no-workers"
    message = "`DataLoader` without `num_workers` loads batches in the training process; set `num_workers`"
    default = True
    fix_applicability = Applicability.UNSAFE

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        guarded = not trains_at_import_time(facts)
        for loader in facts.dataloaders.constructions:
            workers = loader.value("num_workers")
            if workers is not MISSING and workers != 0:
                continue
            suggested = cst.Integer(str(SUGGESTED_WORKERS))
            passed = loader.argument("num_workers")
            new_call = (
                replace_argument(loader.call, passed, suggested)
                if passed is not None
                else add_keyword(loader.call, "num_workers", suggested)
            )
            if loader.value("persistent_workers") is MISSING:
                new_call = add_keyword(new_call, "persistent_workers", cst.Name("True"))
            fix = self.replace(
                facts,
                loader.call,
                new_call,
                f"Load batches in {SUGGESTED_WORKERS} persistent worker processes",
                Applicability.UNSAFE if guarded else Applicability.DISPLAY_ONLY,
            )
            yield self.finding(loader.call, fix)


RULES = (DataLoaderNoWorkers,)
