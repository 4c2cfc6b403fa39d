"""What linting one file gives the runner, whether linted now or replayed from the cache."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from torchperf_lint.diagnostics import FileResult

if TYPE_CHECKING:
    from torchperf_lint.program.link import Answer
    from torchperf_lint.program.summary import ModuleSummary


@dataclass
class Analysis:
    """What linting one file gives the runner: its result, summary and the answers read."""

    result: FileResult
    summary: ModuleSummary | None = None
    asked: dict[str, Answer] = field(default_factory=dict)
    # Replayed from the cache rather than linted in this run.
    replayed: bool = False
    # A hash of the summary's JSON, when it went through the cache (`cache.summary_digest`):
    # the program's answers are cached by the digests of all its summaries.
    summary_digest: str | None = None
    # Replayed from the cache, the digest under which the cache keeps the summary
    # (`Cache.summary`), in place of `summary`: it is read only if the program is linked.
    stored_summary: str | None = None
