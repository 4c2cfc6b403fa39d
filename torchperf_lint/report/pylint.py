"""`--output-format pylint`: `path:row: [CODE] message`, the line format that editors and CI
problem matchers written for pylint's `parseable` output read (Ruff's `pylint`)."""

from __future__ import annotations

from torchperf_lint.report import Report
from torchperf_lint.report.github import message_with_cell


def render(report: Report) -> str:
    lines = []
    for diagnostic in report.diagnostics:
        start, _ = report.file_span(diagnostic)
        lines.append(
            f"{diagnostic.filename}:{start.row}: [{diagnostic.code}] {message_with_cell(diagnostic)}\n"
        )
    return "".join(lines)
