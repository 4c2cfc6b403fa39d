"""`--output-format gitlab`: a GitLab Code Quality report (a JSON array, one object per finding
with `description`, `check_name`, `fingerprint`, `severity` and `location.path` /
`location.lines.begin`), for `artifacts:reports:codequality`.

Paths are relative to `CI_PROJECT_DIR` when GitLab sets it (the repository root), else to the
working directory. `description` starts with the code, since GitLab does not show
`check_name`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from torchperf_lint.report import Report, fingerprints, severity
from torchperf_lint.report.github import message_with_cell
from torchperf_lint.report.sarif import artifact_uri

# Code Quality severities for SARIF-style levels.
SEVERITIES = {"error": "critical", "warning": "major", "note": "minor"}


def render(report: Report) -> str:
    project = os.environ.get("CI_PROJECT_DIR")
    root = Path(project) if project else report.cwd
    issues = []
    for diagnostic, fingerprint in zip(report.diagnostics, fingerprints(report)):
        start, end = report.file_span(diagnostic)
        path = diagnostic.filename if Path(diagnostic.filename).is_absolute() else str(
            report.cwd / diagnostic.filename
        )
        issues.append(
            {
                "check_name": diagnostic.code,
                "description": f"{diagnostic.code}: {message_with_cell(diagnostic)}",
                "severity": SEVERITIES[severity(diagnostic, report.rules)],
                "fingerprint": fingerprint,
                "location": {
                    "path": artifact_uri(path, root, percent_encoded=False),
                    "lines": {"begin": start.row, "end": end.row},
                },
            }
        )
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"
