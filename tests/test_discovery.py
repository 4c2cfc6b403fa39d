"""Which files a directory walk finds: skipped folders, .gitignore, excludes, symlink loops."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_helpers import write_files

from torchperf_lint.config import Configuration
from torchperf_lint.discovery import IgnorePattern, discover


def found(root: Path, *paths: str, force_exclude: bool = False) -> list[str]:
    configuration = Configuration(cwd=root)
    given = [Path(p) for p in paths] or [Path(".")]
    return [
        p.relative_to(root.resolve()).as_posix()
        for p in discover(given, configuration, force_exclude).files
    ]


def test_walk_finds_python_and_notebooks_sorted_and_skips_usual_folders(tmp_path):
    write_files(
        tmp_path,
        {
            "z.py": "",
            "a/b.py": "",
            "a/notes.ipynb": "{}",
            "a/readme.md": "",
            "a/data.pyc": "",
            ".git/hooks/x.py": "",
            ".venv/lib/x.py": "",
            "venv/lib/x.py": "",
            "myenv/pyvenv.cfg": "",
            "myenv/lib/x.py": "",
            "build/x.py": "",
            "dist/x.py": "",
            "pkg/__pycache__/x.py": "",
            "node_modules/x.py": "",
            "a/.ipynb_checkpoints/notes-checkpoint.ipynb": "{}",
        },
    )
    assert found(tmp_path) == ["a/b.py", "a/notes.ipynb", "z.py"]


def test_walk_skips_third_party_code_copied_into_the_project_unless_named(tmp_path):
    write_files(
        tmp_path,
        {
            "train.py": "",
            "third_party/apex/fused.py": "",
            "src/vendor/lib.py": "",
            "inference/dependencies/AutoGPTQ/setup.py": "",
            "src/vendored_notes.py": "",
        },
    )
    assert found(tmp_path) == ["src/vendored_notes.py", "train.py"]
    assert found(tmp_path, "third_party/apex/fused.py") == ["third_party/apex/fused.py"]
    assert found(tmp_path, "third_party/apex/fused.py", force_exclude=True) == []


def test_gitignore_names_globs_dirs_anchors_and_negation(tmp_path):
    write_files(
        tmp_path,
        {
            ".gitignore": "# comment\n\ngenerated.py\n*_pb2.py\nout/\n/top.py\n"
            "logs/**\nkeep_*.py\n!keep_me.py\n",
            "generated.py": "",
            "sub/generated.py": "",
            "api_pb2.py": "",
            "out/x.py": "",
            "out.py": "",
            "top.py": "",
            "sub/top.py": "",
            "logs/a/b.py": "",
            "keep_me.py": "",
            "keep_not.py": "",
            "sub/.gitignore": "!generated.py\n",
        },
    )
    assert found(tmp_path) == ["keep_me.py", "out.py", "sub/generated.py", "sub/top.py"]


def test_gitignore_above_the_walked_folder_applies_inside_a_repository(tmp_path):
    write_files(
        tmp_path,
        {".git/HEAD": "", ".gitignore": "secret/\n", "src/secret/x.py": "", "src/y.py": ""},
    )
    assert found(tmp_path, "src") == ["src/y.py"]


def test_config_exclude_and_extend_exclude(tmp_path):
    write_files(
        tmp_path,
        {
            "pyproject.toml": (
                '[tool.torchperf-lint]\nextend-exclude = ["legacy", "src/gen_*.py"]\n'
            ),
            "legacy/x.py": "",
            "src/gen_a.py": "",
            "src/a.py": "",
            "build/x.py": "",
        },
    )
    assert found(tmp_path) == ["src/a.py"]
    (tmp_path / "pyproject.toml").write_text('[tool.torchperf-lint]\nexclude = ["legacy"]\n')
    assert found(tmp_path) == ["build/x.py", "src/a.py", "src/gen_a.py"]


def test_explicit_files_unless_force_exclude(tmp_path):
    write_files(tmp_path, {"build/x.py": "", "script": "", ".gitignore": "y.py\n", "y.py": ""})
    assert found(tmp_path, "build/x.py", "script", "y.py") == ["build/x.py", "script", "y.py"]
    assert found(tmp_path, "build/x.py", "script", force_exclude=True) == ["script"]
    assert found(tmp_path, "missing.py") == ["missing.py"]


def test_duplicates_are_listed_once(tmp_path):
    write_files(tmp_path, {"a/b.py": ""})
    assert found(tmp_path, "a", "a/b.py", ".") == ["a/b.py"]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_symlink_loops_do_not_hang(tmp_path):
    write_files(tmp_path, {"pkg/a.py": ""})
    (tmp_path / "pkg" / "loop").symlink_to(tmp_path / "pkg", target_is_directory=True)
    (tmp_path / "pkg" / "up").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "pkg" / "self.py").symlink_to(tmp_path / "pkg" / "self.py")
    assert found(tmp_path) == ["pkg/a.py", "pkg/self.py"]


@pytest.mark.parametrize(
    ("line", "path", "is_dir", "ignored"),
    [
        ("foo", "a/foo", False, True),
        ("foo/", "a/foo", False, False),
        ("foo/", "a/foo", True, True),
        ("/foo", "a/foo", False, False),
        ("/foo", "foo", False, True),
        ("a/foo", "a/foo", False, True),
        ("a/foo", "b/a/foo", False, False),
        ("*.py", "a/b/c.py", False, True),
        ("\\#hash", "#hash", False, True),
        ("trailing   ", "trailing", False, True),
    ],
)
def test_ignore_pattern(line, path, is_dir, ignored):
    pattern = IgnorePattern.parse(line)
    assert pattern is not None
    assert pattern.matches(path, is_dir) is ignored


def test_comments_and_blank_lines_are_not_patterns():
    assert IgnorePattern.parse("# x") is None
    assert IgnorePattern.parse("   ") is None
    assert IgnorePattern.parse("!keep").negated
