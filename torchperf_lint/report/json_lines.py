"""`--output-format json-lines`: one finding per line, each the object `json` writes (Ruff's
`json-lines`), so a consumer can stream them."""

from __future__ import annotations

import json

from torchperf_lint.report import Report
from torchperf_lint.report.json import record


def render(report: Report) -> str:
    return "".join(json.dumps(record(d), ensure_ascii=False) + "\n" for d in report.diagnostics)
