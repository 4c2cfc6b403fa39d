"""Print every finding of the selected rules over real repositories, and a count per rule.

    python benchmarks/corpus_findings.py REPO_DIR [REPO_DIR ...] [--select CODES]
        [--target-device auto|cuda|cpu] [--counts-only]

This is how precision on real code is reviewed: every printed finding is read and judged by a
person. Without --select the default rule set runs. Repositories are read, never written.
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path

from torchperf_lint.config import resolve_selection
from torchperf_lint.engine import LintSettings, SourceError, lint_text
from torchperf_lint.rules.base import RuleOptions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repositories", nargs="+", type=Path)
    parser.add_argument("--select", default=None, help="comma-separated codes or prefixes")
    parser.add_argument("--target-device", default="auto", choices=("auto", "cuda", "cpu"))
    parser.add_argument("--counts-only", action="store_true")
    arguments = parser.parse_args()
    select = arguments.select.split(",") if arguments.select else None
    rules = resolve_selection(select)
    settings = LintSettings(rules, RuleOptions(target_device=arguments.target_device))
    for repository in arguments.repositories:
        counts: collections.Counter[str] = collections.Counter()
        files = sorted(repository.rglob("*.py"))
        for path in files:
            text = path.read_text(encoding="utf-8", errors="replace")
            name = path.relative_to(repository.parent).as_posix()
            try:
                diagnostics = lint_text(text, name, settings)
            except SourceError as error:
                print(f"{name}: {error.reason}")
                continue
            lines = text.splitlines()
            for diagnostic in diagnostics:
                counts[diagnostic.code] += 1
                if not arguments.counts_only:
                    row, column = diagnostic.location.row, diagnostic.location.column
                    source = lines[row - 1].strip()[:100]
                    print(f"{name}:{row}:{column}: {diagnostic.code} | {source}")
        summary = ", ".join(f"{code} {count}" for code, count in sorted(counts.items()))
        print(f"== {repository.name}: {len(files)} files; {summary or 'no findings'}")


if __name__ == "__main__":
    main()
