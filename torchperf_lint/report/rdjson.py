"""`--output-format rdjson`: reviewdog's Diagnostic Format (one `DiagnosticResult` object), so
`reviewdog -f=rdjson` can comment on pull requests and offer each fix as a suggestion.

Columns count UTF-8 bytes, as the format defines them; ends are exclusive. Notebook findings
point at the line of the `.ipynb` file and carry no suggestion (their edits are in the cell's
code, not in the JSON).
"""

from __future__ import annotations

import json

from torchperf_lint.diagnostics import Diagnostic, Location
from torchperf_lint.docs import HOMEPAGE
from torchperf_lint.report import Report, severity
from torchperf_lint.report.github import message_with_cell

SEVERITIES = {"error": "ERROR", "warning": "WARNING", "note": "INFO"}


def render(report: Report) -> str:
    lines_of: dict[str, list[str]] = {}

    def line(filename: str, row: int) -> str:
        if filename not in lines_of:
            text = report.source_of(filename)
            lines_of[filename] = [] if text is None else text.splitlines()
        lines = lines_of[filename]
        return lines[row - 1] if 1 <= row <= len(lines) else ""

    def position(filename: str, location: Location) -> dict[str, int]:
        prefix = line(filename, location.row)[: location.column - 1]
        return {"line": location.row, "column": len(prefix.encode("utf-8")) + 1}

    diagnostics = []
    for diagnostic in report.diagnostics:
        start, end = report.file_span(diagnostic)
        name = diagnostic.filename
        entry: dict[str, object] = {
            "message": message_with_cell(diagnostic),
            "location": {
                "path": name,
                "range": {"start": position(name, start), "end": position(name, end)},
            },
            "severity": SEVERITIES[severity(diagnostic, report.rules)],
            "code": _code(diagnostic),
        }
        if diagnostic.fix is not None and diagnostic.cell is None:
            entry["suggestions"] = [
                {
                    "range": {
                        "start": position(name, edit.start),
                        "end": position(name, edit.end),
                    },
                    "text": edit.content,
                }
                for edit in diagnostic.fix.edits
            ]
        diagnostics.append(entry)
    document = {
        "source": {"name": "torchperf-lint", "url": HOMEPAGE},
        "severity": "WARNING",
        "diagnostics": diagnostics,
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _code(diagnostic: Diagnostic) -> dict[str, str]:
    code = {"value": diagnostic.code}
    if diagnostic.url:
        code["url"] = diagnostic.url
    return code
