"""`--output-format sarif`: SARIF 2.1.0, as GitHub code scanning accepts it.

Every rule is described in `tool.driver.rules`; each result points at a file by a URI relative
to the working directory (forward slashes), with 1-based code-point columns; a notebook's
finding points at the line of the `.ipynb` file that holds its code. Levels: `error` for a file
that could not be linted, `warning` for default rules, `note` for opt-in rules.
`partialFingerprints` (see `report.fingerprints`) let code scanning follow a finding across
commits that move it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import quote

from torchperf_lint import __version__
from torchperf_lint.diagnostics import FILE_ERROR_CODE, FILE_ERROR_NAME, Diagnostic
from torchperf_lint.docs import HOMEPAGE, render_page
from torchperf_lint.registry import RuleInfo
from torchperf_lint.report import Report, fingerprints, severity
from torchperf_lint.report.github import message_with_cell

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
# The key of our fingerprint in `partialFingerprints`; the version changes with its recipe.
FINGERPRINT_KEY = "torchperf-lint/v1"
FILE_ERROR_DESCRIPTOR = {
    "id": FILE_ERROR_CODE,
    "name": FILE_ERROR_NAME,
    "shortDescription": {"text": "A file could not be read, decoded or parsed."},
    "fullDescription": {
        "text": "The file was not linted: it could not be read, decoded or parsed."
    },
    "help": {
        "text": "Fix the reported problem so the file can be linted.",
        "markdown": "Fix the reported problem so the file can be linted.",
    },
    "helpUri": HOMEPAGE,
    "defaultConfiguration": {"level": "error"},
    "properties": {"tags": ["error"]},
}


def render(report: Report) -> str:
    descriptors = [_descriptor(rule) for rule in report.rules] + [FILE_ERROR_DESCRIPTOR]
    index = {descriptor["id"]: position for position, descriptor in enumerate(descriptors)}
    document = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "torchperf-lint",
                        "version": __version__,
                        "informationUri": HOMEPAGE,
                        "rules": descriptors,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": [
                    _result(d, index, report, fingerprint)
                    for d, fingerprint in zip(report.diagnostics, fingerprints(report))
                ],
            }
        ],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _descriptor(rule: RuleInfo) -> dict[str, object]:
    sections = rule.documentation()
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary()},
        "fullDescription": {"text": sections.get("What it does", rule.summary())},
        "help": {
            "text": sections.get("Why is this bad?", rule.message),
            "markdown": render_page(rule),
        },
        "helpUri": rule.url(),
        "defaultConfiguration": {"level": "warning" if rule.default else "note"},
        "properties": {
            "tags": ["performance", "pytorch"],
            "default": rule.default,
            "fix": rule.fix_applicability.value if rule.fix_applicability else "none",
        },
    }


def _result(
    diagnostic: Diagnostic, index: dict[str, int], report: Report, fingerprint: str
) -> dict[str, object]:
    result: dict[str, object] = {"ruleId": diagnostic.code}
    if diagnostic.code in index:
        result["ruleIndex"] = index[diagnostic.code]
    start, end = report.file_span(diagnostic)
    result.update(
        {
            "level": severity(diagnostic, report.rules),
            "message": {"text": message_with_cell(diagnostic)},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {
                            "uri": artifact_uri(diagnostic.filename, report.cwd)
                        },
                        "region": {
                            "startLine": start.row,
                            "startColumn": start.column,
                            "endLine": end.row,
                            "endColumn": end.column,
                        },
                    }
                }
            ],
            "partialFingerprints": {FINGERPRINT_KEY: fingerprint},
        }
    )
    related = [item for item in diagnostic.related if item.location is not None]
    if related:
        result["relatedLocations"] = [
            {
                "id": number,
                "physicalLocation": {
                    "artifactLocation": {"uri": artifact_uri(item.filename, report.cwd)},
                    "region": {"startLine": item.location.row, "startColumn": item.location.column},
                },
                "message": {"text": item.message},
            }
            for number, item in enumerate(related)
        ]
    if diagnostic.cell is not None:
        result["properties"] = {"cell": diagnostic.cell}
    return result


def artifact_uri(filename: str, cwd: Path, percent_encoded: bool = True) -> str:
    """`filename` as a URI reference relative to `cwd`, with forward slashes (a plain relative
    path when not `percent_encoded`)."""
    path = Path(filename)
    absolute = path if path.is_absolute() else cwd / path
    try:
        relative = os.path.relpath(absolute, cwd)
    except ValueError:  # another drive on Windows: no relative form exists
        return absolute.as_uri()
    posix = Path(relative).as_posix()
    if not percent_encoded:
        return posix
    # A name that is not valid UTF-8 keeps its bytes, percent-encoded, as a URI does.
    return quote(posix, errors="surrogateescape")
