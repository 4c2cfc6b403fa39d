"""Output formats through the installed command (json, sarif, github, full), and the summary
lines."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import torchperf_lint, write_files

from torchperf_lint.diagnostics import Applicability, Diagnostic, Fix, Location
from torchperf_lint.report import check_summary, fix_summary
from torchperf_lint.report.sarif import artifact_uri
from torchperf_lint.rules import ALL_RULES, BY_CODE

LOADER = """\
import torch
from torch.utils.data import DataLoader


def make_loader(dataset):
    return DataLoader(dataset, batch_size=32)
"""
# The engine locates syntax errors by row; the column is libcst's and not asserted here.
BROKEN = "import torch\nx = 1 1\n"
RUFF_KEYS = [
    "code",
    "name",
    "message",
    "filename",
    "cell",
    "location",
    "end_location",
    "fix",
    "noqa_row",
    "url",
    # Ours: the other places that explain a finding (a per-step helper's call path).
    "related",
]


def test_json_has_ruffs_keys_and_file_errors(tmp_path):
    write_files(tmp_path, {"pkg/loader.py": LOADER, "pkg/broken.py": BROKEN})
    result = torchperf_lint("--output-format", "json", ".", cwd=tmp_path)
    assert result.returncode == 1
    broken, finding = json.loads(result.stdout)
    assert list(finding) == RUFF_KEYS
    assert finding == {
        "code": "TPL101",
        "name": "dataloader-no-workers",
        "message": BY_CODE["TPL101"].message,
        "filename": "pkg/loader.py",
        "cell": None,
        "location": {"row": 6, "column": 12},
        "end_location": {"row": 6, "column": 46},
        "fix": {
            "applicability": "unsafe",
            "message": "Load batches in 4 persistent worker processes",
            "edits": [
                {
                    "content": "DataLoader(dataset, batch_size=32, num_workers=4, "
                    "persistent_workers=True)",
                    "location": {"row": 6, "column": 12},
                    "end_location": {"row": 6, "column": 46},
                }
            ],
        },
        "noqa_row": 6,
        "url": BY_CODE["TPL101"].url(),
        "related": [],
    }
    assert list(broken) == RUFF_KEYS
    assert (broken["code"], broken["name"], broken["fix"], broken["noqa_row"]) == (
        "E902",
        "file-error",
        None,
        None,
    )
    assert broken["filename"] == "pkg/broken.py"
    assert broken["message"].startswith("syntax error: ")


def test_json_of_a_clean_project_is_an_empty_array(tmp_path):
    write_files(tmp_path, {"clean.py": "import torch\n"})
    result = torchperf_lint("--output-format", "json", ".", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "[]\n")


def test_sarif_structure_for_github_code_scanning(tmp_path):
    write_files(tmp_path, {"src/pkg/loader.py": LOADER, "src/broken.py": BROKEN})
    result = torchperf_lint("--output-format", "sarif", "src", cwd=tmp_path)
    assert result.returncode == 1
    document = json.loads(result.stdout)
    assert document["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    assert document["version"] == "2.1.0"
    (run,) = document["runs"]
    assert run["columnKind"] == "unicodeCodePoints"
    driver = run["tool"]["driver"]
    assert (driver["name"], driver["version"]) == ("torchperf-lint", "0.1.0")
    assert driver["informationUri"].startswith("https://")
    rule_ids = [rule["id"] for rule in driver["rules"]]
    assert rule_ids == [rule.code for rule in ALL_RULES] + ["E902"]
    for descriptor in driver["rules"]:
        assert set(descriptor) == {
            "id",
            "name",
            "shortDescription",
            "fullDescription",
            "help",
            "helpUri",
            "defaultConfiguration",
            "properties",
        }
        rule = BY_CODE.get(descriptor["id"])
        # Default rules warn, opt-in rules note, a file that cannot be linted is an error.
        expected = "error" if rule is None else ("warning" if rule.default else "note")
        assert descriptor["defaultConfiguration"] == {"level": expected}
        assert descriptor["shortDescription"]["text"]
        assert set(descriptor["help"]) == {"text", "markdown"}
    broken, finding = run["results"]
    fingerprint = finding.pop("partialFingerprints")
    assert list(fingerprint) == ["torchperf-lint/v1"]
    assert finding == {
        "ruleId": "TPL101",
        "ruleIndex": rule_ids.index("TPL101"),
        "level": "warning",
        "message": {"text": BY_CODE["TPL101"].message},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": "src/pkg/loader.py"},
                    "region": {"startLine": 6, "startColumn": 12, "endLine": 6, "endColumn": 46},
                }
            }
        ],
    }
    assert broken["ruleId"] == "E902"
    assert broken["level"] == "error"
    assert broken["ruleIndex"] == rule_ids.index("E902")
    assert broken["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/broken.py"


def test_sarif_uris_are_relative_to_the_working_directory():
    cwd = Path("/work/project")
    assert artifact_uri("src/a b.py", cwd) == "src/a%20b.py"
    assert artifact_uri("/work/project/src/x.py", cwd) == "src/x.py"
    assert artifact_uri("/work/other/x.py", cwd) == "../other/x.py"


def test_github_annotations(tmp_path):
    write_files(tmp_path, {"loader.py": LOADER, "broken.py": BROKEN})
    result = torchperf_lint("--output-format", "github", ".", cwd=tmp_path)
    assert result.returncode == 1
    broken, finding = result.stdout.splitlines()
    assert finding == (
        "::error title=torchperf-lint (TPL101),file=loader.py,line=6,col=12,endLine=6,"
        f"endColumn=46::TPL101 {BY_CODE['TPL101'].message}"
    )
    assert broken.startswith("::error title=torchperf-lint (E902),file=broken.py,line=2,col=")
    assert "::E902 syntax error: " in broken


def test_full_format_shows_file_errors_at_their_line(tmp_path):
    write_files(tmp_path, {"broken.py": BROKEN})
    result = torchperf_lint("broken.py", cwd=tmp_path)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("broken.py:2:")
    assert " E902 syntax error: " in lines[0]
    assert lines[1:3] == ["  |", "2 | x = 1 1"]
    assert lines[3].startswith("  | ") and lines[3].endswith("^ E902")
    assert lines[4:] == ["  |", "", "Found 1 error."]


def fake(code: str, applicability: Applicability | None) -> Diagnostic:
    fix = None if applicability is None else Fix(applicability, "fix it", ())
    at = Location(1, 1)
    return Diagnostic(code, "name", "message", "f.py", at, at, fix)


def test_check_summary_lines():
    safe, unsafe, shown = (
        fake("TPL1", Applicability.SAFE),
        fake("TPL2", Applicability.UNSAFE),
        fake("TPL3", Applicability.DISPLAY_ONLY),
    )
    none = fake("TPL4", None)
    assert check_summary([], False) == ["All checks passed!"]
    assert check_summary([none], False) == ["Found 1 error."]
    assert check_summary([safe, none, shown], False) == ["Found 3 errors (1 fixable with --fix)."]
    assert check_summary([safe, unsafe, unsafe], False) == [
        "Found 3 errors (1 fixable with --fix).",
        "2 more fixes available with --unsafe-fixes.",
    ]
    assert check_summary([unsafe], False) == [
        "Found 1 error.",
        "No errors would be fixed (1 fix available with --unsafe-fixes).",
    ]
    assert check_summary([safe, unsafe], True) == ["Found 2 errors (2 fixable with --fix)."]


def test_fix_summary_lines():
    unsafe = fake("TPL2", Applicability.UNSAFE)
    assert fix_summary(0, [], False) == ["All checks passed!"]
    assert fix_summary(2, [], False) == ["Found 2 errors (2 fixed, 0 remaining)."]
    assert fix_summary(1, [unsafe], False) == [
        "Found 2 errors (1 fixed, 1 remaining).",
        "1 more fix available with --unsafe-fixes.",
    ]
    assert fix_summary(0, [unsafe], False) == [
        "Found 1 error (0 fixed, 1 remaining).",
        "No errors were fixed (1 fix available with --unsafe-fixes).",
    ]
