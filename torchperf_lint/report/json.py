"""`--output-format json`: an array of objects with Ruff's keys (plus `name`)."""

from __future__ import annotations

import json

from torchperf_lint.diagnostics import Diagnostic, Location
from torchperf_lint.report import Report


def render(report: Report) -> str:
    return json.dumps([record(d) for d in report.diagnostics], indent=2, ensure_ascii=False) + "\n"


def record(diagnostic: Diagnostic) -> dict[str, object]:
    """One diagnostic as a JSON object: code, name, message, filename, cell, location,
    end_location, fix, noqa_row, url, and `related`: the other places that explain it (for a
    sync in a per-step helper, the calls from the training loop), each with filename,
    location and message."""
    fix = diagnostic.fix
    return {
        "code": diagnostic.code,
        "name": diagnostic.name,
        "message": diagnostic.message,
        "filename": diagnostic.filename,
        "cell": diagnostic.cell,
        "location": _location(diagnostic.location),
        "end_location": _location(diagnostic.end_location),
        "fix": None
        if fix is None
        else {
            "applicability": fix.applicability.value,
            "message": fix.message,
            "edits": [
                {
                    "content": edit.content,
                    "location": _location(edit.start),
                    "end_location": _location(edit.end),
                }
                for edit in fix.edits
            ],
        },
        "noqa_row": diagnostic.noqa_row,
        "url": diagnostic.url,
        "related": [
            {
                "filename": item.filename,
                "location": _location(item.location),
                "message": item.message,
            }
            for item in diagnostic.related
            if item.location is not None
        ],
    }


def _location(location: Location) -> dict[str, int]:
    return {"row": location.row, "column": location.column}
