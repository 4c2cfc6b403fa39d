"""`--output-format github`: GitHub Actions workflow commands, one annotation per finding."""

from __future__ import annotations

from torchperf_lint.report import Report


def render(report: Report) -> str:
    lines = []
    for d in report.diagnostics:
        properties = ",".join(
            f"{key}={_escape_property(str(value))}"
            for key, value in (
                ("title", f"torchperf-lint ({d.code})"),
                ("file", d.filename),
                ("line", d.location.row),
                ("col", d.location.column),
                ("endLine", d.end_location.row),
                ("endColumn", d.end_location.column),
            )
        )
        # Rows in a notebook are relative to the cell, so the message names the cell.
        cell = "" if d.cell is None else f"cell {d.cell}: "
        lines.append(f"::error {properties}::{_escape_data(f'{cell}{d.code} {d.message}')}\n")
    return "".join(lines)


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")
