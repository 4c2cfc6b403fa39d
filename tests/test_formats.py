"""The formats CI systems and review tools read, each checked against its consumer's contract:
GitLab Code Quality (its documented fields, as a JSON schema), JUnit XML (the structure that
GitLab, Jenkins and test-report actions read), reviewdog's rdjson (its schema's types and
enums), json-lines, pylint's line format, Ruff's grouped layout, and SARIF's fingerprints.

Notebook findings point at the line of the `.ipynb` file that holds the code in every format
that names a line of the file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree

import pytest
from cli_helpers import torchperf_lint, write_files
from consumer_schemas import GITLAB_SCHEMA, RDJSON_SCHEMA

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is a test dependency")

# TPL101 (default rule: warning) in loader.py and in the notebook, TPL103 (opt-in: note) in
# workers.py, TPL105 with a safe fix after a non-ASCII name in moved.py, a syntax error (E902:
# error) in broken.py.
FILES = {
    "src/loader.py": (
        "import torch\n"
        "from torch.utils.data import DataLoader\n"
        "\n"
        "\n"
        "def make_loader(dataset):\n"
        "    return DataLoader(dataset, batch_size=32)\n"
    ),
    "src/workers.py": (
        "import torch\n"
        "from torch.utils.data import DataLoader\n"
        "\n"
        "loader = DataLoader(torch.arange(4), num_workers=2)\n"
        "for epoch in range(3):\n"
        "    for batch in loader:\n"
        "        print(batch)\n"
    ),
    "src/moved.py": "import torch\n\nfor x in loader: été = torch.zeros(3).cuda()\n",
    "src/broken.py": "import torch\nx = 1 1\n",
}
SELECT = ("--no-cache", "--select", "TPL101,TPL103,TPL105")
NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Data\n"]},
        {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": [
                "import torch\n",
                "from torch.utils.data import DataLoader\n",
                "loader = DataLoader(images)\n",
                "batches = list(loader)",
            ],
        },
    ],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("formats") / "project"
    write_files(root, {**FILES, "nb.ipynb": json.dumps(NOTEBOOK, indent=1) + "\n"})
    return root


def run(project: Path, output_format: str, *extra: str, env: dict[str, str] | None = None):
    result = torchperf_lint(
        *SELECT, "--output-format", output_format, *extra, "src", "nb.ipynb", cwd=project, env=env
    )
    assert result.returncode == 1, result.stderr
    assert result.stderr == ""
    return result.stdout


def notebook_line(project: Path, quoted: str) -> tuple[int, int]:
    """Row and column in nb.ipynb of the source line whose JSON string starts with `quoted`."""
    for row, line in enumerate((project / "nb.ipynb").read_text().splitlines(), start=1):
        if quoted in line:
            return row, line.index(quoted) + 2
    raise AssertionError(quoted)


def test_gitlab_code_quality_report(project):
    issues = json.loads(run(project, "gitlab"))
    jsonschema.validate(issues, GITLAB_SCHEMA)
    summary = [
        (i["check_name"], i["severity"], i["location"]["path"], i["location"]["lines"]["begin"])
        for i in issues
    ]
    nb_row, _ = notebook_line(project, '"loader = DataLoader(')
    assert summary == [
        ("TPL101", "major", "nb.ipynb", nb_row),
        ("E902", "critical", "src/broken.py", 2),
        ("TPL101", "major", "src/loader.py", 6),
        ("TPL105", "major", "src/moved.py", 3),
        ("TPL103", "minor", "src/workers.py", 4),
    ]
    # GitLab shows the description, not the check name: the code leads it.
    assert issues[2]["description"].startswith("TPL101: `DataLoader` without `num_workers`")
    assert issues[0]["description"].startswith("TPL101: cell 2: ")
    assert len({issue["fingerprint"] for issue in issues}) == len(issues)


def test_gitlab_paths_are_relative_to_the_project_directory(project):
    issues = json.loads(run(project, "gitlab", env={"CI_PROJECT_DIR": str(project.parent)}))
    assert issues[1]["location"]["path"] == "project/src/broken.py"


def test_fingerprints_survive_lines_added_above_and_differ_per_finding(project, tmp_path):
    moved = tmp_path / "project"
    write_files(moved, {name: "# a comment\n" + text for name, text in FILES.items()})
    write_files(moved, {"nb.ipynb": json.dumps(NOTEBOOK, indent=1) + "\n"})
    before = json.loads(run(project, "sarif"))["runs"][0]["results"]
    after = json.loads(run(moved, "sarif"))["runs"][0]["results"]
    rows = [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in after]
    assert rows[1:] == [
        r["locations"][0]["physicalLocation"]["region"]["startLine"] + 1 for r in before[1:]
    ]
    assert [r["partialFingerprints"] for r in after] == [r["partialFingerprints"] for r in before]
    gitlab = [issue["fingerprint"] for issue in json.loads(run(project, "gitlab"))]
    assert gitlab == [r["partialFingerprints"]["torchperf-lint/v1"] for r in before]


def test_sarif_levels_and_notebook_region(project):
    results = json.loads(run(project, "sarif"))["runs"][0]["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [
        ("TPL101", "warning"),
        ("E902", "error"),
        ("TPL101", "warning"),
        ("TPL105", "warning"),
        ("TPL103", "note"),
    ]
    row, column = notebook_line(project, '"loader = DataLoader(')
    assert results[0]["locations"][0]["physicalLocation"]["region"] == {
        "startLine": row,
        "startColumn": column + 9,
        "endLine": row,
        "endColumn": column + 27,
    }


def test_junit_report_as_ci_test_report_readers_see_it(project):
    text = run(project, "junit")
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    root = ElementTree.fromstring(text.encode("utf-8"))
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    cases = root.findall("testsuite/testcase")
    assert int(root.get("tests")) == int(root.get("failures")) == len(cases) == 5
    assert root.get("errors") == "0"
    for suite in suites:
        assert int(suite.get("tests")) == len(suite.findall("testcase"))
        assert int(suite.get("failures")) == len(suite.findall("testcase/failure"))
        assert suite.get("errors") == "0"
    assert [suite.get("name") for suite in suites] == [
        "nb.ipynb",
        "src/broken.py",
        "src/loader.py",
        "src/moved.py",
        "src/workers.py",
    ]
    loader = suites[2].find("testcase")
    assert loader.attrib == {
        "name": "torchperf-lint.TPL101",
        "classname": "src/loader",
        "line": "6",
        "column": "12",
    }
    failure = loader.find("failure")
    assert failure.get("message").startswith("`DataLoader` without `num_workers`")
    assert failure.text == f"line 6, col 12, {failure.get('message')}"
    row, column = notebook_line(project, '"loader = DataLoader(')
    notebook_case = suites[0].find("testcase")
    assert (notebook_case.get("line"), notebook_case.get("column")) == (str(row), str(column + 9))


def test_junit_of_a_clean_run_is_one_passing_test(tmp_path):
    write_files(tmp_path, {"clean.py": "import torch\n"})
    result = torchperf_lint("--no-cache", "--output-format", "junit", "clean.py", cwd=tmp_path)
    assert result.returncode == 0
    root = ElementTree.fromstring(result.stdout.encode("utf-8"))
    assert (root.get("tests"), root.get("failures")) == ("1", "0")
    (case,) = root.findall("testsuite/testcase")
    assert case.get("name") == "No errors found"
    assert case.find("failure") is None


def test_rdjson_for_reviewdog(project):
    document = json.loads(run(project, "rdjson"))
    jsonschema.validate(document, RDJSON_SCHEMA)
    assert document["source"]["name"] == "torchperf-lint"
    diagnostics = {(d["location"]["path"], d["code"]["value"]): d for d in document["diagnostics"]}
    moved = diagnostics[("src/moved.py", "TPL105")]
    # Columns count UTF-8 bytes: `for x in loader: été = ` is 23 characters and 25 bytes.
    assert moved["location"]["range"] == {
        "start": {"line": 3, "column": 26},
        "end": {"line": 3, "column": 47},
    }
    assert moved["severity"] == "WARNING"
    assert moved["code"]["url"].endswith("TPL105-tensor-created-then-moved.md")
    assert [s["text"] for s in moved["suggestions"]] == ['torch.zeros(3, device="cuda")']
    assert diagnostics[("src/workers.py", "TPL103")]["severity"] == "INFO"
    assert diagnostics[("src/broken.py", "E902")]["severity"] == "ERROR"
    notebook = diagnostics[("nb.ipynb", "TPL101")]
    row, column = notebook_line(project, '"loader = DataLoader(')
    assert notebook["location"]["range"]["start"] == {"line": row, "column": column + 9}
    assert "suggestions" not in notebook


def test_json_lines_are_the_json_records_one_per_line(project):
    lines = run(project, "json-lines").splitlines()
    assert [json.loads(line) for line in lines] == json.loads(run(project, "json"))


def test_pylint_lines_match_pylints_parseable_format(project):
    lines = run(project, "pylint").splitlines()
    parsed = [re.fullmatch(r"(.+?):(\d+): \[(\w+)\] (.+)", line).groups() for line in lines]
    row, _ = notebook_line(project, '"loader = DataLoader(')
    assert [(path, int(line), code) for path, line, code, _ in parsed] == [
        ("nb.ipynb", row, "TPL101"),
        ("src/broken.py", 2, "E902"),
        ("src/loader.py", 6, "TPL101"),
        ("src/moved.py", 3, "TPL105"),
        ("src/workers.py", 4, "TPL103"),
    ]
    assert parsed[0][3].startswith("cell 2: `DataLoader` without")


def test_grouped_lists_findings_under_their_file_then_the_summary(project):
    assert run(project, "grouped") == (
        "nb.ipynb:\n"
        "  cell 2:3:10 TPL101 `DataLoader` without `num_workers` loads batches in the training "
        "process; set `num_workers`\n"
        "\n"
        "src/broken.py:\n"
        "  2:7 E902 syntax error: invalid syntax\n"
        "\n"
        "src/loader.py:\n"
        "  6:12 TPL101 `DataLoader` without `num_workers` loads batches in the training process; "
        "set `num_workers`\n"
        "\n"
        "src/moved.py:\n"
        "  3:24 TPL105 [*] Tensor created on the CPU then moved to the device; pass `device=` to "
        "the factory\n"
        "\n"
        "src/workers.py:\n"
        "  4:10 TPL103 `DataLoader` workers are restarted every epoch; pass "
        "`persistent_workers=True`\n"
        "\n"
        "Found 5 errors (1 fixable with --fix).\n"
        "3 more fixes available with --unsafe-fixes.\n"
    )


def test_grouped_pads_rows_and_columns_within_a_file(tmp_path):
    write_files(
        tmp_path,
        {
            "many.py": "import torch\n"
            + "\n" * 6
            + "for x in loader:\n"
            + "    a = torch.zeros(3).cuda()\n"
            + "\n" * 3
            + "    b = [1, 2, torch.ones(2).cuda()]\n"
        },
    )
    result = torchperf_lint("--no-cache", "--output-format", "grouped", "many.py", cwd=tmp_path)
    message = "TPL105 [*] Tensor created on the CPU then moved to the device; pass `device=`"
    assert result.stdout.splitlines()[:3] == [
        "many.py:",
        f"   9:9  {message} to the factory",
        f"  13:16 {message} to the factory",
    ]
