"""`--output-format sarif`: SARIF 2.1.0, as GitHub code scanning accepts it.

Every rule is described in `tool.driver.rules`; each result points at a file by a URI relative
to the working directory (forward slashes), with 1-based code-point columns.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import quote

from torchperf_lint import __version__
from torchperf_lint.diagnostics import Diagnostic
from torchperf_lint.docs import HOMEPAGE, render_page
from torchperf_lint.report import FILE_ERROR_CODE, FILE_ERROR_NAME, Report
from torchperf_lint.rules.base import Rule

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
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
                "results": [_result(d, index, report.cwd) for d in report.diagnostics],
            }
        ],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _descriptor(rule: type[Rule]) -> dict[str, object]:
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
        "properties": {
            "tags": ["performance", "pytorch"],
            "default": rule.default,
            "fix": rule.fix_applicability.value if rule.fix_applicability else "none",
        },
    }


def _result(diagnostic: Diagnostic, index: dict[str, int], cwd: Path) -> dict[str, object]:
    result: dict[str, object] = {"ruleId": diagnostic.code}
    if diagnostic.code in index:
        result["ruleIndex"] = index[diagnostic.code]
    result.update(
        {
            "level": "error",
            "message": {"text": _message(diagnostic)},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": artifact_uri(diagnostic.filename, cwd)},
                        "region": {
                            "startLine": diagnostic.location.row,
                            "startColumn": diagnostic.location.column,
                            "endLine": diagnostic.end_location.row,
                            "endColumn": diagnostic.end_location.column,
                        },
                    }
                }
            ],
        }
    )
    related = [item for item in diagnostic.related if item.location is not None]
    if related:
        result["relatedLocations"] = [
            {
                "id": number,
                "physicalLocation": {
                    "artifactLocation": {"uri": artifact_uri(item.filename, cwd)},
                    "region": {"startLine": item.location.row, "startColumn": item.location.column},
                },
                "message": {"text": item.message},
            }
            for number, item in enumerate(related)
        ]
    if diagnostic.cell is not None:
        result["properties"] = {"cell": diagnostic.cell}
    return result


def _message(diagnostic: Diagnostic) -> str:
    # Rows in a notebook are relative to the cell, so the message names the cell.
    if diagnostic.cell is None:
        return diagnostic.message
    return f"cell {diagnostic.cell}: {diagnostic.message}"


def artifact_uri(filename: str, cwd: Path) -> str:
    """`filename` as a URI reference relative to `cwd`, with forward slashes."""
    path = Path(filename)
    absolute = path if path.is_absolute() else cwd / path
    try:
        relative = os.path.relpath(absolute, cwd)
    except ValueError:  # another drive on Windows: no relative form exists
        return absolute.as_uri()
    # A name that is not valid UTF-8 keeps its bytes, percent-encoded, as a URI does.
    return quote(Path(relative).as_posix(), errors="surrogateescape")
