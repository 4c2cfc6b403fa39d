"""`--output-format junit`: JUnit XML, as Ruff writes it, for the CI systems that show test
reports (GitLab's `artifacts:reports:junit`, Jenkins, Azure Pipelines, test-reporter actions).

One `<testsuite>` per file, one failed `<testcase>` per finding (`name` the code, `classname`
the path without its suffix, `line` and `column` where it is); a clean run is one passing
test case, so the report is never empty.
"""

from __future__ import annotations

from itertools import groupby
from pathlib import PurePath
from xml.etree import ElementTree

from torchperf_lint.report import Report
from torchperf_lint.report.github import message_with_cell

TOOL = "torchperf-lint"


def render(report: Report) -> str:
    diagnostics = report.diagnostics
    root = ElementTree.Element(
        "testsuites",
        name=TOOL,
        tests=str(max(1, len(diagnostics))),
        failures=str(len(diagnostics)),
        errors="0",
    )
    if not diagnostics:
        suite = _suite(root, TOOL, tests=1, failures=0)
        ElementTree.SubElement(suite, "testcase", name="No errors found", classname=TOOL)
    for filename, group in groupby(diagnostics, key=lambda d: d.filename):
        findings = list(group)
        suite = _suite(root, filename, tests=len(findings), failures=len(findings))
        classname = PurePath(filename).with_suffix("").as_posix()
        for diagnostic in findings:
            start, _ = report.file_span(diagnostic)
            case = ElementTree.SubElement(
                suite,
                "testcase",
                name=f"{TOOL}.{diagnostic.code}",
                classname=classname,
                line=str(start.row),
                column=str(start.column),
            )
            message = message_with_cell(diagnostic)
            failure = ElementTree.SubElement(case, "failure", message=message)
            failure.text = f"line {start.row}, col {start.column}, {message}"
    ElementTree.indent(root, space="    ")
    body = ElementTree.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'


def _suite(
    root: ElementTree.Element, name: str, tests: int, failures: int
) -> ElementTree.Element:
    return ElementTree.SubElement(
        root,
        "testsuite",
        name=name,
        tests=str(tests),
        disabled="0",
        errors="0",
        failures=str(failures),
        package=TOOL,
    )
