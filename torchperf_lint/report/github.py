"""`--output-format github`: GitHub Actions workflow commands, one annotation per finding."""

from __future__ import annotations

from torchperf_lint.diagnostics import Diagnostic
from torchperf_lint.report import Report


def render(report: Report) -> str:
    lines = []
    for d in report.diagnostics:
        start, end = report.file_span(d)
        properties = ",".join(
            f"{key}={_escape_property(str(value))}"
            for key, value in (
                ("title", f"torchperf-lint ({d.code})"),
                ("file", d.filename),
                ("line", start.row),
                ("col", start.column),
                ("endLine", end.row),
                ("endColumn", end.column),
            )
        )
        # The line is the notebook file's; the message names the cell in words too.
        cell = "" if d.cell is None else f"cell {d.cell}: "
        lines.append(f"::error {properties}::{_escape_data(f'{cell}{d.code} {d.message}')}\n")
    return "".join(lines)


def message_with_cell(diagnostic: Diagnostic) -> str:
    """The message, after `cell N: ` in a notebook: the formats that point at a line of the
    `.ipynb` file name the cell in words too."""
    if diagnostic.cell is None:
        return diagnostic.message
    return f"cell {diagnostic.cell}: {diagnostic.message}"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")
